"""Small dense linear algebra of the kernels; every routine reports a status code, none raises.

- Cholesky factor/solve (:func:`cholesky_inplace`, :func:`cholesky_solve_inplace`) for the K×K
  systems λI + (PSD) of the softmax kernels, with K up to a few hundred: a hand-written Cholesky
  avoids the LAPACK call overhead and, unlike ``np.linalg.cholesky`` in Numba, never raises.
- LU with partial pivoting of a small square matrix, and its solves with B and Bᵀ
  (:func:`_lu_factor`, :func:`_lu_solve`, :func:`_lu_solve_t`): the basis of the region LP's dual
  simplex and the face systems of the entropy dual (:mod:`fastcf._kernels.l1`).
- Reassociated (SIMD) dot products :func:`dot`, :func:`dot_abs`.
- The linear models' cheap bound of the logits' rounding (:func:`need_of_norm`, per row
  :func:`need_bound`, rows :func:`need_bounds`): the one formula of
  ``fastcf._linear.model._LinearModel.need_bound``.
- The inverse of a small KKT matrix and its rank-one updates (:func:`invert`,
  :func:`inverse_remove`, :func:`inverse_add`: one index out / in), used by the active-set step
  of the SVM dual (:mod:`fastcf._kernels.smo`).
- Lawson & Hanson's non-negative least squares :func:`nnls` and least-distance program
  :func:`ldp` (its dual), the exact QP of the LVQ counterfactuals (:mod:`fastcf._kernels.lvq_qp`).
"""

import math

import numba
import numpy as np
from numba.core import types as _nbtypes

from fastcf._status import Status

from . import REASSOC, kernel

_OK = int(Status.OK)
_MAXITER = int(Status.MAXITER)
_INFEASIBLE = int(Status.INFEASIBLE)
_NUMERIC = int(Status.NUMERIC)


@kernel()
def cholesky_inplace(M, n):
    """Overwrite the lower triangle of ``M[:n, :n]`` with L, M = L Lᵀ.

    Returns OK, or NUMERIC if M is not (numerically) positive definite.
    """
    for j in range(n):
        s = M[j, j]
        for k in range(j):
            s -= M[j, k] * M[j, k]
        if not (s > 0.0) or not math.isfinite(s):
            return _NUMERIC
        d = math.sqrt(s)
        M[j, j] = d
        dinv = 1.0 / d  # one division per column instead of one per entry
        for i in range(j + 1, n):
            s = M[i, j]
            for k in range(j):
                s -= M[i, k] * M[j, k]
            M[i, j] = s * dinv
    return _OK


@kernel()
def cholesky_solve_inplace(L, b, n):
    """Solve L Lᵀ x = b in place (b becomes x), L from :func:`cholesky_inplace`."""
    # multiplications by 1/L_ii: the reciprocals do not depend on b, so the CPU computes them
    # off the chain of dependent updates that a division would lengthen. With the reciprocal
    # in the factorisation this took the λ-path kernel at (784, 10) from 117–126 to 107–109 µs
    # (an LDLᵀ without square roots measured no better); results differ from divisions by
    # rounding (≤ 1 ulp per operation), not in accuracy.
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * b[k]
        b[i] = s * (1.0 / L[i, i])
    for i in range(n - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, n):
            s -= L[k, i] * b[k]
        b[i] = s * (1.0 / L[i, i])


@kernel(fastmath=REASSOC)
def dot(a, b):
    """Return a·b."""
    # A reassociated loop (SIMD), not np.dot: inside Numba np.dot calls SciPy's OpenBLAS, whose
    # thread pool fights NumPy's for the cores (measured: 8 ms instead of 35 µs per call after
    # a NumPy BLAS call on this 2-core machine), and it would not be deterministic across
    # thread counts.
    acc = 0.0
    for i in range(a.shape[0]):
        acc += a[i] * b[i]
    return acc


@kernel()
def need_of_norm(nx, g, row_norm, abs_b):
    """Return ``8γ (row_norm · nx + abs_b)(1 + 8γ)``: the rounding-need bound at ‖x‖₂ ≤ nx.

    A bound of ``4γ (S_k + max_{j≠k} S_j)``, S_i = Σ_j |a_ij x_j| + |b_i|, by Cauchy–Schwarz (S_i ≤
    ‖a_i‖₂ ‖x‖₂ + |b_i|), with ``row_norm`` = max_i ‖a_i‖₂ and ``abs_b`` = max_i |b_i|; the
    factor 1 + 8γ covers the rounding of the bound's own evaluation (the norm's dot product of
    positive terms, its square root and these five operations). inf or NaN pass through.
    """
    return 8.0 * g * (row_norm * nx + abs_b) * (1 + 8 * g)


@kernel(callee=True)
def need_bound(x, g, row_norm, abs_b):
    """Return :func:`need_of_norm` of one row ``x`` (its ‖x‖₂ by :func:`dot`)."""
    return need_of_norm(math.sqrt(dot(x, x)), g, row_norm, abs_b)


@kernel()
def need_bounds(X, g, row_norm, abs_b):
    """Return :func:`need_bound` of each row of ``X``."""
    out = np.empty(X.shape[0])
    for n in range(X.shape[0]):
        out[n] = need_bound(X[n], g, row_norm, abs_b)
    return out


@kernel(fastmath=REASSOC, callee=True)
def dot_abs(a, b):
    """Return (a·b, |a|·|b|)."""
    d = 0.0
    t = 0.0
    for i in range(a.shape[0]):
        d += a[i] * b[i]
        t += abs(a[i] * b[i])
    return d, t


@kernel(callee=True)
def invert(M, m, Minv):
    """Minv[:m, :m] = inverse of M[:m, :m] (Gauss-Jordan, partial pivoting); False if singular."""
    A = M[:m, :m].copy()
    for i in range(m):
        for j in range(m):
            Minv[i, j] = 1.0 if i == j else 0.0
    scale = 0.0
    for i in range(m):
        for j in range(m):
            scale = max(scale, abs(A[i, j]))
    if scale == 0.0:
        return False
    for c in range(m):
        p = c
        for r in range(c + 1, m):
            if abs(A[r, c]) > abs(A[p, c]):
                p = r
        if abs(A[p, c]) <= 1e-11 * scale:
            return False
        if p != c:
            for j in range(m):
                tmp = A[c, j]
                A[c, j] = A[p, j]
                A[p, j] = tmp
                tmp = Minv[c, j]
                Minv[c, j] = Minv[p, j]
                Minv[p, j] = tmp
        piv = 1.0 / A[c, c]
        for j in range(m):
            A[c, j] *= piv
            Minv[c, j] *= piv
        for r in range(m):
            if r != c:
                fct = A[r, c]
                if fct != 0.0:
                    for j in range(m):
                        A[r, j] -= fct * A[c, j]
                        Minv[r, j] -= fct * Minv[c, j]
    return True


@kernel(callee=True)
def inverse_remove(Minv, m, p):
    """Inverse of the matrix without row/column p, from the inverse of the whole (size m).

    Row/column p is swapped with the last one first (the caller swaps its index lists the same
    way); the result occupies Minv[:m-1, :m-1]. Returns False if the pivot is ~0.
    """
    last = m - 1
    if p != last:
        for j in range(m):
            tmp = Minv[p, j]
            Minv[p, j] = Minv[last, j]
            Minv[last, j] = tmp
        for i in range(m):
            tmp = Minv[i, p]
            Minv[i, p] = Minv[i, last]
            Minv[i, last] = tmp
    d = Minv[last, last]
    if d == 0.0:
        return False
    for i in range(last):
        f = Minv[i, last] / d
        if f != 0.0:
            for j in range(last):
                Minv[i, j] -= f * Minv[last, j]
    return True


@kernel(callee=True)
def inverse_add(Minv, m, u, dnew, w):
    """Extend the inverse (size m) by one row/column [u; dnew] of the matrix (bordering).

    ``w`` is scratch of length >= m. Returns False when the Schur complement is ~0 (singular).
    """
    for i in range(m):
        s = 0.0
        for j in range(m):
            s += Minv[i, j] * u[j]
        w[i] = s
    schur = dnew
    size = abs(dnew)
    for i in range(m):
        schur -= u[i] * w[i]
        size += abs(u[i] * w[i])
    if abs(schur) <= 1e-10 * max(size, 1e-300):
        return False
    inv_s = 1.0 / schur
    for i in range(m):
        wi = w[i] * inv_s
        for j in range(m):
            Minv[i, j] += wi * w[j]
        Minv[i, m] = -wi
        Minv[m, i] = -wi
    Minv[m, m] = inv_s
    return True


# LAPACK's dgelsd as Numba's np.linalg.lstsq calls it (its helper library's wrapper, which
# finds the routine in SciPy's LAPACK): _lstsq below is that call without the rest of Numba's
# lstsq, whose copy of b is a slice assignment that compiles NumPy's shape-mismatch message
# (string formatting: 2 of the 3.5 s that lstsq took to compile, then linked into and optimised
# again by every kernel above it on the LVQ path)
try:  # (a private helper of Numba's: where a release lacks it, Numba's own lstsq below)
    from numba.np.linalg import _LAPACK

    _GELSD = _LAPACK().numba_ez_gelsd(_nbtypes.float64)
except Exception:  # pragma: no cover - every Numba from 0.58 to 0.68 has it
    _GELSD = None
_KIND = ord("d")


@kernel()
def _lstsq(a, b):
    """``np.linalg.lstsq(a, b)[0]`` for a C-contiguous 2-D ``a`` and a 1-D ``b``, bit for bit.

    The same LAPACK call (dgelsd, rcond = −1) on the same copies as Numba's ``lstsq``, and its
    errors: ``LinAlgError`` for an empty system or a non-finite entry, ``ValueError`` when the
    SVD does not converge.
    """
    m, n = a.shape
    if m == 0 or n == 0 or b.shape[0] == 0:
        raise np.linalg.LinAlgError("Arrays cannot be empty")
    if b.shape[0] != m:
        raise np.linalg.LinAlgError("Incompatible array sizes, system is not dimensionally valid.")
    for i in range(m):
        for j in range(n):
            if not np.isfinite(a[i, j]):
                raise np.linalg.LinAlgError("Array must not contain infs or NaNs.")
    for i in range(m):
        if not np.isfinite(b[i]):
            raise np.linalg.LinAlgError("Array must not contain infs or NaNs.")
    minmn = min(m, n)
    maxmn = max(m, n)
    acpy = np.asfortranarray(a)  # dgelsd overwrites its a and b
    bcpy = np.empty((1, maxmn)).T
    for i in range(m):
        bcpy[i, 0] = b[i]
    s = np.empty(minmn)
    rank = np.empty(1, dtype=np.int32)
    r = _GELSD(_KIND, m, n, 1, acpy.ctypes, m, bcpy.ctypes, maxmn, s.ctypes, -1.0, rank.ctypes)
    # (reads of acpy, s and rank after the call: they live until it returns)
    if r != 0 or rank[0] < 0 or acpy.shape[0] != m or s.shape[0] != minmn:
        raise ValueError("Internal algorithm failed to converge.")
    x = np.empty(n)
    for j in range(n):
        x[j] = bcpy[j, 0]
    return x


if numba.config.DISABLE_JIT or _GELSD is None:
    # run as Python (no external function to call), or a Numba without the helper: lstsq

    @kernel()
    def _lstsq(a, b):  # noqa: F811
        """``np.linalg.lstsq(a, b)[0]`` (NumPy's as Python; Numba's, the same call, compiled)."""
        return np.linalg.lstsq(a, b)[0]


@kernel()
def nnls(E, f, max_iter):
    """Lawson–Hanson NNLS: min ‖E v − f‖ s.t. v ≥ 0. Returns (v, n_iter, status)."""
    n, m = E.shape
    v = np.zeros(m)
    passive = np.zeros(m, dtype=np.bool_)
    # tolerance as in Lawson & Hanson / SciPy: 10 · eps · ‖E‖_1 · max(n, m)
    norm1 = 0.0
    for j in range(m):
        s = 0.0
        for i in range(n):
            s += abs(E[i, j])
        norm1 = max(norm1, s)
    tol = 10.0 * 2.220446049250313e-16 * norm1 * max(n, m)
    resid = f - E @ v
    w = E.T @ resid
    it = 0
    status = _OK
    blocked = np.zeros(m, dtype=np.bool_)
    while True:
        # most violated dual condition among the zero set
        t = -1
        best = tol
        for j in range(m):
            if not passive[j] and not blocked[j] and w[j] > best:
                best = w[j]
                t = j
        if t < 0:
            break
        if it >= max_iter:
            status = _MAXITER
            break
        passive[t] = True
        first = True
        while True:
            it += 1
            idx = np.flatnonzero(passive)
            if idx.size == 0:  # every variable left the passive set: v = 0 (lstsq of an empty
                v = np.zeros(m)  # matrix raises LinAlgError in Numba)
                break
            sub = np.ascontiguousarray(E[:, idx])
            sol = _lstsq(sub, f)
            s = np.zeros(m)
            for a in range(idx.size):
                s[idx[a]] = sol[a]
            if first and s[t] <= tol:
                # Lawson & Hanson's safeguard: the new column does not enter with a positive
                # coefficient (rounding, or a column dependent on the passive set); without it
                # the method cycles adding and dropping t. Block t until v changes.
                passive[t] = False
                blocked[t] = True
                break
            first = False
            ok = True
            for a in range(idx.size):
                if s[idx[a]] <= tol:
                    ok = False
                    break
            if ok:
                v = s
                break
            alpha = np.inf
            for a in range(idx.size):
                j = idx[a]
                if s[j] <= tol:
                    den = v[j] - s[j]
                    if den > 0:
                        alpha = min(alpha, v[j] / den)
            if not np.isfinite(alpha):
                alpha = 0.0
            for j in range(m):
                v[j] = v[j] + alpha * (s[j] - v[j])
            for a in range(idx.size):
                j = idx[a]
                if v[j] <= tol:
                    v[j] = 0.0
                    passive[j] = False
            if it >= max_iter:
                status = _MAXITER
                break
        if status != _OK:
            break
        if blocked[t]:
            continue  # v unchanged: try the next candidate
        blocked[:] = False
        resid = f - E @ v
        w = E.T @ resid
    return v, it, status


# ldp: rows with h_j < −_FAR max h are set aside first. Where h spans less than that, the
# scaled rows keep every positive h_j ≥ 1e-10, far above NNLS's tolerance (~1e-13 with ~60
# rows), and setting rows aside (copies of G's rows) only cost time: 1e6 made digits' GMLVQ
# batch 18 % slower with the same answers
_FAR = 1e10


@kernel()
def ldp(G, h, max_iter):
    """Min ½‖u‖² s.t. G u ≥ h. Returns (u, lam, n_iter, status); INFEASIBLE: no such u.

    The rows of G have unit norm. Where every h_j ≤ 0, u = 0 is the answer. Otherwise the rows
    with h_j < −10¹⁰ max h (met by every u shorter than 10¹⁰ max h) are set aside, the rest solved
    (:func:`_ldp_scaled`), and the answer kept if it meets them too; else every row is solved.
    Set aside, they no longer mix their scale into the NNLS's tolerance: a box row of −1 beside
    a prototype row of 1.75e-128 made that row's dual look like rounding, and the answer was
    u = 0, 1.75e-128 short of it (soak round T).
    """
    m, n = G.shape
    if m == 0:
        return np.zeros(n), np.zeros(0), 0, _OK
    hmax = -np.inf
    finite = True
    for j in range(m):
        hmax = max(hmax, h[j])
        finite = finite and math.isfinite(h[j])
    if finite and hmax <= 0.0:
        return np.zeros(n), np.zeros(m), 0, _OK
    nn = m
    if finite:
        nn = 0
        for j in range(m):
            nn += h[j] >= -_FAR * hmax
    if nn < m:
        near = np.empty(m, dtype=np.bool_)
        for j in range(m):
            near[j] = h[j] >= -_FAR * hmax
        idx = np.flatnonzero(near)
        u, lam_n, it, status = _ldp_scaled(
            np.ascontiguousarray(G[idx]), h[idx].copy(), hmax, max_iter
        )
        if status == _INFEASIBLE:  # rows of the problem already leave no u
            return u, np.zeros(m), it, status
        if status == _OK:
            ok = True
            for j in range(m):
                if not near[j]:
                    gu = 0.0
                    for i in range(n):
                        gu += G[j, i] * u[i]
                    ok = ok and gu >= h[j]
            if ok:
                lam = np.zeros(m)
                for a in range(idx.size):
                    lam[idx[a]] = lam_n[a]
                return u, lam, it, status
    sig = 0.0
    for j in range(m):
        sig = max(sig, abs(h[j]))
    if not (sig > 0.0 and sig < np.inf):
        sig = 1.0
    return _ldp_scaled(G, h, sig, max_iter)


@kernel()
def _ldp_scaled(G, h, sig, max_iter):
    """:func:`ldp` solved for h / ``sig`` (the LDP is positively homogeneous in h).

    Lawson & Hanson's reduction to NNLS. Scaled, the row hᵀ of E is of the scale of the unit
    rows of G; unscaled, E mixed rows of 1 with h ~ 10¹⁰ (prototypes of that scale), NNLS's
    tolerance followed h, and the tests below are absolute: every query was "infeasible" or a
    numerical failure at data of scale 10¹⁰ (3 of 20 already at 10⁵).
    """
    m, n = G.shape
    E = np.empty((n + 1, m))
    for j in range(m):
        for i in range(n):
            E[i, j] = G[j, i]
        E[n, j] = h[j] / sig
    f = np.zeros(n + 1)
    f[n] = 1.0
    v, it, status = nnls(E, f, max_iter)
    r = E @ v - f
    # r[n] = hᵀv − 1; the LDP is infeasible iff the NNLS residual vanishes
    denom = -r[n]
    if denom <= 1e-12:
        return np.zeros(n), np.zeros(m), it, _INFEASIBLE
    u = np.empty(n)
    for i in range(n):
        u[i] = r[i] / denom
    lam = v / denom
    # a posteriori check of G u ≥ h (rows have unit norm, so this is a distance), in the
    # scaled problem
    unorm = 0.0
    for i in range(n):
        unorm = max(unorm, abs(u[i]))
    viol = 0.0
    for j in range(m):
        gu = 0.0
        for i in range(n):
            gu += G[j, i] * u[i]
        viol = max(viol, h[j] / sig - gu)
    if viol > 1e-9 * max(1.0, unorm):
        # a tiny r[n] means E v ≈ f, i.e. the LDP is (numerically) infeasible
        return np.zeros(n), np.zeros(m), it, _INFEASIBLE if denom < 1e-6 else _NUMERIC
    for i in range(n):
        u[i] *= sig
    return u, lam * sig, it, status


@kernel(callee=True)
def _lu_factor(B, piv, n):
    """LU with partial pivoting of B[:n, :n] in place. Returns False when singular."""
    for k in range(n):
        p = k
        big = abs(B[k, k])
        for i in range(k + 1, n):
            if abs(B[i, k]) > big:
                big = abs(B[i, k])
                p = i
        piv[k] = p
        if big == 0.0:
            return False
        if p != k:
            for j in range(n):
                B[k, j], B[p, j] = B[p, j], B[k, j]
        for i in range(k + 1, n):
            f = B[i, k] / B[k, k]
            B[i, k] = f
            for j in range(k + 1, n):
                B[i, j] -= f * B[k, j]
    return True


@kernel(callee=True)
def _lu_solve(LU, piv, b, n):
    """Solve B x = b in place (b becomes x) from :func:`_lu_factor`."""
    for k in range(n):
        p = piv[k]
        if p != k:
            b[k], b[p] = b[p], b[k]
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= LU[i, j] * b[j]
        b[i] = s
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s -= LU[i, j] * b[j]
        b[i] = s / LU[i, i]


@kernel(callee=True)
def _lu_solve_t(LU, piv, b, n):
    """Solve Bᵀ x = b in place from :func:`_lu_factor` (P B = L U, so Bᵀ = Uᵀ Lᵀ P)."""
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= LU[j, i] * b[j]
        b[i] = s / LU[i, i]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s -= LU[j, i] * b[j]
        b[i] = s
    for k in range(n - 1, -1, -1):
        p = piv[k]
        if p != k:
            b[k], b[p] = b[p], b[k]
