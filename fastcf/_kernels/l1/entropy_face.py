"""Newton on a face of the entropy dual (:mod:`.entropy`): its direction, its optimum, its repair.

A face fixes each feature's state: the tight features (on a kink, |v_i| = λc_i) move, the
features beyond their kink sit at their bound, the others at 0.

- :func:`_face_system`: the dual Newton step on the face, with the tight features' multipliers.
- :func:`_face_opt`: the face's optimum, by damped Newton on its primal (the same point: the two
  share their stationarity conditions), for the dual to jump to.
- :func:`_restore`: the tight features put back on their kinks after a step (rounding drift).
"""

import math

import numpy as np

from .. import kernel
from ..linalg import _lu_factor, _lu_solve
from .kspace import _log_nontarget, _mcol, _nontarget

_EPS = 2.220446049250313e-16


@kernel(callee=True)
def _face_system(AT, t, cls, lq, e, tl, nT, R, N, mu, r):
    """Newton on the face: multipliers μ (= δ of the tight features) and the direction r.

    Maximise gᵀΔ − ½ Δᵀ S⁻¹ Δ s.t. NᵀΔ = 0 (S = diag(q) − qqᵀ, N = [M_i], i tight): μ solves
    (NᵀSN) μ = NᵀSg, Δ = S (g − Nμ); returned as Δ_k = q_k r_k (k = 0 the target). Returns
    (decrement gᵀΔ, ok).
    """
    q = np.empty(R)
    for j in range(R):
        q[j] = math.exp(lq[j + 1])
    ok = True
    if nT > 0:
        col = np.empty(R)
        for a in range(nT):
            _mcol(AT, tl[a], t, cls, R, col)
            for j in range(R):
                N[j, a] = col[j]
        # S N and S g with S = diag(q) − q qᵀ
        SN = np.empty((R, nT))
        for a in range(nT):
            s = 0.0
            for j in range(R):
                s += q[j] * N[j, a]
            for j in range(R):
                SN[j, a] = q[j] * (N[j, a] - s)
        sg = 0.0
        for j in range(R):
            sg += q[j] * e[j + 1]
        G = np.empty((nT, nT))
        h = np.empty(nT)
        for a in range(nT):
            acc = 0.0
            for j in range(R):
                acc += N[j, a] * q[j] * (e[j + 1] - sg)
            h[a] = acc
            for b2 in range(nT):
                acc = 0.0
                for j in range(R):
                    acc += N[j, a] * SN[j, b2]
                G[a, b2] = acc
        # equilibrated (unit diagonal) before the pivots are judged: a tight column of 2⁻²⁴
        # beside one of 0.5 has G_aa ~ 1e-15 of the other's, and a pivot test against the
        # largest diagonal called that independent pair singular; dropping one and adding it
        # back at α = 0 cycled to the iteration limit (soak round S, seed 395)
        piv = np.empty(nT, dtype=np.int64)
        dsc = np.empty(nT)
        for a in range(nT):
            if not G[a, a] > 0.0:
                return 0.0, False
            dsc[a] = 1.0 / math.sqrt(G[a, a])
        for a in range(nT):
            h[a] *= dsc[a]
            for b2 in range(nT):
                G[a, b2] *= dsc[a] * dsc[b2]
        ok = _lu_factor(G, piv, nT)
        if ok:
            for a in range(nT):
                if abs(G[a, a]) <= 1e-14:
                    ok = False
        if not ok:
            return 0.0, False
        _lu_solve(G, piv, h, nT)
        for a in range(nT):
            mu[a] = h[a] * dsc[a]
    # e − Nμ, centred: r_j = (e − Nμ)_j − qᵀ(e − Nμ), r_0 = −qᵀ(e − Nμ)
    res = np.empty(R)
    for j in range(R):
        acc = e[j + 1]
        for a in range(nT):
            acc -= N[j, a] * mu[a]
        res[j] = acc
    bar = 0.0
    for j in range(R):
        bar += q[j] * res[j]
    r[0] = -bar
    dec = 0.0
    for j in range(R):
        r[j + 1] = res[j] - bar
        dec += q[j] * r[j + 1] * res[j]
    return dec, ok


@kernel(callee=True)
def _face_phi(mbar, bsum, N, nT, dd, lam, cost, state, tl, m, q):
    """φ(δ_T) = λ Σ_T σ_i c_i δ_i + F(m̄ + b + M_T δ_T); fills the margins m and q there."""
    R = mbar.shape[0]
    for j in range(R):
        acc = mbar[j] + bsum[j]
        for a in range(nT):
            acc += N[j, a] * dd[a]
        m[j] = acc
    val = -_nontarget(m, R, q)
    for a in range(nT):
        sg = 1.0 if state[tl[a]] > 0 else -1.0
        val += lam * sg * cost[tl[a]] * dd[a]
    return val


_FACE_STEP = 64.0  # the largest change of a margin in one Newton step of _face_opt


@kernel(callee=True)
def _face_opt(AT, t, cls, mbar, lam, cost, state, tl, nT, mu, bsum, lqs):
    """Return whether the current face has an optimum; if so ``lqs`` = its log q, μ = its δ_T.

    On the face (the tight features' signs fixed, the beyond features at their bounds, the rest
    at 0) the primal is min φ = λ Σ_T σ_i c_i δ_i + F(m̄ + b + M_T δ_T) over the tight
    features' δ (b = Σ_beyond δ_i M_i): smooth and convex, Hessian M_Tᵀ S M_T. Its minimiser's
    probabilities are the dual's optimum on the face (the same stationarity conditions). Damped
    Newton from the multipliers μ; False for a singular face or one without a minimiser.
    """
    R = mbar.shape[0]
    n1 = max(nT, 1)
    m = np.empty(R)
    q = np.empty(R)
    N = np.empty((R, n1))
    col = np.empty(R)
    for a in range(nT):
        _mcol(AT, tl[a], t, cls, R, col)
        for j in range(R):
            N[j, a] = col[j]
    d = np.empty(n1)
    dt = np.empty(n1)
    for a in range(nT):
        d[a] = mu[a]
    g = np.empty(n1)
    step_v = np.empty(n1)
    G = np.empty((n1, n1))
    piv = np.empty(n1, dtype=np.int64)
    SN = np.empty((R, n1))
    f = _face_phi(mbar, bsum, N, nT, d, lam, cost, state, tl, m, q)
    ok = nT == 0
    # from a good start Newton needs ~5 steps. From a start where the face's probabilities are
    # e⁻⁵⁰⁰ away from its optimum, F is linear there and the Newton step astronomical: each step
    # is then capped to move no margin by more than ``cap`` (q by at most e^cap), a damped Newton
    # step all the same (soak round M: at logits of scale 10⁴ the dual's own steps grew such a
    # class by e^15 per iteration and ran out of iterations). The cap starts at _FACE_STEP and
    # doubles after each capped step taken whole (F still linear along it), so a margin e^4700
    # from its optimum takes ~7 capped steps, not 73 (soak round Q: with a fixed cap the 60
    # steps covered margins of 3840 and no more, and the dual ran to its iteration limit)
    cap = _FACE_STEP
    for _it in range(60):
        if nT == 0:
            break
        gmax = 0.0  # the gradient λσc − M_Tᵀq, relative to λc (q: at d)
        for a in range(nT):
            i = tl[a]
            acc = 0.0
            for j in range(R):
                acc += N[j, a] * q[j]
            sg = 1.0 if state[i] > 0 else -1.0
            g[a] = sg * lam * cost[i] - acc
            gmax = max(gmax, abs(g[a]) / (lam * cost[i]))
        # converged at 1e-14, or at the rounding of the margins the gradient is made of (as
        # below): on a face whose optimum is not unique Newton crawls along it at that level
        mround = 0.0
        for j in range(R):
            acc = abs(mbar[j]) + abs(bsum[j])
            for a in range(nT):
                acc += abs(N[j, a] * d[a])
            mround = max(mround, acc)
        if gmax <= max(1e-14, 16.0 * _EPS * mround):
            ok = True
            break
        for a in range(nT):
            sq = 0.0
            for j in range(R):
                sq += q[j] * N[j, a]
            for j in range(R):
                SN[j, a] = q[j] * (N[j, a] - sq)
        for a in range(nT):
            for b2 in range(nT):
                acc = 0.0
                for j in range(R):
                    acc += N[j, a] * SN[j, b2]
                G[a, b2] = acc
            # 1e-12 of each column's own scale on the diagonal: where q's weights leave the
            # Hessian singular (a class at q ~ e⁻⁵⁰ that the optimum needs, or a face whose
            # optimum is not unique) the step is then capped steepest descent along the flat
            # directions and Newton along the others, not an astronomical step along the flat
            # ones (soak round Q: a face made of two features at the same price)
            nn = 0.0
            for j in range(R):
                nn += N[j, a] * N[j, a]
            G[a, a] += 1e-12 * nn
        for a in range(nT):
            step_v[a] = g[a]
        if _lu_factor(G, piv, nT):
            _lu_solve(G, piv, step_v, nT)  # the Newton step is −step_v
        # else: F is linear to rounding (one class holds all of q, so S = diag(q) − q qᵀ is 0:
        # soak round Q, margins 1.6e3 apart): steepest descent, the step capped below as ever
        slope = 0.0
        for a in range(nT):
            slope -= g[a] * step_v[a]
        if not slope < 0.0:
            return False
        h = 1.0
        dmax = 0.0
        for j in range(R):
            dm = 0.0
            for a in range(nT):
                dm += N[j, a] * step_v[a]
            dmax = max(dmax, abs(dm))
            if abs(dm) * h > cap:
                h = cap / abs(dm)
        capped = h < 1.0
        accepted = False
        ft = f
        for _bt in range(30):
            moved = False
            for a in range(nT):
                dt[a] = d[a] - h * step_v[a]
                moved = moved or dt[a] != d[a]
            if not moved:  # the step is below an ulp of δ_T: Newton has converged at rounding
                break
            ft = _face_phi(mbar, bsum, N, nT, dt, lam, cost, state, tl, m, q)
            if ft <= f + 1e-4 * h * slope:
                accepted = True
                break
            h *= 0.5
        if not accepted:
            # no decrease left at rounding level, or a step below an ulp of δ_T: converged if the
            # gradient is small against the rounding of the margins it is made of (each q_j moves
            # by its margin's rounding, relative): at logits 10⁵ the margins m̄ + b + M_T δ
            # cancel to ~1e-11 and the gradient cannot go below that (soak round N); mround is
            # that of this δ_T, computed above
            ok = gmax <= max(1e-10, 16.0 * _EPS * mround)
            f = _face_phi(mbar, bsum, N, nT, d, lam, cost, state, tl, m, q)
            break
        # a capped step taken whole: the cap doubles. A capped step cut back by the line search
        # went past the minimiser: the cap becomes half the step taken, so that the steps that
        # follow close in on it as a bisection would. Reset to _FACE_STEP instead, each overshoot
        # began the doubling again from 64 (soak round S, seed 395: a one-feature face with
        # margins 3·10⁷ from its optimum, ~17 steps per halving, the 60 steps ran out)
        if capped and _bt == 0:
            cap = 2.0 * cap
        elif capped:
            cap = max(_FACE_STEP, 0.5 * h * dmax)
        else:
            cap = _FACE_STEP
        for a in range(nT):
            d[a] = dt[a]
        f = ft
    if not ok:
        return False
    for j in range(R):
        acc = mbar[j] + bsum[j]
        for a in range(nT):
            acc += N[j, a] * d[a]
        m[j] = acc
    _log_nontarget(m, R, lqs)
    for a in range(nT):
        mu[a] = d[a]
    return True


@kernel(callee=True)
def _restore(AT, t, cls, lq, lam, cost, state, tl, nT, R):
    """Put the tight features back on their kinks: q ← q + S N (NᵀSN)⁻¹ (σλc − Nᵀq).

    Rounding moves the tight features off their kinks by ~ε per step; without this the drift
    builds up over the steps of a face (and an exact line search can amplify it).
    """
    if nT == 0:
        return
    q = np.empty(R)
    for j in range(R):
        q[j] = math.exp(lq[j + 1])
    N = np.empty((R, nT))
    col = np.empty(R)
    dfc = np.empty(nT)
    big = 0.0
    for a in range(nT):
        i = tl[a]
        _mcol(AT, i, t, cls, R, col)
        acc = 0.0
        for j in range(R):
            N[j, a] = col[j]
            acc += col[j] * q[j]
        sg = 1.0 if state[i] > 0 else -1.0
        dfc[a] = sg * lam * cost[i] - acc
        big = max(big, abs(dfc[a]) / (lam * cost[i]))
    if big == 0.0:
        return
    G = np.empty((nT, nT))
    SN = np.empty((R, nT))
    for a in range(nT):
        s = 0.0
        for j in range(R):
            s += q[j] * N[j, a]
        for j in range(R):
            SN[j, a] = q[j] * (N[j, a] - s)
    for a in range(nT):
        for b2 in range(nT):
            acc = 0.0
            for j in range(R):
                acc += N[j, a] * SN[j, b2]
            G[a, b2] = acc
    piv = np.empty(nT, dtype=np.int64)
    if not _lu_factor(G, piv, nT):
        return
    _lu_solve(G, piv, dfc, nT)
    # Δq = S N z, as Δq_k = q_k r_k with r centred
    res = np.empty(R)
    for j in range(R):
        acc = 0.0
        for a in range(nT):
            acc += N[j, a] * dfc[a]
        res[j] = acc
    bar = 0.0
    for j in range(R):
        bar += q[j] * res[j]
    if abs(bar) >= 0.5:
        return
    for j in range(R):
        if abs(res[j] - bar) >= 0.5:
            return
    lq[0] += math.log1p(-bar)
    for j in range(R):
        lq[j + 1] += math.log1p(res[j] - bar)
