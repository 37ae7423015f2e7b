"""A branch and bound over interval ranges, bounded by the reductions (before any program).

The reductions of :mod:`fastcf._trees.reduce` at a cutoff ρ either prove that no cell of cost
<= ρ is in the target class, or leave per feature a range of intervals ``ka_f .. kb_f`` and
the alive leaves of every tree. A *node* of this search is a box of ranges: its reductions
prune it (empty), or decide it, or it is split in two at one boundary of one feature, and
each half is reduced again (depth first, the half holding x̄'s interval first).

A node is *decided* when the alive leaves of every tree carry the same terms: every cell of
the node of cost <= ρ in the target reaches alive leaves, so all of them have the same sums,
added in the same order. The node's cheapest point p (x̄ clipped to the ranges, feature by
feature) reaches the leaves of the cells it lies in; when each of them is alive, p has those
sums too, and p is the answer of the node if the library's arithmetic puts it in the target
(and it meets ``max_changes``: p changes no feature a point of the node keeps), else nothing
of the node is. A cheaper answer lowers ρ for the rest of the search.

The split, by two rules taken in turn (node by node; on the forests of the benchmark this
explored 30% fewer nodes than either rule alone):

* the undecided tree whose alive leaves spread most on the target's forms, at the boundary of
  one of its alive leaves' boxes that parts them most evenly (two disjoint boxes always have
  such a boundary), so each half has fewer alive leaves in that tree;
* the boundary at an edge of the most trees' best alive leaves (best on the target's forms;
  each tree weighted by the spread of its alive leaves), the leaves the margin bound of the
  reductions takes.

The search stops after ``budget`` nodes without a verdict; the caller then solves the program
(:mod:`fastcf._trees.build`) at the cutoff of the best answer found. Run to the end, it proves
the best answer found (or the incumbent) optimal: every cell of cost <= ρ lies in a node that
was pruned by a valid reduction or decided.

Where it pays. While a node cost a pass over every leaf box (0.1–1 ms), the search was switched
off for XGBoost, LightGBM and extra trees (their leaf terms, margins of both signs or random
thresholds, leave its bounds loose: HiGHS's program answered sooner). Since the reductions and
the split rules read the alive leaves only (:mod:`fastcf._kernels.tree_reduce`; a few percent
of the leaves in a node), it runs for every model: on the Adult-sized table of
``asv_bench/benchmarks/bench_trees.py`` (100 trees of depth 5, 20 queries, ``weights="mad"``,
exact, the same answers; 2026-11-26; the two runs of a model at the same time, one per core)
the median / p95 / total time with the search and without it were XGBoost 121 / 757 ms / 4.4 s
and 154 / 1 324 ms / 7.1 s, LightGBM 68 / 483 ms / 2.6 s and 143 / 1 552 ms / 7.6 s; extra
trees (12 queries) 253 ms / 76 s in all and 329 ms / 79 s (one query takes HiGHS over a minute
either way).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._kernels.tree_branch import node_spread, split_best, split_even
from .reduce import Costs, reduce, scratch

__all__ = ["Branched", "branch"]

#: nodes explored before the search gives the query to the program (``Program.budget``
#: overrides it). 40 000 since the per-node steps are kernels: on the benchmark's 20 queries
#: (2026-11-26, CPU time, the same answers) the mean per query went from 10 000 nodes to 40 000
#: as random forest 500 × 5 9.5 → 1.2 s (the queries that left the search took HiGHS tens of
#: seconds), gradient boosting 100 × 5 186 → 147 ms, random forest 100 × 5 unchanged within
#: noise (medians alike)
BUDGET = 40_000


class Branched(NamedTuple):
    """The verdict of :func:`branch`."""

    x: np.ndarray | None  # the cheapest answer found below the starting cutoff (None: none)
    cost: float  # its cost (inf: none)
    done: bool  # the search ran to the end: nothing cheaper exists (below the final cutoff)
    nodes: int  # nodes explored
    rho: float  # the final cutoff


def _split(st, red, spread):
    """Return (f, j): split feature f's range at boundary j (x_f <= b_j or not); None if none."""
    t = int(np.argmax(spread))
    if spread[t] <= 0.0:
        return None
    stop = st.tree_start[t + 1] if t + 1 < st.tree_start.size else st.leaf_ids.size
    e0, e1 = st.leaf_estart[st.tree_start[t]], st.leaf_estart[stop]  # (the tree's entries)
    f, j = split_even(
        t, red.alive, red.ka, red.kb, int(e0), int(e1), st.b_leaf, st.b_feat, st.e_ka, st.e_kb
    )
    return None if f < 0 else (int(f), int(j))


def _split_best(st, red, coef, undecided):
    """Return (f, j): the edge shared by the most trees' best alive leaves (None if none)."""
    f, j = split_best(
        red.ids, undecided, coef, st.leaf_tree, st.tree_start.size, red.ka, red.kb,
        st.leaf_estart, st.b_feat, st.e_ka, st.e_kb, st.n_y + 1,
    )  # fmt: skip
    return None if f < 0 else (int(f), int(j))


def branch(
    st, c: Costs, points, x0, rho, lforms, accept, q, budget=BUDGET, deadline=math.inf
) -> Branched:
    """Search the cells of cost <= ``rho`` for an answer (see the module docstring).

    Parameters
    ----------
    st : Structure
        The forest's program template.
    c : Costs
        The query's interval costs and box.
    points : ndarray
        Every interval's point closest to x̄ (flat, as ``c.flat``).
    x0 : ndarray of shape (D,)
        x̄.
    rho : float
        The starting cutoff (just below the incumbent's cost).
    lforms : LeafForms
        The target's forms per leaf (:func:`~fastcf._trees.reduce.leaf_forms`).
    accept : callable
        ``accept(x) -> bool``: the library's arithmetic puts x in the target (and τ).
    q : TreeQuery
        The query (its metric, weights and ``max_changes``).
    budget : int
        Nodes explored at most.
    deadline : float
        ``time.perf_counter()`` at which the search stops (without a verdict).
    """
    import time

    from .query import coord_cost

    fo = st.forest
    ioff = st.ioff[:-1]
    best, best_cost, nodes = None, math.inf, 0
    coef = lforms.coef
    V = np.ascontiguousarray(st.V, dtype=np.float64)
    work = scratch(st)
    stack = [(c.ka, c.kb, None, None)]
    while stack:
        if nodes >= budget or (nodes % 16 == 15 and time.perf_counter() > deadline):
            return Branched(best, best_cost, False, nodes, rho)
        ka, kb, alive, ids = stack.pop()
        nodes += 1
        red = reduce(st, Costs(c.flat, c.kbar, ka, kb), rho, lforms, alive, ids=ids, work=work)
        if red.empty:
            continue
        undecided, spread, vspread = node_spread(red.ids, st.leaf_tree, V, coef, st.tree_start.size)
        if not undecided.any():
            k = np.clip(c.kbar, red.ka, red.kb)
            p = points[ioff + k]
            leaves = st.leafpos[fo.leaves(p[None])[0]]
            if red.alive[leaves].all():
                cost = float(coord_cost(p - x0, q.w, q.metric).sum())
                fine = q.max_changes is None or np.count_nonzero(p != x0) <= q.max_changes
                if fine and cost <= rho and accept(p):
                    best, best_cost = p, cost
                    rho = cost * (1.0 - 1e-10)
                continue
            # p left the alive leaves of some tree: split that tree's alive leaves apart
            spread = np.where(red.alive[leaves], 0.0, 1.0 + vspread)
            spread[np.add.reduceat(red.alive.astype(np.int64), st.tree_start) < 2] = 0.0
        else:
            spread = np.where(undecided, spread + 1e-300, 0.0)
        cut = None
        if nodes % 2 and undecided.any():  # (the two rules in turn: fewest nodes, measured)
            cut = _split_best(st, red, coef, undecided)
        if cut is None:
            cut = _split(st, red, spread)
        if cut is None:  # pragma: no cover - disjoint boxes always split
            return Branched(best, best_cost, False, nodes, rho)
        f, j = cut
        lka, lkb = red.ka.copy(), red.kb.copy()
        lkb[f] = j
        rka, rkb = red.ka.copy(), red.kb.copy()
        rka[f] = j + 1
        left, right = (lka, lkb, red.alive, red.ids), (rka, rkb, red.alive, red.ids)
        if c.kbar[f] <= j:  # the half holding x̄'s interval is explored first
            stack += [right, left]
        else:
            stack += [left, right]
    return Branched(best, best_cost, True, nodes, rho)
