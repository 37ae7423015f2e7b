"""The warm-started λ-path: problem (2) along a grid of λ (:func:`lam_path`).

Each solve starts from the Hermite extrapolation in log λ of the previous solutions and their
tangents dy/d(log λ) (:func:`_tangent`), and runs the Newton core of
:mod:`~fastcf._kernels.softmax.core` on work arrays allocated once per path (:func:`_path_rows`).
"""

import math

import numpy as np

from fastcf._status import Status

from .. import kernel
from .core import _apply_inverse, _factor, _newton_core, initial_y

_PREDICTION_BUDGET = 10  # Newton iterations from a λ-path prediction before the fallback
_OK = int(Status.OK)
_NUMERIC = int(Status.NUMERIC)
_NOT_TARGET = int(Status.NOT_TARGET)
_PENDING = int(Status.PENDING)


@kernel(_nrt=False)
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


def lam_path(zbar, G, GF, k, lams, tol, max_iter, warm, nrm, x0norm, absb, vmax, gamma):
    """Problem (2) along lams, each solve started from a prediction made of the previous ones.

    Predictor (``warm``): the cubic Hermite extrapolation in log λ of the last two solutions and
    their tangents dy/d(log λ) (:func:`_tangent`, from the factorisation of the last Newton step:
    a solve, no new factorisation), which starts Newton O(h⁴) from the answer; the tangent line
    of the last solution for the second λ or after a jump in the grid. A prediction that fails
    is retried from the last solution. Without ``warm`` every λ starts cold (:func:`initial_y`).

    The verdict of each row (``nrm``, ``x0norm``, ``absb``, ``vmax``, ``gamma`` as in
    :func:`_path_row_certain`): status OK when the class of the formed point is certainly k,
    PENDING when the K-space logits name k but their rounding could be deciding (the caller
    rechecks the formed point), NOT_TARGET another class, NUMERIC non-finite or numerical failure,
    MAXITER iteration limit.

    A Python function over two kernels (:func:`_cold_start`, :func:`_path_rows`), not a kernel:
    a kernel here linked both and LLVM optimised and emitted all their code once more, about
    1 CPU s of a first path's compile time (issue 54). The rows are the same kernels' work.

    Returns (Y (L, K), P (L, K) = softmax(z̄ + G y), dist (L,) = ‖x − x̄‖_W =
    √(yᵀ G y), gnorm, nit, status, the number of rows with status PENDING).
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
    tl = np.empty(L)  # log λ, once (by _cold_start's first call)
    prob = (zbar, G, GF, lams, tl, nrm, absb)
    par = (k, tol, max_iter, warm, x0norm, vmax, gamma)
    out = (Y, P, dist, gn, nit, status)
    work = (Tn, tok, conv, W, M, scratch, y)
    i = 0
    while i < L:
        # a cold start (the first λ, after a failure, or every λ without ``warm``); then the
        # rows run without reference counting until the next cold start is due
        _cold_start(zbar, G, k, lams, i, tl, y)
        i = _path_rows(i, prob, par, out, work)
    ndoubt = int(np.count_nonzero(status == _PENDING))
    return Y, P, dist, gn, nit, status, ndoubt


@kernel()
def _cold_start(zbar, G, k, lams, i, tl, y):
    """Set the cold start y of row i of :func:`lam_path` (:func:`initial_y`); at i = 0 also tl.

    ``tl`` = log λ of every row, computed here (the compiled ``log``, the one the rows' code
    used when :func:`lam_path` was a kernel).
    """
    if i == 0:
        for r in range(lams.shape[0]):
            tl[r] = math.log(lams[r])
    initial_y(zbar, G, k, lams[i], y)


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
    Tn, tok, conv, W, M, scratch, y = work
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
        E, gnorm, quad, it, st, fac = _newton_core(zbar, G, GF, k, lam, y, tol, budget, W, M)
        if st != _OK and predicted and it < max_iter:
            for j in range(K):
                y[j] = Y[i - 1, j]
            E, gnorm, quad, it2, st, fac = _newton_core(
                zbar, G, GF, k, lam, y, tol, max_iter - it, W, M
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
        conv[i] = st == _OK
        if warm and st == _OK:
            if not fac:  # converged without a Newton step: factorise at the solution
                fac = _factor(G, p, lam, M, W[6], scratch) == _OK
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
        if st == _OK and not finite:
            st = _NUMERIC
        if st == _OK:
            if best != k:
                st = _NOT_TARGET
            elif not _path_row_certain(y, z, k, nrm, x0norm, absb, vmax, gamma):
                st = _PENDING
        status[i] = st
    return L
