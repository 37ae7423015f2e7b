"""The linear family's λ-paths: :meth:`fastcf.LinearExplainer.path` and the short query paths.

:func:`path` checks the options and solves the path (warm-started K-space Newton, or one
Manhattan batch); :func:`path_one` answers the common path with no options on a short path, with
the same solver and result code (the same bits); :func:`short_path` sends one common query of
``explain`` to :func:`fastcf._linear.fast.one_query` (the long path's body on the same query).
"""

from __future__ import annotations

import numpy as np

from .._validation import as_float_array, check_int, check_metric, check_scalar
from . import solvers as _solvers
from .fast import one_query, plain_query
from .route import DEFAULT_LAM, METRICS, REDUCED, options

__all__ = ["DEFAULT_LAMS", "path", "path_one", "short_path"]

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
    else:
        check_metric(metric, METRICS)
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
        from .verify import Raw, path_result

        L = lams.size
        XL = np.repeat(X, L, axis=0)
        cost = np.ones(ex.n_features_in_) if w is None else w
        sol = _l1.lam_l1(ex._model, XL, np.full(L, k), cost, ~fmask, bnd, lams, tol, max_iter)
        gn = np.full(L, np.nan) if sol.grad_norm is None else sol.grad_norm
        raw = Raw(sol.x, sol.nit, sol.status, lams, sol.method, distance=sol.distance, grad_norm=gn)
        return path_result(ex._model, X[0], k, target, raw, names)
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


def short_path(
    ex, x, target, lam, proba, region, margin, frozen, weights, bounds, metric, max_changes,
    method, tol, max_iter,
):  # fmt: skip
    """Answer one common query of :meth:`fastcf.LinearExplainer.explain` on a short path, or None.

    A single float64 query with one form (``lam=``, ``proba=`` or ``region=True``) and no
    options but its metric and ``weights="mad"``: :func:`fastcf._linear.fast.one_query`, the
    long path's own body on the same query with the argument checks reduced to type tests.
    ``None`` whenever anything is unusual (the long path validates and answers).
    """
    if frozen is not None or bounds is not None or max_changes is not None:
        return None
    if method not in REDUCED:
        return None
    if region is True:
        if lam is not None or proba is not None:
            return None
    elif region is not False or (lam is not None and proba is not None):
        return None
    elif lam is None and proba is None:
        lam = DEFAULT_LAM  # (make_query's default form)
    return one_query(ex, x, target, lam, proba, margin, metric, weights, method, tol, max_iter)
