"""The short path of one common query of :class:`fastcf.LinearExplainer` (paper 000).

The common query: one finite float64 x̄ with a known target, one form (``lam=λ``, ``proba=τ`` or
``region=True``), and no options but its metric and ``weights="mad"`` (no frozen features,
bounds or ``max_changes``). Its arguments are checked by type tests only (:func:`plain_query`,
:func:`one_query`); the query is then the one :func:`fastcf._linear.route.make_query`
would build (:func:`~fastcf._linear.route.common_query`), answered by the long path's own body
(:func:`fastcf._stage.answer`: the route, ``verify.region``'s rounds, ``keep_source``, the
judge, the packaging). So the short path's answer is the long path's by construction:
the same functions on the same query; what it skips is the validation of arguments that the
type tests already settle (``tests/test_linear_latency_paths.py`` compares the two queries
field by field, and the answers bit for bit).

What that saves: ``docs/scripts/short_path.py`` times one query given as a 1-D row (this path)
against the same row as a batch of one (the long path), alternately in one process.
"""

from __future__ import annotations

import math

import numpy as np

from .._kernels import linalg
from .._stage import answer
from .route import METRICS, common_query

__all__ = ["one_query", "plain_query"]


def plain_query(ex, x, target, tol, max_iter):
    """Return (k, x·x) for the common query, or ``None`` when anything is unusual.

    The common query: one finite float64 C-contiguous x̄ of the right length, a known target,
    a float ``tol`` and an int ``max_iter`` in range (type tests only); on ``None`` the public
    method validates (and raises) as usual.
    """
    if (
        type(x) is not np.ndarray
        or x.ndim != 1
        or x.dtype != np.float64
        or x.shape[0] != ex.n_features_in_
        or not x.flags.c_contiguous
        or type(tol) is not float
        or not 0.0 < tol < math.inf
        or type(max_iter) is not int
        or max_iter < 1
    ):
        return None
    try:
        k = ex._class_index.get(target.item() if hasattr(target, "item") else target)
    except TypeError:  # unhashable
        return None
    if k is None:
        return None
    # one pass, no warnings: x·x is finite iff x is (and not huge: those go the long way).
    # Not NumPy's x @ x: OpenBLAS runs a long dot on its own threads, which then spin and
    # slowed the parallel row kernel that follows 12× at (131 072, 16) on 2 cores
    xx = linalg.dot(x, x)
    if not math.isfinite(xx):
        return None
    return k, xx


def one_query(ex, x, target, lam, proba, margin, metric, weights, method, tol, max_iter):
    """Answer one common query, or ``None`` when anything is unusual (the long path validates).

    The form as :func:`~fastcf._linear.route.make_query` reads it: ``proba`` a float in (0, 1),
    else ``margin`` a float ≥ 0 (``region=True``: ``lam`` None), else ``lam`` a float > 0 (the
    caller passes 0.01 for neither). ``metric`` one of ``METRICS``; ``weights`` None or
    ``"mad"`` after ``fit_mad``; ``method`` one of the exact methods (the caller's test).
    """
    if proba is not None:
        if type(proba) is not float or not 0.0 < proba < 1.0:
            return None
    elif lam is not None:
        if type(lam) is not float or not 0.0 < lam < math.inf:
            return None
    elif type(margin) is not float or not 0.0 <= margin < math.inf:
        return None
    if type(metric) is not str or metric not in METRICS:
        return None
    if weights is not None and not (
        type(weights) is str and weights == "mad" and ex.mad_ is not None
    ):
        return None
    plain = plain_query(ex, x, target, tol, max_iter)
    if plain is None:
        return None
    q = common_query(ex, lam, proba, margin, metric, weights, method, tol, max_iter)
    tidx = np.array([plain[0]], dtype=np.int64)
    return answer(ex, x[None, :], tidx, ex.feature_names_in_, True, q)
