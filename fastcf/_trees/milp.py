"""Tree ensembles: the exact counterfactual as a mixed-integer program over threshold intervals.

Intervals. For each feature f, the sorted distinct split boundaries ``b_1 < … < b_m`` used
anywhere in the ensemble (the parsed rule *left iff x <= b*, :mod:`fastcf._trees.forest`) cut
the float64 line into m + 1 closed intervals ``I_0 = [lo, b_1]``, ``I_k = [nextafter(b_k),
b_{k+1}]``, ``I_m = [nextafter(b_m), hi]`` (lo, hi: the library's domain). Every input of one
interval takes the same branch at every split of f; one interval per feature is one *cell*,
and the model is constant on a cell.

Variables (the formulation of Mišić (2020) and of Parmentier & Vidal's OCEAN (2021), written
over intervals):

* ``y_{f,j} ∈ {0, 1}``, j = 1..m: ``x_f <= b_j``, with ``y_{f,j} <= y_{f,j+1}``. The interval
  binaries are ``z_{f,k} = y_{f,k+1} − y_{f,k}`` (``y_{f,0} = 0``, ``y_{f,m+1} = 1``): exactly one
  interval per feature; the cumulative form keeps every split row to a single y.
* ``λ_{t,l} ∈ [0, 1]`` for each leaf l of tree t, continuous, ``Σ_l λ_{t,l} = 1``; at every
  split node n of tree t on (f, b_j): ``Σ_{l ∈ left(n)} λ_{t,l} <= y_{f,j}`` and
  ``Σ_{l ∈ right(n)} λ_{t,l} <= 1 − y_{f,j}``. With y integral, every leaf off the path of the
  cell gets 0, so λ is the indicator of the leaf the cell reaches (no integrality needed).

Objective: the metric is separable (:mod:`fastcf._trees.query`), and the cost of interval k of
feature f is ``c_{f,k}`` = the cost of moving x̄_f to its closest point ``clip(x̄_f, I_k)`` (0
for the interval holding x̄_f; Manhattan ``w|d|``, Euclidean ``(w d)²`` — the square is
minimised, its root reported — or L0 ``w [d ≠ 0]``): ``Σ_k c_{f,k} z_{f,k} = c_{f,m} + Σ_j
(c_{f,j−1} − c_{f,j}) y_{f,j}``. ``bounds`` / frozen features fix the y outside the allowed
intervals; ``max_changes=m``: ``Σ_f (1 − z_{f,k̄_f}) <= m`` (k̄_f: x̄'s interval).

Target (the library's sums ``Z = base + Σ_{t,l} V_{t,l} λ_{t,l}``, in sum units): every linear
form of the decision (:class:`~fastcf._trees.forest.Argmax`: ``Z_t − Z_j`` for each other class
j, a tie won by the earlier class; :class:`~fastcf._trees.forest.Sign`: ``±Z``) must be ``>= 0``
(or ``> 0``). Where the library's sums are exact (``forest.unit > 0``: votes of pure leaves) a
strict form is ``>= unit/2`` and the program is exact as it stands. Elsewhere every form is
relaxed to ``>= −delta`` (the rounding bound): the program then holds every cell the library
might put in the target class, the answer is checked with the library's own arithmetic (term
by term, in its order) and the model's own ``predict``, and a cell it rejects — a near-tie —
is cut off with the no-good cut ``Σ_t λ_{t, leaf_t} <= T − 1`` (its leaf combination) and the
program solved again. ``proba=τ``: the necessary linear conditions of the link (forests
``Z_t >= τ T``, binary boosting ``±Z >= logit τ``, multiclass boosting ``Z_t − Z_j >= logit τ``
plus tangent cuts of the convex ``log Σ exp``), checked the same way.

Pruning (exact). The full program of a 100-tree forest has thousands of rows, and HiGHS takes
tens of seconds on it. A quick valid answer of cost C (:mod:`fastcf._trees.incumbent`, confirmed
by the model) bounds the optimum, and every term of the cost is >= 0: so no answer cheaper
than C uses an interval of cost > C, nor a leaf whose box (intersected with the query's box)
costs more than C to reach. Those intervals are fixed out and those leaves dropped before the
program is built, and C is handed to HiGHS as its first incumbent. A tree left without a leaf
proves C optimal.

Decoding: the answer's x_f is the point of its interval (within the query's box) closest to
x̄_f; every such point is a representable float64 on the correct side of every split. The
program is solved by HiGHS (``highspy``) to a zero gap; ``time_limit`` stops it with the best
answer found so far (``info["gap"]``, ``info["bound"]``).
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

import numpy as np

from .._highs import highs
from .._status import Status
from .incumbent import cost_of, incumbent
from .query import coord_cost, finish
from .structure import Structure

__all__ = ["Program", "Answer"]

#: programs solved again after a cut before a query gives up (near-ties are rare)
MAX_CUTS = 200
#: values (leaves × features) of the leaf projections tried for the incumbent
_PROJECTIONS = 2_000_000


class Answer(NamedTuple):
    """The program's answer for one query."""

    x: np.ndarray  # (D,)
    distance: float
    success: bool
    status: int
    message: str
    runs: int  # programs solved (1 + cuts; 0 when the incumbent was proven optimal by pruning)
    gap: float  # relative gap between the answer and the bound (0: proven optimal)
    bound: float  # a lower bound on the distance
    nodes: int  # branch-and-bound nodes, all runs


_HIGHS_OPTIONS = (
    ("mip_feasibility_tolerance", 1e-9),
    ("primal_feasibility_tolerance", 1e-9),
    # the programs are already pruned: HiGHS's presolve cost more than it saved on 100-tree
    # forests (measured: 3.6 s against 2.7 s median per query)
    ("presolve", "off"),
)


def _highs():
    """Return this thread's HiGHS instance for tree programs (:func:`fastcf._highs.highs`)."""
    return highs("trees", _HIGHS_OPTIONS)


class _Cells(NamedTuple):
    """The intervals of one query: per feature, each interval's closest point and cost."""

    points: list  # per feature (m_f + 1,) the point of each interval closest to x̄
    costs: list  # per feature (m_f + 1,) its per-coordinate cost
    ranges: list  # per feature (ka, kb): the intervals the query's box allows


class Program(Structure):
    """A forest's program: :class:`~fastcf._trees.structure.Structure` and one query's solve."""

    # ------------------------------------------------------------------ one query
    def _cells(self, x0, lo, hi, q) -> _Cells:
        points, costs, ranges = [], [], []
        for f in range(self.forest.n_features):
            ka = int(np.searchsorted(self.B[f], lo[f], side="left"))
            kb = int(np.searchsorted(self.B[f], hi[f], side="left"))
            p = np.clip(x0[f], np.maximum(self.R[f], lo[f]), np.minimum(self.U[f], hi[f]))
            c = coord_cost(p - x0[f], q.w[f], q.metric)
            c[:ka] = c[ka]  # (intervals outside the box: fixed out below; any finite cost)
            c[kb + 1 :] = c[kb]
            points.append(p)
            costs.append(c)
            ranges.append((ka, kb))
        return _Cells(points, costs, ranges)

    def _leaf_costs(self, x0, lo, hi, q):
        """Return the cheapest cost of reaching each leaf within the query's box (inf: none)."""
        f = self.b_feat
        a = np.maximum(self.b_lo, lo[f])
        b = np.minimum(self.b_hi, hi[f])
        empty = a > b
        c = coord_cost(np.clip(x0[f], a, b) - x0[f], q.w[f], q.metric)
        n = self.leaf_ids.size
        cost = np.bincount(self.b_leaf, weights=c, minlength=n)
        cost[np.bincount(self.b_leaf, weights=empty, minlength=n) > 0] = np.inf
        return cost

    def _projections(self, x0, lo, hi, leaf_cost):
        """Return x̄ projected onto the boxes of the reachable leaves, the cheapest first.

        At most ``_PROJECTIONS`` values in all.
        """
        D = x0.shape[0]
        order = np.argsort(leaf_cost, kind="stable")
        order = order[np.isfinite(leaf_cost[order])][: max(1, _PROJECTIONS // D)]
        row = np.full(self.leaf_ids.size, -1, dtype=np.int64)
        row[order] = np.arange(order.size)
        e = np.flatnonzero(row[self.b_leaf] >= 0)
        f = self.b_feat[e]
        P = np.repeat(x0[None], order.size, axis=0)
        P[row[self.b_leaf[e]], f] = np.clip(
            x0[f], np.maximum(self.b_lo[e], lo[f]), np.minimum(self.b_hi[e], hi[f])
        )
        return P

    def solve(self, x0, t, lo, hi, q, confirm) -> Answer:
        """Answer one query: x̄ ``x0`` (D,), target index ``t``, box ``lo``/``hi`` (D,).

        ``confirm(x) -> bool``: the model's own verdict on a candidate (its ``predict``, and
        ``predict_proba`` for ``proba=``).
        """
        start = time.perf_counter()
        fo = self.forest
        cells = self._cells(x0, lo, hi, q)
        leaf_cost = self._leaf_costs(x0, lo, hi, q)
        inc = incumbent(fo, x0, t, q, cells, self._projections(x0, lo, hi, leaf_cost))
        if inc is not None and not confirm(inc):
            inc = None
        C = cost_of(inc, x0, q) if inc is not None else math.inf
        keep_to = C * (1.0 + 1e-9) + 1e-300 if inc is not None else math.inf
        keep = np.isfinite(leaf_cost) & (leaf_cost <= keep_to)
        if inc is not None and (
            C == 0.0 or np.bincount(self.leaf_tree[keep], minlength=fo.n_trees).min() == 0
        ):  # nothing is cheaper: x̄ itself, or some tree has no leaf cheaper than C
            return self._answer(inc, x0, q, 0, math.inf, 0, None)
        built = self._build(x0, t, q, cells, keep, keep_to, inc)
        if built is None:
            return self._infeasible(x0, q, 0, 0)
        h, ycols, yval, lcol = built
        runs = nodes = 0
        while True:
            left = math.inf
            if q.time_limit is not None:
                left = max(0.0, q.time_limit - (time.perf_counter() - start))
            h.setOptionValue("time_limit", left)
            h.run()
            runs += 1
            out = self._status(h)
            nodes += out["nodes"]
            if out["kind"] == "solution":
                y = yval.copy()
                y[ycols] = np.asarray(h.getSolution().col_value)[: ycols.size]
                x = self._decode(x0, y, lo, hi, cells)
                leaves = fo.leaves(x[None])[0]
                good = self._accepts(leaves, t, q) and (
                    (inc is not None and np.array_equal(x, inc)) or confirm(x)
                )
                if good:
                    return self._answer(x, x0, q, runs, out["bound"], nodes, out)
                if lcol[self.leafpos[leaves]].min() < 0:  # pragma: no cover - tolerance trouble
                    return self._fail(
                        x0, Status.NUMERIC, "numerical failure: the program's answer is not in "
                        "the cell it chose", runs, out["bound"], nodes, q,
                    )  # fmt: skip
                if out["limit"] or runs > MAX_CUTS:
                    if inc is not None:
                        return self._answer(inc, x0, q, runs, out["bound"], nodes, out)
                    why = "the time limit" if out["limit"] else f"{MAX_CUTS} cuts"
                    return self._fail(
                        x0, Status.MAXITER, f"{why} reached before an answer the model confirms "
                        "(each candidate lay within rounding of a tie)", runs, out["bound"],
                        nodes, q,
                    )  # fmt: skip
                self._cut(h, leaves, lcol, t, q)
                continue
            if inc is not None:  # nothing cheaper than the incumbent (or HiGHS stopped)
                return self._answer(inc, x0, q, runs, out["bound"], nodes, out)
            if out["kind"] == "infeasible":
                return self._infeasible(x0, q, runs, nodes)
            if out["limit"]:
                return self._fail(
                    x0, Status.MAXITER, "time limit reached before any answer was found "
                    f"(HiGHS: {out['text']})", runs, out["bound"], nodes, q,
                )  # fmt: skip
            return self._fail(
                x0, Status.SOLVER_FAILED, f"the MILP solver failed (HiGHS: {out['text']})",
                runs, out["bound"], nodes, q,
            )  # fmt: skip

    # ------------------------------------------------------------------ the program
    def _build(self, x0, t, q, cells, keep, keep_to, inc):
        """Build the pruned program in this thread's HiGHS; None if it has no column to solve."""
        import highspy
        from scipy import sparse

        fo = self.forest
        n_y = self.n_y
        # y: fixed outside the intervals the box allows and outside those of cost <= keep_to
        yval = np.full(n_y, np.nan)
        ycoef = np.zeros(n_y)
        offset = 0.0
        for f in range(fo.n_features):
            m = int(self.m[f])
            if m == 0:
                continue
            c = cells.costs[f]
            ka, kb = cells.ranges[f]
            ok = np.flatnonzero(c[ka : kb + 1] <= keep_to) + ka
            ka2, kb2 = (int(ok[0]), int(ok[-1])) if ok.size else (ka, ka)
            s = int(self.yoff[f])
            yval[s : s + ka2] = 0.0  # x_f > b_j for j <= ka2
            yval[s + kb2 : s + m] = 1.0  # x_f <= b_j for j > kb2
            ycoef[s : s + m] = c[:-1] - c[1:]
            offset += float(c[-1])
        fixed = ~np.isnan(yval)
        offset += float(ycoef[fixed] @ yval[fixed])
        ycols = np.flatnonzero(~fixed)
        ycol = np.full(n_y, -1, dtype=np.int64)
        ycol[ycols] = np.arange(ycols.size)
        kl = np.flatnonzero(keep)
        nf, nk = ycols.size, kl.size
        lcol = np.full(self.leaf_ids.size, -1, dtype=np.int64)
        lcol[kl] = nf + np.arange(nk)
        rr, cc, vv, rlo, rhi = [], [], [], [], []
        nrow = 0

        def add(rows_, cols_, vals_, lo_, hi_, count):
            nonlocal nrow
            rr.append(np.asarray(rows_, dtype=np.int64) + nrow)
            cc.append(np.asarray(cols_, dtype=np.int64))
            vv.append(np.asarray(vals_, dtype=np.float64))
            rlo.append(np.broadcast_to(np.asarray(lo_, dtype=np.float64), (count,)))
            rhi.append(np.broadcast_to(np.asarray(hi_, dtype=np.float64), (count,)))
            nrow += count

        # monotone y: y_j − y_{j+1} <= 0 where both are free (consecutive within a feature)
        pair = np.flatnonzero(~fixed[:-1] & ~fixed[1:]) if n_y > 1 else np.zeros(0, np.int64)
        same = np.searchsorted(self.yoff, pair, side="right") == np.searchsorted(
            self.yoff, pair + 1, side="right"
        )
        pair = pair[same]
        k = pair.size
        add(np.repeat(np.arange(k), 2), np.column_stack([ycol[pair], ycol[pair + 1]]).ravel(),
            np.tile([1.0, -1.0], k), -np.inf, 0.0, k)  # fmt: skip
        # one leaf per tree (a tree without a kept leaf: nothing cheaper than the incumbent)
        trees = self.leaf_tree[kl]
        if np.bincount(trees, minlength=fo.n_trees).min() == 0:
            return None
        add(trees, lcol[kl], np.ones(nk), 1.0, 1.0, fo.n_trees)
        # links: Σ_L λ − y <= 0 and Σ_R λ + y <= 1 (a fixed y moves to the bound)
        e = np.flatnonzero(keep[self.lk_leaf])
        uk, inv = np.unique(self.lk_row[e], return_inverse=True)
        g, side = self.row_y[uk], self.row_side[uk]
        v = yval[g]
        free = np.isnan(v)
        bound = np.where(side == 0, v, 1.0 - v)  # the bound where y is fixed
        need = free | (bound < 1.0)  # a fixed bound of 1 is implied by the tree row
        rowid = np.cumsum(need) - 1
        sel = need[inv]
        nr = int(need.sum())
        fr = np.flatnonzero(free)
        rows_ = np.concatenate([rowid[inv[sel]], rowid[fr]])
        cols_ = np.concatenate([lcol[self.lk_leaf[e[sel]]], ycol[g[fr]]])
        vals_ = np.concatenate([np.ones(int(sel.sum())), np.where(side[fr] == 0, -1.0, 1.0)])
        add(rows_, cols_, vals_, -np.inf, np.where(free, np.where(side == 0, 0.0, 1.0),
            bound)[need], nr)  # fmt: skip
        # the target (and τ): a·(base + Σ V λ) >= bound, over the kept leaves
        Vk = self.V[kl]
        forms = []
        for a, strict in fo.decision.forms(t):
            if fo.unit > 0:
                margin = 0.5 * fo.unit if strict else 0.0
            else:
                margin = -fo.delta
            forms.append((a, margin))
        if q.proba is not None:
            slack = fo.delta + fo.link.slack(q.proba) * max(1.0, fo.divisor)
            necessary = fo.link.forms(t, q.proba, fo.divisor, fo.base.size)
            forms += [(a, r - slack) for a, r in necessary]
        for a, r in forms:
            coef = Vk @ a
            nz = np.flatnonzero(coef)
            add(np.zeros(nz.size), nf + nz, coef[nz], r - float(a @ fo.base), np.inf, 1)
        if q.max_changes is not None:  # Σ_f changed_f <= m, changed_f = 1 − y[k̄] + y[k̄ − 1]
            cols_, vals_, const = [], [], 0.0
            for f in range(fo.n_features):
                mf = int(self.m[f])
                if mf == 0:
                    continue
                k0 = int(np.searchsorted(self.B[f], x0[f], side="left"))
                s = int(self.yoff[f])
                const += 1.0
                for j, sign in ((k0, -1.0), (k0 - 1, 1.0)):
                    if j < 0:
                        continue
                    val = 1.0 if j >= mf else yval[s + j]
                    if np.isnan(val):
                        cols_.append(ycol[s + j])
                        vals_.append(sign)
                    else:
                        const += sign * val
            add(np.zeros(len(cols_)), cols_, vals_, -np.inf, q.max_changes - const, 1)
        ncol = nf + nk
        A = sparse.csr_array(
            (np.concatenate(vv), (np.concatenate(rr), np.concatenate(cc))), shape=(nrow, ncol)
        )
        A.sum_duplicates()
        lp = highspy.HighsLp()
        lp.num_col_ = ncol
        lp.num_row_ = nrow
        lp.col_cost_ = np.concatenate([ycoef[ycols], np.zeros(nk)])
        lp.col_lower_ = np.zeros(ncol)
        lp.col_upper_ = np.ones(ncol)
        lp.offset_ = offset
        lp.row_lower_ = np.concatenate(rlo)
        lp.row_upper_ = np.concatenate(rhi)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = A.indptr.astype(np.int32)
        lp.a_matrix_.index_ = A.indices.astype(np.int32)
        lp.a_matrix_.value_ = A.data.astype(np.float64)
        lp.integrality_ = [highspy.HighsVarType.kInteger] * nf + [
            highspy.HighsVarType.kContinuous
        ] * nk
        h = _highs()
        h.clearSolver()
        h.passModel(lp)
        if inc is not None:  # the incumbent as HiGHS's first solution
            col = np.zeros(ncol)
            col[:nf] = (inc[self._feature_of(ycols)] <= self._b_of(ycols)).astype(np.float64)
            col[lcol[self.leafpos[self.forest.leaves(inc[None])[0]]]] = 1.0
            start = highspy.HighsSolution()  # (the form every highspy >= 1.7 takes)
            start.col_value = col.tolist()
            h.setSolution(start)
        return h, ycols, yval, lcol

    def _feature_of(self, ycols):
        return np.searchsorted(self.yoff, ycols, side="right") - 1

    def _b_of(self, ycols):
        f = self._feature_of(ycols)
        return np.array([self.B[fi][j - self.yoff[fi]] for fi, j in zip(f, ycols, strict=True)])

    def _status(self, h):
        """HiGHS's verdict: kind ("solution", "infeasible", "none"), limit, gap, bound, nodes."""
        import highspy

        st = h.getModelStatus()
        info = h.getInfo()
        S = highspy.HighsModelStatus
        limit = st in (S.kTimeLimit, S.kSolutionLimit, S.kIterationLimit, S.kInterrupt)
        have = int(info.primal_solution_status) == 2  # kSolutionStatusFeasible
        if st == S.kOptimal or (limit and have):
            kind = "solution"
        elif st in (S.kInfeasible, S.kUnboundedOrInfeasible):
            kind = "infeasible"
        else:
            kind = "none"
        return {
            "kind": kind,
            "limit": limit,
            "gap": float(info.mip_gap) if have and limit else 0.0,
            "bound": float(info.mip_dual_bound),
            "nodes": int(info.mip_node_count),
            "text": h.modelStatusToString(st),
        }

    def _decode(self, x0, y, lo, hi, cells):
        """Return the point of the chosen cell (within the box) closest to x̄."""
        x = x0.copy()
        for f in range(self.forest.n_features):
            m = int(self.m[f])
            if m == 0:
                continue
            s = self.yoff[f]
            k = m - int(np.count_nonzero(y[s : s + m] > 0.5))
            ka, kb = cells.ranges[f]
            x[f] = cells.points[f][min(max(k, ka), kb)]
        return x

    def _accepts(self, leaves, t, q):
        """Tell whether the library's arithmetic puts the leaves in the target (and meets τ)."""
        fo = self.forest
        S = fo.scores(leaves[None])
        if fo.decision.predict(S)[0] != t:
            return False
        return q.proba is None or fo.link.proba(S)[0, t] >= q.proba

    def _cut(self, h, leaves, lcol, t, q):
        """Cut the candidate's leaf combination off (and a tangent of a convex τ constraint)."""
        fo = self.forest
        cols = lcol[self.leafpos[leaves]].astype(np.int32)
        h.addRow(-np.inf, float(fo.n_trees - 1), cols.size, cols, np.ones(cols.size))
        if q.proba is not None:
            tangent = fo.link.cut(t, q.proba, fo.sums(leaves[None])[0])
            if tangent is not None:
                a, r = tangent
                kl = np.flatnonzero(lcol >= 0)
                v = self.V[kl] @ a
                nz = np.flatnonzero(v)
                slack = fo.delta + fo.link.slack(q.proba)
                h.addRow(
                    r - float(a @ fo.base) - slack,
                    np.inf,
                    nz.size,
                    lcol[kl[nz]].astype(np.int32),
                    v[nz],
                )

    # ------------------------------------------------------------------ answers
    def _bound(self, bound, q):
        """Return a dual bound as a distance (the root for Euclidean, whose square is minimised)."""
        if not math.isfinite(bound):
            return 0.0
        return math.sqrt(max(bound, 0.0)) if q.metric == "euclidean" else max(bound, 0.0)

    def _answer(self, x, x0, q, runs, bound, nodes, out):
        """Return a success: proven optimal unless HiGHS stopped early (``out``: its verdict)."""
        dist = float(finish(coord_cost(x - x0, q.w, q.metric).sum(), q.metric))
        if out is None or (out["kind"] != "none" and not out["limit"]):
            return Answer(x, dist, True, int(Status.OK), "milp: converged", runs, 0.0, dist, nodes)
        b = min(self._bound(bound, q), dist)
        gap = (dist - b) / dist if dist > 0 else 0.0
        why = "time limit reached" if out["limit"] else "the MILP solver stopped"
        return Answer(
            x, dist, True, int(Status.MAXITER),
            f"{why} (HiGHS: {out['text']}): the answer is classified as the target but may not "
            f"be the closest (relative gap {gap:.3g})", runs, gap, b, nodes,
        )  # fmt: skip

    def _fail(self, x0, code, msg, runs, bound, nodes, q):
        return Answer(
            x0.copy(), math.inf, False, int(code), msg, runs, math.inf, self._bound(bound, q), nodes
        )

    def _infeasible(self, x0, q, runs, nodes):
        if q.constrained:
            return self._fail(
                x0, Status.INFEASIBLE, "infeasible: no input within the bounds, frozen features, "
                "max_changes (and proba) is classified as the target", runs, math.inf, nodes, q,
            )  # fmt: skip
        return self._fail(
            x0, Status.UNREACHABLE,
            "target unreachable: the model classifies no input as the target", runs, math.inf,
            nodes, q,
        )  # fmt: skip
