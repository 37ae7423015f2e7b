"""Softmax inverse classification in the K-dimensional space (paper 000, §3), batched.

Problem (2) with a diagonal metric W (V = W⁻¹, 0 on frozen features):

    min_x  E(x) = λ/2 ‖x − x̄‖²_W − log p_k(x),   z(x) = A x + b.

Stationarity, λ W (x − x̄) + Aᵀ(p − e_k) = 0, puts x* − x̄ in the range of V Aᵀ. Writing
x = x̄ + V Aᵀ y (y ∈ R^K) and G = A V Aᵀ (K×K, computed once per explainer and metric):

    z(y) = z̄ + G y,    ‖x − x̄‖²_W = yᵀ G y,
    E(y) = λ/2 yᵀ G y + lse(z(y)) − z_k(y),
    ∇_x E = Aᵀ r (on free features)  with  r = λ y + p − e_k.

The D-dimensional Newton step restricted to this subspace is x ← x + V Aᵀ Δ with
(λ I + S G) Δ = −r, S = diag(p) − p pᵀ. We never form that non-symmetric system and never divide
by p_j (which underflows for far classes): with T = Π diag(√p), Π = I − √p √pᵀ, one has S = Tᵀ T and

    Δ = −(r − Tᵀ m) / λ,   (λ I + T G Tᵀ) m = T G r,

where λI + T G Tᵀ is symmetric positive definite with eigenvalues ≥ λ (Cholesky, status code).
Each iteration costs O(K³), independent of D; rank-deficient G (D < K − 1, duplicated weight rows)
is fine because nothing inverts G. ‖∇_x E‖² = rᵀ G_F r with G_F = A F Aᵀ (F = free-feature mask),
equal to G when W = I.
"""

import math

import numpy as np
from numba import prange

from . import kernel
from .linalg import cholesky_inplace, cholesky_solve_inplace
from .linalg import dot as _dot
from .linalg import dot_abs as _dot_abs

_EPS = 2.220446049250313e-16
_PREDICTION_BUDGET = 10  # Newton iterations from a λ-path prediction before the fallback


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


@kernel(inline="always")
def _factor(G, p, lam, M, sp, u):
    """Set sp = √p and the lower triangle of M to chol(λI + T G Tᵀ), T = Π diag(sp), Π = I − sp spᵀ.

    ``u`` is scratch. Returns a status code (0 or 4).
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
    status = 4
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
        if status == 0:
            break
    return status


@kernel(inline="always")
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


@kernel(inline="always")
def _newton_direction(G, p, r, y, gy, k, lam, M, sp, Gr, rhs, delta):
    """Δ = −(r − Tᵀ m)/λ with (λI + T G Tᵀ) m = T G r, given Gr = G r and gy = G y.

    Returns a status code (0 or 4) and leaves M, sp (the factorisation) for the caller.
    """
    K = p.shape[0]
    status = _factor(G, p, lam, M, sp, delta)
    if status != 0:
        return status
    if p[k] >= 1e-3:
        # Form B (no division by λ): since p − e_k = −S e_k / p_k, the same step is
        # Δ = −y + Tᵀ M⁻¹ T (G y + e_k / p_k). Form A below cancels O(1) terms and divides by λ,
        # which loses every digit of the small, active-subspace components when λ ≪ ‖G‖;
        # form B is used once the target is reasonably probable (p_k ≥ 1e−3), where 1/p_k is safe.
        for j in range(K):
            rhs[j] = gy[j]
        rhs[k] += 1.0 / p[k]
        _apply_inverse(M, sp, rhs, delta)
        for j in range(K):
            delta[j] -= y[j]
        return 0
    # Form A: Δ = −(r − Tᵀ m)/λ, (λI + T G Tᵀ) m = T G r
    for j in range(K):
        rhs[j] = Gr[j]
    _apply_inverse(M, sp, rhs, delta)
    for j in range(K):
        delta[j] = -(r[j] - delta[j]) / lam
    return 0


@kernel(inline="always")
def _objective(zbar, G, y, k, lam, z, p):
    """E(y) with z, p filled in; returns (E, quad, lse) where quad = yᵀ G y."""
    return _objective_gy(zbar, G, y, k, lam, z, z, p)


@kernel(inline="always")
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


@kernel()
def reduced_newton(zbar, G, GF, k, lam, y, tol, max_iter, trials):
    """Minimise E over y (in place), from the given y. Returns (E, gnorm, quad, nit, status).

    Converged when ‖∇_x E‖ ≤ tol, or at machine precision: when the Newton step no longer changes
    y in floating point, or when no step decreases E and the predicted decrease is below the
    rounding level of E. (``tol=0``, which the public API does not allow, asks for these alone;
    steps accepted at the rounding level of E can then keep moving some component of y by more
    than 4ε, and the solve ends at ``max_iter`` with status 1: in 82 of 600 small random
    problems.)
    ``trials[i]`` receives the number of step sizes tried at iteration i (backtracking from the
    unit step with safeguarded quadratic interpolation, factor in [0.1, 0.8], Armijo c₁ = 1e−4).
    Status: 0 converged (‖∇E‖ ≤ tol, or machine precision), 1 iteration limit, 4 numerical
    failure (non-finite values, no descent possible above the rounding level).
    """
    K = zbar.shape[0]
    E, gnorm, quad, nit, status, _fac = _newton_core(
        zbar, G, GF, k, lam, y, tol, max_iter, trials, np.empty((13, K)), np.empty((K, K))
    )
    return E, gnorm, quad, nit, status


@kernel(_nrt=False)
def _newton_core(zbar, G, GF, k, lam, y, tol, max_iter, trials, W, M):
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
            return E, gnorm, quad, it, 4, factored
        if gnorm <= tol:
            return E, gnorm, quad, it, 0, factored
        if it == max_iter:
            break
        if same:
            for j in range(K):
                Gr[j] = GFr[j]
        else:
            _matvec(G, r, Gr)
        st = _newton_direction(G, p, r, y, gy, k, lam, M, sp, Gr, rhs, delta)
        factored = st == 0
        if st != 0:
            return E, gnorm, quad, it, 4, factored
        # slope = ∇_y Eᵀ Δ = (G r)ᵀ Δ
        slope = 0.0
        for j in range(K):
            slope += Gr[j] * delta[j]
        # the rounding level of E: its terms cancel, each carries a relative error ε
        Escale = 1.0 + 0.5 * lam * abs(quad) + abs(lse) + abs(z[k])
        at_rounding = abs(slope) <= 64.0 * _EPS * Escale
        alpha = 1.0
        accepted = False
        ntried = 0
        for _ls in range(100):
            ntried += 1
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
        if it < trials.shape[0]:
            trials[it] = ntried
        if not accepted:
            # no decrease can be measured: converged to the rounding level of E if the
            # predicted decrease is below it (gnorm is reported), otherwise a failure
            if abs(slope) <= 1e4 * _EPS * Escale:
                return E, gnorm, quad, it, 0, factored
            return E, gnorm, quad, it, 4, factored
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
            return E, gnorm, quad, it + 1, 0, factored
    return E, gnorm, quad, max_iter, 1, factored


@kernel()
def region_dual(zbar, G, k, margin, tol, max_iter, nu):
    """Closest point (in the metric of G) with z_k − z_j ≥ margin for all j ≠ k.

    Primal: min ½‖x − x̄‖²_W s.t. (a_k − a_j)·x + b_k − b_j ≥ margin. With x = x̄ + V Dᵀ ν
    (rows of D: a_k − a_j), the dual is the (K−1)-variable QP

        max_{ν ≥ 0}  cᵀν − ½ νᵀ Q ν,   Q = D V Dᵀ,  c_j = margin − (z̄_k − z̄_j),

    with Q_ij = G_kk − G_kj − G_ik + G_ij read off G. Solved exactly by an active-set method
    (Lawson–Hanson style: add the most violated dual constraint, solve the equality-constrained
    subproblem by Cholesky, step back to feasibility, drop indices that reach 0).

    ``nu`` (K,) receives the multipliers (nu[k] = 0); the step in y-coordinates is y = −ν except
    y_k = Σν. Returns (nit, status): 0 optimal, 1 iteration limit, 3 infeasible (the target cannot
    win: a singular direction along which the margin can never be met).
    """
    K = zbar.shape[0]
    m = K - 1
    # ν = 0 (x = x̄) unless a solution is found: the infeasible returns below leave it so (they
    # used to leave the caller's np.empty garbage, a different "answer" on every call; soak)
    for j in range(K):
        nu[j] = 0.0
    idx = np.empty(m, dtype=np.int64)
    t = 0
    for j in range(K):
        if j != k:
            idx[t] = j
            t += 1
    Q = np.empty((m, m))
    c = np.empty(m)
    for a in range(m):
        ja = idx[a]
        c[a] = margin - (zbar[k] - zbar[ja])
        for b in range(m):
            jb = idx[b]
            Q[a, b] = G[k, k] - G[k, jb] - G[ja, k] + G[ja, jb]
    scale = 1.0
    for a in range(m):
        scale = max(scale, abs(Q[a, a]))
    x = np.zeros(m)
    inP = np.zeros(m, dtype=np.bool_)
    wgrad = np.empty(m)
    s = np.empty(m)
    L = np.empty((m, m))
    Pidx = np.empty(m, dtype=np.int64)
    nit = 0
    status = 1
    for outer in range(max_iter):
        nit = outer
        # dual gradient w = c − Q x
        best = -1
        bestv = tol * max(1.0, scale)
        for a in range(m):
            acc = c[a]
            for b in range(m):
                acc -= Q[a, b] * x[b]
            wgrad[a] = acc
            if not inP[a] and acc > bestv:
                bestv = acc
                best = a
        if best < 0:
            status = 0
            break
        inP[best] = True
        for _inner in range(m + 1):
            nP = 0
            for a in range(m):
                if inP[a]:
                    Pidx[nP] = a
                    nP += 1
            for a in range(nP):
                s[a] = c[Pidx[a]]
                for b in range(nP):
                    L[a, b] = Q[Pidx[a], Pidx[b]]
            # a (numerically) singular Q_PP with c in a direction it cannot reach => infeasible
            if cholesky_inplace(L, nP) != 0:
                return nit, 3
            pivot_min = np.inf
            pivot_max = 0.0
            for a in range(nP):
                pivot_min = min(pivot_min, L[a, a] * L[a, a])
                pivot_max = max(pivot_max, L[a, a] * L[a, a])
            if pivot_min <= 1e-13 * max(pivot_max, scale):
                return nit, 3
            cholesky_solve_inplace(L, s, nP)
            allpos = True
            for a in range(nP):
                if s[a] <= 0.0:
                    allpos = False
            if allpos:
                for a in range(m):
                    x[a] = 0.0
                for a in range(nP):
                    x[Pidx[a]] = s[a]
                break
            # step from x towards s until the first coordinate hits 0
            step = 1.0
            for a in range(nP):
                ia = Pidx[a]
                if s[a] <= 0.0:
                    denom = x[ia] - s[a]
                    if denom > 0.0:
                        step = min(step, x[ia] / denom)
            for a in range(nP):
                ia = Pidx[a]
                x[ia] = x[ia] + step * (s[a] - x[ia])
                if x[ia] <= 1e-300 or (s[a] <= 0.0 and x[ia] <= 1e-15 * max(1.0, abs(s[a]))):
                    x[ia] = 0.0
                    inP[ia] = False
    for j in range(K):
        nu[j] = 0.0
    for a in range(m):
        nu[idx[a]] = x[a]
    return nit, status


@kernel()
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
    if status != 0:
        return
    yr = np.empty(K)
    s = 0.0
    for j in range(K):
        yr[j] = -nu[j]
        s += nu[j]
    yr[k] = s
    z = np.empty(K)
    p = np.empty(K)
    E0, _q0, _l0 = _objective(zbar, G, y, k, lam, z, p)
    Er, _qr, _lr = _objective(zbar, G, yr, k, lam, z, p)
    if Er < E0:
        for j in range(K):
            y[j] = yr[j]


@kernel()
def _region_row(zbar, G, k, margin, tol, max_iter, y):
    K = zbar.shape[0]
    nu = np.empty(K)
    nit, status = region_dual(zbar, G, k, margin, tol, max_iter, nu)
    s = 0.0
    for j in range(K):
        y[j] = -nu[j]
        s += nu[j]
    y[k] = s
    return nit, status


@kernel(parallel=True)
def region_batch(Zbar, G, ks, margins, tol, max_iter, parallel):
    """region_dual for N queries: returns (Y, nit, status) with y = −ν, y_k = Σ ν."""
    N, K = Zbar.shape
    Y = np.empty((N, K))  # every entry is written by _region_row
    nit = np.empty(N, dtype=np.int64)
    status = np.empty(N, dtype=np.int64)
    if parallel:
        for n in prange(N):
            nit[n], status[n] = _region_row(Zbar[n], G, ks[n], margins[n], tol, max_iter, Y[n])
    else:
        for n in range(N):
            nit[n], status[n] = _region_row(Zbar[n], G, ks[n], margins[n], tol, max_iter, Y[n])
    return Y, nit, status


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
    feasible side of the bracket (p_k ≥ τ). Returns (lam, nit_total, status): 0 converged,
    3 τ unreachable (p_k stays below τ as λ → 0), 4 numerical failure.
    """
    K = zbar.shape[0]
    trials = np.empty(0, dtype=np.int64)
    for j in range(K):
        y[j] = 0.0
    z0 = _log_pk(zbar, G, y, k)
    if z0 >= log_tau:
        return np.inf, 0, 0
    total = 0
    y_ok = np.empty(K)
    # bracket: find t_lo with f ≥ 0 (feasible) and t_hi with f < 0, stepping by a factor 10 in λ
    t = 0.0
    _E, _g, _q, nit, st = reduced_newton(zbar, G, GF, k, math.exp(t), y, 0.0, max_iter, trials)
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
                return np.nan, total, 4
            _E, _g, _q, nit, st = reduced_newton(
                zbar, G, GF, k, math.exp(t), y, 0.0, max_iter, trials
            )
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
                return math.exp(t), total, 3
            _E, _g, _q, nit, st = reduced_newton(
                zbar, G, GF, k, math.exp(t), y, 0.0, max_iter, trials
            )
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
        _E, _g, _q, nit, st = reduced_newton(zbar, G, GF, k, math.exp(t), y, 0.0, max_iter, trials)
        total += nit
        if st == 4:
            return math.exp(t), total, 4
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
    return math.exp(t_lo), total, 0


@kernel(parallel=True)
def proba_batch(Zbar, G, GF, ks, log_taus, tol, max_iter, parallel):
    """proba_search for N queries: returns (Y, lam, nit, status)."""
    N, K = Zbar.shape
    Y = np.empty((N, K))  # proba_search sets y to 0 first
    lam = np.empty(N)
    nit = np.empty(N, dtype=np.int64)
    status = np.empty(N, dtype=np.int64)
    if parallel:
        for n in prange(N):
            lam[n], nit[n], status[n] = proba_search(
                Zbar[n], G, GF, ks[n], log_taus[n], tol, max_iter, Y[n]
            )
    else:
        for n in range(N):
            lam[n], nit[n], status[n] = proba_search(
                Zbar[n], G, GF, ks[n], log_taus[n], tol, max_iter, Y[n]
            )
    return Y, lam, nit, status


@kernel(inline="always")
def _tangent(gy, y, M, sp, v, out):
    """Set out = dy/d(log λ) at a solution y of problem (2), given gy = G y and the factor.

    Differentiating r = λ y + p(z̄ + G y) − e_k = 0 in λ: (λI + S G) dy/dλ = −y, the Newton
    system with r replaced by y, so (as for the Newton step) λ dy/dλ = −(y − Tᵀ m) with
    (λI + T G Tᵀ) m = T G y: no division by λ. ``v`` is scratch.
    """
    for j in range(y.shape[0]):
        v[j] = gy[j]
    _apply_inverse(M, sp, v, out)
    for j in range(y.shape[0]):
        out[j] -= y[j]


@kernel()
def _path_row_certain(y, z, k, nrm, x0norm, absb, vmax, gamma):
    """Whether K-space logits ``z = z̄ + G y`` put x̄ + V Aᵀ y in class k in every evaluation.

    A rounding bound of each step, with Cauchy–Schwarz (Σ_j |a_ij x_j| ≤ ‖a_i‖ ‖x‖) and
    t = v_max Σ_l ‖a_l‖ |y_l| (a bound on the size of V Aᵀ y): z̄ is within
    γ(‖a_i‖‖x̄‖ + |b_i|), G y within γ ‖a_i‖ t, forming x adds as much again, and any evaluation
    of A x + b at the formed point is within γ(‖a_i‖(‖x̄‖ + t) + |b_i|); γ = γ_{D+K+2}. Together
    err_i ≤ γ(2(‖a_i‖‖x̄‖ + |b_i|) + 4‖a_i‖ t). Certain when z_k − z_j exceeds 2(err_k + err_j)
    for every j ≠ k.
    """
    K = z.shape[0]
    t = 0.0
    for j in range(K):
        t += abs(y[j]) * nrm[j]
    t *= vmax
    zo = -np.inf
    eo = -np.inf
    ek = 0.0
    for j in range(K):
        e = gamma * (2.0 * (nrm[j] * x0norm + absb[j]) + 4.0 * nrm[j] * t)
        if j == k:
            ek = e
        else:
            zo = max(zo, z[j])
            eo = max(eo, e)
    need = 2.0 * (ek + eo)
    return math.isfinite(need) and z[k] - zo > need


@kernel()
def lam_path(zbar, G, GF, k, lams, tol, max_iter, warm, nrm, x0norm, absb, vmax, gamma):
    """Problem (2) along lams, each solve started from a prediction made of the previous ones.

    Predictor (``warm``): the cubic Hermite extrapolation in log λ of the last two solutions and
    their tangents dy/d(log λ) (:func:`_tangent`, from the factorisation of the last Newton step:
    a solve, no new factorisation), which starts Newton O(h⁴) from the answer; the tangent line
    of the last solution for the second λ or after a jump in the grid. A prediction that fails
    is retried from the last solution. Without ``warm`` every λ starts cold (:func:`initial_y`).

    The verdict of each row (``nrm``, ``x0norm``, ``absb``, ``vmax``, ``gamma`` as in
    :func:`_path_row_certain`): status 0 when the class of the formed point is certainly k,
    −1 when the K-space logits name k but their rounding could be deciding (the caller rechecks
    the formed point), 5 another class, 4 non-finite or numerical failure, 1 iteration limit.

    Returns (Y (L, K), P (L, K) = softmax(z̄ + G y), dist (L,) = ‖x − x̄‖_W =
    √(yᵀ G y), gnorm, nit, status, the number of rows with status −1).
    """
    L = lams.shape[0]
    K = zbar.shape[0]
    Y = np.empty((L, K))
    P = np.empty((L, K))
    dist = np.empty(L)
    gn = np.empty(L)
    nit = np.empty(L, dtype=np.int64)
    status = np.empty(L, dtype=np.int64)
    Tn = np.empty((L, K))
    tok = np.zeros(L, dtype=np.bool_)
    conv = np.zeros(L, dtype=np.bool_)
    W = np.empty((13, K))
    M = np.empty((K, K))
    scratch = np.empty(max(K, 6))  # (K) work, and the 6 Hermite weights
    y = np.empty(K)
    trials = np.empty(0, dtype=np.int64)
    tl = np.empty(L)  # log λ, once
    for i in range(L):
        tl[i] = math.log(lams[i])
    prob = (zbar, G, GF, lams, tl, nrm, absb)
    par = (k, tol, max_iter, warm, x0norm, vmax, gamma)
    out = (Y, P, dist, gn, nit, status)
    work = (Tn, tok, conv, W, M, scratch, y, trials)
    i = 0
    while i < L:
        # a cold start (the first λ, after a failure, or every λ without ``warm``); then the
        # rows run without reference counting until the next cold start is due
        initial_y(zbar, G, k, lams[i], y)
        i = _path_rows(i, prob, par, out, work)
    ndoubt = 0
    for i in range(L):
        ndoubt += status[i] < 0
    return Y, P, dist, gn, nit, status, ndoubt


@kernel(inline="always")
def _hermite_weights(tl, i, m, w):
    """Weights of the Hermite extrapolation to log λ_i from the m solutions before it.

    The polynomial of degree 2m − 1 through y and dy/dt at t_a = log λ_{i−1−a} (a < m), at
    t = log λ_i (``tl`` holds log λ): y(t) ≈ Σ_a H_a y_a + K_a y'_a, with the Lagrange basis
    L_a of the nodes, H_a = (1 − 2 L_a'(t_a)(t − t_a)) L_a(t)² and K_a = (t − t_a) L_a(t)².
    w[a] = H_a and w[3 + a] = K_a (m ≤ 3); m = 1 is the tangent line, m = 2 the cubic (error
    O(h^{2m})).
    """
    for a in range(m):
        da = tl[i - 1 - a] - tl[i]  # t_a − t
        La = 1.0
        dLa = 0.0
        for c in range(m):
            if c != a:
                dc = tl[i - 1 - c] - tl[i]
                La *= -dc / (da - dc)
                dLa += 1.0 / (da - dc)
        L2 = La * La
        w[a] = (1.0 + 2.0 * dLa * da) * L2
        w[3 + a] = -da * L2


@kernel(_nrt=False)
def _path_rows(i0, prob, par, out, work):
    """Solve the rows i0, i0 + 1, … of :func:`lam_path` on the caller's arrays.

    The arguments are the tuples built by :func:`lam_path` (the problem, the parameters, the
    outputs and the work arrays: Tn tangents dy/d(log λ), tok tangent available, conv Newton
    converged). y holds the cold start of row i0. Returns the next row that needs a cold start
    (after a failure, or every row without ``warm``), or L. Allocates nothing, so it is
    compiled without reference counting (see :func:`kernel`). It runs all rows up to the next cold
    start: called once per row from the allocating caller, the thirty arrays it took were
    counted up and down at every call (15% of a path at (784, 10), measured with ``perf``).
    """
    zbar, G, GF, lams, tl, nrm, absb = prob
    k, tol, max_iter, warm, x0norm, vmax, gamma = par
    Y, P, dist, gn, nit, status = out
    Tn, tok, conv, W, M, scratch, y, trials = work
    K = zbar.shape[0]
    L = lams.shape[0]
    for i in range(i0, L):
        if i > i0 and (not warm or not conv[i - 1]):
            return i
        lam = lams[i]
        predicted = False
        if i > i0 and tok[i - 1]:
            # nodes: the last m ≤ 2 solutions with tangents, on a grid without jumps (each step in
            # log λ at most twice the one before it, in the same direction). Three nodes (quintic)
            # were measured worse at (784, 10): 141 Newton steps per path instead of 129 with these
            # tangents (from the factorisation one step before the answer), and 103 steps but 9%
            # more time with tangents from a new factorisation at each answer.
            m = 1
            h_next = tl[i] - tl[i - 1]
            while m < 2 and i - m - 1 >= 0 and tok[i - m - 1]:
                h = tl[i - m] - tl[i - m - 1]
                ratio = h_next / h if h != 0.0 else 0.0
                if not (math.isfinite(ratio) and 0.0 < ratio <= 2.0):
                    break
                h_next = h
                m += 1
            _hermite_weights(tl, i, m, scratch)
            for j in range(K):
                acc = 0.0
                for a in range(m):
                    acc += scratch[a] * Y[i - 1 - a, j] + scratch[3 + a] * Tn[i - 1 - a, j]
                y[j] = acc
            predicted = True
        # otherwise y still holds the last solution (the paper's warm start)
        # A prediction on the path converges in 1–3 steps; one that is not (a kink in y(log λ), a
        # poor extrapolation over a long step) can leave Newton in the flat, exponential-like part
        # of E, where damped steps crawl (soak: 100 iterations without converging, where the last
        # solution needs 17). So it gets a few iterations, then the paper's warm start (the last
        # solution) gets the rest: max_iter bounds the work per λ.
        budget = min(max_iter, _PREDICTION_BUDGET) if predicted else max_iter
        E, gnorm, quad, it, st, fac = _newton_core(
            zbar, G, GF, k, lam, y, tol, budget, trials, W, M
        )
        if st != 0 and predicted and it < max_iter:
            for j in range(K):
                y[j] = Y[i - 1, j]
            E, gnorm, quad, it2, st, fac = _newton_core(
                zbar, G, GF, k, lam, y, tol, max_iter - it, trials, W, M
            )
            it += it2
        z = W[0]
        p = W[1]
        for j in range(K):
            Y[i, j] = y[j]
            P[i, j] = p[j]
        gn[i] = gnorm
        nit[i] = it
        dist[i] = math.sqrt(max(quad, 0.0))
        conv[i] = st == 0
        if warm and st == 0:
            if not fac:  # converged without a Newton step: factorise at the solution
                fac = _factor(G, p, lam, M, W[6], scratch) == 0
            if fac:
                _tangent(W[11], y, M, W[6], scratch, Tn[i])
                tok[i] = True
                for j in range(K):
                    if not math.isfinite(Tn[i, j]):
                        tok[i] = False
        # the verdict: the model's decision is the argmax of the logits (ties to the first)
        finite = math.isfinite(dist[i])
        best = 0
        for j in range(K):
            if not math.isfinite(z[j]):
                finite = False
            if z[j] > z[best]:
                best = j
        if st == 0 and not finite:
            st = 4
        if st == 0:
            if best != k:
                st = 5
            elif not _path_row_certain(y, z, k, nrm, x0norm, absb, vmax, gamma):
                st = -1
        status[i] = st
    return L


# ----------------------------------------------------------------------------------------------
# The two O(DK) products of a query, row by row. Each row is computed by the same code in the same
# order whatever the number of rows, so a query's answer is bit-identical alone, in a batch, or in
# any partition of a batch (Dask); BLAS would pick GEMV or GEMM kernels by shape and change the
# rounding. The columns are cut into fixed chunks of _CHUNK: a sum over D is the chunk order sum
# of per-chunk sums, so running the chunks of one row on several threads (``mode=2``, one large
# query) gives the same bits as running them in turn (``mode=0``, or ``mode=1``: a batch, in
# parallel over rows).

_BLOCK = 512  # columns per block: the accumulators stay in L1 while A is streamed once
_CHUNK = 4096  # columns per chunk (a multiple of _BLOCK): the unit of work of mode 2


def row_mode(N, D, K):
    """Return the mode of the row kernels for N rows of A of shape (K, D).

    0: serial, 1: parallel over rows (batches), 2: parallel over column chunks (one query large
    enough to pay for waking the threads).
    """
    if N > 1:
        return 1
    return 2 if D * K >= 1 << 18 and D > _CHUNK else 0


@kernel()
def _logits_chunk(x, A, c, part):
    K, D = A.shape
    lo = c * _CHUNK
    hi = min(lo + _CHUNK, D)
    for j in range(K):
        part[c, j] = _dot(A[j, lo:hi], x[lo:hi])


@kernel()
def _sum_chunks(part, b, z):
    """z_j = Σ_c part[c, j] + b_j, in chunk order."""
    for j in range(part.shape[1]):
        acc = 0.0
        for c in range(part.shape[0]):
            acc += part[c, j]
        z[j] = acc + b[j]


@kernel(parallel=True)
def logits_rows(X, A, b, mode):
    """Z = X Aᵀ + b, one row at a time (see the note above; ``mode`` from :func:`row_mode`)."""
    N = X.shape[0]
    K, D = A.shape
    nc = max((D + _CHUNK - 1) // _CHUNK, 1)
    Z = np.empty((N, K))
    if mode == 1:
        for n in prange(N):
            part = np.empty((nc, K))
            for c in range(nc):
                _logits_chunk(X[n], A, c, part)
            _sum_chunks(part, b, Z[n])
    else:
        part = np.empty((nc, K))
        for n in range(N):
            if mode == 2:
                for c in prange(nc):
                    _logits_chunk(X[n], A, c, part)
            else:
                for c in range(nc):
                    _logits_chunk(X[n], A, c, part)
            _sum_chunks(part, b, Z[n])
    return Z


@kernel()
def _expand_chunk(x0, y, A, v, unit, c, out, check, pz, ps):
    """Columns of chunk c of x = x0 + (yᵀA) ∘ v.

    With ``check``, also the chunk's share of z = A x (pz[c]) and of s = |A| |x| (ps[c]), while
    the block of A is in cache.
    """
    K, D = A.shape
    # block: K rows of it fit in L1 (32 KiB), so the check's second pass reads it from there
    blk = max(64, min(_BLOCK, (4096 // K) // 8 * 8))
    acc = np.empty(blk)
    lo = c * _CHUNK
    hi = min(lo + _CHUNK, D)
    if check:
        for j in range(K):
            pz[c, j] = 0.0
            ps[c, j] = 0.0
    for start in range(lo, hi, blk):
        stop = min(start + blk, hi)
        m = stop - start
        for i in range(m):
            acc[i] = 0.0
        # four rows of A per sweep of acc: a quarter of the loads and stores of acc
        j = 0
        while j + 4 <= K:
            y0, y1, y2, y3 = y[j], y[j + 1], y[j + 2], y[j + 3]
            for i in range(m):
                acc[i] += (
                    y0 * A[j, start + i]
                    + y1 * A[j + 1, start + i]
                    + y2 * A[j + 2, start + i]
                    + y3 * A[j + 3, start + i]
                )
            j += 4
        while j < K:
            yj = y[j]
            for i in range(m):
                acc[i] += yj * A[j, start + i]
            j += 1
        if unit:
            for i in range(m):
                out[start + i] = x0[start + i] + acc[i]
        else:
            for i in range(m):
                out[start + i] = x0[start + i] + v[start + i] * acc[i]
        if check:
            for j in range(K):
                zj, sj = _dot_abs(A[j, start:stop], out[start:stop])
                pz[c, j] += zj
                ps[c, j] += sj


@kernel(parallel=True)
def expand_rows(X0, Y, A, v, unit, mode):
    """X = X0 + (Y A) ∘ v row by row: the counterfactuals from their K-space coordinates."""
    N, D = X0.shape
    nc = max((D + _CHUNK - 1) // _CHUNK, 1)
    X = np.empty((N, D))
    none = np.empty((0, 0))
    if mode == 1:
        for n in prange(N):
            for c in range(nc):
                _expand_chunk(X0[n], Y[n], A, v, unit, c, X[n], False, none, none)
    else:
        for n in range(N):
            if mode == 2:
                for c in prange(nc):
                    _expand_chunk(X0[n], Y[n], A, v, unit, c, X[n], False, none, none)
            else:
                for c in range(nc):
                    _expand_chunk(X0[n], Y[n], A, v, unit, c, X[n], False, none, none)
    return X


@kernel()
def _certain_row(z, sc, k, gamma):
    """Whether no floating-point evaluation of the logits can take class k from this point.

    ``z`` are logits computed in floating point, ``sc = |A||x| + |b|`` their rounding scale;
    every evaluation of z_j (ours, BLAS in any blocking, scikit-learn's) is within γ sc_j of the
    exact value (Higham, §3.1). Certain when z_k − max_{j≠k} z_j > 4γ (sc_k + max_{j≠k} sc_j)
    (twice the worst case of two evaluations).
    """
    zo = -np.inf
    so = -np.inf
    for j in range(z.shape[0]):
        if j != k:
            zo = max(zo, z[j])
            so = max(so, sc[j])
    need = 4.0 * gamma * (sc[k] + so)
    return math.isfinite(need) and z[k] - zo > need


@kernel()
def _row_newton(part, b, G, GF, k, lam, tol, max_iter, y):
    """z̄ from its chunk sums, then the reduced Newton from initial_y (y in place).

    Returns (gnorm, quad, nit, status).
    """
    K = b.shape[0]
    zbar = np.empty(K)
    _sum_chunks(part, b, zbar)
    initial_y(zbar, G, k, lam, y)
    trials = np.empty(0, dtype=np.int64)
    _E, gn, quad, nit, status = reduced_newton(zbar, G, GF, k, lam, y, tol, max_iter, trials)
    return gn, quad, nit, status


@kernel()
def _row_verdict(x, pz, ps, b, k, gamma, quad, status, p):
    """Logits z of x* from their chunk sums, p = softmax(z), and the verdict.

    Returns (status, certified): status 4 for a non-finite answer, 5 when argmax z (ties to the
    first class, the model's rule) is not k; certified when k wins by more than
    4γ(S_k + max_{j≠k} S_j) (see :func:`_certain_row`).
    """
    K = b.shape[0]
    z = np.empty(K)
    sc = np.empty(K)
    absb = np.empty(K)
    for j in range(K):
        absb[j] = abs(b[j])
    _sum_chunks(pz, b, z)
    _sum_chunks(ps, absb, sc)
    softmax_into(z, p)
    finite = math.isfinite(quad)
    for i in range(x.shape[0]):
        if not math.isfinite(x[i]):
            finite = False
            break
    if status == 0 and not finite:
        return 4, False
    best = 0
    for j in range(1, K):
        if z[j] > z[best]:
            best = j
    if status != 0:
        return status, False
    if best != k:
        return 5, False  # the optimum of problem (2) is not in the target class: λ too large
    return 0, _certain_row(z, sc, k, gamma)


@kernel(parallel=True)
def reduced_rows(X0, A, b, G, GF, ks, lams, tol, max_iter, v, unit, gamma, mode):
    """Problem (2) for N softmax queries, all in one call (``mode`` from :func:`row_mode`).

    Per row: z̄ = A x̄ + b, the reduced Newton from :func:`initial_y`, x* = x̄ + (yᵀA)∘v with its
    logits and their rounding scale in the same pass over A, p = softmax(z), and the verdict of
    :func:`_row_verdict`. The same code runs for every row in every mode (mode 2 only runs the
    column chunks of the single row on several threads), so an answer has the same bits alone
    or in a batch. Returns (X, P, quad, gnorm, nit, status, cert); quad = ‖x* − x̄‖²_W.
    """
    N, D = X0.shape
    K = A.shape[0]
    nc = max((D + _CHUNK - 1) // _CHUNK, 1)
    X = np.empty((N, D))
    P = np.empty((N, K))
    quad = np.empty(N)
    gn = np.empty(N)
    nit = np.empty(N, dtype=np.int64)
    status = np.empty(N, dtype=np.int64)
    cert = np.empty(N, dtype=np.bool_)
    if mode == 1:
        for n in prange(N):
            part = np.empty((nc, K))
            pz = np.empty((nc, K))
            ps = np.empty((nc, K))
            y = np.empty(K)
            for c in range(nc):
                _logits_chunk(X0[n], A, c, part)
            gn[n], quad[n], nit[n], st = _row_newton(
                part, b, G, GF, ks[n], lams[n], tol, max_iter, y
            )
            for c in range(nc):
                _expand_chunk(X0[n], y, A, v, unit, c, X[n], True, pz, ps)
            status[n], cert[n] = _row_verdict(X[n], pz, ps, b, ks[n], gamma, quad[n], st, P[n])
    else:
        part = np.empty((nc, K))
        pz = np.empty((nc, K))
        ps = np.empty((nc, K))
        y = np.empty(K)
        for n in range(N):
            if mode == 2:
                for c in prange(nc):
                    _logits_chunk(X0[n], A, c, part)
            else:
                for c in range(nc):
                    _logits_chunk(X0[n], A, c, part)
            gn[n], quad[n], nit[n], st = _row_newton(
                part, b, G, GF, ks[n], lams[n], tol, max_iter, y
            )
            if mode == 2:
                for c in prange(nc):
                    _expand_chunk(X0[n], y, A, v, unit, c, X[n], True, pz, ps)
            else:
                for c in range(nc):
                    _expand_chunk(X0[n], y, A, v, unit, c, X[n], True, pz, ps)
            status[n], cert[n] = _row_verdict(X[n], pz, ps, b, ks[n], gamma, quad[n], st, P[n])
    return X, P, quad, gn, nit, status, cert
