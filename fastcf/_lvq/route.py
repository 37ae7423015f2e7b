"""Route → solve → certify: one LVQ query's rows through the solver its method names.

:func:`solve` runs the method's solver (:mod:`.exact`, :mod:`.programs`, :mod:`.ccp`), the
repairs of :mod:`.certify` (a margin raised past rounding, the CCP's fallback), and the one
verification by the model's own arithmetic; :meth:`fastcf.LVQExplainer.explain` calls it once
for a plain query, and :mod:`.sparse` once per node of a ``max_changes`` search.
"""

from __future__ import annotations

import numpy as np

from . import ccp, exact, programs
from .certify import ccp_fallback, margin_scale_message, raise_margin

__all__ = ["solve"]


def solve(ex, X, tidx, opts, metric, method, solver, max_iter, tol):
    """Return the verified :class:`~fastcf.results.Solution` of the queries (options checked).

    Parameters
    ----------
    ex : LVQExplainer
    X : ndarray of shape (N, D)
    tidx : ndarray of shape (N,)
        Target class indices.
    opts : fastcf._lvq.options.Options
    metric : {"euclidean", "manhattan"}
    method : {"ldp", "cvxpy", "ccp"}
    solver : str or None
    max_iter : int or None
    tol : float
    """
    geo = ex._geo
    if method == "ldp":
        nit = 100 if max_iter is None else max_iter

        def run(Xr, tr, o):
            return exact.solve_ldp(geo, Xr, tr, o, nit)

        sol = raise_margin(ex, run(X, tidx, opts), X, tidx, opts, run)
    elif method == "cvxpy":

        def run(Xr, tr, o):
            return programs.solve_cvxpy(ex._cache, geo, Xr, tr, metric, o, solver)

        sol = raise_margin(ex, run(X, tidx, opts), X, tidx, opts, run)
    else:
        n_rounds = 200 if max_iter is None else max_iter
        sol = ccp.solve_ccp(ex._cache, geo, X, tidx, metric, opts, solver, n_rounds, tol)
        sol = ccp_fallback(ex, sol, X, tidx, opts, metric)
    # an answer on a face of the box is formed as x̄ + (lo − x̄), which can round one ulp past
    # lo: put it on the face, and have the model judge that row again (no box: nothing to do)
    if opts.boxed:
        x = np.minimum(np.maximum(sol.x, opts.lo), opts.hi)  # (NaN rows stay NaN)
        moved = (x != sol.x).any(axis=1)
        if moved.any():
            cert = None if sol.certified is None else sol.certified & ~moved
            sol = sol._replace(x=x, certified=cert)
    sol = ex._verify(sol, tidx)
    return margin_scale_message(ex, sol, X, opts.margin)
