"""The per-node steps of the branch and bound over interval ranges (:mod:`fastcf._trees.branch`).

Loops over the leaves and leaf-box entries of one node, in place of NumPy passes that allocate
an array of every leaf per node (``reduceat`` over masked copies, ``unique``, ``bincount``):

* :func:`node_spread` — per tree, whether its alive leaves carry different terms, and how far
  apart they are on the target's forms and on the terms;
* :func:`split_even` — the boundary that parts one tree's alive leaves most evenly;
* :func:`split_best` — the boundary at an edge of the most trees' best alive leaves.

The choices are those of the NumPy code they replace (the same candidates, the same first
maximum, the same sums in the same order; a leaf's score sums its forms sequentially, as NumPy
does below eight forms); ``tests/reference.py`` keeps that code, and
``tests/test_trees_speed_paths.py`` compares the two.
"""

import numpy as np

from fastcf._kernels import kernel

__all__ = ["node_spread", "split_even", "split_best"]


@kernel()
def _alive_range(alive, M, col, start, stop):
    """Return (max, min) of column ``col`` of ``M`` over the alive rows ``start:stop``."""
    mx = -np.inf
    mn = np.inf
    for i in range(start, stop):
        if alive[i]:
            mx = max(mx, M[i, col])
            mn = min(mn, M[i, col])
    return mx, mn


@kernel()
def node_spread(alive, V, coef, tree_start):
    """Return (undecided, spread, vspread) per tree over its alive leaves.

    ``undecided[t]``: some column of the terms ``V`` differs between two alive leaves;
    ``spread[t]``: Σ_j (max − min) of the forms ``coef[:, j]``; ``vspread[t]``: Σ_s (max − min)
    of the terms.
    """
    T = tree_start.shape[0]
    n = alive.shape[0]
    S = V.shape[1]
    F = coef.shape[1]
    undecided = np.zeros(T, dtype=np.bool_)
    spread = np.zeros(T)
    vspread = np.zeros(T)
    for t in range(T):
        stop = tree_start[t + 1] if t + 1 < T else n
        vs = 0.0
        for s in range(S):
            mx, mn = _alive_range(alive, V, s, tree_start[t], stop)
            if mx != mn:
                undecided[t] = True
            vs += mx - mn
        vspread[t] = vs
        sp = 0.0
        for j in range(F):
            mx, mn = _alive_range(alive, coef, j, tree_start[t], stop)
            sp += mx - mn
        spread[t] = sp
    return undecided, spread, vspread


@kernel()
def split_even(t, alive, ka, kb, e_start, e_stop, b_leaf, b_feat, e_ka, e_kb):
    """Return (f, j) parting tree ``t``'s alive leaves most evenly at ``x_f <= b_j``; f = -1: none.

    ``e_start:e_stop``: the tree's leaf-box entries (sorted by leaf). A candidate is an alive
    entry whose box ends inside its feature's range; its score is the smaller of the number of
    alive entries of that feature ending at or before it and starting after it.
    """
    best_f = -1
    best_j = -1
    best = -1
    for p in range(e_start, e_stop):
        if not alive[b_leaf[p]]:
            continue
        f = b_feat[p]
        cj = min(e_kb[p], kb[f])
        if cj >= kb[f]:
            continue
        left = 0
        right = 0
        for e in range(e_start, e_stop):
            if alive[b_leaf[e]] and b_feat[e] == f:
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
    alive, undecided, coef, leaf_tree, tree_start, ka, kb, b_leaf, b_feat, e_ka, e_kb, D1
):  # fmt: skip
    """Return (f, j): the boundary at an edge of the most trees' best alive leaves; f = -1: none.

    A tree's best alive leaves score highest on Σ_j coef[:, j] (undecided trees only); each edge
    of their boxes inside the feature's range (the upper ``x_f <= b_kb``, the lower
    ``x_f <= b_{ka−1}``) gets the weight (best − worst score) of the leaf's tree; the edge of the
    largest total weight, the smallest key ``f·D1 + j`` among equals.
    """
    n = alive.shape[0]
    T = tree_start.shape[0]
    F = coef.shape[1]
    score = np.empty(n)
    on = np.zeros(n, dtype=np.bool_)
    top = np.full(T, -np.inf)
    low = np.full(T, np.inf)
    for i in range(n):
        t = leaf_tree[i]
        on[i] = alive[i] and undecided[t]
        s = 0.0
        for j in range(F):
            s += coef[i, j]
        score[i] = s if on[i] else -np.inf
        top[t] = max(top[t], score[i])
        if on[i]:
            low[t] = min(low[t], score[i])
    E = b_leaf.shape[0]
    keys = np.empty(2 * E, dtype=np.int64)
    weights = np.empty(2 * E)
    m = 0
    for side in range(2):  # (the upper edges first, then the lower ones: the sums' order)
        for e in range(E):
            i = b_leaf[e]
            t = leaf_tree[i]
            if not (on[i] and score[i] == top[t]):
                continue
            f = b_feat[e]
            if side == 0:
                b = min(e_kb[e], kb[f])
                if b < kb[f]:
                    keys[m] = f * D1 + b
                    weights[m] = top[t] - low[t]
                    m += 1
            else:
                a = max(e_ka[e], ka[f])
                if a > ka[f]:
                    keys[m] = f * D1 + a - 1
                    weights[m] = top[t] - low[t]
                    m += 1
    if m == 0:
        return -1, -1
    order = np.argsort(keys[:m], kind="mergesort")  # (stable: each key's weights in order)
    best_key = -1
    best = -np.inf
    p = 0
    while p < m:
        k = keys[order[p]]
        total = 0.0
        while p < m and keys[order[p]] == k:
            total += weights[order[p]]
            p += 1
        if total > best:
            best = total
            best_key = k
    return best_key // D1, best_key % D1
