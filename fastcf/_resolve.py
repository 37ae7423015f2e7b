"""The re-aim formulas of every family: how far inside an answer the model refuses is aimed again.

Every answer is judged in the arithmetic of the model the user gave. A solver aims at the target
region's boundary plus a margin (or at p_target = τ), and its answer, formed in floating point,
can land a rounding error short: on the boundary, or an ulp below τ. Such rows are solved again,
aimed further inside, a bounded number of times. The loop that does it is written once, in the
stage (:func:`fastcf._stage.reaim`, and :func:`fastcf._stage.settle` around it); this module is
the one place that says how far each round aims:

* :data:`ROUNDS`: how many re-solves a row gets (the stage's one budget);
* :func:`raise_margin`: the margin sequence (twice the rounding need at the answer, at least
  double the margin the answer fell short of, past the solver's own shortfall, above a floor);
* :func:`raise_log_tau`, :func:`raise_at_least`: the sequence of τ for ``proba=τ``;
* :data:`TABULAR_MARGINS`: the tabular family's sequence, whose judge is the user's pipeline
  (a black box to the rounding analysis: no rounding need to raise to, fixed steps instead).

What differs between the families is only which rows a round picks and how each family
measures its rounding need (the logits' bound of
:meth:`fastcf._linear.model._LinearModel.need_of_norm`, the squared distances' of
:func:`fastcf._lvq.certify.rounding_need`): the rules of a round stay beside the solver whose
arithmetic they read, and they call the formulas here.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "ROUNDS",
    "TABULAR_MARGINS",
    "raise_margin",
    "raise_log_tau",
    "raise_at_least",
]

#: re-solves of a row whose answer the model refuses (each aimed further inside than the last)
ROUNDS = 4

#: the tabular family's margins, (factor of the margin asked, floor), one per solve
TABULAR_MARGINS = ((1.0, 0.0), (1e2, 1e-6), (1e4, 1e-4))

_EPS = float(np.finfo(float).eps)


def raise_margin(margin, need, floor, *, doubled=False, short=None):
    """Return the margin of a re-solve: the next term of the margin sequence.

    Twice the rounding ``need`` at the answer (two evaluations of the model there differ by
    less than the need: twice it clears both), at least ``floor`` (a tie at margin 0 with an
    exact answer has need 0); where ``doubled``, at least twice the ``margin`` the answer was
    aimed at and still missed; where the solver itself met its constraints only to ``short``
    (> 0, its shortfall), past it by four times as much.

    Parameters
    ----------
    margin, need : float or ndarray
        The margin the answer was solved with, and the rounding need at the answer.
    floor : float or ndarray
    doubled : bool or ndarray of bool, default False
    short : float or ndarray or None

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> raise_margin(1e-6, 3e-6, 1e-300)
    6e-06
    >>> raise_margin(1e-6, 1e-9, 1e-300, doubled=True)
    2e-06
    """
    out = np.maximum(2.0 * need, floor)
    out = np.where(doubled, np.maximum(out, 2.0 * margin), out)
    if short is not None:
        out = np.where(short > 0.0, np.maximum(out, margin + 4.0 * short), out)
    return out if np.ndim(out) else float(out)


def raise_log_tau(proba, p):
    """Return the raise of log τ for rows whose answer has p_target = ``p`` < τ by the model.

    Twice the shortfall log τ − log p (the two arithmetics differ by about as much at the new
    answer as at this one) and a few ulps; at most half of |log τ|, so that τ stays below 1.

    Examples
    --------
    >>> import numpy as np
    >>> float(raise_log_tau(0.8, np.array([0.8 * (1 - 1e-12)]))[0]) > 2e-12
    True
    """
    log_tau = math.log(proba)
    with np.errstate(divide="ignore", invalid="ignore"):
        short = log_tau - np.log(p)
    short = np.where(np.isfinite(short), short, np.inf)
    ulps = 8 * _EPS * (1 + abs(log_tau))
    return np.minimum(2 * short + ulps, 0.5 * abs(log_tau))


def raise_at_least(proba, up, floor):
    """Return the raises ``up`` of log τ made at least ``floor``, at most half of |log τ|."""
    return np.minimum(np.maximum(up, floor), 0.5 * abs(math.log(proba)))
