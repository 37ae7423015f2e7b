"""Plausible tree counterfactuals: the closest point of a model region that holds training data.

Regions. Every leaf l of a tree is reached by the inputs of a box, the conjunction of the splits
on its path (the parsed rule *left iff x <= b*, :mod:`fastcf._trees.forest`: going left caps
the feature at b, going right starts it at ``nextafter(b)``). A combination of one leaf per
tree is reached by the intersection of their boxes — again a box, possibly empty. These boxes
partition the input space, and the model is constant on each (the same terms, added in the same
order): they are the model's own regions, the sets of inputs it cannot tell apart. A region is
a union of cells of the threshold grid of :mod:`fastcf._trees.milp` (one threshold interval
per feature), and the grid's cells are the finest such partition; a region is the largest set
on which the model's arithmetic is the one it does for a given input (for one tree: a leaf).

``plausible=True`` asks for the closest input that lies in a region holding at least one
training row (a leaf combination the training data reaches) and that the model puts in the
target class (and with ``p_target >= τ`` for ``proba=``). The training rows fix a finite set of
such regions (:func:`fit_regions`: each row's path through every tree, its box the
intersection of the leaf boxes on the way, distinct leaf combinations kept); the class and
probabilities of each are those the model gives the training row itself (one call of its own
``predict`` / ``predict_proba`` at :meth:`fastcf.TreeExplainer.fit_data`).

The answer. Every metric of :mod:`fastcf._trees.query` is separable, so over one box (a region
∩ the query's box: bounds, the library's domain, x̄ itself on frozen features) the cheapest
point is the projection of x̄, ``p = clip(x̄, max(box_lo, lo), min(box_hi, hi))``, and it
changes exactly the features on which x̄ lies outside that box — the fewest any point of the box
changes, so ``max_changes=m`` keeps a region iff its projection changes at most m features. The
answer is the cheapest projection over the regions of the target (an empty intersection is
skipped), exact by enumeration: ``O(C · D)`` per query for C distinct training regions,
vectorised over the regions (and over blocks of queries). A tie goes to the region of the
earliest training row (deterministic).

Each projection is a point of its region whose coordinates are a box end (a boundary or the
float64 after one) or x̄'s own value, so it reaches the region's leaves in the library's own
arithmetic; the explainer still confirms every success with the model's own ``predict``
(:func:`fastcf._stage.judge`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._status import Status
from ..results import Solution
from .query import coord_cost, finish

__all__ = ["Regions", "boxes", "fit_regions", "solve"]

#: values of the (rows, regions, features) block of one vectorised step
_BLOCK = 1_000_000


class Regions(NamedTuple):
    """The distinct regions of the training rows, their boxes and the model's verdict on them."""

    lo: np.ndarray  # (C, D) the regions' boxes
    hi: np.ndarray  # (C, D)
    cls: np.ndarray  # (C,) class index the model gives the region
    proba: np.ndarray | None  # (C, K) its probabilities (None: the model has none)
    n_rows: int  # training rows they came from


def boxes(forest, X):
    """Return (leaves, lo, hi): each row's leaf in every tree (N, T) and its region's box (N, D).

    All rows and trees walk down together, one level per step; a left turn at a split on
    (f, b) caps ``hi[f]`` at b, a right turn raises ``lo[f]`` to ``nextafter(b)``.
    """
    N, D = X.shape
    dlo, dhi = forest.domain
    lo = np.full((N, D), dlo)
    hi = np.full((N, D), dhi)
    node = np.broadcast_to(forest.root, (N, forest.n_trees)).copy()
    row = np.broadcast_to(np.arange(N)[:, None], node.shape)
    while True:
        inner = ~forest.is_leaf[node]
        if not inner.any():
            return node, lo, hi
        r, nd = row[inner], node[inner]
        f, b = forest.feature[nd], forest.boundary[nd]
        go = X[r, f] <= b
        np.minimum.at(hi, (r[go], f[go]), b[go])
        np.maximum.at(lo, (r[~go], f[~go]), np.nextafter(b[~go], np.inf))
        node[inner] = np.where(go, forest.left[nd], forest.right[nd])


def fit_data(ex, X):
    """Return the :class:`Regions` of the training rows ``X`` for ``ex`` (a TreeExplainer).

    Rows with a missing value are left out (they lie in no numeric box); None for a model with
    categorical features or without complete rows (``plausible=True`` refuses them). Each
    region's class and probabilities are the model's own (its ``predict`` and
    ``predict_proba`` on the rows).
    """
    from .._confirm import model_input
    from .._validation import resolve_targets

    X = X[~np.isnan(X).any(axis=1)]
    if ex._forest.categories is not None or X.shape[0] == 0:
        return None
    R = model_input(ex.model, X)
    cls = resolve_targets(ex.model.predict(R), ex.classes_, X.shape[0], "predict")
    P = np.asarray(ex.model.predict_proba(R), dtype=np.float64)
    return fit_regions(ex._forest, X, cls, P)


def fit_regions(forest, X, cls, proba=None):
    """Return the :class:`Regions` of the rows ``X`` (N, D), given the model's class of each row.

    ``cls`` (N,): the class index the model gives each row; ``proba`` (N, K) or None its
    probabilities. Rows of one region share both (the model is constant on a region).
    """
    leaves, lo, hi = boxes(forest, X)
    _, first = np.unique(leaves, axis=0, return_index=True)
    first = np.sort(first)  # (the order of the rows: deterministic, independent of the leaf ids)
    P = None if proba is None else np.ascontiguousarray(proba[first], dtype=np.float64)
    return Regions(lo[first], hi[first], np.asarray(cls, dtype=np.int64)[first], P, int(len(X)))


def solve(regions, X, tidx, q):
    """Answer every query over the training :class:`Regions`; return their ``Solution``.

    ``q``: the :class:`~fastcf._trees.query.TreeQuery` (box ``lo``/``hi`` per row, metric,
    weights, ``max_changes``, ``proba``). ``status``: 0 (an answer), 2 (no training region is
    in the target, or meets τ) or 3 (some are, but none within the box and ``max_changes``).
    """
    N, D = X.shape
    x = X.copy()
    dist = np.full(N, np.inf)
    status = np.zeros(N, dtype=np.int64)
    step = max(1, _BLOCK // max(1, regions.lo.size))
    for s in range(0, N, step):
        rows = np.arange(s, min(N, s + step))
        good = regions.cls[None, :] == tidx[rows, None]  # (n, C)
        if q.proba is not None:
            good &= regions.proba[:, tidx[rows]].T >= q.proba
        a = np.maximum(regions.lo[None], q.lo[rows, None, :])  # (n, C, D)
        b = np.minimum(regions.hi[None], q.hi[rows, None, :])
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
    int(Status.OK): "plausible: the closest point of a training region in the target",
    int(Status.UNREACHABLE): (
        "plausible: no region of the model that holds training data is classified as the "
        "target (and meets proba); plausible=False searches every input"
    ),
    int(Status.INFEASIBLE): (
        "plausible: the regions that hold training data and are classified as the target lie "
        "outside the bounds, frozen features or max_changes"
    ),
}
