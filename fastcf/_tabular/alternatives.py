"""Alternative answers of one row: Lawler's k-best scheme over sets of frozen columns.

The scheme of :func:`fastcf._linear.subsets.lawler` (and of the SVM enumeration), on original
columns. A node is a set Z of frozen columns, its value the optimum of the row with Z frozen.
Popping the cheapest node gives its answer, with changed columns S = {s_1, ..., s_r}; every
answer whose set does not contain S leaves some s_i unchanged, so the children Z ∪ {s_i} cover
every answer not dominated by this one. Children are pushed with their parent's value (a valid
lower bound: freezing more only costs more) and solved when first popped; each Z is visited once.
Values only grow from parent to child, so answers come out in increasing cost; an answer is
returned when the model accepts it and its changed set contains the set of no answer returned
before (actionable-recourse's flipsets). This module adapts the tabular solve to the one
implementation of the scheme.
"""

from __future__ import annotations

from .._linear.subsets import lawler

__all__ = ["flipsets"]


def flipsets(solve, accept, fmask0, max_nodes=1000):
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

    Yields
    ------
    answer
        Accepted answers, none of whose changed set contains the set of an earlier one.
    """

    def solve_node(fmask):
        out = solve(fmask)
        return out, out[1]

    return lawler(
        solve_node, lambda out: out[2], lambda fmask, out: accept(out[0]), fmask0, max_nodes
    )
