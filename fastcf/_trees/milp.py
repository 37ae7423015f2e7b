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
seconds on it. A quick valid answer of cost C (:mod:`fastcf._trees.incumbent`, confirmed by
the model) bounds the optimum, and every term of the cost is >= 0: the program only needs the
cells of cost <= ρ = C (1 − 1e-10). The reductions of :mod:`fastcf._trees.reduce` (interval and
leaf costs, the target's margins, the hulls of the alive leaves) run to a fixed point; if they
leave nothing, C is proven optimal without a program. Otherwise a branch and bound over the
interval ranges, bounded by the same reductions (:mod:`fastcf._trees.branch`), searches the
cells of cost <= ρ (lowering ρ at each cheaper answer) and usually finishes the query: its
end proves the best answer optimal (for XGBoost, LightGBM and extra trees the search is
skipped: the program alone answers sooner, see :mod:`fastcf._trees.branch`). Only a query it
leaves after its node budget gets the program, built over what is left
(:mod:`fastcf._trees.build`: boundaries no alive leaf ends at are merged away, trees whose
alive leaves agree are left out as constants) with ρ as HiGHS's objective bound, so HiGHS
either finds a cheaper cell or proves there is none.

Decoding: the answer's x_f is the point of its interval (within the query's box) closest to
x̄_f; every such point is a representable float64 on the correct side of every split. The
program is solved by HiGHS (``highspy``) to a zero gap; ``time_limit`` stops it with the best
answer found so far (``info["gap"]``, ``info["bound"]``).
"""

from __future__ import annotations

import math
import time
from functools import partial
from typing import NamedTuple

import numpy as np

from .._status import Status
from .._validation import deadline as time_deadline
from .branch import BUDGET, branch
from .build import build, decode
from .incumbent import Search, cost_of
from .query import coord_cost, finish
from .reduce import Costs, Reduced, leaf_forms, lower_bound, reduce
from .structure import Structure
from .tighten import tighten

__all__ = ["Program", "Answer"]

#: programs solved again after a cut before a query gives up (near-ties are rare)
MAX_CUTS = 200
#: leaf projections tried for the incumbent
_PROJECTIONS = 256
#: the cutoff below the incumbent's cost: a cell must beat it by this relative amount
CUTOFF = 1e-10


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
    confirmed: bool = True  # a success the model's predict confirmed (False: for the judge)


class Program(Structure):
    """A forest's program: :class:`~fastcf._trees.structure.Structure` and one query's solve."""

    tighten = True  # reduced-cost fixing before the program (:mod:`fastcf._trees.tighten`)
    # nodes of the branch and bound before the program (:mod:`.branch`; 0: none; None:
    # branch.BUDGET)
    budget = None

    # ------------------------------------------------------------------ one query
    def _costs(self, x0, lo, hi, q):
        """Return the query's :class:`~fastcf._trees.reduce.Costs` and every interval's point."""
        D = self.forest.n_features
        R = np.concatenate(self.R)
        U = np.concatenate(self.U)
        feat = np.repeat(np.arange(D), self.m + 1)
        points = np.clip(x0[feat], np.maximum(R, lo[feat]), np.minimum(U, hi[feat]))
        flat = coord_cost(points - x0[feat], q.w[feat], q.metric)
        c = Costs(flat, self.intervals(x0), self.intervals(lo), self.intervals(hi))
        return c, points

    def _forms(self, t, q):
        """Return the target's linear forms ``[(a, r)]``: ``a·Z >= r`` on the sums Z."""
        fo = self.forest
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
        return forms

    def _leaf_forms(self, forms):
        """Return the forms per leaf (:class:`~fastcf._trees.reduce.LeafForms`)."""
        return leaf_forms(self.V, self.forest.base, forms, self.forest.n_trees)

    def _leaf_costs(self, x0, lo, hi, q):
        """Return the cheapest cost of reaching each leaf within the query's box (inf: none)."""
        f = self.b_feat
        a = np.maximum(self.b_lo, lo[f])
        b = np.minimum(self.b_hi, hi[f])
        empty = a > b
        c = coord_cost(np.clip(x0[f], a, b) - x0[f], q.w[f], q.metric)
        n = self.leaf_ids.size
        # (float: NumPy's bincount of no entries is int64 even with weights, as in a forest
        # without a split)
        cost = np.bincount(self.b_leaf, weights=c, minlength=n).astype(np.float64)
        cost[np.bincount(self.b_leaf[empty], minlength=n) > 0] = np.inf
        return cost

    def _projections(self, x0, lo, hi, leaf_cost, lforms):
        """Return x̄ projected onto the boxes of the reachable leaves that favour the target.

        The cheapest first, at most ``_PROJECTIONS`` leaves (a leaf favours the target when
        every form of the target is positive on its own terms).
        """
        favour = (lforms.coef > 0).all(axis=1)
        cost = np.where(favour, leaf_cost, np.inf)
        order = np.argsort(cost, kind="stable")
        order = order[np.isfinite(cost[order])][:_PROJECTIONS]
        row = np.full(self.leaf_ids.size, -1, dtype=np.int64)
        row[order] = np.arange(order.size)
        e = np.flatnonzero(row[self.b_leaf] >= 0)
        f = self.b_feat[e]
        P = np.repeat(np.clip(x0, lo, hi)[None], order.size, axis=0)  # (x̄ may lie outside)
        P[row[self.b_leaf[e]], f] = np.clip(
            x0[f], np.maximum(self.b_lo[e], lo[f]), np.minimum(self.b_hi[e], hi[f])
        )
        return P

    def start(self, x0, t, lo, hi, q, confirm, deadline=math.inf):
        """Return (inc, C, c, points, lforms): the incumbent (or None) and the query's data.

        ``C``: the incumbent's cost; ``c``: the query's :class:`~fastcf._trees.reduce.Costs`;
        ``points``: every interval's point; ``lforms``: the per-leaf forms. ``confirm``: the
        model's verdict on the incumbent (None: not asked here). ``deadline``: the query's
        time limit (``time.perf_counter()``), past which the search skips its beam.
        """
        c, points = self._costs(x0, lo, hi, q)
        lforms = self._leaf_forms(self._forms(t, q))
        leaf_cost = self._leaf_costs(x0, lo, hi, q)
        P = self._projections(x0, lo, hi, leaf_cost, lforms)
        inc = Search(self, x0, t, q, c, points).run(
            P, lambda rho: reduce(self, c, rho, lforms, margins=False), deadline
        )
        if inc is not None and confirm is not None and not confirm(inc):
            inc = None
        C = cost_of(inc, x0, q) if inc is not None else math.inf
        return inc, C, c, points, lforms

    def quick(self, x0, t, lo, hi, q, confirm, steps=8, start=None) -> Answer:
        """Answer one query with the incumbent alone and a certified lower bound (no program).

        ``success`` when there is an incumbent (confirmed by ``confirm``); ``bound`` is the
        bisection bound of :func:`~fastcf._trees.reduce.lower_bound`; status 0 when it proves
        the incumbent optimal, else 1 (not certified optimal). ``start``: as :meth:`solve`'s
        (a ``time_limit`` past which the search skips its beam).
        """
        begin = time.perf_counter() if start is None else start
        deadline = time_deadline(q.time_limit, begin)
        inc, C, c, points, lforms = self.start(x0, t, lo, hi, q, confirm, deadline)
        if inc is not None and C == 0.0:
            return self._answer(inc, x0, q, 0, 0.0, 0, None)
        lb = lower_bound(self, c, C, lforms, steps)
        if inc is None:
            if math.isinf(lb):
                return self._infeasible(x0, q, 0, 0)
            return self._fail(
                x0, Status.MAXITER, "no answer found by the quick search (exact=False); "
                "exact=True solves the program", 0, lb, 0, q,
            )  # fmt: skip
        if lb >= C:
            return self._answer(inc, x0, q, 0, lb, 0, None)
        return self._answer(inc, x0, q, 0, lb, 0, {"kind": "quick", "limit": False})

    def solve(self, x0, t, lo, hi, q, confirm, plain=False, start=None) -> Answer:
        """Answer one query: x̄ ``x0`` (D,), target index ``t``, box ``lo``/``hi`` (D,).

        ``confirm(x) -> bool``: the model's own verdict on a candidate (its ``predict``, and
        ``predict_proba`` for ``proba=``). ``plain``: the full program, without incumbent,
        reductions or cutoff (the baseline of the benchmarks). ``q.trust``: prune with the
        incumbent before the model confirms it (the library's arithmetic, checked against the
        model when the explainer was built, already accepts it); it is confirmed when it is
        the answer, and if the model refused it the answer says so (``confirmed=False``): the
        stage's judge refuses it and the family's re-aim solves the query again with
        ``trust=False`` (:class:`fastcf.trees._Distrust`). ``start``: when the query's
        ``q.time_limit`` began (``time.perf_counter()``; default now: the call's first query
        holds the construction of the program in its limit, :func:`fastcf._trees.answer.ensemble`).
        """
        begin = time.perf_counter() if start is None else start
        if plain:
            c, points = self._costs(x0, lo, hi, q)
            lforms = self._leaf_forms(self._forms(t, q))
            inc, C, rho = None, math.inf, math.inf
            f = self.b_feat  # every leaf whose box meets the query's box
            miss = np.maximum(self.e_ka, c.ka[f]) > np.minimum(self.e_kb, c.kb[f])
            alive = self.leaf_ok.copy()
            alive[self.b_leaf[miss]] = False
            red = Reduced(c.ka, c.kb, alive, np.zeros(self.forest.n_trees, bool), 0.0, False)
        else:
            deadline = time_deadline(q.time_limit, begin)
            inc, C, c, points, lforms = self.start(
                x0, t, lo, hi, q, None if q.trust else confirm, deadline
            )
            rho = C * (1.0 - CUTOFF) if inc is not None else math.inf
            red = None if inc is not None and C == 0.0 else reduce(self, c, rho, lforms)

        def incumbent_answer(runs, bound, nodes, out):
            ans = self._answer(inc, x0, q, runs, bound, nodes, out)
            if q.trust and not confirm(inc):  # (the parsed copy is checked: rare)
                return ans._replace(confirmed=False)
            return ans

        if red is None:  # x̄ itself
            return incumbent_answer(0, 0.0, 0, None)

        def out_of_time(nodes):
            # the answer of a query whose time limit passed before the program: the incumbent
            # (not certified), or a failure; None while time is left
            if q.time_limit is None or time.perf_counter() - begin < q.time_limit:
                return None
            if inc is not None:
                said = "the quick search's answer; the program was not started"
                out = {"kind": "none", "limit": True, "own": True, "text": said}
                return incumbent_answer(0, 0.0, nodes, out)
            return self._fail(
                x0, Status.MAXITER, "time limit reached before any answer was found (the quick "
                "search found none; the program was not started)", 0, 0.0, nodes, q,
            )  # fmt: skip

        # a time limit spent by the quick search: its answer, not a program of no time left
        # (a 300-tree forest of depth 10 with time_limit=0.5 took 0.75-2.3 s: the program was
        # built and handed to HiGHS after the limit had passed)
        late = None if plain or red.empty else out_of_time(0)  # (empty: proven optimal)
        if late is not None:
            return late
        searched = 0  # nodes of the branch and bound
        budget = BUDGET if self.budget is None else self.budget
        if not plain and not red.empty and budget:
            accept = partial(self._accepts_x, t=t, q=q)
            br = branch(self, c, points, x0, rho, lforms, accept, q, budget, deadline)
            searched = br.nodes
            # (trust: a new answer is confirmed with the incumbent's, at the end)
            ok = br.x is None or q.trust or confirm(br.x)
            if br.x is not None and ok:
                inc, C = br.x, br.cost
            if br.done and ok and inc is not None:
                return incumbent_answer(0, C, br.nodes, None)
            if br.done and ok:
                return self._infeasible(x0, q, 0, br.nodes)
            if ok and inc is not None and C * (1.0 - CUTOFF) < rho:
                rho = C * (1.0 - CUTOFF)
                red = reduce(self, c, rho, lforms)
        late = None if plain or red.empty else out_of_time(searched)
        if late is not None:
            return late
        if not plain and not red.empty and self.tighten:
            left = (
                math.inf if q.time_limit is None else q.time_limit - (time.perf_counter() - begin)
            )
            red, proven = tighten(self, q, c, red, self._forms(t, q), lforms, rho, max(left, 0.0))
            red = red._replace(empty=red.empty or proven)
        if red.empty:  # nothing cheaper than the incumbent
            if inc is not None:
                return incumbent_answer(0, C, searched, None)
            return self._infeasible(x0, q, 0, searched)
        forms = self._forms(t, q)
        built = build(self, q, c, red, forms, rho, plain)
        h = built.h
        runs, nodes = 0, searched
        while True:
            left = math.inf
            if q.time_limit is not None:
                left = max(0.0, q.time_limit - (time.perf_counter() - begin))
            h.setOptionValue("time_limit", left)
            h.run()
            runs += 1
            out = self._status(h)
            nodes += out["nodes"]
            if out["kind"] == "solution":
                y = np.asarray(h.getSolution().col_value)[: built.col_g.size]
                x = decode(self, y, built, c, points)
                leaves = self.forest.leaves(x[None])[0]
                if inc is not None and cost_of(x, x0, q) >= C:
                    return incumbent_answer(runs, out["bound"], nodes, out)
                if self._accepts(leaves, t, q) and confirm(x):
                    return self._answer(x, x0, q, runs, out["bound"], nodes, out)
                cols = built.lcol[self.leafpos[leaves][built.kept]]
                if cols.size and cols.min() < 0:  # pragma: no cover - tolerance trouble
                    return self._fail(
                        x0, Status.NUMERIC, "numerical failure: the program's answer is not in "
                        "the cell it chose", runs, out["bound"], nodes, q,
                    )  # fmt: skip
                if out["limit"] or runs > MAX_CUTS:
                    if inc is not None:
                        return incumbent_answer(runs, out["bound"], nodes, out)
                    why = "the time limit" if out["limit"] else f"{MAX_CUTS} cuts"
                    return self._fail(
                        x0, Status.MAXITER, f"{why} reached before an answer the model confirms "
                        "(each candidate lay within rounding of a tie)", runs, out["bound"],
                        nodes, q,
                    )  # fmt: skip
                self._cut(h, leaves, built, t, q)
                continue
            if inc is not None:  # nothing cheaper than the incumbent (or HiGHS stopped)
                if out["kind"] == "infeasible":
                    return incumbent_answer(runs, C, nodes, None)
                return incumbent_answer(runs, out["bound"], nodes, out)
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
    def _status(self, h):
        """HiGHS's verdict: kind ("solution", "infeasible", "none"), limit, gap, bound, nodes."""
        import highspy

        st = h.getModelStatus()
        info = h.getInfo()
        S = highspy.HighsModelStatus
        limit = st in (S.kTimeLimit, S.kSolutionLimit, S.kIterationLimit, S.kInterrupt)
        have = int(info.primal_solution_status) == 2  # kSolutionStatusFeasible
        if st == S.kModelEmpty:
            # no column (the reductions left one cell, every tree constant in it): HiGHS solves
            # nothing, not even its rows' constant bounds (a form's or max_changes' row), so
            # they are checked here, to HiGHS's own feasibility tolerance; the cell (the empty
            # solution) is then the program's candidate, judged as any other
            lp = h.getLp()
            tol = h.getOptions().primal_feasibility_tolerance
            met = bool(np.all(np.asarray(lp.row_lower_) <= tol))
            met = met and bool(np.all(np.asarray(lp.row_upper_) >= -tol))
            kind = "solution" if met else "infeasible"
        elif (st == S.kOptimal or limit) and have:
            kind = "solution"
        elif st in (S.kInfeasible, S.kUnboundedOrInfeasible, S.kObjectiveBound):
            kind = "infeasible"  # (with an objective bound: nothing below it)
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

    def _accepts(self, leaves, t, q):
        """Tell whether the library's arithmetic puts the leaves in the target (and meets τ)."""
        fo = self.forest
        S = fo.scores(leaves[None])
        if fo.decision.predict(S)[0] != t:
            return False
        return q.proba is None or fo.link.proba(S)[0, t] >= q.proba

    def _accepts_x(self, x, t, q):
        """Tell whether the library's arithmetic puts the point x in the target (and τ)."""
        return self._accepts(self.forest.leaves(x[None])[0], t, q)

    def _cut(self, h, leaves, built, t, q):
        """Cut the candidate's leaf combination off (and a tangent of a convex τ constraint)."""
        fo = self.forest
        pos = self.leafpos[leaves]
        cols = built.lcol[pos[built.kept]].astype(np.int32)
        h.addRow(-np.inf, float(cols.size - 1), cols.size, cols, np.ones(cols.size))
        if q.proba is not None:
            tangent = fo.link.cut(t, q.proba, fo.sums(leaves[None])[0])
            if tangent is not None:
                a, r = tangent
                kl = np.flatnonzero(built.lcol >= 0)
                v = self.V[kl] @ a
                nz = np.flatnonzero(v)
                slack = fo.delta + fo.link.slack(q.proba)
                h.addRow(
                    r - float(a @ fo.base) - float(a @ built.const) - slack,
                    np.inf,
                    nz.size,
                    built.lcol[kl[nz]].astype(np.int32),
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
        if out is None or (out["kind"] not in ("none", "quick") and not out["limit"]):
            return Answer(x, dist, True, int(Status.OK), "milp: converged", runs, 0.0, dist, nodes)
        b = min(self._bound(bound, q), dist)
        gap = (dist - b) / dist if dist > 0 else 0.0
        if out["kind"] == "quick":
            return Answer(
                x, dist, True, int(Status.MAXITER),
                "exact=False: a quick answer classified as the target, not certified the "
                f"closest (relative gap to the bound {gap:.3g})", runs, gap, b, nodes,
            )  # fmt: skip
        why = "time limit reached" if out["limit"] else "the MILP solver stopped"
        said = out["text"] if out.get("own") else f"HiGHS: {out['text']}"
        return Answer(
            x, dist, True, int(Status.MAXITER),
            f"{why} ({said}): the answer is classified as the target but may not "
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
