"""GLVQ cost and its analytic gradient (Sato & Yamada; Schneider, Biehl & Hammer 2009).

For a sample x with label y, d⁺ is the distance to the closest prototype of class y, d⁻ the distance
to the closest prototype of another class, and

    μ = (d⁺ − d⁻) / (d⁺ + d⁻) ∈ [−1, 1],        cost = mean_n f(μ_n),

with f the identity (``act=0``) or the logistic sigmoid f(μ) = 1 / (1 + exp(−β μ)) (``act=1``).

Distances, by ``mode``:

* 0 (GLVQ)   d_k(x) = ‖x − w_k‖²
* 1 (GMLVQ)  d_k(x) = ‖Ω (x − w_k)‖²            one Ω of shape (d, D), passed as ``omegas[0]``
* 2 (LGMLVQ) d_k(x) = ‖Ω_k (x − w_k)‖²          one Ω_k per prototype, ``omegas[k]``

Derivatives used below (δ = x − w_k):

    ∂μ/∂d⁺ = 2 d⁻ / (d⁺ + d⁻)²,      ∂μ/∂d⁻ = −2 d⁺ / (d⁺ + d⁻)²
    ∂d_k/∂w_k = −2 ΩᵀΩ δ,            ∂d_k/∂Ω = 2 (Ω δ) δᵀ
"""

import numpy as np

from fastcf._kernels import kernel

__all__ = ["glvq_cost_grad", "lvq_distances", "lvq_in_target"]


@kernel(inline="always")
def _distance(X, a, W, omegas, mode, k, delta):
    """Squared distance of row ``a`` of X to prototype ``k`` (``delta``: a work array of D)."""
    D = X.shape[1]
    for j in range(D):
        delta[j] = X[a, j] - W[k, j]
    s = 0.0
    if mode == 0:
        for j in range(D):
            s += delta[j] * delta[j]
    else:
        kk = 0 if mode == 1 else k
        for r in range(omegas.shape[1]):
            t = 0.0
            for j in range(D):
                t += omegas[kk, r, j] * delta[j]
            s += t * t
    return s


@kernel()
def lvq_distances(X, W, omegas, mode):
    """Squared distances (N, K) of every row of X to every prototype (rows of W)."""
    n, D = X.shape
    K = W.shape[0]
    out = np.empty((n, K))
    delta = np.empty(D)
    for a in range(n):
        for k in range(K):
            out[a, k] = _distance(X, a, W, omegas, mode, k, delta)
    return out


@kernel()
def lvq_in_target(X, W, omegas, mode, cls, tidx):
    """Which rows of X are finite and nearest (as :func:`lvq_distances`) to a prototype of ``tidx``.

    The decision rule of ``predict``: ``cls[np.argmin(lvq_distances(X, ...)[a])] == tidx[a]``
    (the first of equal distances; the first NaN where there is one, as ``np.argmin``), with
    the same distances, bit for bit; a row with a NaN or an infinity is not in the target.
    One loop for the verification of a query's answers, instead of five NumPy calls.
    """
    n, D = X.shape
    K = W.shape[0]
    out = np.zeros(n, dtype=np.bool_)
    delta = np.empty(D)
    for a in range(n):
        finite = True
        for j in range(D):
            if not np.isfinite(X[a, j]):
                finite = False
                break
        if not finite:
            continue
        best = 0
        low = _distance(X, a, W, omegas, mode, 0, delta)
        if not np.isnan(low):
            for k in range(1, K):
                s = _distance(X, a, W, omegas, mode, k, delta)
                if np.isnan(s):
                    best = k
                    break
                if s < low:
                    low = s
                    best = k
        out[a] = cls[best] == tidx[a]
    return out


@kernel()
def glvq_cost_grad(X, y, W, wlab, omegas, mode, act, beta):
    """Mean GLVQ cost and its gradients with respect to W and to the Ω matrices.

    Parameters
    ----------
    X : (N, D) samples; y : (N,) int64 class indices; W : (K, D) prototypes; wlab : (K,) int64
    class index of each prototype; omegas : (M, d, D) (ignored for mode 0); mode : 0, 1 or 2;
    act : 0 identity, 1 sigmoid; beta : sigmoid slope.

    Returns
    -------
    cost : float
    gW : (K, D)
    gO : (M, d, D) (zeros for mode 0)
    """
    n, D = X.shape
    K = W.shape[0]
    M, d, _ = omegas.shape
    dist = lvq_distances(X, W, omegas, mode)
    gW = np.zeros((K, D))
    gO = np.zeros((M, d, D))
    delta = np.empty(D)
    odelta = np.empty(d)
    lam_delta = np.empty(D)
    cost = 0.0
    for a in range(n):
        kp = -1
        km = -1
        dp = np.inf
        dm = np.inf
        for k in range(K):
            if wlab[k] == y[a]:
                if dist[a, k] < dp:
                    dp = dist[a, k]
                    kp = k
            elif dist[a, k] < dm:
                dm = dist[a, k]
                km = k
        if kp < 0 or km < 0:
            continue
        den = dp + dm
        if den <= 0.0:
            continue  # sample on top of two prototypes: μ undefined, no contribution
        mu = (dp - dm) / den
        if act == 0:
            cost += mu
            fprime = 1.0
        else:
            # stable logistic
            if mu * beta >= 0:
                e = np.exp(-beta * mu)
                f = 1.0 / (1.0 + e)
            else:
                e = np.exp(beta * mu)
                f = e / (1.0 + e)
            cost += f
            fprime = beta * f * (1.0 - f)
        dmu_dp = 2.0 * dm / (den * den) * fprime
        dmu_dm = -2.0 * dp / (den * den) * fprime
        for side in range(2):
            k = kp if side == 0 else km
            coef = dmu_dp if side == 0 else dmu_dm
            for j in range(D):
                delta[j] = X[a, j] - W[k, j]
            if mode == 0:
                for j in range(D):
                    gW[k, j] += -2.0 * coef * delta[j]
            else:
                kk = 0 if mode == 1 else k
                for r in range(d):
                    t = 0.0
                    for j in range(D):
                        t += omegas[kk, r, j] * delta[j]
                    odelta[r] = t
                for j in range(D):
                    t = 0.0
                    for r in range(d):
                        t += omegas[kk, r, j] * odelta[r]
                    lam_delta[j] = t
                for j in range(D):
                    gW[k, j] += -2.0 * coef * lam_delta[j]
                for r in range(d):
                    for j in range(D):
                        gO[kk, r, j] += 2.0 * coef * odelta[r] * delta[j]
    inv = 1.0 / n
    for k in range(K):
        for j in range(D):
            gW[k, j] *= inv
    for m in range(M):
        for r in range(d):
            for j in range(D):
                gO[m, r, j] *= inv
    return cost * inv, gW, gO
