"""Alternatives: Lawler's k-best scheme over the restrictions of one query, for every family.

The scheme of :mod:`fastcf._svm.lawler` (paper 003, Alg. 1), over restrictions of a query. A node
is a set Z of extra frozen features, its value the optimum with Z frozen. Popping the cheapest
node gives its answer, with changed set S = {s_1, ..., s_r}; every answer whose set does not
contain S leaves some s_i unchanged, so the children Z ∪ {s_i} cover every answer not dominated
by this one (an answer whose set contains S is dominated, and is never returned). Children are
pushed with their parent's value (a valid lower bound) and solved when first popped (lazy), and
each Z is visited once. Values only grow from parent to child, so answers come out in
increasing objective; an answer is returned when it succeeds and its changed set contains the
set of no answer returned before (actionable-recourse's flipsets). On small D the list equals
brute force over all 2^D restrictions (tests/test_sparse_diverse.py).

The scheme never looks inside a node's solve; each family passes its own:
:mod:`fastcf._linear.alternatives`, :mod:`fastcf._tabular.alternatives`,
:mod:`fastcf._alternatives`.
"""

from __future__ import annotations

import heapq
import itertools
import math

import numpy as np

__all__ = ["lawler"]


def lawler(solve_node, changed, accept, fmask0, max_nodes=10_000, returned=None):
    """Yield the alternatives of one row, in increasing value (lazy).

    Parameters
    ----------
    solve_node : callable
        ``solve_node(fmask) -> (sol, value)``: the row's optimum with ``fmask`` frozen.
    changed : callable
        ``changed(sol) -> bool mask`` of the features the answer changed.
    accept : callable
        ``accept(fmask, sol) -> Solution or None``: the node's answer as returned (solved in
        full, judged by the model), or None when it is not a counterfactual.
    fmask0 : ndarray of bool, shape (D,)
        The user's frozen features.
    max_nodes : int, default=10000
        Nodes solved before the enumeration stops.
    returned : callable, optional
        ``returned(final) -> bool mask`` of the features the accepted answer changed, where
        ``accept`` solves the node again (its answer can then change other features than the
        node's: the linear family's lean node solves, :func:`fastcf._linear.route.row_problem`).
        The rule is then checked, and the answer's set recorded, on the answer returned.

    Yields
    ------
    Solution
        Accepted answers whose changed set contains the set of no earlier answer.
    """
    tie = itertools.count()
    sol, val = solve_node(fmask0)
    heap = [(val, next(tie), fmask0, sol)]
    seen = {fmask0.tobytes()}
    taken = []  # changed sets of the answers returned
    solved = 1
    while heap:
        val, _, Z, sol = heapq.heappop(heap)
        if sol is None:  # a child pushed with its parent's value: solve it now
            if solved >= max_nodes:
                return
            sol, val = solve_node(Z)
            solved += 1
            if math.isfinite(val):
                heapq.heappush(heap, (val, next(tie), Z, sol))
            continue
        if not math.isfinite(val):
            continue
        S = changed(sol)
        if not any(np.all(S[t]) for t in taken):
            final = accept(Z, sol)
            if final is not None and returned is not None:
                # the rule holds for the answers returned: an answer solved again in full can
                # change other features than its node's (softmax region=True at logits ~5e12:
                # the lean node's LP, re-solved by its own rounds at a raised margin, moved
                # {3, 4}; the full answer kept the first LP vertex, {4}, and the child with 3
                # frozen returned {4} again: soak of test_fuzz_linear_few_changes, seed 507)
                F = returned(final)
                if any(np.all(F[t]) for t in taken):
                    final = None
                else:
                    S = F
            if final is not None:
                taken.append(np.flatnonzero(S))
                yield final
        for s in np.flatnonzero(S & ~Z):
            Z2 = Z.copy()
            Z2[s] = True
            key = Z2.tobytes()
            if key not in seen:
                seen.add(key)
                heapq.heappush(heap, (val, next(tie), Z2, None))
