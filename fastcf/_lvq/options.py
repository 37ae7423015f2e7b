"""The options of ``LVQExplainer.explain`` as arrays: θ's weights, the feasible box, user rows.

Every option is linear in x, so GLVQ/GMLVQ programs stay convex: ``frozen`` fixes features
(x_F = x̄_F), ``bounds`` gives lo ≤ x ≤ hi, ``constraints`` rows a·x ≤ c; ``margin`` is the ε of
eq. 9b, d(x, p_i) + ε ≤ d(x, p_j). The box is shared, lo/hi of shape (D,), or one per query row,
lo/hi of shape (N, D); :func:`row_options` gives the options of one row.
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

__all__ = ["Options", "resolve_options", "row_options"]


class Options(NamedTuple):
    """The resolved options of one ``explain`` call."""

    w: np.ndarray  # (D,) diagonal weights of θ (ones without weights=)
    free: np.ndarray  # (D,) bool: the features that may change
    lo: np.ndarray  # (D,) or (N, D) lower bounds (−inf: none), shared or one row per query
    hi: np.ndarray  # (D,) or (N, D) upper bounds (+inf: none), same shape as lo
    C: np.ndarray  # (m, D) user rows C x ≤ c
    c: np.ndarray  # (m,)
    margin: float  # ε of eq. 9b
    boxed: bool = True  # a box was given (False: lo = −inf, hi = +inf everywhere)


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
    # weights=w is the cost of a unit change of each feature: Euclidean ‖w∘δ‖₂, so θ's diagonal
    # metric is w² (Manhattan Σ w_i|δ_i| takes w as it is); "mad" (w = 1/MAD) is then unit-free
    w = np.ones(D) if w is None else (w * w if metric == "euclidean" else w)
    free = ~resolve_frozen(frozen, D, names)
    bb = resolve_bounds(bounds, D, X, per_row=True)  # lo, hi: both (D,) or both (N, D)
    lo, hi = (np.full(D, -np.inf), np.full(D, np.inf)) if bb is None else bb
    C, c = parse_constraints(constraints, D)
    margin = check_scalar(margin, "margin", lo=0.0)
    return Options(w, free, lo, hi, C, c, margin, bb is not None)


def row_options(opts, a):
    """Return the options of query row ``a``: ``opts`` itself when the box is shared.

    With one box per row (lo/hi of shape (N, D)) the returned lo/hi are row ``a`` (views, shape
    (D,)), so a row of a batch is solved exactly as the single query with that box.
    """
    if opts.lo.ndim == 1:
        return opts
    return opts._replace(lo=opts.lo[a], hi=opts.hi[a])


#: the methods of LVQExplainer.explain
METHODS = ("auto", "ldp", "cvxpy", "ccp")


def resolve_method(kind, method, solver, metric):
    """Return (method, cvxpy solver name or None) of an LVQ query, checked against the model.

    ``kind``: the model's metric (``"euclidean"``, ``"global"``, ``"local"``).
    """
    from .programs import SOLVER_NAMES  # (programs imports this module)

    if solver is not None and str(solver).upper() not in SOLVER_NAMES:
        raise ValueError(
            f"solver must be None or a cvxpy solver name {sorted(SOLVER_NAMES)}; got {solver!r}"
        )
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    local = kind == "local"
    if method == "auto":
        if local:
            method = "ccp"
        else:
            method = "ldp" if metric == "euclidean" and solver is None else "cvxpy"
    if method == "ldp" and (local or metric != "euclidean" or solver is not None):
        raise ValueError(
            "method='ldp' needs a shared metric (GLVQ/GMLVQ), metric='euclidean' and no "
            f"cvxpy solver; this model is {kind!r}, metric={metric!r}, solver={solver!r}"
        )
    if method == "cvxpy" and local:
        raise ValueError(
            "method='cvxpy' solves the convex programs of a shared metric (GLVQ/GMLVQ); this "
            "model has one Ω per prototype (LGMLVQ): use method='ccp'"
        )
    if method == "ccp" and not local:
        raise ValueError(
            "method='ccp' is the penalty CCP for one Ω per prototype (LGMLVQ); this model's "
            f"metric is {kind!r}: use method='ldp' or 'cvxpy'"
        )
    return method, solver
