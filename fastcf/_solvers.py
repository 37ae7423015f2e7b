"""D-dimensional solvers of problem (2) for softmax models.

The paper's Woodbury Newton and the first-order references (SciPy's L-BFGS-B and CG, gradient
descent with Armijo backtracking).

These work on x ∈ R^D directly (O(DK) per iteration) and exist for comparison, benchmarks and the
reproduction of the paper's figures; the production path is the K-dimensional Newton of
:mod:`fastcf._kernels.softmax`.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize

from ._kernels.linalg import cholesky_inplace, cholesky_solve_inplace


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
        z = self.logits(x)
        m = z.max()
        e = np.exp(z - m)
        s = e.sum()
        p = e / s
        nll = m + np.log(s) - z[self.k]
        d = x - self.x0
        E = 0.5 * self.lam * float(np.dot(self.wt * d, d)) + nll
        pe = p.copy()
        pe[self.k] -= 1.0
        g = self.lam * self.wt * d + self.A.T @ pe
        g[~self.free] = 0.0
        return E, g, p

    def value(self, x):
        z = self.logits(x)
        m = z.max()
        d = x - self.x0
        return (
            0.5 * self.lam * float(np.dot(self.wt * d, d))
            + m
            + np.log(np.exp(z - m).sum())
            - z[self.k]
        )


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
    status, nit = 1, 0
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
            status, nit = 0, it
            break
        if it == max_iter or not np.isfinite(gnorm):
            nit = it
            status = 1 if np.isfinite(gnorm) else 4
            break
        sp = np.sqrt(p)
        L = np.ascontiguousarray(lam * np.eye(K) + sp[:, None] * Gk * sp[None, :])
        if cholesky_inplace(L, K) != 0:
            status, nit = 4, it
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
            # by λ); stop and report ‖∇E‖ with status 4
            status, nit = 4, it
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
    res = scipy.optimize.minimize(
        fun, x[free].copy(), jac=True, method=meth, options=opts, callback=callback, **kwargs
    )
    x[free] = res.x
    E, g, _ = prob.value_grad(x)
    if bounds is not None:
        lo, hi = bounds
        g = np.where((x <= lo) & (g > 0), 0.0, g)
        g = np.where((x >= hi) & (g < 0), 0.0, g)
    gnorm = float(np.linalg.norm(g))
    status = 0 if gnorm <= tol else (1 if res.nit >= max_iter else 4)
    return x, int(res.nit), status, gnorm, {"E": hist, "scipy_message": str(res.message)}


def gradient_descent(prob: SoftmaxProblem, x_init=None, tol=1e-10, max_iter=1000, c1=1e-4, rho=0.5):
    """Run steepest descent with Armijo backtracking (slides 002).

    Returns x, nit, status, gnorm, info.
    """
    x = prob.x0.copy() if x_init is None else np.array(x_init, dtype=np.float64)
    E, g, _ = prob.value_grad(x)
    alpha = 1.0
    hist = [E]
    status, nit = 1, max_iter
    for it in range(max_iter):
        gn2 = float(g @ g)
        if np.sqrt(gn2) <= tol:
            status, nit = 0, it
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
            status, nit = 4, it
            break
        x = xn
        E, g, _ = prob.value_grad(x)
        hist.append(E)
    return x, nit, status, float(np.linalg.norm(g)), {"E": hist}
