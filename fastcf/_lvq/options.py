"""The options of ``LVQExplainer.explain`` as arrays: θ's weights, the feasible box, user rows.

Every option is linear in x, so GLVQ/GMLVQ programs stay convex: ``frozen`` fixes features
(x_F = x̄_F), ``bounds`` gives lo ≤ x ≤ hi, ``constraints`` rows a·x ≤ c; ``margin`` is the ε of
eq. 9b, d(x, p_i) + ε ≤ d(x, p_j).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fastcf._validation import (
    as_float_array,
    check_scalar,
    resolve_bounds,
    resolve_frozen,
    resolve_weights,
)

__all__ = ["Options", "resolve_options"]


class Options(NamedTuple):
    """The resolved options of one ``explain`` call."""

    w: np.ndarray  # (D,) diagonal weights of θ (ones without weights=)
    free: np.ndarray  # (D,) bool: the features that may change
    lo: np.ndarray  # (D,) lower bounds (−inf: none)
    hi: np.ndarray  # (D,) upper bounds (+inf: none)
    C: np.ndarray  # (m, D) user rows C x ≤ c
    c: np.ndarray  # (m,)
    margin: float  # ε of eq. 9b


def parse_constraints(constraints, D):
    """Return (C, c) of the user constraints ``[(a, c), ...]`` meaning a·x ≤ c."""
    if constraints is None:
        return np.zeros((0, D)), np.zeros(0)
    if not isinstance(constraints, (list, tuple)):
        raise TypeError(
            "constraints must be a list of pairs (a, c) meaning a·x ≤ c; got "
            f"{type(constraints).__name__}"
        )
    rows, rhs = [], []
    for k, item in enumerate(constraints):
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise ValueError(
                f"constraints[{k}] must be a pair (a, c) meaning a·x ≤ c; got {item!r}"
            )
        a = as_float_array(item[0], f"constraints[{k}][0]", ndim=1)
        if a.shape[0] != D:
            raise ValueError(f"constraints[{k}][0] must have shape ({D},); got {a.shape}")
        c = np.asarray(item[1])
        if c.ndim != 0 or c.dtype.kind not in "biuf" or not np.isfinite(c):
            raise ValueError(f"constraints[{k}][1] must be a finite real number; got {item[1]!r}")
        rows.append(a)
        rhs.append(float(c))
    return np.array(rows).reshape(-1, D), np.array(rhs)


def resolve_options(X, D, metric, weights, frozen, bounds, constraints, margin, mad, names):
    """Check the options of ``explain`` and return them as :class:`Options`.

    ``mad`` is the explainer's ``mad_`` (for ``weights="mad"``), ``names`` its feature names
    (for ``frozen`` given by name).
    """
    if metric not in ("euclidean", "manhattan"):
        raise ValueError(f"metric must be 'euclidean' or 'manhattan'; got {metric!r}")
    w = resolve_weights(weights, D, mad)
    w = np.ones(D) if w is None else w
    free = ~resolve_frozen(frozen, D, names)
    if isinstance(bounds, (tuple, list)) and len(bounds) == 2:
        # broadcast scalars here: _validation.as_float_array turns 0-d input into shape (1,)
        bounds = tuple(
            np.full(D, (-np.inf, np.inf)[k] if v is None else float(v))
            if v is None or np.ndim(v) == 0
            else v
            for k, v in enumerate(bounds)
        )
    bb = resolve_bounds(bounds, D, X)
    lo, hi = (np.full(D, -np.inf), np.full(D, np.inf)) if bb is None else bb
    C, c = parse_constraints(constraints, D)
    margin = check_scalar(margin, "margin", lo=0.0)
    return Options(w, free, lo, hi, C, c, margin)
