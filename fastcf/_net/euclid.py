"""Euclidean counterfactuals of a ReLU network: a branch-and-bound over activation patterns.

HiGHS solves mixed-integer *linear* programs and continuous quadratic ones, not mixed-integer
quadratic ones, so the Euclidean query ``min Σ (w_i (x_i − x̄_i))²`` has its own search here.

* **Nodes.** A node fixes the side of some of the neurons the query's box leaves unstable
  (l < 0 < u, :mod:`.bounds`): on (y = z, z ≥ 0) or off (y = 0, z ≤ 0). Its relaxation keeps
  every other unstable neuron in its triangle (y ≥ 0, y ≥ z, y ≤ u (z − l) / (u − l): the
  convex hull of y = max(z, 0) on [l, u]), every stable one exact. Over the input x and the
  neurons' outputs y it is a convex quadratic program, whose optimum bounds the node's from
  below (Clarabel, an interior-point solver: the bound is taken as ``(1 − 1e-7)`` of its value).
* **Leaves.** At every node's optimum x, the network's own activation pattern there is solved
  exactly (the closest point of that pattern's polytope meeting the target: a quadratic program
  in x alone, :func:`pattern_qp`): a point of the network, which improves the best answer. A
  node whose optimum already is a point of the network (each relaxed neuron within rounding of
  max(z, 0)) is closed by it.
* **Branching.** Best bound first; on the relaxed neuron whose y is farthest from max(z, 0).
  Nodes whose bound reaches the best answer's cost are dropped: when none is left, the best
  answer is the optimum (within the relaxations' 1e-7).

The neurons' bounds hold in the box ∩ the ball of the first answer's radius (every better
answer lies inside it): each feature within ρ / w_i of x̄, and Σ w_i |x_i − x̄_i| ≤ √D ρ.
"""

from __future__ import annotations

import heapq
import math
import time
from typing import NamedTuple

import numpy as np
from scipy import sparse

from .bounds import interval, linear_bounds
from .incumbent import incumbent
from .program import pattern_rows

__all__ = ["EuclidResult", "branch_and_bound", "pattern_qp", "shrink"]

#: the relative accuracy taken for an interior-point optimum (Clarabel's tolerances are 1e-8)
_REL = 1e-7
#: the short searches of :func:`answer_row` before the full one: their number and nodes
_RESTARTS, _SHORT = 4, 48


class EuclidResult(NamedTuple):
    """What :func:`branch_and_bound` found."""

    x: np.ndarray | None  # the best answer (a point of the network), or None
    cost: float  # its distance sqrt(Σ (w d)²) (inf without x)
    bound: float  # a lower bound on the optimum's distance
    status: str  # "optimal", "infeasible", "time_limit"
    nodes: int


def shrink(x0, lo, hi, w, radius):
    """Return the box ∩ {|x_i − x̄_i| ≤ radius / w_i}: where every answer within ``radius`` lies."""
    if not math.isfinite(radius):
        return lo, hi
    r = radius * (1 + 1e-9)
    with np.errstate(divide="ignore"):
        reach = np.where(w > 0, r / w, np.inf)
    return np.maximum(lo, x0 - reach), np.minimum(hi, x0 + reach)


def _qp(P, q, A_eq, b_eq, A_ub, b_ub):
    """Solve ``min ½ v'Pv + q'v, A_eq v = b_eq, A_ub v ≤ b_ub`` by Clarabel; return (v, value).

    ``(None, inf)`` where it is infeasible or not solved.
    """
    import clarabel

    blocks, rhs, cones = [], [], []
    if A_eq is not None and A_eq.shape[0]:
        blocks.append(A_eq)
        rhs.append(b_eq)
        cones.append(clarabel.ZeroConeT(A_eq.shape[0]))
    if A_ub.shape[0]:
        blocks.append(A_ub)
        rhs.append(b_ub)
        cones.append(clarabel.NonnegativeConeT(A_ub.shape[0]))
    A = sparse.vstack(blocks, format="csc") if blocks else sparse.csc_matrix((0, q.shape[0]))
    b = np.concatenate(rhs) if rhs else np.zeros(0)
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-10
    solver = clarabel.DefaultSolver(sparse.csc_matrix(P), q, sparse.csc_matrix(A), b, cones,
                                    settings)  # fmt: skip
    sol = solver.solve()
    if str(sol.status) not in ("Solved", "AlmostSolved"):
        return None, math.inf
    return np.asarray(sol.x), float(sol.obj_val)


def _objective(w, n, scale):
    """Return (P, q) of ``Σ (w_i d_i)² / scale`` over the first D of n variables (d = x − x̄).

    The programs move d, not x: the objective has no linear term and no constant to cancel,
    so the solver's relative tolerance applies to the (small) squared distance itself; and
    ``scale`` (the squared radius of a known answer) brings it near 1.
    """
    D = w.shape[0]
    diag = np.zeros(n)
    diag[:D] = 2.0 * w * w / scale
    return sparse.diags(diag, format="csc"), np.zeros(n)


def _scale(radius):
    return radius * radius if math.isfinite(radius) and radius > 0 else 1.0


def pattern_qp(net, pattern, x0, lo, hi, w, G, g, radius=math.inf):
    """Return the closest point (weighted Euclidean) of ``pattern``'s polytope in the target.

    Inside the pattern every neuron's side and the target's rows ``G h ≥ g`` are linear in x
    (:meth:`~fastcf._net.model.Net.affine`). ``radius``: the distance of a known answer (the
    objective's scale). Returns ``(x, distance)``, or ``(None, inf)``.
    """
    D = x0.shape[0]
    A, b = pattern_rows(net, pattern, G, g)
    eye = np.eye(D)
    A_ub = sparse.csc_matrix(np.vstack([A, eye, -eye]))
    b_ub = np.concatenate([b - A @ x0, hi - x0, x0 - lo])  # in d = x − x̄
    P, q = _objective(w, D, _scale(radius))
    v, _ = _qp(P, q, None, None, A_ub, b_ub)
    if v is None:
        return None, math.inf
    x = np.clip(x0 + v, lo, hi)
    x = np.where(np.abs(x - x0) <= 1e-12 * (np.abs(x0) + (hi - lo)), x0, x)
    return x, float(np.sqrt(np.sum((w * (x - x0)) ** 2)))


class _Layout:
    """The relaxation's variables (x | y of every hidden neuron) and its fixed rows."""

    def __init__(self, net, x0, lo, hi, w, G, g, ls, us, scale):
        self.net, self.x0, self.lo, self.hi, self.scale = net, x0, lo, hi, scale
        D = x0.shape[0]
        sizes = [W.shape[0] for W in net.W[:-1]]
        self.n = n = D + sum(sizes)
        self.P, self.q = _objective(w, n, scale)
        eq_r, eq_v, ub_r, ub_v = [], [], [], []
        self.unstable = []  # (layer, neuron, column of y, z's row (cols, vals, b), l, u)
        prev = np.arange(D)
        start = D
        lb, ub = np.full(n, -np.inf), np.full(n, np.inf)
        lb[:D], ub[:D] = lo - x0, hi - x0  # the first D variables are d = x − x̄
        for k, (W, b, zl, zu) in enumerate(zip(net.W[:-1], net.b[:-1], ls, us, strict=True)):
            if k == 0:  # z = W x + b = W d + (W x̄ + b)
                b = b + W @ x0
            for j in range(W.shape[0]):
                y = start + j
                nz = np.flatnonzero(W[j])
                cols, vals = prev[nz], W[j, nz]
                if net.relu and zu[j] <= 0:  # y = 0
                    lb[y], ub[y] = 0.0, 0.0
                elif not net.relu or zl[j] >= 0:  # y = z
                    eq_r.append((np.r_[cols, y], np.r_[vals, -1.0]))
                    eq_v.append(-b[j])
                    lb[y] = max(zl[j], 0.0) if net.relu else zl[j]
                    ub[y] = zu[j]
                else:
                    lb[y], ub[y] = 0.0, zu[j]
                    self.unstable.append((k, j, y, cols, vals, b[j], zl[j], zu[j]))
            prev = np.arange(start, start + W.shape[0])
            start += W.shape[0]
        g = g - G @ x0 if len(sizes) == 0 else g  # (no hidden layer: h is x = x̄ + d)
        for k in range(G.shape[0]):  # G h ≥ g  ⟺  −G h ≤ −g
            nz = np.flatnonzero(G[k])
            ub_r.append((prev[nz], -G[k, nz]))
            ub_v.append(-g[k])
        for i in range(n):  # the variables' own bounds
            if np.isfinite(ub[i]):
                ub_r.append((np.array([i]), np.array([1.0])))
                ub_v.append(ub[i])
            if np.isfinite(lb[i]):
                ub_r.append((np.array([i]), np.array([-1.0])))
                ub_v.append(-lb[i])
        self.eq, self.eq_b = _matrix(eq_r, n), np.array(eq_v)
        self.ub, self.ub_b = _matrix(ub_r, n), np.array(ub_v)

    def rows(self, fix):
        """Return the rows of the unstable neurons under ``fix`` ({index: side}): (eq, ub)."""
        eq_r, eq_v, ub_r, ub_v = [], [], [], []
        for i, (_, _, y, cols, vals, b, zl, zu) in enumerate(self.unstable):
            side = fix.get(i)
            if side is None:  # the triangle: z − y ≤ −b; y − s z ≤ s (b − l)  (y ≥ 0: bounds)
                s = zu / (zu - zl)
                ub_r.append((np.r_[cols, y], np.r_[vals, -1.0]))
                ub_v.append(-b)
                ub_r.append((np.r_[cols, y], np.r_[-s * vals, 1.0]))
                ub_v.append(s * (b - zl))
            elif side:  # on: y = z, z ≥ 0
                eq_r.append((np.r_[cols, y], np.r_[vals, -1.0]))
                eq_v.append(-b)
                ub_r.append((cols, -vals))
                ub_v.append(b)
            else:  # off: y = 0, z ≤ 0
                eq_r.append((np.array([y]), np.array([1.0])))
                eq_v.append(0.0)
                ub_r.append((cols, vals))
                ub_v.append(-b)
        n = self.n
        eq = sparse.vstack([self.eq, _matrix(eq_r, n)], format="csc")
        ub = sparse.vstack([self.ub, _matrix(ub_r, n)], format="csc")
        return eq, np.r_[self.eq_b, eq_v], ub, np.r_[self.ub_b, ub_v]

    def solve(self, fix):
        """Return (v, squared distance) of the node's relaxation, or (None, inf)."""
        eq, eq_b, ub, ub_b = self.rows(fix)
        v, val = _qp(self.P, self.q, eq, eq_b, ub, ub_b)
        return (None, math.inf) if v is None else (v, max(val, 0.0) * self.scale)

    def violation(self, v, fix):
        """Return (index, how far y is from max(z, 0)) of the worst relaxed neuron."""
        worst, at = 0.0, -1
        for i, (_, _, y, cols, vals, b, zl, zu) in enumerate(self.unstable):
            if i in fix:
                continue
            z = float(vals @ v[cols]) + b
            gap = abs(v[y] - max(z, 0.0)) / (zu - zl)
            if gap > worst:
                worst, at = gap, i
        return at, worst


def _matrix(rows, n):
    if not rows:
        return sparse.csc_matrix((0, n))
    r = np.concatenate([np.full(len(c), i) for i, (c, _) in enumerate(rows)])
    c = np.concatenate([c for c, _ in rows])
    v = np.concatenate([v for _, v in rows])
    return sparse.csc_matrix((v, (r, c)), shape=(len(rows), n))


def branch_and_bound(net, x0, lo, hi, w, G, g, ls, us, start=None, time_limit=None,
                     max_nodes=100_000):  # fmt: skip
    """Return the :class:`EuclidResult` of one Euclidean query (see the module docstring).

    ``start``: ``(x, distance)`` of a valid answer (a point of the network in the target), or
    None; ``ls, us``: the neurons' pre-activation bounds over the box.
    """
    t0 = time.perf_counter()
    radius = math.inf if start is None else float(start[1])
    lay = _Layout(net, x0, lo, hi, w, G, g, ls, us, _scale(radius))
    best_x, best = (None, math.inf) if start is None else (start[0], radius**2)
    heap, tick, nodes = [], 0, 0
    stopped = False

    def visit(fix):
        nonlocal best_x, best, tick, nodes
        nodes += 1
        v, val = lay.solve(fix)
        if v is None or val * (1 - _REL) >= best:
            return
        x = np.clip(x0 + v[: x0.shape[0]], lo, hi)
        y, d = pattern_qp(net, net.pattern(x), x0, lo, hi, w, G, g, radius)
        if y is not None and d * d < best:
            best_x, best = y, d * d
        at, gap = lay.violation(v, fix)
        if at < 0 or gap <= 1e-9:  # the relaxation's optimum is a point of the network
            return
        tick += 1
        heapq.heappush(heap, (val, tick, fix, at))

    visit({})
    while heap:
        val, _, fix, at = heapq.heappop(heap)
        if val * (1 - _REL) >= best:
            continue
        if nodes >= max_nodes or (time_limit is not None and time.perf_counter() - t0 > time_limit):
            heapq.heappush(heap, (val, 0, fix, at))
            stopped = True
            break
        for side in (True, False):
            visit({**fix, at: side})
    lower = min((h[0] for h in heap), default=best) if stopped else best
    if best_x is None:
        what = "time_limit" if stopped else "infeasible"
        return EuclidResult(None, math.inf, math.sqrt(max(lower, 0.0)) if stopped else math.inf,
                            what, nodes)  # fmt: skip
    cost = math.sqrt(best)
    return EuclidResult(best_x, cost, math.sqrt(max(min(lower, best), 0.0)),
                        "time_limit" if stopped else "optimal", nodes)  # fmt: skip


def answer_row(net, x0, lo, hi, w, G, g, rows, exact=True, time_limit=None):
    """Return ``(x, distance, status, gap, bound, nodes)`` of one Euclidean query row.

    The first answer: the Manhattan incumbent (:func:`~fastcf._net.incumbent.incumbent`), its
    pattern solved in Euclidean terms (:func:`pattern_qp`). The neurons' bounds over the box
    within its radius; then :func:`branch_and_bound` (``exact=False``: the first answer, with
    the root relaxation's bound). ``status``: "optimal", "time_limit", "infeasible",
    "incumbent".
    """
    start = None
    xi, _ = incumbent(net, rows, x0, lo, hi, w, G, g, "manhattan")
    if xi is not None:
        di = float(np.sqrt(np.sum((w * (xi - x0)) ** 2)))
        y, d = pattern_qp(net, net.pattern(xi), x0, lo, hi, w, G, g, di)
        start = (y, d) if y is not None and d <= di else (xi, di)
    t0 = time.perf_counter()

    def bounded(start):
        radius = math.inf if start is None else start[1]
        blo, bhi = shrink(x0, lo, hi, w, radius)
        if net.relu:
            budget = math.sqrt(np.count_nonzero(w)) * radius * (1 + 1e-9)
            ls, us = linear_bounds(net.W, net.b, x0, w, blo, bhi, budget, radius * (1 + 1e-9))
        else:
            ls, us = interval(net.W, net.b, blo, bhi, net.relu)
        return blo, bhi, ls, us

    blo, bhi, ls, us = bounded(start)
    if not exact and start is not None:  # the first answer, the root's bound
        r = branch_and_bound(net, x0, blo, bhi, w, G, g, ls, us, start, max_nodes=1)
        what = "optimal" if r.status == "optimal" else "incumbent"
    else:
        # short searches first: while one finds an answer well inside the last radius, the
        # neurons' bounds are taken again within the new one (tighter: fewer unstable neurons)
        nodes = 0
        for _ in range(_RESTARTS):
            left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
            r = branch_and_bound(net, x0, blo, bhi, w, G, g, ls, us, start, left, _SHORT)
            nodes += r.nodes
            if r.status != "time_limit" or r.x is None or start is None:
                break
            if r.cost > 0.9 * start[1]:
                break
            start = (r.x, r.cost)
            blo, bhi, ls, us = bounded(start)
        if r.status == "time_limit" and (
            time_limit is None or time.perf_counter() - t0 < time_limit
        ):
            left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
            r = branch_and_bound(net, x0, blo, bhi, w, G, g, ls, us, start, left)
            nodes += r.nodes
        r = r._replace(nodes=nodes)
        what = r.status
    if r.x is None:
        return None, math.inf, what, math.inf, r.bound, r.nodes
    gap = 0.0 if what == "optimal" else (r.cost - r.bound) / r.cost if r.cost > 0 else 0.0
    return r.x, r.cost, what, max(gap, 0.0), r.bound, r.nodes
