"""The words every explainer takes, as LVQ answers them (issue 53, item 5).

LVQ asks one question, the closest point classified as the target (``region=True``, Algorithm 1):
its models have no probabilities, so ``proba=`` and problem (2)'s ``lam=`` have no meaning here
and are refused by name, as ``region=False`` is (a question with no condition). ``exact=`` and
``time_limit=`` are checked as every family checks them (:func:`fastcf._validation.check_exact`);
``max_changes=`` needs a metric shared by the prototypes, whose target regions are polytopes.
"""

from __future__ import annotations

import numpy as np

from fastcf._validation import check_max_changes as _check_max_changes

__all__ = ["check_question", "check_max_changes"]

_ONLY = "LVQ answers only region=True (the closest point classified as the target)"


def check_question(region, proba, lam):
    """Refuse every question but ``region=True``, naming the option.

    Raises
    ------
    TypeError
        If ``region`` is not a bool.
    ValueError
        For ``region=False``, a ``proba=`` or a ``lam=``.
    """
    if not isinstance(region, (bool, np.bool_)):
        raise TypeError(f"region must be True or False; got {region!r}")
    if not region:
        raise ValueError(f"region=False asks for no condition: {_ONLY}")
    if proba is not None:
        raise ValueError(
            f"proba={proba!r} is refused: LVQ models have no class probabilities; {_ONLY}"
        )
    if lam is not None:
        raise ValueError(
            f"lam={lam!r} is refused: problem (2) needs class probabilities, which LVQ models "
            f"do not have; {_ONLY}"
        )


def check_max_changes(max_changes, kind):
    """Return ``max_changes`` as an int >= 1 or None; refused for one metric per prototype.

    ``kind``: the model's metric (``"euclidean"``, ``"global"``, ``"local"``).
    """
    m = _check_max_changes(max_changes)
    if m is not None and kind == "local":
        raise ValueError(
            "max_changes is refused for LGMLVQ (one Ω per prototype): its target regions are "
            "bounded by quadrics, not hyperplanes, and no exact program with at most m changed "
            "features is known here; use GLVQ/GMLVQ (one shared metric) or max_changes=None"
        )
    return m
