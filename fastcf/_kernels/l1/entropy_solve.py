"""Manhattan counterfactuals of softmax models, ``lam=`` and ``proba=τ``: one query, N queries.

From the dual (:func:`.entropy.lam_dual`) to the answer: δ from the dual's states
(:func:`_delta_of`), Newton on the primal KKT system of the structure found (:func:`_polish`),
the answer's own certificates (:func:`_primal_ok`, :func:`_kkt_check`, the KKT residual and the
duality gap of :func:`_finish_row`) and a restart from the answer's probabilities where they
fail (:func:`_restart`).

- :func:`softmax_lam_one`: problem (2) at λ.
- :func:`softmax_proba_one`: ``proba=τ``, a search over λ (a bracket in log λ, then regula
  falsi), each λ solved by the dual warm-started from the last, the structure polished with λ
  unknown and accepted where every feature's state is optimal.
- :func:`softmax_lam_batch`, :func:`softmax_proba_batch`: N queries.
"""

import math

import numpy as np

from fastcf._status import Status

from .. import kernel
from .._batch import batch, inlined
from ..linalg import _lu_factor, _lu_solve
from .entropy import _BEYOND, _IN, _TIGHT, _cold_start, _rescale, lam_dual
from .kkt import l1_residual
from .kspace import _classes, _expand, _log_nontarget, _mcol, _nontarget

_EPS = 2.220446049250313e-16
_OK = int(Status.OK)
_UNREACHABLE = int(Status.UNREACHABLE)
_INFEASIBLE = int(Status.INFEASIBLE)
_NUMERIC = int(Status.NUMERIC)
_MAXITER = int(Status.MAXITER)

# ``proba`` of _polish: NumPy booleans, typed ``bool``; the literals True and False are typed
# Literal[bool](True) and Literal[bool](False), and _polish and _at_rounding were compiled once
# for each (the same code: Numba prunes no branch on a literal bool argument)
_NO = np.bool_(False)
_YES = np.bool_(True)


@kernel(callee=True)
def _delta_of(state, tl, nT, mu, rp, rm, free, delta):
    """δ of the dual's answer: 0 inside, the bound beyond, the clipped multiplier on a kink."""
    for i in range(state.shape[0]):
        st = state[i]
        if not free[i] or st == _IN:
            delta[i] = 0.0
        elif st == _BEYOND:
            delta[i] = rp[i]
        elif st == -_BEYOND:
            delta[i] = -rm[i]
        else:
            delta[i] = 0.0
    for a in range(nT):
        i = tl[a]
        d = mu[a]
        if state[i] > 0:
            d = min(max(d, 0.0), rp[i])
        else:
            d = max(min(d, 0.0), -rm[i])
        delta[i] = d


@kernel(callee=True)
def _margins_of(AT, t, cls, mbar, state, free, delta, m):
    """Write m = m̄ + Σ_i δ_i M_i (the features that moved) into ``m``."""
    R = mbar.shape[0]
    col = np.empty(R)
    for j in range(R):
        m[j] = mbar[j]
    for i in range(state.shape[0]):
        if free[i] and state[i] != _IN and delta[i] != 0.0:
            _mcol(AT, i, t, cls, R, col)
            for j in range(R):
                m[j] += delta[i] * col[j]


@kernel(callee=True)
def _margins_round(AT, t, cls, mbar, free, delta, m):
    """Write m = m̄ + Σ_i δ_i M_i into ``m``; return mround = max_j |m̄_j| + Σ_i |δ_i M_ij|.

    ε·mround bounds the rounding of the margins so formed; a change e of the margins moves each
    q_j by at most 2 q_j max|e|, so v_i = M_iᵀq is known to 2ε·mround Σ_k |q_k a_ki|.
    """
    R = mbar.shape[0]
    col = np.empty(R)
    acc = np.empty(R)
    for j in range(R):
        m[j] = mbar[j]
        acc[j] = abs(mbar[j])
    for i in range(delta.shape[0]):
        if free[i] and delta[i] != 0.0:
            _mcol(AT, i, t, cls, R, col)
            for j in range(R):
                m[j] += delta[i] * col[j]
                acc[j] += abs(delta[i] * col[j])
    mround = 0.0
    for j in range(R):
        mround = max(mround, acc[j])
    return mround


@kernel(callee=True)
def _answer_q(AT, t, cls, mbar, free, delta):
    """Return (q in K-space form, mround) at x̄ + δ: the answer's own probabilities."""
    K = AT.shape[1]
    R = K - 1
    m = np.empty(R)
    mround = _margins_round(AT, t, cls, mbar, free, delta, m)
    q = np.empty(R)
    _nontarget(m, R, q)
    qk = np.empty(K)
    _expand(q, t, cls, R, qk)
    return qk, mround


@kernel(inline="always")
def _slope_tol(AT, qk, i, lc, rtol, mround):
    """Return (v_i = M_iᵀq, λc_i, the tolerance of |v_i| against λc_i).

    rtol of λc_i, or 16 times the rounding of v_i, 2ε·mround Σ_k |q_k a_ki| (see
    :func:`_margins_round`), whichever is larger.
    """
    v = 0.0
    sens = 0.0
    for k in range(qk.shape[0]):
        v += qk[k] * AT[i, k]
        sens += abs(qk[k] * AT[i, k])
    return v, lc, max(rtol * lc, 32.0 * _EPS * mround * sens)


@kernel(callee=True)
def _at_rounding(AT, t, cls, mbar, state, free, d, N, q, F, lam, cost, tl, nT, proba, log_tau):
    """Whether _polish's residual F (at δ = ``d``, q its probabilities) is at rounding level.

    The margins m̄ + Σ δ_i M_i are formed to ε·mround, mround = max_j |m̄_j| + Σ_i |δ_i M_ij|,
    and a change e of the margins moves q_j by at most 2 q_j max|e|: so F_a = M_aᵀq − σλc is
    known to 2ε·mround Σ_j |M_ja| q_j and log p_t to 2ε·mround. At margins of 10⁶ (δ = 1.6·10⁴
    on rows of 10³) that is 1e-7 of λc, and the fixed 1e-9 refused the right structure at every
    λ while the dual ran to its iteration limit (soak round Q, seed 321). Accepted within 16×.
    """
    R = mbar.shape[0]
    m = np.empty(R)
    tol = 32.0 * _EPS * _margins_round(AT, t, cls, mbar, free, d, m)  # 16 × 2ε·mround
    for a in range(nT):
        sens = 0.0
        for j in range(R):
            sens += abs(N[j, a]) * q[j]
        if not abs(F[a]) <= max(1e-9 * lam * cost[tl[a]], tol * sens):
            return False
    if proba and not abs(F[nT]) <= max(1e-9 * (1.0 + abs(log_tau)), tol):
        return False
    return True


@kernel(callee=True)
def _polish(AT, t, cls, mbar, lam, log_tau, cost, free, rp, rm, state, tl, nT, delta, proba):
    """Newton on the primal KKT system of a fixed structure (the tight features' δ, and λ).

    problem (2): M_aᵀ q(δ) = σ_a λ c_a for the tight a. ``proba``: the same with λ unknown and
    log p_t(δ) = log τ. Returns (λ, converged). ``delta`` is updated when converged.
    """
    R = mbar.shape[0]
    n = nT + 1 if proba else nT
    if n == 0 or (proba and nT == 0):
        return lam, not proba
    m = np.empty(R)
    q = np.empty(R)
    N = np.empty((R, nT))
    col = np.empty(R)
    for a in range(nT):
        _mcol(AT, tl[a], t, cls, R, col)
        for j in range(R):
            N[j, a] = col[j]
    d = delta.copy()
    J = np.empty((n, n))
    F = np.empty(n)
    piv = np.empty(n, dtype=np.int64)
    SN = np.empty((R, nT))
    best = np.inf
    fn = np.inf
    for it in range(31):
        _margins_of(AT, t, cls, mbar, state, free, d, m)
        lpt = _nontarget(m, R, q)
        fn = 0.0
        for a in range(nT):
            i = tl[a]
            acc = 0.0
            for j in range(R):
                acc += N[j, a] * q[j]
            sg = 1.0 if state[i] > 0 else -1.0
            F[a] = acc - sg * lam * cost[i]
            fn = max(fn, abs(F[a]) / (lam * cost[i]))
        if proba:
            F[nT] = lpt - log_tau
            fn = max(fn, abs(F[nT]) / (1.0 + abs(log_tau)))
        if fn <= 4.0 * _EPS or it == 30:
            break
        if it > 3 and fn >= 0.5 * best:
            break  # no longer converging quadratically: at rounding level, or the wrong structure
        best = min(best, fn)
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
                J[a, b2] = -acc
            if proba:
                sg = 1.0 if state[tl[a]] > 0 else -1.0
                J[a, nT] = -sg * cost[tl[a]]
                acc = 0.0
                for j in range(R):
                    acc += q[j] * N[j, a]
                J[nT, a] = acc
        if proba:
            J[nT, nT] = 0.0
        if not _lu_factor(J, piv, n):
            return lam, False
        for a in range(n):
            F[a] = -F[a]
        _lu_solve(J, piv, F, n)
        for a in range(nT):
            d[tl[a]] += F[a]
        if proba:
            lam += F[nT]
            if not lam > 0.0:
                return lam, False
    if not fn <= 1e-9 and not _at_rounding(
        AT, t, cls, mbar, state, free, d, N, q, F, lam, cost, tl, nT, proba, log_tau
    ):
        return lam, False
    for a in range(nT):  # the structure must hold: signs and rooms of the tight features
        i = tl[a]
        if state[i] > 0 and not (0.0 <= d[i] <= rp[i]):
            return lam, False
        if state[i] < 0 and not (-rm[i] <= d[i] <= 0.0):
            return lam, False
    for a in range(nT):
        delta[tl[a]] = d[tl[a]]
    return lam, True


@kernel(callee=True)
def _kkt_check(AT, t, cls, mbar, lam, cost, free, state, delta, rtol):
    """Whether every feature's state is optimal for λ at δ (the others: by construction)."""
    D = AT.shape[0]
    qk, mround = _answer_q(AT, t, cls, mbar, free, delta)
    for i in range(D):
        if not free[i]:
            continue
        st = state[i]
        if st == _TIGHT or st == -_TIGHT:
            continue
        # rtol of λc, or the rounding of v_i (as _at_rounding accepts for the tight features:
        # a column equal to a tight one's has v_i = ±λc to that rounding, not to rtol; soak
        # round R, seed 337: two identical columns at margins 3.75·10⁵, the right structure
        # refused at every λ and the collapsed bracket's unpolished answer returned)
        v, lc, tol = _slope_tol(AT, qk, i, lam * cost[i], rtol, mround)
        if st == _IN and abs(v) > lc + tol:
            return False
        if st == _BEYOND and v < lc - tol:
            return False
        if st == -_BEYOND and v > -lc + tol:
            return False
    return True


@kernel(callee=True)
def _finish_row(AT, t, cls, mbar, lam, cost, free, x0, lo, hi, bounded, lq, rp, rm, delta, out):
    """Form x, and return (KKT residual, duality gap, −log p_t) of problem (2) at λ."""
    D, K = AT.shape
    R = K - 1
    for i in range(D):
        d = delta[i]
        if not free[i] or d == 0.0:
            out[i] = x0[i]
        elif bounded and d == rp[i]:  # (unbounded: the box is empty, and rp = inf)
            out[i] = hi[i]
        elif bounded and d == -rm[i]:
            out[i] = lo[i]
        else:
            xi = x0[i] + d
            if bounded:
                xi = min(max(xi, lo[i]), hi[i])
            out[i] = xi
    # margins from the answer's own steps
    m = np.empty(R)
    col = np.empty(R)
    for j in range(R):
        m[j] = mbar[j]
    primal = 0.0
    for i in range(D):
        if free[i] and out[i] != x0[i]:
            st = out[i] - x0[i]
            primal += cost[i] * abs(st)
            _mcol(AT, i, t, cls, R, col)
            for j in range(R):
                m[j] += st * col[j]
    q = np.empty(R)
    lpt = _nontarget(m, R, q)
    qk = np.empty(K)
    _expand(q, t, cls, R, qk)
    # the KKT residual: the least element of λ c ∂|δ| − v + N_box per feature
    r2 = 0.0
    for i in range(D):
        if not free[i]:
            continue
        v = 0.0
        for k in range(K):
            v += qk[k] * AT[i, k]
        g = -v
        lc = lam * cost[i]
        at_lo = bounded and out[i] <= lo[i]
        at_hi = bounded and out[i] >= hi[i]
        res = l1_residual(g, lc, out[i] - x0[i], at_lo, at_hi)
        r2 += res * res
    # the dual value Ψ at the answer's own probabilities q (the dual optimum when the answer is
    # optimal; a hard constraint |v_i| ≤ λc_i that q misses by rounding is not charged)
    dual = lpt * math.exp(lpt) * -1.0
    for j in range(R):
        if q[j] > 0.0:
            dual -= mbar[j] * q[j] + q[j] * math.log(q[j])
    for i in range(D):
        if not free[i]:
            continue
        v = 0.0
        for k in range(K):
            v += qk[k] * AT[i, k]
        lc = lam * cost[i]
        if v > lc and rp[i] < np.inf:
            dual -= rp[i] * (v - lc)
        elif v < -lc and rm[i] < np.inf:
            dual -= rm[i] * (-v - lc)
    obj = lam * primal - lpt
    return math.sqrt(r2), obj - dual, -lpt


@kernel(callee=True)
def _rooms(x0, lo, hi, bounded, rp, rm):
    """Write each feature's room up (``rp``) and down (``rm``) in the box (inf without one)."""
    for i in range(x0.shape[0]):
        if bounded:
            rp[i] = max(hi[i] - x0[i], 0.0)
            rm[i] = max(x0[i] - lo[i], 0.0)
        else:
            rp[i] = np.inf
            rm[i] = np.inf


@kernel()
def _lam_start(AT, zbar, t, lam, cost, free, x0, lo, hi, bounded, mbar, dual):
    """Cold-start the dual of problem (2) at λ from x̄ (:func:`.entropy._cold_start`).

    Writes m̄ into ``mbar`` and the rooms and the dual's point into ``dual`` = (rp, rm, lq,
    state, tl, mu), the arrays of :func:`.entropy.lam_dual`; returns nT.
    """
    K = AT.shape[1]
    rp, rm, lq, state, _tl, _mu = dual
    cls = _classes(K, t)
    for j in range(K - 1):
        mbar[j] = zbar[t] - zbar[cls[j]]
    _rooms(x0, lo, hi, bounded, rp, rm)
    return _cold_start(AT, t, cls, mbar, lam, cost, free, rp, rm, lq, state)


@kernel()
def _lam_settle(AT, t, mbar, lam, cost, free, x0, lo, hi, bounded, dual, nT, status, last, out):
    """Form the dual point's answer, or restart. Returns (nT, status, again, gn, gap, nm).

    The certificate: the answer's own KKT conditions. Where they fail (or the dual ran out of
    iterations) and this is not the ``last`` try, the dual is restarted from the answer's
    probabilities (``again``: run :func:`.entropy.lam_dual` from the restarted point and settle
    once more); an answer that still fails them is a numerical failure, never "the optimum".
    Otherwise ``out`` receives x, and gn, gap, nm are the KKT residual, the duality gap and the
    number of features moved.
    """
    D, K = AT.shape
    cls = _classes(K, t)
    rp, rm, lq, state, tl, mu = dual
    delta = np.zeros(D)
    _delta_of(state, tl, nT, mu, rp, rm, free, delta)
    if not last:
        if status == _OK:
            _polish(AT, t, cls, mbar, lam, 0.0, cost, free, rp, rm, state, tl, nT, delta, _NO)
        if (status == _OK or status == _MAXITER) and not (
            status == _OK and _primal_ok(AT, t, cls, mbar, lam, cost, free, rp, rm, delta)
        ):
            nT = _restart(AT, t, cls, mbar, lam, cost, free, rp, rm, lq, state, delta)
            return nT, status, True, 0.0, 0.0, 0
    elif status == _OK or status == _MAXITER:
        # a dual that stalled again may still hold the optimum's structure (a degenerate
        # face: see softmax_proba_one); its polished δ is the optimum if it meets the KKT
        # conditions at its own probabilities, and a numerical failure if not
        _polish(AT, t, cls, mbar, lam, 0.0, cost, free, rp, rm, state, tl, nT, delta, _NO)
        if _primal_ok(AT, t, cls, mbar, lam, cost, free, rp, rm, delta):
            status = _OK
        elif status == _OK:
            status = _NUMERIC
    gn, gap, _f = _finish_row(
        AT, t, cls, mbar, lam, cost, free, x0, lo, hi, bounded, lq, rp, rm, delta, out
    )
    nm = 0
    for i in range(D):
        if out[i] != x0[i]:
            nm += 1
    return nT, status, False, gn, gap, nm


@kernel()
def softmax_lam_one(AT, zbar, t, lam, cost, free, x0, lo, hi, bounded, max_iter, out):
    """Problem (2) with the L1 cost for one query of a softmax model.

    Returns (nit, status, KKT residual, duality gap, n_moved). Three kernels in a row
    (:func:`_lam_start`, :func:`.entropy.lam_dual`, :func:`_lam_settle`; the last two once more
    after a restart), which a single query runs from Python (:func:`_lam_single`): this
    function's own code, not compiled.
    """
    D, K = AT.shape
    R = K - 1
    mbar = np.empty(R)
    state = np.zeros(D, dtype=np.int8)
    tl = np.empty(R + 1, dtype=np.int64)
    rp, rm, lq, mu = np.empty(D), np.empty(D), np.empty(R + 1), np.empty(R + 1)
    dual = (rp, rm, lq, state, tl, mu)
    nT = _lam_start(AT, zbar, t, lam, cost, free, x0, lo, hi, bounded, mbar, dual)
    nit, status, nT = lam_dual(
        AT, t, mbar, lam, cost, free, rp, rm, lq, state, tl, nT, mu, max_iter
    )
    nT, status, again, gn, gap, nm = _lam_settle(
        AT, t, mbar, lam, cost, free, x0, lo, hi, bounded, dual, nT, status, _NO, out
    )
    if again:
        it2, status, nT = lam_dual(
            AT, t, mbar, lam, cost, free, rp, rm, lq, state, tl, nT, mu, max_iter
        )
        nit += it2
        nT, status, again, gn, gap, nm = _lam_settle(
            AT, t, mbar, lam, cost, free, x0, lo, hi, bounded, dual, nT, status, _YES, out
        )
    return nit, status, gn, gap, nm


@kernel(callee=True)
def _primal_ok(AT, t, cls, mbar, lam, cost, free, rp, rm, delta):
    """Whether δ meets the KKT conditions of problem (2) at λ, at its own probabilities.

    v_i = M_iᵀq(δ) must be λc_i where δ_i > 0, −λc_i where δ_i < 0 (one-sided at a bound of the
    box) and within ±λc_i where δ_i = 0; each to 1e-8 of λc_i or to the rounding of v_i
    (2ε·mround Σ_k |q_k a_ki|, times 16, mround the largest margin term as in _at_rounding).
    This is the primal side only: it does not trust the dual's probabilities, which can hold a
    class underflowed to e⁻¹⁰⁶ that the answer's own probabilities put at 0.98.
    """
    D = AT.shape[0]
    qk, mround = _answer_q(AT, t, cls, mbar, free, delta)
    for i in range(D):
        if not free[i]:
            continue
        v, lc, tol = _slope_tol(AT, qk, i, lam * cost[i], 1e-8, mround)
        d = delta[i]
        if d > 0.0:
            bad = (lc - v > tol) or (v - lc > tol and d < rp[i])
        elif d < 0.0:
            bad = (v + lc > tol) or (-lc - v > tol and -d < rm[i])
        else:
            bad = (v - lc > tol and rp[i] > 0.0) or (-lc - v > tol and rm[i] > 0.0)
        if bad or not v == v:
            return False
    return True


@kernel(callee=True)
def _restart(AT, t, cls, mbar, lam, cost, free, rp, rm, lq, state, delta):
    """Cold-start the dual from the probabilities at x̄ + δ, not at x̄. Returns nT = 0.

    The dual moves a class's log-probability by a bounded amount per iteration: a class at
    q ~ e⁻⁹⁸⁰⁰⁰⁰ at x̄ that the answer needs at 0.98 (a competitor whose row the moved features
    barely touch) was still at e⁻⁹⁸⁰⁰⁰⁰ when the dual stalled, and it stopped on the wrong face
    (soak round Q, seed 321: a duality gap of 4·10⁴, called the optimum).
    """
    R = mbar.shape[0]
    m = np.empty(R)
    col = np.empty(R)
    for j in range(R):
        m[j] = mbar[j]
    for i in range(delta.shape[0]):
        if free[i] and delta[i] != 0.0:
            _mcol(AT, i, t, cls, R, col)
            for j in range(R):
                m[j] += delta[i] * col[j]
    return _cold_start(AT, t, cls, m, lam, cost, free, rp, rm, lq, state)


@kernel(callee=True)
def _box_floor(AT, t, cls, mbar, free, rp, rm, state, delta):
    """Return a lower bound of −log p_t over the box: its linearisation at δ, minimised there.

    −log p_t is convex, so F(δ) + ∇F(δ)ᵀ(δ' − δ) ≤ F(δ') for every δ'; the minimum over the box
    is −∞ when a feature with ∇F_i ≠ 0 has an infinite room on the descent side.
    """
    D, K = AT.shape
    R = K - 1
    m = np.empty(R)
    q = np.empty(R)
    _margins_of(AT, t, cls, mbar, state, free, delta, m)
    lpt = _nontarget(m, R, q)
    qk = np.empty(K)
    _expand(q, t, cls, R, qk)
    fl = -lpt
    for i in range(D):
        if not free[i]:
            continue
        v = 0.0
        for k in range(K):
            v += qk[k] * AT[i, k]
        g = -v  # ∂F/∂δ_i
        if g < 0.0:  # F falls as δ_i rises: up to its room
            if rp[i] == np.inf:
                return -np.inf
            fl += g * (rp[i] - delta[i])
        elif g > 0.0:
            if rm[i] == np.inf:
                return -np.inf
            fl += g * (-rm[i] - delta[i])
    return fl


@kernel()
def softmax_proba_one(AT, zbar, t, log_tau, cost, free, x0, lo, hi, bounded, max_iter, out):
    """``proba=τ`` with the L1 cost for one query of a softmax model: a search over λ.

    p_t(x*(λ)) is continuous and nonincreasing in λ; x*(λ) = x̄ for λ ≥ λ₀ = max_i |v̄_i|/c_i.
    A bracket in log λ, then regula falsi (Illinois), each λ solved by :func:`lam_dual`
    (warm-started by rescaling the dual point, which keeps every feature's state); at each λ
    the KKT system of ``proba=`` on the structure found (the tight features' δ and λ, with
    log p_t = log τ) is solved by Newton (:func:`_polish`) and accepted when every feature's
    state is optimal there. Returns (λ, nit, status, gap), gap = Σc|δ| minus the Lagrangian
    lower bound (Ψ_λ(q) + log τ)/λ.
    """
    D, K = AT.shape
    R = K - 1
    cls = _classes(K, t)
    mbar = np.empty(R)
    for j in range(R):
        mbar[j] = zbar[t] - zbar[cls[j]]
    for i in range(D):
        out[i] = x0[i]
    lq = np.empty(R + 1)
    _log_nontarget(mbar, R, lq)
    if lq[0] >= log_tau:
        return np.nan, 0, _OK, 0.0
    rp, rm = np.empty(D), np.empty(D)
    _rooms(x0, lo, hi, bounded, rp, rm)
    qs = np.empty(R)
    for j in range(R):
        qs[j] = math.exp(lq[j + 1])
    qk = np.empty(K)
    _expand(qs, t, cls, R, qk)
    lam0 = 0.0
    for i in range(D):
        if not free[i]:
            continue
        v = 0.0
        for k in range(K):
            v += qk[k] * AT[i, k]
        room = rp[i] if v > 0.0 else rm[i]
        if room > 0.0:
            lam0 = max(lam0, abs(v) / cost[i])
    anyw = False
    for i in range(D):
        if free[i]:
            for k in range(K):
                if k != t and AT[i, k] != AT[i, t]:
                    anyw = True
    if not anyw:
        return np.nan, 0, _UNREACHABLE, np.nan
    if lam0 == 0.0:
        return np.nan, 0, _INFEASIBLE, np.nan
    state = np.zeros(D, dtype=np.int8)
    tl = np.empty(R + 1, dtype=np.int64)
    mu = np.empty(R + 1)
    delta = np.zeros(D)
    m = np.empty(R)
    q = np.empty(R)
    nit = 0
    lam_prev = -1.0
    nT = 0
    lo_l = -np.inf  # log λ with h ≥ 0 (p_t ≥ τ)
    hi_l = math.log(lam0)  # log λ with h < 0
    h_lo = 0.0
    h_hi = 0.0
    side = 0
    ll = hi_l - math.log(2.0)
    step = math.log(10.0)
    lam = lam0
    status = _MAXITER
    for _outer in range(200):
        lam = math.exp(ll)
        if lam == 0.0:
            # λ underflowed on the way down to the floor below (λ₀ ~ 1e-5 and ll < −745): the
            # floor's verdict, a few steps early. Rescaled by 0, the dual point took log 0
            # (math domain error run as Python, CI's no-JIT stage; −inf compiled)
            return lam_prev, nit, _INFEASIBLE, np.nan
        warm = lam_prev > 0.0 and _rescale(lq, R, lam / lam_prev)
        if not warm:
            nT = _cold_start(AT, t, cls, mbar, lam, cost, free, rp, rm, lq, state)
        it, st, nT = lam_dual(AT, t, mbar, lam, cost, free, rp, rm, lq, state, tl, nT, mu, max_iter)
        nit += it
        if st == _MAXITER:  # once more from the probabilities of its answer (see _restart)
            _delta_of(state, tl, nT, mu, rp, rm, free, delta)
            nT = _restart(AT, t, cls, mbar, lam, cost, free, rp, rm, lq, state, delta)
            it, st, nT = lam_dual(
                AT, t, mbar, lam, cost, free, rp, rm, lq, state, tl, nT, mu, max_iter
            )
            nit += it
        if st != _OK and st != _MAXITER:
            return lam, nit, st, np.nan
        lam_prev = lam
        _delta_of(state, tl, nT, mu, rp, rm, free, delta)
        # the exact answer of this structure, if it is the optimal one
        trial = delta.copy()
        lam_s, conv = _polish(
            AT, t, cls, mbar, lam, log_tau, cost, free, rp, rm, state, tl, nT, trial, _YES
        )
        if conv and _kkt_check(AT, t, cls, mbar, lam_s, cost, free, state, trial, 1e-11):
            # (not delta[:] = trial: a slice assignment compiles Numba's shape-mismatch message,
            # its str() and unicode code, 1.6 CPU s of a first proba= query; issue 54)
            delta = trial
            lam = lam_s
            status = _OK
            break
        if st != _OK:
            # the dual stalled (after its restart) and the structure it stalled on is not the
            # optimum's either. (Where it is, the KKT conditions just checked certify it: a
            # degenerate face — two features at the same price against the one competitor that
            # matters, and classes at e⁻⁷⁰⁰⁰ deciding between them, which no double resolves —
            # cycled to the iteration limit on the optimum's own structure: the 10 000-example
            # soak of test_fuzz_linear_few_changes[softmax], at a competitor 10⁴ above)
            return lam, nit, st, np.nan
        _margins_of(AT, t, cls, mbar, state, free, delta, m)
        h = _nontarget(m, R, q) - log_tau
        if h >= 0.0:
            lo_l, h_lo = ll, h
            if side == 1:
                h_hi *= 0.5
            side = 1
        else:
            hi_l, h_hi = ll, h
            if side == -1:
                h_lo *= 0.5
            side = -1
        if lo_l == -np.inf:  # no bracket yet: λ smaller, in growing steps
            # infeasible when even the box's floor of −log p_t is above −log τ (certified), or
            # at λ ~ e^−700 λ₀ (no box: p_t's supremum below τ)
            if _box_floor(AT, t, cls, mbar, free, rp, rm, state, delta) > -log_tau:
                return lam, nit, _INFEASIBLE, np.nan
            if ll < math.log(lam0) - 700.0:
                return lam, nit, _INFEASIBLE, np.nan
            ll -= step
            step *= 2.0
            continue
        if hi_l - lo_l <= 4.0 * _EPS * max(1.0, abs(hi_l)):
            # the bracket has collapsed without a structure to polish (p_t jumps over τ only
            # by rounding): the answer of the side with p_t ≥ τ
            lam = math.exp(lo_l)
            if _rescale(lq, R, lam / lam_prev):
                it, st, nT = lam_dual(
                    AT, t, mbar, lam, cost, free, rp, rm, lq, state, tl, nT, mu, max_iter
                )
                nit += it
                _delta_of(state, tl, nT, mu, rp, rm, free, delta)
                lam_prev = lam
                status = st
            break
        ll = (lo_l * (-h_hi) + hi_l * h_lo) / (h_lo - h_hi)  # regula falsi in log λ
        if not (lo_l < ll < hi_l):
            ll = 0.5 * (lo_l + hi_l)
    if status != _OK:
        return lam, nit, status, np.nan
    # the certificate: the dual of problem (2) at λ, at the answer's probabilities
    _gn, gap, fval = _finish_row(
        AT, t, cls, mbar, lam, cost, free, x0, lo, hi, bounded, lq, rp, rm, delta, out
    )
    # problem (2) at λ: gap = λΣc|δ| + F − Ψ. proba=: Σc|δ| − (Ψ − ℓ)/λ with ℓ = −log τ, the
    # Lagrangian bound, = gap/λ + (ℓ − F)/λ
    return lam, nit, _OK, gap / lam + (-log_tau - fval) / lam


# The single query's solvers, inlined into their rows (and so into the batch kernels: a single
# query runs the serial one): LLVM optimises their code once there, not once more in a kernel
# of their own that the batch kernels would link (issue 54: a first Manhattan query compiled
# softmax_proba_one, 4.8 s of its own, then its serial batch kernel, 4.0 s, nearly all of it
# the same code once more)
_lam_one = inlined(softmax_lam_one)
_proba_one = inlined(softmax_proba_one)


@kernel()
def _sm_lam_row(n, AT, Zbar, tidx, lams, cost, free, X0, lo, hi, bounded, max_iter, out):
    X, nit, status, gn, gap, nmv = out
    lo_r = lo[n] if lo.shape[0] > 1 else lo[0]
    hi_r = hi[n] if hi.shape[0] > 1 else hi[0]
    nit[n], status[n], gn[n], gap[n], nmv[n] = _lam_one(
        AT, Zbar[n], tidx[n], lams[n], cost, free, X0[n], lo_r, hi_r, bounded, max_iter, X[n]
    )


@kernel(inline="always")
def _sm_lam_out(args):
    N, D = args[6].shape  # X0
    return (
        np.empty((N, D)), np.empty(N, dtype=np.int64), np.empty(N, dtype=np.int64),
        np.empty(N), np.empty(N), np.empty(N, dtype=np.int64),
    )  # fmt: skip


_sm_lam = batch(_sm_lam_row, _sm_lam_out)


def softmax_lam_batch(AT, Zbar, tidx, lams, cost, free, X0, lo, hi, bounded, max_iter, parallel):
    """Problem (2) with the L1 cost for N queries of a softmax model (:func:`softmax_lam_one`).

    Returns (X, nit, status, KKT residual, duality gap, n_moved).
    """
    if not parallel and X0.shape[0] == 1:
        return _lam_single(AT, Zbar, tidx, lams, cost, free, X0, lo, hi, bounded, max_iter)
    return _sm_lam(parallel, AT, Zbar, tidx, lams, cost, free, X0, lo, hi, bounded, max_iter)


# softmax_lam_one's own code, run as Python: its kernels called one by one
_lam_steps = getattr(softmax_lam_one, "py_func", softmax_lam_one)


def _lam_single(AT, Zbar, tidx, lams, cost, free, X0, lo, hi, bounded, max_iter):
    """:func:`softmax_lam_batch` for one query: :func:`softmax_lam_one`'s code run as Python.

    Its kernels (:func:`_lam_start`, :func:`.entropy.lam_dual`, :func:`_lam_settle`) called
    from here, not the batch's serial kernel: that kernel links them and LLVM optimises and
    emits all their code (the dual's above all) once more (issue 54: about 2.6 CPU s of a
    first ``lam=`` query). The same kernels on the row's arguments, as :func:`_sm_lam_row`
    passes them: the same bits as the row of a batch (tests/test_manhattan.py checks it).
    """
    X = np.empty((1, X0.shape[1]))
    t, lam = int(tidx[0]), float(lams[0])  # (typed int64, float64 as the row's; unboxed faster)
    nit, status, gn, gap, nm = _lam_steps(
        AT, Zbar[0], t, lam, cost, free, X0[0], lo[0], hi[0], bounded, max_iter, X[0]
    )
    ints = np.array((nit, status, nm))[:, None]  # (one array each, a row of one query)
    floats = np.array((gn, gap))[:, None]
    return X, ints[0], ints[1], floats[0], floats[1], ints[2]


@kernel()
def _sm_proba_row(n, AT, Zbar, tidx, log_tau, cost, free, X0, lo, hi, bounded, max_iter, out):
    X, lam, nit, status, gap = out
    lo_r = lo[n] if lo.shape[0] > 1 else lo[0]
    hi_r = hi[n] if hi.shape[0] > 1 else hi[0]
    lam[n], nit[n], status[n], gap[n] = _proba_one(
        AT, Zbar[n], tidx[n], log_tau[n], cost, free, X0[n], lo_r, hi_r, bounded, max_iter, X[n]
    )


@kernel(inline="always")
def _sm_proba_out(args):
    N, D = args[6].shape  # X0
    return (
        np.empty((N, D)), np.empty(N), np.empty(N, dtype=np.int64),
        np.empty(N, dtype=np.int64), np.empty(N),
    )  # fmt: skip


_sm_proba = batch(_sm_proba_row, _sm_proba_out)


def softmax_proba_batch(
    AT, Zbar, tidx, log_tau, cost, free, X0, lo, hi, bounded, max_iter, parallel
):
    """``proba=τ`` with the L1 cost for N queries of a softmax model (:func:`softmax_proba_one`).

    ``log_tau`` (N,): log τ per row. Returns (X, λ, nit, status, gap).
    """
    return _sm_proba(parallel, AT, Zbar, tidx, log_tau, cost, free, X0, lo, hi, bounded, max_iter)
