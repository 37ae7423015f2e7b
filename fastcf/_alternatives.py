"""Alternatives by the explainer's own ``explain``: the ``enumerate`` of trees and LVQ.

Lawler's k-best scheme over restrictions of the query (:func:`fastcf._lawler.lawler`,
the one scheme of every family): each node is the exact answer of the query with some more
features frozen, solved by the explainer's ``explain`` (:meth:`fastcf.TreeExplainer.explain`,
:meth:`fastcf.LVQExplainer.explain`); an answer is returned when its set of changed features
contains the set of no cheaper answer returned (actionable-recourse's flipsets). The linear
and tabular families run the same scheme over their own programs
(:mod:`fastcf._linear.alternatives`, :mod:`fastcf._tabular.alternatives`), which share
work between the nodes.

``time_limit=`` bounds each query row's whole enumeration (:func:`fastcf._validation.deadline`
from the row's start): each node's ``explain`` gets the time the row has left
(:func:`fastcf._validation.time_left`), and no node is solved past it; the answers found by
then are returned, marked ``info["enumeration_stopped"] = "time_limit"``
(:class:`fastcf._lawler.Stop`).
"""

from __future__ import annotations

import math

import numpy as np

from ._validation import check_int, check_time_limit, deadline, resolve_frozen, time_left

__all__ = ["enumerate_answers"]


def enumerate_answers(ex, x, target, k, max_nodes, options):
    """Return the answers of ``ex.enumerate`` (``options``: its ``explain``'s)."""
    if k is not None:
        k = check_int(k, "k", lo=1)
    max_nodes = check_int(max_nodes, "max_nodes", lo=1)
    X, single, names, tidx = ex._queries(x, target)
    fmask0 = resolve_frozen(options.pop("frozen", None), ex.n_features_in_, names)
    limit = check_time_limit(options.pop("time_limit", None))
    rows = [_query_row(x, i, names) for i in range(X.shape[0])]
    bounds = options.pop("bounds", None)
    alts = [
        _one(ex, rows[i], ex.classes_[tidx[i]], k, max_nodes, fmask0, _row_bounds(bounds, i, X),
             limit, options)
        for i in range(X.shape[0])
    ]  # fmt: skip
    return alts[0] if single else alts


def _query_row(x, i, names):
    """Row ``i`` of the queries as the user gave them (a DataFrame's row keeps its names)."""
    if hasattr(x, "iloc") and getattr(x, "ndim", 1) == 2:
        return x.iloc[i]
    arr = np.asarray(x, dtype=np.float64)
    return arr if arr.ndim == 1 else arr[i]


def _row_bounds(bounds, i, X):
    """Row ``i``'s box: a per-row (N, D) box sliced, a shared one as given."""
    if bounds is None:
        return None
    try:
        lo, hi = (np.asarray(b, dtype=np.float64) for b in bounds)
    except (TypeError, ValueError):
        return bounds  # explain says what is wrong
    n = X.shape[0]
    if lo.ndim == 2 and lo.shape[0] == n and hi.ndim == 2 and hi.shape[0] == n:
        return lo[i], hi[i]
    return bounds


def _one(ex, row, target, k, max_nodes, fmask0, bounds, time_limit, options):
    """Return the alternatives of one query (a list, or a lazy iterator when ``k`` is None).

    ``time_limit``: seconds for the whole enumeration, from now (None: no limit).
    """
    from ._lawler import Stop, lawler

    end = deadline(time_limit)
    x0 = np.asarray(row, dtype=np.float64)
    # (no limit: explain is called as before, without a time_limit= of its own)
    limit = {} if time_limit is None else {"time_limit": None}

    def solve_node(fmask):
        if limit:
            limit["time_limit"] = time_left(end)  # the time the whole enumeration has left
        res = ex.explain(row, target, frozen=list(fmask), bounds=bounds, **limit, **options)
        return res, (res.distance if res.success else math.inf)

    def changed(res):
        return (res.x != x0) & ~np.isnan(x0)  # a missing feature stays missing: never changed

    def accept(_fmask, res):
        return res if res.success else None

    # a node's value is the distance explain returns: the scheme's order is that of the
    # distances returned (an inexact node solve aside: LGMLVQ's CCP), no cost= to wait on
    stop = Stop()
    gen = lawler(solve_node, changed, accept, fmask0, max_nodes, deadline=end, stop=stop)
    return stop.take(gen, k)
