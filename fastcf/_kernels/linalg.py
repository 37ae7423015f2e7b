"""Small dense linear algebra for K×K systems: Cholesky factor/solve that return a status code.

The matrices here are λI + (PSD), with K up to a few hundred; a hand-written Cholesky avoids the
LAPACK call overhead and, unlike ``np.linalg.cholesky`` in Numba, never raises.
"""

import math

from . import kernel


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
        for i in range(j + 1, n):
            s = M[i, j]
            for k in range(j):
                s -= M[i, k] * M[j, k]
            M[i, j] = s / d
    return 0


@kernel()
def cholesky_solve_inplace(L, b, n):
    """Solve L Lᵀ x = b in place (b becomes x), L from :func:`cholesky_inplace`."""
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * b[k]
        b[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, n):
            s -= L[k, i] * b[k]
        b[i] = s / L[i, i]
