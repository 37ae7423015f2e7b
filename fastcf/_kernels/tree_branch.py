"""The per-node steps of the branch and bound over interval ranges (:mod:`fastcf._trees.branch`).

Loops over the leaves and leaf-box entries of one node, in place of NumPy passes that allocate
an array of every leaf per node (``reduceat`` over masked copies, ``unique``, ``bincount``):

* :func:`node_spread` — per tree, whether its alive leaves carry different terms, and how far
  apart they are on the target's forms and on the terms;
* :func:`split_even` — the boundary that parts one tree's alive leaves most evenly;
* :func:`split_best` — the boundary at an edge of the most trees' best alive leaves.

Each reads the alive leaves (a list of them, in order, as the reductions leave it) and their
entries only: in a node of the search a few percent of the leaves are alive, and at depth 8
(100 trees, 22 000 leaves, 138 000 entries) the passes over every entry took 350 µs a node in
``split_best``. (``split_even`` reads one tree's entries.)

The choices are those of the NumPy code they replace (the same candidates, the same first
maximum, the same sums in the same order; a leaf's score sums its forms sequentially, as NumPy
does below eight forms); ``tests/reference.py`` keeps that code, and
``tests/test_trees_speed_paths.py`` compares the two.
"""

import numpy as np

from fastcf._kernels import kernel

__all__ = ["node_spread", "split_even", "split_best"]


@kernel()
def node_spread(ids, leaf_tree, V, coef, T):
    """Return (undecided, spread, vspread) per tree over its alive leaves ``ids`` (in order).

    ``undecided[t]``: some column of the terms ``V`` differs between two alive leaves;
    ``spread[t]``: Σ_j (max − min) of the forms ``coef[:, j]``; ``vspread[t]``: Σ_s (max − min)
    of the terms.
    """
    S = V.shape[1]
    F = coef.shape[1]
    undecided = np.zeros(T, dtype=np.bool_)
    spread = np.zeros(T)
    vspread = np.zeros(T)
    vmx = np.full((T, S), -np.inf)
    vmn = np.full((T, S), np.inf)
    cmx = np.full((T, F), -np.inf)
    cmn = np.full((T, F), np.inf)
    for p in range(ids.shape[0]):
        i = ids[p]
        t = leaf_tree[i]
        for s in range(S):
            vmx[t, s] = max(vmx[t, s], V[i, s])
            vmn[t, s] = min(vmn[t, s], V[i, s])
        for j in range(F):
            cmx[t, j] = max(cmx[t, j], coef[i, j])
            cmn[t, j] = min(cmn[t, j], coef[i, j])
    for t in range(T):
        vs = 0.0
        for s in range(S):
            if vmx[t, s] != vmn[t, s]:
                undecided[t] = True
            vs += vmx[t, s] - vmn[t, s]
        vspread[t] = vs
        sp = 0.0
        for j in range(F):
            sp += cmx[t, j] - cmn[t, j]
        spread[t] = sp
    return undecided, spread, vspread


@kernel()
def split_even(t, alive, ka, kb, e_start, e_stop, b_leaf, b_feat, e_ka, e_kb):
    """Return (f, j) parting tree ``t``'s alive leaves most evenly at ``x_f <= b_j``; f = -1: none.

    ``e_start:e_stop``: the tree's leaf-box entries (sorted by leaf). A candidate is an alive
    entry whose box ends inside its feature's range; its score is the smaller of the number of
    alive entries of that feature ending at or before it and starting after it. (The alive
    entries are listed first: the candidates and the counts read them only.)
    """
    live = np.empty(e_stop - e_start, dtype=np.int64)
    m = 0
    for e in range(e_start, e_stop):
        if alive[b_leaf[e]]:
            live[m] = e
            m += 1
    best_f = -1
    best_j = -1
    best = -1
    for q in range(m):
        p = live[q]
        f = b_feat[p]
        cj = min(e_kb[p], kb[f])
        if cj >= kb[f]:
            continue
        left = 0
        right = 0
        for u in range(m):
            e = live[u]
            if b_feat[e] == f:
                if min(e_kb[e], kb[f]) <= cj:
                    left += 1
                if max(e_ka[e], ka[f]) > cj:
                    right += 1
        score = min(left, right)
        if score > best:
            best = score
            best_f = f
            best_j = cj
    return best_f, best_j


@kernel()
def split_best(ids, undecided, coef, leaf_tree, T, ka, kb, leaf_estart, b_feat, e_ka, e_kb, D1):
    """Return (f, j): the boundary at an edge of the most trees' best alive leaves; f = -1: none.

    A tree's best alive leaves score highest on Σ_j coef[:, j] (undecided trees only); each edge
    of their boxes inside the feature's range (the upper ``x_f <= b_kb``, the lower
    ``x_f <= b_{ka−1}``) gets the weight (best − worst score) of the leaf's tree; the edge of the
    largest total weight, the smallest key ``f·D1 + j`` among equals. ``ids``: the alive leaves
    in order; ``leaf_estart``: leaf i's entries are ``leaf_estart[i] .. leaf_estart[i + 1] - 1``
    (the entries sorted by leaf, so the best leaves' entries in leaf order are the entries in
    their order).
    """
    F = coef.shape[1]
    m = ids.shape[0]
    score = np.empty(m)
    top = np.full(T, -np.inf)
    low = np.full(T, np.inf)
    on = np.zeros(m, dtype=np.bool_)  # alive in an undecided tree
    for q in range(m):
        i = ids[q]
        t = leaf_tree[i]
        if undecided[t]:
            s = 0.0
            for j in range(F):
                s += coef[i, j]
            score[q] = s
            top[t] = max(top[t], s)
            low[t] = min(low[t], s)
            on[q] = True
    size = 0
    for q in range(m):
        i = ids[q]
        if on[q] and score[q] == top[leaf_tree[i]]:
            size += leaf_estart[i + 1] - leaf_estart[i]
    keys = np.empty(2 * size, dtype=np.int64)
    weights = np.empty(2 * size)
    c = 0
    for side in range(2):  # (the upper edges first, then the lower ones: the sums' order)
        for q in range(m):
            i = ids[q]
            t = leaf_tree[i]
            if not on[q] or score[q] != top[t]:
                continue
            for e in range(leaf_estart[i], leaf_estart[i + 1]):
                f = b_feat[e]
                if side == 0:
                    b = min(e_kb[e], kb[f])
                    if b < kb[f]:
                        keys[c] = f * D1 + b
                        weights[c] = top[t] - low[t]
                        c += 1
                else:
                    a = max(e_ka[e], ka[f])
                    if a > ka[f]:
                        keys[c] = f * D1 + a - 1
                        weights[c] = top[t] - low[t]
                        c += 1
    if c == 0:
        return -1, -1
    # the edges by key, stable (each key's weights in order): a bottom-up merge sort of their
    # positions, the permutation of np.argsort(keys[:c], kind="mergesort") (a stable order is
    # unique), without compiling NumPy's (~0.5 s of a first query: its only use in the trees)
    order = np.empty(c, dtype=np.int64)
    spare = np.empty(c, dtype=np.int64)
    for q in range(c):
        order[q] = q
    width = 1
    while width < c:
        for lo in range(0, c, 2 * width):
            mid = min(lo + width, c)
            hi = min(lo + 2 * width, c)
            a = lo
            b = mid
            for o in range(lo, hi):
                if b < hi and (a >= mid or keys[order[b]] < keys[order[a]]):
                    spare[o] = order[b]
                    b += 1
                else:
                    spare[o] = order[a]
                    a += 1
        order, spare = spare, order
        width *= 2
    best_key = -1
    best = -np.inf
    p = 0
    while p < c:
        k = keys[order[p]]
        total = 0.0
        while p < c and keys[order[p]] == k:
            total += weights[order[p]]
            p += 1
        if total > best:
            best = total
            best_key = k
    return best_key // D1, best_key % D1
