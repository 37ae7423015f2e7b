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

The order returned is that of the costs the user sees (``cost=``), not of the node values: a
node's value can differ from its answer's returned cost by rounding (the linear family's lean
value sits up to ~3e-8 above the distance returned) or by the answer's own re-solve (a margin
step). Answers are held until no node left can hold one cheaper by more than a slack of 1e-6
relative (the order is non-decreasing up to that slack), and released cheapest first; an
answer within the slack of its node's value is released at once (no node left is cheaper
than its node); one released after a cheaper one whose set it contains
is dropped (the rule holds on the list returned). An inexact node solve (LGMLVQ's penalty CCP)
can answer a child well below its parent: such a larger inversion is not reordered (its
answer is still returned, after the dearer one), as the first answer stays ``explain``'s.
Families whose node value is the distance returned (trees, LVQ, networks: a node is
``explain``'s answer) pass no ``cost``: their answers are returned as soon as accepted.

The scheme stops before its next node solve at ``max_nodes`` solves or at a ``deadline``
(``time.perf_counter()``, :func:`fastcf._validation.deadline` of the call's ``time_limit=``),
and returns the answers accepted so far: the enumeration's :class:`Stop` records which limit,
and marks the answers returned after (and, for a list, with) the stop with
``info["enumeration_stopped"]`` = ``"max_nodes"`` or ``"time_limit"``. An enumeration that ran
out of nodes, or gave ``k`` answers first, marks none.

The scheme never looks inside a node's solve; each family passes its own:
:mod:`fastcf._linear.alternatives`, :mod:`fastcf._tabular.alternatives`,
:mod:`fastcf._alternatives`.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time

import numpy as np

__all__ = ["Stop", "lawler"]


def lawler(
    solve_node, changed, accept, fmask0, max_nodes=10_000, returned=None, cost=None,
    deadline=math.inf, stop=None,
):  # fmt: skip
    """Yield the alternatives of one row, in increasing cost (lazy).

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
        The rule is then checked, the answer's set recorded, and the node's children
        branched, on the answer returned (on its set also where it is dominated).
    cost : callable, optional
        ``cost(final) -> float``: the accepted answer's cost as returned (its distance), where
        it can differ from its node's value. The answers are then yielded in non-decreasing
        cost up to a slack of 1e-6 relative, ties (and inversions of more than the slack) in
        the order of the scheme (see the module's notes); an answer whose cost exceeds its
        node's value by more than the slack waits for the nodes below its cost. Default: the
        node's value is the cost (each answer returned at once).
    deadline : float, default=inf
        ``time.perf_counter()`` past which no further node is solved (as at ``max_nodes``).
    stop : callable, optional
        ``stop(reason)``, called once when the scheme stops with nodes left unsolved:
        ``reason`` is ``"max_nodes"`` or ``"time_limit"`` (a :class:`Stop`).

    Yields
    ------
    Solution
        Accepted answers whose changed set contains the set of no earlier answer.
    """
    tie = itertools.count()
    sol, val = solve_node(fmask0)
    heap = [(val, next(tie), fmask0, sol)]
    seen = {fmask0.tobytes()}
    taken = []  # changed sets of the answers accepted (held or returned)
    held = []  # (cost, seq, final, set): accepted answers not yet returned, a heap
    out = []  # changed sets of the answers returned
    last = -math.inf  # the cost of the last answer returned
    solved = 1
    # without cost= an answer's cost is its node's value: no node left is below it (slack 0,
    # each answer returned as soon as it is accepted, the scheme's own order)
    slack = _slack if cost is not None else (lambda v: 0.0)

    def release(bound):
        # return the held answers whose cost is at most ``bound`` (the least value of a node
        # left) up to the slack, cheapest first: an answer whose cost is its node's value up
        # to rounding (the linear family's lean values) is returned at once, without waiting
        # for its children; one whose re-solve raised its cost waits for the nodes below it
        nonlocal last
        while held and (held[0][0] <= bound + slack(bound) or bound == math.inf):
            c, _, final, S = heapq.heappop(held)
            if any(np.all(S[t]) for t in out):
                continue  # a cheaper answer released before it has a subset of its set
            out.append(np.flatnonzero(S))
            last = max(last, c)
            yield final

    while heap:
        if held:
            yield from release(heap[0][0])  # no node left below the heap's least value
        val, _, Z, sol = heapq.heappop(heap)
        if sol is None:  # a child pushed with its parent's value: solve it now
            if solved >= max_nodes or time.perf_counter() > deadline:
                if stop is not None:
                    stop("max_nodes" if solved >= max_nodes else "time_limit")
                break
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
                # The children branch on F either way: every answer of the node whose set
                # contains F is dominated (by this answer, or by the cheaper one F contains),
                # while one containing the lean set alone need not be (a dominated F branched
                # on the lean set lost such answers: tests/test_enumerate_order.py)
                F = returned(final)
                if any(np.all(F[t]) for t in taken):
                    final = None
                S = F
            if final is not None:
                taken.append(np.flatnonzero(S))
                c = val if cost is None else float(cost(final))
                # an inversion beyond the slack (an inexact node solve) is kept in scheme order
                heapq.heappush(held, (max(c, last), next(tie), final, S))
        for s in np.flatnonzero(S & ~Z):
            Z2 = Z.copy()
            Z2[s] = True
            key = Z2.tobytes()
            if key not in seen:
                seen.add(key)
                heapq.heappush(heap, (val, next(tie), Z2, None))
    yield from release(math.inf)


def _slack(v):
    """How far below a node value a returned cost can sit (rounding, a re-solve's margin)."""
    return 1e-6 * max(abs(v), 1e-300) if math.isfinite(v) else 0.0


class Stop:
    """Why one enumeration stopped early, and its answers marked so.

    Passed to :func:`lawler` as ``stop``; ``reason`` is None until the scheme stops with nodes
    left (``"max_nodes"`` or ``"time_limit"``).

    Examples
    --------
    Three features; a node's answer changes its first free feature j, at cost j + 1:

    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> def solve(fmask):
    ...     free = np.flatnonzero(~fmask)
    ...     return (free[:1], free[0] + 1.0) if free.size else (None, np.inf)
    >>> def changed(sol):
    ...     return np.isin(np.arange(3), sol)
    >>> def accept(fmask, sol):
    ...     return SimpleNamespace(features=sol.tolist(), info={})
    >>> stop = Stop()
    >>> out = stop.take(lawler(solve, changed, accept, np.zeros(3, bool), max_nodes=2,
    ...                        stop=stop), k=5)
    >>> [(a.features, a.info) for a in out]
    [([0], {'enumeration_stopped': 'max_nodes'}), ([1], {'enumeration_stopped': 'max_nodes'})]
    """

    def __init__(self):
        self.reason = None

    def __call__(self, reason):
        self.reason = reason

    def mark(self, answer):
        """Return ``answer`` with ``info["enumeration_stopped"]`` set once the scheme stopped."""
        if self.reason is not None:
            answer.info["enumeration_stopped"] = self.reason
        return answer

    def take(self, answers, k):
        """Return the first ``k`` of ``answers`` (a list), or a lazy iterator when ``k`` is None.

        A list is marked whole when the scheme stopped before its ``k``-th answer (the list
        then has the answers found so far); a lazy iterator marks those it yields after the
        stop.
        """
        if k is None:
            return (self.mark(a) for a in answers)
        return [self.mark(a) for a in list(itertools.islice(answers, k))]
