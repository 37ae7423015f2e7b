"""Exact QP for GLVQ/GMLVQ counterfactuals under the Euclidean (diagonally weighted) distance.

For one target prototype p_i the program of Algorithm 1 with a shared metric is

    min_x ½ Σ_k w_k (x_k − x̄_k)²   s.t.  a_j·x ≤ b_j  (other-class prototypes, user constraints),
                                          lo ≤ x ≤ hi,  x_F = x̄_F  (frozen features)

With u = W^{1/2}(x − x̄) on the free features this is a *least-distance program* (LDP)

    min ½‖u‖²  s.t.  G u ≥ h

(rows: −a_j W^{-1/2}, and ±e_k for finite bounds). Lawson & Hanson (1974, ch. 23) solve an LDP
exactly through its dual, a non-negative least-squares problem with one variable per constraint:

    min_{v ≥ 0} ‖E v − f‖,   E = [Gᵀ; hᵀ] ((n+1) × m),  f = e_{n+1},
    r = E v − f,  u = −r[:n] / r[n]   (r = 0  ⇔  the LDP is infeasible).

The multipliers of the LDP are λ = v / (1 − hᵀv) ≥ 0 with u = Gᵀλ, which gives the KKT
conditions directly. The NNLS is solved by the Lawson–Hanson active-set method, which terminates
in finitely many steps at the exact optimum (each step is a least-squares solve on the passive
set), unlike a first-order method (Dykstra/ADMM) that only approaches it. The dual has one variable
per other-class prototype plus per finite bound — tens, so each step is a tiny dense solve.
Rows of G are scaled to unit norm first (same feasible set, better conditioning).

The LDP and NNLS solvers are :func:`fastcf._kernels.linalg.ldp` and
:func:`fastcf._kernels.linalg.nnls`; this module builds the LDP of each target prototype
(:func:`_solve_one`) and runs Algorithm 1 over a batch of queries (:func:`lvq_fast_batch`).
"""

import numpy as np

from fastcf._kernels import kernel
from fastcf._kernels._batch import batch
from fastcf._kernels.linalg import ldp
from fastcf._status import Status

__all__ = ["lvq_fast_batch"]

_OK = int(Status.OK)
_MAXITER = int(Status.MAXITER)
_INFEASIBLE = int(Status.INFEASIBLE)
_NUMERIC = int(Status.NUMERIC)


@kernel()
def _norm_scaled(v, n):
    """Return ‖v[:n]‖ as max|v| · ‖v / max|v|‖: no square overflows, the largest is 1.

    0 where max|v| is 0 or NaN, as the inline code this replaced gave.
    """
    vmax = 0.0
    for q in range(n):
        vmax = max(vmax, abs(v[q]))
    if not vmax > 0.0:
        return 0.0
    s = 0.0
    for q in range(n):
        s += (v[q] / vmax) ** 2
    return vmax * np.sqrt(s)


@kernel()
def _solve_one(x0, A, b, valid_j, w_sqrt, free, lo, hi, C, c, eps, max_iter):
    """One target prototype: rows A[j]·x ≤ b[j] − eps for valid j, C x ≤ c, lo ≤ x ≤ hi, frozen.

    Returns (x, dist, lam_full, n_iter, status). ``lam_full`` are the multipliers of the rows in
    the order: prototype rows (all M, 0 where not valid), user rows, then lo rows, hi rows (D each),
    for the scaled problem in u-space (informative only).
    """
    D = x0.shape[0]
    fidx = np.flatnonzero(free)
    nf = fidx.size
    M = A.shape[0]
    mu = C.shape[0]
    maxrows = M + mu + 2 * nf
    G = np.zeros((maxrows, nf))
    h = np.zeros(maxrows)
    origin = np.full(maxrows, -1, dtype=np.int64)
    nr = 0
    infeasible = False
    inv_w = 1.0 / w_sqrt
    for kind in range(2):
        nrows = M if kind == 0 else mu
        for j in range(nrows):
            if kind == 0 and not valid_j[j]:
                continue
            # row a·x ≤ β  →  (a_F / √w_F)·u ≤ β − a·x̄  →  G row = −(...) , h = −(...)
            if kind == 0:
                beta = b[j] - eps
            else:
                beta = c[j]
            # a·x̄; the row's coefficients (per unit of u) and the terms of a·x̄ at their own
            # scale (an absolute floor of 1 dropped every row of prototypes of scale 1e-20 as
            # free of the free features: "infeasible")
            ax = 0.0
            scale = 0.0
            amax = 0.0
            for k in range(D):
                a = A[j, k] if kind == 0 else C[j, k]
                t = a * x0[k]
                ax += t
                scale = max(scale, abs(t))
                amax = max(amax, abs(a) * inv_w[k])
            # the plain Σ g² only where no g² can overflow (amax bounds every |g|): run without
            # the JIT, an overflowing g * g warns (an error under the test suite's filters)
            big = amax > 1e140
            nrm = 0.0
            for q in range(nf):
                k = fidx[q]
                a = A[j, k] if kind == 0 else C[j, k]
                g = a * inv_w[k]
                G[nr, q] = -g
                if not big:
                    nrm += g * g
            # (when big, nrm stays 0 and amax > 0: the scaled branch)
            if not 1e-280 < nrm < 1e280 and nrm != 0.0 or nrm == 0.0 and amax > 0.0:
                # scaled by the largest entry: Σ g² underflowed to 0 for entries of 2e-200 (a
                # metric Λ = 1e-200) and the row was taken as free of the free features
                nrm = _norm_scaled(G[nr], nf)
            else:
                nrm = np.sqrt(nrm)
            rhs = beta - ax
            if nrm <= 1e-14 * amax:
                # the row does not involve free features: a fixed truth about x̄
                if rhs < -1e-12 * max(scale, abs(beta)):
                    infeasible = True
                for q in range(nf):
                    G[nr, q] = 0.0
                continue
            for q in range(nf):
                G[nr, q] /= nrm
            h[nr] = -rhs / nrm
            origin[nr] = j if kind == 0 else M + j
            nr += 1
    for q in range(nf):
        k = fidx[q]
        if np.isfinite(lo[k]):  # u_q ≥ √w (lo − x̄)
            G[nr, q] = 1.0
            h[nr] = w_sqrt[k] * (lo[k] - x0[k])
            origin[nr] = M + mu + k
            nr += 1
        if np.isfinite(hi[k]):  # −u_q ≥ −√w (hi − x̄)
            G[nr, q] = -1.0
            h[nr] = -w_sqrt[k] * (hi[k] - x0[k])
            origin[nr] = M + mu + D + k
            nr += 1
    lam_full = np.zeros(M + mu + 2 * D)
    x = x0.copy()
    if infeasible:
        return x, np.inf, lam_full, 0, _INFEASIBLE
    u, lam, it, status = ldp(np.ascontiguousarray(G[:nr]), h[:nr].copy(), max_iter)
    if status == _INFEASIBLE:
        return x, np.inf, lam_full, it, _INFEASIBLE
    umax = 0.0
    for q in range(nf):
        k = fidx[q]
        x[k] = x0[k] + u[q] / w_sqrt[k]
        umax = max(umax, abs(u[q]))
    for r in range(nr):
        lam_full[origin[r]] = lam[r]
    # ‖u‖: the plain Σ u² where no u² can overflow, else scaled by max |u| (run without the
    # JIT, an overflowing u * u warns); beyond √(max double) it is a numerical failure, as
    # when Σ u² was inf
    if umax <= 1e150:
        dist2 = 0.0
        for q in range(nf):
            dist2 += u[q] * u[q]
        dist = np.sqrt(dist2)
    else:
        dist = _norm_scaled(u, nf)
    if not dist < 1.3407807929942596e154:  # √(max double)
        return x0.copy(), np.inf, lam_full, it, _NUMERIC
    return x, dist, lam_full, it, status


@kernel()
def _fast_row(a, X0, tgt, A, b, valid, proto_cls, w_sqrt, free, lo, hi, C, c, eps, max_iter, out):
    """Query a of :func:`lvq_fast_batch`: the best of the LDPs of its target's prototypes.

    Takes the arguments of :func:`lvq_fast_batch` and its output arrays ``out``; row a of the
    outputs is written. A single query runs the same loop in Python (:func:`_one_query`).
    """
    X, dist, best, nit, status = out
    M = A.shape[0]
    # the query's box: its own row, or the shared one (indexed apart: a may be a prange index,
    # whose unsigned type would not unify with a literal 0)
    if lo.shape[0] > 1:
        lo_a = lo[a]
        hi_a = hi[a]
    else:
        lo_a = lo[0]
        hi_a = hi[0]
    D = X0.shape[1]
    for k in range(D):  # (loops: a slice assignment compiles NumPy's shape-mismatch message)
        X[a, k] = X0[a, k]
    dist[a] = np.inf
    best[a] = -1
    nit[a] = 0
    status[a] = _INFEASIBLE
    worst_status = _INFEASIBLE
    for i in range(M):
        if proto_cls[i] != tgt[a]:
            continue
        x, dd, _, it, st = _solve_one(
            X0[a], A[i], b[i], valid[i], w_sqrt, free, lo_a, hi_a, C, c, eps, max_iter
        )
        nit[a] += it
        if st == _OK or st == _MAXITER:
            if dd < dist[a]:
                dist[a] = dd
                for k in range(D):
                    X[a, k] = x[k]
                best[a] = i
                status[a] = st
        elif st == _NUMERIC:
            worst_status = _NUMERIC
    if best[a] < 0:
        status[a] = worst_status


def lvq_fast_batch(
    X0, tgt, A, b, valid, proto_cls, w_sqrt, free, lo, hi, C, c, eps, max_iter, parallel
):
    """Algorithm 1 with the exact LDP per target prototype, for N queries (parallel over queries).

    Parameters
    ----------
    X0 : (N, D) queries; tgt : (N,) target class index per query; A : (M, M, D), b : (M, M)
    with rows ``A[i, j]·x ≤ b[i, j]`` meaning d(x, p_i) ≤ d(x, p_j); valid : (M, M) bool (j of
    another class than i); proto_cls : (M,) class index of each prototype; w_sqrt : (D,);
    free : (D,) bool; lo, hi : (R, D) with R = 1 (one box shared by every query, e.g. ``lo[None]``)
    or R = N (row a is the box of query a); C : (m, D), c : (m,) user rows C x ≤ c; eps : margin;
    parallel : bool, run the rows on Numba's threads (a batch) or in the calling thread through
    a serial twin of the same row code (a single query: same bits, and no parallel kernel to
    compile on a first call — the parallel one took 5–7 s of the LVQ family's cold start).

    Returns
    -------
    X : (N, D); dist : (N,); best : (N,) index of the winning prototype (−1 if none);
    nit : (N,); status : (N,)
    """
    args = (X0, tgt, A, b, valid, proto_cls, w_sqrt, free, lo, hi, C, c, eps, max_iter)
    if not parallel and X0.shape[0] == 1:
        return _one_query(*args)
    return _fast(parallel, *args)


def _one_query(X0, tgt, A, b, valid, proto_cls, w_sqrt, free, lo, hi, C, c, eps, max_iter):
    """:func:`_fast_row` for a batch of one query, its loop here and :func:`_solve_one` compiled.

    A single query calls :func:`_solve_one` from Python, not through the batch's serial kernel:
    that kernel links it, and LLVM optimised and emitted all of its code (the LDP, NNLS and
    ``dgelsd`` below it) once more, about 1 CPU s of a first GLVQ query's compile time (issue
    54). The loop is :func:`_fast_row`'s, step by step (keep it so), around the same
    :func:`_solve_one`: the same answer, bit for bit, as the query in a batch.
    """
    X = X0.copy()
    # Python scalars until the end: NumPy's scalars cost µs in a query of ~50 µs
    dist, best, nit, status = np.inf, -1, 0, _INFEASIBLE
    worst_status = _INFEASIBLE
    t = tgt[0]
    for i in range(A.shape[0]):
        if proto_cls[i] != t:
            continue
        x, dd, _, it, st = _solve_one(
            X0[0], A[i], b[i], valid[i], w_sqrt, free, lo[0], hi[0], C, c, eps, max_iter
        )
        nit += it
        if st == _OK or st == _MAXITER:
            if dd < dist:
                dist = dd
                X[0] = x
                best = i
                status = st
        elif st == _NUMERIC:
            worst_status = _NUMERIC
    if best < 0:
        status = worst_status
    i64 = np.int64
    return X, np.array([dist]), np.array([best], i64), np.array([nit], i64), np.array([status], i64)


@kernel(inline="always")
def _fast_out(args):
    N, D = args[0].shape
    # np.empty only: np.full/np.zeros would become parallel loops (parfors) that wake the thread
    # pool
    X = np.empty((N, D))
    dist = np.empty(N)
    best = np.empty(N, dtype=np.int64)
    nit = np.empty(N, dtype=np.int64)
    status = np.empty(N, dtype=np.int64)
    return X, dist, best, nit, status


_fast = batch(_fast_row, _fast_out)
