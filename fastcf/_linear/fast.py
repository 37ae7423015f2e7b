"""The short path of one common query of :class:`fastcf.LinearExplainer` (paper 000).

The common query is one finite float64 x̄ with a known target and no options but its form
(``lam=``, ``proba=τ`` or ``region=True``), its metric and ``weights`` None or ``"mad"``. Its
arguments are checked by type tests only (:func:`common_query`), which build the same
:class:`~fastcf._linear.route.Query` as :func:`~fastcf._linear.route.make_query`; the query is
then answered by :func:`fastcf._linear.route.answer`, the body of the long path. So the short
path and the long path answer with the same functions on the same arrays: equal by
construction. ``tests/test_linear_latency_paths.py`` checks that the two build equal queries
(and, as a regression test, that the answers are the same bits).

What it saves is the general argument handling: ``as_queries`` (array-likes, pandas, shapes,
NaN), ``resolve_targets``, ``make_query``'s checks and option resolution (frozen names, weight
ranges, boxes). ``docs/scripts/short_path.py`` measures it against the same row given as a
batch of one (the long path).

An earlier short path (until 2026-11-27) re-implemented the solvers' verdicts, the first round
of ``verify.region`` and the verification with scalars, 3.4–4.0× faster than the long path
then, and held equal to it by bit tests only (issue 31); those scalar twins are gone.
"""

from __future__ import annotations

import math

import numpy as np

from .._kernels.linalg import dot as _dot
from .route import METRICS, REDUCED, Query

__all__ = ["common_query", "plain_query"]


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
    xx = _dot(x, x)
    if not math.isfinite(xx):
        return None
    return k, xx


def common_query(ex, x, target, lam, proba, region, margin, weights, metric, method, tol, max_iter):
    """Return (X, tidx, q) of one common query of ``explain``, or ``None`` (the long path).

    Type tests only (:func:`plain_query` for x̄, the target, ``tol`` and ``max_iter``); ``q``
    is the :class:`~fastcf._linear.route.Query` that :func:`~fastcf._linear.route.make_query`
    builds from the same arguments (no frozen features, bounds or ``max_changes``).
    """
    if (lam is not None) + (proba is not None) + (region is not False) > 1:
        return None  # two forms at once: make_query raises
    if method not in REDUCED or metric not in METRICS:
        return None
    if weights is None:
        w = None
    elif type(weights) is str and weights == "mad" and ex.mad_ is not None:
        w = 1.0 / ex.mad_  # resolve_weights's "mad"
    else:
        return None
    lams = None
    if proba is not None:
        if type(proba) is not float or not 0.0 < proba < 1.0:
            return None
        form = "proba"
    elif region:
        if region is not True or type(margin) is not float or not 0.0 <= margin < math.inf:
            return None
        form = "region"
    else:
        lam = 0.01 if lam is None else lam
        if type(lam) is not float or not 0.0 < lam < math.inf:
            return None
        lams = np.array([lam])
        form = "lam"
    plain = plain_query(ex, x, target, tol, max_iter)
    if plain is None:
        return None
    D = ex.n_features_in_
    q = Query(
        form, lams, proba, margin, metric, None, method, tol, max_iter, np.zeros(D, dtype=bool),
        w, None,
    )  # fmt: skip
    return x[None, :], np.array([plain[0]], dtype=np.int64), q
