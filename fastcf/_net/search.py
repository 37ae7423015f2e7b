"""The exact search of a Manhattan network query that has an incumbent: bounds, then branching.

HiGHS's mixed-integer solver spends most of a query's time at its root (presolve, probing, cuts)
proving an incumbent that is nearly always optimal already, on programs of a few dozen binaries.
This module does the same proof with one warm-started HiGHS linear program
(:func:`search`):

1. *Tightening* (optimisation-based, lazy): the root's relaxation is solved; the neurons of
   the second and later hidden layers that the CROWN bounds leave unstable and whose
   relaxation its optimum uses (``y > max(z, 0)``) are each minimised and maximised over that
   relaxation, with the budget row ``Σ w |x − x̄| ≤ c`` (c: the incumbent's cost, so the
   optimum is inside) and the target's rows; most of them turn out stable, and the others'
   big-M rows get tighter; again, for up to :data:`ROUNDS` rounds, or until the root's
   relaxation proves the incumbent. The first layer's bounds are already exact over the box ∩
   the ball (:func:`~fastcf._net.bounds.budget_first_layer`).
2. *Branch and bound* over the unstable neurons' binaries, depth first: each node is the same
   linear program with some binaries fixed (its bounds changed, HiGHS's dual simplex restarted
   from the last basis). A node whose relaxation costs at least the best answer (less a relative
   1e-8) is pruned; a node whose binaries are all integral is a point of the network, re-solved
   as its pattern's linear program (:func:`~fastcf._net.program.solve_pattern`); a fractional
   node branches on the neuron whose relaxation's slack ``y − max(z, 0)``, weighted by its
   output's weights in the next layer, is the largest (:func:`_branch`). The first nodes also
   try the pattern of their relaxation's x as an answer.

The search returns the best answer (None where the incumbent stays best) and ``"optimal"``, or
what it had at the time limit. A linear program that HiGHS does not solve to optimality (or
infeasibility) stops the search with ``"failed"``: the caller then asks HiGHS's mixed-integer
solver (:func:`~fastcf._net.program.solve_milp`).
"""

from __future__ import annotations

import math
import time

import numpy as np

from .program import MilpResult, Program, solve_pattern

__all__ = ["search", "tighten", "relaxation"]

#: a node is pruned when its relaxation costs at least best · (1 − PRUNE)
PRUNE = 1e-8
#: the nodes (the first) at which the relaxation's own pattern is tried as an answer
TRY_PATTERNS = 4
#: the rounds of tightening (each: the root's relaxation solved, its violated neurons tightened)
ROUNDS = 3


class _Lp:
    """One query's linear relaxation, loaded into this thread's HiGHS instance."""

    def __init__(self, prog, G, g, budget):
        import highspy

        from .._highs import highs

        self.hs = highspy
        c, integ, bnds, cons, (D, n_t, n_s, _is) = prog.build(G, g, budget)
        n = c.shape[0]
        A = cons[0].A.tocsr()
        A.sum_duplicates()
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = n, A.shape[0]
        lp.col_cost_ = c
        lp.col_lower_, lp.col_upper_ = bnds.lb, bnds.ub
        lp.row_lower_, lp.row_upper_ = cons[0].lb, cons[0].ub
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = A.indptr.astype(np.int32)
        lp.a_matrix_.index_ = A.indices.astype(np.int32)
        lp.a_matrix_.value_ = A.data.astype(np.float64)
        h = highs("net-search", (("presolve", "off"),))
        h.clearSolver()
        h.passModel(lp)
        self.h, self.c, self.n, self.D = h, c, n, D
        self.iy = D + n_t + n_s
        self.ia = np.flatnonzero(integ).astype(np.int32)
        self.budget_row = A.shape[0] - 1  # (build adds the budget row last, if finite)

    def run(self):
        """Solve; return the objective (inf: infeasible), or None where HiGHS failed."""
        S = self.hs.HighsModelStatus
        self.h.run()
        st = self.h.getModelStatus()
        if st == S.kOptimal:
            return float(self.h.getInfo().objective_function_value)
        if st == S.kInfeasible:
            return math.inf
        return None

    def values(self):
        return np.asarray(self.h.getSolution().col_value)


def relaxation(prog, G, g):
    """Return the optimum of ``prog``'s linear relaxation (-inf where HiGHS failed).

    One linear program, without presolve: the certified bound of ``exact=False`` where the
    CROWN bound leaves a gap and few neurons are unstable (:func:`fastcf._net.answer._certify`).
    """
    v = _Lp(prog, G, g, math.inf).run()
    return -math.inf if v is None else v


def tighten(lp, prog, want, deadline=math.inf):
    """Return the bounds of ``prog`` with the neurons ``want`` tightened (step 1 of the module).

    ``lp``: the relaxation of ``prog`` (loaded by :class:`_Lp`, with the budget row); ``want``:
    ``(layer, neuron)`` pairs of layers after the first. Each pre-activation is minimised and
    maximised over it, and widened by a relative 1e-7 (the linear programs' tolerances).
    Past ``deadline`` (``time.perf_counter()``) the neurons left keep their bounds (each
    tightening holds alone). Returns ``(ls, us)``, or None where HiGHS failed. The
    relaxation's costs are left changed.
    """
    net = prog.net
    ls, us = [v.copy() for v in prog.ls], [v.copy() for v in prog.us]
    h, hs = lp.h, lp.hs
    starts = np.cumsum([lp.iy] + [W.shape[0] for W in net.W[:-1]])
    h.changeColsCost(lp.n, np.arange(lp.n, dtype=np.int32), np.zeros(lp.n))
    h.setOptionValue("simplex_strategy", 4)  # (primal: the basis stays primal feasible)
    try:
        for k, j in want:
            if time.perf_counter() > deadline:
                break
            cols = np.arange(starts[k - 1], starts[k], dtype=np.int32)
            h.changeColsCost(cols.size, cols, net.W[k][j])
            got = []
            for sense in (hs.ObjSense.kMinimize, hs.ObjSense.kMaximize):
                h.changeObjectiveSense(sense)
                v = lp.run()
                if v is None:
                    return None
                got.append(v)
            h.changeColsCost(cols.size, cols, np.zeros(cols.size))
            if not (math.isfinite(got[0]) and math.isfinite(got[1])):
                continue  # (infeasible only by rounding: the incumbent is a point of it)
            zl, zu = got[0] + net.b[k][j], got[1] + net.b[k][j]
            pad = 1e-7 * (abs(zl) + abs(zu)) + 1e-9
            ls[k][j] = max(ls[k][j], zl - pad)
            us[k][j] = min(us[k][j], zu + pad)
    finally:
        h.changeObjectiveSense(hs.ObjSense.kMinimize)
        h.setOptionValue("simplex_strategy", 1)
    return ls, us


def search(net, x0, lo, hi, w, G, g, bounds, start, cost, deadline=math.inf):
    """Return the :class:`~fastcf._net.program.MilpResult` of the exact search.

    ``bounds``: the CROWN bounds over the box ∩ the ball of radius ``cost`` (the incumbent
    ``start``'s); Manhattan, no ``max_changes``, ReLU. The result's x is None where no answer
    cheaper than the incumbent exists (status ``"optimal"``: the incumbent is the optimum).
    ``deadline`` (``time.perf_counter()``; the query's ``time_limit`` from its start): the
    search stops at the first linear program past it (status ``"time_limit"``, its bound).
    """
    prog = Program(net, x0, lo, hi, w, "manhattan", None, bounds)
    budget = cost * (1 + 1e-9) + 1e-12
    # the relaxation at the root; the later layers' neurons whose relaxation it uses
    # (y > max(z, 0)) tightened, and again, for up to ROUNDS rounds
    done = set()
    nodes = 0
    for _ in range(ROUNDS + 1):
        lp = _Lp(prog, G, g, budget)
        obj = lp.run()
        nodes += 1
        if obj is None:
            return MilpResult(None, None, math.inf, -math.inf, "failed", nodes)
        if obj >= cost - PRUNE * abs(cost) - 1e-12:
            return MilpResult(None, None, cost, cost, "optimal", nodes)
        if _ == ROUNDS or time.perf_counter() > deadline:
            break
        want = [kj for kj in _violated(net, prog, lp, lp.values()) if kj not in done]
        if not want:
            break
        done.update(want)
        got = tighten(lp, prog, want, deadline)
        if got is None:
            return MilpResult(None, None, math.inf, -math.inf, "failed", nodes)
        prog = Program(net, x0, lo, hi, w, "manhattan", None, got)
    h, ia = lp.h, lp.ia
    # the unstable neurons, layer by layer: their y columns and their layers' z (W y_prev + b)
    sizes = [W.shape[0] for W in net.W[:-1]]
    layers = []
    off, aa = lp.iy, 0
    prev = np.arange(lp.D)
    for k, (zl, zu) in enumerate(zip(prog.ls, prog.us, strict=True)):
        cols = np.arange(off, off + sizes[k])
        un = np.flatnonzero((zl < 0) & (zu > 0))
        layers.append((k, prev, cols, un, aa))
        aa += un.size
        prev, off = cols, off + sizes[k]
    n_a = ia.size
    best_x, best = None, cost
    seen = set()
    fixed = np.full(n_a, -1, dtype=np.int8)  # -1 free, 0 off, 1 on
    # depth first: (fixes as (index, value) pairs, the parent's bound)
    stack = [((), obj)]  # (the root's relaxation: a bound of the whole search)
    bound_open = []
    lb0, ub0 = np.zeros(n_a), np.ones(n_a)

    def tol():
        return PRUNE * abs(best) + 1e-12

    while stack:
        if time.perf_counter() > deadline:
            bound_open = [b for _, b in stack]
            break
        fixes, parent = stack.pop()
        if parent >= best - tol():
            continue
        fixed[:] = -1
        for i, v in fixes:
            fixed[i] = v
        lb = np.where(fixed >= 0, fixed, lb0).astype(np.float64)
        ub = np.where(fixed >= 0, fixed, ub0).astype(np.float64)
        if n_a:
            h.changeColsBounds(n_a, ia, lb, ub)
        obj = lp.run()
        nodes += 1
        if obj is None:
            return MilpResult(None, None, math.inf, -math.inf, "failed", nodes)
        if obj >= best - tol():
            continue
        v = lp.values()
        a = v[ia]
        x = np.clip(v[: lp.D], lo, hi)
        free = fixed < 0
        frac = np.where(free, np.minimum(a, 1.0 - a), 0.0)
        pick = _branch(net, layers, v, free)
        integral = bool(np.all(frac <= 1e-6))
        if pick is None or integral or nodes <= TRY_PATTERNS:
            # the pattern of the binaries (integral) or of the relaxation's x, as an answer
            pat = _pattern(prog, a) if integral else net.pattern(x)
            key = b"".join(p.tobytes() for p in pat)
            if key not in seen:
                # (its point meets the target to the linear program's tolerance, as the
                # mixed-integer program's: the stage's judge re-aims what the model refuses)
                y = solve_pattern(net, pat, x0, lo, hi, w, G, g, "manhattan")
                if y is None and integral:  # (missed by rounding: the relaxation's own point)
                    y = x
                if y is not None:
                    seen.add(key)  # (a pattern whose LP failed is tried again where integral)
                    c = float(w @ np.abs(y - x0))
                    if c < best:
                        best_x, best = y, c
                        h.changeRowBounds(lp.budget_row, -math.inf, best * (1 + 1e-9) + 1e-12)
        if obj >= best - tol():
            continue
        if pick is None or integral:
            # the relaxation's point is a point of the network (every y = max(z, 0)), and its
            # pattern missed it only by rounding: branch on a fractional binary, if any
            if integral:
                continue
            pick = int(np.argmax(frac))
        side = 1 if a[pick] >= 0.5 else 0
        stack.append((fixes + ((pick, 1 - side),), obj))
        stack.append((fixes + ((pick, side),), obj))
    if bound_open:
        bound = min(min(bound_open), best)
        return MilpResult(best_x, None, best, max(bound, 0.0), "time_limit", nodes)
    return MilpResult(best_x, None, best, best, "optimal", nodes)


def _violated(net, prog, lp, v):
    """Return the ``(layer, neuron)`` pairs after the first layer whose relaxation ``v`` uses."""
    out = []
    off = lp.iy
    prev = v[: lp.D]
    for k, (zl, zu) in enumerate(zip(prog.ls, prog.us, strict=True)):
        n = zl.shape[0]
        y = v[off : off + n]
        if k:
            z = net.W[k] @ prev + net.b[k]
            gap = y - np.maximum(z, 0.0)
            un = (zl < 0) & (zu > 0) & (gap > 1e-9 * (1.0 + np.abs(z)))
            out.extend((k, int(j)) for j in np.flatnonzero(un))
        prev, off = y, off + n
    return out


def _branch(net, layers, v, free):
    """Return the binary to branch on (None: no relaxation is used).

    The free neuron of largest ``(y − max(z, 0)) · Σ |W_next[:, j]|``: its relaxation's slack
    times the weight of its output in the next layer (fewer nodes than the most violated
    alone, or the earliest layer's first, on the benchmark's networks).
    """
    best, pick = 0.0, None
    for k, prev, cols, un, first in layers:
        if un.size == 0:
            continue
        z = net.W[k][un] @ v[prev] + net.b[k][un]
        gap = v[cols[un]] - np.maximum(z, 0.0)
        ok = free[first : first + un.size] & (gap > 1e-9 * (1.0 + np.abs(z)))
        if not ok.any():
            continue
        score = np.where(ok, gap * np.abs(net.W[k + 1][:, un]).sum(axis=0), -1.0)
        j = int(np.argmax(score))
        if pick is None or score[j] > best:
            best, pick = float(score[j]), first + j
    return pick


def _pattern(prog, a):
    """Return the activation pattern that the binaries ``a`` (rounded) and the bounds give."""
    out, i = [], 0
    for zl, zu in zip(prog.ls, prog.us, strict=True):
        un = (zl < 0) & (zu > 0)
        p = zl >= 0
        m = int(un.sum())
        p[un] = a[i : i + m] > 0.5
        i += m
        out.append(p)
    return out
