"""Plausible counterfactuals of a tree model: the closest point of a cell that holds training data.

Cells. For each feature f, the sorted distinct split boundaries ``b_1 < … < b_m`` of the
ensemble (the parsed rule *left iff x <= b*, :mod:`fastcf._trees.forest`; only those inside
the library's domain cut it) divide the float64 line into the closed intervals
``I_0 = [lo, b_1]``, ``I_k = [nextafter(b_k), b_{k+1}]``, ``I_m = [nextafter(b_m), hi]``, as in
:mod:`fastcf._trees.milp`. A *cell* is one interval per feature, a box; every input of a cell
takes the same branch at every split, so it reaches the same leaf of every tree and the model
gives it the same scores, class and probabilities (the same terms, added in the same order).

``plausible=True`` asks for the closest input that lies in a cell holding at least one training
row (the region the model was fitted on) and that the model puts in the target class (and with
``p_target >= τ`` for ``proba=``). The training rows fix a finite set of such cells, and the
class and probabilities of each are those the model gives the training row itself (one call of
its own ``predict`` / ``predict_proba`` at :meth:`fastcf.TreeExplainer.fit_data`).

The answer. Every metric of :mod:`fastcf._trees.query` is separable, so over one box (a cell
∩ the query's box: bounds, the library's domain, x̄ itself on frozen features) the cheapest
point is the projection of x̄, ``p = clip(x̄, max(cell_lo, lo), min(cell_hi, hi))``, and it
changes exactly the features on which x̄ lies outside that box — the fewest any point of the box
changes, so ``max_changes=m`` keeps a cell iff its projection changes at most m features. The
answer is the cheapest projection over the cells of the target (an empty intersection is
skipped), exact by enumeration: ``O(C · D)`` per query for C distinct training cells, vectorised
over the cells (and over blocks of queries). A tie between cells goes to the first in the
order of :func:`numpy.unique` over the cells' interval indices (deterministic).

Each projection is a point of its cell (the box's ends are interval ends, representable float64
values on the correct side of every split), so it is classified as its cell is; the explainer
still confirms every success with the model's own ``predict`` (:meth:`BaseExplainer._verify`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._status import Status
from ..results import Solution
from .query import coord_cost, finish

__all__ = ["Cells", "fit_cells", "solve"]

#: values of the (rows, cells, features) block of one vectorised step
_BLOCK = 1_000_000


class Cells(NamedTuple):
    """The distinct cells of the training rows, their boxes and the model's verdict on them."""

    lo: np.ndarray  # (C, D) the cells' boxes
    hi: np.ndarray  # (C, D)
    cls: np.ndarray  # (C,) class index the model gives the cell
    proba: np.ndarray | None  # (C, K) its probabilities (None: the model has none)
    n_rows: int  # training rows they came from


def boundaries(forest):
    """Return, per feature, the sorted distinct split boundaries inside the domain."""
    lo, hi = forest.domain
    inner = ~forest.is_leaf
    out = []
    for f in range(forest.n_features):
        b = forest.boundary[inner & (forest.feature == f)]
        out.append(np.unique(b[(b >= lo) & (b < hi)]))
    return out


def fit_cells(forest, X, cls, proba=None):
    """Return the :class:`Cells` of the rows ``X`` (N, D), given the model's class of each row.

    ``cls`` (N,): the class index the model gives each row; ``proba`` (N, K) or None its
    probabilities. Rows of one cell share both (the model is constant on a cell).
    """
    lo, hi = forest.domain
    B = boundaries(forest)
    N, D = X.shape
    K = np.empty((N, D), dtype=np.int64)
    for f in range(D):
        K[:, f] = np.searchsorted(B[f], X[:, f], side="left")  # x <= b_k: interval k
    _, first = np.unique(K, axis=0, return_index=True)
    first = np.sort(first)  # (the order of the rows: deterministic, independent of the keys)
    Kc = K[first]
    clo = np.empty(Kc.shape)
    chi = np.empty(Kc.shape)
    for f in range(D):
        R = np.concatenate([[lo], np.nextafter(B[f], np.inf)])
        U = np.concatenate([B[f], [hi]])
        clo[:, f] = R[Kc[:, f]]
        chi[:, f] = U[Kc[:, f]]
    P = None if proba is None else np.ascontiguousarray(proba[first], dtype=np.float64)
    return Cells(clo, chi, np.asarray(cls, dtype=np.int64)[first], P, int(N))


def solve(cells, X, tidx, q):
    """Answer every query over the training cells; return their :class:`~fastcf.results.Solution`.

    ``q``: the :class:`~fastcf._trees.query.TreeQuery` (box ``lo``/``hi`` per row, metric,
    weights, ``max_changes``, ``proba``). ``status``: 0 (an answer), 2 (no training cell is in
    the target, or meets τ) or 3 (some are, but none within the box and ``max_changes``).
    """
    N, D = X.shape
    x = X.copy()
    dist = np.full(N, np.inf)
    status = np.zeros(N, dtype=np.int64)
    step = max(1, _BLOCK // max(1, cells.lo.size))
    for s in range(0, N, step):
        rows = np.arange(s, min(N, s + step))
        good = cells.cls[None, :] == tidx[rows, None]  # (n, C)
        if q.proba is not None:
            good &= cells.proba[:, tidx[rows]].T >= q.proba
        a = np.maximum(cells.lo[None], q.lo[rows, None, :])  # (n, C, D)
        b = np.minimum(cells.hi[None], q.hi[rows, None, :])
        fits = (a <= b).all(axis=2)
        x0 = X[rows, None, :]
        P = np.clip(x0, a, b)
        d = P - x0
        cost = coord_cost(d, q.w, q.metric).sum(axis=2)
        ok = good & fits
        if q.max_changes is not None:
            ok &= (d != 0.0).sum(axis=2) <= q.max_changes
        cost = np.where(ok, cost, np.inf)
        best = np.argmin(cost, axis=1)
        r = np.arange(rows.size)
        found = np.isfinite(cost[r, best])
        x[rows[found]] = P[r[found], best[found]]
        dist[rows] = np.where(found, finish(cost[r, best], q.metric), np.inf)
        status[rows] = np.where(
            found,
            int(Status.OK),
            np.where(good.any(axis=1), int(Status.INFEASIBLE), int(Status.UNREACHABLE)),
        )
    found = status == int(Status.OK)
    return Solution(
        x=x, proba=None, distance=dist, success=found, status=status,
        nit=np.zeros(N, dtype=np.int64), method="plausible",
        message=[_MESSAGES[int(c)] for c in status],
        info={"gap": np.where(found, 0.0, np.inf), "bound": np.where(found, dist, np.inf),
              "nodes": np.zeros(N, dtype=np.int64)},
    )  # fmt: skip


_MESSAGES = {
    int(Status.OK): "plausible: the closest point of a training cell in the target",
    int(Status.UNREACHABLE): (
        "plausible: no cell that holds training data is classified as the target (and meets "
        "proba); plausible=False searches every input"
    ),
    int(Status.INFEASIBLE): (
        "plausible: the cells that hold training data and are classified as the target lie "
        "outside the bounds, frozen features or max_changes"
    ),
}
