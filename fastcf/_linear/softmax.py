"""Softmax models by the K-space Newton method (paper 000, §3).

The kernels are those of :mod:`fastcf._kernels.softmax`, whose docstring derives the reduction.

Stationarity of problem (2) puts x* − x̄ in the range of V Aᵀ: with x = x̄ + V Aᵀ y (y ∈ R^K) and
G = A V Aᵀ, the logits are z̄ + G y and ‖x − x̄‖²_W = yᵀ G y, so every solver here works on K
unknowns and touches the D features only to form z̄ = A x̄ + b and the answer x̄ + (Y A) ∘ v.

* :func:`reduced_lam`: problem (2) for N queries, every Newton step of every row in one kernel
  call (``reduced_rows``), with the rounding certificate of each success;
* :func:`constrained`: ``proba=τ`` by a search over λ (:func:`proba_solution`: ``proba_rows``,
  safeguarded Newton in log λ on the target's log-odds, judged in the model's own arithmetic by
  :func:`judge`, with re-solves where it puts the answer below τ), and ``region=True``
  by the (K−1)-variable dual QP of the target's region (:func:`region_solution`:
  ``region_rows``, an exact active set);
* :func:`reduced_path`: problem (2) along a grid of λ, warm-started (§3.4; ``lam_path``).

These judge their own answers (the kernels' verdicts and certificates, :func:`judge`); the rows
whose region dual is singular are re-solved by :mod:`.singular` and finished by the linear
solvers' one finish (:func:`fastcf._linear.verify.finish`).
"""

from __future__ import annotations

import math

import numpy as np

from .._kernels import linalg
from .._kernels import softmax as _sk
from .._kernels import verdict as _vk
from .._resolve import ROUNDS, raise_at_least, raise_log_tau
from .._stage import reaim, replace_rows
from .._status import Status
from ..results import Solution
from .singular import region_singular, resolve_singular
from .verify import Raw, finish, path_result

__all__ = ["constrained", "reduced_lam", "reduced_path", "region_singular"]

# the codes as plain ints: NumPy compares an array with an int much faster than with an
# IntEnum member (as the kernels do, see fastcf._kernels)
_NUMERIC = int(Status.NUMERIC)
_OK = int(Status.OK)
_PENDING = int(Status.PENDING)
_INFEASIBLE = int(Status.INFEASIBLE)
_UNREACHABLE = int(Status.UNREACHABLE)
_MAXITER = int(Status.MAXITER)
_EPS_F = float(np.finfo(float).eps)


# The row functions of the three forms, in the mode of _sk.row_mode: the row kernels (modes 0 and
# 1), or for a large A (mode BLAS) the products by BLAS and the K-space part by kernels. Either
# way every row runs the same code alone or in a batch, so its answer has the same bits.


def rows_reduced(model, X, tidx, lams, m, tol, max_iter):
    """Problem (2) for N rows: (X*, P, quad, gnorm, nit, status, cert), as ``reduced_rows``."""
    A_, b = model.A, model.b
    mode = _sk.row_mode(*X.shape, A_.shape[0])
    if mode != _sk.BLAS:
        return _sk.reduced_rows(
            X, A_, b, m.GV, m.GF, tidx, lams, tol, max_iter, m.v, m.unit_v, model.gamma, mode
        )
    Zbar = _sk.blas_logits(X, A_, b)
    Y, quad, gn, nit, st = _sk.kspace_reduced(Zbar, m.GV, m.GF, tidx, lams, tol, max_iter)
    Xs = _sk.blas_expand(X, Y, A_, m.v, m.unit_v)
    Z = _sk.blas_logits(Xs, A_, b)
    # the certificate's scales: first the cheap upper bound ‖a_j‖ ‖x*‖ + |b_j| (Cauchy–Schwarz;
    # 1 + 8γ covers its own rounding), the exact |A||x*| + |b| (another product) only for the
    # successes that bound cannot certify: the outcome is that of the exact scales
    g = model.gamma
    with np.errstate(over="ignore", invalid="ignore"):
        nx = np.sqrt(np.einsum("ij,ij->i", Xs, Xs))
        S = (nx[:, None] * model.row_norms + model.abs_b) * (1 + 8 * g)
    P, status, cert = _sk.verdict_rows(Xs, Z, S, tidx, g, quad, st)
    redo = np.flatnonzero((status == _OK) & ~cert)
    if redo.size:
        with np.errstate(over="ignore", invalid="ignore"):
            S = _sk.blas_logits(np.abs(Xs[redo]), model.abs_A, model.abs_b)
        _P, st2, cert2 = _sk.verdict_rows(Xs[redo], Z[redo], S, tidx[redo], g, quad[redo], st[redo])
        status[redo], cert[redo] = st2, cert2
    return Xs, P, quad, gn, nit, status, cert


def rows_region(model, X, tidx, margins, m, tol, max_iter):
    """``region=True`` for N rows: (X*, dist, nit, status), as ``region_rows``."""
    A_, b = model.A, model.b
    mode = _sk.row_mode(*X.shape, A_.shape[0])
    if mode != _sk.BLAS:
        return _sk.region_rows(X, A_, b, m.GV, tidx, margins, tol, max_iter, m.v, m.unit_v, mode)
    Zbar = _sk.blas_logits(X, A_, b)
    Y, nit, st = _sk.region_batch(Zbar, m.GV, tidx, margins, tol, max_iter, False)
    Xs = _sk.blas_expand(X, Y, A_, m.v, m.unit_v)
    dist, status = _sk.kspace_finish(Xs, Y, m.GV, st)
    return Xs, dist, nit, status


def rows_proba(model, X, tidx, log_taus, m, tol, max_iter, warm=None):
    """``proba=τ`` for N rows: (X*, Y, dist, lam, nit, status), as ``proba_rows``."""
    A_, b = model.A, model.b
    D = X.shape[1]
    mode = _sk.row_mode(*X.shape, A_.shape[0])
    if mode != _sk.BLAS:
        return _sk.proba_rows(
            X, A_, b, m.GV, m.GF, tidx, log_taus, tol, max_iter, m.v, m.unit_v, mode, warm
        )
    Zbar = _sk.blas_logits(X, A_, b)
    Y, lam, nit, st = _sk.proba_batch(
        Zbar, m.GV, m.GF, tidx, log_taus, tol, max_iter, False, warm, _sk.aim_ulps(D)
    )
    Xs = _sk.blas_expand(X, Y, A_, m.v, m.unit_v)
    dist, status = _sk.kspace_finish(Xs, Y, m.GV, st)
    return Xs, Y, dist, lam, nit, status


def reduced_lam(model, X, tidx, lams, m, tol, max_iter):
    """Problem (2) by the reduced Newton, every step of every row in one kernel call.

    ‖x − x̄‖²_W = yᵀ G y and ‖∇E‖ come from the K-space solver; the logits of the answer,
    their rounding scale, the probabilities and the verdict from the pass that forms it.
    Successes that the rounding bound certifies (``certified``) are not rechecked by
    the explainer's verification.
    """
    Xs, P, quad, gn, nit, status, cert = rows_reduced(model, X, tidx, lams, m, tol, max_iter)
    dist = np.sqrt(np.maximum(quad, 0.0))
    return Solution.of(Xs, P, dist, status == _OK, status, nit, "reduced", lams, gn, cert)


PROBA_METHOD = "reduced (λ search)"
REGION_METHOD = "reduced (dual active set)"


def judge(model, Xs, tidx, status, proba=None):
    """Return (P, status, certified): the verdict of ``proba=τ`` / ``region=True`` answers.

    The model's own arithmetic: BLAS's logits one row at a time (``check_logits``, the bits of
    ``predict_proba`` of the row) and their softmax. A row whose solver converged (OK) becomes,
    with ``proba=τ``, PENDING where p_k < τ (to be re-solved for a higher τ) and BELOW_DECISION
    where p_k ≥ τ but another class wins (argmax, ties to the first class, as ``predict``); with
    ``region=True`` (``proba`` None) NUMERIC where another class wins (the margin was lost to
    rounding: ``verify.region`` re-solves with a larger one). The others stay OK, certified where
    the target wins by more than the cheap bound of the rounding need (``need_bound``), so that
    the explainer's verification need not recheck them.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        Z = model.check_logits(Xs)
        P = model.proba_from_logits(Z)
    # the rules in one kernel on the model's Z and P (a score of NumPy calls on (N,) arrays
    # cost a single query more than its solve)
    status, cert, n_near = _vk.softmax_judge(
        Xs, Z, P, tidx, status,
        math.nan if proba is None else float(proba), model.gamma, model.max_row_norm,
        model.max_abs_b,
    )  # fmt: skip
    if n_near:
        # p_k ≥ τ, the target first, but within rounding of the class boundary (τ = 1/2
        # with two classes in contention: p_k = τ puts the answer on it): re-solved for a
        # higher τ (PENDING), as the verification would call it a numerical failure
        rest = np.flatnonzero((status == _OK) & ~cert)
        with np.errstate(over="ignore", invalid="ignore"):
            need = model.rounding_need(Xs[rest], tidx[rest])
            tm = model.target_margin(Z[rest], tidx[rest])
        status[rest[~(np.isfinite(need) & (tm > need))]] = _PENDING
    return P, status, cert


def proba_solution(model, X, tidx, m, proba, tol, max_iter):
    """``proba=τ`` for N queries without bounds: the λ-search in one kernel call per round.

    ``proba_rows`` solves and forms each answer; :func:`judge` judges it in the model's
    own arithmetic. The search meets τ in K-space arithmetic (z̄ + G y), and the logits of the
    formed point round differently, by more as D grows (the search aims inside τ by about as
    much, ``lamsearch.aim_ulps``): rows short of τ are re-solved, warm, for log τ raised by twice
    the shortfall (:func:`raise_log_tau`), at most :data:`~fastcf._resolve.ROUNDS` times, the
    last time by at least the worst case of the logits' rounding (``model.rounding_need``: two
    evaluations of log p_k differ by less). Rows still short then fail (NUMERIC).
    """
    N = X.shape[0]
    log_tau = np.full(N, math.log(proba))
    Xs, Y, dist, lamv, nit, st = rows_proba(model, X, tidx, log_tau, m, tol, max_iter)
    P, status, cert = judge(model, Xs, tidx, st, proba)
    ok = status == _OK
    if np.count_nonzero(ok) == N:  # nothing to re-solve or to reconsider
        return Solution.of(Xs, P, dist, ok, status, nit, PROBA_METHOD, lamv, None, cert)
    p = P[np.arange(N), tidx]
    # a search that ran out of iterations where z̄ is far larger than the answer's logits (z̄ ~
    # 10⁹ against log τ: z̄ + G y cancels, and log p_k in K-space carries ε |z̄| of noise, more
    # than the search's tolerance) is re-solved once, aiming inside τ by twice that rounding
    stuck = np.flatnonzero(status == _MAXITER)
    if stuck.size:
        with np.errstate(over="ignore", invalid="ignore"):
            src = model.rounding_need(X[stuck], tidx[stuck])
        far = np.isfinite(src) & (src > 1e-12)
        stuck, src = stuck[far], src[far]

    def pick(_state, r):
        idx = np.flatnonzero(status == _PENDING)
        if r == 0 and stuck.size:
            idx = np.union1d(idx, stuck)
        if idx.size == 0:
            return idx
        up = raise_log_tau(proba, p[idx])
        if r == 0 and stuck.size:
            at = np.searchsorted(idx, stuck)
            up[at] = raise_at_least(proba, up[at], 2 * src)
        met = p[idx] >= proba  # not short of τ: within rounding of the class boundary
        if met.any():
            # the target's margin grows by Δ log τ / p_c (p_c ≤ 1 − τ: the class in contention)
            # when log τ grows by Δ: raise it by twice the rounding need
            need = model.finite_need(Xs[idx[met]], tidx[idx[met]])
            up[met] = raise_at_least(proba, up[met], 2 * need + 8 * _EPS_F)
        if r == ROUNDS - 1:
            # the last re-solve: at least the worst case of the logits' rounding, which bounds
            # how far two evaluations of log p_k can differ (see model.rounding_need)
            up = raise_at_least(proba, up, model.finite_need(Xs[idx], tidx[idx]))
        log_tau[idx] += up
        return idx

    def solve(idx):
        warm = (Y[idx], lamv[idx])
        return rows_proba(model, X[idx], tidx[idx], log_tau[idx], m, tol, max_iter, warm=warm)

    def merge(state, idx, out):
        Xs[idx], Y[idx], dist[idx], lamv[idx], nit2, st2 = out
        nit[idx] += nit2
        P[idx], status[idx], cert[idx] = judge(model, Xs[idx], tidx[idx], st2, proba)
        p[idx] = P[idx, tidx[idx]]
        return state

    reaim(None, pick, solve, merge)
    status[status == _PENDING] = _NUMERIC  # still short of τ after the re-solves
    # (τ at or below p_k(x̄) as the model computes it, not as the search does: the explainer's
    # route.keep_source puts x̄ itself there)
    status = honest_infeasible(model, X, tidx, m, proba, status)
    success = status == _OK
    return Solution.of(Xs, P, dist, success, status, nit, PROBA_METHOD, lamv, None, cert)


def honest_infeasible(model, X, tidx, m, proba, status):
    """Return ``status`` with INFEASIBLE rows of ``proba=τ`` made NUMERIC where τ is reachable.

    The λ-search calls τ out of reach when p_k stays below it down to λ ~ e⁻⁸⁰ λ₀. Where the
    logits of x̄ are huge (~10¹⁰) the K-space arithmetic z̄ + G y cancels, and that can happen
    to a reachable τ. The region form is exact there: a point with z_k − z_j ≥ log(τ (K − 1) /
    (1 − τ)) for every j has p_k ≥ τ, so where the region solver finds one, τ is reachable and
    the failure is numerical, not infeasibility. Nor is the claim kept where the region solver
    fails itself (a numerical failure, the iteration limit: soak round Q, logits ~1.6·10⁶ with
    two classes whose rows are 0), rather than finding the region out of reach too: the row is
    a numerical failure, which the caller's input-space re-solve
    (``fallbacks.input_space_retry``) then takes up.
    """
    rows = np.flatnonzero(status == _INFEASIBLE)
    if rows.size == 0:
        return status
    K = model.A.shape[0]
    # a point with z_k − z_j ≥ log(τ (K − 1) / (1 − τ)) for every j has p_k ≥ τ: that margin with
    # room (1e-6), negative where τ < 1/K. Raised to 1e-6 (or to 0), a τ < 1/K where a
    # competitor's row equals the target's (soak round R, seed 344), or beats it by a constant
    # (b_j − b_k = 1, seed 361), was refuted by nothing, and "infeasible" stood
    margin = math.log(proba * (K - 1)) - math.log1p(-proba) + 1e-6
    margins = np.full(rows.size, margin)
    sol = region_solution(model, X[rows], tidx[rows], m, margins)
    out_of_reach = (sol.status == _INFEASIBLE) | (sol.status == _UNREACHABLE)
    status = status.copy()
    status[rows[~out_of_reach]] = _NUMERIC
    return status


def constrained(model, X, tidx, m, proba, margins, tol, max_iter):
    """``proba=τ`` (``margins`` None) or ``region=True`` (``margins``: one per row)."""
    if proba is not None:
        return proba_solution(model, X, tidx, m, proba, tol, max_iter)
    return region_solution(model, X, tidx, m, margins)


def region_solution(model, X, tidx, m, margins):
    """``region=True`` for N queries without bounds: ``region_rows``, one kernel call.

    The kernel solves each row's dual and forms the answer (two passes over A);
    :func:`judge` judges it in the model's own arithmetic, with the certificate that
    spares the explainer's verification its recheck. Rows whose dual is singular (PENDING) are
    solved by :func:`region_singular` and finished (:func:`fastcf._linear.verify.finish`).
    """
    K = model.A.shape[0]
    Xs, dist, nit, status = rows_region(model, X, tidx, margins, m, 1e-12, 10 * K + 100)
    P, status, cert = judge(model, Xs, tidx, status)
    ok = status == _OK
    sol = Solution.of(Xs, P, dist, ok, status, nit, REGION_METHOD, None, None, cert)
    if np.count_nonzero(ok) == ok.shape[0]:
        return sol
    pend = np.flatnonzero(status == _PENDING)
    if pend.size:  # a singular dual: the rank-revealing solve
        X1, t1, mg = X[pend], tidx[pend], margins[pend]
        Zbar = model.logits(X1)
        Y, nit1, st1 = _sk.region_batch(Zbar, m.GV, t1, mg, 1e-12, 10 * K + 100, pend.size > 1)
        resolve_singular(Zbar, t1, mg, Y, st1, model.A, m.v)
        raw = Raw(model.expand(X1, Y, m), nit1, st1, None, REGION_METHOD)
        sub = finish(model, X1, t1, m, None, raw)
        nit[pend] = 0  # (replace_rows adds the re-solve's iterations)
        sol = replace_rows(sol, pend, sub)
    return sol


def reduced_path(model, x0, k, target, lams, m, warm, tol, max_iter, names, xx=None):
    """Solve the λ-path of a softmax model without bounds in one kernel call (``lam_path``).

    ``xx``: x0·x0 if the caller has it.
    """
    A_, v = model.A, m.v
    x0norm = math.sqrt(linalg.dot(x0, x0) if xx is None else xx)
    if not math.isfinite(x0norm):  # x0·x0 overflowed
        x0norm = float(np.linalg.norm(x0))
    zbar = model.logits(x0[None, :])[0]
    Y, P, dist, gn, nit, status, ndoubt = _sk.lam_path(
        zbar,
        m.GV,
        m.GF,
        k,
        lams,
        tol,
        max_iter,
        warm,
        model.row_norms,
        x0norm,
        model.abs_b,
        m.vmax,
        model.gamma_path,
    )

    def form(Yr):
        out = Yr @ A_
        out *= v
        out += x0
        return out

    def XL():  # formed on first access of path.X
        return form(Y)

    # the K-space logits decide the class only where their rounding cannot: under
    # cancellation in G y (a target that can never win, λ → 0, y huge) they can name the
    # target while the point itself is in another class (soak finding); such rows (PENDING)
    # are formed and rechecked as explain() rechecks (model.surely_in)
    if ndoubt:
        rows = np.flatnonzero(status == _PENDING)
        good = model.surely_in(form(Y[rows]), np.full(rows.size, k))[0]
        status[rows] = np.where(good, _OK, _NUMERIC)
    raw = Raw(XL, nit, status, lams, "reduced", distance=dist, grad_norm=gn)
    return path_result(model, x0, k, target, raw, names, P)
