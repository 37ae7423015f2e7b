"""The exact programs of one query: a mixed-integer program, then a linear program in one pattern.

For a network with hidden pre-activations ``z = W h + b`` bounded by ``l ≤ z ≤ u`` over the
query's box (:mod:`.bounds`), the program has the input x, the cost variables t, and one
variable y per hidden neuron (its output); a neuron is

* *stable off* (u ≤ 0): y = 0;
* *stable on* (l ≥ 0), or any neuron of an identity layer: y = z;
* *unstable* (l < 0 < u): y ≥ 0, y ≥ z, y ≤ z − l (1 − a), y ≤ u a with a binary a — the
  big-M form of y = max(z, 0), exact at a ∈ {0, 1} (Tjeng et al., ICLR 2019).

These rows, and the target's, are :func:`fastcf._net.rows.network_rows`'s (the tabular
program's network, :mod:`fastcf._tabular.netprog`, has the same ones).

The target's constraint is on the logits of the last layer: ``z_t − z_j ≥ margin`` for every
other class j (K classes), or ``± z ≥ θ`` for a binary model's one logit. The cost: Manhattan
``Σ w_i t_i`` with ``t_i ≥ |x_i − x̄_i|``; L0 ``Σ w_i s_i`` with s binary and
``|x_i − x̄_i| ≤ M_i s_i`` (M_i: the room of the box); ``max_changes=k`` adds such s with
``Σ s_i ≤ k``. HiGHS solves it to a zero gap (:func:`solve_milp`).

A mixed-integer answer satisfies its constraints only within HiGHS's tolerances (an a = 1e-7
lets a little of z leak through an "off" ReLU), so it is not returned as it is: the linear
program inside its activation pattern (:func:`solve_pattern`) — where the network is affine
(:meth:`~fastcf._net.model.Net.affine`), each neuron's side a linear constraint of x — finds the
closest point of that pattern's polytope. The program's answer lies in the polytope, so this one
costs no more; and it is a point of the network itself, not of a relaxation.
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint

from .rows import network_rows, unstable

__all__ = [
    "Program",
    "MilpResult",
    "solve_milp",
    "solve_pattern",
    "network_point",
    "pattern_rows",
    "output_rows",
    "ties_differ",
]


class MilpResult(NamedTuple):
    """What :func:`solve_milp` found."""

    x: np.ndarray | None  # the program's input part (None: no feasible point found)
    changed: np.ndarray | None  # (D,) bool: features the program lets change (L0 / max_changes)
    cost: float  # its objective (inf without x)
    bound: float  # HiGHS's lower bound on the optimum
    status: str  # "optimal", "infeasible", "time_limit", "failed" ("repairs": network_point)
    nodes: int
    #: the integer columns (s, then a: :meth:`Program.build`'s layout) rounded to 0/1
    ints: np.ndarray | None = None


def output_rows(net, t, margin, ties=False):
    """Return ``(G, g)``: the target's constraint on the last hidden layer h, ``G h ≥ g``.

    K classes: ``(W_t − W_j) h ≥ margin − (b_t − b_j)`` for every j ≠ t. One logit: class 1 iff
    the logit is > 0 (logistic > 1/2), so target 1 asks ``W h ≥ margin − b`` and target 0
    ``−W h ≥ margin + b``. ``ties``: the margin only where the model's rule needs one — a tie
    goes to the first class (``argmax``; a logistic of exactly 1/2 is class 0), so the classes
    after the target (and, binary, target 0) are asked ``≥ 0``: the program of a target that is
    reachable only on a tie.
    """
    W, b = net.W[-1], net.b[-1]
    if net.binary:
        s = 1.0 if t == 1 else -1.0
        m = 0.0 if ties and t == 0 else margin
        return s * W, np.array([m - s * b[0]])
    others = np.array([j for j in range(W.shape[0]) if j != t], dtype=np.int64)
    m = np.where(others > t, 0.0, margin) if ties else margin
    return W[t] - W[others], m - (b[t] - b[others])


def ties_differ(net, t):
    """Tell whether :func:`output_rows` with ``ties=True`` asks less than without."""
    return t == 0 if net.binary else t < net.W[-1].shape[0] - 1


class Program:
    """The mixed-integer program of one query row (see the module docstring).

    Parameters
    ----------
    net : Net
    x0 : ndarray of shape (D,)
        The query x̄ (inside the box).
    lo, hi : ndarray of shape (D,)
        The box (finite; a frozen feature has lo = hi = x̄).
    w : ndarray of shape (D,)
        Per-feature costs.
    metric : {"manhattan", "l0"}
    max_changes : int or None
    bounds : (ls, us)
        Each hidden layer's pre-activation bounds over the box (:mod:`.bounds`).
    """

    def __init__(self, net, x0, lo, hi, w, metric, max_changes, bounds):
        self.net, self.x0, self.lo, self.hi, self.w = net, x0, lo, hi, w
        self.metric, self.max_changes = metric, max_changes
        self.ls, self.us = bounds
        #: the binary columns s (a changed feature), one per feature for L0 / max_changes:
        #: the first of :attr:`MilpResult.ints`, before the neurons' a
        self.n_s = x0.shape[0] if metric == "l0" or max_changes is not None else 0

    def columns(self, x):
        """Return the program's column values at input ``x`` (a point of the network).

        t = |x − x̄| (Manhattan), s = [x ≠ x̄] (L0, ``max_changes``), each neuron's output y
        and each unstable neuron's a = [z > 0]: the layout of :meth:`build`.
        """
        net, x0 = self.net, self.x0
        parts = [x]
        if self.metric == "manhattan":
            parts.append(np.abs(x - x0))
        if self.metric == "l0" or self.max_changes is not None:
            parts.append((x != x0).astype(np.float64))
        ys, as_ = [], []
        for z, un in zip(net.hidden(x[None]), unstable(net, self.ls, self.us), strict=True):
            z = z[0]
            if net.relu:
                ys.append(np.maximum(z, 0.0))
                as_.append((z[un] > 0).astype(np.float64))
            else:
                ys.append(z)
        return np.concatenate(parts + ys + as_)

    def build(self, G, g, cutoff=math.inf, nogoods=()):
        """Return (c, integrality, Bounds, [LinearConstraint]) of the program, and the layout.

        ``nogoods``: assignments of the integer columns (0/1 arrays, in column order) that the
        program must leave: each adds ``Σ_{p=0} v − Σ_{p=1} v ≥ 1 − |{p = 1}|``. An entry
        below 0 leaves its column out of the row (any value of it is excluded with the rest).
        """
        net, x0, lo, hi, w = self.net, self.x0, self.lo, self.hi, self.w
        D = x0.shape[0]
        H = sum(W.shape[0] for W in net.W[:-1])
        n_a = int(sum(m.sum() for m in unstable(net, self.ls, self.us)))
        n_s = self.n_s
        n_t = D if self.metric == "manhattan" else 0
        # layout: x | t | s | y (every hidden neuron) | a (the unstable ones)
        ix, it, is_, iy = 0, D, D + n_t, D + n_t + n_s
        ia = iy + H
        n = ia + n_a
        c = np.zeros(n)
        integ = np.zeros(n)
        lb, ub = np.empty(n), np.empty(n)
        lb[:D], ub[:D] = lo, hi
        room = np.maximum(hi - x0, x0 - lo)
        if n_t:
            c[it : it + D] = w
            lb[it : it + D], ub[it : it + D] = 0.0, room
        if n_s:
            if self.metric == "l0":
                c[is_ : is_ + D] = w
            integ[is_ : is_ + D] = 1
            lb[is_ : is_ + D], ub[is_ : is_ + D] = 0.0, np.where(room > 0, 1.0, 0.0)
        integ[ia:] = 1
        lb[ia:], ub[ia:] = 0.0, 1.0
        # the rows, section by section in order, as (row, column, value) triplets
        R, C, V, RL, RH = [], [], [], [], []
        r = 0

        def rows(k, ents, low, high):
            """Append ``k`` rows; ``ents``: (row within the section, column, value) arrays."""
            nonlocal r
            rr, cc, vv = ents
            R.append(r + np.asarray(rr, dtype=np.int64))
            C.append(np.asarray(cc, dtype=np.int64))
            V.append(np.asarray(vv, dtype=np.float64))
            RL.append(np.broadcast_to(np.asarray(low, dtype=np.float64), (k,)))
            RH.append(np.broadcast_to(np.asarray(high, dtype=np.float64), (k,)))
            r += k

        # per feature i: t_i ≥ ±(x_i − x̄_i) (Manhattan), |x_i − x̄_i| ≤ M_i s_i (L0, max_changes)
        feat = np.arange(D)
        has_s = (room > 0) if n_s else np.zeros(D, dtype=bool)
        per = 2 * (n_t > 0) + 2 * has_s
        first = np.concatenate([[0], np.cumsum(per)[:-1]])
        k = int(per.sum())
        if k:
            ones = np.ones(D)
            rr, cc, vv = [], [], []
            lows, highs = np.empty(k), np.empty(k)
            if n_t:
                for q, sg in ((0, -1.0), (1, 1.0)):
                    rr += [first + q, first + q]
                    cc += [it + feat, ix + feat]
                    vv += [ones, sg * ones]
                    lows[first + q], highs[first + q] = sg * x0, np.inf
            i = feat[has_s]
            at = first[i] + 2 * (n_t > 0)
            rr += [at, at, at + 1, at + 1]
            cc += [ix + i, is_ + i, ix + i, is_ + i]
            vv += [np.ones(i.size), -(hi[i] - x0[i]), np.ones(i.size), x0[i] - lo[i]]
            lows[at], highs[at] = -np.inf, x0[i]
            lows[at + 1], highs[at + 1] = x0[i], np.inf
            rows(k, (np.concatenate(rr), np.concatenate(cc), np.concatenate(vv)), lows, highs)
        if self.max_changes is not None:
            rows(1, (np.zeros(D), is_ + feat, np.ones(D)), -np.inf, float(self.max_changes))
        # the neurons, then the target G h ≥ g, on the input h₀ = x
        nr = network_rows(net, self.ls, self.us, (feat, ix + feat, np.ones(D)), iy, ia, G, g)
        lb[iy:ia], ub[iy:ia] = nr.y_lb, nr.y_ub
        rows(nr.low.shape[0], (nr.rows, nr.cols, nr.vals), nr.low, nr.high)
        if math.isfinite(cutoff):
            cidx = np.flatnonzero(c)
            rows(1, (np.zeros(cidx.size), cidx, c[cidx]), -np.inf, cutoff)
        icols = np.flatnonzero(integ)
        for p in nogoods:
            on, use = p > 0.5, p >= 0.0
            rows(1, (np.zeros(int(use.sum())), icols[use], np.where(on[use], -1.0, 1.0)),
                 1.0 - float(np.count_nonzero(on)), np.inf)  # fmt: skip
        rows_, cols, vals = np.concatenate(R), np.concatenate(C), np.concatenate(V)
        rlo, rhi = np.concatenate(RL), np.concatenate(RH)
        A = sparse.csr_array((vals, (rows_, cols)), shape=(r, n))
        cons = [LinearConstraint(A, np.array(rlo), np.array(rhi))] if r else []
        return c, integ, Bounds(lb, ub), cons, (D, n_t, n_s, is_)


#: this family's HiGHS options (:func:`fastcf._highs.highs`): the sub-MIP and jump heuristics
#: look for answers the incumbent already gives (measured on a 32×32 network: most of the time
#: of a one-node program). HiGHS's ``threads`` is left alone: its task scheduler is one per
#: process, made by the first run, and a later instance asking another count fails its run
#: (a tree program solved first made every network program "failed"); one thread would have cut
#: a (20,) network's query from ~90 to ~27 ms of CPU (its second worker spins). No restart
#: (``mip_allow_restart``): HiGHS 1.16's randomized rounding found 8.230 at the root, and the
#: presolve of its restart, cut off at that cost, removed the optimum 0.692, called optimal
#: (soak_net, seed 44, example 67: ``max_changes=1``, big-M bounds of 1.5e4; highspy 1.7.2,
#: 1.11.0, 1.13.1 and 1.15.1 find it). A program that would restart is solved on in its
#: tree: 29 of 218 soak programs restart, and took 0.86x the time without (docs/reliability.md)
_OPTIONS = (
    ("mip_heuristic_run_rins", False),
    ("mip_heuristic_run_rens", False),
    ("mip_heuristic_run_root_reduced_cost", False),
    ("mip_heuristic_run_feasibility_jump", False),
    ("mip_detect_symmetry", False),
    ("mip_allow_restart", False),
)

#: the largest cost coefficient of the network's program as HiGHS sees it (:func:`solve_milp`).
#: HiGHS's zero gap still prunes every node whose bound is not ``mip_feasibility_tolerance``
#: (1e-6) below the incumbent's cost, absolute, whatever ``mip_abs_gap``: on a cost of 0.08 a
#: pattern 3.2e-7 cheaper was pruned and the dearer answer called optimal (soak_net, seed 39,
#: example 233). The costs scaled so that the largest is 1e3, that pruning is 1e-9 of the
#: largest weight (the tolerance itself, lowered to 1e-9, also tightened the rows' and the
#: integers': HiGHS then called programs with answers "infeasible", seed 39, example 203)
COST_SCALE = 1e3


def solve_milp(
    prog, G, g, cutoff=math.inf, time_limit=None, start=None, plain=False, relax=False,
    nogoods=(),
):  # fmt: skip
    """Solve ``prog`` with the target's rows ``G h ≥ g``; return a :class:`MilpResult`.

    ``cutoff``: only answers costing less than this (HiGHS's ``objective_bound``: an answer
    already known costs it); ``time_limit``: seconds for HiGHS (None: none); ``start``: a
    valid input x in the program's box that meets the target, handed to HiGHS as its first
    solution (:meth:`Program.columns`); ``plain``: HiGHS at its default options; ``relax``:
    the linear relaxation (every binary in [0, 1]), whose optimum is the result's ``bound``;
    ``nogoods``: assignments of the integer columns excluded (:meth:`Program.build`).
    """
    import highspy

    from .._highs import highs, run_mip

    c, integ, bnds, cons, (D, _n_t, n_s, is_) = prog.build(G, g, nogoods=nogoods)
    n = c.shape[0]
    A = cons[0].A.tocsr() if cons else sparse.csr_array((0, n))
    A.sum_duplicates()
    # (HiGHS's costs scaled, its answers' costs and bounds scaled back: COST_SCALE)
    top = float(np.max(np.abs(c))) if n else 0.0
    scale = 1.0 if plain or not top > 0.0 else COST_SCALE / top
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = A.shape[0]
    lp.col_cost_ = c * scale
    lp.col_lower_ = bnds.lb
    lp.col_upper_ = bnds.ub
    lp.row_lower_ = cons[0].lb if cons else np.zeros(0)
    lp.row_upper_ = cons[0].ub if cons else np.zeros(0)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(np.float64)
    if not relax:
        lp.integrality_ = [
            highspy.HighsVarType.kInteger if v else highspy.HighsVarType.kContinuous for v in integ
        ]
    h = highs("net-plain") if plain else highs("net", _OPTIONS)
    h.clearSolver()
    h.passModel(lp)
    h.setOptionValue(
        "objective_bound", float(cutoff) * scale if math.isfinite(cutoff) else math.inf
    )
    h.setOptionValue("time_limit", math.inf if time_limit is None else float(time_limit))
    if start is not None:
        sol = highspy.HighsSolution()
        sol.col_value = list(prog.columns(start))
        sol.value_valid = True
        h.setSolution(sol)
    if relax:
        h.run()
    else:  # (an "infeasible" looked at twice: fastcf._highs.run_mip)
        h = run_mip(h, time_limit)
    S = highspy.HighsModelStatus
    if relax:
        ok = h.getModelStatus() == highspy.HighsModelStatus.kOptimal
        val = float(h.getInfo().objective_function_value) / scale if ok else -math.inf
        return MilpResult(None, None, math.inf, val, "relaxed", 0)
    st = h.getModelStatus()
    info = h.getInfo()
    nodes = int(info.mip_node_count)
    have = int(info.primal_solution_status) == 2
    bound = float(info.mip_dual_bound) / scale
    bound = bound if math.isfinite(bound) else -math.inf
    if not have:
        if st in (S.kInfeasible, S.kObjectiveBound):
            what = "infeasible"  # (below the cutoff: nothing)
        elif st in (S.kTimeLimit, S.kInterrupt, S.kIterationLimit, S.kSolutionLimit):
            what = "time_limit"
        else:
            what = "failed"
        return MilpResult(None, None, math.inf, bound, what, nodes)
    v = np.asarray(h.getSolution().col_value)
    x = np.clip(v[:D], prog.lo, prog.hi)
    changed = v[is_ : is_ + D] > 0.5 if n_s else None
    if changed is not None:  # (a feature the program keeps is x̄'s, not x̄ ± its tolerance)
        x = np.where(changed, x, prog.x0)
    what = "optimal" if st == S.kOptimal else "time_limit"
    cost = float(info.objective_function_value) / scale
    ints = (v[integ > 0] > 0.5).astype(np.float64)
    return MilpResult(x, changed, cost, cost if what == "optimal" else bound, what, nodes, ints)


#: how many false answers of the mixed-integer program one row excludes at most
#: (:func:`network_point`)
REPAIRS = 32

#: a pattern's closest point dearer than the program's own by more than this fraction (and
#: 1e-12) shows the program's point outside that pattern's polytope (:func:`network_point`):
#: on 100 programs of soak_net.py (seed 1000) the two differed by 2.3e-13 of it at most; the
#: leak of seed 61, example 39 by 1.1 %
OFF_PATTERN = 1e-7


def network_point(prog, G, g, r, cutoff=math.inf, deadline=math.inf, plain=False, accept=None):
    """Return ``r`` with its ``x`` a point of the network itself, meeting the target.

    The point is the closest of the activation pattern of the program's answer
    (:func:`solve_pattern`), or, where that polytope misses the target by rounding only, the
    program's own point (its unchanged features exactly x̄'s), as long as it meets the target's
    rows ``G h ≥ g`` in float64 to their rounding (or ``accept``'s, below). Where it does not,
    the program's answer is no point of the network: a binary a within HiGHS's integrality
    tolerance (1e-6) of 0 lets ``u a`` of an "off" neuron's output through, and with big-M
    bounds u ~ 1e7 that moved a logit by 716
    (a soak of networks whose weights span 10^±3, now ``docs/scripts/soak_net.py``'s wild
    weights: x̄ itself returned at cost 0, then refused by the model). Then the program's
    integer assignment (the activation pattern and, for L0 / ``max_changes``, the changed
    features) is solved exactly as a linear program, kept
    if it is the cheapest true answer so far, and excluded (a no-good row, exact: every point
    of the network with that assignment is in the polytope just solved), and the program is
    solved again below the best cost, until it finds nothing cheaper (the best is optimal),
    runs out of time, or :data:`REPAIRS` rounds (status ``"repairs"``: not proven). For L0 and
    ``max_changes`` the no-good leaves out the s of the changed features (the linear program
    let each of them move; L0: only where it found no point), and every s where the pattern
    holds no answer even with every feature free.

    ``cutoff``: the cost of an answer the caller already holds (the incumbent): only cheaper
    ones are looked for. ``accept``: the rows ``(G, g)`` that the model's own rule takes as the
    target (:func:`output_rows` with ``ties=True``: a tie given to the target), where they ask
    less than ``G h ≥ g``: a program's point that meets them is the model's answer, not a false
    one, and is returned as before (a point on a tie at logit exactly 0, every ReLU off:
    soak_net, seed 32). ``r.x`` None after the repairs: nothing cheaper than ``cutoff``
    (status "infeasible": proven; "time_limit", "repairs" or "failed": not).
    """
    net, x0, lo, hi, w = prog.net, prog.x0, prog.lo, prog.hi, prog.w
    x = solve_pattern(net, net.pattern(r.x), x0, lo, hi, w, G, g, prog.metric, r.changed)
    best, best_cost = None, cutoff
    if x is not None:
        cost = _cost(x - x0, w, prog.metric)
        if r.ints is None or not cost > r.cost * (1.0 + OFF_PATTERN) + 1e-12:
            return r._replace(x=x)
        # the program's point lies outside its pattern's polytope (it leaked through HiGHS's
        # tolerances): its cost proves nothing, the pattern's closest point is an answer, and
        # the program is solved again below it without that assignment (soak_net, seed 61,
        # example 39: the program's 0.5748, its pattern's 0.5810 returned as optimal; the
        # optimum 0.5755 lies in another pattern)
        if cost < best_cost:
            best, best_cost = x, cost
        return _repair(prog, G, g, r, best, best_cost, deadline, plain)
    own = r.x if r.changed is None else np.where(r.changed, r.x, x0)
    h = net.last_hidden(own[None])[0]
    # the target's rows at the program's point, to the rounding of their terms (as the
    # re-aim's floor, RaiseMargin: ~9000 unit roundoffs of |G| |h| + |g|): a miss within it is
    # the polytope's rounding, not a false answer
    Ga, ga = (G, g) if accept is None else accept
    tol = 9e3 * net.unit * (np.abs(Ga) @ np.abs(h) + np.abs(ga))
    if bool(np.all(Ga @ h - ga >= -tol)) or r.ints is None:
        # (the pattern's polytope missed by rounding: the program's own point)
        return r._replace(x=own)

    return _repair(prog, G, g, r, best, best_cost, deadline, plain)


def _repair(prog, G, g, r, best, best_cost, deadline, plain):
    """Return :func:`network_point`'s repairs of ``r``: the assignments solved and excluded.

    ``best`` (cost ``best_cost``): the cheapest true answer already held (or None, and the
    caller's cutoff).
    """
    net, x0, lo, hi, w = prog.net, prog.x0, prog.lo, prog.hi, prog.w
    una = unstable(net, prog.ls, prog.us)
    n_s = prog.n_s  # (r.ints: s, then a)
    nodes, cuts = r.nodes, []
    for _ in range(REPAIRS):
        s_part, a_part = r.ints[:n_s], r.ints[n_s:]
        pattern, k = [], 0
        for zl, un in zip(prog.ls, una, strict=True):  # stable neurons by their bounds
            on = zl >= 0.0
            on[un] = a_part[k : k + int(un.sum())] > 0.5
            k += int(un.sum())
            pattern.append(on)
        movable = None if n_s == 0 else s_part > 0.5
        x = solve_pattern(net, pattern, x0, lo, hi, w, G, g, prog.metric, movable)
        if x is not None:
            cost = _cost(x - x0, w, prog.metric)
            if cost < best_cost:
                best, best_cost = x, cost
        # excluded: this pattern with every changed set inside the s's (the linear program
        # just solved let each of those features move: it found none, or, Manhattan, the
        # cheapest), or with any changed set where the pattern holds no answer with every
        # feature free; not this one set alone: with big-M bounds of 1e8 the program leaked
        # through one pattern under 7 changed sets in turn, and 32 rounds ran out before its
        # true answer (soak_net, seed 48, example 192). (L0 with an answer: this set alone,
        # as a subset can hold an answer of fewer changes than the LP's closest point)
        cut = r.ints.copy()
        if n_s and (x is None or prog.metric != "l0"):
            empty = x is None and (
                movable.all()
                or solve_pattern(net, pattern, x0, lo, hi, w, G, g, prog.metric) is None
            )
            cut[:n_s][movable | empty] = -1.0
        cuts.append(cut)
        left = deadline - time.perf_counter()
        if left <= 0.0:
            status = "time_limit"
            break
        r = solve_milp(prog, G, g, best_cost, None if deadline == math.inf else left,
                       plain=plain, nogoods=cuts)  # fmt: skip
        nodes += r.nodes
        if r.x is None:
            status = r.status  # ("infeasible": nothing below the best cost)
            break
    else:
        status = "repairs"  # (REPAIRS rounds, each a false answer: not the time_limit)
    if best is None:
        return MilpResult(None, None, math.inf, r.bound, status, nodes)
    proven = status == "infeasible"
    d = best - x0
    changed = None if n_s == 0 else d != 0
    what = "optimal" if proven else "repairs" if status == "repairs" else "time_limit"
    return MilpResult(best, changed, best_cost, best_cost if proven else min(r.bound, best_cost),
                      what, nodes)  # fmt: skip


def _cost(d, w, metric):
    """Return the program's objective of a move ``d``: Σ w |d| (Manhattan), Σ w [d ≠ 0] (L0)."""
    return float(w @ (d != 0)) if metric == "l0" else float(w @ np.abs(d))


def pattern_rows(net, pattern, G_out, g_out, strict=None):
    """Return ``(A, b)``: the activation ``pattern``'s polytope in the target, ``A x ≤ b``.

    Inside the pattern the network is affine (:meth:`~fastcf._net.model.Net.affine`): each
    hidden neuron that is on asks ``z(x) ≥ 0``, each that is off ``z(x) ≤ 0`` (none for
    identity layers), and the target's rows ``G_out h ≥ g_out`` on the last hidden layer's
    output ``h = M x + m`` (the pattern's map) are linear in x too. ``strict`` (an array of
    |x|'s bounds, or None): each off neuron asks ``z(x) ≤ −ε`` instead, ε ~9000 unit roundoffs
    of its terms ``|A| strict + |c|``, so that the network's own arithmetic keeps it off (a
    point on a tie, where the least leak through a ReLU moves the logit off it).
    """
    pre, _ = net.affine(pattern)
    A_ub, b_ub = [], []
    for (A, c), on in zip(pre, pattern, strict=True):
        if not net.relu:
            continue
        # on: −(A x + c) ≤ 0; off: A x + c ≤ 0 (≤ −ε, strict)
        sgn = np.where(on, -1.0, 1.0)
        A_ub.append(sgn[:, None] * A)
        eps = 0.0 if strict is None else 9e3 * net.unit * (np.abs(A) @ strict + np.abs(c))
        b_ub.append(-sgn * c - np.where(on, 0.0, eps))
    if pre:
        Al, cl = pre[-1]
        if net.relu:
            on = pattern[-1]
            Al, cl = Al * on[:, None], cl * on
    else:
        D = net.W[0].shape[1]
        Al, cl = np.eye(D), np.zeros(D)
    A_ub.append(-(G_out @ Al))
    b_ub.append(-(g_out - G_out @ cl))
    return np.vstack(A_ub), np.concatenate(b_ub)


def solve_pattern(net, pattern, x0, lo, hi, w, G_out, g_out, metric, movable=None, strict=False):
    """Return the closest point of the activation ``pattern``'s polytope meeting the target.

    Inside the pattern the network is affine (:meth:`~fastcf._net.model.Net.affine`): each
    hidden neuron that is on asks ``z(x) ≥ 0``, each that is off ``z(x) ≤ 0``, and the target's
    rows ``G z_out``-form become ``G_out`` on the last hidden layer's affine map. ``movable``
    (a bool mask): the features that may change (the others stay at x̄), for L0 and
    ``max_changes``, whose changed set the mixed-integer program chose. Manhattan: an LP in
    the moves ``x = x̄ + p − n`` (p, n ≥ 0 within the box's room, cost ``Σ w (p + n)``); L0
    (cost fixed by ``movable``): the closest point in Manhattan terms among those. ``strict``:
    the off neurons kept off beyond their rounding (:func:`pattern_rows`).

    Returns
    -------
    x : ndarray of shape (D,) or None
        None where the polytope holds no such point (as HiGHS finds it).
    """
    D = x0.shape[0]
    lo = lo.copy()
    hi = hi.copy()
    if movable is not None:
        lo[~movable] = x0[~movable]
        hi[~movable] = x0[~movable]
    mag = np.maximum(np.abs(lo), np.abs(hi)) if strict else None
    Ax, bx = pattern_rows(net, pattern, G_out, g_out, mag)
    # variables (p, n) ≥ 0, x = x̄ + p − n inside the box; min Σ w (p + n)
    v = _lp(np.concatenate([w, w]), np.hstack([Ax, -Ax]), bx - Ax @ x0,
            np.concatenate([hi - x0, x0 - lo]))  # fmt: skip
    if v is None:
        return None
    return snap(net, np.clip(x0 + (v[:D] - v[D:]), lo, hi), x0, lo, hi, G_out, g_out)


def _lp(cost, A, b, ub):
    """Return the optimum of ``min cost·v, A v ≤ b, 0 ≤ v ≤ ub`` by HiGHS (None: not optimal).

    ``A`` dense, passed row-wise as its nonzeros, as arrays (highspy's ``passModel`` of
    pointers: building a ``HighsLp`` costs as much as the solve); no presolve (a small program
    solved once).
    """
    import highspy

    from .._highs import highs

    n, m = cost.shape[0], A.shape[0]
    nz = A != 0
    start = np.zeros(m + 1, dtype=np.int32)
    np.cumsum(nz.sum(axis=1), out=start[1:])
    index = np.nonzero(nz)[1].astype(np.int32)
    value = np.ascontiguousarray(A[nz], dtype=np.float64)
    lower, upper = np.zeros(n), np.ascontiguousarray(ub, dtype=np.float64)
    row_lo, row_hi = np.full(m, -np.inf), np.ascontiguousarray(b, dtype=np.float64)
    cost = np.ascontiguousarray(cost, dtype=np.float64)
    h = highs("net-pattern", (("presolve", "off"),))
    h.clearSolver()
    try:  # (every column continuous: HiGHS reads n entries of the integrality array, and
        # warns that none is integer)
        ok = h.passModel(n, m, int(start[-1]), int(highspy.MatrixFormat.kRowwise),
                         int(highspy.ObjSense.kMinimize), 0.0, cost, lower, upper, row_lo,
                         row_hi, start, index, value, np.zeros(n, dtype=np.int32))  # fmt: skip
    except TypeError:  # (a highspy without that overload)
        ok = highspy.HighsStatus.kError
    if ok == highspy.HighsStatus.kError:
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = n, m
        lp.col_cost_, lp.col_lower_, lp.col_upper_ = cost, lower, upper
        lp.row_lower_, lp.row_upper_ = row_lo, row_hi
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = start, index, value
        h.passModel(lp)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return np.asarray(h.getSolution().col_value)


def snap(net, x, x0, lo, hi, G, g):
    """Return ``x`` with the features an LP moved only by its rounding put back at x̄.

    A feature the optimum leaves alone (t_i = 0) comes out of the basis solve as x̄_i plus a
    few ulps; such a move (at most 1e-9 of the feature's scale |x̄_i| + (hi_i − lo_i)) is no
    change. The features are put back together where the copy still meets the target's rows
    ``G h ≥ g`` (else ``x`` is returned as it is).
    """
    tiny = (x != x0) & (np.abs(x - x0) <= 1e-9 * (np.abs(x0) + (hi - lo)))
    if not tiny.any():
        return x
    y = np.where(tiny, x0, x)
    return y if bool(net.meets(y[None], G, g)[0]) else x
