"""The node loop of the branch and bound over interval ranges (:mod:`fastcf._trees.branch`).

One call explores nodes depth first — pop a box of ranges, reduce it
(:func:`~fastcf._kernels.tree_reduce.reduce_rounds`), decide it or split it
(:func:`~fastcf._kernels.tree_branch.node_spread`, :func:`~fastcf._kernels.tree_branch.split_best`,
:func:`~fastcf._kernels.tree_branch.split_even`) and push both halves — until it needs the
caller: a decided node's point whose leaves are all alive (the library's arithmetic, in Python,
judges it), a node count to stop at (the caller's budget and deadline), or more room.
The per-node work in Python it replaces (the reduction's wrapper, copies of every leaf's alive
flag, the node's NumPy calls) took about as long as the reductions themselves on XGBoost.

The stack lives in the caller's arrays, so a call resumes where the last one stopped:

* ``state = [sp, top, nodes]``: entries on the stack, the used part of ``pool``, nodes explored;
* entry s: the ranges ``ka_st[s]``, ``kb_st[s]`` and the alive leaves of its parent's
  reduction, ``pool[seg[s] : seg[s] + seg_len[s]]`` (``seg[s] = -1``: the root, whose leaves are
  the reachable ones, ``leaf_ok``), with their costs ``pcost[...]`` at the parent's ranges
  ``ra_st[s]``, ``rb_st[s]`` (the child's reduction recomputes the cost of a leaf only where
  one of its features' ranges differs). Both halves of a split share their parent's segment;
  the one pushed first (popped last) frees it (``owner[s]``), so the pool is a stack too;
* ``alive``: all False between nodes (a node sets its leaves and clears them when done).

The same steps in the same order as the loop of NumPy calls it replaces (kept in
``tests/reference.py``, :func:`tree_branch_loop`, and compared node count for node count and
bit for bit in ``tests/test_trees_speed_paths.py``).
"""

import numpy as np

from fastcf._kernels import kernel

from .tree_branch import node_spread, split_best, split_even
from .tree_reduce import reduce_rounds
from .tree_walk import walk

__all__ = ["search", "DONE", "PAUSE", "CANDIDATE", "GROW", "STUCK"]

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


@kernel()
def search(
    state, ka_st, kb_st, seg, seg_len, owner, pool, alive, p_out, until, rho, flat, kbar,
    points, ioff, ef, e_ka, e_kb, leaf_estart, leaf_ok, leaf_tree, tree_start, coef, r, eps,
    entry_group, hull_tree, hull_feat, rounds, V, b_leaf, leafpos, root, is_leaf, feature,
    boundary, left, right, missing, margins, ids, pruned, D1, leaf_fmask, pcost, ra_st, rb_st,
    cost, hull_start,
):  # fmt: skip
    """Explore nodes until the caller is needed; return the code (module constants).

    ``rho``: the cutoff (the caller lowers it between calls when it accepts an answer);
    ``until``: stop before popping a node once ``state[2] >= until``. The reduction's work
    arrays ``ids``, ``cost``, ``pruned`` as :func:`~fastcf._kernels.tree_reduce.reduce_rounds`;
    ``missing`` the forest's routing of a NaN (empty: none). ``margins``: True (the reductions'
    margin rule; an argument, not the literal, so that the reductions and the walk compile
    once for this kernel's calls and their own callers', with the same argument types).
    """
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
        ka = ka_st[s].copy()
        kb = kb_st[s].copy()
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
        ref_a = ra_st[s].copy()
        ref_b = rb_st[s].copy()
        state[1] = room
        state[2] += 1
        nodes = state[2]
        empty, _, m = reduce_rounds(
            flat, kbar, ka, kb, ioff, cut, ef, e_ka, e_kb, leaf_estart, alive, leaf_tree,
            tree_start, coef, r, eps, margins, entry_group, hull_tree, hull_feat, pruned, rounds,
            given, given_cost, ids, cost, ref_a, ref_b, leaf_fmask, hull_start,
        )  # fmt: skip
        live = ids[:m]
        if empty:
            for q in range(m):
                alive[live[q]] = False
            continue
        undecided, spread, vspread = node_spread(live, leaf_tree, V, coef, T)
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
                live, undecided, coef, leaf_tree, T, ka, kb, leaf_estart, ef, e_ka, e_kb, D1
            )
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
                    t, alive, ka, kb, leaf_estart[tree_start[t]], leaf_estart[stop], b_leaf,
                    ef, e_ka, e_kb,
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
