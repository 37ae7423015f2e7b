"""The sums of a tree ensemble after every single-feature move (:mod:`fastcf._trees.incumbent`).

From a point with interval ``kx[f]`` on every feature, a leaf whose box misses the point on
exactly one feature f, over the intervals ``a..b``, is the leaf its tree reaches when f moves
into ``a..b``: its terms minus the current leaf's are added to the sums of those moves, through
one difference array over all (feature, interval) pairs, summed cumulatively. The loops of
:meth:`fastcf._trees.incumbent.Search.table`, one pass over the alive leaves' entries; the sums
are those of a search heuristic (every candidate is checked with the library's own arithmetic).
"""

import numpy as np

from fastcf._kernels import kernel

__all__ = ["single_moves"]


@kernel()
def single_moves(KX, ef, lstart, ea, eb, leaf_on, leaf_tree, V, base, n_trees, ext, n_ext, mf, mk):
    """Return (Z, Znew): the sums at each point ``KX[w]`` (W, S) and after each move (W, M, S).

    ``KX`` (W, D): the intervals of W points (a beam's), each answered on its own, as one.
    The entries (``ef``, ``ea``, ``eb``) are grouped by leaf, leaf i's at ``lstart[i] ..
    lstart[i + 1] - 1``. Per point, one pass over each alive leaf's entries counts its misses
    up to two (a leaf missed twice is reached by no single move) and keeps the one missed
    entry; then each leaf missed once adds its term to the moves of that entry's range, leaf
    by leaf in order (the entries in their order: the same sums as a pass over every entry).
    """
    W = KX.shape[0]
    n, S = V.shape
    M = mf.shape[0]
    Z = np.empty((W, S))
    Znew = np.empty((W, M, S))
    nmiss = np.empty(n, dtype=np.int64)
    missed = np.empty(n, dtype=np.int64)
    tree_leaf = np.empty(n_trees, dtype=np.int64)
    diff = np.empty((n_ext + 1, S))
    for w in range(W):
        kx = KX[w]
        tree_leaf[:] = -1
        for s in range(S):
            Z[w, s] = base[s]
        for i in range(n):
            nmiss[i] = 2
            if not leaf_on[i]:
                continue
            cnt = 0
            for e in range(lstart[i], lstart[i + 1]):
                k = kx[ef[e]]
                if k < ea[e] or k > eb[e]:
                    cnt += 1
                    missed[i] = e
                    if cnt == 2:
                        break
            nmiss[i] = cnt
            if cnt == 0:
                tree_leaf[leaf_tree[i]] = i
                for s in range(S):
                    Z[w, s] += V[i, s]
        diff[:, :] = 0.0
        for i in range(n):
            if nmiss[i] != 1:
                continue
            e = missed[i]
            cur = tree_leaf[leaf_tree[i]]
            p = ext[ef[e]] + ea[e]
            r = ext[ef[e]] + eb[e] + 1
            for s in range(S):
                d = V[i, s] - (V[cur, s] if cur >= 0 else 0.0)
                diff[p, s] += d
                diff[r, s] -= d
        for p in range(1, n_ext + 1):
            for s in range(S):
                diff[p, s] += diff[p - 1, s]
        for i in range(M):
            p = ext[mf[i]] + mk[i]
            for s in range(S):
                Znew[w, i, s] = Z[w, s] + diff[p, s]
    return Z, Znew
