"""Alternative answers of one row: Lawler's k-best scheme over sets of frozen columns.

The scheme of :func:`fastcf._lawler.lawler` (and of the SVM enumeration), on original
columns. A node is a set Z of frozen columns, its value the optimum of the row with Z frozen.
Popping the cheapest node gives its answer, with changed columns S = {s_1, ..., s_r}; every
answer whose set does not contain S leaves some s_i unchanged, so the children Z ∪ {s_i} cover
every answer not dominated by this one. Children are pushed with their parent's value (a valid
lower bound: freezing more only costs more) and solved when first popped; each Z is visited once.
Values only grow from parent to child, so answers come out in increasing cost; an answer is
returned when the model accepts it and its changed set contains the set of no answer returned
before (actionable-recourse's flipsets). This module adapts the tabular solve to the one
implementation of the scheme.

``time_limit=`` bounds the row's whole enumeration, from its start
(:func:`fastcf._validation.deadline`), whatever the model: no node is solved past it, and the
answers found by then are returned, marked ``info["enumeration_stopped"] = "time_limit"``. A
tree or network program (a node's, and an answer's check) gets the time the row has left
(:func:`fastcf._validation.time_left`); a linear or prototype one takes no limit, as in
``explain``.
"""

from __future__ import annotations

import math

import numpy as np

from .._lawler import Stop, lawler
from .._status import Status
from .._validation import deadline, time_left
from .imputed import solve_row
from .options import make_query
from .solve import answers, batch

__all__ = ["flipsets", "row_alternatives"]


def flipsets(
    solve, accept, fmask0, max_nodes=1000, returned=None, cost=None, end=math.inf, stop=None
):
    """Yield the alternatives of one row, cheapest first (lazy).

    Parameters
    ----------
    solve : callable
        ``solve(fmask) -> (node, value, changed)``: the row's optimum with the columns of the
        bool mask ``fmask`` frozen, its cost (``inf`` when infeasible) and the bool mask of the
        columns it changes.
    accept : callable
        ``accept(node) -> answer or None``: the answer as returned (checked by the model), or
        None when the model does not accept it. Called only for the answers that would be
        returned, so the model's check runs once per returned answer, not once per node.
    fmask0 : ndarray of bool
        The columns frozen from the start.
    max_nodes : int
        Programs solved before the enumeration stops.
    returned : callable, optional
        ``returned(answer) -> bool mask`` of the columns the answer returned changed (``accept``
        solves the node again): the rule is checked on it (:func:`fastcf._lawler.lawler`).
    cost : callable, optional
        ``cost(answer) -> float``: the answer's cost as returned, the order of the answers.
    end, stop
        :func:`fastcf._lawler.lawler`'s ``deadline`` and ``stop``.

    Yields
    ------
    answer
        Accepted answers, none of whose changed set contains the set of an earlier one.
    """

    def solve_node(fmask):
        out = solve(fmask)
        return out, out[1]

    return lawler(
        solve_node, lambda out: out[2], lambda fmask, out: accept(out[0]), fmask0, max_nodes,
        returned, cost, end, stop,
    )  # fmt: skip


def row_alternatives(
    ex, frame, tidx, form, bounds, allow, max_changes, max_nodes, k, keep, time_limit=None,
    plausible=False, held=None,
):  # fmt: skip
    """Return the alternatives of the one row of ``frame`` (a list of ``k``, or a generator).

    ``form``, ``allow``: the explainer's resolved ``(base, margin, tau)`` and allowed moves;
    ``keep``: whether missing cells stay missing (``missing="keep"``); ``time_limit``: seconds
    for the whole enumeration, from now (no node is solved past it); a tree or network program
    takes the time left, a linear or prototype one none, as
    :func:`~fastcf._tabular.request.read_options` decides (a node it stops keeps its answer,
    not certified);
    ``plausible``: every node restricted to the training regions (tree programs); ``held``:
    the columns held for the query (default: the explainer's immutable and unused ones).
    """
    end = deadline(time_limit)
    # (a program's own limit: none for a folded linear or prototype program)
    left = (lambda _end: None) if ex._program.folded else time_left
    s = ex._schema
    prog = ex._program
    row = frame.to_numpy(dtype=object)[0]
    x0, k0 = s.read(row, frame.index[0])
    frozen0 = ex._frozen() if held is None else held
    if keep:
        frozen0 = frozen0 | s.missing(row)
    threshold = form[0] + form[1]

    def solve(fmask):  # the program alone: the model checks only the answers returned
        q = make_query(
            s, x0, k0, tidx[0], threshold, bounds, allow, fmask, max_changes, form[2],
            left(end), plausible,
        )  # fmt: skip
        ans = solve_row(prog, x0, k0, q, row)
        changed = np.zeros(len(s.columns), dtype=bool)
        changed[prog.num_cols] = ans.x != x0
        changed[prog.cat_cols] = ans.k != k0
        stopped = ans.status == int(Status.MAXITER) and (ans.info or {}).get("stopped")
        value = ans.cost if ans.status == int(Status.OK) or stopped else math.inf
        return fmask, value, changed

    def accept(fmask):  # solved again with the model's check (and its margin steps)
        arrays = answers(
            ex, frame, tidx, form, bounds, allow, fmask, max_changes, time_limit=left(end),
            plausible=plausible,
        )  # fmt: skip
        res = batch(ex, frame, tidx, *arrays)[0]
        return res if res.success else None

    def returned(res):  # the columns the answer returned changed (its margin steps re-solve)
        moved = set(res.changed)
        return np.array([c in moved for c in s.columns], dtype=bool)

    # the rule on the answers returned, in the order of their costs (a margin step can raise
    # an answer's cost above its node's)
    stop = Stop()
    gen = flipsets(solve, accept, frozen0, max_nodes, returned, lambda res: res.distance, end, stop)
    return stop.take(gen, k)
