"""The linear family's λ-paths: :meth:`fastcf.LinearExplainer.path` and the short query paths.

:func:`path` checks the options and solves the path (warm-started K-space Newton, or one
Manhattan batch); :func:`path_one` and :func:`explain_one` answer the common queries with no
options on short paths, with the same solvers and result code (the same bits).
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import as_float_array, check_int, check_scalar
from . import solvers as _solvers
from .fast import constrained_one, manhattan_one, plain_query
from .route import METRICS, REDUCED, options

__all__ = ["DEFAULT_LAMS", "path", "path_one", "explain_one", "short_path"]

DEFAULT_LAMS = np.logspace(3, -5, 100)  # path()'s grid (copied for each path)


def _label(ex, k):
    t = ex.classes_[k]
    return t.item() if hasattr(t, "item") else t


def path(ex, x, target, lams, frozen, weights, bounds, metric, warm_start, tol, max_iter):
    """Return :meth:`fastcf.LinearExplainer.path`'s answer (its arguments, checked here)."""
    ex._check_form(lams, None, False)
    if metric == "euclidean":
        fast = path_one(ex, x, target, lams, frozen, weights, bounds, warm_start, tol, max_iter)
        if fast is not None:
            return fast
    elif metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}; got {metric!r}")
    lams = DEFAULT_LAMS.copy() if lams is None else as_float_array(lams, "lams", ndim=1)
    if lams.size == 0 or not (lams > 0).all():
        raise ValueError("lams must be a non-empty 1-D array of values > 0")
    tol = check_scalar(tol, "tol", lo=0.0, lo_open=True)
    max_iter = check_int(max_iter, "max_iter", lo=1)
    X, single, names, tidx = ex._queries(x, target)
    fmask, w, bnd = options(ex, X, names, frozen, weights, bounds)
    if not single:
        raise ValueError(f"path takes one query x of shape ({ex.n_features_in_},); got {X.shape}")
    if bnd is not None and bnd[0].ndim == 2:  # the box of the one row, given as (1, D)
        bnd = (bnd[0][0], bnd[1][0])
    k = int(tidx[0])
    target = _label(ex, k)
    if metric == "manhattan":
        # one batch of L rows (the same x̄, one λ each): each λ is solved exactly, so there
        # is nothing to warm-start
        from . import manhattan as _l1
        from .verify import path_result

        L = lams.size
        XL = np.repeat(X, L, axis=0)
        cost = np.ones(ex.n_features_in_) if w is None else w
        sol = _l1.lam_l1(ex._model, XL, np.full(L, k), cost, ~fmask, bnd, lams, tol, max_iter)
        gn = np.full(L, np.nan) if sol.grad_norm is None else sol.grad_norm
        return path_result(
            ex._model,
            lams,
            sol.x,
            X[0],
            k,
            target,
            sol.distance,
            sol.nit,
            sol.status,
            gn,
            sol.method,
            names,
        )
    W = None if w is None else w * w  # ‖w ∘ δ‖₂: the diagonal metric W = w²
    m = ex._cache.get(fmask, W)
    return _solvers.path(
        ex._model, X[0], k, target, lams, m, warm_start, tol, max_iter, names, W, bnd
    )


def path_one(ex, x, target, lams, frozen, weights, bounds, warm, tol, max_iter):
    """Answer the common λ-path (one float64 x̄, no options) on a short path.

    As :func:`explain_one`: the same solver and result as :meth:`fastcf.LinearExplainer.path`;
    ``None`` whenever
    anything is unusual.
    """
    if not (frozen is None and weights is None and bounds is None and type(warm) is bool):
        return None
    if lams is None:
        lams = DEFAULT_LAMS.copy()
    elif (
        type(lams) is not np.ndarray
        or lams.ndim != 1
        or lams.dtype != np.float64
        or lams.size == 0
        or not lams.flags.c_contiguous
        or not (lams > 0).all()
    ):
        return None
    plain = plain_query(ex, x, target, tol, max_iter)
    if plain is None:
        return None
    k, xx = plain
    m, names = ex._cache.default, ex.feature_names_in_
    return _solvers.path(ex._model, x, k, _label(ex, k), lams, m, warm, tol, max_iter, names, xx=xx)


def explain_one(ex, x, target, lam, tol, max_iter):
    """Answer the common query (one float64 x̄, a float λ, no options) on a short path.

    The same solver and result code as :meth:`fastcf.LinearExplainer.explain` (the same bits),
    the argument checks reduced to type tests (``_linear.fast.plain_query``); ``None`` whenever
    anything is unusual.
    """
    if type(lam) is not float or not 0.0 < lam < math.inf:
        return None
    plain = plain_query(ex, x, target, tol, max_iter)
    if plain is None:
        return None
    X = x[None, :]
    tidx = np.array([plain[0]], dtype=np.int64)
    sol = _solvers.lam(ex._model, X, tidx, ex._cache.default, None, np.array([lam]), tol, max_iter)
    return ex._package(ex._verify(sol, tidx, None), X, tidx, ex.feature_names_in_, True)


def short_path(
    ex, x, target, lam, proba, region, margin, frozen, weights, bounds, metric, max_changes,
    method, tol, max_iter,
):  # fmt: skip
    """Answer one common query of :meth:`fastcf.LinearExplainer.explain` on a short path, or None.

    A single float64 query with no options but its form (and, for Manhattan, its weights) takes
    the same solver as the long path with the argument checks reduced to type tests
    (:mod:`fastcf._linear.fast`); ``None`` whenever anything is unusual (the long path answers).
    """
    if (
        frozen is None
        and weights is None
        and bounds is None
        and method in REDUCED
        and metric == "euclidean"
        and max_changes is None
    ):
        if proba is None and region is False:  # the short paths of one common query
            fast = explain_one(ex, x, target, lam, tol, max_iter)
        elif lam is None and (
            (proba is not None and region is False) or (proba is None and region is True)
        ):  # proba=τ alone, or region=True (with its margin) alone
            fast = constrained_one(ex, x, target, proba, margin, tol, max_iter)
        else:
            fast = None
        return fast
    if (
        metric == "manhattan"
        and frozen is None
        and bounds is None
        and max_changes is None
        and method in REDUCED
        and lam is None
        and (proba is None) == (region is True)
    ):  # one binary Manhattan proba=/region= query: the knapsack kernel on a short path
        return manhattan_one(ex, x, target, proba, margin, weights, tol, max_iter)
    return None
