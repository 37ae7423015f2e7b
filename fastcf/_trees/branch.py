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

The loop. The nodes are explored by one kernel (:func:`fastcf._kernels.tree_search.search`),
the stack in arrays this function keeps, so that a call resumes where the last one stopped:
it comes back here to let the library's arithmetic judge a decided node's point (``accept``),
every 16 nodes when there is a deadline (to read the clock), and to enlarge its arrays. Each
node in Python had cost about as much again as its reductions (the wrapper's copies of every
leaf's flag, the node's NumPy calls: ~17 of ~37 µs a node on XGBoost).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .reduce import ROUNDS, Costs, scratch

__all__ = ["Branched", "branch"]

#: nodes explored before the search gives the query to the program (``Program.budget``
#: overrides it). 40 000 since the per-node steps are kernels: on the benchmark's 20 queries
#: (2026-11-26, CPU time, the same answers) the mean per query went from 10 000 nodes to 40 000
#: as random forest 500 × 5 9.5 → 1.2 s (the queries that left the search took HiGHS tens of
#: seconds), gradient boosting 100 × 5 186 → 147 ms, random forest 100 × 5 unchanged within
#: noise (medians alike). 150 000 since the node loop is one kernel (2026-11-27, the same
#: answers): the random forest 100 × 8's one query past 40 000 nodes ends the search at 60 767
#: nodes in 3.1 s instead of 96 s in HiGHS; on extra trees 100 × 5 (20 queries) six queries
#: pass 40 000 nodes, and they took 36.7, 1.8, 40.5, 19.3, 1.4, 3.8 s with 40 000 and 36.7,
#: 2.9, 28.2, 21.4, 1.2, 8.3 s with 150 000 (all 20: 113 s and 107 s; a test job on the other
#: core); no query of XGBoost, LightGBM or the forests 100 × 5 and 500 × 5 reaches 40 000.
BUDGET = 150_000
#: the search's first stack (entries) and pool (leaf lists, in units of the forest's leaves);
#: both double when full
STACK0, POOL0 = 64, 2


class Branched(NamedTuple):
    """The verdict of :func:`branch`."""

    x: np.ndarray | None  # the cheapest answer found below the starting cutoff (None: none)
    cost: float  # its cost (inf: none)
    done: bool  # the search ran to the end: nothing cheaper exists (below the final cutoff)
    nodes: int  # nodes explored
    rho: float  # the final cutoff


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

    from .._kernels.tree_reduce import Node
    from .._kernels.tree_search import CANDIDATE, GROW, STUCK, QueryCosts, Stack, search
    from .query import coord_cost

    fo = st.forest
    if fo.categories is not None:  # pragma: no cover - programs hold conditioned forests
        raise TypeError("the branch and bound walks threshold forests (categories conditioned)")
    D, n = c.kbar.size, st.leaf_ids.size
    best, best_cost = None, math.inf
    cap = STACK0
    # the kernel's records (fastcf._kernels.tree_search), made once per search: the stack, a
    # node's work arrays and the query's tables; the program's are made once per program
    state = np.array([1, 0, 0], dtype=np.int64)  # (entries, pool used, nodes)
    ka, kb, ref_a, ref_b = (np.empty((cap, D), np.int64) for _ in range(4))
    stack = Stack(
        state, ka=ka, kb=kb, ref_a=ref_a, ref_b=ref_b,
        seg=np.full(cap, -1, np.int64), seg_len=np.zeros(cap, np.int64),
        owner=np.zeros(cap, dtype=bool), pool=np.empty(POOL0 * n, dtype=np.int64),
        pool_cost=np.empty(POOL0 * n),
    )  # fmt: skip
    stack.ka[0], stack.kb[0] = c.ka, c.kb  # (the root: seg -1, the reachable leaves)
    node = Node(
        ka=np.empty(D, np.int64), kb=np.empty(D, np.int64), alive=np.zeros(n, dtype=bool),
        pruned=np.zeros(fo.n_trees, dtype=bool),
    )  # fmt: skip
    work = scratch(st)
    costs = QueryCosts(c.flat, np.asarray(c.kbar, dtype=np.int64), points)
    tab, forest_nodes = st.leaf_tables, st.forest_nodes
    while True:
        nodes = int(state[2])
        if state[0] == 0:
            return Branched(best, best_cost, True, nodes, rho)
        if nodes >= budget or (nodes % 16 == 15 and time.perf_counter() > deadline):
            return Branched(best, best_cost, False, nodes, rho)
        until = budget
        if deadline != math.inf:  # (back here at every 16th node, to read the clock)
            until = min(budget, nodes + 1 + (14 - nodes) % 16)
        code = search(
            stack, node, work, costs, tab, forest_nodes, lforms, float(rho), until, True, ROUNDS
        )
        if code == GROW:  # (twice as large: new arrays, so a new record; the same state)
            stack = Stack(state, *(np.concatenate([a, a]) for a in stack[1:]))
        elif code == CANDIDATE:
            x = work.point.copy()
            cost = float(coord_cost(x - x0, q.w, q.metric).sum())
            fine = q.max_changes is None or np.count_nonzero(x != x0) <= q.max_changes
            if fine and cost <= rho and accept(x):
                best, best_cost = x, cost
                rho = cost * (1.0 - 1e-10)
        elif code == STUCK:  # pragma: no cover - disjoint boxes always split
            return Branched(best, best_cost, False, int(state[2]), rho)
