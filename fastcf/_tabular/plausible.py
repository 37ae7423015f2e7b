"""Plausible recourse for a tabular pipeline ending in a tree model: training regions, raw columns.

The model's regions (:mod:`fastcf._trees.plausible`: the inputs that reach one given leaf in
every tree) are written on the raw columns with the splits of :mod:`fastcf._tabular.treefold`:
a numeric column's split is *x <= β* on its raw value, an encoded column's split a set of
categories. A region is then, per numeric column, an interval ``(lo, hi]`` of raw values and,
per encoded column, a set of categories — a product, so the cheapest row of a region under the
query's constraints is found column by column:

* a numeric column: the value closest to x̄ in ``(lo, hi]`` ∩ the row's box (bounds, dtype
  range, immutable, monotone), on the column's grid (the grid points after lo and at or below hi
  are computed once per region), a clip;
* an encoded column: x̄'s category if the region and the query allow it (cost 0), else the
  cheapest allowed category of the region's set (a change for a one-hot column, ``w |Δrank|``
  for an ordinal one).

Each choice keeps the column unchanged whenever any point of the region could, so the row
changes the fewest columns the region allows, and ``max_changes`` keeps a region iff its
cheapest row qualifies: the answer (the cheapest over the training regions of the target) is
exact. The class and probabilities of a region are the pipeline's own on the training row that
reached it; every answer is confirmed by the pipeline's ``predict`` (:mod:`.solve`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._status import Status
from .milp import RowAnswer

__all__ = ["Regions", "fit_regions", "solve"]


class Regions(NamedTuple):
    """The distinct regions of the training rows on the raw columns."""

    lo: np.ndarray  # (C, n_num) the first value a numeric column may take (a grid point)
    hi: np.ndarray  # (C, n_num) the last one
    ok: np.ndarray  # (C, n_ind) bool: the categories of each encoded column in the region
    cls: np.ndarray  # (C,) the pipeline's class index
    proba: np.ndarray | None  # (C, K)


def fit_regions(prog, X):
    """Return the :class:`Regions` of the training DataFrame ``X`` (rows that can be read)."""
    from .treeorders import snap

    s = prog.schema
    reads, rows = [], []
    V = X.to_numpy(dtype=object)
    for i in range(X.shape[0]):
        try:
            reads.append(s.read(V[i], X.index[i]))
        except ValueError:
            continue  # a missing value or an unseen category: no region of its own
        rows.append(i)
    if not rows:
        raise ValueError("plausible=True: no row of X_train can be read (missing values?)")
    XN = np.array([r[0] for r in reads]).reshape(len(rows), prog.n_num)
    KC = np.array([r[1] for r in reads], dtype=np.int64).reshape(len(rows), prog.n_cat)
    leaves, lo, hi, ok = _walk(prog, XN, KC)
    _, first = np.unique(leaves, axis=0, return_index=True)
    first = np.sort(first)
    lo, hi, ok = lo[first], hi[first], ok[first]
    for j in range(prog.n_num):  # (lo, hi] on the column's values: its first and last point
        r = s.num_res[j]
        for c in range(first.size):
            a, b = lo[c, j], hi[c, j]
            if prog.grid[j]:
                lo[c, j] = snap(a, r)[1] if math.isfinite(a) else -math.inf
                hi[c, j] = snap(b, r)[0] if math.isfinite(b) else math.inf
            else:
                lo[c, j] = np.nextafter(a, np.inf) if math.isfinite(a) else -math.inf
    frame = X.iloc[[rows[i] for i in first]]
    inp = frame if prog.frame_input else frame.to_numpy()
    labels = list(s.fold.classes)
    cls = np.array([labels.index(v) for v in np.asarray(prog.model.predict(inp))], dtype=np.int64)
    P = None
    if hasattr(prog.model, "predict_proba"):
        P = np.asarray(prog.model.predict_proba(inp), dtype=np.float64)
    return Regions(lo, hi, ok, cls, P)


def _walk(prog, XN, KC):
    """Return (leaves, lo, hi, ok) of every row: its leaf per tree and its region's bounds."""
    s = prog.schema
    tf = prog.tf
    fo = tf.forest
    N = XN.shape[0]
    lo = np.full((N, prog.n_num), -math.inf)
    hi = np.full((N, prog.n_num), math.inf)
    ok = np.ones((N, prog.n_ind), dtype=bool)
    levels = {int(c): np.asarray(s.fold.labels[c], dtype=np.float64)
              for c in prog.cat_cols if c in s.levels}  # fmt: skip
    node = np.broadcast_to(fo.root, (N, fo.n_trees)).copy()
    row = np.broadcast_to(np.arange(N)[:, None], node.shape)
    while True:
        inner = ~fo.is_leaf[node]
        if not inner.any():
            return node, lo, hi, ok
        r, nd = row[inner], node[inner]
        nxt = np.empty(nd.size, dtype=np.int64)
        for u in np.unique(nd):  # the rows at each split node of this level
            at = nd == u
            ru = r[at]
            side = tf.node_side[u]
            if side >= 0:  # a split no value of its column reaches one side of
                nxt[at] = fo.left[u] if side == 0 else fo.right[u]
                continue
            c = int(tf.node_col[u])
            v = prog.var[c]
            if v < prog.n_num:  # x <= β goes first (left unless swapped)
                first, other = fo.left[u], fo.right[u]
                if tf.node_swap[u]:
                    first, other = other, first
                beta = float(tf.node_beta[u])
                go = XN[ru, v] <= beta
                nxt[at] = np.where(go, first, other)
                hi[ru[go], v] = np.minimum(hi[ru[go], v], beta)
                lo[ru[~go], v] = np.maximum(lo[ru[~go], v], beta)
                continue
            j = v - prog.n_num
            if c in levels:
                mask = levels[c] <= tf.node_beta[u]
                left = ~mask if tf.node_swap[u] else mask
            else:
                left = np.asarray(tf.node_set[int(u)], dtype=bool)
            go = left[KC[ru, j]]
            nxt[at] = np.where(go, fo.left[u], fo.right[u])
            sl = slice(s.cat_start[j], s.cat_start[j + 1])
            ok[ru[go], sl] &= left
            ok[ru[~go], sl] &= ~left
        node[inner] = nxt


def solve(prog, regions, x0, k0, q, prep):
    """Return the :class:`~fastcf._tabular.milp.RowAnswer` of one row over the regions."""
    s = prog.schema
    nlo, nhi = prog._box(x0, prep)
    good = regions.cls == q.target
    if q.proba is not None and regions.proba is not None:
        good &= regions.proba[:, q.target] >= q.proba
    a = np.maximum(regions.lo, nlo)
    b = np.minimum(regions.hi, nhi)
    fits = (a <= b).all(axis=1)
    X = np.clip(x0, a, b)
    cost = (s.w_num * np.abs(X - x0)).sum(axis=1)
    changes = (X != x0).sum(axis=1)
    C = regions.lo.shape[0]
    K = np.zeros((C, prog.n_cat), dtype=np.int64)
    if prog.n_cat:
        c_ind = np.where(regions.ok & (prep[4] > 0)[None, :], prog.costs(x0, k0)[None, :], np.inf)
        for j in range(prog.n_cat):
            sub = c_ind[:, s.cat_start[j] : s.cat_start[j + 1]]
            own = sub[:, k0[j]]
            best = np.where(np.isfinite(own), k0[j], np.argmin(sub, axis=1))  # stay if it may
            cb = sub[np.arange(C), best]
            fits &= np.isfinite(cb)
            K[:, j] = best
            cost = cost + np.where(np.isfinite(cb), cb, 0.0)
            changes = changes + (best != k0[j])
    keep = good & fits
    if q.max_changes is not None:
        keep &= changes <= q.max_changes
    info = {"solver": "plausible", "regions": int(C)}
    if not keep.any():
        if not good.any():
            status, msg = Status.UNREACHABLE, _NONE
        else:
            status, msg = Status.INFEASIBLE, _OUTSIDE
        return RowAnswer(x0.copy(), k0.copy(), math.inf, int(status), msg, info)
    i = int(np.argmin(np.where(keep, cost, np.inf)))
    x, k = X[i].copy(), K[i].copy()
    cn, cc = prog.distance(x0, k0, x, k)
    msg = "plausible: the cheapest row of a training region in the target"
    return RowAnswer(x, k, float(cn.sum() + cc.sum()), int(Status.OK), msg, info)


_NONE = (
    "plausible: no region of the model that holds training data is classified as the target "
    "(and meets proba); plausible=False searches every row"
)
_OUTSIDE = (
    "plausible: the regions that hold training data and are classified as the target lie "
    "outside the bounds, immutable and monotone columns, allowed categories or max_changes"
)
