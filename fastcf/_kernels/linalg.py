"""Small dense linear algebra for K×K systems: Cholesky factor/solve that return a status code.

The matrices here are λI + (PSD), with K up to a few hundred; a hand-written Cholesky avoids the
LAPACK call overhead and, unlike ``np.linalg.cholesky`` in Numba, never raises.
"""

import math

from . import REASSOC, kernel


@kernel()
def cholesky_inplace(M, n):
    """Overwrite the lower triangle of ``M[:n, :n]`` with L, M = L Lᵀ.

    Returns 0, or 4 if M is not (numerically) positive definite.
    """
    for j in range(n):
        s = M[j, j]
        for k in range(j):
            s -= M[j, k] * M[j, k]
        if not (s > 0.0) or not math.isfinite(s):
            return 4
        d = math.sqrt(s)
        M[j, j] = d
        dinv = 1.0 / d  # one division per column instead of one per entry
        for i in range(j + 1, n):
            s = M[i, j]
            for k in range(j):
                s -= M[i, k] * M[j, k]
            M[i, j] = s * dinv
    return 0


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


@kernel(fastmath=REASSOC)
def dot_abs(a, b):
    """Return (a·b, |a|·|b|)."""
    d = 0.0
    t = 0.0
    for i in range(a.shape[0]):
        d += a[i] * b[i]
        t += abs(a[i] * b[i])
    return d, t
