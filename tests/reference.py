"""Slow, obviously-correct references for every fast path (NumPy / SciPy / cvxpy / brute force).

Each section belongs to one model family. Keep the references independent of fastcf's own code:
they may use fastcf only to read a model's arrays, never its solvers.
"""

import itertools
import math
import warnings

import numpy as np

# =====================================================================================
# Linear models: logistic and softmax (paper 000)
# =====================================================================================


# ----- verdicts (fastcf._kernels.verdict): the rules, written with NumPy on whole arrays --------
# Status codes (fastcf._status.Status): OK 0, NUMERIC 4, NOT_TARGET 5, BELOW_DECISION 6,
# UNREACHABLE 7, PENDING 8 — read from the enum by the tests, passed in here.


def verdict_numpy(pred, P, tidx, status, proba_min, lam_mode, unreachable, codes):
    """(success, status) of N answers: classified as the target (and p ≥ τ), else why not."""
    success = (pred == tidx) & (status == codes["OK"])
    status = status.copy()
    if proba_min is not None:
        met = P[np.arange(len(tidx)), tidx] >= proba_min
        status[(status == codes["OK"]) & met & ~success] = codes["BELOW_DECISION"]
        success &= met
    if unreachable:
        status[(status == codes["OK"]) & ~success] = codes["UNREACHABLE"]
    status[(status == codes["OK"]) & ~success] = codes["NOT_TARGET" if lam_mode else "NUMERIC"]
    return success, status


def binary_need_numpy(X, abs_w, abs_c, gamma):
    """4γ (Σ_j |w_j x_j| + |c|) per row, the terms summed in order (Python floats)."""
    out = np.empty(X.shape[0])
    for n in range(X.shape[0]):
        s = 0.0
        for xj, wj in zip(X[n], abs_w, strict=True):
            s += abs(float(xj)) * float(wj)
        out[n] = 4.0 * gamma * (s + abs_c)
    return out


def sigmoid_pair_numpy(z):
    """(σ(−z), σ(z)) of each logit, from exp(−|z|)."""
    with np.errstate(all="ignore"):
        e = np.exp(-np.abs(z))
        big, small = 1.0 / (1.0 + e), e / (1.0 + e)
    pos = z >= 0
    return np.stack([np.where(pos, small, big), np.where(pos, big, small)], axis=1)


def phi_mp(alpha, beta, dps=60):
    """φ(α, β) and 1 − φ(α, β) by bisection at ``dps`` digits on the logit y = logit(t):
    y + α σ(y) + β = 0 (increasing in y), bracketed by [−β − α, −β]."""
    import mpmath

    with mpmath.workdps(dps):
        a = mpmath.mpf(alpha)
        b = mpmath.mpf(beta)
        lo, hi = -b - a, -b
        for _ in range(4 * dps + 200):
            mid = (lo + hi) / 2
            if mid + a / (1 + mpmath.exp(-mid)) + b > 0:
                hi = mid
            else:
                lo = mid
        y = (lo + hi) / 2
        return 1 / (1 + mpmath.exp(-y)), 1 / (1 + mpmath.exp(y))


def logistic_lam_brentq(w, c, x0, sign, lam, wt=None, frozen=None):
    """Problem (2) for a binary model by SciPy's brentq on the scalar stationarity equation.

    With u = sign·w, v = 1/wt (0 on frozen): x = x̄ + (q/λ) v∘u and q solves
    q = σ(−(ζ̄ + (uᵀVu/λ) q)), q ∈ (0, 1).
    """
    from scipy.optimize import brentq
    from scipy.special import expit

    D = x0.shape[0]
    wt = np.ones(D) if wt is None else wt
    v = 1.0 / wt
    if frozen is not None:
        v = np.where(frozen, 0.0, v)
    u = sign * w
    zbar = float(u @ x0 + sign * c)
    a = float(u @ (v * u)) / lam
    q = brentq(
        lambda q: q - expit(-(zbar + a * q)), 0.0, 1.0, xtol=1e-300, rtol=8.9e-16, maxiter=500
    )
    return x0 + (q / lam) * v * u


def softmax_energy(A, b, x0, k, lam, wt=None):
    """E(x) = λ/2 ‖x − x̄‖²_W − log p_k(x) and its gradient, plain NumPy."""
    wt = np.ones(x0.shape[0]) if wt is None else wt

    def f(x):
        z = A @ x + b
        m = z.max()
        e = np.exp(z - m)
        p = e / e.sum()
        d = x - x0
        E = 0.5 * lam * float(np.sum(wt * d * d)) + m + np.log(e.sum()) - z[k]
        pe = p.copy()
        pe[k] -= 1.0
        return E, lam * wt * d + A.T @ pe

    return f


def softmax_lam_scipy(A, b, x0, k, lam, wt=None, frozen=None, tol=1e-12):
    """Problem (2) for a softmax model by SciPy's Newton-CG with exact Hessian-vector products
    (Hv = λ W v + Aᵀ (diag p − p pᵀ) A v), then a few Newton-CG polishing restarts."""
    from scipy.optimize import minimize

    D = x0.shape[0]
    wt = np.ones(D) if wt is None else wt
    free = np.ones(D, bool) if frozen is None else ~np.asarray(frozen)
    f = softmax_energy(A, b, x0, k, lam, wt)
    x = x0.copy()

    def fun(xf):
        x[free] = xf
        E, g = f(x)
        return E, g[free]

    def hessp(xf, vf):
        x[free] = xf
        z = A @ x + b
        p = np.exp(z - z.max())
        p /= p.sum()
        v = np.zeros(D)
        v[free] = vf
        Av = A @ v
        hv = lam * wt * v + A.T @ (p * Av - p * (p @ Av))
        return hv[free]

    xf = x0[free].copy()
    for _ in range(3):
        res = minimize(
            fun,
            xf,
            jac=True,
            hessp=hessp,
            method="Newton-CG",
            options={"xtol": 1e-16, "maxiter": 500},
        )
        xf = res.x
    x[free] = xf
    if free.sum() <= 3000:  # polish with exact dense Newton steps on the free features
        for _ in range(3):
            z = A @ x + b
            p = np.exp(z - z.max())
            p /= p.sum()
            Af = A[:, free]
            H = lam * np.diag(wt[free]) + Af.T @ (np.diag(p) - np.outer(p, p)) @ Af
            x[free] -= np.linalg.solve(H, f(x)[1][free])
    return x.copy()


def box_kkt_residual(g, x, lo, hi, free=None):
    """Largest violation of the KKT conditions of min f(x) s.t. lo ≤ x ≤ hi, given ∇f = g:
    g_i = 0 inside, g_i ≥ 0 at lo, g_i ≤ 0 at hi."""
    r = np.where((x > lo) & (x < hi), np.abs(g), 0.0)
    r = np.maximum(r, np.where(x <= lo, np.maximum(-g, 0.0), 0.0))
    r = np.maximum(r, np.where(x >= hi, np.maximum(g, 0.0), 0.0))
    if free is not None:
        r = np.where(free, r, 0.0)
    return float(r.max())


def minimize_box_lbfgsb(f, x0, lo, hi):
    """min f over a box by SciPy's L-BFGS-B with tight tolerances (f returns value, grad)."""
    from scipy.optimize import minimize

    res = minimize(
        f,
        x0.copy(),
        jac=True,
        method="L-BFGS-B",
        bounds=list(zip(lo, hi, strict=True)),
        options={"ftol": 0.0, "gtol": 1e-13, "maxiter": 20000, "maxcor": 30},
    )
    return res.x


def softmax_region_cvxpy(A, b, x0, k, margin, wt=None, bounds=None):
    """Closest point (weighted Euclidean) with z_k ≥ z_j + margin for all j ≠ k, by cvxpy."""
    import cvxpy as cp

    D = x0.shape[0]
    wt = np.ones(D) if wt is None else wt
    x = cp.Variable(D)
    others = [j for j in range(A.shape[0]) if j != k]
    cons = [(A[k] - A[others]) @ x + (b[k] - b[others]) >= margin]
    if bounds is not None:
        cons += [x >= bounds[0], x <= bounds[1]]
    prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(wt, cp.square(x - x0)))), cons)
    prob.solve(solver=cp.CLARABEL)
    return prob.status, (None if x.value is None else np.asarray(x.value))


def softmax_region_one_feature(A, b, x0, k, margin, i):
    """Closest point with z_k ≥ z_j + margin (j ≠ k) when only feature ``i`` may move: δ or None.

    Each margin is affine in the move δ of feature i, (a_ki − a_ji) δ ≥ c_j with
    c_j = margin − (z̄_k − z̄_j): an interval of δ per class. Their intersection is an interval;
    the answer is its point nearest 0 (None when it is empty). Exact up to one division.
    """
    z = A @ x0 + b
    lo, hi = -np.inf, np.inf
    for j in range(A.shape[0]):
        if j == k:
            continue
        g = A[k, i] - A[j, i]
        c = margin - (z[k] - z[j])
        if g > 0:
            lo = max(lo, c / g)
        elif g < 0:
            hi = min(hi, c / g)
        elif c > 0:
            return None
    if lo > hi:
        return None
    return min(max(0.0, lo), hi)


def linear_witness(A, b, x0, k, form, param, *, frozen=None, lo=None, hi=None, wins=True):
    """A point that answers a ``region=``/``proba=`` query of a linear model with room to spare,
    or None: the witness of a false failure.

    ``A`` (1, D) is binary (class 1 iff A x + b > 0), (K ≥ 3, D) softmax; ``form`` "region"
    (``param`` the margin) or "proba" (``param`` τ). The margins a query needs are linear:
    region m_j = margin; proba (sufficient) logit τ for binary and log(τ (K − 1) / (1 − τ)) for
    softmax (then p_k ≥ τ), and at least 0 where ``wins`` (the target must win; ``proba``
    with ``wins=False`` asks p_k ≥ τ alone). An LP (HiGHS) maximises their least normalised
    slack over the free features in the box; its point is then *checked* in floating point:
    every margin met by
    64 ε (S_k + S_j) beyond what the query needs (S = |A||x| + |b|, the logits' rounding level),
    and for ``proba`` log p_k ≥ log τ by as much. Only a point that passes is returned, so a
    poorly scaled LP can only make the oracle miss, never accuse.
    """
    from scipy.optimize import linprog

    A = np.atleast_2d(np.asarray(A, dtype=float))
    b = np.atleast_1d(np.asarray(b, dtype=float))
    D = x0.shape[0]
    if A.shape[0] == 1:
        sg = 1.0 if k == 1 else -1.0
        G, g0 = sg * A, sg * b
        need = param if form == "region" else math.log(param) - math.log1p(-param)
    else:
        others = [j for j in range(A.shape[0]) if j != k]
        G, g0 = A[k] - A[others], b[k] - b[others]
        K = A.shape[0]
        need = param if form == "region" else math.log(param * (K - 1)) - math.log1p(-param)
    if wins:
        need = max(need, 0.0)
    free = np.ones(D, dtype=bool) if frozen is None else ~np.asarray(frozen, dtype=bool)
    if not free.any():
        return None
    Gf = G[:, free]
    with np.errstate(all="ignore"):
        c = need - (G @ x0 + g0)  # what each row must gain: G_f δ ≥ c
        u = max(1.0, float(np.abs(c).max()) / max(float(np.abs(Gf).max()), 1e-300))
        rows = np.maximum(np.abs(Gf).max(axis=1) * u, np.abs(c))
    if not (np.isfinite(c).all() and math.isfinite(u) and np.isfinite(rows).all()):
        return None  # beyond the doubles: no LP worth trusting
    rows[rows == 0.0] = 1.0
    n = int(free.sum())
    with np.errstate(all="ignore"):
        lo_d = np.full(n, -np.inf) if lo is None else (np.asarray(lo, float)[free] - x0[free]) / u
        hi_d = np.full(n, np.inf) if hi is None else (np.asarray(hi, float)[free] - x0[free]) / u
        # variables (δ / u, s): max s s.t. (G_f u / r) δ' − s ≥ c / r, s ≤ 1
        A_ub = np.hstack([-(Gf * u) / rows[:, None], np.ones((Gf.shape[0], 1))])
        b_ub = -c / rows
    if not (np.isfinite(A_ub).all() and np.isfinite(b_ub).all()):
        return None
    if np.isnan(lo_d).any() or np.isnan(hi_d).any():
        return None
    bounds = [(None if not np.isfinite(a) else a, None if not np.isfinite(z) else z)
              for a, z in zip(lo_d, hi_d, strict=True)] + [(None, 1.0)]  # fmt: skip
    cost = np.zeros(n + 1)
    cost[-1] = -1.0
    try:
        res = linprog(cost, A_ub=A_ub, b_ub=b_ub, bounds=bounds, method="highs")
    except ValueError:
        return None
    if res.status != 0 or res.x[-1] <= 0.0:
        return None
    x = x0.copy()
    x[free] = x0[free] + u * res.x[:n]
    if lo is not None:
        x = np.maximum(x, lo)
    if hi is not None:
        x = np.minimum(x, hi)
    if not np.isfinite(x).all():
        return None
    with np.errstate(all="ignore"):
        z = A @ x + b
        S = np.abs(A) @ np.abs(x) + np.abs(b)
    if not (np.isfinite(z).all() and np.isfinite(S).all()):
        return None
    eps = np.finfo(float).eps
    if A.shape[0] == 1:
        slack = sg * z[0] - need
        guard = 64 * eps * S[0]
    else:
        slack = float((z[k] - z[others] - need).min())
        guard = 64 * eps * float((S[k] + S[others]).max())
    if not slack > guard:
        return None
    return x


def exact_logits(A, b, x):
    """The logits ``A x + b`` in exact rational arithmetic (no rounding at all).

    Every float64 is a rational number, so ``Fraction`` evaluates the products and the sum
    exactly; comparing these logits decides the class of ``x`` with no floating-point doubt.
    """
    from fractions import Fraction

    xf = [Fraction(float(v)) for v in x]
    return [
        sum((Fraction(float(a)) * v for a, v in zip(row, xf, strict=True)), Fraction(float(c)))
        for row, c in zip(np.atleast_2d(A), np.atleast_1d(b), strict=True)
    ]


def softmax_proba_kkt_mp(A, b, x0, k, tau, wt, start, dps=60):
    """The KKT point of ``min ‖x − x̄‖²_W  s.t.  log p_k(x) = log τ`` at ``dps`` digits.

    mpmath's Newton method on the stationarity equations 2W(x − x̄) + μ ∇(−log p_k)(x) = 0 and
    log p_k(x) = log τ, from ``start`` (an x, with μ estimated from its largest move). The
    problem is convex (−log p_k is), so a KKT point with μ ≥ 0 (the constraint active, x̄
    outside it) is the optimum; the residuals, relative to the terms they balance, are returned
    with it for the caller to judge (infinite where μ < 0).

    Returns
    -------
    x : ndarray, the KKT point rounded to doubles
    res : float, the largest relative residual of the stationarity equations
    """
    import mpmath

    K, D = np.shape(A)
    with mpmath.workdps(dps):
        Am = [[mpmath.mpf(float(a)) for a in row] for row in np.asarray(A)]
        bm = [mpmath.mpf(float(v)) for v in b]
        xb = [mpmath.mpf(float(v)) for v in x0]
        w = [mpmath.mpf(float(v)) for v in wt]
        ltau = mpmath.log(mpmath.mpf(float(tau)))

        def parts(x, mu):
            z = [sum(Am[j][i] * x[i] for i in range(D)) + bm[j] for j in range(K)]
            e = [mpmath.exp(v - max(z)) for v in z]
            p = [v / sum(e) for v in e]
            g = [sum(Am[j][i] * (p[j] - (j == k)) for j in range(K)) for i in range(D)]
            pull = [2 * w[i] * (x[i] - xb[i]) for i in range(D)]
            return pull, [mu * gi for gi in g], mpmath.log(p[k]) - ltau

        def eqs(*v):
            pull, push, c = parts(v[:D], v[D])
            return [pull[i] + push[i] for i in range(D)] + [c]

        s = [mpmath.mpf(float(v)) for v in start]
        pull, _push, _c = parts(s, 1)
        i = max(range(D), key=lambda i: abs(pull[i]))
        mu0 = -pull[i] / parts(s, 1)[1][i]
        sol = mpmath.findroot(
            eqs, s + [mu0], tol=mpmath.mpf(10) ** (-dps + 10), maxsteps=100, verify=False
        )
        x = [sol[i] for i in range(D)]
        pull, push, c = parts(x, sol[D])
        res = max(
            abs(pull[i] + push[i]) / max(abs(pull[i]), abs(push[i]), mpmath.mpf(10) ** -300)
            for i in range(D)
        )
        if sol[D] < 0:
            res = mpmath.inf  # a stationary point of the wrong sign: not the minimum
        return np.array([float(v) for v in x]), float(max(res, abs(c)))


def softmax_proba_cvxpy(A, b, x0, k, tau, wt=None):
    """min ‖x − x̄‖²_W s.t. log p_k(x) ≥ log τ  ⇔  lse(Ax + b) − z_k ≤ −log τ (convex), cvxpy."""
    import cvxpy as cp

    D = x0.shape[0]
    wt = np.ones(D) if wt is None else wt
    x = cp.Variable(D)
    z = A @ x + b
    cons = [cp.log_sum_exp(z) - z[k] <= -np.log(tau)]
    prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(wt, cp.square(x - x0)))), cons)
    prob.solve(solver=cp.CLARABEL)
    return prob.status, (None if x.value is None else np.asarray(x.value))


def linear_cf_cvxpy(
    A, b, x0, k, form, param, *, metric="euclidean", w=None, frozen=None, lo=None, hi=None
):
    """One counterfactual query of a linear model, written out in cvxpy straight from its
    definition: (value, x), value = the objective (inf when infeasible).

    ``A`` (1, D) is binary logistic (p(1) = σ(A x + b)), ``A`` (K ≥ 3, D) softmax; ``form`` is
    "region" (param = margin), "proba" (param = τ) or "lam" (param = λ). The distance is
    ‖w ∘ δ‖₂ or Σ w|δ| (``metric``); the objective is that distance for region/proba and
    λ/2 ‖w ∘ δ‖₂² − log p_k (Euclidean) or λ Σ w|δ| − log p_k (Manhattan) for lam.
    """
    import cvxpy as cp

    A = np.atleast_2d(np.asarray(A, dtype=float))
    b = np.atleast_1d(np.asarray(b, dtype=float))
    D = x0.shape[0]
    w = np.ones(D) if w is None else np.asarray(w, dtype=float)
    x = cp.Variable(D)
    cons = []
    if frozen is not None and np.any(frozen):
        idx = np.flatnonzero(frozen)
        cons.append(x[idx] == x0[idx])
    if lo is not None:
        f = np.isfinite(lo)
        if f.any():
            cons.append(x[np.flatnonzero(f)] >= lo[f])
    if hi is not None:
        f = np.isfinite(hi)
        if f.any():
            cons.append(x[np.flatnonzero(f)] <= hi[f])
    if A.shape[0] == 1:
        s = 1.0 if k == 1 else -1.0
        zeta = s * (A[0] @ x + b[0])
        neg_log_p = cp.logistic(-zeta)
    else:
        z = A @ x + b
        others = [j for j in range(A.shape[0]) if j != k]
        neg_log_p = cp.log_sum_exp(z) - z[k]
    if metric == "euclidean":
        dist2 = cp.sum_squares(cp.multiply(w, x - x0))
    else:
        dist1 = cp.sum(cp.multiply(w, cp.abs(x - x0)))
    if form == "lam":
        reg = 0.5 * param * dist2 if metric == "euclidean" else param * dist1
        obj = reg + neg_log_p
    else:
        obj = dist2 if metric == "euclidean" else dist1
        if form == "region":
            if A.shape[0] == 1:
                cons.append(zeta >= param)
            else:
                cons.append((A[k] - A[others]) @ x + (b[k] - b[others]) >= param)
        elif A.shape[0] == 1:  # σ(ζ) ≥ τ ⇔ ζ ≥ logit τ: linear
            cons.append(zeta >= np.log(param) - np.log1p(-param))
        else:
            cons.append(neg_log_p <= -np.log(param))
    prob = cp.Problem(cp.Minimize(obj), cons)
    conic = form == "lam" or (form == "proba" and A.shape[0] > 1)  # exponential cone
    tol = 1e-10 if conic else 1e-12
    kw = {"tol_gap_abs": tol, "tol_gap_rel": tol, "tol_feas": tol}
    import warnings

    with warnings.catch_warnings():  # "Solution may be inaccurate": judged by the caller's rtol
        warnings.simplefilter("ignore", UserWarning)
        try:
            prob.solve(solver=cp.CLARABEL, **kw)
        except cp.error.SolverError:  # e.g. every feature frozen and the constraint unmet
            return np.inf, None
    if prob.status not in cp.settings.SOLUTION_PRESENT:
        return np.inf, None
    xv = np.asarray(x.value)
    if frozen is not None:
        xv[np.asarray(frozen)] = x0[np.asarray(frozen)]
    d = (
        np.sqrt(np.sum((w * (xv - x0)) ** 2))
        if metric == "euclidean"
        else np.sum(w * np.abs(xv - x0))
    )
    if form != "lam":
        return float(d), xv
    return float(prob.value), xv


def best_subset_brute_force(solve, free, m):
    """min over supports S ⊆ free, |S| = min(m, |free|), of ``solve(S)``: (value, x, S).

    ``solve(S_mask) -> (value, x)`` solves with every feature outside S frozen. A support of
    exactly m features suffices: more freedom never costs.
    """
    from itertools import combinations

    idx = np.flatnonzero(free)
    best = (np.inf, None, None)
    for S in combinations(idx.tolist(), min(m, idx.size)):
        mask = np.zeros(free.shape[0], dtype=bool)
        mask[list(S)] = True
        val, x = solve(mask)
        if val < best[0]:
            best = (val, x, mask)
    return best


def top_m_free_exact(w, cost, free, m):
    """The frozen mask keeping free the m free features of largest w_i²/cost_i², in rationals.

    Every double is a rational (``fractions.Fraction``), so the squares and ratios are exact;
    ties go to the first feature (a stable sort).
    """
    from fractions import Fraction

    idx = np.flatnonzero(free).tolist()
    c = np.ones(len(w)) if cost is None else cost
    key = {i: Fraction(float(w[i])) ** 2 / Fraction(float(c[i])) ** 2 for i in idx}
    keep = sorted(idx, key=lambda i: -key[i])[:m]
    mask = np.ones(len(w), dtype=bool)
    mask[keep] = False
    return mask


def enumerate_brute_force(solve, free, k, *, in_target, changed, max_changes=None):
    """The alternatives of one query by brute force over all 2^|free| restrictions.

    ``solve(F_mask) -> (value, x)``: the optimum with every feature outside F frozen;
    ``in_target(x)``: the model classifies x as the target; ``changed(x)``: bool mask of the
    features x changed. With ``max_changes`` the optimum within F is the best over F's subsets
    of that size. Returns up to k (value, changed set) in increasing value, skipping every
    answer whose changed set contains the set of an answer taken before (flipsets).
    """
    from itertools import combinations

    idx = np.flatnonzero(free).tolist()
    vals = {}
    for r in range(len(idx) + 1):
        for F in combinations(idx, r):
            mask = np.zeros(free.shape[0], dtype=bool)
            mask[list(F)] = True
            vals[F] = solve(mask)
    cands = []
    for F, (val, x) in vals.items():
        if max_changes is not None and len(F) > max_changes:
            sub = [vals[S] for S in combinations(F, max_changes)]
            val, x = min(sub, key=lambda t: t[0])
        if np.isfinite(val) and x is not None and in_target(x):
            cands.append((val, frozenset(np.flatnonzero(changed(x)).tolist())))
    cands.sort(key=lambda t: t[0])
    out = []
    for val, S in cands:
        if any(T <= S for _, T in out):
            continue
        out.append((val, S))
        if len(out) == k:
            break
    return out


def manhattan_max_changes_milp(A, b, x0, k, margin, w, lo, hi, m, frozen=None):
    """min Σ w|δ| s.t. region margins, the box and at most m changed features, as a MILP
    (scipy.optimize.milp, HiGHS) with big-M = the box: (value, x).

    Variables [δ⁺ (D), δ⁻ (D), z (D) binary]; δ⁺_i ≤ (hi_i − x̄_i) z_i, δ⁻_i ≤ (x̄_i − lo_i) z_i,
    Σ z ≤ m. Binary A (1, D): s (a·x + c) ≥ margin; softmax: (a_k − a_j)·x + b_k − b_j ≥ margin.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    A = np.atleast_2d(np.asarray(A, dtype=float))
    b = np.atleast_1d(np.asarray(b, dtype=float))
    D = x0.shape[0]
    up, dn = hi - x0, x0 - lo
    if frozen is not None:
        up = np.where(frozen, 0.0, up)
        dn = np.where(frozen, 0.0, dn)
    c = np.concatenate([w, w, np.zeros(D)])
    if A.shape[0] == 1:
        s = 1.0 if k == 1 else -1.0
        G = s * A  # ζ = s(a·x + c) = s(a·x̄ + c) + s a·δ
        rhs = margin - s * (A[0] @ x0 + b[0])
        G, rhs = G, np.atleast_1d(rhs)
    else:
        others = [j for j in range(A.shape[0]) if j != k]
        G = A[k] - A[others]
        rhs = margin - ((A[k] - A[others]) @ x0 + (b[k] - b[others]))
    rows = [np.hstack([G, -G, np.zeros_like(G)])]
    lbs, ubs = [rhs], [np.full(rhs.shape, np.inf)]
    eye = np.eye(D)
    rows += [np.hstack([eye, 0 * eye, -np.diag(up)]), np.hstack([0 * eye, eye, -np.diag(dn)])]
    lbs += [np.full(D, -np.inf)] * 2
    ubs += [np.zeros(D)] * 2
    rows.append(np.concatenate([np.zeros(2 * D), np.ones(D)])[None])
    lbs.append(np.array([-np.inf]))
    ubs.append(np.array([float(m)]))
    cons = LinearConstraint(np.vstack(rows), np.concatenate(lbs), np.concatenate(ubs))
    integrality = np.concatenate([np.zeros(2 * D), np.ones(D)])
    bounds = Bounds(np.zeros(3 * D), np.concatenate([up, dn, np.ones(D)]))
    res = milp(
        c,
        constraints=cons,
        integrality=integrality,
        bounds=bounds,
        options={"mip_rel_gap": 0.0, "presolve": True},
    )
    if res.x is None:
        return np.inf, None
    d = res.x[:D] - res.x[D : 2 * D]
    return float(res.fun), x0 + d


# (end of linear section)


# =====================================================================================
# LVQ models (paper 001)
# =====================================================================================


def lvq_counterfactual_reference(
    prototypes,
    labels,
    x0,
    target,
    *,
    omega=None,
    metric="euclidean",
    weights=None,
    frozen=None,
    lo=None,
    hi=None,
    constraints=(),
    epsilon=1e-6,
):
    """Algorithm 1 of paper 001 written out with cvxpy in x-space, straight from the paper.

    For each prototype p_i labelled ``target``: min θ(x) s.t. eq. 12-13 with the margin of eq. 9b,
    q_ij = Λ(p_j − p_i), r_ij = ½(p_iᵀΛp_i − p_jᵀΛp_j), q_ijᵀx + r_ij + ε/2 ≤ 0 (the ½-scaled form
    of d_i + ε ≤ d_j); Euclidean θ as eq. 17 (½xᵀx − x̄ᵀx, weighted), Manhattan θ with the
    epigraph variables β of eq. 21. Returns (best distance, best x); (inf, None) when infeasible.
    """
    import cvxpy as cp

    P = np.asarray(prototypes, dtype=float)
    labels = np.asarray(labels)
    x0 = np.asarray(x0, dtype=float)
    D = P.shape[1]
    Lam = np.eye(D) if omega is None else np.asarray(omega).T @ np.asarray(omega)
    # weights = the cost of a unit change: Euclidean ‖w∘δ‖₂ (metric w²), Manhattan Σ w|δ|
    w = np.ones(D) if weights is None else np.asarray(weights, dtype=float)
    if metric == "euclidean":
        w = w * w
    best, best_x = np.inf, None
    for i in np.flatnonzero(labels == target):
        x = cp.Variable(D)
        cons = []
        for j in np.flatnonzero(labels != target):
            q = Lam @ (P[j] - P[i])
            r = 0.5 * (P[i] @ Lam @ P[i] - P[j] @ Lam @ P[j])
            n = np.linalg.norm(q)
            cons.append((q @ x + r + 0.5 * epsilon) / n <= 0)
        if frozen is not None:
            for k in np.flatnonzero(frozen):
                cons.append(x[k] == x0[k])
        if lo is not None:
            for k in np.flatnonzero(np.isfinite(lo)):
                cons.append(x[k] >= lo[k])
        if hi is not None:
            for k in np.flatnonzero(np.isfinite(hi)):
                cons.append(x[k] <= hi[k])
        for a, c in constraints:
            cons.append(np.asarray(a, dtype=float) @ x <= c)
        if metric == "euclidean":
            obj = 0.5 * cp.sum(cp.multiply(w, cp.square(x))) - (w * x0) @ x
        else:
            beta = cp.Variable(D, nonneg=True)
            cons += [cp.multiply(w, x - x0) <= beta, -cp.multiply(w, x - x0) <= beta]
            obj = cp.sum(beta)
        prob = cp.Problem(cp.Minimize(obj), cons)
        prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
        if prob.status not in cp.settings.SOLUTION_PRESENT:
            continue
        xv = np.asarray(x.value)
        dist = (
            np.sqrt(np.sum(w * (xv - x0) ** 2))
            if metric == "euclidean"
            else np.sum(w * np.abs(xv - x0))
        )
        if dist < best:
            best, best_x = float(dist), xv
    return best, best_x


def lvq_kkt_residual(x, x0, A, b, weights=None, free=None, tol=1e-7):
    """KKT check of min ½Σw(x−x̄)² s.t. A x ≤ b (and x_k = x̄_k where not ``free``) at x:
    (max violation, stationarity residual on the free features, complementarity) with
    multipliers from scipy's NNLS on the nearly active rows."""
    from scipy.optimize import nnls

    w = np.ones(x.size) if weights is None else np.asarray(weights, dtype=float)
    nrm = np.linalg.norm(A, axis=1)
    A, b = A / nrm[:, None], b / nrm
    slack = b - A @ x
    viol = max(0.0, float(-slack.min())) if slack.size else 0.0
    active = np.flatnonzero(slack <= tol * max(1.0, np.abs(x).max()))
    free = np.ones(x.size, dtype=bool) if free is None else np.asarray(free)
    grad = (w * (x - x0))[free]  # stationarity: grad + A_actᵀ λ = 0, λ ≥ 0
    A = A[:, free]
    if active.size == 0:
        return viol, float(np.linalg.norm(grad)), 0.0
    lam, res = nnls(A[active].T, -grad)
    return viol, float(res), float(np.abs(lam * slack[active]).max())


# (end of LVQ section)


# =====================================================================================
# SVM enumeration (paper 003)
# =====================================================================================


def svm_kernel_ref(A, B, kernel, gamma=1.0, coef0=0.0, degree=3):
    """Kernel matrix k(A[p], B[q]) in plain NumPy, with SVC's formulas."""
    A = np.asarray(A, dtype=float)
    B = np.asarray(B, dtype=float)
    if kernel == "linear":
        return A @ B.T
    if kernel == "rbf":
        d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=-1)
        return np.exp(-gamma * d2)
    if kernel == "poly":
        return (gamma * (A @ B.T) + coef0) ** degree
    if kernel == "sigmoid":
        return np.tanh(gamma * (A @ B.T) + coef0)
    raise ValueError(kernel)


def svm_dual_objective_ref(K, y_pm, alpha):
    """f(α) = Σα − ½ Σ_ij α_i α_j y_i y_j K_ij."""
    v = alpha * y_pm
    return float(alpha.sum() - 0.5 * v @ K @ v)


def svm_fit_subset_ref(
    X, y_pm, subset, C, kernel="linear", gamma=1.0, coef0=0.0, degree=3, tol=1e-10
):
    """α*(S) by scikit-learn's SVC (libsvm) refitted on the subset; α is zero outside it.

    libsvm caches kernel values in single precision, so a KKT tolerance of 1e-10 is sometimes
    out of its reach (it then cycles until its iteration limit); such fits are repeated with the
    tolerance 100 times looser, down to 1e-6.
    """
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import SVC

    subset = np.asarray(subset)
    alpha = np.zeros(len(y_pm))
    while True:
        svc = SVC(
            kernel=kernel, C=C, gamma=gamma, coef0=coef0, degree=degree, tol=tol, max_iter=20_000
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            svc.fit(X[subset], y_pm[subset])
        if svc.fit_status_ == 0 or tol >= 1e-6:
            break
        tol *= 100.0
    alpha[subset[svc.support_]] = np.abs(svc.dual_coef_[0])
    return alpha, float(svc.intercept_[0])


def svm_brute_force_ref(
    X, y_pm, C, kernel="linear", gamma=1.0, coef0=0.0, degree=3, support_tol=0.0
):
    """Problem 1 by brute force: α*(S) for all 2^n subsets S, one entry per distinct support.

    Subsets with a single class are skipped (no SVM). Returns a list of (objective, support
    tuple), objective descending (ties by support, for a stable order).
    """
    import itertools

    n = len(y_pm)
    K = svm_kernel_ref(X, X, kernel, gamma, coef0, degree)
    best = {}
    for r in range(2, n + 1):
        for sub in itertools.combinations(range(n), r):
            sub = np.array(sub)
            if np.all(y_pm[sub] > 0) or np.all(y_pm[sub] < 0):
                continue
            alpha, _ = svm_fit_subset_ref(X, y_pm, sub, C, kernel, gamma, coef0, degree)
            supp = tuple(np.flatnonzero(alpha > support_tol).tolist())
            f = svm_dual_objective_ref(K, y_pm, alpha)
            if supp not in best or f > best[supp]:
                best[supp] = f
    return sorted(((f, s) for s, f in best.items()), key=lambda t: (-t[0], t[1]))


def svm_kkt_violation_ref(K, y_pm, C, subset, alpha):
    """Largest violation of the KKT conditions of the dual restricted to ``subset``.

    Feasibility (box, Σ y α = 0, α = 0 outside the subset) and optimality in libsvm's form: the
    gap m(α) − M(α) between the "up" and "down" sets of −y_i ∇_i. Returns the max of all.
    """
    subset = np.asarray(subset)
    outside = np.ones(len(y_pm), dtype=bool)
    outside[subset] = False
    grad = (y_pm[:, None] * y_pm[None, :] * K) @ alpha - 1.0  # ∇ of ½αᵀQα − eᵀα
    a, yy, g = alpha[subset], y_pm[subset], grad[subset]
    up = ((yy > 0) & (a < C)) | ((yy < 0) & (a > 0))
    low = ((yy > 0) & (a > 0)) | ((yy < 0) & (a < C))
    score = -yy * g
    gap = score[up].max() - score[low].min() if up.any() and low.any() else 0.0
    feas = max(
        float(np.abs(alpha[outside]).max(initial=0.0)),
        float(max(-a.min(initial=0.0), a.max(initial=0.0) - C, 0.0)),
        abs(float(alpha @ y_pm)),
    )
    return max(float(gap), feas)


# (end of SVM section)


# ---- Manhattan (weighted L1) references ----


def softmax_rows(A, b):
    """The softmax form (K ≥ 2 rows) of a linear model: one row w, c becomes [0, w], [0, c]."""
    A = np.atleast_2d(np.asarray(A, dtype=float))
    b = np.atleast_1d(np.asarray(b, dtype=float))
    if A.shape[0] == 1:
        A = np.vstack([np.zeros_like(A[0]), A[0]])
        b = np.array([0.0, b[0]])
    return A, b


def manhattan_cvxpy(A, b, x0, k, cost, *, free=None, bounds=None, lam=None, tau=None, margin=None):
    """One weighted-L1 counterfactual problem by cvxpy, built from scratch.

    Exactly one of ``margin`` (region: z_k ≥ z_j + margin, an LP solved by HiGHS with tight
    tolerances), ``tau`` (p_k ≥ τ: log Σ exp(z) − z_k ≤ −log τ, exponential cone, Clarabel) or
    ``lam`` (min λ Σ c|x − x̄| − log p_k, Clarabel). ``A``, ``b``: the model's rows (one row:
    binary, see :func:`softmax_rows`); ``free``: False = frozen; ``bounds``: (lo, hi) with ±inf.
    Returns (status, x, value): the value of the problem's own objective. Clarabel's tolerances
    are 1e−11: it then often reports "optimal_inaccurate", yet its values agree with the exact
    ones to ~1e−10 (at 1e−10 it says "optimal" and agrees to only ~2e−9).
    """
    import cvxpy as cp

    A, b = softmax_rows(A, b)
    D = x0.shape[0]
    x = cp.Variable(D)
    z = A @ x + b
    dist = cost @ cp.abs(x - x0)
    cons = []
    if free is not None and not np.all(free):
        cons.append(x[~free] == x0[~free])
    if bounds is not None:
        lo, hi = bounds
        if np.isfinite(lo).any():
            fin = np.isfinite(lo)
            cons.append(x[fin] >= lo[fin])
        if np.isfinite(hi).any():
            fin = np.isfinite(hi)
            cons.append(x[fin] <= hi[fin])
    others = [j for j in range(A.shape[0]) if j != k]
    if margin is not None:
        cons.append((A[k] - A[others]) @ x + (b[k] - b[others]) >= margin)
        prob = cp.Problem(cp.Minimize(dist), cons)
        prob.solve(
            solver=cp.HIGHS, primal_feasibility_tolerance=1e-10, dual_feasibility_tolerance=1e-10
        )
    else:
        if tau is not None:
            cons.append(cp.log_sum_exp(z) - z[k] <= -np.log(tau))
            obj = dist
        else:
            obj = lam * dist + cp.log_sum_exp(z) - z[k]
        prob = cp.Problem(cp.Minimize(obj), cons)
        prob.solve(
            solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11,
            max_iter=500,
        )  # fmt: skip
    xv = None if x.value is None else np.asarray(x.value)
    return prob.status, xv, prob.value


def manhattan_energy(A, b, x0, k, cost, lam, x):
    """λ Σ c |x − x̄| − log p_k(x), plain NumPy (stable log-sum-exp)."""
    A, b = softmax_rows(A, b)
    z = A @ x + b
    m = z.max()
    return lam * float(cost @ np.abs(x - x0)) + m + np.log(np.exp(z - m).sum()) - z[k]


def binary_knapsack_ref(w, c, x0, k, theta, cost, free=None, bounds=None):
    """Cheapest x in Σ c|x − x̄| with s (w·x + c) ≥ θ (s = +1 for k = 1), by a full sort.

    The fractional knapsack: features in increasing price c_i/|w_i| (ties: lowest index), each
    up to its room in the box. Returns (x, cost) or (None, inf) when the box is exhausted.
    """
    D = x0.shape[0]
    free = np.ones(D, dtype=bool) if free is None else free
    lo, hi = (np.full(D, -np.inf), np.full(D, np.inf)) if bounds is None else bounds
    s = 1.0 if k == 1 else -1.0
    u = s * w
    need = theta - s * (w @ x0 + c)
    x = x0.copy()
    if need <= 0:
        return x, 0.0
    cand = [i for i in range(D) if free[i] and u[i] != 0]
    cand.sort(key=lambda i: (cost[i] / abs(w[i]), i))
    total = 0.0
    for i in cand:
        room = hi[i] - x0[i] if u[i] > 0 else x0[i] - lo[i]
        if room <= 0:
            continue
        step = min(need / abs(u[i]), room)
        x[i] = x0[i] + np.sign(u[i]) * step
        total += cost[i] * step
        need -= abs(u[i]) * step
        if need <= 0:
            return x, total
    return None, np.inf


def manhattan_kkt_residual(A, b, x0, x, k, cost, lam, free=None, bounds=None):
    """2-norm of the least element of λ c ∂|x − x̄| + ∇(−log p_k) + N_box at x (free features)."""
    A, b = softmax_rows(A, b)
    z = A @ x + b
    p = np.exp(z - z.max())
    p /= p.sum()
    p[k] -= 1.0
    g = A.T @ p
    D = x0.shape[0]
    free = np.ones(D, dtype=bool) if free is None else free
    lo, hi = (np.full(D, -np.inf), np.full(D, np.inf)) if bounds is None else bounds
    d = x - x0
    lc = lam * cost
    L = np.where(d > 0, g + lc, g - lc)
    U = np.where(d < 0, g - lc, g + lc)
    L = np.where(x <= lo, -np.inf, L)
    U = np.where(x >= hi, np.inf, U)
    r = np.where(L > 0, L, np.where(U < 0, -U, 0.0))
    return float(np.linalg.norm(r[free]))


# ---- Tabular references ----


def tabular_brute_force(
    scores, row, cont, discrete, w, bounds, theta, *, free=None, max_changes=None
):
    """Tabular recourse by brute force: every combination of the discrete columns × an LP.

    min Σ_{j∈cont} w_j |x_j − x̄_j| + Σ_{c∈discrete} cost_c(x_c) s.t. scores(x) ≥ θ (each entry).

    ``scores(df) -> (n, m)``: m constraint values of the model at the rows of ``df``, affine in
    the continuous columns (binary target 1: the decision function; target 0: its negative;
    softmax target t: s_t − s_j for j ≠ t). ``row``: a one-row DataFrame x̄. ``cont``: the
    continuous columns, solved by ``scipy.optimize.linprog`` (HiGHS) per combination, with
    their coefficients read from the model itself (``scores(x + e_j) − scores(x)``).
    ``discrete``: ``{col: [(value, cost), ...]}``, enumerated (cost 0 for the row's value).
    ``bounds``: ``{col: (lo, hi)}`` of the continuous columns; ``free``: the columns allowed to
    change (all by default); ``max_changes``: at most that many columns change (subsets of the
    continuous columns enumerated). Returns ``(value, x)``, x a DataFrame (``(inf, None)`` if
    infeasible).
    """
    from itertools import combinations, product

    import pandas as pd
    from scipy.optimize import linprog

    free = set(cont) | set(discrete) if free is None else set(free)
    dcols = list(discrete)
    choices = [discrete[c] if c in free else [(row[c].iloc[0], 0.0)] for c in dcols]
    best = (np.inf, None)
    for combo in product(*choices):
        base = row.copy()
        dcost = 0.0
        n_disc = 0
        for c, (v, cost) in zip(dcols, combo, strict=True):
            base[c] = pd.Series([v], index=row.index, dtype=object).astype(row[c].dtype)
            dcost += cost
            n_disc += int(v != row[c].iloc[0])
        if max_changes is not None and n_disc > max_changes:
            continue
        s0 = np.asarray(scores(base), dtype=float).ravel()
        movable = [c for c in cont if c in free]
        a = []
        for c in movable:
            up = base.copy()
            up[c] = up[c] + 1.0
            a.append(np.asarray(scores(up), dtype=float).ravel() - s0)
        sizes = (
            range(len(movable) + 1)
            if max_changes is None
            else [min(len(movable), max_changes - n_disc)]
        )
        for r in sizes:
            for S in combinations(range(len(movable)), r):
                if max_changes is None and r < len(movable):
                    continue  # without max_changes every continuous column is free
                x0 = np.array([float(base[movable[i]].iloc[0]) for i in S])
                ws = np.array([w[movable[i]] for i in S])
                lo = np.array([bounds[movable[i]][0] for i in S])
                hi = np.array([bounds[movable[i]][1] for i in S])
                if len(S) == 0:
                    if np.all(s0 >= theta):
                        val, x = dcost, base
                    else:
                        continue
                else:
                    A = np.array([a[i] for i in S]).T  # (m, |S|)
                    c = np.concatenate([ws, ws])
                    A_ub = -np.hstack([A, -A])
                    b_ub = s0 - theta
                    bnds = [(0, h - v) for h, v in zip(hi, x0, strict=True)] + [
                        (0, v - lo_) for lo_, v in zip(lo, x0, strict=True)
                    ]
                    res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=bnds, method="highs")
                    if res.status != 0:
                        continue
                    d = res.x[: len(S)] - res.x[len(S) :]
                    x = base.copy()
                    for i, di in zip(S, d, strict=True):
                        x[movable[i]] = float(base[movable[i]].iloc[0]) + di
                    val = dcost + float(res.fun)
                if val < best[0]:
                    best = (val, x)
    return best


# =====================================================================================
# Trees and tree ensembles (scikit-learn)
# =====================================================================================

_F32_MAX = float(np.finfo(np.float32).max)


def _f64_ordinal(x):
    """A float64 as an integer, increasing with the float (−0.0 and 0.0 both map to 0)."""
    b = int(np.float64(x).view(np.int64))
    return b if b >= 0 else -(b & 0x7FFFFFFFFFFFFFFF)


def _f64_from_ordinal(o):
    b = o if o >= 0 else (-o) | -0x8000000000000000
    return float(np.int64(b).view(np.float64))


def f32_le_boundary(threshold):
    """The largest float64 x in [−FLT_MAX, FLT_MAX] with ``np.float32(x) <= threshold``.

    By bisection over the ordered float64 bit patterns, asking NumPy's own cast at every step
    (no midpoint or parity formula). −inf if no such x, FLT_MAX if all.
    """
    t = float(threshold)

    def left(o):  # compared in float64, as scikit-learn's Cython does (float32 -> double)
        return float(np.float32(_f64_from_ordinal(o))) <= t

    lo, hi = _f64_ordinal(-_F32_MAX), _f64_ordinal(_F32_MAX)
    if not left(lo):
        return -math.inf
    if left(hi):
        return _F32_MAX
    while hi - lo > 1:  # left(lo) and not left(hi)
        mid = (lo + hi) // 2
        if left(mid):
            lo = mid
        else:
            hi = mid
    return _f64_from_ordinal(lo)


def sklearn_tree_splits(model):
    """Every (feature, threshold) split of a fitted scikit-learn tree model (any ensemble)."""
    if hasattr(model, "tree_"):
        trees = [model]
    else:
        trees = list(np.asarray(model.estimators_, dtype=object).ravel())
    out = []
    for est in trees:
        tr = est.tree_
        inner = tr.children_left >= 0
        out += list(zip(tr.feature[inner].tolist(), tr.threshold[inner].tolist(), strict=True))
    return out


def _ref_cost(d, w, metric):
    if metric == "manhattan":
        return float(np.sum(w * np.abs(d)))
    if metric == "euclidean":
        return float(np.sqrt(np.sum((w * d) ** 2)))
    return float(np.sum(np.where(d != 0, w, 0.0)))


def _ref_best(model, P, x0, target, metric, w, max_changes, proba):
    """The cheapest row of P that the model's own predict (and predict_proba) accepts."""
    if P.shape[0] == 0:
        return math.inf, None
    R = P
    if getattr(model, "feature_names_in_", None) is not None:  # fitted on a DataFrame
        import pandas as pd

        R = pd.DataFrame(P, columns=model.feature_names_in_)
    ok = model.predict(R) == target
    if proba is not None:
        col = list(model.classes_).index(target)
        ok &= model.predict_proba(R)[:, col] >= proba
    both = np.isnan(P) & np.isnan(x0)  # a missing feature kept missing: no change, no cost
    if max_changes is not None:
        ok &= np.count_nonzero((P != x0) & ~both, axis=1) <= max_changes
    best = (math.inf, None)
    for p, nan in zip(P[ok], both[ok], strict=True):
        c = _ref_cost(np.where(nan, 0.0, p - x0), w, metric)
        if c < best[0]:
            best = (c, p)
    return best


def _sklearn_cell_points(model, x0, lo, hi):
    """The point of every cell of a scikit-learn tree model's threshold grid closest to x0.

    For each feature, the distinct split thresholds t of every tree give float64 boundaries
    b(t) (:func:`f32_le_boundary`: the largest x with float32(x) <= t), which cut the line into
    intervals ``[lo, b_1]``, ``[next(b_1), b_2]``, …; every combination of one interval per
    feature is a cell, and its point closest to x0 is a clip per coordinate, inside the box
    ``[lo, hi]``. A NaN of x0 stays NaN in every point.
    """
    from itertools import product

    D = x0.shape[0]
    lo = np.full(D, -_F32_MAX) if lo is None else np.maximum(lo, -_F32_MAX)
    hi = np.full(D, _F32_MAX) if hi is None else np.minimum(hi, _F32_MAX)
    bounds = {f: set() for f in range(D)}
    for f, t in sklearn_tree_splits(model):
        bounds[f].add(f32_le_boundary(t))
    choices = []
    for f in range(D):
        if np.isnan(x0[f]):
            choices.append([np.nan])
            continue
        b = sorted(v for v in bounds[f] if -_F32_MAX <= v < _F32_MAX)
        ends = [-_F32_MAX] + [float(np.nextafter(v, np.inf)) for v in b]
        tops = b + [_F32_MAX]
        vals = []
        for a, z in zip(ends, tops, strict=True):
            a, z = max(a, lo[f]), min(z, hi[f])
            if a <= z:
                vals.append(min(max(x0[f], a), z))
        choices.append(sorted(set(vals)))
    return np.array(list(product(*choices)), dtype=np.float64).reshape(-1, D)


def tree_cells_brute_force(
    model, x0, target, metric="manhattan", w=None, lo=None, hi=None, max_changes=None, proba=None
):
    """Tree-model counterfactual by brute force over every cell of the threshold grid.

    The point of each cell closest to x0 (:func:`_sklearn_cell_points`) is classified by the
    model's own ``predict`` (and ``predict_proba`` >= proba); a NaN of x0 stays NaN (the model
    routes it itself; no cost). Returns ``(distance, x)`` of the cheapest such point,
    ``(inf, None)`` if none.
    """
    w = np.ones(x0.shape[0]) if w is None else np.asarray(w, dtype=float)
    P = _sklearn_cell_points(model, x0, lo, hi)
    return _ref_best(model, P, x0, target, metric, w, max_changes, proba)


def tree_leaves_brute_force(
    tree, x0, target, metric="manhattan", w=None, lo=None, hi=None, max_changes=None, proba=None
):
    """One scikit-learn tree: x0 projected onto the box of every leaf, the cheapest that the
    model's own predict (and predict_proba) accepts. Boxes from the root-to-leaf paths with
    :func:`f32_le_boundary`. Returns ``(distance, x)``."""
    D = x0.shape[0]
    w = np.ones(D) if w is None else np.asarray(w, dtype=float)
    lo = np.full(D, -_F32_MAX) if lo is None else np.maximum(lo, -_F32_MAX)
    hi = np.full(D, _F32_MAX) if hi is None else np.minimum(hi, _F32_MAX)
    tr = tree.tree_
    points = []
    stack = [(0, lo.copy(), hi.copy())]
    while stack:
        n, a, z = stack.pop()
        if tr.children_left[n] < 0:
            if (a <= z).all():
                points.append(np.clip(x0, a, z))
            continue
        f, b = tr.feature[n], f32_le_boundary(tr.threshold[n])
        z2 = z.copy()
        z2[f] = min(z[f], b)
        a2 = a.copy()
        a2[f] = max(a[f], float(np.nextafter(b, np.inf)))
        stack.append((tr.children_left[n], a, z2))
        stack.append((tr.children_right[n], a2, z))
    P = np.array(points, dtype=np.float64).reshape(-1, D)
    return _ref_best(tree, P, x0, target, metric, w, max_changes, proba)


# =====================================================================================
# Boosted trees of other libraries: HistGradientBoosting, XGBoost, LightGBM
# =====================================================================================

_F64_MAX = float(np.finfo(np.float64).max)
_LGB_ZERO = float(np.float32(1e-35))  # LightGBM's kZeroThreshold (a float widened to double)


def bisect_boundary(left, lo, hi):
    """The largest float64 x in [lo, hi] with ``left(x)`` for a monotone rule (True, then False).

    By bisection over the ordered float64 bit patterns. −inf if no such x, hi if all.
    """
    a, z = _f64_ordinal(lo), _f64_ordinal(hi)
    if not left(_f64_from_ordinal(a)):
        return -math.inf
    if left(_f64_from_ordinal(z)):
        return hi
    while z - a > 1:
        mid = (a + z) // 2
        if left(_f64_from_ordinal(mid)):
            a = mid
        else:
            z = mid
    return _f64_from_ordinal(a)


def boosted_splits(model):
    """Every split of a fitted boosted model as ``(feature, left(x) -> bool, domain)``.

    Each library's rule written from its documentation, independently of fastcf: XGBoost
    ``float32(x) < float32(condition)`` (from the JSON text dump), LightGBM ``x' <= threshold``
    with x' = 0 for ``|x| <= 1e-35`` (from ``trees_to_dataframe``), HistGradientBoosting ``x <=
    num_threshold`` in float64. Each ``left`` is monotone (True, then False), so its step is
    found by bisection; a LightGBM split of missing_type Zero (``zero_as_missing=True``: the
    band to the default side, which may cross the threshold) is given as three such rules, its
    steps: the threshold and the band's two edges.
    """
    import json

    # (a bare Booster: its fastcf wrap, BoosterClassifier, names the library)
    name = getattr(model, "library", None) or type(model).__module__.split(".")[0]
    out = []
    if name == "xgboost":
        names = getattr(model, "feature_names_in_", None)
        dom = (-_F32_MAX, _F32_MAX)

        def walk(node):
            if "children" not in node:
                return
            s = node["split"]
            f = list(names).index(s) if names is not None else int(s[1:])
            if not isinstance(node["split_condition"], list):  # (a set: the callers pin it)
                c = np.float32(node["split_condition"])
                out.append((f, lambda x, c=c: bool(np.float32(x) < c), dom))
            for ch in node["children"]:
                walk(ch)

        for text in model.get_booster().get_dump(dump_format="json"):
            walk(json.loads(text))
    elif name == "lightgbm":
        booster = getattr(model, "booster_", None) or model._Booster  # (a bare Booster's wrap)
        df = booster.trees_to_dataframe()
        feats = booster.feature_name()
        # the dump writes thresholds of 1e300 or more (+inf) as 1e300 (LightGBM's AvoidInf):
        # the rule is known only within ±1e300
        dom = (float(np.nextafter(-1e300, 0.0)), 1e300)
        # (the set splits of categorical features are left out: the callers pin those)
        num = df["split_feature"].notna() & (df["decision_type"] != "==")
        for _, r in df[num].iterrows():
            f, t = feats.index(r["split_feature"]), float(r["threshold"])
            if r["missing_type"] == "Zero":
                # the band (a NaN too) to the default child: a rule that need not be monotone
                # (the band across the threshold); its steps lie at the threshold (the band
                # read as 0) and at the band's two edges, each found as a monotone rule's
                rules = (
                    lambda x, t=t: (0.0 if abs(x) <= _LGB_ZERO else x) <= t,
                    lambda x: x < -_LGB_ZERO,
                    lambda x: x <= _LGB_ZERO,
                )
            else:
                rules = (lambda x, t=t: (0.0 if abs(x) <= _LGB_ZERO else x) <= t,)
            out.extend((f, rule, dom) for rule in rules)
    else:  # HistGradientBoostingClassifier
        dom = (-_F64_MAX, _F64_MAX)
        # with categorical features its ColumnTransformer puts them first (feature_idx counts
        # the transformed columns); their set splits are left out (the callers freeze them)
        cat = getattr(model, "is_categorical_", None)
        column = np.arange(model.n_features_in_)
        if cat is not None and np.any(cat):
            column = np.concatenate([np.flatnonzero(cat), np.flatnonzero(~np.asarray(cat))])
        for stage in model._predictors:
            for p in stage:
                nodes = p.nodes[(p.nodes["is_leaf"] == 0) & (p.nodes["is_categorical"] == 0)]
                for f, t in zip(nodes["feature_idx"], nodes["num_threshold"], strict=True):
                    out.append((int(column[f]), lambda x, t=float(t): x <= t, dom))
    return out


def boosted_cells_brute_force(
    model, x0, target, metric="manhattan", w=None, lo=None, hi=None, max_changes=None, proba=None
):
    """Boosted-model counterfactual by brute force over every cell of the threshold grid.

    As :func:`tree_cells_brute_force`, with each split's boundary found by
    :func:`bisect_boundary` on the library's own rule (:func:`boosted_splits`) and every
    candidate judged by the model's own ``predict`` (and ``predict_proba``); a NaN of x0 stays
    NaN in every candidate. ``(inf, None)`` if no cell is in the target class.
    """
    from itertools import product

    D = x0.shape[0]
    splits = boosted_splits(model)
    dlo, dhi = splits[0][2] if splits else (-_F64_MAX, _F64_MAX)
    w = np.ones(D) if w is None else np.asarray(w, dtype=float)
    lo = np.full(D, dlo) if lo is None else np.maximum(lo, dlo)
    hi = np.full(D, dhi) if hi is None else np.minimum(hi, dhi)
    bounds = {f: set() for f in range(D)}
    for f, left, (a, z) in splits:
        bounds[f].add(bisect_boundary(left, a, z))
    choices = []
    for f in range(D):
        if np.isnan(x0[f]):
            choices.append([np.nan])
            continue
        b = sorted(v for v in bounds[f] if dlo <= v < dhi)
        ends = [dlo] + [float(np.nextafter(v, np.inf)) for v in b]
        tops = b + [dhi]
        vals = []
        for a, z in zip(ends, tops, strict=True):
            a, z = max(a, lo[f]), min(z, hi[f])
            if a <= z:
                vals.append(min(max(x0[f], a), z))
        choices.append(sorted(set(vals)))
    P = np.array(list(product(*choices)), dtype=np.float64).reshape(-1, D)
    return _ref_best(model, P, x0, target, metric, w, max_changes, proba)


def categories_brute_force(
    model, x0, target, f, cats, w=1.0, metric="manhattan", max_changes=None, lo=None, hi=None,
    weights=None, proba=None,
):  # fmt: skip
    """A model with one categorical feature f free, by brute force: for each value of f (x0's
    own, or one of ``cats`` within ``[lo_f, hi_f]``) the grid brute force of the other features
    (:func:`boosted_cells_brute_force`, f pinned; ``weights``, the box, ``proba``), plus ``w``
    per change of f (``w²`` under the Euclidean root); ``max_changes`` counts the change of f.
    Returns the least distance (inf if none)."""
    D = x0.shape[0]
    lo = np.full(D, -np.inf) if lo is None else np.asarray(lo, dtype=np.float64)
    hi = np.full(D, np.inf) if hi is None else np.asarray(hi, dtype=np.float64)
    best = math.inf
    for c in [x0[f], *[v for v in cats if v != x0[f] and lo[f] <= v <= hi[f]]]:
        moved = not (c == x0[f] or (np.isnan(c) and np.isnan(x0[f])))
        xc = x0.copy()
        xc[f] = c
        clo, chi = lo.copy(), hi.copy()
        clo[f] = chi[f] = c
        m = max_changes
        if m is not None:
            m -= int(moved)
            if m < 0:
                continue
            if m == 0:
                clo, chi = xc.copy(), xc.copy()  # nothing else may change
                m = None
        d, _ = boosted_cells_brute_force(
            model, xc, target, metric=metric, w=weights, lo=clo, hi=chi, max_changes=m,
            proba=proba,
        )  # fmt: skip
        if metric == "euclidean":
            best = min(best, math.sqrt(d**2 + (w**2 if moved else 0.0)))
        else:
            best = min(best, d + (w if moved else 0.0))
    return best


def xgb_listed_max(model, f):
    """The largest category that an XGBoost model's set splits on feature f list (−1: none),
    from its own text dump (a categorical node's ``split_condition`` is the list)."""
    import json

    top = -1.0

    def walk(node):
        nonlocal top
        if "children" not in node:
            return
        if node["split"] in (f"f{f}", str(f)) and isinstance(node["split_condition"], list):
            top = max([top, *map(float, node["split_condition"])])
        for ch in node["children"]:
            walk(ch)

    for text in model.get_booster().get_dump(dump_format="json"):
        walk(json.loads(text))
    return top


def tabular_grid_brute_force(decision, row, grids, cost, target, margin=0.0):
    """Tabular recourse over finite sets of values, by brute force (one vectorised model call).

    ``decision(df) -> (n,)``: a binary model's decision function. ``row``: a one-row DataFrame
    x̄; ``grids``: ``{col: values}`` (each column's candidate values, x̄'s own among them), the
    other columns held at x̄; ``cost(col, v)``: the cost of column ``col`` at ``v``. Every
    combination is scored at once; the cheapest whose decision puts it in ``target`` (class 1:
    ``> margin``; class 0: ``< -margin``) is returned as ``(value, x)`` (``(inf, None)`` if
    none).
    """
    from itertools import product

    import pandas as pd

    cols = list(grids)
    combos = list(product(*(grids[c] for c in cols)))
    df = pd.concat([row] * len(combos), ignore_index=True)
    for i, c in enumerate(cols):
        df[c] = pd.Series([t[i] for t in combos]).astype(row[c].dtype)
    s = np.asarray(decision(df), dtype=float)
    ok = s > margin if target == 1 else s < -margin
    costs = np.array([sum(cost(c, t[i]) for i, c in enumerate(cols)) for t in combos])
    costs = np.where(ok, costs, np.inf)
    i = int(np.argmin(costs))
    if not np.isfinite(costs[i]):
        return np.inf, None
    return float(costs[i]), df.iloc[[i]]


def tree_cell_points(model, x0, target, lo=None, hi=None, proba=None):
    """Every cell of a scikit-learn tree model's threshold grid, and the model's verdict.

    The points of :func:`_sklearn_cell_points`. Returns ``(P, ok)``: the points (n, D) and
    whether the model's own ``predict`` puts each in ``target`` (and ``predict_proba`` >=
    proba).
    """
    P = _sklearn_cell_points(model, x0, lo, hi)
    ok = model.predict(P) == target
    if proba is not None:
        col = list(model.classes_).index(target)
        ok &= model.predict_proba(P)[:, col] >= proba
    return P, ok


def tabular_model_brute_force(model, row, grids, cost, target, *, proba=None, max_changes=None):
    """Tabular recourse on any fitted classifier, by brute force over finite sets of values.

    ``model``: anything with ``predict`` (and ``predict_proba`` for ``proba=``) on DataFrames.
    ``row``: a one-row DataFrame x̄; ``grids``: ``{col: values}`` (the values each column may
    take: x̄'s own among them where it may stay), the other columns held at x̄;
    ``cost(col, v)``: the cost of column ``col`` at ``v``. Every combination is scored at once
    by the model's own ``predict``; the cheapest classified as ``target`` (with
    ``p_target >= proba``, and at most ``max_changes`` columns different from x̄) is returned
    as ``(value, x)`` (``(inf, None)`` if none).
    """
    import pandas as pd

    cols = list(grids)
    sizes = [len(grids[c]) for c in cols]
    idx = np.indices(sizes).reshape(len(cols), -1).T  # every combination, as value indices
    n = idx.shape[0]
    df = row.loc[row.index.repeat(n)].reset_index(drop=True)
    costs = np.zeros(n)
    changes = np.zeros(n, dtype=np.int64)
    for i, c in enumerate(cols):
        vals = np.empty(sizes[i], dtype=object)
        vals[:] = list(grids[c])
        df[c] = pd.Series(vals[idx[:, i]]).astype(row[c].dtype)
        costs += np.array([cost(c, v) for v in vals])[idx[:, i]]
        same = [_same_cell(v, row[c].iloc[0]) for v in vals]  # (a missing cell kept: no change)
        changes += np.array([not t for t in same], dtype=np.int64)[idx[:, i]]
    ok = np.asarray(model.predict(df)) == target
    if proba is not None:
        k = list(model.classes_).index(target)
        ok &= np.asarray(model.predict_proba(df))[:, k] >= proba
    if max_changes is not None:
        ok &= changes <= max_changes
    costs = np.where(ok, costs, np.inf)
    i = int(np.argmin(costs))
    if not np.isfinite(costs[i]):
        return np.inf, None
    return float(costs[i]), df.iloc[[i]]


def _same_cell(v, x):
    """Whether a cell's value v is the row's own x (NaN is NaN's own)."""
    missing = [isinstance(t, float) and t != t for t in (v, x)]
    return all(missing) or (not any(missing) and bool(v == x))


def tree_split_boundaries(model):
    """Return ({feature: sorted float64 boundaries}, (dlo, dhi)) of a tree model's splits.

    scikit-learn's non-histogram trees by :func:`f32_le_boundary` on their float32 rule, the
    boosted libraries by :func:`bisect_boundary` on their own rules (:func:`boosted_splits`).
    """
    root = type(model).__module__.split(".")[0]
    D = int(model.n_features_in_)
    out = {f: set() for f in range(D)}
    if root in ("xgboost", "lightgbm") or type(model).__name__.startswith("HistGradient"):
        splits = boosted_splits(model)
        dom = splits[0][2] if splits else (-_F64_MAX, _F64_MAX)
        for f, left, (a, z) in splits:
            out[f].add(bisect_boundary(left, a, z))
    else:
        dom = (-_F32_MAX, _F32_MAX)
        for f, t in sklearn_tree_splits(model):
            out[f].add(f32_le_boundary(t))
    return {f: sorted(v for v in b if dom[0] <= v < dom[1]) for f, b in out.items()}, dom


def tree_model_leaves(model, X):
    """Return the leaf of every row of X in every tree, by the library's own ``apply``, (N, T).

    scikit-learn ``apply`` (HistGradientBoosting has none: its predictors' nodes are walked with
    its rule ``x <= num_threshold``, a NaN by ``missing_go_to_left``; numeric splits only),
    XGBoost ``apply``, LightGBM ``pred_leaf=True``.
    """
    X = np.asarray(X, dtype=np.float64)
    root = type(model).__module__.split(".")[0]
    if root == "lightgbm":
        out = model.predict(X, pred_leaf=True)
    elif type(model).__name__.startswith("HistGradient"):
        cols = []
        for stage in model._predictors:
            for p in stage:
                nodes = p.nodes
                node = np.zeros(X.shape[0], dtype=np.int64)
                for _ in range(64):
                    inner = nodes["is_leaf"][node] == 0
                    if not inner.any():
                        break
                    f = nodes["feature_idx"][node]
                    v = X[np.arange(X.shape[0]), f]
                    left = np.where(
                        np.isnan(v),
                        nodes["missing_go_to_left"][node] == 1,
                        v <= nodes["num_threshold"][node],
                    )
                    nxt = np.where(left, nodes["left"][node], nodes["right"][node])
                    node = np.where(inner, nxt, node)
                cols.append(node)
        out = np.column_stack(cols)
    else:
        out = model.apply(X)
    return np.asarray(out).reshape(X.shape[0], -1)


def tree_leaf_sums(value, leaves, base, dtype):
    """Return base + Σ_t value[leaves[:, t]] added in tree order, in ``dtype``, as float64 (N, S).

    The NumPy code :func:`fastcf._kernels.tree_walk.leaf_sums` replaced: ``np.add.accumulate``
    along the trees (a sequential sum), each partial sum rounded to float32 when the library
    adds in float32.
    """
    terms = value[leaves]  # (N, T, S)
    start = np.broadcast_to(base, (terms.shape[0], 1, terms.shape[2]))
    seq = np.concatenate([start, terms], axis=1)
    return np.add.accumulate(seq.astype(dtype), axis=1)[:, -1].astype(np.float64)


def tree_plausible_brute_force(
    model, X_train, x0, target, metric="manhattan", w=None, lo=None, hi=None, max_changes=None,
    proba=None,
):  # fmt: skip
    """Plausible tree counterfactual by brute force over every cell of the threshold grid.

    Every cell of the grid of :func:`tree_split_boundaries` (one interval per feature) gives
    the point of the cell ∩ ``[lo, hi]`` closest to x0; a point is kept when the library's own
    leaves of it (:func:`tree_model_leaves`) are those of some training row (it lies in a region
    of the model that holds training data: a region is a union of cells), and the model's own
    ``predict`` (and ``predict_proba`` >= proba, and ``max_changes``) judges the rest. Returns
    ``(distance, x)`` of the cheapest, ``(inf, None)`` if none.
    """
    from itertools import product

    bnd, (dlo, dhi) = tree_split_boundaries(model)
    D = x0.shape[0]
    w = np.ones(D) if w is None else np.asarray(w, dtype=float)
    lo = np.full(D, dlo) if lo is None else np.maximum(lo, dlo)
    hi = np.full(D, dhi) if hi is None else np.minimum(hi, dhi)
    choices = []
    for f in range(D):
        ends = [dlo] + [float(np.nextafter(v, np.inf)) for v in bnd[f]]
        tops = list(bnd[f]) + [dhi]
        vals = []
        for a, z in zip(ends, tops, strict=True):
            a, z = max(a, lo[f]), min(z, hi[f])
            if a <= z:
                vals.append(min(max(x0[f], a), z))
        choices.append(vals)
    P = np.array(list(product(*choices)), dtype=np.float64).reshape(-1, D)
    if P.shape[0]:
        seen = {tuple(r) for r in tree_model_leaves(model, X_train).tolist()}
        keep = [tuple(r) in seen for r in tree_model_leaves(model, P).tolist()]
        P = P[np.asarray(keep, dtype=bool)]
    return _ref_best(model, P, x0, target, metric, w, max_changes, proba)


def tabular_plausible_brute_force(
    model, X_train, row, grids, cost, target, *, proba=None, max_changes=None
):
    """:func:`tabular_model_brute_force` restricted to the model's regions of training rows.

    ``model``: a scikit-learn ``Pipeline`` ending in a tree model with ``apply``; a candidate
    row is kept when its leaves (``model[-1].apply(model[:-1].transform(rows))``) are those of
    some row of ``X_train``.
    """
    import pandas as pd

    def leaves(df):
        out = np.asarray(model[-1].apply(model[:-1].transform(df)))
        return [tuple(r) for r in out.reshape(len(df), -1).tolist()]

    seen = set(leaves(X_train))
    cols = list(grids)
    sizes = [len(grids[c]) for c in cols]
    idx = np.indices(sizes).reshape(len(cols), -1).T
    n = idx.shape[0]
    df = row.loc[row.index.repeat(n)].reset_index(drop=True)
    for i, c in enumerate(cols):
        vals = np.empty(sizes[i], dtype=object)
        vals[:] = list(grids[c])
        df[c] = pd.Series(vals[idx[:, i]]).astype(row[c].dtype)
    inside = np.array([lf in seen for lf in leaves(df)], dtype=bool)
    if not inside.any():
        return np.inf, None
    kept = df[inside].reset_index(drop=True)
    costs = np.array([sum(cost(c, kept[c].iloc[i]) for c in cols) for i in range(len(kept))])
    changes = np.array(
        [sum(kept[c].iloc[i] != row[c].iloc[0] for c in cols) for i in range(len(kept))]
    )
    ok = np.asarray(model.predict(kept)) == target
    if proba is not None:
        k = list(model.classes_).index(target)
        ok &= np.asarray(model.predict_proba(kept))[:, k] >= proba
    if max_changes is not None:
        ok &= changes <= max_changes
    costs = np.where(ok, costs, np.inf)
    i = int(np.argmin(costs))
    if not np.isfinite(costs[i]):
        return np.inf, None
    return float(costs[i]), kept.iloc[[i]]


# ------------------------------------------------- the per-node steps of the tree branch and bound
def tree_reduce_rounds(st, flat, kbar, ka, kb, rho, alive, coef, r, eps, margins, rounds=30):
    """The exact reductions of a tree program to a fixed point, one NumPy pass over every entry.

    What ``fastcf._kernels.tree_reduce.reduce_rounds`` computes over the alive leaves only (the
    module docstring of ``fastcf._trees.reduce`` states the five rules). ``st``: the forest's
    ``Structure`` (its leaf-box entries ``b_leaf``, ``b_feat``, ``e_ka``, ``e_kb``); the
    groups of the hulls are made here from (tree, feature). Returns ``(empty, lb, ka, kb,
    alive, pruned)`` (new arrays; ``lb`` as the kernel returns it). Sums in the kernel's
    order: the lower bound over the features, a leaf's cost over its entries (``np.add.at``
    adds them one after the other, in entry order), a margin's top over the trees.
    """
    ka, kb, alive = ka.astype(np.int64), kb.astype(np.int64), alive.copy()
    D = kbar.size
    T = st.tree_start.size
    n = alive.size
    ioff = st.ioff[:-1]
    ef, el = st.b_feat, st.b_leaf
    key = st.leaf_tree[el] * D + ef
    groups = np.unique(key)
    pruned = np.zeros(T, dtype=bool)
    lb = 0.0

    def out(empty):
        return empty, lb, ka, kb, alive, pruned

    for _ in range(rounds):
        if (ka > kb).any():
            return out(1)
        base = flat[ioff + np.clip(kbar, ka, kb)]
        lb = 0.0
        for v in base:
            lb += v
        if lb > rho:
            return out(1)
        for f in range(D):  # interval costs
            room = rho - (lb - base[f])
            if flat[ioff[f] + ka[f]] > room or flat[ioff[f] + kb[f]] > room:
                ks = np.arange(ka[f], kb[f] + 1)
                ks = ks[flat[ioff[f] + ks] <= room]
                ka[f], kb[f] = (ks[0], ks[-1]) if ks.size else (-1, -1)
        a = np.maximum(st.e_ka, ka[ef])  # leaf costs
        b = np.minimum(st.e_kb, kb[ef])
        on = alive[el]
        miss = np.zeros(n, dtype=bool)
        miss[el[on & (a > b)]] = True
        sel = on & (a <= b)
        cost = np.zeros(n)
        k = np.clip(kbar[ef], a, b)
        np.add.at(cost, el[sel], flat[ioff[ef[sel]] + k[sel]] - base[ef[sel]])
        now = alive & (lb + cost <= rho) & ~miss
        F = coef.shape[1]
        gaps, bests, tops, scales = np.empty((F, T)), np.empty((F, T), dtype=np.int64), [], []
        if margins:
            for j in range(F):
                mx = np.empty(T)
                top = scale = 0.0
                for t in range(T):
                    leaves = np.flatnonzero(now & (st.leaf_tree == t))
                    m = coef[leaves, j]
                    if m.size == 0:
                        return out(1)
                    q = int(np.argmax(m))  # (the first of the largest)
                    mx[t] = m[q]
                    top += mx[t]
                    scale += abs(mx[t])
                    rest = np.delete(m, q)
                    gaps[j, t] = mx[t] - (rest.max() if rest.size else -np.inf)
                    bests[j, t] = leaves[q]
                tops.append(top)
                scales.append(scale)
                if top < r[j] - eps[j]:
                    return out(1)
                kill = now & (coef[:, j] < r[j] - eps[j] - (top - mx[st.leaf_tree]))
                pruned[st.leaf_tree[kill]] = True
                now &= ~kill
        count = np.bincount(st.leaf_tree[now], minlength=T)
        if (count == 0).any():
            return out(1)
        changed = bool((now != alive).any())
        alive = now
        if margins and groups.size:  # range ends
            empty, moved, ka, kb = tree_margin_ends(st, gaps, bests, tops, scales, r, eps, ka, kb)
            if empty:
                return out(1)
            changed |= moved
        nka, nkb = ka.copy(), kb.copy()
        live = alive[el]
        for g in groups:  # hulls
            e = live & (key == g)
            if e.sum() == count[g // D]:
                f = g % D
                nka[f] = max(nka[f], a[e].min())
                nkb[f] = min(nkb[f], b[e].max())
        changed |= bool((nka != ka).any() or (nkb != kb).any())
        ka, kb = nka, nkb
        if not changed:
            break
    return out(0)


def tree_margin_ends(st, gaps, bests, tops, scales, r, eps, ka, kb):
    """The range ends' rule of the reductions, tree by tree (``tree_reduce._margin_ends``).

    Per form j: ``gaps[j, t]``, ``bests[j, t]``: tree t's best leaf among those alive at the
    form's margin test (the first of the largest term) and its gap to the second best there (0
    at a tie, inf for a lone leaf); ``tops[j]``, ``scales[j]``: the sum of the trees' best and
    of their magnitudes. A feature's lower end ``ka_f`` moves to the smallest lower edge of the
    best boxes that exclude it when the gaps of those trees sum past ``top − (r_j − eps_j)``
    (with the kernel's room for rounding); the upper end alike; repeated up to 8 times.
    Returns ``(empty, moved, ka, kb)`` (new arrays).
    """
    ka, kb = ka.copy(), kb.copy()
    D = ka.size
    moved = False
    for j in range(len(tops)):
        thr = r[j] - eps[j]
        room = (tops[j] - thr) + 1e-10 * (scales[j] + abs(thr))
        for _ in range(8):
            lo, hi = np.zeros(D), np.zeros(D)
            na, nb = kb + 1, ka - 1
            for t in np.flatnonzero(gaps[j] > 0.0):
                for e in range(st.leaf_estart[bests[j, t]], st.leaf_estart[bests[j, t] + 1]):
                    f = st.b_feat[e]
                    if st.e_ka[e] > ka[f]:
                        lo[f] += gaps[j, t]
                        na[f] = min(na[f], st.e_ka[e])
                    if st.e_kb[e] < kb[f]:
                        hi[f] += gaps[j, t]
                        nb[f] = max(nb[f], st.e_kb[e])
            move_a, move_b = lo > room, hi > room
            if not (move_a.any() or move_b.any()):
                break
            ka[move_a], kb[move_b] = na[move_a], nb[move_b]
            if (ka > kb).any():
                return True, True, ka, kb
            moved = True
    return False, moved, ka, kb


def branch_node_spread(alive, V, coef, tree_start):
    """Per tree over its alive leaves: (undecided, Σ_j spread of the forms, Σ_s spread of V).

    The NumPy passes that ``fastcf._kernels.tree_branch.node_spread`` replaces.
    """
    on = alive[:, None]
    vmax = np.maximum.reduceat(np.where(on, V, -np.inf), tree_start)
    vmin = np.minimum.reduceat(np.where(on, V, np.inf), tree_start)
    if coef.shape[1]:
        cmax = np.maximum.reduceat(np.where(on, coef, -np.inf), tree_start)
        cmin = np.minimum.reduceat(np.where(on, coef, np.inf), tree_start)
        spread = (cmax - cmin).sum(axis=1)
    else:
        spread = np.zeros(tree_start.size)
    return (vmax != vmin).any(axis=1), spread, (vmax - vmin).sum(axis=1)


def branch_split_even(st, alive, ka, kb, t):
    """(f, j) parting tree t's alive leaves most evenly, or None (NumPy, as ``split_even``)."""
    stop = st.tree_start[t + 1] if t + 1 < st.tree_start.size else st.leaf_ids.size
    e = np.arange(*np.searchsorted(st.b_leaf, [st.tree_start[t], stop]))
    e = e[alive[st.b_leaf[e]]]
    f = st.b_feat[e]
    a = np.maximum(st.e_ka[e], ka[f])
    b = np.minimum(st.e_kb[e], kb[f])
    cand = np.flatnonzero(b < kb[f])
    if cand.size == 0:
        return None
    cf, cj = f[cand], b[cand]
    same = cf[:, None] == f[None, :]
    left = (same & (b[None, :] <= cj[:, None])).sum(axis=1)
    right = (same & (a[None, :] > cj[:, None])).sum(axis=1)
    i = int(np.argmax(np.minimum(left, right)))
    return int(cf[i]), int(cj[i])


def branch_split_best(st, alive, ka, kb, coef, undecided):
    """(f, j) at an edge of the most trees' best alive leaves, or None (NumPy: ``split_best``)."""
    on = alive & undecided[st.leaf_tree]
    score = np.where(on, coef.sum(axis=1) if coef.shape[1] else 0.0, -np.inf)
    top = np.maximum.reduceat(score, st.tree_start)
    best = on & (score == top[st.leaf_tree])
    e = np.flatnonzero(best[st.b_leaf])
    f = st.b_feat[e]
    a = np.maximum(st.e_ka[e], ka[f])
    b = np.minimum(st.e_kb[e], kb[f])
    hi = b < kb[f]
    lo = a > ka[f]
    D1 = st.n_y + 1
    keys = np.concatenate([f[hi] * D1 + b[hi], f[lo] * D1 + a[lo] - 1])
    if keys.size == 0:
        return None
    low = np.minimum.reduceat(np.where(on, score, np.inf), st.tree_start)
    w = (top - low)[st.leaf_tree[st.b_leaf[e]]]
    u, inv = np.unique(keys, return_inverse=True)
    n = np.bincount(inv, weights=np.concatenate([w[hi], w[lo]]))
    k = int(u[np.argmax(n)])
    return k // D1, k % D1


def tree_branch_loop(st, c, points, x0, rho, lforms, accept, q, budget):
    """The branch and bound over interval ranges, one node at a time in NumPy.

    What ``fastcf._kernels.tree_search.search`` runs (driven by ``fastcf._trees.branch``),
    with the NumPy passes above for each step: the reductions over every leaf-box entry
    (:func:`tree_reduce_rounds`), the spreads and splits (:func:`branch_node_spread`,
    :func:`branch_split_even`, :func:`branch_split_best`) and the forest's level-by-level walk.
    Returns ``(x, cost, done, nodes, rho)`` as ``Branched``.
    """
    from fastcf._trees.query import coord_cost
    from fastcf._trees.reduce import ROUNDS

    V = np.ascontiguousarray(st.V, dtype=np.float64)
    coef = lforms.coef
    ioff = st.ioff[:-1]
    best, best_cost, nodes = None, math.inf, 0
    stack = [(c.ka, c.kb, st.leaf_ok.copy())]
    while stack:
        if nodes >= budget:
            return best, best_cost, False, nodes, rho
        ka, kb, alive = stack.pop()
        nodes += 1
        empty, _, ka, kb, alive, _ = tree_reduce_rounds(
            st, c.flat, c.kbar, ka, kb, rho * (1.0 + 1e-12), alive, coef, lforms.r,
            lforms.tol, True, ROUNDS,
        )  # fmt: skip
        if empty:
            continue
        undecided, spread, vspread = branch_node_spread(alive, V, coef, st.tree_start)
        if not undecided.any():
            p = points[ioff + np.clip(c.kbar, ka, kb)]
            leaves = st.leafpos[st.forest.walk_levels(p[None])[0]]
            if alive[leaves].all():
                cost = float(coord_cost(p - x0, q.w, q.metric).sum())
                fine = q.max_changes is None or np.count_nonzero(p != x0) <= q.max_changes
                if fine and cost <= rho and accept(p):
                    best, best_cost = p, cost
                    rho = cost * (1.0 - 1e-10)
                continue
            spread = np.where(alive[leaves], 0.0, 1.0 + vspread)
            spread[np.add.reduceat(alive.astype(np.int64), st.tree_start) < 2] = 0.0
        else:
            spread = np.where(undecided, spread + 1e-300, 0.0)
        cut = None
        if nodes % 2 and undecided.any():
            cut = branch_split_best(st, alive, ka, kb, coef, undecided)
        if cut is None:
            t = int(np.argmax(spread))
            cut = None if spread[t] <= 0.0 else branch_split_even(st, alive, ka, kb, t)
        assert cut is not None  # (disjoint boxes always split)
        f, j = cut
        lkb, rka = kb.copy(), ka.copy()
        lkb[f] = j
        rka[f] = j + 1
        left, right = (ka, lkb, alive), (rka, kb, alive)
        stack += [right, left] if c.kbar[f] <= j else [left, right]
    return best, best_cost, True, nodes, rho


def incumbent_beam(s, width, depth, best, pace):
    """The incumbent's beam search, one point at a time in NumPy.

    What ``fastcf._trees.incumbent.Search.beam`` runs with the kernels of
    ``fastcf._kernels.tree_beam``: each round expands every point of the beam by every
    single-feature move (the tables of the whole beam at once), takes the cheapest valid move of
    each point as the best answer (in order, each point's answer lowering the cost the next
    must beat), ranks the other moves that gain margin (beyond the best answer's pace, or per
    unit of cost), keeps each point's ``width`` best and then the ``width`` best distinct
    children. ``s``: a ``Search``. Returns the best answer (``best`` if none is cheaper).
    """
    import math

    from fastcf._trees.incumbent import cost_of
    from fastcf._trees.query import coord_cost

    x0, q = s.x0, s.q
    kx0 = s._kx(s.base)
    Z0, _ = s.table(kx0)
    m0 = float(s._margin(Z0[None])[0])
    beam = [(s.base, kx0, coord_cost(s.base - x0, q.w, q.metric))]
    best_cost = math.inf if best is None else cost_of(best, x0, q)
    rate = max(-m0, 0.0) / best_cost if pace and 0.0 < best_cost < math.inf else 0.0
    for _ in range(depth):
        _, ZN = s.tables(np.array([kx for _, kx, _ in beam]))
        cand = []
        for w, (x, kx, now) in enumerate(beam):
            allowed = s.mk != kx[s.mf]
            if q.max_changes is not None and np.count_nonzero(x != x0) >= q.max_changes:
                allowed &= x[s.mf] != x0[s.mf]
            idx = np.flatnonzero(allowed)
            total = now.sum() - now[s.mf[idx]] + s.mc[idx]
            keep = total < best_cost
            cand.append((w, idx[keep], total[keep]))
        if not any(idx.size for _, idx, _ in cand):
            break
        Zi = np.concatenate([ZN[w, idx] for w, idx, _ in cand])
        oks, ms = s._valid(s._scores(Zi)), s._margin(Zi)
        moves = (s.mf, s.mk, s.mp, s.mc)
        beam, best, best_cost = beam_round(
            beam, cand, oks, ms, moves, m0, rate, width, best, best_cost
        )
        if not beam:
            break
    return best


def beam_round(beam, cand, oks, ms, moves, m0, rate, width, best, best_cost):
    """One round's choice of :func:`incumbent_beam`: the best answer and the next beam.

    ``beam``: the points (x, kx, per-coordinate costs); ``cand``: each point's moves cheaper
    than the best answer at the round's start, (point, move indices, costs with them);
    ``oks``, ``ms``: the library's verdict and the margin of every listed move, in order;
    ``moves``: (feature, interval, coordinate, cost) of every move. Returns (next beam, best,
    best_cost).
    """
    mf, mk, mp, mc = moves
    xs, ks, costs, scores = [], [], [], []
    at = 0
    for w, idx, total in cand:
        x, kx, now = beam[w]
        ok, m = oks[at : at + idx.size], ms[at : at + idx.size]
        at += idx.size
        keep = total < best_cost
        idx, total, ok, m = idx[keep], total[keep], ok[keep], m[keep]
        if idx.size == 0:
            continue
        if ok.any():
            j = idx[np.flatnonzero(ok)[np.argmin(total[ok])]]
            y = x.copy()
            y[mf[j]] = mp[j]
            best, best_cost = y, float(total[ok].min())
        if rate > 0:
            sc = np.where(~ok & (m > m0), (m - m0) - rate * total, -np.inf)
        else:
            sc = np.where(~ok & (m > m0), (m - m0) / np.maximum(total, 1e-300), -np.inf)
        top = np.argsort(-sc, kind="stable")[:width]  # (the earlier move at a tie)
        for i in top[np.isfinite(sc[top])]:
            j = idx[i]
            y, ky, ny = x.copy(), kx.copy(), now.copy()
            y[mf[j]], ky[mf[j]], ny[mf[j]] = mp[j], mk[j], mc[j]
            xs.append(y)
            ks.append(ky)
            costs.append(ny)
            scores.append(sc[i])
    order = np.argsort(-np.asarray(scores), kind="stable")
    seen, nxt = set(), []
    for i in order:
        key = ks[i].tobytes()
        if key in seen or costs[i].sum() >= best_cost:
            continue
        seen.add(key)
        nxt.append((xs[i], ks[i], costs[i]))
        if len(nxt) == width:
            break
    return nxt, best, best_cost


def soak_zoo():
    """Return ``docs/scripts/soak_zoo.py`` as a module: its cases rebuild the zoo's findings."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parents[1] / "docs" / "scripts" / "soak_zoo.py"
    spec = importlib.util.spec_from_file_location("soak_zoo", path)
    zoo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(zoo)
    return zoo


def zoo_counts(seed, case, path):
    """Return the pipeline zoo's tally of one case on one path (``"array"``, ``"tabular"``).

    The case is run as ``soak_zoo.py --seed SEED --case CASE`` runs it (every option drawn;
    the array path first, since it draws the options the tabular path reads).
    """
    import warnings

    zoo = soak_zoo()
    zoo.FULL_OPTS = True
    c = zoo.make_case(seed, case, 0.05)
    c["seed0"] = seed
    tally = zoo.Tally(verbose=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zoo.run_array(tally, c)
        if path == "tabular":
            zoo.run_tabular(tally, c)
    (key,) = [k for k in tally.count if f"[{path}]" in k]
    return tally.count[key]


def relu_net_brute_force(
    coefs, intercepts, x0, target, margin, w, lo, hi, *, binary, metric="manhattan",
    max_changes=None, relu=True,
):  # fmt: skip
    """Exact network counterfactual by one linear program per activation pattern (tiny nets).

    ``coefs``/``intercepts``: scikit-learn's ``MLPClassifier.coefs_``/``intercepts_`` (layer
    matrices of shape (n_in, n_out)). Every pattern of the hidden ReLUs (2^H of them) is a
    polytope where the network is affine; each is solved by ``scipy.optimize.linprog`` for
    ``min Σ w |x − x̄|`` (``metric="euclidean"``: ``min Σ (w (x − x̄))²``, a QP by cvxpy and
    Clarabel) with the target's logits ahead by ``margin`` (binary: the one logit
    ≥ margin for target 1, ≤ −margin for target 0). With ``metric="l0"`` or ``max_changes``,
    every set of changed features (a subset of at most ``max_changes``) is tried too, the others
    pinned at x̄; the L0 cost is Σ w over the set that changed. Returns ``(cost, x)`` (inf, None
    when nothing is feasible). Independent of fastcf: the layers are composed here from the
    scikit-learn arrays.
    """
    import itertools

    from scipy.optimize import linprog

    Ws = [np.asarray(c, dtype=np.float64).T for c in coefs]
    bs = [np.asarray(i, dtype=np.float64) for i in intercepts]
    D = x0.shape[0]
    sizes = [W.shape[0] for W in Ws[:-1]]
    H = sum(sizes)
    best = (math.inf, None)
    subsets = [None]
    if metric == "l0" or max_changes is not None:
        m = D if max_changes is None else max_changes
        subsets = [s for r in range(m + 1) for s in itertools.combinations(range(D), r)]
    patterns = itertools.product([False, True], repeat=H) if relu else [()]
    for bits in patterns:
        # compose the affine maps of this pattern: z_l = A x + c
        A, c = np.eye(D), np.zeros(D)
        rows_ub, rhs_ub = [], []
        k = 0
        for W, b in zip(Ws[:-1], bs[:-1], strict=True):
            A, c = W @ A, W @ c + b
            if relu:
                on = np.array(bits[k : k + W.shape[0]])
                k += W.shape[0]
                for j in range(W.shape[0]):
                    if on[j]:
                        rows_ub.append(-A[j])
                        rhs_ub.append(c[j])  # noqa: E702
                    else:
                        rows_ub.append(A[j])
                        rhs_ub.append(-c[j])  # noqa: E702
                A, c = A * on[:, None], c * on
        Z_A, Z_c = Ws[-1] @ A, Ws[-1] @ c + bs[-1]
        if binary:
            s = 1.0 if target == 1 else -1.0
            rows_ub.append(-s * Z_A[0])
            rhs_ub.append(s * Z_c[0] - margin)  # noqa: E702
        else:
            for j in range(Z_A.shape[0]):
                if j != target:
                    rows_ub.append(-(Z_A[target] - Z_A[j]))
                    rhs_ub.append((Z_c[target] - Z_c[j]) - margin)
        Ax = np.array(rows_ub)
        bx = np.array(rhs_ub)
        Al = np.block([[Ax, np.zeros((Ax.shape[0], D))], [np.eye(D), -np.eye(D)],
                       [-np.eye(D), -np.eye(D)]])  # fmt: skip
        bl = np.concatenate([bx, x0, -x0])
        for sub in subsets:
            blo, bhi = lo.copy(), hi.copy()
            if sub is not None:
                pin = np.ones(D, dtype=bool)
                pin[list(sub)] = False
                blo[pin], bhi[pin] = x0[pin], x0[pin]
            if metric == "euclidean":  # a QP per pattern (cvxpy), the weights on d: Σ (w d)²
                import cvxpy as cp

                # (in d = x − x̄, so that the solver's relative tolerance is on the distance
                # itself, and at tight tolerances)
                d = cp.Variable(D)
                prob = cp.Problem(
                    cp.Minimize(cp.sum_squares(cp.multiply(w, d))),
                    [Ax @ d <= bx - Ax @ x0, d >= blo - x0, d <= bhi - x0],
                )
                try:
                    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-14, tol_gap_rel=1e-12,
                               tol_feas=1e-12)  # fmt: skip
                except cp.SolverError:
                    continue
                if prob.status in ("optimal", "optimal_inaccurate") and d.value is not None:
                    x = np.clip(x0 + d.value, blo, bhi)
                    cost = float(np.sqrt(np.sum((w * (x - x0)) ** 2)))
                    if cost < best[0]:
                        best = (cost, x)
                continue
            box = list(zip(blo, bhi, strict=True)) + [(0, None)] * D
            res = linprog(np.concatenate([np.zeros(D), w]), A_ub=Al, b_ub=bl, bounds=box,
                          method="highs")  # fmt: skip
            if res.status != 0:
                continue
            x = res.x[:D]
            cost = float(w @ np.abs(x - x0)) if metric == "manhattan" else float(w[list(sub)].sum())
            if cost < best[0]:
                best = (cost, x)
    return best


def relu_net_proba_brute_force(coefs, intercepts, x0, target, tau, w, lo, hi, *, margin=0.0,
                               slack=0.0, metric="manhattan"):  # fmt: skip
    """Exact multiclass ``p_target ≥ τ`` counterfactual of a tiny ReLU network, by patterns.

    For every activation pattern of the hidden ReLUs, one convex program (cvxpy, Clarabel at
    tight tolerances, in d = x − x̄): ``min Σ w |d|`` (or ``Σ (w d)²``) over the pattern's
    polytope and the box, with ``log Σ_j exp(z_j − z_t) ≤ log(1/τ) − slack`` (softmax_t ≥ τ)
    and ``z_t − z_j ≥ margin`` for every j ≠ t. Returns ``(cost, x)`` (inf, None when
    nothing is feasible). Independent of fastcf: the layers are composed here from the
    scikit-learn arrays.
    """
    import itertools

    import cvxpy as cp

    Ws = [np.asarray(c, dtype=np.float64).T for c in coefs]
    bs = [np.asarray(i, dtype=np.float64) for i in intercepts]
    D = x0.shape[0]
    H = sum(W.shape[0] for W in Ws[:-1])
    best = (math.inf, None)
    for bits in itertools.product([False, True], repeat=H):
        A, c = np.eye(D), np.zeros(D)
        rows, rhs = [], []
        k = 0
        for W, b in zip(Ws[:-1], bs[:-1], strict=True):
            A, c = W @ A, W @ c + b
            on = np.array(bits[k : k + W.shape[0]])
            k += W.shape[0]
            s = np.where(on, -1.0, 1.0)  # on: −(A x + c) ≤ 0; off: A x + c ≤ 0
            rows.append(s[:, None] * A)
            rhs.append(-s * c)
            A, c = A * on[:, None], c * on
        ZA, Zc = Ws[-1] @ A, Ws[-1] @ c + bs[-1]
        d = cp.Variable(D)
        x = x0 + d
        z = ZA @ x + Zc
        others = [j for j in range(ZA.shape[0]) if j != target]
        cons = [
            np.vstack(rows) @ x <= np.concatenate(rhs),
            x >= lo,
            x <= hi,
            cp.log_sum_exp(z - z[target]) <= -math.log(tau) - slack,
        ]
        cons += [z[target] - z[j] >= margin for j in others]
        cost = (
            cp.sum(cp.multiply(w, cp.abs(d)))
            if metric == "manhattan"
            else cp.sum_squares(cp.multiply(w, d))
        )
        prob = cp.Problem(cp.Minimize(cost), cons)
        try:
            with warnings.catch_warnings():  # (an infeasible pattern's "may be inaccurate")
                warnings.simplefilter("ignore")
                prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-10,
                           tol_feas=1e-10)  # fmt: skip
        except cp.SolverError:
            continue
        if prob.status not in ("optimal", "optimal_inaccurate") or d.value is None:
            continue
        xv = np.clip(x0 + d.value, lo, hi)
        val = (
            float(w @ np.abs(xv - x0))
            if metric == "manhattan"
            else float(np.sqrt(np.sum((w * (xv - x0)) ** 2)))
        )
        if val < best[0]:
            best = (val, xv)
    return best


def tabular_net_brute_force(pipe, row, grids, cost, continuous, target, *, margin=1e-6,
                            proba=None, slack=0.0):  # fmt: skip
    """Tabular recourse on a pipeline ending in a ReLU ``MLPClassifier``, by enumeration.

    Every combination of the discrete columns' values (``grids``: ``{col: values}``, the
    others held at x̄; ``cost(col, v)`` their cost) times every activation pattern of the
    network: for each combination, the preprocessing's map of the ``continuous`` columns
    (``{col: (lo, hi, w)}``: their box and the cost of a unit move) is read by probing the
    pipeline's own ``transform`` (affine in them: scalers), composed into the network's first
    layer, and :func:`relu_net_brute_force` solves one LP per pattern for the cheapest move of
    those columns with the target's logits ahead by ``margin``. ``proba=τ`` (three classes or
    more): :func:`relu_net_proba_brute_force` instead, one convex program per pattern with
    ``softmax_t ≥ τ`` itself (``log Σ_j exp(z_j − z_t) ≤ log(1/τ) − slack``) and the logits
    ahead by ``margin``. Returns ``(cost, x)``, x the answer as a one-row DataFrame
    (``(inf, None)`` if none). Independent of fastcf.
    """
    import pandas as pd

    pre, mlp = pipe[:-1], pipe[-1]
    cols = list(grids)
    cont = list(continuous)
    assert not set(cols) & set(cont), "a column is either on a grid or continuous"
    t = list(mlp.classes_).index(target)
    binary = len(mlp.classes_) == 2
    x0c = np.array([float(row[c].iloc[0]) for c in cont])
    lo = np.array([continuous[c][0] for c in cont], dtype=np.float64) - x0c
    hi = np.array([continuous[c][1] for c in cont], dtype=np.float64) - x0c
    w = np.array([continuous[c][2] for c in cont], dtype=np.float64)
    best = (math.inf, None)
    for combo in itertools.product(*(grids[c] for c in cols)):
        base = row.copy()
        for c, v in zip(cols, combo, strict=True):
            base[c] = pd.Series([v], index=row.index).astype(row[c].dtype)
        fixed = sum(cost(c, v) for c, v in zip(cols, combo, strict=True))
        if fixed >= best[0]:
            continue
        probe = pd.concat([base] * (len(cont) + 1), ignore_index=True)
        for i, c in enumerate(cont):
            probe.loc[i + 1, c] = probe.loc[i + 1, c] + 1.0
        F = np.asarray(pre.transform(probe), dtype=np.float64)
        M = (F[1:] - F[0]).T  # (features, continuous): the map of a unit move of each
        W1 = np.asarray(mlp.coefs_[0], dtype=np.float64).T
        coefs = [(W1 @ M).T] + list(mlp.coefs_[1:])
        intercepts = [W1 @ F[0] + mlp.intercepts_[0]] + list(mlp.intercepts_[1:])
        if proba is None:
            c_cost, d = relu_net_brute_force(
                coefs, intercepts, np.zeros(len(cont)), t if not binary else int(t), margin, w,
                lo, hi, binary=binary, relu=mlp.activation == "relu",
            )  # fmt: skip
        else:
            assert not binary and mlp.activation == "relu", "three classes or more, ReLU"
            c_cost, d = relu_net_proba_brute_force(
                coefs, intercepts, np.zeros(len(cont)), t, proba, w, lo, hi, margin=margin,
                slack=slack,
            )  # fmt: skip
        if d is None:
            continue
        if fixed + c_cost < best[0]:
            x = base.copy()
            for i, c in enumerate(cont):
                x[c] = x0c[i] + d[i]
            best = (fixed + c_cost, x)
    return best
