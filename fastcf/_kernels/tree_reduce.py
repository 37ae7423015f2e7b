"""The fixed point of the exact reductions of a tree program (:mod:`fastcf._trees.reduce`).

One call runs the rounds of :func:`fastcf._trees.reduce.reduce` — interval costs, leaf costs,
the target's margins, the hulls of the alive leaves — in loops over the leaf-box entries,
with the same arithmetic in the same order as the vectorised code it replaces, except the two
sums over the features (the lower bound S) and over the trees (a margin's top), which are
sequential here: they differ by rounding only, well inside the slack the reductions keep (a
relative 1e-12 on the cutoff, the per-form tolerance).

Returns ``empty`` (1: no cell of cost <= ρ is classified as the target, 0 otherwise) and the
lower bound S; ``ka``, ``kb``, ``alive`` and ``pruned`` are updated in place.
"""

import numpy as np

from fastcf._kernels import kernel

__all__ = ["reduce_rounds"]


@kernel()
def reduce_rounds(
    flat, kbar, ka, kb, ioff, rho, ef, el, e_ka, e_kb, alive, tree, tree_start, coef, r, eps,
    margins, hull_order, hull_start, hull_tree, hull_feat, pruned, rounds,
):  # fmt: skip
    """Run at most ``rounds`` rounds of the reductions; return (empty, lb)."""
    D = kbar.shape[0]
    E = ef.shape[0]
    n = alive.shape[0]
    T = tree_start.shape[0]
    H = hull_start.shape[0]
    F = coef.shape[1]
    base = np.empty(D)
    a = np.empty(E, dtype=np.int64)
    b = np.empty(E, dtype=np.int64)
    cost = np.empty(n)
    miss_leaf = np.zeros(n, dtype=np.bool_)
    now = np.empty(n, dtype=np.bool_)
    mx = np.empty(T)
    count = np.empty(T, dtype=np.int64)
    nka = np.empty(D, dtype=np.int64)
    nkb = np.empty(D, dtype=np.int64)
    lb = 0.0
    for _ in range(rounds):
        for f in range(D):
            if ka[f] > kb[f]:
                return 1, lb
        lb = 0.0
        for f in range(D):
            k = min(max(kbar[f], ka[f]), kb[f])
            base[f] = flat[ioff[f] + k]
            lb += base[f]
        if lb > rho:
            return 1, lb
        # interval costs
        for f in range(D):
            room = rho - (lb - base[f])
            if flat[ioff[f] + ka[f]] > room or flat[ioff[f] + kb[f]] > room:
                first = -1
                last = -1
                for k in range(ka[f], kb[f] + 1):
                    if flat[ioff[f] + k] <= room:
                        if first < 0:
                            first = k
                        last = k
                ka[f] = first
                kb[f] = last
        # leaf costs
        for i in range(n):
            cost[i] = 0.0
            miss_leaf[i] = False
        for e in range(E):
            if not alive[el[e]]:  # (a dead leaf stays dead: its entries are not read again)
                continue
            f = ef[e]
            a[e] = max(e_ka[e], ka[f])
            b[e] = min(e_kb[e], kb[f])
            if a[e] > b[e]:
                miss_leaf[el[e]] = True
            else:
                k = min(max(kbar[f], a[e]), b[e])
                cost[el[e]] += flat[ioff[f] + k] - base[f]
        for i in range(n):
            now[i] = alive[i] and (lb + cost[i] <= rho) and not miss_leaf[i]
        # margins
        if margins:
            for j in range(F):
                top = 0.0
                for t in range(T):
                    stop = tree_start[t + 1] if t + 1 < T else n
                    m = -np.inf
                    for i in range(tree_start[t], stop):
                        if now[i] and coef[i, j] > m:
                            m = coef[i, j]
                    if m == -np.inf:
                        return 1, lb
                    mx[t] = m
                    top += m
                if top < r[j] - eps[j]:
                    return 1, lb
                for i in range(n):
                    if now[i] and coef[i, j] < r[j] - eps[j] - (top - mx[tree[i]]):
                        pruned[tree[i]] = True
                        now[i] = False
        for t in range(T):
            stop = tree_start[t + 1] if t + 1 < T else n
            c = 0
            for i in range(tree_start[t], stop):
                if now[i]:
                    c += 1
            if c == 0:
                return 1, lb
            count[t] = c
        changed = False
        for i in range(n):
            if now[i] != alive[i]:
                changed = True
            alive[i] = now[i]
        if H == 0:
            if not changed:
                break
            continue
        # hulls over the alive leaves of each (tree, feature) whose alive leaves all split on it
        for f in range(D):
            nka[f] = ka[f]
            nkb[f] = kb[f]
        for g in range(H):
            stop = hull_start[g + 1] if g + 1 < H else E
            on = 0
            amin = np.iinfo(np.int64).max
            bmax = -1
            for p in range(hull_start[g], stop):
                e = hull_order[p]
                if now[el[e]]:
                    on += 1
                    amin = min(amin, a[e])
                    bmax = max(bmax, b[e])
            if on == count[hull_tree[g]]:
                f = hull_feat[g]
                nka[f] = max(nka[f], amin)
                nkb[f] = min(nkb[f], bmax)
        for f in range(D):
            if nka[f] != ka[f] or nkb[f] != kb[f]:
                changed = True
            ka[f] = nka[f]
            kb[f] = nkb[f]
        if not changed:
            break
    return 0, lb
