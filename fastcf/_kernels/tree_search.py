"""The node loop of the branch and bound over interval ranges (:mod:`fastcf._trees.branch`).

One call explores nodes depth first — pop a box of ranges, reduce it
(:func:`~fastcf._kernels.tree_reduce.reduce_rounds`), decide it or split it
(:func:`~fastcf._kernels.tree_branch.node_spread`, :func:`~fastcf._kernels.tree_branch.split_best`,
:func:`~fastcf._kernels.tree_branch.split_even`) and push both halves — until it needs the
caller: a decided node's point whose leaves are all alive (the library's arithmetic, in Python,
judges it), a node count to stop at (the caller's budget and deadline), or more room.
The per-node work in Python it replaces (the reduction's wrapper, copies of every leaf's alive
flag, the node's NumPy calls) took about as long as the reductions themselves on XGBoost.

The stack lives in the caller's arrays (a :class:`Stack`), so a call resumes where the last
one stopped:

* ``state = [sp, top, nodes]``: entries on the stack, the used part of ``pool``, nodes explored;
* entry s: the ranges ``ka[s]``, ``kb[s]`` and the alive leaves of its parent's reduction,
  ``pool[seg[s] : seg[s] + seg_len[s]]`` (``seg[s] = -1``: the root, whose leaves are the
  reachable ones, ``leaf_ok``), with their costs ``pool_cost[...]`` at the parent's ranges
  ``ref_a[s]``, ``ref_b[s]`` (the child's reduction recomputes the cost of a leaf only where
  one of its features' ranges differs). Both halves of a split share their parent's segment;
  the one pushed first (popped last) frees it (``owner[s]``), so the pool is a stack too;
* ``node.alive``: all False between nodes (a node sets its leaves and clears them when done).

The same steps in the same order as the loop of NumPy calls it replaces (kept in
``tests/reference.py``, :func:`tree_branch_loop`, and compared node count for node count and
bit for bit in ``tests/test_trees_speed_paths.py``).
"""

from typing import NamedTuple

import numpy as np

from fastcf._kernels import kernel

from .tree_branch import node_spread, split_best, split_even
from .tree_reduce import reduce_rounds
from .tree_walk import walk

__all__ = [
    "search", "Stack", "QueryCosts", "ForestNodes", "DONE", "PAUSE", "CANDIDATE", "GROW", "STUCK",
]  # fmt: skip

#: the stack is empty: every node was explored
DONE = 0
#: ``state[2]`` reached ``until``
PAUSE = 1
#: a decided node's point (in ``p_out``) reaches alive leaves only: the caller judges it
CANDIDATE = 2
#: the stack or the pool is full: the caller enlarges them and calls again
GROW = 3
#: a node has no boundary to split at (disjoint boxes always have one)
STUCK = 4


class Stack(NamedTuple):
    """The search's stack of boxes (the module docstring), resumable between calls.

    The caller enlarges the arrays (every one but ``state``) when a call returns :data:`GROW`:
    new arrays, so a new record.

    Attributes
    ----------
    state : ndarray of int64, shape (3,)
        ``[sp, top, nodes]``: entries on the stack, the used part of ``pool``, nodes explored.
    ka, kb : ndarray of int64, shape (cap, D)
        Entry s's ranges.
    ref_a, ref_b : ndarray of int64, shape (cap, D)
        The ranges at which its parent's leaves' costs ``pool_cost`` were computed.
    seg, seg_len : ndarray of int64, shape (cap,)
        Its parent's alive leaves: ``pool[seg[s] : seg[s] + seg_len[s]]`` (``seg[s] = -1``:
        the root, the reachable leaves).
    owner : ndarray of bool, shape (cap,)
        The entry frees its segment of the pool when popped.
    pool : ndarray of int64
        The segments of alive leaves (a stack).
    pool_cost : ndarray of float64, shape of ``pool``
        Their costs beyond the lower bound.
    """

    state: np.ndarray
    ka: np.ndarray
    kb: np.ndarray
    ref_a: np.ndarray
    ref_b: np.ndarray
    seg: np.ndarray
    seg_len: np.ndarray
    owner: np.ndarray
    pool: np.ndarray
    pool_cost: np.ndarray


class QueryCosts(NamedTuple):
    """One query's interval tables (interval k of feature f at ``ioff[f] + k``).

    Attributes
    ----------
    flat : ndarray of float64
        The per-coordinate cost of each interval's point closest to x̄.
    kbar : ndarray of int64, shape (D,)
        x̄'s interval per feature.
    points : ndarray of float64, shape of ``flat``
        Each interval's point closest to x̄ (within the query's box).
    """

    flat: np.ndarray
    kbar: np.ndarray
    points: np.ndarray


class ForestNodes(NamedTuple):
    """A forest's nodes, as :func:`~fastcf._kernels.tree_walk.walk` reads them.

    Attributes
    ----------
    root : ndarray of int64, shape (T,)
        Each tree's root.
    is_leaf : ndarray of bool, shape (n_nodes,)
    feature : ndarray of int64, shape (n_nodes,)
    boundary : ndarray of float64, shape (n_nodes,)
        A split node's rule: left iff ``x[feature] <= boundary``.
    left, right : ndarray of int64, shape (n_nodes,)
        Its children.
    missing : ndarray of int8
        Where a NaN goes at each node (1: left), as the library routes it; empty where the
        model routes none.
    """

    root: np.ndarray
    is_leaf: np.ndarray
    feature: np.ndarray
    boundary: np.ndarray
    left: np.ndarray
    right: np.ndarray
    missing: np.ndarray


@kernel()
def search(stack, node, work, costs, tab, forest, forms, rho, until, margins, rounds):
    """Explore nodes until the caller is needed; return the code (module constants).

    Parameters
    ----------
    stack : Stack
        The stack (the module docstring), resumed and left for the next call.
    node : Node
        The popped node's work arrays (:class:`~fastcf._kernels.tree_reduce.Node`): its
        ranges, its alive leaves (all False between nodes) and the pruned trees.
    work : Scratch
        The reductions' work arrays (:class:`fastcf._trees.reduce.Scratch`); ``work.point``:
        a decided node's point, when the code is :data:`CANDIDATE`.
    costs : QueryCosts
        The query's interval costs and points.
    tab : LeafTables
        The program's leaf boxes and indexes (:class:`~fastcf._kernels.tree_reduce.LeafTables`).
    forest : ForestNodes
        The forest's nodes, to walk a decided node's point.
    forms : LeafForms
        The target's forms per leaf (:class:`fastcf._trees.reduce.LeafForms`).
    rho : float
        The cutoff (the caller lowers it between calls when it accepts an answer).
    until : int
        Stop before popping a node once ``state[2] >= until``.
    margins : bool
        True (the reductions' margin rule; an argument, not the literal, so that the
        reductions and the walk compile once for this kernel's calls and their own callers',
        with the same argument types).
    rounds : int
        The reductions' rounds at most (:func:`~fastcf._kernels.tree_reduce.reduce_rounds`).
    """
    # the records' arrays as locals, one a line: ``a, b, c, d = r.a, r.b, r.c, r.d`` builds a
    # tuple and unpacks it, and Numba counts the references of its arrays once more (with
    # such lines the branch and bound took 1-3 % longer a node and compiled slower)
    state = stack.state
    ka_st = stack.ka
    kb_st = stack.kb
    ra_st = stack.ref_a
    rb_st = stack.ref_b
    seg = stack.seg
    seg_len = stack.seg_len
    owner = stack.owner
    pool = stack.pool
    pcost = stack.pool_cost
    ka = node.ka
    kb = node.kb
    alive = node.alive
    ids = work.ids
    cost = work.cost
    ref_a = work.ref_a
    ref_b = work.ref_b
    p_out = work.point
    flat = costs.flat
    kbar = costs.kbar
    points = costs.points
    ioff = tab.ioff
    leaf_ok = tab.leaf_ok
    leaf_tree = tab.leaf_tree
    tree_start = tab.tree_start
    leafpos = tab.leafpos
    root = forest.root
    is_leaf = forest.is_leaf
    feature = forest.feature
    boundary = forest.boundary
    left = forest.left
    right = forest.right
    missing = forest.missing
    D = kbar.shape[0]
    n = alive.shape[0]
    T = tree_start.shape[0]
    cut = rho * (1.0 + 1e-12)  # (as the reductions' wrapper: sums in another order, ulps)
    cnt = np.empty(T, dtype=np.int64)
    while True:
        sp = state[0]
        if sp == 0:
            return DONE
        if state[2] >= until:
            return PAUSE
        s = sp - 1
        start = seg[s]
        room = state[1]
        if start >= 0 and owner[s]:
            room = start
        need = n if start < 0 else seg_len[s]
        if room + need > pool.shape[0] or sp + 1 > ka_st.shape[0]:
            return GROW
        # pop
        state[0] = s
        for f in range(D):  # (the node's arrays: the entry's ranges, its parent's reference)
            ka[f] = ka_st[s, f]
            kb[f] = kb_st[s, f]
            ref_a[f] = ra_st[s, f]
            ref_b[f] = rb_st[s, f]
        if start >= 0:
            given = pool[start : start + seg_len[s]]
            given_cost = pcost[start : start + seg_len[s]]
            for q in range(given.shape[0]):
                alive[given[q]] = True
        else:
            given = pool[0:0]
            given_cost = pcost[0:0]
            for i in range(n):
                alive[i] = leaf_ok[i]
        state[1] = room
        state[2] += 1
        nodes = state[2]
        empty, _, m = reduce_rounds(
            tab, flat, kbar, forms, node, work, given, given_cost, cut, margins, rounds
        )
        live = ids[:m]
        if empty:
            for q in range(m):
                alive[live[q]] = False
            continue
        undecided, spread, vspread = node_spread(live, leaf_tree, tab.V, forms.coef, T)
        any_undecided = False
        for t in range(T):
            if undecided[t]:
                any_undecided = True
        if not any_undecided:
            # the node's cheapest point: x̄'s interval clipped to the ranges
            nan = 0
            for f in range(D):
                k = min(max(kbar[f], ka[f]), kb[f])
                p_out[f] = points[ioff[f] + k]
                if np.isnan(p_out[f]):
                    nan += 1
            routed = missing.shape[0] > 0 and nan > 0
            reached = walk(
                p_out.reshape((1, D)), root, is_leaf, feature, boundary, left, right, missing,
                routed,
            )  # fmt: skip
            every = True
            for t in range(T):
                if not alive[leafpos[reached[0, t]]]:
                    every = False
            if every:
                for q in range(m):
                    alive[live[q]] = False
                return CANDIDATE
            # the point left the alive leaves of some tree: split such a tree's leaves apart
            for t in range(T):
                cnt[t] = 0
            for q in range(m):
                cnt[leaf_tree[live[q]]] += 1
            for t in range(T):
                if alive[leafpos[reached[0, t]]] or cnt[t] < 2:
                    spread[t] = 0.0
                else:
                    spread[t] = 1.0 + vspread[t]
        else:
            for t in range(T):
                spread[t] = spread[t] + 1e-300 if undecided[t] else 0.0
        f = -1
        j = -1
        if nodes % 2 == 1 and any_undecided:  # (the two rules in turn)
            f, j = split_best(
                live, undecided, forms.coef, leaf_tree, T, ka, kb, tab.leaf_estart, tab.b_feat,
                tab.e_ka, tab.e_kb, tab.key_base,
            )  # fmt: skip
        if f < 0:
            t = 0  # the first maximum (np.argmax: a NaN first)
            for u in range(T):
                if np.isnan(spread[u]):
                    t = u
                    break
                if spread[u] > spread[t]:
                    t = u
            if spread[t] > 0.0 or np.isnan(spread[t]):
                stop = tree_start[t + 1] if t + 1 < T else n
                f, j = split_even(
                    t, alive, ka, kb, tab.leaf_estart[tree_start[t]], tab.leaf_estart[stop],
                    tab.b_leaf, tab.b_feat, tab.e_ka, tab.e_kb,
                )  # fmt: skip
        if f < 0:  # pragma: no cover - disjoint boxes always split
            for q in range(m):
                alive[live[q]] = False
            return STUCK
        # push both halves over one copy of the alive leaves; x̄'s half is popped first
        top = state[1]
        for q in range(m):
            pool[top + q] = live[q]
            pcost[top + q] = cost[q]
            alive[live[q]] = False
        state[1] = top + m
        lower_is_left = kbar[f] > j  # the half pushed first (popped last)
        for side in range(2):
            u = s + side
            ka_st[u, :] = ka
            kb_st[u, :] = kb
            ra_st[u, :] = ref_a
            rb_st[u, :] = ref_b
            is_left = lower_is_left if side == 0 else not lower_is_left
            if is_left:
                kb_st[u, f] = j
            else:
                ka_st[u, f] = j + 1
            seg[u] = top
            seg_len[u] = m
            owner[u] = side == 0
        state[0] = s + 2
