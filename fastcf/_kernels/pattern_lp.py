"""The closest point of one activation pattern's polytope (Manhattan): a small dense LP.

The incumbent of a network query (:mod:`fastcf._net.incumbent`) solves a few linear programs a
query, each a few dozen rows over 2D bounded columns, where HiGHS's fixed cost per call (a
hundred microseconds and more) is most of the time:

    min c·v  s.t.  M v ≥ r,  0 ≤ v ≤ u

(v = (p, n), the moves x = x̄ + p − n; c = (w, w) ≥ 0). With a surplus s = M v − r ≥ 0 per row,
the all-surplus basis at v = 0 is dual feasible (c ≥ 0), so a dual simplex on the dense tableau
``B⁻¹ [M, −I]`` solves it: the most infeasible basic variable leaves toward its violated bound,
the entering column is the dual ratio test's (ties: the largest pivot), nonbasic columns rest at
either bound. :func:`pattern_lp` returns a status; the caller falls back to HiGHS where it is
not OK and judges every answer by the network itself.
"""

import numpy as np

from fastcf._status import Status

from . import kernel

_OK = int(Status.OK)
_INFEASIBLE = int(Status.INFEASIBLE)
_MAXITER = int(Status.MAXITER)

_PIVOT = 1e-9  # relative pivot tolerance (of the pivot row's largest entry)
_PRIMAL = 1e-12  # relative primal feasibility tolerance (of the rows' scale)


@kernel()
def pattern_lp(M, r, c, u, v):
    """Solve ``min c·v, M v ≥ r, 0 ≤ v ≤ u`` (c ≥ 0) into ``v``; return ``(status, nit)``.

    Status: OK (``v`` optimal), INFEASIBLE (no such v, to the tolerances), MAXITER (no
    answer: the iteration limit, or a pivot too small).
    """
    m, n = M.shape
    N = n + m
    T = np.zeros((m, N))  # the tableau B⁻¹ [M, −I] (rows: the basic variables)
    beta = np.empty(m)  # B⁻¹ r
    scale = 1.0
    for i in range(m):
        for j in range(n):
            T[i, j] = -M[i, j]
        T[i, n + i] = 1.0
        beta[i] = -r[i]
        if abs(r[i]) > scale:
            scale = abs(r[i])
    for j in range(n):
        v[j] = 0.0
    tol = _PRIMAL * scale
    basis = np.empty(m, dtype=np.int64)
    for i in range(m):
        basis[i] = n + i
    at_upper = np.zeros(N, dtype=np.bool_)  # a nonbasic column at its upper bound
    is_basic = np.zeros(N, dtype=np.bool_)
    for i in range(m):
        is_basic[n + i] = True
    d = np.zeros(N)  # reduced costs
    for j in range(n):
        d[j] = c[j]
    xb = np.empty(m)
    for it in range(50 * (m + n) + 50):
        # the basic variables' values: β − Σ T[:, j] x_j over the nonbasic at their upper bound
        for i in range(m):
            xb[i] = beta[i]
        for j in range(n):
            if at_upper[j]:
                for i in range(m):
                    xb[i] -= T[i, j] * u[j]
        # the leaving row: the largest violation of a basic variable's bounds
        p = -1
        worst = tol
        low = True
        for i in range(m):
            k = basis[i]
            if xb[i] < -worst:
                p, worst, low = i, -xb[i], True
            elif k < n and xb[i] - u[k] > worst:
                p, worst, low = i, xb[i] - u[k], False
        if p < 0:
            for i in range(m):
                k = basis[i]
                if k < n:
                    v[k] = min(max(xb[i], 0.0), u[k])
            for j in range(n):
                if not is_basic[j]:
                    v[j] = u[j] if at_upper[j] else 0.0
            return _OK, it
        # the entering column: the dual ratio test over the columns that move x_p toward its
        # violated bound (raise it: T[p, j] < 0 at the lower bound, > 0 at the upper one)
        big = 0.0
        for j in range(N):
            if not is_basic[j] and abs(T[p, j]) > big:
                big = abs(T[p, j])
        q = -1
        best = np.inf
        piv = 0.0
        for j in range(N):
            if is_basic[j]:
                continue
            a = T[p, j]
            if abs(a) <= _PIVOT * big:
                continue
            if j < n and u[j] <= 0.0:
                continue  # (a column fixed at 0: no room)
            up = at_upper[j]
            if low:
                ok = (a < 0.0 and not up) or (a > 0.0 and up)
            else:
                ok = (a > 0.0 and not up) or (a < 0.0 and up)
            if not ok:
                continue
            ratio = abs(d[j]) / abs(a)
            if ratio < best or (ratio == best and abs(a) > piv):
                q, best, piv = j, ratio, abs(a)
        if q < 0:
            return _INFEASIBLE, it
        # pivot: x_q enters row p; the leaving variable rests at the bound it violated
        leave = basis[p]
        a = T[p, q]
        for j in range(N):
            T[p, j] /= a
        beta[p] /= a
        for i in range(m):
            if i != p:
                f = T[i, q]
                if f != 0.0:
                    for j in range(N):
                        T[i, j] -= f * T[p, j]
                    beta[i] -= f * beta[p]
        f = d[q]
        for j in range(N):
            d[j] -= f * T[p, j]
        d[q] = 0.0
        # (the basic values are recomputed from β each iteration: a column entering from its
        # upper bound needs no other change)
        at_upper[q] = False
        for i in range(m):
            T[i, q] = 1.0 if i == p else 0.0
        basis[p] = q
        is_basic[q] = True
        is_basic[leave] = False
        at_upper[leave] = not low
    return _MAXITER, 0
