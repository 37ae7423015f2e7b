"""The λ-search of ``proba=τ``: min ‖x − x̄‖_W s.t. p_k(x) ≥ τ through problem (2).

p_k(x*(λ)) decreases with λ, so the constrained optimum is the solution x*(λ) of problem (2) at
the λ where p_k = τ (its KKT multiplier is 1/λ). :func:`proba_search` finds that λ by a
safeguarded Newton method in t = log λ on the target's log-odds

    φ(t) = z_k − log Σ_{j≠k} e^{z_j}    at z = z̄ + G y(e^t),

which is nearly linear in t once p_k is near 1 (1 − p_k ∝ λ there). Its derivative comes from the
K×K system of the Newton step: differentiating r = λ y + p − e_k = 0 gives dy/dt
(:func:`~fastcf._kernels.softmax.lampath._tangent`, one triangular solve with the factorisation
of the last Newton step), and dφ/dt = (e_k − q)ᵀ G dy/dt with q the softmax of the other logits.
The same tangent predicts y at the next λ, so each solve after the first starts O(Δt²) from its
answer and takes one to three Newton steps. The first λ and its start come from the tie point of
the region dual (:func:`~fastcf._kernels.softmax.region.region_dual` at margin 0) and one step
along ∇φ to the log-odds of τ (:func:`_start`): three to five solves and 6–9 Newton steps in
all on the data sets of scikit-learn (median), where the regula falsi this replaces, on solves
at ``tol`` = 0 that ran to the iteration limit, took 60–1100.

Exactness. The intermediate solves stop at ``tol``; once the Newton step in t is small (or the
bracket narrow), each solve is polished to the rounding level of ∇E (Newton steps until ‖∇E‖
stops falling quadratically) and the bracket is rebuilt from polished solves alone: at small λ
(τ near 1) a solve stopped at ``tol`` can be off in φ by far more than the last steps (‖∇E‖ ≈
λ ‖y − y*‖ along the flat directions of E; measured: 1e−4 in φ at λ = 1e−8). The search aims
16 · max(1, √(D / 4096)) ulps of φ's scale inside the feasible side (:func:`aim_ulps`: the
rounding by which the logits of the formed answer differ from the K-space ones grows with D);
the answer is the last polished solve with log p_k ≥ log τ and φ − logit τ within twice that
(or, if the two sides of the bracket are adjacent doubles, the feasible one). Aiming in φ, not
in log p_k: near p_k = 1 an ulp of log p_k is 1/(1 − τ) ulps of φ, and aiming there cost 1e−9
of the distance at τ = 1 − 1e−6.

:func:`proba_rows` runs the search for N queries and forms each answer x̄ + (yᵀA) ∘ v (the row
kernels of :mod:`~fastcf._kernels.softmax.rows`); :func:`fastcf._linear.softmax.proba_solution`
judges the answers in the model's own arithmetic (BLAS's logits of each row, the bits of
``predict_proba``) and re-solves the rows short of τ there.
"""

import math

import numpy as np

from fastcf._status import Status

from .. import kernel
from .._batch import batch
from .core import _factor, _matvec, _newton_core
from .lampath import _tangent
from .region import region_dual
from .rows import _CHUNK, _expand_chunk, _logits_chunk, _sum_chunks, answer_status

_EPS = 2.220446049250313e-16
_OK = int(Status.OK)
_MAXITER = int(Status.MAXITER)
_INFEASIBLE = int(Status.INFEASIBLE)
_NUMERIC = int(Status.NUMERIC)

# log λ searched: ±80 around 0 and around the first λ (:func:`_start`'s estimate, or the warm
# start's): λ ≈ e⁻⁸⁰ of that with p_k < τ means τ is out of reach. Around 0 alone, a scale of
# the problem's own (rows of 4.4e-16 against a competitor 10⁵ above: λ ≈ e⁻⁸³) put the answer
# out of reach; a 10 000-example soak of test_fuzz_linear_explain[softmax], 2026-11-26. Never
# beyond ±700 (e^−700 is still a normal double)
_T_MAX = 80.0
_T_LIM = 700.0
_STEP_MAX = 10.0  # the largest step in log λ on a side not yet bracketed
_FINE = 1e-4  # a Newton step in log λ below this: the solves from then on are polished
_OUTER = 60  # solves per search (about four are needed; the rest is a safety margin)
_POLISH = 8  # Newton steps at most to bring a converged solve to its rounding level
_GAP = 1e-3  # log λ: τ is out of reach when p_k < τ this close above the unresolvable λ
# The search aims _AIM · max(1, √(D / 4096)) ulps of φ's scale inside the feasible side
# (:func:`aim_ulps`) and accepts answers up to twice that. The logits of the formed point
# x̄ + (yᵀA) ∘ v differ from the K-space ones z̄ + G y by their rounding, which grows with D like a
# random walk: measured (BLAS's logits of the answer against z̄ + G y, ulps of that scale, 50-200
# queries) -6 to +2 at digits (64, 10), -12 to +7 at (8192, 16), -10 to +10 at (47 236, 51),
# -25 to +23 at (131 072, 16). An answer short of τ in the model's arithmetic is re-solved
# (another pass over A and another check: 3-6x the query); aiming 4 ulps inside left 2% of the
# digits answers short, and 16 ulps at every D left 6% at (131 072, 16).
_AIM = 16.0


@kernel(inline="always")
def aim_ulps(D):
    """Return how many ulps of φ's scale the search aims inside τ, for answers in R^D."""
    return _AIM * max(1.0, math.sqrt(D / 4096.0))


@kernel()
def _log_odds(z, k, q):
    """Return (φ, log p_k) of logits z: φ = z_k − lse_{j≠k} z_j, log p_k = −log(1 + e^{−φ}).

    Sets q to the softmax of the other logits (q_k = 0), the gradient of φ being e_k − q.
    """
    K = z.shape[0]
    m = -np.inf
    for j in range(K):
        if j != k and z[j] > m:
            m = z[j]
    s = 0.0
    for j in range(K):
        if j != k:
            q[j] = math.exp(z[j] - m)
            s += q[j]
    # q_k is set before the division: q is often fresh from np.empty, and dividing its
    # garbage (a signalling NaN) raises 'invalid value' when the kernel runs as Python.
    q[k] = 0.0
    for j in range(K):
        q[j] /= s
    phi = z[k] - (m + math.log(s))
    if phi < 0.0:  # log p_k = φ − log(1 + e^φ), no overflow of e^{−φ}
        return phi, phi - math.log1p(math.exp(phi))
    return phi, -math.log1p(math.exp(-phi))


@kernel()
def _phi_scale(z, k, logit_tau):
    """Return the rounding scale of φ − logit τ at logits z (its terms and the logits)."""
    zmax = 0.0
    for j in range(z.shape[0]):
        zmax = max(zmax, abs(z[j]))
    return 1.0 + abs(logit_tau) + abs(z[k]) + zmax


@kernel(inline="always")
def _others_lead(zbar, k):
    """Whether another class's logit is above the target's (z̄ of the search's start)."""
    zmax = zbar[0]
    for j in range(zbar.shape[0]):
        zmax = max(zmax, zbar[j])
    return zmax > zbar[k]


@kernel(inline="always")
def tie_point(zbar, G, k, lam0, lead, nu):
    """Set nu to the tie point of a cold search (:func:`_start`); returns its status.

    The region dual at margin 0 (the closest point where the target ties with the best other
    class) when the search starts cold (``lam0`` not finite and positive) and another class
    leads at z̄ (``lead``, :func:`_others_lead`); −1 (nu not set) otherwise. The caller of
    :func:`proba_search` runs it, not the search: a single query calls the dual from Python
    (:func:`_one_row`), so that no kernel of its links the dual's code: each that did, the
    start and the search above it, optimised and emitted it once more (issue 54; LLVM's time
    on the start's module fell from 0.39 to 0.18 CPU s).
    """
    if (lam0 > 0.0 and lam0 < np.inf) or not lead:
        return -1
    _nit, st = region_dual(zbar, G, k, 0.0, 1e-12, 10 * zbar.shape[0] + 100, nu)
    return st


@kernel()
def _start(zbar, G, k, logit_tau, one_minus_tau, y, z, q, d, gd, nu, tie):
    """Set the first y of the search and return the first log λ.

    Base point: the tie point of the target with the best other class (the region dual at margin
    0, ``nu`` with status ``tie`` from :func:`tie_point`) if the target's log-odds there are still
    below those of τ, else x̄. From it, the step
    along ∇_x φ = V Aᵀ (e_k − q) that reaches the log-odds of τ to first order: y += a d,
    d = e_k − q, a = (logit τ − φ) / dᵀGd, over a distance a ‖d‖_G. At the optimum
    λ y = e_k − p = (1 − τ)(e_k − q), so λ ≈ (1 − τ) ‖d‖_G / (distance), with q and the distance
    those of the predicted point.
    """
    K = zbar.shape[0]
    for j in range(K):
        y[j] = 0.0
    if _others_lead(zbar, k):
        if tie == _OK:
            s = 0.0
            for j in range(K):
                y[j] = -nu[j]
                s += nu[j]
            y[k] = s
    _matvec(G, y, z)
    quad = 0.0
    for j in range(K):
        quad += y[j] * z[j]
        z[j] += zbar[j]
    phi, _lp = _log_odds(z, k, q)
    if not phi <= logit_tau:  # the tie point is already beyond τ (or not finite): from x̄
        for j in range(K):
            y[j] = 0.0
            z[j] = zbar[j]
        quad = 0.0
        phi, _lp = _log_odds(z, k, q)
    for j in range(K):
        d[j] = -q[j]
    d[k] += 1.0
    _matvec(G, d, gd)
    g2 = 0.0
    for j in range(K):
        g2 += d[j] * gd[j]
    if not (g2 > 0.0 and math.isfinite(g2) and math.isfinite(phi)):
        return 0.0
    a = (logit_tau - phi) / g2
    for j in range(K):
        y[j] += a * d[j]
    dist = math.sqrt(max(quad, 0.0)) + a * math.sqrt(g2)
    t = math.log(one_minus_tau * math.sqrt(g2) / dist) if dist > 0.0 else 0.0
    if not math.isfinite(t):
        return 0.0
    return min(max(t, -_T_LIM), _T_LIM)


@kernel()
def proba_search(zbar, G, GF, k, log_tau, tol, max_iter, y, lam0, aim_ulp, nu, tie):
    """Solve min ‖x − x̄‖_W s.t. p_k ≥ τ through problem (2) (see the module docstring).

    ``lam0``: a λ whose solution y holds on entry (a warm start, e.g. the answer for a slightly
    lower τ), or NaN for a cold start (:func:`_start`). ``nu``, ``tie``: the tie point of a cold
    start and its status (:func:`tie_point`, for the same ``lam0``). ``aim_ulp``: how far
    inside τ the search aims, in ulps of φ's scale (:func:`aim_ulps`); answers are accepted up
    to twice that. The
    returned y is the polished solution of the returned λ, with log p_k ≥ log τ in K-space
    arithmetic. Returns (lam, nit_total,
    status): OK converged; INFEASIBLE τ out of reach (p_k < τ at every λ down to e^−80 of the
    first λ (and of 1), or
    down to where p_k can no longer be resolved, see below); MAXITER the search reached its
    limit of solves; NUMERIC numerical failure.

    Trust. A solve is used when ‖∇E‖ ≤ max(tol, 1e−6 ‖A_F‖) and G y keeps its digits
    (ε max_i Σ_j |G_ij y_j| ≤ 1e−6). One that stops at ``max_iter`` above that goes on at the
    same λ, twice, then the search stops (MAXITER: with a ``max_iter`` too small for Newton, no
    answer rather than an inexact one) unless it is below a λ already solved with p_k < τ. Where p_k
    stays bounded away from 1 as λ → 0 (a τ out of reach), y grows like 1/λ while G y stays
    bounded, and below some λ Newton stops at the rounding level of E above ``trust`` (or at
    ``max_iter``), or G y loses its digits: such solves are not used, the search stays above
    the largest such log λ (tg), and τ is out of reach when p_k < τ within ``_GAP`` above it.
    """
    K = zbar.shape[0]
    W = np.empty((13, K))
    M = np.empty((K, K))
    q = np.empty(K)
    dy = np.empty(K)
    gd = np.empty(K)
    v = np.empty(K)
    y_ok = np.empty(K)
    y_tr = np.empty(K)
    _phi0, lp0 = _log_odds(zbar, k, q)
    if lp0 >= log_tau:  # x̄ itself
        for j in range(K):
            y[j] = 0.0
        return np.inf, 0, _OK
    one_minus_tau = -math.expm1(log_tau)
    logit_tau = log_tau - math.log(one_minus_tau)
    if lam0 > 0.0 and lam0 < np.inf:
        t = math.log(lam0)
    else:
        t = _start(zbar, G, k, logit_tau, one_minus_tau, y, W[0], q, dy, gd, nu, tie)
    t_min = max(-_T_LIM, min(-_T_MAX, t - _T_MAX))  # (see _T_MAX)
    t_max = min(_T_LIM, max(_T_MAX, t + _T_MAX))
    gmax = 0.0
    for i in range(K):
        gmax = max(gmax, GF[i, i])
    trust = max(tol, 1e-6 * math.sqrt(gmax))
    lo = -np.inf  # the largest log λ solved (trusted) with p_k ≥ τ
    hi = np.inf  # the smallest log λ solved (trusted) with p_k < τ
    tg = -np.inf  # the largest log λ of an untrusted solve
    fine = False  # polish every solve from now on
    have_ok = False  # a polished, trusted solve with p_k ≥ τ (y_ok at t_ok)
    have_tr = False  # a trusted solve (y_tr)
    t_ok = 0.0
    total = 0
    stuck = 0
    for _outer in range(_OUTER):
        lam = math.exp(t)
        _E, gn, _quad, nit, st, fac = _newton_core(zbar, G, GF, k, lam, y, tol, max_iter, W, M)
        total += nit
        if st == _NUMERIC:
            return lam, total, _NUMERIC
        # G y keeps its digits: its rounding is within ε max_i Σ_j |G_ij y_j|. (The bound
        # ε max|G| Σ|y| paired G's largest entry with y's largest component of another class:
        # at x̄ = (0, −1e8, 0) it called every solve past a move of 7e7 untrusted, 1e3 times
        # over, and the search ended short of the answer 1e8 away; soak round O.)
        gyabs = 0.0
        for i in range(K):
            acc = 0.0
            for j in range(K):
                acc += abs(G[i, j] * y[j])
            gyabs = max(gyabs, acc)
        digits = _EPS * gyabs <= 1e-6
        if st == _MAXITER and gn > trust and digits and stuck < 2:
            stuck += 1  # Newton goes on from where it stopped, at the same λ
            continue
        if st == _MAXITER and gn > trust and not (lo == -np.inf and hi < np.inf):
            # 3 max_iter Newton steps at this λ, not converged, and not below a λ already
            # solved with p_k < τ (there, as a solve at the rounding level: not used)
            return lam, total, _MAXITER
        stuck = 0
        if fine and gn <= trust:
            # Newton steps at tol = 0 until ‖∇E‖ stops falling quadratically (its rounding
            # level), or y stops changing, or no decrease of E can be measured
            for _p in range(_POLISH):
                # one step: np.int64(1), not the literal 1, which Numba types as Literal[int](1)
                # and would compile _newton_core a second time for (5 s on a cold start)
                _E, gn2, _quad, nit, st2, fac2 = _newton_core(
                    zbar, G, GF, k, lam, y, 0.0, np.int64(1), W, M
                )
                total += nit
                fac = fac or fac2
                if st2 == _NUMERIC:
                    return lam, total, _NUMERIC
                if st2 == _OK or not gn2 < 0.25 * gn:
                    break
                gn = gn2
        z = W[0]
        phi, lp = _log_odds(z, k, q)
        if not math.isfinite(phi):
            return lam, total, _NUMERIC
        f = lp - log_tau
        if not (gn <= trust and digits):
            tg = max(tg, t)
            if lo == -np.inf and hi - tg <= _GAP:
                # p_k < τ at every trusted λ down to where the solves cannot be trusted
                return lam, total, _INFEASIBLE
            if have_tr:
                for j in range(K):
                    y[j] = y_tr[j]
            base = max(tg, lo)
            t = 0.5 * (base + hi) if hi < np.inf else base + (1.0 if fine else _STEP_MAX)
            continue
        have_tr = True
        for j in range(K):
            y_tr[j] = y[j]
        pscale = _phi_scale(z, k, logit_tau)
        if f >= 0.0:
            lo = t
            if fine:
                have_ok = True
                t_ok = t
                for j in range(K):
                    y_ok[j] = y[j]
                if phi - logit_tau <= 2.0 * aim_ulp * _EPS * pscale:
                    break
        else:
            hi = t
            if lo == -np.inf and hi - tg <= _GAP:  # as above
                return lam, total, _INFEASIBLE
        if lo > -np.inf and hi - lo <= 4.0 * _EPS * max(1.0, abs(lo)):
            # adjacent λ on the two sides: the feasible one is the answer (if it was polished;
            # otherwise the bracket came from solves at tol: polish, and rebuild it)
            if have_ok:
                break
            fine = True
            lo = -np.inf
            hi = np.inf
        # dφ/dt from the tangent dy/dt (the factorisation of the last Newton step, or a new one)
        ok_fac = fac
        if not ok_fac:
            ok_fac = _factor(G, W[1], lam, M, W[6], v) == _OK
        dphi = 0.0
        if ok_fac:
            _tangent(W[11], y, M, W[6], v, dy)
            _matvec(G, dy, gd)
            dphi = gd[k]
            for j in range(K):
                dphi -= q[j] * gd[j]
        # Newton on φ(t) = aim, aim_ulp ulps of φ inside the feasible side, within the bracket
        aim = logit_tau + aim_ulp * _EPS * pscale
        step = np.nan
        if ok_fac and dphi < 0.0:
            step = (aim - phi) / dphi
        tn = t + min(max(step, -_STEP_MAX), _STEP_MAX) if math.isfinite(step) else np.nan
        lo_eff = max(lo, tg)
        newton = lo_eff < tn < hi
        if not newton:
            wide = _FINE if fine else _STEP_MAX
            if lo_eff > -np.inf and hi < np.inf:
                tn = 0.5 * (lo_eff + hi)  # Newton left the bracket: bisect it
            elif lo > -np.inf:
                tn = max(lo, t) + wide  # all solved points feasible: larger λ
            elif tg > -np.inf:
                tn = max(tg, t) + wide  # nothing trusted above the untrusted λ: larger λ
            else:
                tn = min(hi, t) - wide  # all infeasible: smaller λ
        if tn == t:  # a step below the resolution of t
            tn = np.nextafter(t, np.inf if f >= 0.0 else -np.inf)
        if tn < t_min:
            if t <= t_min and lo == -np.inf:  # λ ≈ e⁻⁸⁰ of the first and still p_k < τ
                return lam, total, _INFEASIBLE
            tn = t_min
        if tn > t_max:
            if t >= t_max:
                return lam, total, _NUMERIC
            tn = t_max
        if not fine and ((newton and abs(tn - t) <= _FINE) or hi - lo <= _FINE):
            # Newton is converging: from now on every solve is polished, and the bracket is
            # rebuilt from polished solves alone (at small λ a solve stopped at ``tol`` can be
            # off by more than the next step: ‖∇E‖ ≈ λ ‖y − y*‖_G along the flat directions)
            fine = True
            lo = -np.inf
            hi = np.inf
        if ok_fac:  # the tangent predictor: y(t + h) = y(t) + h dy/dt + O(h²)
            h = tn - t
            for j in range(K):
                y[j] += h * dy[j]
        t = tn
    else:
        if not have_ok:
            return math.exp(t), total, _MAXITER
        for j in range(K):
            y[j] = y_ok[j]
        return math.exp(t_ok), total, _MAXITER
    for j in range(K):
        y[j] = y_ok[j]
    return math.exp(t_ok), total, _OK


@kernel()
def _proba_batch_row(n, Zbar, G, GF, ks, log_taus, tol, max_iter, Y0, lam0, aim, out):
    Y, lam, nit, status = out
    nu = np.empty(G.shape[0])
    tie = tie_point(Zbar[n], G, ks[n], lam0[n], _others_lead(Zbar[n], ks[n]), nu)
    lam[n], nit[n], status[n] = proba_search(
        Zbar[n], G, GF, ks[n], log_taus[n], tol, max_iter, Y[n], lam0[n], aim, nu, tie
    )


@kernel(inline="always")
def _proba_batch_out(args):
    N = args[0].shape[0]  # Zbar
    # Y0 (args[7]): the warm starts (rows with a finite lam0); proba_search sets the others
    Y = args[7].copy()
    lam = np.empty(N)
    nit = np.empty(N, dtype=np.int64)
    status = np.empty(N, dtype=np.int64)
    return Y, lam, nit, status


_proba = batch(_proba_batch_row, _proba_batch_out)


def proba_batch(Zbar, G, GF, ks, log_taus, tol, max_iter, parallel, warm=None, aim=_AIM):
    """proba_search for N queries: returns (Y, lam, nit, status).

    ``warm``: (Y, lam) of an earlier search on the same rows (for a slightly higher τ: the ulp
    re-solve of :func:`fastcf._linear.softmax.constrained`), each row's search then starting
    from its solution; rows with a λ that is not finite and positive start cold.
    ``parallel``: over the rows, on the batch threads; otherwise in the calling thread (the
    same row code, so the same bits).
    ``aim``: :func:`aim_ulps` of the answers' D (the default is that of D ≤ 4096).
    """
    aim = float(aim)
    if warm is None:
        Y0 = np.zeros(Zbar.shape)
        lam0 = np.full(Zbar.shape[0], np.nan)
    else:
        Y0 = np.ascontiguousarray(warm[0], dtype=np.float64)
        lam0 = np.ascontiguousarray(warm[1], dtype=np.float64)
    return _proba(parallel, Zbar, G, GF, ks, log_taus, tol, max_iter, Y0, lam0, aim)


# ----------------------------------------------------------------------------------------------
# proba= for N queries in one call, as reduced_rows does for problem (2): per row z̄ = A x̄ + b,
# the search, x* = x̄ + (yᵀA) ∘ v with its logits and their rounding scale in the same pass over
# A, p = softmax(z) and the verdict. The same row code in both modes (serial, parallel over rows),
# so an answer has the same bits alone or in a batch; a large A takes the BLAS mode instead
# (``fastcf._linear.softmax.rows_proba``: the products by BLAS, the search by proba_batch).


@kernel()
def _row_head(x, A, b, k):
    """z̄ = A x̄ + b of one row from its chunk sums.

    Returns (z̄, the chunk sums, whether another class leads the target at z̄).
    """
    K, D = A.shape
    part = np.empty((max((D + _CHUNK - 1) // _CHUNK, 1), K))  # the row's chunk sums
    for c in range(part.shape[0]):
        _logits_chunk(x, A, c, part)
    zbar = np.empty(K)
    _sum_chunks(part, b, zbar)
    return zbar, part, _others_lead(zbar, k)


@kernel()
def _row_tail(x0, y, A, G, v, unit, part, st, x):
    """Form the answer x = x̄ + (yᵀA) ∘ v of a solved row; returns (dist, status).

    dist = √(yᵀ G y) = ‖x* − x̄‖_W; the status is the search's ``st``, or NUMERIC for an answer
    that is not finite (:func:`~fastcf._kernels.softmax.rows.answer_status`).
    """
    K = G.shape[0]
    gy = np.empty(K)
    _matvec(G, y, gy)
    quad = 0.0
    for j in range(K):
        quad += y[j] * gy[j]
    nosums = part[:0]  # 0 rows: no chunk sums (see rows._expand_chunk)
    for c in range(part.shape[0]):
        _expand_chunk(x0, y, A, v, unit, c, x, nosums, nosums)
    return math.sqrt(max(quad, 0.0)), answer_status(x, quad, st)


@kernel()
def _row_full(n, X0, A, b, G, GF, ks, log_taus, tol, max_iter, v, unit, Y0, lam0, out):
    """Row n of :func:`proba_rows`; ``out`` = (X, Y, dist, lam, nit, status).

    Three kernels in a row (:func:`_row_head`, :func:`proba_search`, :func:`_row_tail`), with
    the tie point of a cold start between the first two (:func:`tie_point`), which a single
    query calls one by one from Python instead (:func:`_one_row`).
    """
    X, Y, dist, lam, nit, status = out
    l0 = lam0[n] if lam0.shape[0] > 0 else np.nan
    zbar, part, lead = _row_head(X0[n], A, b, ks[n])
    nu = np.empty(A.shape[0])
    tie = tie_point(zbar, G, ks[n], l0, lead, nu)
    lam[n], nit[n], st = proba_search(
        zbar, G, GF, ks[n], log_taus[n], tol, max_iter, Y[n], l0, aim_ulps(A.shape[1]), nu, tie
    )
    dist[n], status[n] = _row_tail(X0[n], Y[n], A, G, v, unit, part, st, X[n])


@kernel(inline="always")
def _rows_out(args):
    N, D = args[0].shape  # X0
    K = args[1].shape[0]  # A
    Y0, lam0 = args[11], args[12]
    Y = Y0.copy() if lam0.shape[0] > 0 else np.zeros((N, K))
    X = np.empty((N, D))
    dist = np.empty(N)
    lam = np.empty(N)
    nit = np.empty(N, dtype=np.int64)
    status = np.empty(N, dtype=np.int64)
    return X, Y, dist, lam, nit, status


_rows = batch(_row_full, _rows_out)


def proba_rows(X0, A, b, G, GF, ks, log_taus, tol, max_iter, v, unit, mode, warm=None):
    """``proba=τ`` for N softmax queries in one call (``mode`` 0 or 1 of ``rows.row_mode``).

    Per row: z̄ = A x̄ + b, :func:`proba_search` for ``log_taus[n]`` (the log τ the row aims at:
    raised above log τ for a re-solve) and x* = x̄ + (yᵀA) ∘ v. ``warm``: (Y, lam) of an earlier
    answer of the same rows, each search then starting from it. Returns (X, Y, dist, lam, nit,
    status): dist = ‖x* − x̄‖_W = √(yᵀ G y), the search's status (NUMERIC for a non-finite
    answer). The verdict is the caller's, in the model's
    own arithmetic (:func:`fastcf._linear.softmax.judge`): the answer's logits are needed
    there anyway, so they are not formed here too.
    """
    if warm is None:
        Y0, lam0 = _COLD
    else:
        Y0 = np.ascontiguousarray(warm[0], dtype=np.float64)
        lam0 = np.ascontiguousarray(warm[1], dtype=np.float64)
    if mode == 0 and X0.shape[0] == 1:
        return _one_row(X0, A, b, G, GF, ks, log_taus, tol, max_iter, v, unit, Y0, lam0)
    return _rows(mode == 1, X0, A, b, G, GF, ks, log_taus, tol, max_iter, v, unit, Y0, lam0)


def _one_row(X0, A, b, G, GF, ks, log_taus, tol, max_iter, v, unit, Y0, lam0):
    """:func:`proba_rows` for one query: the kernels of :func:`_row_full`, called from here.

    The row's three kernels, not the batch's serial kernel: that kernel links them and LLVM
    optimises and emits all their code (the search's above all) once more, about 1.5 CPU s of
    a first ``proba=`` query's compile time (issue 54). Same kernels, same order: the same bits
    as the row in a batch (tests/test_softmax.py checks single answers against batches).
    """
    N, D = X0.shape
    K = A.shape[0]
    Y = Y0.copy() if lam0.shape[0] > 0 else np.zeros((N, K))  # as _rows_out
    X = np.empty((N, D))
    dist = np.empty(N)
    lam = np.empty(N)
    nit = np.empty(N, dtype=np.int64)
    status = np.empty(N, dtype=np.int64)
    l0 = lam0[0] if lam0.shape[0] > 0 else np.nan
    zbar, part, lead = _row_head(X0[0], A, b, ks[0])
    nu = np.empty(K)
    tie = _tie_point_py(zbar, G, ks[0], l0, lead, nu)  # the dual's kernel, from here
    lam[0], nit[0], st = proba_search(
        zbar, G, GF, ks[0], log_taus[0], tol, max_iter, Y[0], l0, aim_ulps(D), nu, tie
    )
    dist[0], status[0] = _row_tail(X0[0], Y[0], A, G, v, unit, part, st, X[0])
    return X, Y, dist, lam, nit, status


_COLD = (np.zeros((0, 0)), np.zeros(0))  # no warm start: (Y0, lam0) of no rows
_tie_point_py = getattr(tie_point, "py_func", tie_point)  # (NUMBA_DISABLE_JIT=1: itself)
