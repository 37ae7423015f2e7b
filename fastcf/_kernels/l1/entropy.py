"""Manhattan counterfactuals of softmax models, ``lam=``: the active set on the entropy dual.

Margins m_j = z_t − z_{c_j} = m̄_j + (M δ)_j. With F(δ) = log(1 + Σ_j exp(−m_j)) = −log p_t,
problem (2) is min_δ λ Σ c_i |δ_i| + F(δ) over the box, and its Fenchel dual is

    max_q  Ψ(q) = −m̄ᵀq − Σ_{k=0}^{R} q_k log q_k − Σ_i ψ_i(M_iᵀq),
    q ∈ R^R, q_0 = 1 − Σ_j q_j (a probability vector),
    ψ_i(v) = U_i (v − λc_i)⁺ + L_i (−v − λc_i)⁺,

U_i = hi_i − x̄_i, L_i = x̄_i − lo_i (∞: a hard constraint |v| ≤ λ c_i). At the optimum q are
the non-target probabilities of the answer and δ_i ∈ ∂ψ_i(M_iᵀq): 0 inside (|v_i| < λc_i),
the bound beyond (|v_i| > λc_i), and for the features on a kink ("tight", |v_i| = λc_i) the
Lagrange multipliers of v_i = ±λc_i. Ψ is strictly concave on the simplex; the method is an
active set in R = K − 1 variables: Newton steps on the face of the tight features, an exact
line search across the kinks of ψ (stopping at a wall or where the slope changes sign), and at
a face optimum the release of the tight feature whose multiplier leaves [0, U_i] (or
[−L_i, 0]). q is carried as log q (Newton steps are multiplicative: Δq_k = q_k r_k), so that
classes of probability ~1e−300 keep their relative precision. Where damped Newton on the
primal of the face finds its minimiser (_face_opt), the step goes straight to the face's
optimum (the same point: the two share their stationarity conditions); the dual Newton
direction alone needs many steps when classes of q_j ~ 1e−30 must grow by orders of magnitude.

:func:`lam_dual` is that active set, from a dual point with its features' states
(:func:`_cold_start`, or a point of another λ rescaled by :func:`_rescale`); the Newton steps on a
face are in :mod:`.entropy_face`; the answer, its certificates and the λ-search of ``proba=τ`` in
:mod:`.entropy_solve`.
"""

import math

import numpy as np

from fastcf._status import Status

from .. import kernel
from .entropy_face import _face_opt, _face_system, _restore
from .kspace import _expand, _log_nontarget, _mcol

_EPS = 2.220446049250313e-16
_OK = int(Status.OK)
_NUMERIC = int(Status.NUMERIC)
_MAXITER = int(Status.MAXITER)

_IN = 0  # state of a feature: inside (δ = 0)
_TIGHT = 1  # ±1: on the kink v = ±λc (δ between 0 and the bound)
_BEYOND = 2  # ±2: beyond the kink (δ at the bound)


@kernel(callee=True)
def _first_kink(v, w, lc, st):
    """Return (α, new side) of the next kink of feature i along v + α w (α = ∞: none)."""
    if st == _IN:
        if w > 0.0:
            return (lc - v) / w, 1
        if w < 0.0:
            return (-lc - v) / w, -1
        return np.inf, 0
    if st == _BEYOND and w < 0.0:
        return (lc - v) / w, 1
    if st == -_BEYOND and w > 0.0:
        return (-lc - v) / w, -1
    return np.inf, 0


@kernel(inline="always")
def _log_step(alpha, rk, dk):
    """log(1 + α r_k), r_k = e^{d_k} − 1; r_k = inf where that overflowed.

    A jump from an underflowed q_k (logits of scale 1e4: q_k ~ e⁻⁵⁰⁰⁰) to a face's optimum has
    r_k = e^{d_k} − 1 beyond the doubles; there 1 + α r_k = α e^{d_k} + 1 − α, whose log is
    d_k + log(α + (1 − α) e^{−d_k}).
    """
    if rk != np.inf:  # (a NaN goes this way too, as before)
        return math.log1p(alpha * rk)
    if alpha == 0.0:
        # no step: 0, not d_k + log(e^{−d_k}), whose e^{−d_k} underflows for d_k ~ 2e5 and
        # made log q_k −inf, then NaN (a line search stopped at a kink at α = 0; soak round P)
        return 0.0
    v = alpha + (1.0 - alpha) * math.exp(-dk)
    # α beyond 1 can make v ≤ 0 (the step past the point where q_k reaches 0): NaN, as the
    # compiled log gives, also where the kernels run as Python (math.log raised ValueError)
    return dk + math.log(v) if v > 0.0 else (-np.inf if v == 0.0 else np.nan)


@kernel(inline="always")
def _delta(lqk, rk, dk):
    """Δ_k = q_k r_k; where r_k overflowed, q_k (e^{d_k} − 1) = e^{lq_k + d_k} to the last bit."""
    if rk != np.inf:
        return math.exp(lqk) * rk
    return math.exp(lqk + dk)


@kernel(callee=True)
def _dphi(lq, r, dq, e, R, alpha, pen):
    """φ'(α) along the direction: Σ_j Δ_j g_j(α) − pen, with Δ_j = q_j r_j (j ≥ 1).

    g_j(α) = e_j − log(1 + α r_j) + log(1 + α r_0), e_j = g_j(0) (the gradient of the smooth
    part, without the beyond features' constant slopes: those are in ``pen``). ``dq``: log(1 +
    r_k) where r_k overflowed (:func:`_log_step`).
    """
    l0 = _log_step(alpha, r[0], dq[0])
    s = 0.0
    for j in range(1, R + 1):
        s += _delta(lq[j], r[j], dq[j]) * (e[j] - _log_step(alpha, r[j], dq[j]) + l0)
    return s - pen


@kernel(callee=True)
def _d2phi(lq, r, dq, R, alpha):
    s = 0.0
    for k in range(R + 1):
        if r[k] != np.inf:
            den = 1.0 + alpha * r[k]
            s -= math.exp(lq[k]) * r[k] * r[k] / den
        else:  # r_k / (1 + α r_k) with r_k = e^{d_k} − 1 overflowed
            ed = math.exp(-dq[k])
            s -= math.exp(lq[k] + dq[k]) * (1.0 - ed) / (alpha + (1.0 - alpha) * ed)
    return s


@kernel(callee=True)
def _line_root(lq, r, dq, e, R, pen, a, b):
    """Return the root of φ' in [a, b] by Newton and bisection.

    φ'(a) > 0 ≥ φ'(b⁻); b may be the end of the domain (φ' → −∞ there).
    """
    x = a
    lo_ = a
    hi_ = b
    for _ in range(200):
        f = _dphi(lq, r, dq, e, R, x, pen)
        if f > 0.0:
            lo_ = x
        else:
            hi_ = x
        if f == 0.0:
            return x
        d2 = _d2phi(lq, r, dq, R, x)
        xn = x - f / d2 if d2 < 0.0 else 0.5 * (lo_ + hi_)
        if not (lo_ < xn < hi_):
            xn = 0.5 * (lo_ + hi_)
        if abs(xn - x) <= 4.0 * _EPS * abs(xn) or hi_ - lo_ <= 4.0 * _EPS * hi_:
            return xn
        x = xn
    return x


# ------------------------------------------------ a binary heap of (key, index): the kinks ahead
@kernel(callee=True)
def _less(ka, ia, kb, ib):
    """(ka, ia) < (kb, ib): by key, then by index (ties: the lowest index first)."""
    return ka < kb or (ka == kb and ia < ib)


@kernel(callee=True)
def _sift_down(keys, idx, pos, n):
    while True:
        left = 2 * pos + 1
        if left >= n:
            return
        small = left
        if left + 1 < n and _less(keys[left + 1], idx[left + 1], keys[left], idx[left]):
            small = left + 1
        if not _less(keys[small], idx[small], keys[pos], idx[pos]):
            return
        keys[pos], keys[small] = keys[small], keys[pos]
        idx[pos], idx[small] = idx[small], idx[pos]
        pos = small


@kernel(callee=True)
def _heapify(keys, idx, n):
    """Order keys[:n] (with idx) as a min-heap in place, O(n), one call (no per-node calls)."""
    for start in range(n // 2 - 1, -1, -1):
        pos = start
        while True:
            left = 2 * pos + 1
            if left >= n:
                break
            small = left
            right = left + 1
            if right < n and (
                keys[right] < keys[left] or (keys[right] == keys[left] and idx[right] < idx[left])
            ):
                small = right
            if not (
                keys[small] < keys[pos] or (keys[small] == keys[pos] and idx[small] < idx[pos])
            ):
                break
            keys[pos], keys[small] = keys[small], keys[pos]
            idx[pos], idx[small] = idx[small], idx[pos]
            pos = small


@kernel(callee=True)
def _pop(keys, idx, n):
    """Return (index, new size) of the heap's minimum (−1 when empty)."""
    if n == 0:
        return -1, 0
    top = idx[0]
    n -= 1
    keys[0] = keys[n]
    idx[0] = idx[n]
    _sift_down(keys, idx, 0, n)
    return top, n


@kernel(callee=True)
def _heap_push(keys, idx, n, key, i):
    """Push (key, i) on a heap with free slots; returns the new size."""
    pos = n
    keys[pos] = key
    idx[pos] = i
    while pos > 0:
        parent = (pos - 1) // 2
        if _less(keys[pos], idx[pos], keys[parent], idx[parent]):
            keys[pos], keys[parent] = keys[parent], keys[pos]
            idx[pos], idx[parent] = idx[parent], idx[pos]
            pos = parent
        else:
            break
    return n + 1


@kernel(callee=True)
def _twin_of_tight(AT, t, cls, R, i, tl, nT, cost):
    """Whether feature i's column M_i / c_i is exactly ± that of a tight feature."""
    for a in range(nT):
        f = tl[a]
        if f == i:
            continue
        same = True
        opposite = True
        for j in range(R):
            mi = (AT[i, t] - AT[i, cls[j]]) * cost[f]
            mf = (AT[f, t] - AT[f, cls[j]]) * cost[i]
            same = same and mi == mf
            opposite = opposite and mi == -mf
            if not (same or opposite):
                break
        if same or opposite:
            return True
    return False


@kernel()
def lam_dual(AT, t, mbar, lam, cost, free, rp, rm, lq, state, tl, nT, mu, max_iter):
    """Maximise the entropy dual Ψ of problem (2) (the module docstring) from (lq, state, tl[:nT]).

    ``lq`` (R+1): log q (lq[0]: the target); ``state`` (D) int8; ``tl``: the tight features;
    ``mu`` (R): their multipliers at exit. Returns (nit, status, nT). Status: OK, MAXITER,
    NUMERIC (a singular face system that dropping features did not cure).
    """
    D, K = AT.shape
    R = K - 1
    cls = np.empty(R, dtype=np.int64)
    j = 0
    for k in range(K):
        if k != t:
            cls[j] = k
            j += 1
    e = np.empty(R + 1)
    es = np.empty(R + 1)
    r = np.empty(R + 1)
    N = np.empty((R, R))
    qk = np.empty(K)
    dk = np.empty(K)
    v = np.empty(D)
    w = np.empty(D)
    keys = np.empty(2 * D + 1)
    hidx = np.empty(2 * D + 1, dtype=np.int64)
    col = np.empty(R)
    bsum = np.empty(R)
    qs = np.empty(R)
    lqs = np.empty(R + 1)
    dq = np.empty(R + 1)
    mu2 = np.empty(R + 1)
    lq_top = np.empty(R + 1)
    stall = 0
    last_drop = -1  # the feature last dropped from a singular face
    jumped = False  # the last iteration jumped to a singular face's optimum
    for it in range(max_iter):
        for k in range(R + 1):
            lq_top[k] = lq[k]
        _restore(AT, t, cls, lq, lam, cost, state, tl, nT, R)
        # v_i = M_iᵀq for every free feature, and the beyond features' slopes Σ δ_i M_i
        for jj in range(R):
            qs[jj] = math.exp(lq[jj + 1])
        _expand(qs, t, cls, R, qk)
        for jj in range(R):
            bsum[jj] = 0.0
        for i in range(D):
            if not free[i]:
                continue
            acc = 0.0
            for k in range(K):
                acc += qk[k] * AT[i, k]
            v[i] = acc
            st = state[i]
            if st == _BEYOND or st == -_BEYOND:
                d = rp[i] if st > 0 else -rm[i]
                _mcol(AT, i, t, cls, R, col)
                for jj in range(R):
                    bsum[jj] += d * col[jj]
        # the gradient of Ψ on this piece: −m̄ − log(q_j/q_0) − Σ_beyond δ_i M_i
        e[0] = 0.0
        for jj in range(R):
            e[jj + 1] = -mbar[jj] - (lq[jj + 1] - lq[0]) - bsum[jj]
        dec, ok = _face_system(AT, t, cls, lq, e, tl, nT, R, N, mu, r)
        if not ok and nT > 0 and not jumped:
            # singular in q's weights — a class at q ~ e⁻⁵⁰ that the face's optimum needs, or
            # two features at the same price (soak round Q: dropping one and adding it back at
            # α = 0 cycled to the iteration limit). The face's primal Newton may still find its
            # optimum: jump there first, and drop a feature only if it cannot
            for a in range(nT):
                mu2[a] = 0.0
            if _face_opt(AT, t, cls, mbar, lam, cost, state, tl, nT, mu2, bsum, lqs):
                moved = False
                for k in range(R + 1):
                    moved = moved or lq[k] != lqs[k]
                    lq[k] = lqs[k]
                if moved:
                    jumped = True
                    continue
        jumped = False
        if not ok:
            # a singular face (dependent tight columns): drop the last tight feature. If the
            # line search put that same feature back and the face is singular again (classes
            # at q ~ 1e-44 leave two tight columns dependent in q's weights: soak round P, a
            # cycle to the iteration limit), drop the oldest tight feature instead
            if nT == 0:
                return it, _NUMERIC, nT
            if nT >= 2 and tl[nT - 1] == last_drop:
                last_drop = -1
                state[tl[0]] = _IN
                for a in range(nT - 1):
                    tl[a] = tl[a + 1]
                nT -= 1
                continue
            nT -= 1
            last_drop = tl[nT]
            state[tl[nT]] = _IN
            continue
        scale_e = 1.0
        for jj in range(R):
            scale_e = max(scale_e, abs(mbar[jj]))
        if nT == R:
            dec = 0.0  # a vertex of the dual: the face is a point
        # the step's drift off the tight kinks (NᵀΔ = 0 up to rounding of the large q_j): a
        # direction at rounding level, taken far by the line search (classes with q_j ~ 1e−30
        # that still move by large factors), would drift off them; cap the step so that
        # the drift stays within what _restore repairs
        acap = np.inf
        for a in range(nT):
            dv = 0.0
            for jj in range(R):
                dv += N[jj, a] * math.exp(lq[jj + 1]) * r[jj + 1]
            if dv != 0.0:
                acap = min(acap, 1e-9 * lam * cost[tl[a]] / abs(dv))
        # the decrement weighs class j by q_j: a class that collapsed to q_j ~ 1e−30 but wants
        # to grow back (r_j > 0 large) would go unseen; the face is optimal when the decrement
        # is at rounding level and no class wants to grow. By more than 1e-4 of itself: a class
        # that the decrement does not see has q_j r_j² ≤ 1e-22, so below that its share of any
        # v_i is under 1e-18 |M_i|, while the face system's own noise moves the r_j of classes
        # at q ~ e⁻²⁷ by ±5e-6 from one step to the next, and a test at 1e-8 never held there
        # (soak round R, seed 356: the face optimum reached at step 3, then to the iteration
        # limit). The answer's own KKT conditions are checked after the dual in any case
        grow = 0.0
        for k in range(R + 1):
            grow = max(grow, r[k])
        if nT == R or (dec <= 1e-22 * scale_e and grow <= 1e-4) or stall >= 2:
            stall = 0
            # a face optimum: release the worst multiplier outside its range (in cost units)
            worst = 0.0
            wa = -1
            wnew = 0
            mscale = 0.0
            for a in range(nT):
                mscale = max(mscale, abs(mu[a]) * cost[tl[a]])
            tolm = 1e-12 * mscale + 1e-300
            for a in range(nT):
                i = tl[a]
                sg = 1 if state[i] > 0 else -1
                val = sg * mu[a]
                room = rp[i] if sg > 0 else rm[i]
                if -val * cost[i] > max(worst, tolm):
                    worst = -val * cost[i]
                    wa = a
                    wnew = _IN
                elif (val - room) * cost[i] > max(worst, tolm):
                    worst = (val - room) * cost[i]
                    wa = a
                    wnew = sg * _BEYOND
            if wa < 0:
                return it, _OK, nT
            state[tl[wa]] = wnew
            for a in range(wa, nT - 1):
                tl[a] = tl[a + 1]
                mu[a] = mu[a + 1]
            nT -= 1
            continue
        # the direction: towards the face's optimum when the primal Newton finds it (one
        # step then crosses the face, and classes of tiny q_j take their values at once),
        # else the dual Newton direction
        for a in range(nT):
            mu2[a] = mu[a]
        jump = _face_opt(AT, t, cls, mbar, lam, cost, state, tl, nT, mu2, bsum, lqs)
        if jump:
            for k in range(R + 1):
                dq[k] = lqs[k] - lq[k]
                r[k] = math.expm1(dq[k]) if dq[k] < 709.0 else np.inf
        else:
            for k in range(R + 1):
                dq[k] = np.inf  # (unused: the Newton direction's r is finite)
        # the line search: w_i = M_iᵀΔ, kinks in a heap; φ' takes the smooth part's gradient
        # (the beyond features' slopes are in ``pen``)
        es[0] = 0.0
        for jj in range(R):
            es[jj + 1] = e[jj + 1] + bsum[jj]
        for jj in range(R):
            col[jj] = _delta(lq[jj + 1], r[jj + 1], dq[jj + 1])  # Δ
        _expand(col, t, cls, R, dk)
        pen = 0.0
        # np.int64, not the literal 0: while typing this loop Numba would see nh as
        # Literal[int](0) and compile _heapify and _pop a second time for it
        nh = np.int64(0)
        for i in range(D):
            if not free[i]:
                continue
            st = state[i]
            if st == _TIGHT or st == -_TIGHT:
                continue
            acc = 0.0
            mag = 0.0
            for k in range(K):
                acc += dk[k] * AT[i, k]
                mag += abs(dk[k] * AT[i, k])
            if abs(acc) <= 1e-13 * mag:
                acc = 0.0
            w[i] = acc
            if st == _BEYOND:
                pen += rp[i] * acc
            elif st == -_BEYOND:
                pen -= rm[i] * acc
            a_k, _side = _first_kink(v[i], acc, lam * cost[i], st)
            if a_k < np.inf:  # collected unordered: most line searches stop at the first kink
                keys[nh] = max(a_k, 0.0)
                hidx[nh] = i
                nh += 1
        heaped = False
        first = -1
        for h_ in range(nh):
            if first < 0 or _less(keys[h_], hidx[h_], keys[first], hidx[first]):
                first = h_
        adom = np.inf
        for k in range(R + 1):
            if r[k] < 0.0:
                adom = min(adom, -1.0 / r[k])
        a0 = 0.0
        alpha = -1.0
        added = -1
        crossed = False
        while alpha < 0.0:
            if nh > 0:
                top = 0 if heaped else first
                b = keys[top]
                i = hidx[top]
            else:
                b = np.inf
                i = -1
            if jump and not crossed and b >= 1.0:
                alpha = 1.0  # the face's optimum, on this piece: the maximum of the segment
                break
            if b >= acap and acap < adom:
                if _dphi(lq, r, dq, es, R, acap, pen) > 0.0:
                    alpha = acap
                else:
                    alpha = _line_root(lq, r, dq, es, R, pen, a0, acap)
                break
            if b >= adom:
                alpha = _line_root(lq, r, dq, es, R, pen, a0, adom)
                break
            if _dphi(lq, r, dq, es, R, b, pen) <= 0.0:
                alpha = _line_root(lq, r, dq, es, R, pen, a0, b)
                break
            if not heaped:  # past the first kink: order the rest (O(D) heapify)
                _heapify(keys, hidx, nh)
                heaped = True
            i, nh = _pop(keys, hidx, nh)
            if _twin_of_tight(AT, t, cls, R, i, tl, nT, cost):
                # its column is a tight one's, per unit cost (±): v_i stays on its kink with
                # the tight feature's, and the two together make the face singular. Adding it
                # and dropping it again cycled to the iteration limit (soak round R, seed 337:
                # two identical columns at logits 3.75·10⁷); the tight twin moves for both
                a0 = b
                continue
            st = state[i]
            a_k, side = _first_kink(v[i], w[i], lam * cost[i], st)
            room = rp[i] if side > 0 else rm[i]
            if st == _IN:
                if room == np.inf:  # a wall
                    alpha = b
                    added = i
                    state[i] = side * _TIGHT
                    break
                newpen = pen + (rp[i] * w[i] if side > 0 else -rm[i] * w[i])
                if _dphi(lq, r, dq, es, R, b, newpen) <= 0.0:
                    alpha = b
                    added = i
                    state[i] = side * _TIGHT
                    break
                state[i] = side * _BEYOND
                pen = newpen
                crossed = True
            else:  # beyond, crossing back inside
                newpen = pen - (rp[i] * w[i] if st > 0 else -rm[i] * w[i])
                if _dphi(lq, r, dq, es, R, b, newpen) <= 0.0:
                    alpha = b
                    added = i
                    state[i] = side * _TIGHT
                    break
                state[i] = _IN
                pen = newpen
                crossed = True
                # np.int8 (the type of state[i]): the literal _IN would compile it twice
                a_n, _s = _first_kink(v[i], w[i], lam * cost[i], np.int8(_IN))
                if a_n < np.inf:
                    nh = _heap_push(keys, hidx, nh, a_n, i)  # the other side, further on
            a0 = b
        if added >= 0 and nT == R:  # never: R independent tight columns leave no direction
            state[added] = _IN
            return it, _NUMERIC, nT
        if added >= 0:
            tl[nT] = added
            mu[nT] = 0.0
            nT += 1
        if jump and alpha == 1.0:
            for k in range(R + 1):
                lq[k] = lqs[k]
        else:
            for k in range(R + 1):
                lq[k] += _log_step(alpha, r[k], dq[k])
        same = True
        for k in range(R + 1):
            same = same and lq[k] == lq_top[k]
            if not lq[k] == lq[k]:  # NaN: no iteration can recover it
                return it + 1, _NUMERIC, nT
        # an iteration that ends where it started (α = 0, or a jump back to the face's optimum
        # that _restore had moved by an ulp: at logits 10⁸ the optimum is reached, but its
        # rounding-level growth r ~ 1e-8 stays above the test above) would repeat itself to the
        # iteration limit: a stall
        if added < 0 and (alpha <= 0.0 or same):
            stall += 1
        else:
            stall = 0
    return max_iter, _MAXITER, nT


@kernel(callee=True)
def _cold_start(AT, t, cls, mbar, lam, cost, free, rp, rm, lq, state):
    """Set a strictly feasible dual point: the probabilities at x̄, scaled to |M_iᵀq| < λc_i.

    Returns nT = 0 (no tight feature); ``state``: inside, or beyond where the room is finite
    and |v_i| > λ c_i.
    """
    D, K = AT.shape
    R = K - 1
    _log_nontarget(mbar, R, lq)
    qs = np.empty(R)
    for j in range(R):
        qs[j] = math.exp(lq[j + 1])
    qk = np.empty(K)
    _expand(qs, t, cls, R, qk)
    s = 1.0
    for i in range(D):
        state[i] = _IN
        if not free[i]:
            continue
        v = 0.0
        for k in range(K):
            v += qk[k] * AT[i, k]
        room = rp[i] if v > 0.0 else rm[i]
        if room == np.inf and abs(v) > 0.0:
            s = min(s, 0.5 * lam * cost[i] / abs(v))
    if s < 1.0:  # q ← s q: q_0 = 1 − s (1 − q_0) = s q_0 + (1 − s)
        q0 = math.exp(lq[0])
        for j in range(R):
            lq[j + 1] += math.log(s)
        lq[0] = math.log(s * q0 + (1.0 - s))
        for j in range(R):
            qs[j] *= s
        _expand(qs, t, cls, R, qk)
    for i in range(D):
        if not free[i]:
            continue
        v = 0.0
        for k in range(K):
            v += qk[k] * AT[i, k]
        if v > lam * cost[i]:
            state[i] = _BEYOND
        elif v < -lam * cost[i]:
            state[i] = -_BEYOND
    # np.int64, not the literal 0: Numba would type nT as Literal[int](0) and compile lam_dual
    # and its callees a second time for it (4 s of a cold start)
    return np.int64(0)


@kernel(callee=True)
def _rescale(lq, R, ratio):
    """Rescale q ← ratio·q: the dual point of λ for λ·ratio (every feature keeps its state)."""
    q0 = math.exp(lq[0])
    rest = 1.0 - q0
    new0 = ratio * q0 + (1.0 - ratio) if ratio <= 1.0 else 1.0 - ratio * rest
    if not new0 > 0.0:
        return False
    for j in range(R):
        lq[j + 1] += math.log(ratio)
    lq[0] = math.log(new0)
    return True
