"""The leaf each row reaches in each tree, the sums of their terms (:mod:`fastcf._trees.forest`).

:func:`walk`: one walk from each tree's root per row, comparing the row's value with the node's
``boundary`` (go left iff ``x <= boundary``, the rule every library's split is rewritten to when
parsed) and sending a NaN where the library routes a missing value. The NumPy level-by-level
walk it replaces stays as :meth:`~fastcf._trees.forest.Forest.walk_levels` for the trees with
categorical splits; ``tests/test_trees_speed_paths.py`` compares the two, and the libraries'
own leaves. :func:`leaf_sums` adds the leaves' terms in tree order, as the NumPy
``np.add.accumulate`` it replaces did (kept in ``tests/reference.py``, compared bit for bit).
:func:`intervals` finds the threshold interval of each value of a row
(:meth:`fastcf._trees.structure.Structure.intervals`).
"""

import numpy as np

from fastcf._kernels import kernel

__all__ = ["walk", "leaf_sums", "intervals"]

#: rows walked together, tree by tree: one tree's nodes stay in the cache for the whole block
#: (the incumbent's 256 projections of a forest of 100 trees: 0.73 → 0.51 ms against row by
#: row), and a block of rows too, however many rows there are
_BLOCK = 256


@kernel()
def walk(X, root, is_leaf, feature, boundary, left, right, missing, routed):
    """Return the global leaf id of every row of ``X`` in every tree, shape (N, T).

    ``missing[node]``: 1 a NaN goes left, 0 or -1 right; read only when ``routed`` (else a NaN
    compares false and goes right).
    """
    N = X.shape[0]
    T = root.shape[0]
    out = np.empty((N, T), dtype=np.int64)
    for i0 in range(0, N, _BLOCK):
        i1 = min(N, i0 + _BLOCK)
        for t in range(T):
            top = root[t]
            for i in range(i0, i1):
                node = top
                while not is_leaf[node]:
                    v = X[i, feature[node]]
                    if routed and np.isnan(v):
                        go = missing[node] == 1
                    else:
                        go = v <= boundary[node]
                    node = left[node] if go else right[node]
                out[i, t] = node
    return out


@kernel()
def leaf_sums(value, leaves, base, single):
    """Return Z = base + Σ_t value[leaves[:, t]], added in tree order, shape (N, S).

    ``single``: each partial sum rounded to float32 (the library adds in float32; ``value`` and
    ``base`` hold float32 values as float64), as ``np.add.accumulate`` in float32 does; else in
    float64. The sums come back as float64.
    """
    N, T = leaves.shape
    S = value.shape[1]
    out = np.empty((N, S))
    for i in range(N):
        for s in range(S):
            if single:
                z32 = np.float32(base[s])
                for t in range(T):
                    z32 = z32 + np.float32(value[leaves[i, t], s])
                out[i, s] = np.float64(z32)
            else:
                z = base[s]
                for t in range(T):
                    z += value[leaves[i, t], s]
                out[i, s] = z
    return out


@kernel()
def intervals(x, flat, off):
    """Return ``np.searchsorted(B[f], x[f], side="left")`` for every feature f, shape (D,).

    ``B[f]`` is ``flat[off[f]:off[f + 1]]`` (sorted). A NaN is past every boundary, as NumPy
    sorts it.
    """
    D = x.shape[0]
    out = np.empty(D, dtype=np.int64)
    for f in range(D):
        v = x[f]
        lo = off[f]
        hi = off[f + 1]
        if np.isnan(v):
            out[f] = hi - lo
            continue
        start = lo
        while lo < hi:  # the first boundary >= v
            mid = (lo + hi) // 2
            if flat[mid] < v:
                lo = mid + 1
            else:
                hi = mid
        out[f] = lo - start
    return out
