"""The checks of :mod:`fastcf.distributed`: its options, explainer, labels, columns and boxes.

Each raises before any work is scheduled, with the message the explainers themselves give where
they would raise (unknown labels, wrong lengths).
"""

from __future__ import annotations

import inspect

import numpy as np

from ._validation import _describe, resolve_targets

#: per-row result columns of a DataFrame result, after the counterfactual feature columns (and
#: before the ``proba_<class>`` columns of models with probabilities)
RESULT_COLUMNS = ("success", "status", "distance", "nit", "message")


def _feature_names(explainer):
    names = explainer.feature_names_in_
    return None if names is None else [str(n) for n in names]


def _check_options(explainer, options):
    try:
        inspect.signature(explainer.explain).bind(None, None, **options)
    except TypeError as exc:
        raise TypeError(
            f"options must be keyword arguments of {type(explainer).__name__}.explain: {exc}"
        ) from None
    lam = options.get("lam")
    if lam is not None and np.ndim(lam) > 0:
        raise ValueError(
            "lam must be a scalar in fastcf.distributed.explain (per-row lam arrays are not "
            f"split across partitions); got {_describe(np.asarray(lam))}"
        )


def _check_explainer(explainer):
    from ._base import BaseExplainer

    kinds, got = "LinearExplainer, LVQExplainer, TreeExplainer", type(explainer).__name__
    if not isinstance(explainer, BaseExplainer) or getattr(explainer, "_frames", False):
        why = ""
        if getattr(explainer, "_frames", False):  # (answers on DataFrames: not columns yet)
            why = (
                "; a TabularExplainer answers on DataFrames, which fastcf.distributed does not "
                "lay out as columns yet: call its explain on each partition"
            )
        raise TypeError(f"explainer must be a fastcf explainer ({kinds}); got {got}{why}")


def _output_columns(explainer, data_columns):
    names = _feature_names(explainer)
    if names is None:
        if data_columns is not None:
            names = [str(c) for c in data_columns]
        else:
            names = [f"x{i}" for i in range(explainer.n_features_in_)]
    proba_columns = (
        [f"proba_{c}" for c in np.asarray(explainer.classes_).tolist()]
        if explainer._has_proba
        else []
    )
    clash = sorted(set(names) & (set(RESULT_COLUMNS) | set(proba_columns)))
    if clash:
        raise ValueError(
            f"feature names {clash} clash with the result columns {list(RESULT_COLUMNS)} + "
            f"{proba_columns}; rename those features"
        )
    return names, proba_columns


def _row_box(options, N, D):
    """Return (options, lo, hi): the (N, D) parts of ``bounds`` (one box per row) taken out."""
    box = options.get("bounds")
    pair = isinstance(box, (tuple, list)) and len(box) == 2
    rows = [p if getattr(p, "ndim", 0) == 2 else None for p in box] if pair else [None, None]
    for part, label in zip(rows, ("lo", "hi"), strict=True):
        if part is not None and N is not None and tuple(part.shape) != (N, D):
            raise ValueError(
                f"bounds[{label}] must have shape ({D},) or ({N}, {D}) (one box per row of "
                f"data); got {tuple(part.shape)}"
            )
    if all(r is None for r in rows):
        return options, None, None
    shared = tuple(p if r is None else None for p, r in zip(box, rows, strict=True))
    return {**options, "bounds": shared}, *rows


def _check_labels(targets, explainer, n):
    # raises the explainers' own message for an unknown label or a wrong length
    resolve_targets(targets, explainer.classes_, n, name="targets")


def _is_scalar_target(targets) -> bool:
    return np.isscalar(targets) or (isinstance(targets, np.ndarray) and targets.ndim == 0)
