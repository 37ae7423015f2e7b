"""The linear family's route: a query's checked options, and the solver each kind of query takes.

:func:`make_query` checks every option of a query once; :func:`solve` routes it: the continuous
solvers of each metric and form (:func:`continuous`), or the exact ``max_changes`` search over them
(:func:`sparse_row`, a branch-and-bound of :mod:`fastcf._linear.subsets`); :func:`solved` is
that answer with x̄ itself in the rows whose source already meets ``proba=τ`` as the model
computes it (:func:`keep_source`, :func:`source_meets`: the route's last step, whichever solver
answered). The explainer (:class:`fastcf.LinearExplainer`) validates, calls these and packages
the answer.
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

import numpy as np

from .. import _stage
from .._resolve import ROUNDS
from .._status import Status, message
from .._validation import (
    check_int,
    check_max_changes,
    check_metric,
    check_probability,
    check_scalar,
    check_scalar_positive,
    deadline,
    resolve_bounds,
    resolve_frozen,
    resolve_weights,
)
from . import solvers as _solvers
from . import verify
from .metric import row_box

__all__ = [
    "Query",
    "METHODS",
    "REDUCED",
    "METRICS",
    "options",
    "make_query",
    "common_query",
    "solved",
    "source_meets",
    "keep_source",
    "continuous",
    "row_problem",
    "solve",
    "sparse_row",
]

METHODS = ("auto", "reduced", "woodbury", "lbfgs", "cg", "gd")
REDUCED = ("auto", "reduced")  # the exact solvers (closed form, K-space Newton)
METRICS = ("euclidean", "manhattan")
_OK = int(Status.OK)
_NUMERIC = int(Status.NUMERIC)
#: the λ of a query that names no form (``explain(x, target)``)
DEFAULT_LAM = 0.01


class Query(NamedTuple):
    """One query's checked options (:func:`make_query`)."""

    form: str  # "lam", "proba" or "region"
    lams: np.ndarray | None  # (N,) for "lam"
    proba: float | None
    margin: float
    metric: str
    max_changes: int | None
    method: str
    tol: float
    max_iter: int
    fmask: np.ndarray  # (D,) bool: the user's frozen features
    w: np.ndarray | None  # (D,) per-feature costs (None: ones)
    bnd: tuple | None  # (lo, hi) of shape (D,) or (N, D)
    time_limit: float | None = None  # seconds for each max_changes row (its branch-and-bound)


def options(ex, X, names, frozen, weights, bounds):
    """Return the frozen mask, the per-feature costs w (or None) and the box of a query."""
    fmask = resolve_frozen(frozen, ex.n_features_in_, names)
    w = resolve_weights(weights, ex.n_features_in_, ex.mad_)
    bnd = resolve_bounds(bounds, ex.n_features_in_, X, per_row=True)
    return fmask, w, bnd


def make_query(
    ex,
    X,
    tidx,
    names,
    lam,
    proba,
    region,
    margin,
    frozen,
    weights,
    bounds,
    metric,
    max_changes,
    method,
    tol,
    max_iter,
    time_limit=None,
):
    """Check every option of a query and return it as a :class:`Query`.

    ``time_limit`` (checked by the caller, :func:`fastcf._validation.check_exact`): seconds
    for each row of ``max_changes`` (:func:`sparse_row`); the other queries take none.
    """
    if (lam is not None) + (proba is not None) + bool(region) > 1:
        raise ValueError("give only one of lam=, proba= or region=True")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    check_metric(metric, METRICS)
    tol = check_scalar(tol, "tol", lo=0.0, lo_open=True)
    max_iter = check_int(max_iter, "max_iter", lo=1)
    max_changes = check_max_changes(max_changes)
    fmask, w, bnd = options(ex, X, names, frozen, weights, bounds)
    lams = None
    if proba is not None or region:
        if method not in REDUCED:
            raise ValueError(
                f"method={method!r} applies to problem (2) (lam=); proba= and region=True are "
                "solved exactly by the default method"
            )
        if proba is not None:
            proba = check_probability(proba, "proba")
            form = "proba"
        else:
            margin = check_scalar(margin, "margin", lo=0.0)
            form = "region"
    else:
        n = X.shape[0]
        lam = DEFAULT_LAM if lam is None else lam
        lams = check_scalar_positive(lam, "lam", allow_array=True, n=n)
        lams = np.full(n, lams) if np.ndim(lams) == 0 else np.ascontiguousarray(lams)
        form = "lam"
    if metric == "manhattan" and method not in REDUCED:
        raise ValueError(
            f"method={method!r} is a Euclidean reference method; metric='manhattan' is solved "
            "exactly by the default method"
        )
    return Query(
        form, lams, proba, margin, metric, max_changes, method, tol, max_iter, fmask, w, bnd,
        time_limit,
    )  # fmt: skip


def common_query(ex, lam, proba, margin, metric, weights, method, tol, max_iter):
    """Return the :class:`Query` that :func:`make_query` returns for one common query.

    The common query: ``lam=λ`` (``lam`` a float > 0), ``proba=τ`` (``proba`` a float in
    (0, 1)) or ``region=True`` (both None, ``margin`` a float ≥ 0), an exact ``method``
    (``REDUCED``), no ``frozen``, ``bounds`` or ``max_changes``, ``weights`` None (or
    ``"mad"`` after ``fit_mad``), a float ``tol`` > 0 and an int ``max_iter`` ≥ 1, all already
    checked by type tests (the caller's: the short path, :mod:`fastcf._linear.fast`). The
    fields are those :func:`make_query` computes from the same arguments
    (``tests/test_linear_latency_paths.py`` compares the two), so the short path's answer is
    the long path's: the same :func:`answer` of the same query.
    """
    if proba is not None:
        form, lams = "proba", None
    elif lam is not None:
        form, lams = "lam", np.full(1, lam)
    else:
        form, lams = "region", None
    # (make_query's own helpers: None and "mad" need no checks here)
    fmask = resolve_frozen(None, ex.n_features_in_)
    w = resolve_weights(weights, ex.n_features_in_, ex.mad_)
    return Query(form, lams, proba, margin, metric, None, method, tol, max_iter, fmask, w, None)


def solved(ex, X, tidx, q):
    """Return the (unjudged) :class:`~fastcf.results.Solution` of the checked query ``q``.

    :func:`solve`, then x̄ itself where it already meets ``proba=τ``
    (:func:`keep_source`).
    """
    sol = solve(ex, X, tidx, q)
    if q.form == "proba":  # x̄ itself where the model already meets τ there
        sol = keep_source(ex._model, X, tidx, sol, q.proba)
    return sol


_SOURCE_MEETS = "the source already meets proba=τ (as the model computes it): x̄ itself"


def source_meets(model, X, tidx, proba):
    """Return which rows x̄ of ``X`` the model puts in ``tidx`` with p_target ≥ ``proba``.

    The verification's test (:meth:`~fastcf._linear.model._LinearModel.in_target`), after a
    first test of p_target(x̄) ≥ τ alone (two calls), which rules out nearly every row.
    """
    _P0, meets, sure = model.source_tests(X, tidx, proba)
    good = meets.copy()
    good[meets] = sure
    return good


def keep_source(model, X, tidx, sol, proba):
    """Return ``sol`` with x̄ itself in each row whose source already meets ``proba=τ``.

    The solvers decide "x̄ already meets τ" in their own arithmetic (a kernel's dot products,
    ζ̄ ≥ logit τ). The model's own (BLAS one row at a time, the bits of ``predict_proba``) can
    differ by the rounding of the logits and of logit τ: with τ equal to
    ``predict_proba(x̄)[k]`` exactly, a solver then moved x̄ by ~1e-14 (or ~1e-10 for τ within
    1e-9 of 1, where logit τ amplifies τ's rounding), or returned x̄ as a numerical failure
    (its own verdict computed p_k(x̄) an ulp below τ). The documented answer is x̄ itself. So
    every row but the successes at x̄ is checked at x̄ with the verification's own test
    (:meth:`~fastcf._linear.model._LinearModel.in_target`: the class beyond rounding, and
    p_target ≥ τ): one product per such row, after a first test of p_target ≥ τ alone. The rows
    set to x̄ are successes, ``certified`` (just checked). Rows that failed where x̄ meets τ but
    its class is not surely the target get x̄ too, with the documented BELOW_DECISION.
    """
    kept = sol.success & (sol.distance == 0.0)
    if np.count_nonzero(kept):
        rows = np.flatnonzero(~kept)
        if rows.size == 0:
            return sol
        P0, hit, sure = model.source_tests(X[rows], tidx[rows], proba)
    else:  # every row (a single query's usual case: no copies of the rows)
        rows = None
        P0, hit, sure = model.source_tests(X, tidx, proba)
    if not np.count_nonzero(hit):
        return sol
    meets = np.flatnonzero(hit) if rows is None else rows[hit]
    at = meets[sure]
    # x̄ meets τ but its class is not surely the target (a tie: three identical rows and τ = 1/3,
    # soak round Q): x̄ is the optimum, at distance 0, and the documented outcome is
    # BELOW_DECISION, not a solver's failure or its "infeasible"
    below = meets[~sure]
    below = below[~sol.success[below] & (sol.status[below] != int(Status.BELOW_DECISION))]
    changed = np.concatenate([at, below])
    if changed.size == 0:
        return sol
    P0 = P0[changed if rows is None else np.searchsorted(rows, changed)]  # computed above
    x = sol.x.copy()
    x[changed] = X[changed]
    success = sol.success.copy()
    success[at] = True
    status = sol.status.copy()
    status[at] = int(Status.OK)
    status[below] = int(Status.BELOW_DECISION)
    msgs = list(sol.message)
    for n in at:
        msgs[n] = _SOURCE_MEETS
    for n in below:
        msgs[n] = message(int(Status.BELOW_DECISION))
    out = {"x": x, "success": success, "status": status, "message": msgs}
    if sol.proba is not None:
        P = sol.proba.copy()
        P[changed] = P0
        out["proba"] = P
    for name, value in (("distance", 0.0), ("nit", 0), ("lam", np.inf), ("grad_norm", 0.0)):
        arr = getattr(sol, name)
        if arr is not None:
            arr = arr.copy()
            arr[changed] = value
            out[name] = arr
    cert = np.zeros(sol.success.shape[0], dtype=bool)
    if sol.certified is not None:
        cert |= sol.certified
    cert[at] = True
    cert[below] = False
    out["certified"] = cert
    return sol._replace(**out)


def continuous(ex, X, tidx, q, fmask, lams=None, bnd=None, lean=False):
    """Solve the rows ``X`` of query ``q`` with the features of ``fmask`` frozen.

    ``lean``: the answers and their costs only, for the nodes of a search (``max_changes``,
    :meth:`enumerate`): ``region=True`` without the re-solves for rounding
    (:func:`~fastcf._linear.verify.region`), binary Manhattan straight from its kernel. A
    search solves the answers it returns again in full.
    """
    model = ex._model
    lams = q.lams if lams is None else lams
    bnd = q.bnd if bnd is None else bnd
    if q.metric == "manhattan":
        from . import manhattan as _l1

        cost = np.ones(ex.n_features_in_) if q.w is None else q.w
        free = ~fmask
        if lean and q.form != "lam":
            margins = _margins(X, q)
            if model.binary:
                return _l1.binary_constrained_lean(
                    model, X, tidx, cost, free, bnd, q.proba, margins
                )
            return _l1.constrained_l1(
                model, X, tidx, cost, free, bnd, q.proba, margins, q.tol, q.max_iter
            )
        if q.form == "lam":
            return _l1.lam_l1(model, X, tidx, cost, free, bnd, lams, q.tol, q.max_iter)

        def solve_rows(Xr, tr, br, pr, mr):
            # region=True: verify.region's rounds are the only re-solves (rounds=0 here: the
            # LP's own shortfall loop would run inside each of them)
            return _l1.constrained_l1(
                model, Xr, tr, cost, free, br, pr, mr, q.tol, q.max_iter,
                rounds=0 if mr is not None else ROUNDS,
            )  # fmt: skip

    else:
        W = None if q.w is None else q.w * q.w  # ‖w ∘ δ‖₂: the diagonal metric W = w²
        m = ex._cache.get(fmask, W)
        if lean and q.form != "lam":  # a search node: the solver's answer, no raises
            margins = _margins(X, q)
            return _solvers.constrained(model, X, tidx, m, bnd, q.proba, margins, q.tol, q.max_iter)

        def solve_rows(Xr, tr, br, pr, mr):
            return _solvers.constrained(model, Xr, tr, m, br, pr, mr, q.tol, q.max_iter)

    if q.form == "region" or (q.form == "proba" and model.proba_as_region(q.proba)):
        # proba=τ where it is region=True at margin logit τ: with verify.region's raises too
        # (the verdict still asks p ≥ τ)
        margin = q.margin if q.form == "region" else model.theta(q.proba)
        return verify.region(
            model, X, tidx, bnd, margin, lambda Xr, tr, br, mr: solve_rows(Xr, tr, br, q.proba, mr)
        )
    if q.form == "proba":
        return solve_rows(X, tidx, bnd, q.proba, None)
    ref = None if q.method in REDUCED else q.method
    return _solvers.lam(model, X, tidx, m, bnd, lams, q.tol, q.max_iter, ref, W, fmask)


def _margins(X, q):
    """Return the margin of each row of ``X`` for ``region=True`` (None for the other forms)."""
    return np.full(X.shape[0], q.margin) if q.form == "region" else None


def row_problem(ex, X, tidx, q, n):
    """Return the :class:`~fastcf._linear.subsets.RowProblem` of query row ``n``."""
    from .subsets import RowProblem

    Xn, tn = X[n : n + 1], tidx[n : n + 1]
    lams = None if q.lams is None else q.lams[n : n + 1]
    bnd = row_box(q.bnd, [n])
    cost = np.ones(ex.n_features_in_) if q.w is None else q.w

    # Softmax region=True: a node solved lean at a margin within rounding of its need
    # (margin=0 at a tie of the logits) can change other features than the full answer of
    # the same restriction (verify.region raises its margin), which broke max_changes and
    # the flipset rule (a fuzz soak found both). Such a node is solved in full; the others
    # are cleared by a bound in Python floats: with ‖x − x̄‖₂ ≤ d / min w (both metrics),
    # model.need_bound(x) ≤ model.need_of_norm(‖x̄‖ + d / min w), and a margin above it makes
    # verify.region return the lean answer itself.
    careful = q.form == "region" and not ex._model.binary
    model = ex._model
    with np.errstate(over="ignore", invalid="ignore"):
        nx0 = math.sqrt(float(X[n] @ X[n]))
    wmin = 1.0 if q.w is None else float(q.w.min())

    def lean(fmask):
        sol = continuous(ex, Xn, tn, q, fmask, lams, bnd, lean=True)
        if int(sol.status[0]) == _NUMERIC:  # (the lean solvers failed: every fallback)
            return continuous(ex, Xn, tn, q, fmask, lams, bnd)
        if careful and int(sol.status[0]) == _OK:
            d = float(sol.distance[0])
            bound = model.need_of_norm(nx0 + d / wmin) * (1 + 1e-9)
            if not q.margin > bound:  # (NaN or inf: not cleared)
                sol = continuous(ex, Xn, tn, q, fmask, lams, bnd)
        return sol

    def full(fmask):
        return continuous(ex, Xn, tn, q, fmask, lams, bnd)

    def objective(sol):
        if q.form != "lam":
            return sol.distance[0]
        d = sol.distance[0]
        reg = lams[0] * d if q.metric == "manhattan" else 0.5 * lams[0] * d * d
        return reg - ex._model.log_proba_target(sol.x, tn)[0]

    return RowProblem(lean, X[n], objective, cost, full)


def solve(ex, X, tidx, q):
    """Return the :class:`~fastcf.results.Solution` of query ``q`` (all its rows)."""
    if q.max_changes is None:
        return continuous(ex, X, tidx, q, q.fmask)
    return _stage.stack([sparse_row(ex, X, tidx, q, n)[0] for n in range(X.shape[0])])


def sparse_row(ex, X, tidx, q, n, fmask=None, prob=None):
    """Return (sol, value): row ``n`` with at most ``q.max_changes`` changed features.

    ``fmask`` (the user's frozen features by default) and ``prob`` (a fresh
    :class:`~fastcf._linear.subsets.RowProblem` of the row by default) let
    :func:`fastcf._linear.alternatives.enumerate_answers` share one memo of continuous solves
    between its nodes.
    """
    from .subsets import best_subset, top_m_free

    fmask = q.fmask if fmask is None else fmask
    prob = row_problem(ex, X, tidx, q, n) if prob is None else prob
    due = deadline(q.time_limit)
    if q.metric == "euclidean" and q.bnd is None and ex._model.binary:
        # binary, Euclidean, no box: the m free features of largest w_i²/W_i (closed form)
        mask = fmask | top_m_free(ex._model.w, q.w, ~fmask, q.max_changes)
        val = prob.solve(mask)[1]
        info = {"nodes": 1, "solves": 1, "proven": True}
    else:
        val, mask, info = best_subset(prob, fmask, q.max_changes, deadline=due)
    sol = prob.full(mask)  # the answer solved in full (the search's nodes were lean)
    if not math.isfinite(val):
        # no answer within max_changes: the source itself, as other infeasible answers
        x0 = X[n : n + 1].copy()
        P = sol.proba
        if P is not None:
            P = ex._model.proba_from_logits(ex._model.model_logits(x0))
        sol = sol._replace(x=x0, proba=P, distance=np.zeros(1))
    failed = info.get("failed_nodes", 0)
    if not math.isfinite(val) and failed:
        sol = _stage.fail(
            sol,
            Status.NUMERIC,
            f"max_changes: {failed} solve(s) of the branch-and-bound failed numerically; no "
            f"answer changing at most {q.max_changes} features was found",
        )
    elif not math.isfinite(val) and int(sol.status[0]) == _OK:
        sol = _stage.fail(
            sol,
            Status.INFEASIBLE,
            f"no answer changes at most {q.max_changes} "
            "features (increase max_changes, or free features / widen bounds)",
        )
    elif not info["proven"]:
        why = (
            f"{failed} solve(s) of the branch-and-bound failed numerically"
            if failed
            else "time_limit reached"
            if time.perf_counter() > due
            else "node limit of the branch-and-bound reached"
        )
        sol = _stage.fail(
            sol, Status.MAXITER, f"max_changes: {why}; the answer is the best found, not proven "
            "optimal",
        )  # fmt: skip
    return sol._replace(info={**_stage.row_info(sol.info), **info}), val, mask
