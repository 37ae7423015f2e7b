"""The K-space Newton method of problem (2) (paper 000, §3; see :mod:`fastcf._kernels.softmax`).

Stable softmax, G v, the factorisation of λI + T G Tᵀ and the Newton direction, the objective
E(y), :func:`reduced_newton` with its allocation-free core :func:`_newton_core` (shared with the
λ-path and the λ-search), and the cold start :func:`initial_y`.
"""

import math

import numpy as np

from fastcf._status import Status

from .. import kernel
from ..linalg import cholesky_inplace, cholesky_solve_inplace
from .region import region_dual

_EPS = 2.220446049250313e-16
_OK = int(Status.OK)
_MAXITER = int(Status.MAXITER)
_NUMERIC = int(Status.NUMERIC)


@kernel()
def softmax_into(z, p):
    """P ← softmax(z) (shifted by the max); returns log-sum-exp(z)."""
    K = z.shape[0]
    m = z[0]
    for j in range(1, K):
        if z[j] > m:
            m = z[j]
    s = 0.0
    for j in range(K):
        e = math.exp(z[j] - m)
        p[j] = e
        s += e
    for j in range(K):
        p[j] /= s
    return m + math.log(s)


@kernel()
def _matvec(G, v, out):
    """Set out = G v for a symmetric G (exactly: see :class:`_Metric`).

    Each out[i] sums G[i, j] v[j] in the order j = 0, 1, … in both branches (the same bits).
    For small K row by row: each sum stays in a register and the rows overlap. For larger K by
    rows of G used as its columns: the inner loop has no carried sum and runs in SIMD lanes
    (2.2× faster at K = 51), but each out[i] goes through memory K times, a chain of
    store-to-load forwards that made it the top line of a (784, 10) λ-path profile.
    """
    K = v.shape[0]
    if K <= 16:
        for i in range(K):
            acc = 0.0
            for j in range(K):
                acc += G[i, j] * v[j]
            out[i] = acc
        return
    for i in range(K):
        out[i] = 0.0
    for j in range(K):
        vj = v[j]
        for i in range(K):
            out[i] += G[j, i] * vj


# The Newton step's helpers below are kernels of their own, not inline="always" (issue 54):
# inlined, Numba typed and lowered each of them again at every call site (the two objectives
# and the two solves of _newton_core, and those of proba_search and lam_path), and a first
# softmax proba= call compiled about 1.5 s longer; LLVM still inlines them where it pays. They
# allocate nothing and are compiled without reference counting (_nrt=False, as _newton_core):
# with it, each call would count their array arguments up and down.
@kernel(_nrt=False)
def _factor(G, p, lam, M, sp, u):
    """Set sp = √p and the lower triangle of M to chol(λI + T G Tᵀ), T = Π diag(sp), Π = I − sp spᵀ.

    ``u`` is scratch. Returns a status code (OK or NUMERIC).
    """
    K = p.shape[0]
    for j in range(K):
        sp[j] = math.sqrt(p[j])
    # B = diag(sp) G diag(sp); T G Tᵀ = Π B Π = B − sp uᵀ − u spᵀ + (spᵀu) sp spᵀ with u = B sp.
    # Only the lower triangle is formed: the Cholesky reads no other.
    # u = B sp exactly for these sp (not sp ∘ (G p): p ≠ sp² by rounding, and the four terms
    # of Π B Π cancel only for a consistent u; the shortcut and a regrouped formula cost Newton
    # its last digits at logits ~1e5 — soak: 100 iterations at ‖∇E‖ = 1e-9 instead of 8)
    for i in range(K):
        acc = 0.0
        for j in range(K):
            acc += G[i, j] * sp[j] * sp[j]
        u[i] = sp[i] * acc
    cu = 0.0
    for j in range(K):
        cu += sp[j] * u[j]
    jitter = 0.0
    trace = 0.0
    status = _NUMERIC
    for _attempt in range(8):
        if _attempt > 0:
            # numerically indefinite (λ below the rounding level of ‖TGTᵀ‖): rebuild with jitter
            jitter = (jitter * 100.0) if jitter > 0.0 else 1e-14 * max(trace, 1.0)
        trace = 0.0
        for i in range(K):
            for j in range(i + 1):
                M[i, j] = sp[i] * G[i, j] * sp[j] - sp[i] * u[j] - u[i] * sp[j] + cu * sp[i] * sp[j]
            trace += M[i, i]
            M[i, i] += lam + jitter
        status = cholesky_inplace(M, K)
        if status == _OK:
            break
    return status


@kernel(_nrt=False)
def _apply_inverse(M, sp, v, out):
    """Set out = Tᵀ (λI + T G Tᵀ)⁻¹ T v, M and sp from :func:`_factor` (``v`` is overwritten)."""
    K = sp.shape[0]
    c = 0.0
    for j in range(K):
        v[j] *= sp[j]
        c += sp[j] * v[j]
    for j in range(K):
        v[j] -= c * sp[j]
    cholesky_solve_inplace(M, v, K)
    c = 0.0
    for j in range(K):
        c += sp[j] * v[j]
    for j in range(K):
        out[j] = sp[j] * (v[j] - c * sp[j])


@kernel(_nrt=False)
def _objective(zbar, G, y, k, lam, z, p):
    """E(y) with z, p filled in; returns (E, quad, lse) where quad = yᵀ G y."""
    return _objective_gy(zbar, G, y, k, lam, z, z, p)


@kernel(_nrt=False)
def _objective_gy(zbar, G, y, k, lam, gy, z, p):
    """:func:`_objective` that also keeps gy = G y (``gy`` may be ``z``: then it is not kept)."""
    K = y.shape[0]
    _matvec(G, y, gy)
    quad = 0.0
    for j in range(K):
        quad += y[j] * gy[j]
        z[j] = gy[j] + zbar[j]
    lse = softmax_into(z, p)
    return 0.5 * lam * quad + lse - z[k], quad, lse


@kernel(inline="always")
def reduced_newton(zbar, G, GF, k, lam, y, tol, max_iter):
    """Minimise E over y (in place), from the given y. Returns (E, gnorm, quad, nit, status).

    Converged when ‖∇_x E‖ ≤ tol, or at machine precision: when the Newton step no longer changes
    y in floating point, or when no step decreases E and the predicted decrease is below the
    rounding level of E. (``tol=0``, which the public API does not allow, asks for these alone;
    steps accepted at the rounding level of E can then keep moving some component of y by more
    than 4ε, and the solve ends at ``max_iter`` with status 1: in 82 of 600 small random
    problems.)
    Each step backtracks from the unit step with safeguarded quadratic interpolation (factor in
    [0.1, 0.8], Armijo c₁ = 1e−4).
    Status: 0 converged (‖∇E‖ ≤ tol, or machine precision), 1 iteration limit, 4 numerical
    failure (non-finite values, no descent possible above the rounding level).
    """
    K = zbar.shape[0]
    E, gnorm, quad, nit, status, _fac = _newton_core(
        zbar, G, GF, k, lam, y, tol, max_iter, np.empty((13, K)), np.empty((K, K))
    )
    return E, gnorm, quad, nit, status


@kernel(_nrt=False)
def _newton_core(zbar, G, GF, k, lam, y, tol, max_iter, W, M):
    """:func:`reduced_newton` with the caller's work arrays W (13, K) and M (K, K).

    Returns (E, gnorm, quad, nit, status, factored). On return W[0] = z, W[1] = p and
    W[11] = G y at y; when ``factored``, M and sp = W[6] hold the factorisation of the last
    Newton step (:func:`_factor`, at the iterate before the last one) for the caller to reuse.
    Allocates nothing, so it is compiled without reference counting (see :func:`kernel`).
    """
    K = zbar.shape[0]
    z, p, r, Gr, GFr, delta, sp, rhs, ynew, znew, pnew, gy, gynew = (
        W[0],
        W[1],
        W[2],
        W[3],
        W[4],
        W[5],
        W[6],
        W[7],
        W[8],
        W[9],
        W[10],
        W[11],
        W[12],
    )
    # G_F is G_V unless weights are given (see _Metric): then G r is G_F r, one product less
    same = GF.ctypes.data == G.ctypes.data
    factored = False
    E, quad, lse = _objective_gy(zbar, G, y, k, lam, gy, z, p)
    gnorm = np.inf
    for it in range(max_iter + 1):
        for j in range(K):
            r[j] = lam * y[j] + p[j]
        r[k] -= 1.0
        _matvec(GF, r, GFr)
        g2 = 0.0
        for j in range(K):
            g2 += r[j] * GFr[j]
        gnorm = math.sqrt(max(g2, 0.0))
        if not math.isfinite(E) or not math.isfinite(gnorm):
            return E, gnorm, quad, it, _NUMERIC, factored
        if gnorm <= tol:
            return E, gnorm, quad, it, _OK, factored
        if it == max_iter:
            break
        if same:
            for j in range(K):
                Gr[j] = GFr[j]
        else:
            _matvec(G, r, Gr)
        # the direction Δ = −(r − Tᵀ m)/λ with (λI + T G Tᵀ) m = T G r (Gr = G r, gy = G y).
        # Here, not in a kernel of its own: one call, and each level of kernels optimises and
        # emits the code of those below it once more (issue 54)
        factored = _factor(G, p, lam, M, sp, delta) == _OK
        if not factored:
            return E, gnorm, quad, it, _NUMERIC, factored
        if p[k] >= 1e-3:
            # Form B (no division by λ): since p − e_k = −S e_k / p_k, the same step is
            # Δ = −y + Tᵀ M⁻¹ T (G y + e_k / p_k). Form A below cancels O(1) terms and divides
            # by λ, which loses every digit of the small, active-subspace components when
            # λ ≪ ‖G‖; form B is used once the target is reasonably probable (p_k ≥ 1e−3),
            # where 1/p_k is safe.
            for j in range(K):
                rhs[j] = gy[j]
            rhs[k] += 1.0 / p[k]
            _apply_inverse(M, sp, rhs, delta)
            for j in range(K):
                delta[j] -= y[j]
        else:
            # Form A: Δ = −(r − Tᵀ m)/λ, (λI + T G Tᵀ) m = T G r
            for j in range(K):
                rhs[j] = Gr[j]
            _apply_inverse(M, sp, rhs, delta)
            for j in range(K):
                delta[j] = -(r[j] - delta[j]) / lam
        # slope = ∇_y Eᵀ Δ = (G r)ᵀ Δ
        slope = 0.0
        for j in range(K):
            slope += Gr[j] * delta[j]
        # the rounding level of E: its terms cancel, each carries a relative error ε
        Escale = 1.0 + 0.5 * lam * abs(quad) + abs(lse) + abs(z[k])
        at_rounding = abs(slope) <= 64.0 * _EPS * Escale
        alpha = 1.0
        accepted = False
        for _ls in range(100):
            for j in range(K):
                ynew[j] = y[j] + alpha * delta[j]
            Enew, qn, ln = _objective_gy(zbar, G, ynew, k, lam, gynew, znew, pnew)
            if Enew <= E + 1e-4 * alpha * slope or (
                at_rounding and Enew <= E + 64.0 * _EPS * Escale
            ):
                accepted = True
                break
            # safeguarded quadratic interpolation: α ← clip(α*, 0.1 α, 0.8 α), where α* minimises
            # the parabola through E(0), E'(0) and E(α); plain ρ = 0.8 when E(α) is not finite
            denom = 2.0 * (Enew - E - alpha * slope)
            a_q = -slope * alpha * alpha / denom if (math.isfinite(Enew) and denom > 0.0) else 0.0
            alpha = min(0.8 * alpha, max(0.1 * alpha, a_q))
        if not accepted:
            # no decrease can be measured: converged to the rounding level of E if the
            # predicted decrease is below it (gnorm is reported), otherwise a failure
            if abs(slope) <= 1e4 * _EPS * Escale:
                return E, gnorm, quad, it, _OK, factored
            return E, gnorm, quad, it, _NUMERIC, factored
        step_small = True
        for j in range(K):
            if abs(alpha * delta[j]) > 4.0 * _EPS * max(abs(y[j]), 1e-300):
                step_small = False
        for j in range(K):
            y[j] = ynew[j]
            z[j] = znew[j]
            p[j] = pnew[j]
            gy[j] = gynew[j]
        E = Enew
        quad = qn
        lse = ln
        if step_small:  # y no longer changes in floating point: machine precision reached
            return E, gnorm, quad, it + 1, _OK, factored
    return E, gnorm, quad, max_iter, _MAXITER, factored


@kernel(inline="always")
def initial_y(zbar, G, k, lam, y):
    """Set the cold start y of problem (2).

    y = 0 (x = x̄) if the target already has the largest logit. Otherwise we also try the
    closest point where the target ties with the best class (the region dual with margin 0,
    K−1 variables, a few µs) and keep whichever has the lower E: from x̄, E is exponential-like
    along the way to the target's region and Newton needs many damped steps (the more, the
    farther the target), while from the tie point it is in its quadratic regime within a few
    steps. Measured (paper's problem mix, 80 problems each): mean/max Newton iterations 14/24 →
    6/7 at (784, 10), 14/23 → 6.5/9 at (8192, 16), 7.7/19 → 5/7 on digits.
    """
    K = zbar.shape[0]
    for j in range(K):
        y[j] = 0.0
    zmax = zbar[0]
    for j in range(K):
        zmax = max(zmax, zbar[j])
    if zmax - zbar[k] <= 0.0:
        return
    nu = np.empty(K)
    _nit, status = region_dual(zbar, G, k, 0.0, 1e-12, 10 * K + 100, nu)
    if status != _OK:
        return
    yr = np.empty(K)
    s = 0.0
    for j in range(K):
        yr[j] = -nu[j]
        s += nu[j]
    yr[k] = s
    z = np.empty(K)
    p = np.empty(K)
    # _objective_gy with gy = z, as _objective: not through that kernel, one level less to
    # optimise and emit in every batch kernel of problem (2) (issue 54)
    E0, _q0, _l0 = _objective_gy(zbar, G, y, k, lam, z, z, p)
    Er, _qr, _lr = _objective_gy(zbar, G, yr, k, lam, z, z, p)
    if Er < E0:
        for j in range(K):
            y[j] = yr[j]
