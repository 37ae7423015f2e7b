"""The one status vocabulary of fastcf: every solver, kernel and explainer reports these codes.

:class:`Status` is an :class:`enum.IntEnum`, so the kernels use its members as compile-time
integer constants (Numba treats ``Status.OK`` as the literal ``0``) and the façade compares them
with the integer arrays the kernels return. :data:`MESSAGES` is the one message table (as SciPy's
``_status_message``); :func:`message` turns a code into the text a user reads.

====  =====================  ====================================================================
code  name                   meaning
====  =====================  ====================================================================
0     OK                     converged / exact answer
1     MAXITER                iteration limit reached before the tolerance (the point is the last
                             iterate)
2     UNREACHABLE            the model cannot change class through the free features
3     INFEASIBLE             the constraints (bounds, frozen features, user constraints, margin)
                             leave no point that the model classifies as the target
4     NUMERIC                numerical failure (non-finite values, a factorisation that failed, an
                             answer within rounding of the decision boundary)
5     NOT_TARGET             the optimum of problem (2) is not classified as the target (λ too
                             large); decrease ``lam`` or ask for ``proba=`` / ``region=True``
6     SOLVER_FAILED          the solver of an external library reported a failure
7     BELOW_DECISION         ``proba`` was met, but the model does not classify the point as the
                             target (τ below the decision threshold)
8     DEGENERATE             SVM enumeration: a training subset with a single class has no SVM
9     INVALID_INPUT          a row of a batch that cannot be read (a missing value the model does
                             not impute, an unseen category, a value its column's dtype cannot
                             hold); its message names the column and the row's index label
====  =====================  ====================================================================

``success`` is ``True`` only when the returned point is classified as the target by the model (and
meets ``proba`` when that was asked). A success has status 0, or 1 when an iterative method that
cannot certify optimality (the LVQ penalty convex–concave procedure) stopped at its limit with a
point the model puts in the target class: a valid counterfactual that may not be the closest.

``PENDING`` (−1) never reaches a user: a kernel marks a row it could not certify with it, and the
façade rechecks that row with the model's own arithmetic and replaces the code.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np

__all__ = ["Status", "MESSAGES", "message", "messages"]


class Status(IntEnum):
    """Status codes of every fastcf answer (see the module docstring for the table)."""

    PENDING = -1
    OK = 0
    MAXITER = 1
    UNREACHABLE = 2
    INFEASIBLE = 3
    NUMERIC = 4
    NOT_TARGET = 5
    SOLVER_FAILED = 6
    BELOW_DECISION = 7
    DEGENERATE = 8
    INVALID_INPUT = 9


MESSAGES = {
    Status.OK: "converged",
    Status.MAXITER: "iteration limit reached",
    Status.UNREACHABLE: "target unreachable: no free feature changes the model's decision",
    Status.INFEASIBLE: "infeasible: the constraints leave no point classified as the target",
    Status.NUMERIC: "numerical failure",
    Status.NOT_TARGET: (
        "the optimum is not classified as the target; decrease lam or use proba=/region=True"
    ),
    Status.SOLVER_FAILED: "the external solver failed",
    Status.BELOW_DECISION: (
        "proba was met but the model does not classify the point as the target; "
        "ask for a larger proba or region=True"
    ),
    Status.DEGENERATE: "degenerate: the training subset holds a single class, so it has no SVM",
    Status.INVALID_INPUT: "invalid input: the row cannot be read (its message says which cell)",
}

#: the message of an answer that a solver returned but the model's own arithmetic does not put
#: in the target class (the one verification step of every explainer, see ``_base``)
BOUNDARY_MESSAGE = (
    "numerical failure: the answer lies within rounding of the decision boundary "
    "(increase margin= or proba=)"
)


def message(code: int) -> str:
    """Return the message of status ``code`` (``"unknown status N"`` for a code not in the table).

    Examples
    --------
    >>> from fastcf._status import Status, message
    >>> message(Status.INFEASIBLE)
    'infeasible: the constraints leave no point classified as the target'
    """
    try:
        return MESSAGES[Status(int(code))]
    except (ValueError, KeyError):
        return f"unknown status {int(code)}"


def messages(status, success, method: str) -> list[str]:
    """Return one message per answer: ``"<method>: converged"`` for a success, else the table's.

    The closed form of binary models says ``"exact (closed form)"``.
    """
    ok_text = "exact (closed form)" if method == "closed form" else f"{method}: converged"
    status = status.tolist() if isinstance(status, np.ndarray) else list(status)
    success = success.tolist() if isinstance(success, np.ndarray) else list(success)
    return [
        ok_text if ok and st == 0 else message(st) for st, ok in zip(status, success, strict=True)
    ]
