"""The fixed point of the exact reductions of a tree program (:mod:`fastcf._trees.reduce`).

One call runs the rounds of :func:`fastcf._trees.reduce.reduce` — interval costs, leaf costs,
the target's margins, the range ends, the hulls of the alive leaves — in loops over the *alive*
leaves and their leaf-box entries only (a list of them, kept in leaf order and shortened round
by round): in a node of the branch and bound a few percent of the leaves are alive (6% on the
random forest 100 × 5 of ``bench_trees``, 1.4% at depth 8), and a pass over every leaf box cost
6 to 7 times the work. The same arithmetic in the same order as the pass over every entry it
replaces (``tests/reference.py``, :func:`tree_reduce_rounds`, compared on the nodes of real
searches in ``tests/test_trees_speed_paths.py``): a leaf's cost sums its entries in order, a
margin's top sums the trees in order; a hull is a min/max. Two things are not redone: a leaf's
cost where no range it reads moved since it was computed (a node of the branch and bound
receives its parent's costs), and the hulls of a tree that lost no leaf (its hulls already
hold); on the benchmark's XGBoost 100 × 5 (70 000 nodes) they cut the exact mode's time by a
third, the same nodes.

Returns ``empty`` (1: no cell of cost <= ρ is classified as the target, 0 otherwise) and the
lower bound S; the node's ranges, alive leaves and pruned trees (a :class:`Node`) are updated
in place. The program's arrays come in one record, :class:`LeafTables` (made once per program).
"""

from typing import NamedTuple

import numpy as np

from fastcf._kernels import kernel

__all__ = ["reduce_rounds", "LeafTables", "Node"]


class LeafTables(NamedTuple):
    """A forest program's leaf boxes and their indexes, as the tree kernels read them.

    One record per program (:attr:`fastcf._trees.structure.Structure.leaf_tables`, made once
    of the program's own arrays), passed to :func:`reduce_rounds` and
    :func:`~fastcf._kernels.tree_search.search` instead of its sixteen arrays and one number
    each. The leaves are numbered ``0 .. n - 1`` in tree order; a leaf's box is a list of
    *entries* (one per feature on its path), sorted by leaf.

    Attributes
    ----------
    b_feat : ndarray of int64, shape (n_entries,)
        The feature of each entry.
    e_ka, e_kb : ndarray of int64, shape (n_entries,)
        The first and last interval of its feature that the entry's box holds.
    leaf_estart : ndarray of int64, shape (n + 1,)
        Leaf i's entries are ``leaf_estart[i] .. leaf_estart[i + 1] - 1``.
    b_leaf : ndarray of int64, shape (n_entries,)
        The leaf of each entry.
    leaf_ok : ndarray of bool, shape (n,)
        The leaves some input of the domain reaches (an empty box: none does).
    leaf_tree : ndarray of int64, shape (n,)
        The tree of each leaf.
    tree_start : ndarray of int64, shape (T,)
        Tree t's first leaf (a tree's leaves are consecutive).
    leaf_fmask : ndarray of int64, shape (n,)
        The bits ``f mod 64`` of the features of leaf i's entries.
    entry_group : ndarray of int64, shape (n_entries,)
        The (tree, feature) group of each entry.
    hull_tree, hull_feat : ndarray of int64, shape (n_groups,)
        The tree and the feature of each group.
    hull_start : ndarray of int64, shape (T + 1,)
        Tree t's groups are ``hull_start[t] .. hull_start[t + 1] - 1``.
    ioff : ndarray of int64, shape (D + 1,)
        Interval k of feature f is ``ioff[f] + k`` in a query's flat tables.
    V : ndarray of float64, shape (n, S), C-contiguous
        Each leaf's terms (its values).
    leafpos : ndarray of int64, shape (n_nodes,)
        The leaf number of each node of the forest (-1: a split node).
    key_base : int
        ``n_y + 1`` (above every interval index): the split rule's key of boundary j of
        feature f is ``f·key_base + j``
        (:func:`~fastcf._kernels.tree_branch.split_best`).
    """

    b_feat: np.ndarray
    e_ka: np.ndarray
    e_kb: np.ndarray
    leaf_estart: np.ndarray
    b_leaf: np.ndarray
    leaf_ok: np.ndarray
    leaf_tree: np.ndarray
    tree_start: np.ndarray
    leaf_fmask: np.ndarray
    entry_group: np.ndarray
    hull_tree: np.ndarray
    hull_feat: np.ndarray
    hull_start: np.ndarray
    ioff: np.ndarray
    V: np.ndarray
    leafpos: np.ndarray
    key_base: int


class Node(NamedTuple):
    """The box a call of :func:`reduce_rounds` reduces, updated in place.

    Attributes
    ----------
    ka, kb : ndarray of int64, shape (D,)
        The range of intervals ``ka[f] .. kb[f]`` of each feature.
    alive : ndarray of bool, shape (n,)
        The leaves a cell of the box may reach (the others are False).
    pruned : ndarray of bool, shape (T,)
        Set for a tree some leaf of which died by a margin (not by a cost).
    """

    ka: np.ndarray
    kb: np.ndarray
    alive: np.ndarray
    pruned: np.ndarray


@kernel()
def reduce_rounds(tab, flat, kbar, forms, node, work, given, given_cost, rho, margins, rounds):
    """Run at most ``rounds`` rounds of the reductions; return (empty, lb, m).

    Parameters
    ----------
    tab : LeafTables
        The program's leaf boxes and indexes.
    flat : ndarray of float64
        The query's interval costs (interval k of feature f at ``tab.ioff[f] + k``).
    kbar : ndarray of int64, shape (D,)
        x̄'s interval per feature.
    forms : LeafForms
        The target's forms per leaf (:class:`fastcf._trees.reduce.LeafForms`: ``coef``, ``r``
        and the tolerances ``tol``); read only where ``margins``.
    node : Node
        The box, its alive leaves and the pruned trees: updated in place.
    work : Scratch
        Work arrays (:class:`fastcf._trees.reduce.Scratch`): ``ids`` and ``cost`` (one per
        leaf), ``ref_a`` and ``ref_b`` (one per feature); at the end (when not empty)
        ``ids[:m]`` holds the alive leaves, ``cost[:m]`` their costs at the ranges
        ``ref_a .. ref_b``.
    given : ndarray of int64
        The alive leaves in order, if the caller has them (read only), else an empty array
        (they are listed from ``node.alive``).
    given_cost : ndarray of float64
        If not empty: the costs of ``given`` beyond ``lb`` at the ranges ``work.ref_a ..
        work.ref_b`` (read only), where none of them misses the ranges (a parent node's alive
        leaves).
    rho : float
        The cutoff.
    margins : bool
        Run the margins' rules (else costs and hulls only).
    rounds : int
        Rounds at most.

    Notes
    -----
    A leaf's cost is recomputed only where a feature of its entries changed its range since
    its cost was known (the other terms are the same numbers, summed in the same order). A
    tree's hulls are recomputed only where it lost a leaf: a hull is the range its alive
    leaves' boxes span, and a tree whose alive leaves did not change since its hulls last
    shrank the ranges (this call's rounds, or the parent's reductions when ``given_cost`` is
    given) shrinks them no further.
    """
    # the records' arrays as locals, one a line: ``a, b, c, d = r.a, r.b, r.c, r.d`` builds a
    # tuple and unpacks it, and Numba counts the references of its arrays once more (with
    # such lines the branch and bound took 1-3 % longer a node and compiled slower)
    ef = tab.b_feat
    e_ka = tab.e_ka
    e_kb = tab.e_kb
    leaf_estart = tab.leaf_estart
    tree = tab.leaf_tree
    tree_start = tab.tree_start
    leaf_fmask = tab.leaf_fmask
    entry_group = tab.entry_group
    hull_tree = tab.hull_tree
    hull_feat = tab.hull_feat
    hull_start = tab.hull_start
    ioff = tab.ioff
    coef = forms.coef
    r = forms.r
    eps = forms.tol
    ka = node.ka
    kb = node.kb
    alive = node.alive
    pruned = node.pruned
    ids = work.ids
    cost = work.cost
    ref_a = work.ref_a
    ref_b = work.ref_b
    D = kbar.shape[0]
    n = alive.shape[0]
    T = tree_start.shape[0]
    H = hull_tree.shape[0]
    F = coef.shape[1]
    base = np.empty(D)
    m = 0  # the alive leaves, in order: ids[:m]
    fresh = True  # no leaf's cost is known yet
    if given.shape[0]:
        for p in range(given.shape[0]):
            ids[p] = given[p]
        m = given.shape[0]
        if given_cost.shape[0] == m:
            for p in range(m):
                cost[p] = given_cost[p]
            fresh = False
    else:
        for i in range(n):
            if alive[i]:
                ids[m] = i
                m += 1
    now = np.empty(n, dtype=np.bool_)  # now[p]: leaf ids[p] stays alive this round
    out = np.zeros(n, dtype=np.bool_)  # out[p]: its box misses the ranges ref_a .. ref_b
    mx = np.empty(T)
    count = np.empty(T, dtype=np.int64)
    on = np.empty(H, dtype=np.int64)
    amin = np.empty(H, dtype=np.int64)
    bmax = np.empty(H, dtype=np.int64)
    nka = np.empty(D, dtype=np.int64)
    nkb = np.empty(D, dtype=np.int64)
    lost = np.zeros(T, dtype=np.bool_)  # the trees that lost an alive leaf since their hulls
    # the range ends' rule (margins only): per form and tree its best alive leaf and the gap to
    # the second best (at the form's margin test), per form the top and its scale; per feature
    # the gaps summed at each end and the new ends
    gap = np.empty(F * T if margins else 0)
    best_leaf = np.empty(F * T if margins else 0, dtype=np.int64)
    tops = np.empty(F)
    scales = np.empty(F)
    lo_gap = np.empty(D if margins else 0)
    hi_gap = np.empty(D if margins else 0)
    new_ends = np.empty(2 * D if margins else 0, dtype=np.int64)
    every = fresh  # (the first round of a call without the parent's costs: every tree)
    big = np.iinfo(np.int64).max
    lb = 0.0
    for _ in range(rounds):
        for f in range(D):
            if ka[f] > kb[f]:
                return 1, lb, m
        lb = 0.0
        for f in range(D):
            k = min(max(kbar[f], ka[f]), kb[f])
            base[f] = flat[ioff[f] + k]
            lb += base[f]
        if lb > rho:
            return 1, lb, m
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
        # leaf costs (of the leaves with an entry on a feature whose range moved)
        moved = 0
        for f in range(D):
            if ka[f] != ref_a[f] or kb[f] != ref_b[f]:
                moved |= np.int64(1) << (f % 64)
            ref_a[f] = ka[f]
            ref_b[f] = kb[f]
        for p in range(m):
            i = ids[p]
            if fresh or leaf_fmask[i] & moved:
                c = 0.0
                miss = False
                for e in range(leaf_estart[i], leaf_estart[i + 1]):
                    f = ef[e]
                    a = max(e_ka[e], ka[f])
                    b = min(e_kb[e], kb[f])
                    if a > b:
                        miss = True
                    else:
                        k = min(max(kbar[f], a), b)
                        c += flat[ioff[f] + k] - base[f]
                cost[p] = c
                out[p] = miss
            now[p] = (lb + cost[p] <= rho) and not out[p]
        fresh = False
        # margins (the trees' leaves are consecutive: the list walks them tree by tree)
        if margins:
            for j in range(F):
                top = 0.0
                p = 0
                scale = 0.0
                for t in range(T):
                    stop = tree_start[t + 1] if t + 1 < T else n
                    best = -np.inf
                    second = -np.inf
                    q = -1
                    while p < m and ids[p] < stop:
                        if now[p]:
                            v = coef[ids[p], j]
                            if v > best:
                                second = best
                                best = v
                                q = ids[p]
                            elif v > second:
                                second = v
                        p += 1
                    if best == -np.inf:
                        return 1, lb, m
                    mx[t] = best
                    top += best
                    scale += abs(best)
                    gap[j * T + t] = best - second
                    best_leaf[j * T + t] = q
                tops[j] = top
                scales[j] = scale
                if top < r[j] - eps[j]:
                    return 1, lb, m
                for p in range(m):
                    i = ids[p]
                    if now[p] and coef[i, j] < r[j] - eps[j] - (top - mx[tree[i]]):
                        pruned[tree[i]] = True
                        now[p] = False
        p = 0
        for t in range(T):
            stop = tree_start[t + 1] if t + 1 < T else n
            c = 0
            while p < m and ids[p] < stop:
                if now[p]:
                    c += 1
                p += 1
            if c == 0:
                return 1, lb, m
            count[t] = c
        # the list shortened to the leaves still alive
        changed = False
        kept = 0
        for p in range(m):
            if now[p]:
                ids[kept] = ids[p]
                cost[kept] = cost[p]
                out[kept] = out[p]
                kept += 1
            else:
                alive[ids[p]] = False
                lost[tree[ids[p]]] = True
                changed = True
        m = kept
        if margins and H > 0:
            empty, ends_moved = _margin_ends(
                r, eps, ka, kb, ef, e_ka, e_kb, leaf_estart, gap, best_leaf, tops, scales,
                lo_gap, hi_gap, new_ends,
            )  # fmt: skip
            if empty:
                return 1, lb, m
            changed |= ends_moved
        if H == 0:
            if not changed:
                break
            continue
        # hulls over the alive leaves of each (tree, feature) whose alive leaves all split on it
        # (a hull of the boxes' own ends: max(ka, min ends) is the hull of the clipped boxes)
        for f in range(D):
            nka[f] = ka[f]
            nkb[f] = kb[f]
        p = 0
        for t in range(T):
            stop = tree_start[t + 1] if t + 1 < T else n
            p0 = p
            while p < m and ids[p] < stop:
                p += 1
            if not (every or lost[t]):
                continue
            lost[t] = False
            for g in range(hull_start[t], hull_start[t + 1]):
                on[g] = 0
                amin[g] = big
                bmax[g] = -1
            for q in range(p0, p):
                i = ids[q]
                for e in range(leaf_estart[i], leaf_estart[i + 1]):
                    g = entry_group[e]
                    on[g] += 1
                    amin[g] = min(amin[g], e_ka[e])
                    bmax[g] = max(bmax[g], e_kb[e])
            for g in range(hull_start[t], hull_start[t + 1]):
                if on[g] == count[t]:
                    f = hull_feat[g]
                    nka[f] = max(nka[f], amin[g])
                    nkb[f] = min(nkb[f], bmax[g])
        every = False
        for f in range(D):
            if nka[f] != ka[f] or nkb[f] != kb[f]:
                changed = True
            ka[f] = nka[f]
            kb[f] = nkb[f]
        if not changed:
            break
    return 0, lb, m


@kernel(inline="always")
def _margin_ends(
    r, eps, ka, kb, ef, e_ka, e_kb, leaf_estart, gap, best_leaf, tops, scales, lo_gap, hi_gap,
    new_ends,
):  # fmt: skip
    """Move each feature's range ends past the intervals where a form cannot be met.

    For form j and tree t (``gap``, ``best_leaf`` at ``j·T + t``): the tree's best leaf
    among those alive at the form's margin test (the first of the largest ``coef[:, j]``) and
    its gap to the second best there (0 at a tie; inf for a lone leaf); ``tops[j]`` the sum of
    the trees' best, ``scales[j]`` of their magnitudes. A cell whose value of feature f lies in
    the range's lower end ``ka_f`` reaches in tree t a leaf whose box holds ``ka_f``; where the
    best leaf's box does not, that leaf is worth at most the second best, so the form is at
    most the top less the gaps of those trees. Below ``r − eps`` (with room for the rounding of
    the sums), no cell of the lower end qualifies, nor of any interval below the smallest lower
    edge of those best boxes: the range starts there. The upper end alike. Repeated (the same
    best leaves and gaps) until no end moves, at most 8 times per form; skipped for a form
    whose gaps all together cannot pass the room. Returns (empty, moved). (The arrays of
    :func:`reduce_rounds`'s records, not the records: a record passed down the rounds' loop
    would stay alive through it, and every array of a live record is one more reference count
    at each of the loop's exits.)
    """
    D = ka.shape[0]
    F = tops.shape[0]
    T = gap.shape[0] // max(F, 1)
    moved = False
    for j in range(F):
        thr = r[j] - eps[j]
        # the sums of gaps are of terms >= 0 (relative rounding <= T·2⁻⁵³), the top is within
        # T·2⁻⁵³·scale: 1e-10 of the scale covers both for any forest of fewer than 10⁵ trees
        room = (tops[j] - thr) + 1e-10 * (scales[j] + abs(thr))
        total = 0.0
        for t in range(T):
            if gap[j * T + t] > 0.0:
                total += gap[j * T + t]
        if not total > room:  # (a feature's sum takes some of these terms, in this order)
            continue
        for _ in range(8):
            for f in range(D):
                lo_gap[f] = 0.0
                hi_gap[f] = 0.0
                new_ends[f] = kb[f] + 1
                new_ends[D + f] = ka[f] - 1
            for t in range(T):
                g = gap[j * T + t]
                if not g > 0.0:
                    continue
                i = best_leaf[j * T + t]
                for e in range(leaf_estart[i], leaf_estart[i + 1]):
                    f = ef[e]
                    if e_ka[e] > ka[f]:
                        lo_gap[f] += g
                        new_ends[f] = min(new_ends[f], e_ka[e])
                    if e_kb[e] < kb[f]:
                        hi_gap[f] += g
                        new_ends[D + f] = max(new_ends[D + f], e_kb[e])
            again = False
            for f in range(D):
                if lo_gap[f] > room:
                    ka[f] = new_ends[f]
                    again = True
                if hi_gap[f] > room:
                    kb[f] = new_ends[D + f]
                    again = True
                if ka[f] > kb[f]:
                    return True, True
            if not again:
                break
            moved = True
    return False, moved
