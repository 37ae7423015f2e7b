"""The sums of a tree ensemble after every single-feature move (:mod:`fastcf._trees.incumbent`).

From a point with interval ``kx[f]`` on every feature, a leaf whose box misses the point on
exactly one feature f, over the intervals ``a..b``, is the leaf its tree reaches when f moves
into ``a..b``: its terms minus the current leaf's are added to the sums of those moves, through
one difference array over all (feature, interval) pairs, summed cumulatively. The loops of
:meth:`fastcf._trees.incumbent.Search.table`; the sums are those of a search heuristic (every
candidate is checked with the library's own arithmetic).

Two kernels give the same sums, bit for bit: :func:`single_moves` counts each alive leaf's
misses over its entries; :func:`single_moves_bits` reads them from bit sets made once per forest
(:func:`miss_bits`: per interval of each feature, the leaves whose box misses it), two words
operations per feature and 64 leaves (the leaves missed once and twice, as a carry-save count),
then visits only the leaves missed not at all or once. The first stays for forests whose bit
sets would be too large, and as the second's reference in the tests.
"""

import numpy as np

from fastcf._kernels import kernel

__all__ = ["single_moves", "single_moves_bits", "miss_bits"]


@kernel(inline="always")  # (a call per leaf: inlined, as the loop it replaces)
def _move(diff, V, i, cur, p, r):
    """Add leaf i's terms less the current leaf's (``cur``; -1: none) to moves ``p .. r − 1``."""
    for s in range(V.shape[1]):
        d = V[i, s] - (V[cur, s] if cur >= 0 else 0.0)
        diff[p, s] += d
        diff[r, s] -= d


@kernel(inline="always")
def _sums(diff, Z, Znew, w, ext, mf, mk):
    """Sum the difference array cumulatively and write point w's sums after each move."""
    S = Z.shape[1]
    for p in range(1, diff.shape[0]):
        for s in range(S):
            diff[p, s] += diff[p - 1, s]
    for i in range(mf.shape[0]):
        p = ext[mf[i]] + mk[i]
        for s in range(S):
            Znew[w, i, s] = Z[w, s] + diff[p, s]


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
            _move(diff, V, i, tree_leaf[leaf_tree[i]], ext[ef[e]] + ea[e], ext[ef[e]] + eb[e] + 1)
        _sums(diff, Z, Znew, w, ext, mf, mk)
    return Z, Znew


@kernel()
def miss_bits(b_leaf, b_feat, e_ka, e_kb, ioff, n):
    """Return the bit sets of the leaves' misses, B (n_intervals, ⌈n / 64⌉) uint64.

    Bit i of ``B[ioff[f] + k]`` is set iff leaf i's box has an entry on f (the intervals
    ``e_ka..e_kb``) that misses interval k. Interval k of feature f is ``ioff[f] + k``,
    k = 0 .. ``ioff[f + 1] − ioff[f] − 1``.
    """
    nw = (n + 63) // 64
    B = np.zeros((ioff[-1], nw), dtype=np.uint64)
    one = np.uint64(1)
    for e in range(b_leaf.shape[0]):
        i = b_leaf[e]
        f = b_feat[e]
        word = i >> 6
        bit = one << np.uint64(i & 63)
        for k in range(ioff[f + 1] - ioff[f]):
            if k < e_ka[e] or k > e_kb[e]:
                B[ioff[f] + k, word] |= bit
    return B


@kernel()
def single_moves_bits(
    KX, B, on_bits, ioff, ef, lstart, ea, eb, leaf_tree, V, base, n_trees, ext, n_ext, mf, mk
):  # fmt: skip
    """:func:`single_moves` with the misses read from bit sets: the same (Z, Znew), bit for bit.

    ``B``: :func:`miss_bits` of the forest; ``on_bits``: the alive leaves as bits (bit i of word
    i // 64). Per point, the leaves missed at least once (``ones``) and at least twice
    (``twos``) over its features; the alive leaves missed not at all (each tree's current leaf)
    and once are visited in index order, as :func:`single_moves` visits them, and the entry a
    leaf missed once misses is found among its entries (``ef``, ``ea``, ``eb``, grouped by
    leaf from ``lstart``).
    """
    W, D = KX.shape
    S = V.shape[1]
    M = mf.shape[0]
    nw = B.shape[1]
    Z = np.empty((W, S))
    Znew = np.empty((W, M, S))
    tree_leaf = np.empty(n_trees, dtype=np.int64)
    diff = np.empty((n_ext + 1, S))
    ones = np.empty(nw, dtype=np.uint64)
    twos = np.empty(nw, dtype=np.uint64)
    zero64 = np.uint64(0)
    one64 = np.uint64(1)
    byte = np.uint64(255)
    eight = np.uint64(8)
    for w in range(W):
        kx = KX[w]
        tree_leaf[:] = -1
        for s in range(S):
            Z[w, s] = base[s]
        for q in range(nw):
            ones[q] = zero64
            twos[q] = zero64
        for f in range(D):
            row = ioff[f] + kx[f]
            for q in range(nw):
                x = B[row, q]
                twos[q] |= ones[q] & x
                ones[q] |= x
        for q in range(nw):  # the current leaves, in index order
            x = ~ones[q] & on_bits[q]
            i = q * 64
            while x != zero64:
                if (x & byte) == zero64:  # (a byte of no leaf at a time)
                    x >>= eight
                    i += 8
                    continue
                if x & one64:
                    tree_leaf[leaf_tree[i]] = i
                    for s in range(S):
                        Z[w, s] += V[i, s]
                x >>= one64
                i += 1
        diff[:, :] = 0.0
        for q in range(nw):  # the leaves missed once, in index order
            x = ones[q] & ~twos[q] & on_bits[q]
            i = q * 64 - 1
            while x != zero64:
                if (x & byte) == zero64:
                    x >>= eight
                    i += 8
                    continue
                i += 1
                hit = x & one64
                x >>= one64
                if hit == zero64:
                    continue
                e = lstart[i]
                while e < lstart[i + 1] - 1:
                    k = kx[ef[e]]
                    if k < ea[e] or k > eb[e]:
                        break
                    e += 1
                p = ext[ef[e]] + ea[e]
                _move(diff, V, i, tree_leaf[leaf_tree[i]], p, ext[ef[e]] + eb[e] + 1)
        _sums(diff, Z, Znew, w, ext, mf, mk)
    return Z, Znew
