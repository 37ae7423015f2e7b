"""The closest point of the target's region (``region=True``): the dual QP of :func:`region_dual`.

Also the cold start of :func:`~fastcf._kernels.softmax.core.initial_y` (margin 0: the closest
point where the target ties with the best class).
"""

import numpy as np

from fastcf._status import Status

from .. import kernel
from .._batch import batch
from ..linalg import cholesky_inplace, cholesky_solve_inplace

_OK = int(Status.OK)
_MAXITER = int(Status.MAXITER)
_PENDING = int(Status.PENDING)


@kernel()
def region_dual(zbar, G, k, margin, tol, max_iter, nu):
    """Closest point (in the metric of G) with z_k − z_j ≥ margin for all j ≠ k.

    Primal: min ½‖x − x̄‖²_W s.t. (a_k − a_j)·x + b_k − b_j ≥ margin. With x = x̄ + V Dᵀ ν
    (rows of D: a_k − a_j), the dual is the (K−1)-variable QP

        max_{ν ≥ 0}  cᵀν − ½ νᵀ Q ν,   Q = D V Dᵀ,  c_j = margin − (z̄_k − z̄_j),

    with Q_ij = G_kk − G_kj − G_ik + G_ij read off G. Solved exactly by an active-set method
    (Lawson–Hanson style: add the most violated dual constraint, solve the equality-constrained
    subproblem by Cholesky, step back to feasibility, drop indices that reach 0).

    ``nu`` (K,) receives the multipliers (nu[k] = 0); the step in y-coordinates is y = −ν except
    y_k = Σν. Returns (nit, status): OK optimal, MAXITER iteration limit, PENDING (Q_PP became
    singular: Q has rank < K − 1, and the row needs a rank-revealing solve, done in Python by
    :func:`fastcf._linear.softmax.region_singular`; ν is then 0).
    """
    K = zbar.shape[0]
    m = K - 1
    # ν = 0 (x = x̄) unless a solution is found: the infeasible returns below leave it so (they
    # used to leave the caller's np.empty garbage, a different "answer" on every call; soak)
    for j in range(K):
        nu[j] = 0.0
    idx = np.empty(m, dtype=np.int64)
    t = 0
    for j in range(K):
        if j != k:
            idx[t] = j
            t += 1
    Q = np.empty((m, m))
    c = np.empty(m)
    for a in range(m):
        ja = idx[a]
        c[a] = margin - (zbar[k] - zbar[ja])
        for b in range(m):
            jb = idx[b]
            Q[a, b] = G[k, k] - G[k, jb] - G[ja, k] + G[ja, jb]
    scale = 1.0
    for a in range(m):
        scale = max(scale, abs(Q[a, a]))
    x = np.zeros(m)
    inP = np.zeros(m, dtype=np.bool_)
    wgrad = np.empty(m)
    s = np.empty(m)
    L = np.empty((m, m))
    Pidx = np.empty(m, dtype=np.int64)
    nit = 0
    status = _MAXITER
    for outer in range(max_iter):
        nit = outer
        # dual gradient w = c − Q x
        # a margin is violated when its dual gradient is positive beyond ``tol`` relative to
        # the terms it is computed from (its rounding). The threshold used to be absolute,
        # tol·max(1, max Q_aa): with rows of norm 10⁴ (Q ~ 10⁸) x̄ that lost by 10⁻⁵ passed
        # for meeting margin 10⁻⁶, and every re-solve returned it (a numerical failure)
        best = -1
        bestv = 0.0
        for a in range(m):
            acc = c[a]
            mag = abs(c[a])
            for b in range(m):
                acc -= Q[a, b] * x[b]
                mag += abs(Q[a, b] * x[b])
            wgrad[a] = acc
            if not inP[a] and acc > tol * mag and acc > bestv:
                bestv = acc
                best = a
        if best < 0:
            status = _OK
            break
        inP[best] = True
        for _inner in range(m + 1):
            # an int64 from the start: a literal 0 here made Numba compile the two Cholesky
            # kernels a second time, for Literal[int](0), while it was still typing this loop
            nP = np.int64(0)
            for a in range(m):
                if inP[a]:
                    Pidx[nP] = a
                    nP += 1
            for a in range(nP):
                s[a] = c[Pidx[a]]
                for b in range(nP):
                    L[a, b] = Q[Pidx[a], Pidx[b]]
            # a (numerically) singular Q_PP: rank(Q) < K − 1 (fewer free directions than
            # classes, e.g. frozen features). Not a proof of infeasibility (dependent rows can
            # be met together): PENDING hands the row to the rank-revealing solver in Python
            # (fastcf._linear.softmax.region_singular)
            if cholesky_inplace(L, nP) != _OK:
                return nit, _PENDING
            pivot_min = np.inf
            pivot_max = 0.0
            for a in range(nP):
                pivot_min = min(pivot_min, L[a, a] * L[a, a])
                pivot_max = max(pivot_max, L[a, a] * L[a, a])
            if pivot_min <= 1e-13 * max(pivot_max, scale):
                return nit, _PENDING
            cholesky_solve_inplace(L, s, nP)
            allpos = True
            for a in range(nP):
                if s[a] <= 0.0:
                    allpos = False
            if allpos:
                for a in range(m):
                    x[a] = 0.0
                for a in range(nP):
                    x[Pidx[a]] = s[a]
                break
            # step from x towards s until the first coordinate hits 0
            step = 1.0
            for a in range(nP):
                ia = Pidx[a]
                if s[a] <= 0.0:
                    denom = x[ia] - s[a]
                    if denom > 0.0:
                        step = min(step, x[ia] / denom)
            for a in range(nP):
                ia = Pidx[a]
                x[ia] = x[ia] + step * (s[a] - x[ia])
                if x[ia] <= 1e-300 or (s[a] <= 0.0 and x[ia] <= 1e-15 * max(1.0, abs(s[a]))):
                    x[ia] = 0.0
                    inP[ia] = False
    for j in range(K):
        nu[j] = 0.0
    for a in range(m):
        nu[idx[a]] = x[a]
    return nit, status


@kernel(inline="always")
def _region_row(zbar, G, k, margin, tol, max_iter, y):
    K = zbar.shape[0]
    nu = np.empty(K)
    nit, status = region_dual(zbar, G, k, margin, tol, max_iter, nu)
    s = 0.0
    for j in range(K):
        y[j] = -nu[j]
        s += nu[j]
    y[k] = s
    return nit, status


@kernel()
def _region_batch_row(n, Zbar, G, ks, margins, tol, max_iter, out):
    Y, nit, status = out
    nit[n], status[n] = _region_row(Zbar[n], G, ks[n], margins[n], tol, max_iter, Y[n])


@kernel(inline="always")
def _region_batch_out(args):
    N, K = args[0].shape  # Zbar
    Y = np.empty((N, K))  # every entry is written by _region_row
    nit = np.empty(N, dtype=np.int64)
    status = np.empty(N, dtype=np.int64)
    return Y, nit, status


_region = batch(_region_batch_row, _region_batch_out)


def region_batch(Zbar, G, ks, margins, tol, max_iter, parallel):
    """region_dual for N queries: returns (Y, nit, status) with y = −ν, y_k = Σ ν.

    ``parallel``: over the rows, on the batch threads; otherwise in the calling thread (the
    same row code, so the same bits).
    """
    return _region(parallel, Zbar, G, ks, margins, tol, max_iter)
