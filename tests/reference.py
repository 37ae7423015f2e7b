"""Slow, obviously-correct references for every fast path (NumPy / SciPy / cvxpy / brute force).

Each section belongs to one model family. Keep the references independent of fastcf's own code:
they may use fastcf only to read a model's arrays, never its solvers.
"""

import numpy as np

# =====================================================================================
# Linear models: logistic and softmax (paper 000)
# =====================================================================================

# (end of linear section)


# =====================================================================================
# LVQ models (paper 001)
# =====================================================================================

def lvq_counterfactual_reference(
    prototypes, labels, x0, target, *, omega=None, metric="euclidean", weights=None,
    frozen=None, lo=None, hi=None, constraints=(), epsilon=1e-6,
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
    w = np.ones(D) if weights is None else np.asarray(weights, dtype=float)
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

# (end of SVM section)
