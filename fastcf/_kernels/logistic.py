"""Binary logistic inverse classification (paper 000, §4), batched over queries.

Notation (one query). The model's logit is z(x) = w·x + c, p(classes_[1]) = σ(z). For a target
class with sign s = +1 (classes_[1]) or s = −1 (classes_[0]) the target's logit is
ζ(x) = s (w·x + c) and p_target = σ(ζ). The metric is ‖x − x̄‖²_W with W = diag(weights); frozen
features get W⁻¹ = 0. Write v = W⁻¹ (0 on frozen features) and dir = s v∘w.

Problem (2): min λ/2 ‖x − x̄‖²_W − log σ(ζ(x)). Stationarity gives x* = x̄ + (q/λ) dir with
q = 1 − p_target(x*) = σ(−ζ(x*)); substituting, q = 1/(1 + exp(ζ̄ + α q)) with
α = wᵀVw / λ and ζ̄ = ζ(x̄): q = φ(α, ζ̄). (The paper writes p₁* = φ(α, β) with β = wᵀx̄ + w₀ − α for
p₁ = 1/(1 + exp(wᵀx + w₀)); the two are the same root through 1 − φ(α, β) = φ(α, −α − β). Note
also that the paper's sentence "w points towards class 1" is the wrong way round for its eq. (7a):
increasing wᵀx *decreases* p₁, so w points towards class 2.)

With a box lo ≤ x ≤ hi the objective is still a function of the scalar ζ plus a separable
quadratic, so for the multiplier c = 1 − p_target the minimiser is
x(c) = clip(x̄ + (c/λ) dir, lo, hi)
and c solves c = σ(−ζ(x(c))). ζ(x(c)) is piecewise linear and nondecreasing in c: between two
consecutive breakpoints (where a coordinate reaches its bound) it is ζ₀ + S c, and there the
equation is again c = φ(S, ζ₀). We walk the sorted breakpoints to the segment where
h(c) = c − σ(−ζ(x(c))) changes sign: exact, O(D log D).

The constrained forms (proba=τ, region=True) are projections onto the half-space ζ(x) ≥ θ
(θ = logit τ, or the margin), again piecewise linear in the multiplier μ when bounds are present.
"""

import math

import numpy as np
from numba import types
from numba.extending import overload

from fastcf._status import Status

from . import REASSOC, kernel
from ._batch import batch
from .linalg import dot as _dot
from .linalg import dot_abs as _dot_abs
from .roots import phi, sigmoid, sigmoid_pair

_EPS = 2.220446049250313e-16
_TINY = 2.2250738585072014e-308  # the smallest normal double
_OK = int(Status.OK)
_UNREACHABLE = int(Status.UNREACHABLE)
_INFEASIBLE = int(Status.INFEASIBLE)
_NUMERIC = int(Status.NUMERIC)
#: rows per batch thread (:func:`fastcf._kernels._batch.batch`): a row here is a closed form of
#: a fraction of a microsecond; 569 rows ran slower on 2 threads (361 µs) than on one (302),
#: 2 276 faster (795 against 987 µs)
_CHEAP_ROWS = 512


@kernel(callee=True)
def _breakpoints(x0, dirv, lo, hi, scale):
    """Where each coordinate of clip(x0 + t·dir/scale, lo, hi) reaches its bound (t ≥ 0)."""
    D = x0.shape[0]
    bp = np.empty(D)
    for i in range(D):
        d = dirv[i]
        if d > 0.0:
            bp[i] = scale * (hi[i] - x0[i]) / d if math.isfinite(hi[i]) else np.inf
        elif d < 0.0:
            bp[i] = scale * (lo[i] - x0[i]) / d if math.isfinite(lo[i]) else np.inf
        else:
            bp[i] = np.inf
        if bp[i] < 0.0:
            bp[i] = 0.0
    return bp


@kernel(callee=True)
def _segment(x0, dirv, u, lo, hi, bp, t, scale):
    """Return ζ on the segment that contains t as (const, slope).

    ζ(x(τ)) = const + slope·τ for every τ in that segment, computed afresh (no accumulated
    rounding).
    """
    const = 0.0
    slope = 0.0
    for i in range(x0.shape[0]):
        d = dirv[i]
        if d == 0.0:
            const += u[i] * x0[i]
        elif bp[i] <= t:
            const += u[i] * (hi[i] if d > 0.0 else lo[i])
        else:
            const += u[i] * x0[i]
            slope += u[i] * d / scale
    return const, slope


@kernel(callee=True)
def _clip_step(x0, dirv, t, scale, lo, hi, out):
    for i in range(x0.shape[0]):
        xi = x0[i] + (t / scale) * dirv[i]
        if xi < lo[i]:
            xi = lo[i]
        elif xi > hi[i]:
            xi = hi[i]
        out[i] = xi


@kernel(callee=True)
def _slope_after(slope, gone, order, j, dirv, u, bp, scale):
    """Return the slope of ζ past breakpoint ``order[j]``, whose feature's share ``gone`` leaves.

    The running difference, unless it cancels (below 2⁻²⁰ of the share): then the sum over the
    features still moving, afresh. With shares 0.25 and 1e-18 the running slope 0.25 + 1e-18 −
    0.25 was exactly 0, and the walk called a feasible box infeasible (soak round R, seed 359).
    """
    out = slope - gone
    if abs(out) > 2.0**-20 * abs(gone):
        return out
    out = 0.0
    for jj in range(j + 1, order.shape[0]):
        k = order[jj]
        if bp[k] > 0.0:
            out += u[k] * dirv[k] / scale
    return out


@kernel(callee=True)
def _lam_bounded_one(x0, w, sign, c0, vw, lam, lo, hi, out, max_iter):
    """Problem (2) with a box, one query. Returns (q, nit, status)."""
    D = x0.shape[0]
    dirv = np.empty(D)
    u = np.empty(D)
    for i in range(D):
        dirv[i] = sign * vw[i]
        u[i] = sign * w[i]
    u0 = sign * c0
    bp = _breakpoints(x0, dirv, lo, hi, lam)
    order = np.argsort(bp)
    # walk the breakpoints inside (0, 1): c = 1 − p_target is in (0, 1)
    const, slope = _segment(x0, dirv, u, lo, hi, bp, 0.0, lam)
    const += u0
    seg_start = 0.0
    for j in range(D):
        i = order[j]
        b = bp[i]
        if b <= 0.0:
            continue
        if b >= 1.0 or not math.isfinite(b):
            break
        # h(b) = b − σ(−ζ(b)); h is increasing in c
        if b - sigmoid(-(const + slope * b)) >= 0.0:
            break
        seg_start = b
        d = dirv[i]
        const += u[i] * ((hi[i] if d > 0.0 else lo[i]) - x0[i])
        slope = _slope_after(slope, u[i] * d / lam, order, j, dirv, u, bp, lam)
    # recompute the segment exactly, then solve c = φ(S, ζ₀) on it
    const, slope = _segment(x0, dirv, u, lo, hi, bp, seg_start, lam)
    const += u0
    if slope <= 0.0:
        q = sigmoid(-const)
        nit = 0
        status = _OK
    else:
        q, _p, nit, status = phi(slope, const, max_iter)
    _clip_step(x0, dirv, q, lam, lo, hi, out)
    return q, nit, status


#: rounds of the rounding guard of the projections: the push doubles from the fourth on, so 64
#: rounds cover a step 2⁶⁰ times the first correction
_GUARD_ROUNDS = 64


@kernel(callee=True)
def _guard_push(short, slope, mu, r):
    """Return the increase of μ after round ``r`` of the guard left ζ short of θ by ``short``.

    The first three corrections are the exact ones, (θ − ζ)/slope + 4ε μ. When x̄ is large
    against the step, such a correction can be below one ulp of x, so that x and ζ do not move:
    from the fourth round on the push doubles each round, until x moves. The answer then
    overshoots θ by at most about twice the rounding of x. (Until issue 16 the guard gave up
    after four rounds with status 4 although ζ ≥ θ was one ulp away: breast cancer, row 213.)
    """
    push = short / slope + 4.0 * _EPS * mu
    if r >= 3:
        push *= 2.0 ** (r - 2)
    return push


@kernel(callee=True)
def _project_one(x0, w, sign, c0, vw, theta, lo, hi, out):
    """Min ‖x − x̄‖²_W s.t. ζ(x) ≥ θ (and lo ≤ x ≤ hi). Returns (μ, status).

    ``lo``, ``hi`` are None without a box: Numba then prunes the box's branch before typing
    (an argument compared with None), so an unbounded query compiles none of the breakpoint
    walk (its sort alone took about 1 s to compile).

    Status: OK, UNREACHABLE (no free feature moves ζ), INFEASIBLE (the box stops ζ below θ),
    NUMERIC (the rounding guard failed).

    θ is raised by the rounding level of the dot product (2 ε Σ|w_i x_i|, at x̄, or with a box at
    its best corner where that is smaller), so that the answer meets ζ ≥ θ however another
    library orders its sums (a relative change of ~1e−15).
    """
    D = x0.shape[0]
    u0 = sign * c0
    zeta0 = sign * _dot(w, x0) + u0
    if zeta0 >= theta:
        for i in range(D):
            out[i] = x0[i]
        return 0.0, _OK
    absdot = abs(c0)
    for i in range(D):
        absdot += abs(w[i] * x0[i])
    theta0 = theta
    theta = theta + 2.0 * _EPS * (absdot + abs(theta))
    if lo is None:
        S = _dot(w, vw)
        p = 1.0
        if not S >= _TINY:
            # Σ w_i vw_i underflows (|w| ~ 1e-160 and below): the same step with w and vw
            # scaled by a power of 2, which is exact; μ is then in units of the scaled vw. p = 1
            # otherwise, and every product below is the same bits (fuzz: w = 9.6e-287 was
            # called unreachable, the answer being x̄ − 1/w)
            mx = 0.0
            for i in range(D):
                if w[i] != 0.0 and vw[i] != 0.0:
                    mx = max(mx, abs(w[i]), abs(vw[i]))
            if mx > 0.0:
                p = math.ldexp(1.0, -math.frexp(mx)[1])
                S = 0.0
                for i in range(D):
                    S += (w[i] * p) * (vw[i] * p)
        if S <= 0.0:
            for i in range(D):
                out[i] = x0[i]
            return 0.0, _UNREACHABLE
        mu = (theta - zeta0) * p / S
        for r in range(_GUARD_ROUNDS):  # guard the rounding of ζ at the answer
            for i in range(D):
                out[i] = x0[i] + mu * sign * (vw[i] * p)
            z = sign * _dot(w, out) + u0
            if z >= theta:
                return mu, _OK
            mu += _guard_push((theta - z) * p, S, mu, r)
        return mu, _NUMERIC
    dirv = np.empty(D)
    u = np.empty(D)
    for i in range(D):
        dirv[i] = sign * vw[i]
        u[i] = sign * w[i]
    # the raise is the rounding level of ζ at the answer, which lies between x̄ and the box's
    # best corner: at that corner's level where it is the smaller. At x̄'s alone, w = (1e-9,
    # −0.5) from x̄ = (1, 0) raised θ by 4.4e-25 where the corner (0, 0) has ζ = 8e-89 exactly,
    # and a feasible box was called infeasible (soak round R, seed 359)
    corner = abs(c0)
    for i in range(D):
        d = dirv[i]
        corner += abs(w[i] * (x0[i] if d == 0.0 else (hi[i] if d > 0.0 else lo[i])))
    if corner < absdot:
        theta = theta0 + 2.0 * _EPS * (corner + abs(theta0))
    bp = _breakpoints(x0, dirv, lo, hi, 1.0)
    order = np.argsort(bp)
    const, slope = _segment(x0, dirv, u, lo, hi, bp, 0.0, 1.0)
    seg_start = 0.0
    found = False
    for j in range(D):
        i = order[j]
        b = bp[i]
        if b <= 0.0:
            continue
        if not math.isfinite(b):
            break
        if const + slope * b + u0 >= theta:
            found = True
            break
        seg_start = b
        d = dirv[i]
        const += u[i] * ((hi[i] if d > 0.0 else lo[i]) - x0[i])
        slope = _slope_after(slope, u[i] * d, order, j, dirv, u, bp, 1.0)
    # the last segment is unbounded above: feasible iff ζ still grows there
    const, slope = _segment(x0, dirv, u, lo, hi, bp, seg_start, 1.0)
    if not found and slope <= 0.0:
        for i in range(D):  # the best the box allows: every moving coordinate at its bound
            d = dirv[i]
            out[i] = x0[i] if d == 0.0 else (hi[i] if d > 0.0 else lo[i])
        if not sign * _dot(w, out) + u0 >= theta:
            return seg_start, _INFEASIBLE
        # the corner meets θ, evaluated afresh, where the walk's running sums did not: they
        # cancel (−1e-9 + 1e-9 beside ζ = 8e-89: soak round R, seed 359). ζ grows along the
        # path clip(x̄ + t·dir), so bisect t over it, each point evaluated afresh
        t_lo = 0.0
        t_hi = 0.0
        for i in range(D):
            if math.isfinite(bp[i]):
                t_hi = max(t_hi, bp[i])
        for _r in range(2100):
            t_mid = 0.5 * (t_lo + t_hi)
            if not t_lo < t_mid < t_hi:
                break
            _clip_step(x0, dirv, t_mid, 1.0, lo, hi, out)
            if sign * _dot(w, out) + u0 >= theta:
                t_hi = t_mid
            else:
                t_lo = t_mid
        _clip_step(x0, dirv, t_hi, 1.0, lo, hi, out)
        if not sign * _dot(w, out) + u0 >= theta:  # (the corner itself: clip may differ)
            for i in range(D):
                d = dirv[i]
                out[i] = x0[i] if d == 0.0 else (hi[i] if d > 0.0 else lo[i])
        return t_hi, _OK
    mu = (theta - u0 - const) / slope
    for r in range(_GUARD_ROUNDS):  # guard the rounding of ζ at the answer
        _clip_step(x0, dirv, mu, 1.0, lo, hi, out)
        z = sign * _dot(w, out) + u0
        if z >= theta:
            return mu, _OK
        mu += _guard_push(theta - z, slope, mu, r)
    return mu, _NUMERIC


@kernel(fastmath=REASSOC, callee=True)
def _dist_grad(x0, out, w, sign, zeta, wt, lam, lo, hi):
    """Return the distance ‖out − x0‖_W and the (projected) gradient norm of problem (2).

    The gradient norm (for lam > 0) is over the free features (wt > 0); one pass over D.
    ``lo``, ``hi``: the box, or None (then its branch is pruned at compile time).
    """
    qa = sigmoid(-zeta)
    d2 = 0.0
    g2 = 0.0
    for i in range(x0.shape[0]):
        d = out[i] - x0[i]
        d2 += wt[i] * d * d
        if lam > 0.0 and wt[i] > 0.0:
            g = lam * wt[i] * d - qa * sign * w[i]
            if lo is not None:
                if out[i] <= lo[i] and g > 0.0:
                    g = 0.0
                elif out[i] >= hi[i] and g < 0.0:
                    g = 0.0
            g2 += g * g
    if not _TINY <= d2 < math.inf:
        return _scaled_norm(x0, out, wt, d2), math.sqrt(g2)
    return math.sqrt(d2), math.sqrt(g2)


@kernel(callee=True)
def _scaled_norm(x0, out, wt, d2):
    """Return ‖out − x0‖_W where the plain sum ``d2`` of its squares overflowed or underflowed.

    Scaled by the largest term, as LAPACK's dnrm2 (a step of 1e280 for w ~ 1e-286 had the
    distance inf, which made the answer a numerical failure).
    """
    big = 0.0
    for i in range(x0.shape[0]):
        big = max(big, math.sqrt(wt[i]) * abs(out[i] - x0[i]))
    if big == 0.0 or not math.isfinite(big):
        return math.sqrt(d2)
    acc = 0.0
    for i in range(x0.shape[0]):
        r = math.sqrt(wt[i]) * abs(out[i] - x0[i]) / big
        acc += r * r
    return big * math.sqrt(acc)


@kernel(fastmath=REASSOC, callee=True)
def _closed_form_row(x0, w, sign, c0, vw, wt, lam, wvw, wfree2, unit_wt, max_iter, out):
    """Theorem 4.2 for one query in two passes over D.

    Returns (zeta, q, nit, status, dist, gn, scale), scale = Σ|w_i x*_i| + |c|: the rounding
    scale of the logit at x* (every evaluation of it is within γ_{D+1}·scale of the exact one).

    Pass 1: ζ̄ = s(w·x̄ + c). Pass 2: x* = x̄ + (s q/λ) v∘w, with
    the target logit at x*, the distance and the gradient norm accumulated on the way: with
    e = (x* − x̄) − (s q/λ) v∘w the rounding of the step, ∇E = s w (q − q̃) + λ W e on the free
    features (q̃ = σ(−ζ(x*)) from the recomputed logit), so
    ‖∇E‖² = (q − q̃)² Σ_free w² + 2 s (q − q̃) λ Σ w W e + λ² Σ (W e)².
    """
    D = x0.shape[0]
    zbar = sign * (_dot(w, x0) + c0)
    q, _p, nit, status = phi(wvw / lam, zbar, max_iter)
    coef = sign * q / lam
    az = 0.0
    sa = 0.0
    d2 = 0.0
    awe = 0.0
    aee = 0.0
    if unit_wt:
        for i in range(D):
            step = coef * vw[i]
            xi = x0[i] + step
            out[i] = xi
            d = xi - x0[i]
            e = d - step
            az += w[i] * xi
            sa += abs(w[i] * xi)
            d2 += d * d
            awe += w[i] * e
            aee += e * e
    else:
        for i in range(D):
            step = coef * vw[i]
            xi = x0[i] + step
            out[i] = xi
            d = xi - x0[i]
            e = d - step
            az += w[i] * xi
            sa += abs(w[i] * xi)
            d2 += wt[i] * d * d
            we = wt[i] * e
            awe += w[i] * we
            aee += we * we
    zeta = sign * (az + c0)
    qa = sigmoid(-zeta)
    dq = q - qa
    g2 = dq * dq * wfree2 + 2.0 * sign * dq * lam * awe + lam * lam * aee
    return zeta, q, nit, status, math.sqrt(d2), math.sqrt(max(g2, 0.0)), sa + abs(c0)


@kernel()
def _lam_row(n, X0, w, c0, tidx, vw, wt, lams, lo, hi, max_iter, wvw, wfree2, unit_wt, outs):
    X, zeta, q, nit, status, dist, gnorm, scale = outs
    sign = 1.0 if tidx[n] == 1 else -1.0  # the target's sign: +1 for classes_[1]
    lam = lams[n]
    x0 = X0[n]
    out = X[n]
    # lo is None without a box: the compile-time pruning of the other branch (see _project_one)
    if lo is None:
        zeta[n], q[n], nit[n], status[n], dist[n], gnorm[n], scale[n] = _closed_form_row(
            x0, w, sign, c0, vw, wt, lam, wvw, wfree2, unit_wt, max_iter, out
        )
    else:
        lo_r, hi_r = _box_row(lo, hi, n)  # one box per row, or one for all
        q[n], nit[n], status[n] = _lam_bounded_one(
            x0, w, sign, c0, vw, lam, lo_r, hi_r, out, max_iter
        )
        z, sa = _dot_abs(w, out)
        zeta[n] = sign * (z + c0)
        scale[n] = sa + abs(c0)
        dist[n], gnorm[n] = _dist_grad(x0, out, w, sign, zeta[n], wt, lam, lo_r, hi_r)


def lam_batch(
    X0, w, c0, tidx, vw, wt, lams, lo, hi, bounded, max_iter, wvw, wfree2, unit_wt, parallel
):
    """Problem (2) for N queries, writing only the (N, D) output.

    ``tidx``: the target of each row (1 for ``classes_[1]``, 0 for ``classes_[0]``), whose
    sign s = ±1 makes the target logit ζ = s (w·x + c0).

    ``wvw = wᵀVw``, ``wfree2 = Σ_free w²`` and ``unit_wt`` (W = I on the free features) are
    per-metric constants computed once by the caller. ``lo``, ``hi`` are (R, D): R = N, one box
    per row, or R = 1, one box for every row (read only when ``bounded``; (1, 0) otherwise).
    Without a box the kernels receive None for both, and Numba compiles a specialisation
    without the box's code (docs/tables/compile_times.md: about half the first call).
    ``parallel=False`` runs the rows in the calling thread through a serial twin of the same
    row code (single queries: no thread launch, and no parallel kernel to compile on a first
    call).

    Returns
    -------
    X : (N, D) minimisers
    zeta : (N,) target logit at X, recomputed from X (what the model sees)
    q : (N,) 1 − p_target at the optimum, from φ (full relative precision)
    nit, status : (N,) int64
    dist, gnorm : (N,) distance in the metric, (projected) gradient norm at X
    scale : (N,) Σ|w_i x_i| + |c| at X, the rounding scale of zeta
    """
    if not bounded:  # None: the kernels compile without the box's code (see _project_one)
        lo = hi = None
    return _lam(parallel, X0, w, c0, tidx, vw, wt, lams, lo, hi, max_iter, wvw, wfree2, unit_wt)


@kernel(inline="always")
def _lam_out(args):
    N, D = args[0].shape
    # np.empty, not np.zeros: every slot is written by the row function (and np.zeros in a
    # parallel kernel becomes a parfor that wakes the thread pool)
    X = np.empty((N, D))
    nit = np.empty(N, dtype=np.int64)
    status = np.empty(N, dtype=np.int64)
    return X, np.empty(N), np.empty(N), nit, status, np.empty(N), np.empty(N), np.empty(N)


_lam = batch(_lam_row, _lam_out, min_rows=_CHEAP_ROWS)


def _box_row(lo, hi, n):
    """Return query n's box (lo[n], hi[n]), or the shared one (lo[0], hi[0]); (None, None) for none.

    Compiled through the overload below, which picks its code by the type of ``lo``: a caller
    then has one path for both cases (no branch on ``lo is None`` that a boxed specialisation
    would still compile). This body is what runs with ``NUMBA_DISABLE_JIT=1``.
    """
    if lo is None:
        return None, None
    return (lo[n], hi[n]) if lo.shape[0] > 1 else (lo[0], hi[0])


@overload(_box_row)
def _box_row_ol(lo, hi, n):
    if isinstance(lo, types.NoneType):
        return lambda lo, hi, n: (None, None)

    def rows(lo, hi, n):
        # row views; an index n-or-0 would type as float in prange
        lo_r = lo[n] if lo.shape[0] > 1 else lo[0]
        hi_r = hi[n] if hi.shape[0] > 1 else hi[0]
        return lo_r, hi_r

    return rows


@kernel()
def _project_row(n, X0, w, c0, tidx, vw, wt, thetas, lo, hi, out):
    X, zeta, status, dist = out
    sign = 1.0 if tidx[n] == 1 else -1.0  # the target's sign: +1 for classes_[1]
    # one box per row, one for all, or None (then the box's code is not compiled: _project_one)
    lo_r, hi_r = _box_row(lo, hi, n)
    _mu, status[n] = _project_one(X0[n], w, sign, c0, vw, thetas[n], lo_r, hi_r, X[n])
    zeta[n] = sign * (_dot(w, X[n]) + c0)
    dist[n], _g = _dist_grad(X0[n], X[n], w, sign, zeta[n], wt, 0.0, lo_r, hi_r)


def project_batch(X0, w, c0, tidx, vw, wt, thetas, lo, hi, bounded, parallel):
    """Closest point with target logit ζ ≥ θ for N queries: returns (X, zeta, status, dist).

    ``tidx``: the target of each row (its sign as in :func:`lam_batch`).

    ``lo``, ``hi``: (R, D), one box per row (R = N) or one for every row (R = 1), as in
    :func:`lam_batch`; ``parallel=False`` runs the serial twin, as there.
    """
    if not bounded:  # None: the kernels compile without the box's code (see _project_one)
        lo = hi = None
    return _project(parallel, X0, w, c0, tidx, vw, wt, thetas, lo, hi)


@kernel(inline="always")
def _project_out(args):
    N, D = args[0].shape
    return np.empty((N, D)), np.empty(N), np.empty(N, dtype=np.int64), np.empty(N)


_project = batch(_project_row, _project_out, min_rows=_CHEAP_ROWS)


@kernel()
def binary_proba(z):
    """Return P of shape (N, 2): (σ(−z), σ(z)) per logit, each from exp(−|z|) (no overflow)."""
    N = z.shape[0]
    P = np.empty((N, 2))
    for n in range(N):
        P[n, 0], P[n, 1] = sigmoid_pair(z[n])
    return P
