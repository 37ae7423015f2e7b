"""Euclidean counterfactuals of a ReLU network: a branch-and-bound over activation patterns.

HiGHS solves mixed-integer *linear* programs and continuous quadratic ones, not mixed-integer
quadratic ones, so the Euclidean query ``min Σ (w_i (x_i − x̄_i))²`` has its own search here.

* **Nodes.** A node fixes the side of some of the neurons the query's box leaves unstable
  (l < 0 < u, :mod:`.bounds`): on (y = z, z ≥ 0) or off (y = 0, z ≤ 0). Its relaxation keeps
  every other unstable neuron in its triangle (y ≥ 0, y ≥ z, y ≤ u (z − l) / (u − l): the
  convex hull of y = max(z, 0) on [l, u]), every stable one exact. Over the input x and the
  neurons' outputs y it is a convex quadratic program, whose optimum bounds the node's from
  below (Clarabel, an interior-point solver: the bound is taken as ``(1 − 1e-7)`` of its value;
  where it stops without a verdict, HiGHS's QP solver; a node neither decides is not pruned as
  infeasible but leaves the answer unproven below its parent's bound).
* **Leaves.** At every node's optimum x, the network's own activation pattern there is solved
  exactly (the closest point of that pattern's polytope meeting the target: a quadratic program
  in x alone, :func:`pattern_qp`): a point of the network, which improves the best answer. A
  node whose optimum already is a point of the network (each relaxed neuron within rounding of
  max(z, 0)) is closed by it.
* **Branching.** Best bound first; on the relaxed neuron whose y is farthest from max(z, 0).
  Nodes whose bound reaches the best answer's cost are dropped: when none is left, the best
  answer is the optimum (within the relaxations' 1e-7).

The first answer: the Manhattan incumbent's pattern solved in Euclidean terms, then improved by
a walk over the adjacent patterns (:func:`~fastcf._net.incumbent.walk`). The neurons' bounds
hold in the box ∩ the ball of the best answer's radius ρ (every better answer lies inside it):
each feature within ρ / w_i of x̄, and Σ w_i |x_i − x̄_i| ≤ √D ρ (CROWN,
:func:`~fastcf._net.bounds.linear_bounds`);
the later layers' unstable neurons are then tightened by linear programs over that L1 hull
with the target's rows (:func:`tighten_layers`) and, for a search that a short one (48 nodes)
does not finish, every layer's by conic programs over the ball itself (:func:`tighten_ball`).
Whenever a search finds an answer within 0.9 of the radius its bounds were taken in, it starts
again from bounds taken within the new radius (at most 8 times). Measured on the benchmark's
(32, 32) network (10 queries, ``weights="mad"``, the same process alternating, a busy 2-core
machine): median 0.30 s before these three steps, 0.14 s after; the slowest query, stopped at
30 s with an answer 18 % above the optimum before, is proven optimal in 4–7 s.
"""

from __future__ import annotations

import heapq
import math
import time
from typing import NamedTuple

import numpy as np
from scipy import sparse

from .bounds import interval, linear_bounds
from .incumbent import incumbent, walk
from .program import pattern_rows

__all__ = [
    "EuclidResult",
    "answer_row",
    "branch_and_bound",
    "pattern_qp",
    "shrink",
    "tighten_ball",
    "tighten_layers",
]

#: the relative accuracy taken for an interior-point optimum (Clarabel's tolerances are 1e-8)
_REL = 1e-7
#: the nodes of :func:`answer_row`'s short search (before the full one)
_SHORT = 48
#: a search stops and starts again with the neurons' bounds taken within the new radius when
#: it finds an answer within this fraction of the last one; at most this many times
_SHRINK, _MAX_RESTARTS = 0.9, 8
_FIRST = 1
#: Clarabel's infeasibility tolerances in :func:`_qp`'s second look at an "infeasible"
_INFEAS = 1e-12


class EuclidResult(NamedTuple):
    """What :func:`branch_and_bound` found."""

    x: np.ndarray | None  # the best answer (a point of the network), or None
    cost: float  # its distance sqrt(Σ (w d)²) (inf without x)
    bound: float  # a lower bound on the optimum's distance
    status: str  # "optimal", "infeasible", "time_limit", "unproven" (a relaxation undecided)
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

    ``P``: CSC; the rows: dense arrays.

    ``(None, inf)`` where it is infeasible (Clarabel's certificate holding to :data:`_INFEAS` on
    a second look); where Clarabel stops without a verdict, HiGHS's QP solver
    (:func:`_qp_highs`), and ``(None, nan)`` where neither gives one.
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
    # (the rows are dense and few: one conversion, not scipy's sparse stacking per node)
    A = sparse.csc_matrix(np.vstack(blocks) if blocks else np.zeros((0, q.shape[0])))
    b = np.concatenate(rhs) if rhs else np.zeros(0)
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-10
    solver = clarabel.DefaultSolver(P, q, A, b, cones, settings)
    sol = solver.solve()
    status = str(sol.status)
    if status == "PrimalInfeasible":
        # a second look, its certificate asked to hold to 1e-12 (Clarabel's default: 1e-8): on
        # rows of 1e3…1e4 times each other its first iterate's equilibrated certificate can
        # pass 1e-8 while the program has points — soak_net, seed 95, example 292: the root
        # relaxation called infeasible after 1 iteration (A'z 4e-3 against b'z −7.4, with
        # neurons' outputs up to 1.4e4), so the query "infeasible" where 1.005 exists. Only a
        # program called infeasible pays it
        settings.tol_infeas_abs = settings.tol_infeas_rel = _INFEAS
        sol = clarabel.DefaultSolver(P, q, A, b, cones, settings).solve()
        status = str(sol.status)
    if status == "Solved":
        return np.asarray(sol.x), float(sol.obj_val)
    if status == "PrimalInfeasible":
        return None, math.inf
    # Clarabel stopped without a verdict (MaxIterations, InsufficientProgress, NumericalError:
    # rows of 1e3…1e4 times each other), or with a reduced-accuracy one ("Almost…": an
    # AlmostSolved node's value, taken as its bound, pruned the optimum's node of soak_net seed
    # 72, example 32 — relaxed outputs of 1e7, a 1.4 % dearer answer called optimal — as
    # :func:`tighten_ball` takes only "Solved"); HiGHS's active-set QP solver, or no verdict (NaN)
    return _qp_highs(P, q, A_eq, b_eq, A_ub, b_ub)


def _qp_highs(P, q, A_eq, b_eq, A_ub, b_ub):
    """Solve :func:`_qp`'s program by HiGHS's QP solver.

    ``(v, value)``; ``(None, inf)`` where it is infeasible; ``(None, nan)`` where HiGHS has no
    verdict either.
    """
    import highspy

    from .._highs import highs

    blocks = [m for m in (A_eq, A_ub) if m is not None and m.shape[0]]
    A = sparse.csr_matrix(np.vstack(blocks) if blocks else np.zeros((0, q.shape[0])))
    n_eq = 0 if A_eq is None else A_eq.shape[0]
    lo = np.concatenate([b_eq if n_eq else np.zeros(0), np.full(A_ub.shape[0], -np.inf)])
    hi = np.concatenate([b_eq if n_eq else np.zeros(0), b_ub])
    n = q.shape[0]
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, A.shape[0]
    lp.col_cost_ = np.asarray(q, dtype=np.float64)
    lp.col_lower_, lp.col_upper_ = np.full(n, -np.inf), np.full(n, np.inf)
    lp.row_lower_, lp.row_upper_ = lo, hi
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(np.float64)
    L = sparse.tril(sparse.csc_matrix(P)).tocsc()
    L.eliminate_zeros()
    hess = highspy.HighsHessian()
    hess.dim_ = n
    hess.format_ = highspy.HessianFormat.kTriangular
    hess.start_ = L.indptr.astype(np.int32)
    hess.index_ = L.indices.astype(np.int32)
    hess.value_ = L.data.astype(np.float64)
    model = highspy.HighsModel()
    model.lp_ = lp
    model.hessian_ = hess
    h = highs("net-qp")
    h.clearSolver()
    h.passModel(model)
    h.run()
    st = h.getModelStatus()
    if st == highspy.HighsModelStatus.kOptimal:
        return np.asarray(h.getSolution().col_value), float(h.getInfo().objective_function_value)
    if st == highspy.HighsModelStatus.kInfeasible:
        return None, math.inf
    return None, math.nan


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


def pattern_qp(net, pattern, x0, lo, hi, w, G, g, radius=math.inf, strict=False):
    """Return the closest point (weighted Euclidean) of ``pattern``'s polytope in the target.

    Inside the pattern every neuron's side and the target's rows ``G h ≥ g`` are linear in x
    (:meth:`~fastcf._net.model.Net.affine`). ``radius``: the distance of a known answer (the
    objective's scale). ``strict``: the off neurons kept off beyond their rounding
    (:func:`~fastcf._net.program.pattern_rows`). Returns ``(x, distance)``, or ``(None, inf)``.
    """
    D = x0.shape[0]
    mag = np.maximum(np.abs(lo), np.abs(hi)) if strict else None
    A, b = pattern_rows(net, pattern, G, g, mag)
    eye = np.eye(D)
    A_ub = np.vstack([A, eye, -eye])
    b_ub = np.concatenate([b - A @ x0, hi - x0, x0 - lo])  # in d = x − x̄
    P, q = _objective(w, D, _scale(radius))
    v, _ = _qp(P, q, None, None, A_ub, b_ub)
    if v is None:  # (no answer in this pattern, or none found: the search goes on)
        return None, math.inf
    x = np.clip(x0 + v, lo, hi)
    x = np.where(np.abs(x - x0) <= 1e-12 * (np.abs(x0) + (hi - lo)), x0, x)
    return x, float(np.sqrt(np.sum((w * (x - x0)) ** 2)))


class _Layout:
    """The relaxation's variables (d | y of every hidden neuron | s) and its fixed rows.

    ``max_changes`` (m): a support variable s_k ∈ [0, 1] per feature that can move, with
    ``−(x̄ − lo) s ≤ d ≤ (hi − x̄) s`` and ``Σ s ≤ m`` (fixed to 0 or 1 by the branching).
    """

    def __init__(self, net, x0, lo, hi, w, G, g, ls, us, scale, max_changes=None):
        self.net, self.x0, self.lo, self.hi, self.scale = net, x0, lo, hi, scale
        D = x0.shape[0]
        sizes = [W.shape[0] for W in net.W[:-1]]
        self.max_changes, self.w = max_changes, w
        self.feats = np.flatnonzero(hi > lo) if max_changes is not None else np.zeros(0, int)
        self.i_s = D + sum(sizes)  # the first support column
        self.n = n = self.i_s + self.feats.size
        self.P, self.q = _objective(w, n, scale)
        eq_r, eq_v, ub_r, ub_v = [], [], [], []
        un_r, un_y, un_b, un_l, un_u = [], [], [], [], []  # the unstable neurons' z rows
        prev = np.arange(D)
        start = D
        lb, ub = np.full(n, -np.inf), np.full(n, np.inf)
        lb[:D], ub[:D] = lo - x0, hi - x0  # the first D variables are d = x − x̄
        lb[self.i_s :], ub[self.i_s :] = 0.0, 1.0
        for k_s, i in enumerate(self.feats):  # d_i ≤ (hi − x̄) s, −d_i ≤ (x̄ − lo) s; Σ s ≤ m
            col = self.i_s + k_s
            ub_r.append((np.array([i, col]), np.array([1.0, -(hi[i] - x0[i])])))
            ub_v.append(0.0)
            ub_r.append((np.array([i, col]), np.array([-1.0, -(x0[i] - lo[i])])))
            ub_v.append(0.0)
        if self.feats.size:
            ub_r.append((np.arange(self.i_s, n), np.ones(self.feats.size)))
            ub_v.append(float(max_changes))
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
                    un_r.append((cols, vals))
                    un_y.append(y)
                    un_b.append(b[j])
                    un_l.append(zl[j])
                    un_u.append(zu[j])
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
        # the unstable neurons, as rows to pick from per node: Z (z − b: W_j · prev) and
        # Y (their y column); b, l, u and the triangle's slope s = u / (u − l)
        m = len(un_y)
        self.m = m
        self.un_y = np.array(un_y, dtype=np.int64)
        self.un_b, self.un_l, self.un_u = np.array(un_b), np.array(un_l), np.array(un_u)
        self.un_s = self.un_u / (self.un_u - self.un_l) if m else np.zeros(0)
        Z = _matrix(un_r, n)
        Y = np.zeros((m, n))
        Y[np.arange(m), self.un_y] = 1.0
        self.Z, self.Y = Z, Y
        self.ZmY = Z - Y  # z − y (less b)
        self.tri = Y - self.un_s[:, None] * Z  # y − s z (less s b)

    def rows(self, fix):
        """Return the rows of the unstable neurons under ``fix`` ({index: side}): (eq, ub).

        Relaxed (the triangle): z − y ≤ −b and y − s z ≤ s (b − l) (y ≥ 0: its bounds); on:
        y = z, z ≥ 0; off: y = 0, z ≤ 0. The keys from ``self.m`` on are the support variables
        (``max_changes``): fixed to the side.
        """
        side = np.full(self.m, -1, dtype=np.int8)
        sup, sup_v = [], []
        for i, v in fix.items():
            if i < self.m:
                side[i] = 1 if v else 0
            else:
                sup.append(self.i_s + i - self.m)
                sup_v.append(1.0 if v else 0.0)
        free, on, off = (np.flatnonzero(side == v) for v in (-1, 1, 0))
        b, s, zl = self.un_b, self.un_s, self.un_l
        S = np.zeros((len(sup), self.n))
        S[np.arange(len(sup)), sup] = 1.0
        eq = np.vstack([self.eq, self.ZmY[on], self.Y[off], S])
        eq_b = np.concatenate([self.eq_b, -b[on], np.zeros(off.size), sup_v])
        ub = np.vstack([self.ub, self.ZmY[free], self.tri[free], -self.Z[on], self.Z[off]])
        ub_b = np.concatenate([self.ub_b, -b[free], s[free] * (b[free] - zl[free]), b[on], -b[off]])
        return eq, eq_b, ub, ub_b

    def solve(self, fix):
        """Return (v, squared distance) of the node's relaxation.

        (None, inf) where it is infeasible; (None, nan) where no solver gave a verdict.
        """
        eq, eq_b, ub, ub_b = self.rows(fix)
        v, val = _qp(self.P, self.q, eq, eq_b, ub, ub_b)
        return (None, val) if v is None else (v, max(val, 0.0) * self.scale)

    def support(self, v, fix):
        """Return the support variable to branch on (its key), or -1.

        -1 where the features the relaxation's optimum changes and those fixed in number at
        most ``max_changes`` (or there is no such limit: then its leaf keeps them all free,
        :meth:`pinned`); else the free changed one of the largest ``s (1 − s)``.
        """
        if self.max_changes is None:
            return -1
        d = v[self.feats]
        used = np.abs(d) > 1e-9 * (self.hi - self.lo)[self.feats]
        free = np.ones(self.feats.size, dtype=bool)
        for i, side in fix.items():
            if i >= self.m:
                free[i - self.m] = False
                used[i - self.m] |= bool(side)
        if np.count_nonzero(used) <= self.max_changes:
            return -1
        s = v[self.i_s :]
        score = np.where(used & free, s * (1.0 - s) + 1e-12, -1.0)
        k = int(np.argmax(score))
        return self.m + k if score[k] > 0 else -1

    def pinned(self, v, fix):
        """Return the features a leaf keeps at x̄: those outside its support (``max_changes``).

        The support: the features fixed in, then the others that move most (|w d|), up to m.
        """
        D = self.x0.shape[0]
        if self.max_changes is None:
            return np.zeros(D, dtype=bool)
        score = np.abs(self.w * v[:D])
        keep = np.zeros(D, dtype=bool)
        room = np.zeros(D, dtype=bool)
        room[self.feats] = True
        for i, side in fix.items():
            if i >= self.m and side:
                keep[self.feats[i - self.m]] = True
            elif i >= self.m:
                room[self.feats[i - self.m]] = False
        order = np.argsort(-score, kind="stable")
        for i in order:
            if keep.sum() >= self.max_changes:
                break
            if room[i] and not keep[i] and score[i] > 0:
                keep[i] = True
        return ~keep

    def violation(self, v, fix):
        """Return (index, how far y is from max(z, 0)) of the worst relaxed neuron."""
        if not self.m:
            return -1, 0.0
        z = self.Z @ v + self.un_b
        gap = np.abs(v[self.un_y] - np.maximum(z, 0.0)) / (self.un_u - self.un_l)
        fixed = [i for i in fix if i < self.m]
        if fixed:
            gap[fixed] = 0.0
        at = int(np.argmax(gap))
        return (at, float(gap[at])) if gap[at] > 0.0 else (-1, 0.0)


def _matrix(rows, n):
    """Return the dense matrix of ``rows`` (each: its columns and values) over n columns."""
    M = np.zeros((len(rows), n))
    for i, (c, v) in enumerate(rows):
        np.add.at(M[i], c, v)
    return M


def branch_and_bound(net, x0, lo, hi, w, G, g, ls, us, start=None, deadline=math.inf,
                     max_nodes=100_000, until=None, max_changes=None):  # fmt: skip
    """Return the :class:`EuclidResult` of one Euclidean query (see the module docstring).

    ``start``: ``(x, distance)`` of a valid answer (a point of the network in the target), or
    None; ``ls, us``: the neurons' pre-activation bounds over the box. The search stops
    (status "time_limit", with its bound) past ``deadline`` (``time.perf_counter()``), after
    ``max_nodes``
    nodes, or as soon as it has an answer whose squared distance is below ``until``.
    ``max_changes``: at most that many features move (a support variable per feature, branched
    on before the neurons while the relaxation moves more).
    """
    radius = math.inf if start is None else float(start[1])
    lay = _Layout(net, x0, lo, hi, w, G, g, ls, us, _scale(radius), max_changes)
    best_x, best = (None, math.inf) if start is None else (start[0], radius**2)
    heap, tick, nodes = [], 0, 0
    stopped = False
    tried = set()  # the activation patterns whose program was solved
    # the bounds of the nodes whose relaxation no solver could decide (their parent's bound):
    # not pruned as if infeasible (that proved a 2.2× dearer answer optimal: soak_net, seed
    # 31), they leave the answer unproven below them
    unsolved = []

    def visit(fix, parent=0.0):
        nonlocal best_x, best, tick, nodes
        nodes += 1
        v, val = lay.solve(fix)
        if v is None and math.isnan(val):
            unsolved.append(parent)
            return
        if v is None or val * (1 - _REL) >= best:
            return
        pin = lay.pinned(v, fix)
        x = np.clip(x0 + v[: x0.shape[0]], lo, hi)
        x[pin] = x0[pin]
        pat = net.pattern(x)
        key = b"".join(p.tobytes() for p in (*pat, pin))
        if key not in tried:  # (a pattern's program is solved once per search)
            tried.add(key)
            plo, phi = np.where(pin, x0, lo), np.where(pin, x0, hi)
            y, d = pattern_qp(net, pat, x0, plo, phi, w, G, g, radius)
            if y is not None and d * d < best:
                best_x, best = y, d * d
        at = lay.support(v, fix)  # (the support first: while the relaxation moves too many)
        if at < 0:
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
        if (
            nodes >= max_nodes
            or (until is not None and best < until)
            or time.perf_counter() > deadline
        ):
            heapq.heappush(heap, (val, 0, fix, at))
            stopped = True
            break
        for side in (True, False):
            visit({**fix, at: side}, val)
    lower = min((h[0] for h in heap), default=best) if stopped else best
    open_ = min((u for u in unsolved if u * (1 - _REL) < best), default=math.inf)
    if open_ < lower:  # a node that might hold a better answer was never decided
        lower, stopped = open_, True
        done = "unproven"
    else:
        done = "time_limit"
    if best_x is None:
        what = done if stopped else "infeasible"
        return EuclidResult(None, math.inf, math.sqrt(max(lower, 0.0)) if stopped else math.inf,
                            what, nodes)  # fmt: skip
    cost = math.sqrt(best)
    return EuclidResult(best_x, cost, math.sqrt(max(min(lower, best), 0.0)),
                        done if stopped else "optimal", nodes)  # fmt: skip


def tighten_layers(net, x0, lo, hi, w, G, g, ls, us, budget, deadline=math.inf):
    """Return the bounds ``ls, us`` with the later layers' unstable neurons tightened by LP.

    Layer by layer after the first (whose bounds :func:`~fastcf._net.bounds.linear_bounds`
    already takes over the box ∩ the ball), each unstable neuron's pre-activation is
    minimised and maximised over the Manhattan program's relaxation
    (:func:`fastcf._net.search.tighten`) with the budget row ``Σ w |x − x̄| ≤ budget`` and the
    target's rows: every answer within the Euclidean radius ρ lies there (``budget``:
    ``√(nnz w) ρ``, Cauchy–Schwarz). Tighter triangles, and neurons found stable, cut the
    branch-and-bound's nodes. Where HiGHS fails, or past ``deadline`` (``time.perf_counter()``),
    the bounds not yet tightened are kept as they are.
    """
    from .program import Program
    from .search import _Lp, tighten

    if not math.isfinite(budget) or len(ls) < 2:
        return ls, us
    for k in range(_FIRST, len(ls)):
        want = [(k, int(j)) for j in np.flatnonzero((ls[k] < 0) & (us[k] > 0))]
        if not want:
            continue
        if time.perf_counter() > deadline:
            break
        prog = Program(net, x0, lo, hi, w, "manhattan", None, (ls, us))
        got = tighten(_Lp(prog, G, g, budget), prog, want, deadline)
        if got is None:
            break
        ls, us = got
    return ls, us


def tighten_ball(net, x0, lo, hi, w, G, g, ls, us, radius, deadline=math.inf):
    """Return ``ls, us`` with the later layers' unstable neurons tightened over the ball.

    As :func:`tighten_layers`, but over the Euclidean ball itself (``Σ (w d)² ≤ radius²``, a
    second-order cone, with the triangles of the earlier layers, the box and the target's
    rows): one conic program per bound on Clarabel, widened by a relative 1e-6 for its
    tolerances. Tighter than the Manhattan program's budget row, which holds the ball's
    √D-times larger L1 hull; dearer (milliseconds per neuron), so taken only for a search
    that the cheaper bounds leave long; past ``deadline`` (``time.perf_counter()``) the
    neurons left keep their bounds.
    """
    import clarabel

    if not math.isfinite(radius):
        return ls, us
    D = x0.shape[0]
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    for k in range(len(ls)):
        todo = np.flatnonzero((ls[k] < 0) & (us[k] > 0))
        if not todo.size:
            continue
        lay = _Layout(net, x0, lo, hi, w, G, g, ls, us, 1.0)
        eq, eq_b, ub, ub_b = lay.rows({})
        soc = np.zeros((D + 1, lay.n))  # (ρ, w d) in the cone: ‖w d‖ ≤ ρ
        soc[1:, :D] = -np.diag(w)
        A = sparse.csc_matrix(np.vstack([eq, ub, soc]))
        b = np.concatenate([eq_b, ub_b, np.r_[radius * (1 + 1e-9), np.zeros(D)]])
        cones = [
            clarabel.ZeroConeT(eq.shape[0]),
            clarabel.NonnegativeConeT(ub.shape[0]),
            clarabel.SecondOrderConeT(D + 1),
        ]
        P = sparse.csc_matrix((lay.n, lay.n))
        if k:
            start = D + sum(W.shape[0] for W in net.W[: k - 1])
            prev = np.arange(start, start + net.W[k - 1].shape[0])  # layer k − 1's y
            const = net.b[k]
        else:  # z = W d + (W x̄ + b)
            prev, const = np.arange(D), net.b[0] + net.W[0] @ x0
        ls, us = [v.copy() for v in ls], [v.copy() for v in us]
        for j in todo:
            if time.perf_counter() > deadline:
                return ls, us
            c = np.zeros(lay.n)
            c[prev] = net.W[k][j]
            got = []
            for sign in (1.0, -1.0):
                sol = clarabel.DefaultSolver(P, sign * c, A, b, cones, settings).solve()
                if str(sol.status) != "Solved":
                    break
                got.append(sign * float(sol.obj_val))
            if len(got) < 2:
                continue
            zl, zu = got[0] + const[j], got[1] + const[j]
            pad = 1e-6 * (1.0 + abs(zl) + abs(zu))
            ls[k][j] = max(ls[k][j], zl - pad)
            us[k][j] = min(us[k][j], zu + pad)
    return ls, us


def answer_row(net, x0, lo, hi, w, G, g, rows, exact=True, deadline=math.inf, max_changes=None):
    """Return ``(x, distance, status, gap, bound, nodes)`` of one Euclidean query row.

    The first answer: the Manhattan incumbent (:func:`~fastcf._net.incumbent.incumbent`), its
    pattern solved in Euclidean terms (:func:`pattern_qp`; with ``max_changes``, only its
    ``max_changes`` largest moves kept, where that pattern still reaches the target). The
    neurons' bounds over the box within its radius; then :func:`branch_and_bound`
    (``exact=False``: the first answer, with the root relaxation's bound). ``deadline``
    (``time.perf_counter()``; the query's ``time_limit`` from its start) bounds the bounds'
    tightening and the searches. ``status``: "optimal", "time_limit", "infeasible",
    "incumbent".
    """
    m = max_changes
    start = None
    xi, _ = incumbent(net, rows, x0, lo, hi, w, G, g, "manhattan")
    if xi is not None:
        di = float(np.sqrt(np.sum((w * (xi - x0)) ** 2)))
        keep = np.ones(x0.shape[0], dtype=bool)
        if m is not None:  # the m largest moves, the others pinned at x̄
            keep[:] = False
            keep[np.argsort(-np.abs(w * (xi - x0)), kind="stable")[:m]] = True
            keep &= xi != x0
        plo, phi = np.where(keep, lo, x0), np.where(keep, hi, x0)

        def solve(pattern, limit=math.inf):
            return pattern_qp(net, pattern, x0, plo, phi, w, G, g, di)

        y, d = solve(net.pattern(xi))
        if y is not None and (d <= di or m is not None):
            start = (y, d)
        elif m is None:
            start = (xi, di)
        if start is not None:
            start = walk(net, *start, solve, tries=8)

    def bounded(start, ball=False):
        radius = math.inf if start is None else start[1]
        blo, bhi = shrink(x0, lo, hi, w, radius)
        if net.relu:
            # (Cauchy–Schwarz: Σ w |d| ≤ √(number of moves) ‖w d‖)
            moves = np.count_nonzero(w) if m is None else min(m, np.count_nonzero(w))
            budget = math.sqrt(moves) * radius * (1 + 1e-9)
            ls, us = linear_bounds(net.W, net.b, x0, w, blo, bhi, budget, radius * (1 + 1e-9))
            ls, us = tighten_layers(net, x0, blo, bhi, w, G, g, ls, us, budget, deadline)
            if ball:
                ls, us = tighten_ball(net, x0, blo, bhi, w, G, g, ls, us, radius, deadline)
        else:
            ls, us = interval(net.W, net.b, blo, bhi, net.relu)
        return blo, bhi, ls, us

    blo, bhi, ls, us = bounded(start)
    if not exact:  # the first answer, the root's bound
        if start is None:  # (the search, up to its first answer)
            r = branch_and_bound(net, x0, blo, bhi, w, G, g, ls, us, None, deadline,
                                 until=math.inf, max_changes=m)  # fmt: skip
            if r.x is not None and r.status != "optimal":
                start = (r.x, r.cost)
                blo, bhi, ls, us = bounded(start)
        if start is not None:
            r = branch_and_bound(net, x0, blo, bhi, w, G, g, ls, us, start, max_nodes=1,
                                 max_changes=m)  # fmt: skip
        what = "optimal" if r.status == "optimal" else "incumbent" if r.x is not None else r.status
    else:
        # short searches first, then the full one; whenever a search finds an answer well
        # inside the last radius (or the first answer at all), it stops there and the neurons'
        # bounds are taken again within the new radius (tighter: fewer unstable neurons,
        # tighter triangles), and the search starts again from them
        nodes, restarts, capped = 0, 0, True
        while True:
            until = None
            if restarts < _MAX_RESTARTS:
                until = math.inf if start is None else (_SHRINK * start[1]) ** 2
            r = branch_and_bound(net, x0, blo, bhi, w, G, g, ls, us, start, deadline,
                                 _SHORT if capped else 100_000, until, m)  # fmt: skip
            nodes += r.nodes
            if r.status != "time_limit" or time.perf_counter() >= deadline:
                break
            if r.x is not None and (start is None or r.cost <= _SHRINK * start[1]):
                if restarts < _MAX_RESTARTS:
                    start, restarts = (r.x, r.cost), restarts + 1
                    blo, bhi, ls, us = bounded(start, not capped)
                    continue
            if not capped:
                break  # (the full search's node limit)
            capped = False  # the full search, over the ball's tighter bounds
            blo, bhi, ls, us = bounded(start, True)
        r = r._replace(nodes=nodes)
        what = r.status
    if r.x is None:
        return None, math.inf, what, math.inf, r.bound, r.nodes
    gap = 0.0 if what == "optimal" else (r.cost - r.bound) / r.cost if r.cost > 0 else 0.0
    return r.x, r.cost, what, max(gap, 0.0), r.bound, r.nodes
