"""The per-node steps of the branch and bound over interval ranges (:mod:`fastcf._trees.branch`).

Loops over the leaves and leaf-box entries of one node, in place of NumPy passes that allocate
an array of every leaf per node (``reduceat`` over masked copies, ``unique``, ``bincount``):

* :func:`node_spread` — per tree, whether its alive leaves carry different terms, and how far
  apart they are on the target's forms and on the terms;
* :func:`split_even` — the boundary that parts one tree's alive leaves most evenly;
* :func:`split_best` — the boundary at an edge of the most trees' best alive leaves.

Each reads the alive leaves (and their entries) only, beyond one pass over a flag per leaf: in
a node of the search a few percent of the leaves are alive, and at depth 8 (100 trees, 22 000
leaves, 138 000 entries) the passes over every entry took 350 µs a node in ``split_best``.

The choices are those of the NumPy code they replace (the same candidates, the same first
maximum, the same sums in the same order; a leaf's score sums its forms sequentially, as NumPy
does below eight forms); ``tests/reference.py`` keeps that code, and
``tests/test_trees_speed_paths.py`` compares the two.
"""

import numpy as np

from fastcf._kernels import kernel

__all__ = ["node_spread", "split_even", "split_best"]


@kernel()
def node_spread(alive, V, coef, tree_start):
    """Return (undecided, spread, vspread) per tree over its alive leaves.

    ``undecided[t]``: some column of the terms ``V`` differs between two alive leaves;
    ``spread[t]``: Σ_j (max − min) of the forms ``coef[:, j]``; ``vspread[t]``: Σ_s (max − min)
    of the terms. One pass over each tree's alive leaves for every column.
    """
    T = tree_start.shape[0]
    n = alive.shape[0]
    S = V.shape[1]
    F = coef.shape[1]
    undecided = np.zeros(T, dtype=np.bool_)
    spread = np.zeros(T)
    vspread = np.zeros(T)
    vmx = np.empty(S)
    vmn = np.empty(S)
    cmx = np.empty(F)
    cmn = np.empty(F)
    for t in range(T):
        stop = tree_start[t + 1] if t + 1 < T else n
        vmx[:] = -np.inf
        vmn[:] = np.inf
        cmx[:] = -np.inf
        cmn[:] = np.inf
        for i in range(tree_start[t], stop):
            if not alive[i]:
                continue
            for s in range(S):
                vmx[s] = max(vmx[s], V[i, s])
                vmn[s] = min(vmn[s], V[i, s])
            for j in range(F):
                cmx[j] = max(cmx[j], coef[i, j])
                cmn[j] = min(cmn[j], coef[i, j])
        vs = 0.0
        for s in range(S):
            if vmx[s] != vmn[s]:
                undecided[t] = True
            vs += vmx[s] - vmn[s]
        vspread[t] = vs
        sp = 0.0
        for j in range(F):
            sp += cmx[j] - cmn[j]
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
def split_best(
    alive, undecided, coef, leaf_tree, tree_start, ka, kb, leaf_estart, b_feat, e_ka, e_kb, D1
):  # fmt: skip
    """Return (f, j): the boundary at an edge of the most trees' best alive leaves; f = -1: none.

    A tree's best alive leaves score highest on Σ_j coef[:, j] (undecided trees only); each edge
    of their boxes inside the feature's range (the upper ``x_f <= b_kb``, the lower
    ``x_f <= b_{ka−1}``) gets the weight (best − worst score) of the leaf's tree; the edge of the
    largest total weight, the smallest key ``f·D1 + j`` among equals. ``leaf_estart``: leaf i's
    entries are ``leaf_estart[i] .. leaf_estart[i + 1] - 1`` (the entries sorted by leaf, so
    the best leaves' entries in leaf order are the entries in their order).
    """
    n = alive.shape[0]
    T = tree_start.shape[0]
    F = coef.shape[1]
    score = np.empty(n)
    top = np.full(T, -np.inf)
    low = np.full(T, np.inf)
    ids = np.empty(n, dtype=np.int64)  # the leaves alive in an undecided tree, in order
    m = 0
    for i in range(n):
        t = leaf_tree[i]
        if alive[i] and undecided[t]:
            s = 0.0
            for j in range(F):
                s += coef[i, j]
            score[i] = s
            top[t] = max(top[t], s)
            low[t] = min(low[t], s)
            ids[m] = i
            m += 1
    size = 0
    for q in range(m):
        i = ids[q]
        if score[i] == top[leaf_tree[i]]:
            size += leaf_estart[i + 1] - leaf_estart[i]
    keys = np.empty(2 * size, dtype=np.int64)
    weights = np.empty(2 * size)
    c = 0
    for side in range(2):  # (the upper edges first, then the lower ones: the sums' order)
        for q in range(m):
            i = ids[q]
            t = leaf_tree[i]
            if score[i] != top[t]:
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
    order = np.argsort(keys[:c], kind="mergesort")  # (stable: each key's weights in order)
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
