"""The exact program of a tabular explainer, by what its pipeline ends in."""

from __future__ import annotations

from .milp import Program
from .netprog import NetProgram, is_net_fold
from .treeprog import TreeProgram

__all__ = ["program_for"]


def program_for(schema, fold, splits, model, X):
    """Return the program of the explainer's queries.

    A tree model's splits on the raw columns (``splits`` not None): :class:`TreeProgram`; a
    ReLU network (its neurons in the program, checked on ``X``): :class:`NetProgram`; else the
    linear :class:`Program`.
    """
    if splits is not None:
        return TreeProgram(schema, splits, model, X)
    if is_net_fold(fold):
        return NetProgram(schema, model, X)
    return Program(schema)
