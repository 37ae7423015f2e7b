"""The λ-search of ``proba=τ``: min ‖x − x̄‖_W s.t. p_k(x) ≥ τ through problem (2).

A safeguarded regula falsi (Illinois) in log λ, each evaluation a warm-started
:func:`~fastcf._kernels.softmax.core.reduced_newton` solve (:func:`proba_search`).
"""

import math

import numpy as np
from numba import prange

from fastcf._status import Status

from .. import kernel
from .core import _matvec, reduced_newton, softmax_into

_OK = int(Status.OK)
_INFEASIBLE = int(Status.INFEASIBLE)
_NUMERIC = int(Status.NUMERIC)


@kernel()
def _log_pk(zbar, G, y, k):
    K = y.shape[0]
    z = np.empty(K)
    p = np.empty(K)
    _matvec(G, y, z)
    for j in range(K):
        z[j] += zbar[j]
    return z[k] - softmax_into(z, p)


@kernel()
def proba_search(zbar, G, GF, k, log_tau, tol, max_iter, y):
    """Solve min ‖x − x̄‖_W s.t. p_k ≥ τ through problem (2).

    p_k(x*(λ)) decreases with λ, so the constrained optimum is x*(λ) at the λ where p_k = τ
    (its KKT multiplier is 1/λ).

    A safeguarded regula falsi (Illinois) in t = log λ on f(t) = log p_k(x*(e^t)) − log τ,
    each evaluation a warm-started reduced Newton solve. The returned y is the solution on the
    feasible side of the bracket (p_k ≥ τ). Returns (lam, nit_total, status): OK converged,
    INFEASIBLE τ unreachable (p_k stays below τ as λ → 0), NUMERIC numerical failure.
    """
    K = zbar.shape[0]
    for j in range(K):
        y[j] = 0.0
    z0 = _log_pk(zbar, G, y, k)
    if z0 >= log_tau:
        return np.inf, 0, _OK
    total = 0
    y_ok = np.empty(K)
    # bracket: find t_lo with f ≥ 0 (feasible) and t_hi with f < 0, stepping by a factor 10 in λ
    t = 0.0
    _E, _g, _q, nit, st = reduced_newton(zbar, G, GF, k, math.exp(t), y, 0.0, max_iter)
    total += nit
    f = _log_pk(zbar, G, y, k) - log_tau
    t_lo = np.nan
    t_hi = np.nan
    f_lo = 0.0
    f_hi = 0.0
    if f >= 0.0:
        t_lo = t
        f_lo = f
        for j in range(K):
            y_ok[j] = y[j]
        while True:
            t += 2.302585092994046
            if t > 80.0:
                return np.nan, total, _NUMERIC
            _E, _g, _q, nit, st = reduced_newton(zbar, G, GF, k, math.exp(t), y, 0.0, max_iter)
            total += nit
            f = _log_pk(zbar, G, y, k) - log_tau
            if f < 0.0:
                t_hi = t
                f_hi = f
                break
            t_lo = t
            f_lo = f
            for j in range(K):
                y_ok[j] = y[j]
    else:
        t_hi = t
        f_hi = f
        while True:
            t -= 2.302585092994046
            if t < -80.0:  # λ ≈ 1e−35 and still p_k < τ: the target cannot reach τ
                return math.exp(t), total, _INFEASIBLE
            _E, _g, _q, nit, st = reduced_newton(zbar, G, GF, k, math.exp(t), y, 0.0, max_iter)
            total += nit
            f = _log_pk(zbar, G, y, k) - log_tau
            if f >= 0.0:
                t_lo = t
                f_lo = f
                for j in range(K):
                    y_ok[j] = y[j]
                break
            t_hi = t
            f_hi = f
    # Illinois regula falsi on [t_lo, t_hi] (f_lo ≥ 0 > f_hi)
    side = 0
    for _it in range(200):
        if f_lo <= 2e-15 or (t_hi - t_lo) <= 1e-15 * max(1.0, abs(t_lo)):
            break
        t = (t_lo * f_hi - t_hi * f_lo) / (f_hi - f_lo)
        if not (t_lo < t < t_hi):
            t = 0.5 * (t_lo + t_hi)
        for j in range(K):
            y[j] = y_ok[j]
        _E, _g, _q, nit, st = reduced_newton(zbar, G, GF, k, math.exp(t), y, 0.0, max_iter)
        total += nit
        if st == _NUMERIC:
            return math.exp(t), total, _NUMERIC
        f = _log_pk(zbar, G, y, k) - log_tau
        if f >= 0.0:
            t_lo = t
            f_lo = f
            for j in range(K):
                y_ok[j] = y[j]
            if side == -1:
                f_hi *= 0.5
            side = -1
        else:
            t_hi = t
            f_hi = f
            if side == 1:
                f_lo *= 0.5
            side = 1
    for j in range(K):
        y[j] = y_ok[j]
    return math.exp(t_lo), total, _OK


@kernel()
def _proba_serial(Zbar, G, GF, ks, log_taus, tol, max_iter):
    N, K = Zbar.shape
    Y = np.empty((N, K))  # proba_search sets y to 0 first
    lam = np.empty(N)
    nit = np.empty(N, dtype=np.int64)
    status = np.empty(N, dtype=np.int64)
    for n in range(N):
        lam[n], nit[n], status[n] = proba_search(
            Zbar[n], G, GF, ks[n], log_taus[n], tol, max_iter, Y[n]
        )
    return Y, lam, nit, status


@kernel(parallel=True)
def _proba_parallel(Zbar, G, GF, ks, log_taus, tol, max_iter):
    N, K = Zbar.shape
    Y = np.empty((N, K))  # proba_search sets y to 0 first
    lam = np.empty(N)
    nit = np.empty(N, dtype=np.int64)
    status = np.empty(N, dtype=np.int64)
    for n in prange(N):
        lam[n], nit[n], status[n] = proba_search(
            Zbar[n], G, GF, ks[n], log_taus[n], tol, max_iter, Y[n]
        )
    return Y, lam, nit, status


def proba_batch(Zbar, G, GF, ks, log_taus, tol, max_iter, parallel):
    """proba_search for N queries: returns (Y, lam, nit, status).

    ``parallel``: over the rows, in a ``parallel=True`` kernel; otherwise a serial kernel (the
    same row code, so the same bits, and a first call that compiles several times faster).
    """
    if parallel:
        return _proba_parallel(Zbar, G, GF, ks, log_taus, tol, max_iter)
    return _proba_serial(Zbar, G, GF, ks, log_taus, tol, max_iter)
