"""Route → solve → judge and re-aim: one LVQ query's rows through the solver its method names.

:func:`solve` runs the method's solver (:mod:`.exact`, :mod:`.programs`, :mod:`.ccp`) and hands
its answers to the stage's one loop (:func:`fastcf._stage.settle`): the model's own arithmetic
judges every success, and the family's re-aim policy of :mod:`.certify` solves the refused rows
again (a margin raised past rounding; the CCP's fallback to a target prototype).
:meth:`fastcf.LVQExplainer.explain` calls it once for a plain query, and :mod:`.sparse` once per
node of a ``max_changes`` search.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import _stage
from . import ccp, exact, programs
from .certify import MarginRaise, PrototypeFallback

__all__ = ["Query", "solve"]


class Query(NamedTuple):
    """One LVQ query's checked options (:meth:`fastcf.LVQExplainer._read`)."""

    opts: object  # fastcf._lvq.options.Options
    metric: str
    method: str  # "ldp", "cvxpy" or "ccp"
    solver: str | None
    max_iter: int | None
    tol: float
    max_changes: int | None
    time_limit: float | None  # seconds per row: max_changes' search, the penalty CCP
    proba: None = None  # (an LVQ model has no probabilities: the judge asks none)


def solve(ex, X, tidx, opts, q):
    """Return the judged :class:`~fastcf.results.Solution` of the queries (options checked).

    Parameters
    ----------
    ex : LVQExplainer
    X : ndarray of shape (N, D)
    tidx : ndarray of shape (N,)
        Target class indices.
    opts : fastcf._lvq.options.Options
        The rows' options (``q.opts``, or a node's of a ``max_changes`` search).
    q : Query
    """
    geo = ex._geo
    if q.method == "ldp":
        nit = 100 if q.max_iter is None else q.max_iter

        def run(Xr, tr, o):
            return _on_box(exact.solve_ldp(geo, Xr, tr, o, nit), o)

        policy = MarginRaise(ex, X, tidx, opts, run)
    elif q.method == "cvxpy":

        def run(Xr, tr, o):
            return _on_box(programs.solve_cvxpy(ex._cache, geo, Xr, tr, q.metric, o, q.solver), o)

        policy = MarginRaise(ex, X, tidx, opts, run)
    else:
        n_rounds = 200 if q.max_iter is None else q.max_iter

        def run(Xr, tr, o):
            return _on_box(
                ccp.solve_ccp(
                    ex._cache, geo, Xr, tr, q.metric, o, q.solver, n_rounds, q.tol,
                    time_limit=q.time_limit,
                ),
                o,
            )  # fmt: skip

        policy = PrototypeFallback(ex, X, tidx, opts, q.metric)
    sol = run(X, tidx, opts)
    return _stage.settle(sol, policy.judge, policy)


def _on_box(sol, opts):
    """Put an answer that rounded one ulp past a face of the box on the face.

    An answer on a face is formed as x̄ + (lo − x̄), which can round one ulp past lo; the row
    then loses its certificate and the model judges it again (no box: nothing to do).
    """
    if not opts.boxed:
        return sol
    x = np.minimum(np.maximum(sol.x, opts.lo), opts.hi)  # (NaN rows stay NaN)
    moved = (x != sol.x).any(axis=1)
    if not moved.any():
        return sol
    cert = None if sol.certified is None else sol.certified & ~moved
    return sol._replace(x=x, certified=cert)
