"""φ(α, β): the unique root t ∈ (0, 1) of t = 1 / (1 + exp(α t + β)), α > 0 (paper 000, Thm 4.1).

Numerics
--------
Both t and 1 − t must keep full *relative* precision when either is tiny. Two facts make that
possible:

1. Symmetry: 1 − φ(α, β) = φ(α, −α − β). So we only ever solve for the *small side*
   s = min(t, 1 − t) ≤ 1/2, the large side being 1 − s (no cancellation since s ≤ 1/2). The root
   t ≤ 1/2 exactly when α/2 + β ≥ 0 (then s = t, d = β); otherwise s = 1 − t with d = −α − β,
   carried as an unevaluated sum d_hi + d_lo (TwoSum) so that no digit of α or β is lost.

2. The residual is evaluated without cancellation. With u = α s + d computed in double-double
   (Dekker's TwoProduct + TwoSum), g = σ(−u) is accurate to a few ulps *relative*, and the
   Newton iteration runs in L = log s on

       H(L) = L + softplus(α e^L + d) = log(s / g) = log1p((s − g) / g),

   whose last form is accurate near the root. H is increasing and convex in L
   (H' = 1 + α s (1 − g) ≥ 1), so Newton from any point lands on the right of the root after one
   step and then decreases monotonically; a bracket [lo, hi] is kept anyway and a (geometric)
   bisection step is taken whenever Newton would leave it (the "safeguard"). s is updated
   multiplicatively, s ← s·exp(ΔL), so s itself never loses relative precision.

A logit variable alone is not enough: for t ≈ e^{−700} the logit ≈ −700 carries an absolute
error of ~1e−13, i.e. a relative error of 1e−13 in t.

Status codes (:class:`fastcf._status.Status`): OK converged, MAXITER iteration limit, NUMERIC
non-finite input.
"""

import math

import numpy as np
from numba import prange

from fastcf._status import Status

from . import kernel

_SPLITTER = 134217729.0  # 2**27 + 1, Veltkamp splitting for TwoProduct
_EPS = 2.220446049250313e-16
_OK = int(Status.OK)
_MAXITER = int(Status.MAXITER)
_NUMERIC = int(Status.NUMERIC)


@kernel(callee=True)
def _two_sum(a, b):
    s = a + b
    bb = s - a
    err = (a - (s - bb)) + (b - bb)
    return s, err


@kernel(callee=True)
def _two_prod(a, b):
    p = a * b
    if not (abs(a) < 1e150 and abs(b) < 1e150):
        return p, 0.0  # splitting would overflow; the product is then far from any cancellation
    t = _SPLITTER * a
    ahi = t - (t - a)
    alo = a - ahi
    t = _SPLITTER * b
    bhi = t - (t - b)
    blo = b - bhi
    err = ((ahi * bhi - p) + ahi * blo + alo * bhi) + alo * blo
    return p, err


@kernel(callee=True)
def sigmoid(z):
    """σ(z) = 1/(1+e^{−z}) without overflow, full relative precision on both tails."""
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@kernel(callee=True)
def sigmoid_pair(z):
    """Return (σ(−z), σ(z)), each from exp(−|z|): a binary model's two probabilities.

    No overflow; NaN gives NaN. The one formula of :func:`.logistic.binary_proba` and of the
    row verdicts (:mod:`.verdict`).
    """
    e = math.exp(-abs(z))
    big = 1.0 / (1.0 + e)
    small = e / (1.0 + e)
    if z >= 0:
        return small, big
    return big, small


@kernel(callee=True)
def softplus(z):
    """log(1 + e^z) without overflow."""
    if z > 0.0:
        return z + math.log1p(math.exp(-z))
    return math.log1p(math.exp(z))


@kernel(callee=True)
def _residual(s, alpha, d_hi, d_lo):
    """Return (H, H', g) at s, with u = α s + d in double-double."""
    p, pe = _two_prod(alpha, s)
    u_hi, e1 = _two_sum(p, d_hi)
    u_lo = e1 + pe + d_lo
    u = u_hi + u_lo
    u_lo = u_lo - (u - u_hi)
    u_hi = u
    # g = σ(−u_hi − u_lo) ≈ σ(−u_hi)·(1 − σ(u_hi)·u_lo)
    g_hi = sigmoid(-u_hi)
    g = g_hi * (1.0 - sigmoid(u_hi) * u_lo)
    if g > 0.0 and s / g < 1e300:
        h = math.log1p((s - g) / g)
    else:  # far from the root (g underflowed): the direct form is accurate enough there
        h = math.log(s) + softplus(u_hi) + sigmoid(u_hi) * u_lo
    dh = 1.0 + alpha * s * (1.0 - g)
    return h, dh, g


@kernel(callee=True)
def _small_root(alpha, d_hi, d_lo, max_iter):
    """Root s ≤ 1/2 of s = σ(−(α s + d)), assuming α/2 + d ≥ 0. Returns (s, nit, status)."""
    d = d_hi + d_lo
    # bracket in s: σ(−α/2−d) ≤ s ≤ min(σ(−d), 1/2), since s ≤ 1/2 gives u ≤ α/2 + d
    hi = min(sigmoid(-d), 0.5)
    lo = sigmoid(-(0.5 * alpha + d))
    if lo <= 0.0:
        lo = 5e-324
    if alpha == 0.0 or hi <= lo:
        return hi, 0, _OK
    # initial guess: for α s + d ≫ 1 the equation is ≈ log s + α s + d = 0, whose solution is
    # s = W(α e^{−d}) / α (Lambert W); W(e^z) ≈ z − log z + log z / z for z ≥ 2
    z = math.log(alpha) - d
    if z > 2.0:
        lz = math.log(z)
        w = z - lz + lz / z
        s = min(max(w / alpha, lo), hi)
    else:
        s = hi
    L_lo = math.log(lo)
    L_hi = math.log(hi)
    for it in range(1, max_iter + 1):
        h, dh, g = _residual(s, alpha, d_hi, d_lo)
        if h == 0.0:
            return s, it, _OK
        L = math.log(s)
        if h > 0.0:
            L_hi = min(L_hi, L)
        else:
            L_lo = max(L_lo, L)
        step = -h / dh
        L_new = L + step
        if not (L_lo <= L_new <= L_hi) or not math.isfinite(L_new):
            # safeguard: geometric bisection of the bracket
            L_new = 0.5 * (L_lo + L_hi)
            step = L_new - L
            s_new = math.exp(L_new)
        else:
            s_new = s * math.exp(step)
        if abs(step) <= 4.0 * _EPS or s_new == s:
            return s_new, it, _OK
        s = s_new
    return s, max_iter, _MAXITER


@kernel()
def phi(alpha, beta, max_iter):
    """φ(α, β) and its complement.

    Returns
    -------
    t : float
        The root of t = 1/(1 + exp(α t + β)).
    one_minus_t : float
        1 − t, with full relative precision even when t → 1.
    nit : int
    status : int
        OK converged, MAXITER iteration limit, NUMERIC non-finite or negative α / non-finite β.
    """
    if not (math.isfinite(alpha) and math.isfinite(beta)) or alpha < 0.0:
        return np.nan, np.nan, 0, _NUMERIC
    if 0.5 * alpha + beta >= 0.0:
        s, nit, status = _small_root(alpha, beta, 0.0, max_iter)
        return s, 1.0 - s, nit, status
    d_hi, d_lo = _two_sum(-alpha, -beta)
    s, nit, status = _small_root(alpha, d_hi, d_lo, max_iter)
    return 1.0 - s, s, nit, status


@kernel(parallel=True)
def phi_batch(alpha, beta, max_iter):
    """φ over arrays of equal length: returns (t, 1 − t, nit, status) arrays."""
    n = alpha.shape[0]
    t = np.empty(n)
    q = np.empty(n)
    nit = np.empty(n, dtype=np.int64)
    status = np.empty(n, dtype=np.int64)
    for i in prange(n):
        t[i], q[i], nit[i], status[i] = phi(alpha[i], beta[i], max_iter)
    return t, q, nit, status
