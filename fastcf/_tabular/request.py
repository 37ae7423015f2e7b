"""The options every tabular query shares, read once for ``explain`` and ``enumerate``.

:func:`read_request` (for :meth:`~fastcf.TabularExplainer.explain` and
:meth:`~fastcf.TabularExplainer.enumerate`) checks the rows, the targets, the target's form
(``region=True`` with a ``margin``, or ``proba=τ``), ``max_changes``, the allowed categories,
the missing-value mode, ``time_limit`` and ``plausible`` against the explainer's program,
raising a ``ValueError`` (or a ``TypeError`` for a model without probabilities asked
``proba=``) that names the option.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from .._confirm import check_verify
from .._validation import (
    check_exact,
    check_max_changes,
    check_probability,
    check_scalar,
    check_time_limit,
)
from .columns import resolve_names
from .options import resolve_allowed

__all__ = ["Request", "read_request", "read_options", "target_form"]


class Request(NamedTuple):
    """A tabular query's rows and checked options."""

    frame: object  # pandas.DataFrame of the rows, in the model's columns
    single: bool  # one row given (a Series, a dict or a one-row DataFrame)
    tidx: object  # ndarray of the target class indices
    form: tuple  # (base, margin, tau): the target constraint is score >= base + margin
    max_changes: int | None
    allow: object  # the allowed categories and transitions (options.resolve_allowed)
    keep: bool  # missing="keep"
    time_limit: float | None
    plausible: bool
    frozen: object  # (D,) bool: the columns held (immutable, unused, and the query's frozen=)


def read_request(ex, x, target, **options):
    """Return the :class:`Request` of a query to the explainer ``ex``.

    The rows and targets as the explainer reads them (``ex._queries``), then
    :func:`read_options`.
    """
    frame, single, _, tidx = ex._queries(x, target)
    return read_options(ex, frame, single, tidx, options)


def read_options(ex, frame, single, tidx, options):
    """Return the :class:`Request` of the read rows ``frame`` and the query's ``options``.

    ``options``: the keywords of :meth:`~fastcf.TabularExplainer.explain` (``region``,
    ``proba``, ``margin``, ``max_changes``, ``allowed``, ``transitions``, ``missing``,
    ``time_limit``, ``plausible``, ``metric``, ``frozen``, ``exact``, ``verify``; the others
    are not read here). ``metric``, ``frozen``, ``exact`` and ``verify`` are the words every
    family takes (:mod:`fastcf._options`): the tabular cost is the weighted Manhattan one
    (``metric`` must say so), ``frozen`` holds columns for this query on top of
    ``immutable``, the programs are exact whatever ``exact`` says (and with no ``time_limit``
    for a linear or prototype program, which is solved to optimality in milliseconds), and
    the judge is the pipeline's own ``predict`` whatever ``verify`` says.
    """
    o = {**_DEFAULTS, **options}
    metric = o["metric"]
    if metric != "manhattan":
        raise ValueError(
            f"metric={metric!r}: a tabular answer's cost is the weighted Manhattan one (a "
            "numeric column's move times its weight, a change of category its weight): "
            'metric="manhattan" (the default)'
        )
    check_exact(o["exact"], None)
    check_verify(o["verify"], ex.model)
    held = ex._frozen().copy()
    held[resolve_names(o["frozen"], ex._schema.columns, "frozen")] = True
    form = target_form(ex, o["region"], o["proba"], o["margin"])
    max_changes = check_max_changes(o["max_changes"])
    allow = resolve_allowed(ex._schema, o["allowed"], o["transitions"])
    missing = o["missing"]
    if not (isinstance(missing, str) and missing in ("impute", "keep")):
        raise ValueError(f"missing must be 'impute' or 'keep'; got {missing!r}")
    time_limit = check_time_limit(o["time_limit"])
    folded = ex._program.folded  # a linear or prototype program (not a tree model's)
    if folded:
        time_limit = None  # (solved to optimality in milliseconds: no limit is reached)
    plausible = o["plausible"]
    if plausible is not False and plausible is not True:
        raise ValueError(f"plausible must be True or False; got {plausible!r}")
    if plausible and (folded or getattr(ex._program, "network", False)):
        raise ValueError(
            "plausible=True is answered for pipelines ending in a tree model (their regions "
            "that hold training rows); this model is linear, prototype-based or a network"
        )
    return Request(frame, single, tidx, form, max_changes, allow, missing == "keep", time_limit,
                   plausible, held)  # fmt: skip


#: the options of a tabular query that :func:`read_options` reads, and their defaults
_DEFAULTS = {
    "region": None, "proba": None, "margin": 1e-6, "max_changes": None, "allowed": None,
    "transitions": None, "missing": "impute", "time_limit": None, "plausible": False,
    "metric": "manhattan", "frozen": None, "exact": True, "verify": "fold",
}  # fmt: skip


def target_form(ex, region, proba, margin):
    """Return (base, margin, tau): the target constraint is score ≥ base + margin."""
    check_scalar(margin, "margin", lo=0.0)
    if proba is None:
        if region is not None and region is not True:
            raise ValueError("region must be True (the default) or proba= must be given")
        return 0.0, float(margin), None
    if region:
        raise ValueError("give region=True or proba=τ, not both")
    tau = check_probability(proba)
    if not ex.probabilistic_:
        from ..adapters import model_name, not_probabilistic

        raise TypeError(not_probabilistic(model_name(ex.model), "proba= was asked"))
    if ex._program.K > 1 and ex._program.folded:
        raise ValueError(
            "proba= is answered for binary models only (a linear constraint on the score); "
            "for a softmax model p_target ≥ τ is not linear: use region=True (with margin=)"
        )
    return max(math.log(tau / (1.0 - tau)), 0.0), float(margin), tau
