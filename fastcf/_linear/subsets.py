"""Few changed features and several alternatives, exactly: branch-and-bound and Lawler's scheme.

Both work on one query row through one operation, the continuous solver with a set of features
frozen (:class:`RowProblem`); they never look inside it, so they serve every form (``lam=``,
``proba=``, ``region=True``), both metrics and both model families alike.

``max_changes=m`` (:func:`best_subset`): minimise the problem's objective (the distance for
``proba=``/``region=True``, problem (2)'s energy for ``lam=``) subject to at most m changed
features. Freezing features only shrinks the feasible set, so the optimum with a set Z frozen is
a lower bound for every answer that leaves Z unchanged. A node is (Z, I): Z frozen, I committed
to the answer's support. Its bound is the continuous optimum with Z frozen (I does not constrain
the relaxation); if that optimum changes ≤ m features it is the node's answer. Otherwise branch on
the changed feature j ∉ I that moved most (cost-weighted): "j frozen" (Z ∪ {j}, a new relaxation)
and "j changes" (I ∪ {j}, the same relaxation; when |I ∪ {j}| = m the node is a leaf, solved with
everything outside I ∪ {j} frozen). Best-first on the bound (deeper first on ties), pruned
against the best answer found; a rounding heuristic at each new relaxation (the |I| committed
features plus the m − |I| largest moves) finds good answers early. When the heap's least bound
reaches the best answer, that answer is optimal: the certificate is the exhausted tree.

Binary models with the Euclidean metric and no box need no search: the problem depends on the
support S only through α(S) = Σ_{i∈S} w_i²/W_i (the 1-D reduction of paper 000, §4: the cost
of moving the logit by t is t/√α(S)), and every objective decreases in α, so the optimum keeps
the m features of largest w_i²/W_i free (:func:`top_m_free`, which compares |w_i| / cost_i
exactly).

Alternatives: Lawler's k-best scheme, :func:`fastcf._lawler.lawler` (shared with the tabular
and tree families).
"""

from __future__ import annotations

import heapq
import itertools
import math
import time

import numpy as np

from .._status import Status

__all__ = ["RowProblem", "best_subset", "top_m_free"]

_HARD = (int(Status.UNREACHABLE), int(Status.INFEASIBLE))  # nothing with more frozen helps
#: a node's solve that failed: its x̄ (or a partial step) is no answer and its value no bound
#: (NOT_TARGET, BELOW_DECISION, MAXITER answers are answers of their form: ``lam=``'s optimum
#: need not be the target)
_FAILED = (int(Status.NUMERIC), int(Status.SOLVER_FAILED), int(Status.PENDING))


class RowProblem:
    """One query row and its options: the continuous solve with extra features frozen.

    Parameters
    ----------
    solve : callable
        ``solve(fmask) -> Solution`` of the one row with the features of the bool mask ``fmask``
        (shape (D,)) frozen: the search's node solve (it may be lean: the answer and its cost).
    x0 : ndarray of shape (D,)
    objective : callable
        ``objective(sol) -> float``: the value minimised (``inf`` when the node is infeasible).
    cost : ndarray of shape (D,)
        Per-feature cost of a unit change (to rank the moves).
    full : callable, optional
        ``full(fmask) -> Solution``: the answer a search returns, solved in full (``solve`` by
        default).
    """

    def __init__(self, solve, x0, objective, cost, full=None):
        self._solve = solve
        self.full = solve if full is None else full
        self.x0 = x0
        self._objective = objective
        self.cost = cost
        self._memo = {}
        self.solves = 0
        self.failures = 0  # node solves that failed (numerically, at a limit): not proven empty

    def solve(self, fmask):
        """Return (sol, value) of the row with ``fmask`` frozen (memoised)."""
        key = fmask.tobytes()
        hit = self._memo.get(key)
        if hit is None:
            sol = self._solve(fmask)
            self.solves += 1
            st = int(sol.status[0])
            bad = st in _HARD or not np.isfinite(sol.x[0]).all()
            if st in _FAILED and not bad:  # (failed, not proven empty: no answer, no bound)
                self.failures += 1
                bad = True
            hit = (sol, math.inf if bad else float(self._objective(sol)))
            self._memo[key] = hit
        return hit

    def objective(self, sol):
        """Return the value minimised at the one-row answer ``sol`` (the cost it is ranked by)."""
        return float(self._objective(sol))

    def changed(self, sol):
        """Return the bool mask of the features the answer changed (any bit)."""
        return sol.x[0] != self.x0

    def moves(self, sol):
        """Return the cost-weighted size of each feature's change."""
        return np.abs(sol.x[0] - self.x0) * self.cost


def top_m_free(w, cost, free, m):
    """Return the frozen mask that keeps free the m free features of largest w_i²/W_i.

    ``w``: the binary model's weights; ``cost``: the per-feature costs (W = cost², None: ones).
    Compared as |w_i| / cost_i, exactly and without forming it: each is split into its
    mantissa and power of two (``np.frexp``), so the ratio's exponent is an integer sum and its
    mantissa one correctly rounded division in [0.5, 2) — equal ratios tie (the first feature
    wins), as the squares did where they did not underflow. The squares lost the order below
    1e-154: w = (5.9e-197, 5.9e-197) with costs (2, 1) made both 0, and the feature of cost 2
    was kept free, an answer twice as far as the other (soak 2026-11-29).
    """
    idx = np.flatnonzero(free)
    mw, ew = np.frexp(np.abs(w[idx]))
    if cost is None:
        mq, eq = np.full(idx.size, 0.5), np.ones(idx.size, dtype=np.int64)
    else:
        mq, eq = np.frexp(cost[idx])
    mr, er = np.frexp(mw / mq)
    exp = ew.astype(np.int64) - eq + er
    exp[mw == 0.0] = -(2**40)  # a zero weight moves nothing: last (negated below: no int64.min)
    keep = idx[np.lexsort((-mr, -exp))[:m]]  # by exponent, then mantissa (stable: first wins)
    fmask = np.ones(free.shape[0], dtype=bool)
    fmask[keep] = False
    return fmask


def _settled(value, best):
    """Whether a bound ``value`` cannot improve on ``best`` (ties within rounding)."""
    return value >= best - 1e-12 * abs(best)


def best_subset(prob, fmask0, m, max_nodes=20_000, deadline=math.inf):
    """Return (sol, value, info): the optimum of one row with at most ``m`` changed features.

    Parameters
    ----------
    prob : RowProblem
    fmask0 : ndarray of bool, shape (D,)
        The user's frozen features.
    m : int
        The largest number of changed features.
    max_nodes : int, default=20000
        Branch-and-bound nodes before giving up (the best answer found is returned with
        ``info["proven"] = False``).
    deadline : float, default=inf
        ``time.perf_counter()`` past which the search stops as at ``max_nodes``.

    Returns
    -------
    value : float
        The objective of the best answer found (``inf``: no answer with ≤ m changes).
    mask : ndarray of bool, shape (D,)
        Every feature but the answer's support frozen (``fmask0`` when there is no answer):
        ``prob.full(mask)`` is the answer. (Not the node's own mask: solved in full, the node
        could move other free features by the rounding of another solver — an interior
        point's 1e-7 — past ``m`` changes; the optimum restricted to its support is the same.)
    info : dict
        ``nodes`` (branch-and-bound nodes), ``solves`` (continuous solves) and ``proven``
        (the tree was exhausted: the answer is optimal, or none exists).
    """
    root, rval = prob.solve(fmask0)
    info = {"nodes": 1, "solves": prob.solves, "proven": not prob.failures}
    if not math.isfinite(rval):
        if prob.failures:
            info["failed_nodes"] = prob.failures
        return rval, fmask0, info
    if np.count_nonzero(prob.changed(root)) <= m:
        return rval, fmask0 | ~prob.changed(root), info  # (its support: see below)
    best, best_val = None, math.inf  # best: the frozen mask of the best answer

    def consider(fmask):
        nonlocal best, best_val
        sol, val = prob.solve(fmask)
        if val < best_val and np.count_nonzero(prob.changed(sol)) <= m:
            best, best_val = fmask | ~prob.changed(sol), val

    def rounding(sol, Z, inset):
        # the committed features plus the largest other moves: an answer with ≤ m changes
        mv = prob.moves(sol)
        mv[inset | Z] = -1.0
        keep = inset.copy()
        extra = m - int(inset.sum())
        if extra > 0:
            order = np.argsort(-mv, kind="stable")[:extra]
            keep[order[mv[order] > 0]] = True
        consider(fmask0 | ~keep)

    D = fmask0.shape[0]
    tie = itertools.count()
    empty = np.zeros(D, dtype=bool)
    rounding(root, fmask0, empty)
    heap = [(rval, 0, next(tie), fmask0, empty, root)]
    nodes = 1
    while heap:
        bound, _, _, Z, inset, sol = heapq.heappop(heap)
        if _settled(bound, best_val):
            continue
        S = prob.changed(sol) & ~Z
        if np.count_nonzero(S) <= m:  # the relaxation's answer is feasible: the node's optimum
            if bound < best_val:
                best, best_val = Z | ~S, bound
            continue
        nodes += 1
        if nodes > max_nodes or time.perf_counter() > deadline:
            info["proven"] = False
            break
        mv = prob.moves(sol)
        mv[~S | inset] = -1.0
        j = int(np.argmax(mv))
        # "j changes": the same relaxation, or a leaf once m features are committed
        in2 = inset.copy()
        in2[j] = True
        if int(in2.sum()) == m:
            consider(fmask0 | ~in2)
        else:
            heapq.heappush(heap, (bound, -int(in2.sum()), next(tie), Z, in2, sol))
        # "j frozen": a new relaxation
        Z2 = Z.copy()
        Z2[j] = True
        sol2, val2 = prob.solve(Z2)
        if not _settled(val2, best_val):
            rounding(sol2, Z2, inset)
            heapq.heappush(heap, (val2, -int(inset.sum()), next(tie), Z2, inset, sol2))
    info["nodes"] = nodes
    info["solves"] = prob.solves
    if prob.failures:  # a node that failed is no proof: the tree is not exhausted
        info["proven"] = False
        info["failed_nodes"] = prob.failures
    if best is None:
        return math.inf, fmask0, info
    return best_val, best, info
