"""D-dimensional reference solvers of problem (2) and the one softmax energy (paper 000, §3).

``method="woodbury" | "lbfgs" | "cg" | "gd"`` of :meth:`fastcf.LinearExplainer.explain`: the
paper's Woodbury Newton (Theorem 3.6) and the first-order references (SciPy's L-BFGS-B and CG,
gradient descent with Armijo backtracking, slides 002). These work on x ∈ R^D directly (O(DK) per
iteration) and exist for comparison, benchmarks and the reproduction of the paper's figures; the
production path is the K-dimensional Newton of :mod:`fastcf._kernels.softmax`.

Their energy is :func:`fastcf._linear.model.softmax_energy` (re-exported here), the one
implementation in Python of the energy of problem (2), which the boxed Newton method
(:mod:`fastcf._linear.boxed`) and the benchmarks (:mod:`fastcf.bench.linear`) share.
"""

from __future__ import annotations

import numpy as np

from .._kernels.linalg import cholesky_inplace, cholesky_solve_inplace
from .._status import Status
from .model import softmax_energy
from .verify import Raw

__all__ = [
    "SoftmaxProblem",
    "gradient_descent",
    "lam_reference",
    "scipy_method",
    "softmax_energy",
    "woodbury_newton",
]


class SoftmaxProblem:
    """E(x) = λ/2 ‖x − x̄‖²_W − log p_k(Ax + b) over the free features.

    Parameters
    ----------
    A : (K, D), b : (K,), x0 : (D,), k : int, lam : float
    wt : (D,) metric weights (1 for Euclidean)
    free : (D,) bool, features allowed to move
    """

    def __init__(self, A, b, x0, k, lam, wt, free):
        self.A, self.b, self.x0, self.k, self.lam = A, b, x0, int(k), float(lam)
        self.wt = wt
        self.free = free
        self.v = np.where(free, 1.0 / wt, 0.0)
        self.nfev = 0

    def logits(self, x):
        return self.A @ x + self.b

    def value_grad(self, x):
        self.nfev += 1
        return softmax_energy(self.A, self.b, self.x0, self.k, self.lam, x, self.wt, self.free)

    def value(self, x):
        A, b, x0, k, lam, wt, free = self.A, self.b, self.x0, self.k, self.lam, self.wt, self.free
        return softmax_energy(A, b, x0, k, lam, x, wt, free, grad=False)


def woodbury_newton(prob: SoftmaxProblem, G_V, x_init=None, tol=1e-10, max_iter=100, rho=0.8):
    """Run the paper's Newton method in R^D (Theorem 3.6), backtracking from α = 1 by ρ.

    The Newton direction uses the Woodbury identity for H₀ = λW + Āᵀ diag(p) Ā and then
    Sherman–Morrison for the rank-one term −v vᵀ, v = Āᵀ p, never forming a D×D matrix.
    Paper typo: Theorem 3.6 prints H⁻¹ with (Ā Āᵀ + λ diag(p))⁻¹; the Woodbury identity (and the
    paper's own text below the theorem) gives (Ā Āᵀ + λ diag(p)⁻¹)⁻¹. We use the algebraically
    identical diag(√p)(λI + diag(√p) Ā V Āᵀ diag(√p))⁻¹ diag(√p), which needs no 1/p_j.
    The backtracking accepts the first α with E(x + αΔ) < E(x), as published (Appendix C).

    Returns
    -------
    x, nit, status, gnorm, info (dict with "trials" per iteration and "E" history)
    """
    A, k, lam, v = prob.A, prob.k, prob.lam, prob.v
    K = A.shape[0]
    # Ā_k V Ā_kᵀ from G_V = A V Aᵀ in O(K²): rows of Ā_k are a_j − a_k
    Gk = G_V - G_V[k][None, :] - G_V[:, k][:, None] + G_V[k, k]
    x = prob.x0.copy() if x_init is None else np.array(x_init, dtype=np.float64)
    E, g, p = prob.value_grad(x)
    trials, hist = [], [E]
    status, nit = Status.MAXITER, 0
    info_msg = None

    def H0_inv(u, sp):
        # (1/λ)(V u − V Āᵀ √P M⁻¹ √P Ā V u)
        Vu = v * u
        Abar_Vu = A @ Vu
        Abar_Vu -= Abar_Vu[k]
        rhs = sp * Abar_Vu
        sol = rhs.copy()
        cholesky_solve_inplace(L, sol, K)
        t = sp * sol
        # Āᵀ t = Aᵀ t − a_k (Σ t)
        back = A.T @ t - A[k] * t.sum()
        return (Vu - v * back) / lam

    for it in range(max_iter + 1):
        gnorm = float(np.linalg.norm(g))
        if gnorm < tol:
            status, nit = Status.OK, it
            break
        if it == max_iter or not np.isfinite(gnorm):
            nit = it
            status = Status.MAXITER if np.isfinite(gnorm) else Status.NUMERIC
            break
        sp = np.sqrt(p)
        L = np.ascontiguousarray(lam * np.eye(K) + sp[:, None] * Gk * sp[None, :])
        if cholesky_inplace(L, K) != Status.OK:
            status, nit = Status.NUMERIC, it
            info_msg = "Cholesky factorisation of the K×K Woodbury matrix failed"
            break
        pe = p.copy()
        pe[k] -= 1.0
        vvec = A.T @ p - A[k]  # v = Ā_kᵀ p
        vvec[~prob.free] = 0.0
        Hg = H0_inv(g, sp)
        Hv = H0_inv(vvec, sp)
        denom = 1.0 - float(vvec @ Hv)
        step = -(Hg + Hv * (float(vvec @ Hg) / denom))
        # at the rounding level of E a decrease cannot be observed: there the unit Newton step
        # is taken as long as E does not grow beyond rounding (a departure from the published
        # rule, needed to reach ‖∇E‖ ≤ 1e-10 instead of stalling)
        tiny = abs(float(g @ step)) <= 8 * np.finfo(float).eps * max(1.0, abs(E))
        alpha, ntry, accepted = 1.0, 0, False
        while ntry < 60:
            ntry += 1
            xn = x + alpha * step
            En = prob.value(xn)
            if En < E or (tiny and En <= E + 16 * np.finfo(float).eps * abs(E)):
                accepted = True
                break
            alpha *= rho
        trials.append(ntry)
        if not accepted:
            # 60 trials (α ≈ 1.5e−6) without a decrease: near the optimum this is the rounding
            # level of the published direction (its Woodbury form cancels O(1) terms and divides
            # by λ); stop and report ‖∇E‖ with status NUMERIC
            status, nit = Status.NUMERIC, it
            info_msg = "line search stalled at the rounding level of the Woodbury direction"
            break
        x = xn
        E, g, p = prob.value_grad(x)
        hist.append(E)
    info = {"trials": trials, "E": hist}
    if info_msg:
        info["message"] = info_msg
    return x, nit, status, float(np.linalg.norm(g)), info


def scipy_method(prob: SoftmaxProblem, method, x_init=None, tol=1e-10, max_iter=1000, bounds=None):
    """L-BFGS-B or CG from SciPy on the free features. Returns x, nit, status, gnorm, info."""
    free = np.flatnonzero(prob.free)
    x = prob.x0.copy() if x_init is None else np.array(x_init, dtype=np.float64)
    hist = []

    def fun(xf):
        x[free] = xf
        E, g, _ = prob.value_grad(x)
        return E, g[free]

    def callback(xk, *args):
        hist.append(fun(xk)[0])

    # L-BFGS-B tests the max-norm of the projected gradient: gtol/√n implies ‖g‖₂ ≤ tol
    import scipy.optimize  # here, not at import: most of the import time of the package

    opts = {"maxiter": max_iter, "gtol": tol / np.sqrt(max(free.size, 1))}
    kwargs = {}
    if method == "lbfgs":
        meth = "L-BFGS-B"
        opts.update(ftol=0.0, maxcor=10)
        if bounds is not None:
            kwargs["bounds"] = list(zip(bounds[0][free], bounds[1][free], strict=True))
    else:
        meth = "CG"
        opts.update(norm=2.0)
    nit = 0
    # SciPy stops with "precision loss" when its line search cannot meet the Wolfe conditions
    # (CG near the optimum, at gtol ~1e-9: seen with SciPy 1.10 and 1.17 on some machines).
    # A restart from that point resets the conjugate direction (a steepest-descent step) and
    # often gets the last digits; at most 5 restarts, within max_iter in all.
    for _restart in range(6):
        res = scipy.optimize.minimize(
            fun, x[free].copy(), jac=True, method=meth, options=opts, callback=callback, **kwargs
        )
        x[free] = res.x
        nit += int(res.nit)
        gnorm = _projected_gnorm(prob, x, bounds)
        if gnorm <= tol or nit >= max_iter or res.status != 2:  # 2: precision loss
            break
        opts["maxiter"] = max_iter - nit
    info = {"E": hist, "scipy_message": str(res.message)}
    if gnorm > tol and nit < max_iter and bounds is None:
        # SciPy stopped above tol within max_iter: CG with "precision loss", L-BFGS-B (SciPy
        # 1.10) with "REL_REDUCTION_OF_F <= FACTR*EPSMCH" although ftol=0 (E did not decrease
        # at all). Either way the line search compares values of E, and a step that lowers E
        # by ‖g‖²/(2L) is invisible once that is below E's rounding (‖g‖ ≲ √(2 L ε |E|), ~4e-8
        # here on some machines). The polish below continues with conjugate gradients, but
        # finds each step from the directional derivative, which stays accurate there (the
        # "approximate Wolfe" remedy of Hager & Zhang's CG_DESCENT).
        polish = _cg_polish(prob, x, tol, max_iter - nit)
        nit += polish
        info["polish_nit"] = polish
        gnorm = _projected_gnorm(prob, x, bounds)
    status = Status.OK if gnorm <= tol else (Status.MAXITER if nit >= max_iter else Status.NUMERIC)
    return x, nit, status, gnorm, info


def _projected_gnorm(prob, x, bounds):
    """‖∇E‖₂ on the free features (the box's active bounds projected out)."""
    _E, g, _ = prob.value_grad(x)
    g = g[prob.free]
    if bounds is not None:
        xf, lo, hi = x[prob.free], bounds[0][prob.free], bounds[1][prob.free]
        g = np.where((xf <= lo) & (g > 0), 0.0, g)
        g = np.where((xf >= hi) & (g < 0), 0.0, g)
    return float(np.linalg.norm(g))


def _cg_polish(prob, x, tol, max_iter):
    """Polak–Ribière⁺ CG on the free features of ``x`` (in place) with a derivative line search.

    Each step size solves φ'(α) = ∇E(x + α d)·d = 0 by the secant method (to |φ'(α)| ≤
    0.1 |φ'(0)|, at most 20 evaluations), never comparing values of E. Returns the iterations.
    """
    free = prob.free
    g = prob.value_grad(x)[1][free]
    d = -g
    it = 0
    while it < max_iter and float(np.linalg.norm(g)) > tol:
        it += 1
        d0 = float(g @ d)
        if not d0 < 0.0:  # not a descent direction: restart along −g
            d = -g
            d0 = float(g @ d)
        xf = x[free].copy()

        def dphi(a, xf=xf, d=d):
            x[free] = xf + a * d
            return float(prob.value_grad(x)[1][free] @ d)

        a0, f0 = 0.0, d0
        a1 = float(np.linalg.norm(g) / max(np.linalg.norm(d), 1e-300)) * 1e-2
        a1 = a1 if a1 > 0.0 else 1.0
        f1 = dphi(a1)
        while f1 < 0.0 and a1 < 1e12:  # bracket the zero of φ'
            a0, f0, a1 = a1, f1, 4.0 * a1
            f1 = dphi(a1)
        a = a1
        for _ in range(20):
            a = a1 - f1 * (a1 - a0) / (f1 - f0) if f1 != f0 else 0.5 * (a0 + a1)
            fa = dphi(a)
            if abs(fa) <= 0.1 * abs(d0):
                break
            if fa < 0.0:
                a0, f0 = a, fa
            else:
                a1, f1 = a, fa
        x[free] = xf + a * d
        g_new = prob.value_grad(x)[1][free]
        beta = max(0.0, float(g_new @ (g_new - g)) / max(float(g @ g), 1e-300))
        d = -g_new + beta * d
        g = g_new
    return it


def gradient_descent(prob: SoftmaxProblem, x_init=None, tol=1e-10, max_iter=1000, c1=1e-4, rho=0.5):
    """Run steepest descent with Armijo backtracking (slides 002).

    Returns x, nit, status, gnorm, info.
    """
    x = prob.x0.copy() if x_init is None else np.array(x_init, dtype=np.float64)
    E, g, _ = prob.value_grad(x)
    alpha = 1.0
    hist = [E]
    status, nit = Status.MAXITER, max_iter
    for it in range(max_iter):
        gn2 = float(g @ g)
        if np.sqrt(gn2) <= tol:
            status, nit = Status.OK, it
            break
        alpha = min(alpha * 2.0, 1e6)
        tiny = 8 * np.finfo(float).eps * max(1.0, abs(E))
        for _ in range(100):
            xn = x - alpha * g
            En = prob.value(xn)
            # Armijo; below the rounding level of E a decrease cannot be seen: accept a step
            # that does not increase E beyond rounding
            if En <= E - c1 * alpha * gn2 or (alpha * gn2 <= tiny and En <= E + tiny):
                break
            alpha *= rho
        else:
            status, nit = Status.NUMERIC, it
            break
        x = xn
        E, g, _ = prob.value_grad(x)
        hist.append(E)
    return x, nit, status, float(np.linalg.norm(g)), {"E": hist}


def lam_reference(model, X, tidx, m, w, fmask, boxes, lams, method, tol, max_iter):
    """Problem (2) for N queries by a reference ``method``, one query at a time, in R^D.

    ``w``: the weights (or ``None``), ``fmask``: the frozen features, ``boxes``: the box of each
    row (:func:`fastcf._linear.boxed.row_boxes`) or None. Works for both families
    (on the softmax form of a binary model). Returns the raw answers
    (:class:`~fastcf._linear.verify.Raw`), the diagnostics of each query in
    ``info["per_query"]``; the route finishes them (:func:`fastcf._linear.verify.finish`).
    """
    if boxes is not None and method != "lbfgs":
        raise ValueError(
            f"bounds are supported by method='auto'/'reduced' (exact) and 'lbfgs' "
            f"(L-BFGS-B); got method={method!r}"
        )
    N, D = X.shape
    Xs = np.empty_like(X)
    nit = np.zeros(N, dtype=np.int64)
    status = np.zeros(N, dtype=np.int64)
    infos = []
    wt1 = np.ones(D) if w is None else w
    for n in range(N):
        prob = SoftmaxProblem(model.A, model.b, X[n], int(tidx[n]), float(lams[n]), wt1, ~fmask)
        if method == "woodbury":
            xs, it, st, _g, info = woodbury_newton(prob, m.GV, tol=tol, max_iter=max_iter)
        elif method in ("lbfgs", "cg"):
            xs, it, st, _g, info = scipy_method(
                prob,
                method,
                tol=tol,
                max_iter=max(max_iter, 1000),
                bounds=None if boxes is None else boxes[n],
            )
        else:
            xs, it, st, _g, info = gradient_descent(prob, tol=tol, max_iter=max(max_iter, 1000))
        Xs[n], nit[n], status[n] = xs, it, st
        infos.append(info)
    return Raw(Xs, nit, status, lams, method, {"per_query": infos})
