"""One tree: the closest point of x̄ in a leaf of the target class, by enumeration of leaves.

A tree's leaf is a box: along the path from the root, each left turn at a split of feature f
caps ``x_f <= b`` and each right turn floors ``x_f >= nextafter(b)`` (the parsed rule of
:mod:`fastcf._trees.forest`, so the box holds exactly the float64 inputs the model sends to the
leaf). The leaf's class and probabilities are the model's own arithmetic on its terms. For a
query the answer is, over the leaves of the target class (with ``p_target >= τ`` for ``proba=``)
whose box meets the query's box (the domain, ``bounds``, x̄ on frozen features), the cheapest
projection ``clip(x̄, lo, hi)`` — the cheapest point of a box for every separable metric, and
the one that changes the fewest features, so ``max_changes=m`` keeps the leaves whose
projection changes at most m features. Exact: no arithmetic but the clip and the cost.

All leaves and queries at once, in chunks of rows (NumPy broadcasting over (rows, leaves,
features)); a Numba kernel with early exits would pay on trees of many thousands of leaves.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .query import coord_cost, finish

__all__ = ["LeafTable", "leaf_table", "solve"]


class LeafTable(NamedTuple):
    """The reachable leaves of one tree."""

    node: np.ndarray  # (L,) node ids
    lo: np.ndarray  # (L, D) the box of each leaf (float64 inputs that reach it)
    hi: np.ndarray  # (L, D)
    cls: np.ndarray  # (L,) the class index the model gives the leaf
    proba: np.ndarray  # (L, K) the model's probabilities at the leaf


def leaf_table(forest) -> LeafTable:
    """Return the :class:`LeafTable` of a one-tree :class:`~fastcf._trees.forest.Forest`."""
    D = forest.n_features
    lo0 = np.full(D, forest.domain[0])
    hi0 = np.full(D, forest.domain[1])
    nodes, los, his = [], [], []
    stack = [(int(forest.root[0]), lo0, hi0)]
    while stack:
        n, lo, hi = stack.pop()
        if forest.is_leaf[n]:
            if (lo <= hi).all():  # else no input reaches it
                nodes.append(n)
                los.append(lo)
                his.append(hi)
            continue
        f, b = forest.feature[n], forest.boundary[n]
        lhi = hi.copy()
        lhi[f] = min(hi[f], b)
        rlo = lo.copy()
        rlo[f] = max(lo[f], np.nextafter(b, np.inf))
        stack.append((int(forest.right[n]), rlo, hi))
        stack.append((int(forest.left[n]), lo, lhi))
    node = np.asarray(nodes, dtype=np.int64)
    S = forest.scores(node[:, None])
    return LeafTable(
        node=node,
        lo=np.asarray(los).reshape(-1, D),
        hi=np.asarray(his).reshape(-1, D),
        cls=forest.decision.predict(S),
        proba=forest.link.proba(S),
    )


def solve(table: LeafTable, X, tidx, q):
    """Return (x (N, D), distance (N,), found (N,) bool) of the queries X with targets tidx."""
    N, D = X.shape
    L = table.node.shape[0]
    x = X.copy()
    dist = np.full(N, np.inf)
    found = np.zeros(N, dtype=bool)
    step = max(1, 2_000_000 // max(1, L * D))
    for s in range(0, N, step):
        r = slice(s, min(N, s + step))
        ok = table.cls[None, :] == tidx[r, None]  # (n, L)
        if q.proba is not None:
            ok &= table.proba[:, tidx[r]].T >= q.proba
        lo = np.maximum(table.lo[None], q.lo[r, None, :])  # (n, L, D)
        hi = np.minimum(table.hi[None], q.hi[r, None, :])
        ok &= (lo <= hi).all(axis=2)
        x0 = X[r, None, :]
        P = np.clip(x0, lo, hi)  # the projections (an empty box gives hi; masked above)
        d = P - x0
        if q.max_changes is not None:
            ok &= np.count_nonzero(d, axis=2) <= q.max_changes
        cost = np.where(ok, coord_cost(d, q.w, q.metric).sum(axis=2), np.inf)
        best = np.argmin(cost, axis=1)
        rows = np.arange(cost.shape[0])
        hit = ok[rows, best]
        miss_but_any = ~hit & ok.any(axis=1)  # every feasible cost overflowed to inf
        best = np.where(miss_but_any, np.argmax(ok, axis=1), best)
        hit = ok[rows, best]
        x[r] = np.where(hit[:, None], P[rows, best], X[r])
        dist[r] = np.where(hit, finish(cost[rows, best], q.metric), np.inf)
        found[r] = hit
    return x, dist, found
