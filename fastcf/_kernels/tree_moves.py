"""The sums of a tree ensemble after every single-feature move (:mod:`fastcf._trees.incumbent`).

From a point with interval ``kx[f]`` on every feature, a leaf whose box misses the point on
exactly one feature f, over the intervals ``a..b``, is the leaf its tree reaches when f moves
into ``a..b``: its terms minus the current leaf's are added to the sums of those moves, through
one difference array over all (feature, interval) pairs, summed cumulatively. The loops of
:meth:`fastcf._trees.incumbent.Search.table`, one pass over the leaf-box entries; the sums are
those of a search heuristic (every candidate is checked with the library's own arithmetic).
"""

import numpy as np

from fastcf._kernels import kernel

__all__ = ["single_moves"]


@kernel()
def single_moves(KX, ef, el, ea, eb, leaf_on, leaf_tree, V, base, n_trees, ext, n_ext, mf, mk):
    """Return (Z, Znew): the sums at each point ``KX[w]`` (W, S) and after each move (W, M, S).

    ``KX`` (W, D): the intervals of W points (a beam's), each answered on its own, as one.
    """
    W = KX.shape[0]
    E = ef.shape[0]
    n, S = V.shape
    M = mf.shape[0]
    Z = np.empty((W, S))
    Znew = np.empty((W, M, S))
    nmiss = np.empty(n, dtype=np.int64)
    tree_leaf = np.empty(n_trees, dtype=np.int64)
    diff = np.empty((n_ext + 1, S))
    for w in range(W):
        kx = KX[w]
        nmiss[:] = 0
        for e in range(E):
            k = kx[ef[e]]
            if k < ea[e] or k > eb[e]:
                nmiss[el[e]] += 1
        tree_leaf[:] = -1
        for s in range(S):
            Z[w, s] = base[s]
        for i in range(n):
            if nmiss[i] == 0 and leaf_on[i]:
                tree_leaf[leaf_tree[i]] = i
                for s in range(S):
                    Z[w, s] += V[i, s]
        diff[:, :] = 0.0
        for e in range(E):
            k = kx[ef[e]]
            lf = el[e]
            if (k < ea[e] or k > eb[e]) and nmiss[lf] == 1:
                cur = tree_leaf[leaf_tree[lf]]
                p = ext[ef[e]] + ea[e]
                r = ext[ef[e]] + eb[e] + 1
                for s in range(S):
                    d = V[lf, s] - (V[cur, s] if cur >= 0 else 0.0)
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
