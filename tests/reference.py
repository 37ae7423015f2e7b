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


def svm_fit_subset_ref(X, y_pm, subset, C, kernel="linear", gamma=1.0, coef0=0.0, degree=3,
                       tol=1e-10):
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
        svc = SVC(kernel=kernel, C=C, gamma=gamma, coef0=coef0, degree=degree, tol=tol,
                  max_iter=20_000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            svc.fit(X[subset], y_pm[subset])
        if svc.fit_status_ == 0 or tol >= 1e-6:
            break
        tol *= 100.0
    alpha[subset[svc.support_]] = np.abs(svc.dual_coef_[0])
    return alpha, float(svc.intercept_[0])


def svm_brute_force_ref(X, y_pm, C, kernel="linear", gamma=1.0, coef0=0.0, degree=3,
                        support_tol=0.0):
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
