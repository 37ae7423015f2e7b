"""Queries row by row: the O(DK) products of a query, problem (2) and ``region=True`` for N queries.

:func:`logits_rows` (Z = X Aᵀ + b), :func:`expand_rows` (x = x̄ + (yᵀA) ∘ v),
:func:`reduced_rows` (per row: z̄, the reduced Newton from its cold start, x* with its logits and
their rounding scale, and the verdict) and :func:`region_rows` (per row: z̄, the region dual and
x*), in the modes of :func:`row_mode`.
"""

import math

import numpy as np
from numba import prange

from fastcf._status import Status

from .. import kernel
from ..linalg import dot as _dot
from ..linalg import dot_abs as _dot_abs
from .core import _matvec, initial_y, reduced_newton, softmax_into
from .region import _region_row

_OK = int(Status.OK)
_NUMERIC = int(Status.NUMERIC)
_NOT_TARGET = int(Status.NOT_TARGET)

# ----------------------------------------------------------------------------------------------
# The two O(DK) products of a query, row by row. Each row is computed by the same code in the same
# order whatever the number of rows, so a query's answer is bit-identical alone, in a batch, or in
# any partition of a batch (Dask); BLAS would pick GEMV or GEMM kernels by shape and change the
# rounding. The columns are cut into fixed chunks of _CHUNK: a sum over D is the chunk order sum
# of per-chunk sums, so running the chunks of one row on several threads (``mode=2``, one large
# query) gives the same bits as running them in turn (``mode=0``, or ``mode=1``: a batch, in
# parallel over rows).

_BLOCK = 512  # columns per block: the accumulators stay in L1 while A is streamed once
_CHUNK = 4096  # columns per chunk (a multiple of _BLOCK): the unit of work of mode 2


def row_mode(N, D, K):
    """Return the mode of the row kernels for N rows of A of shape (K, D).

    0: serial, 1: parallel over rows (batches), 2: parallel over column chunks (one query large
    enough to pay for waking the threads).
    """
    if N > 1:
        return 1
    return 2 if D * K >= 1 << 18 and D > _CHUNK else 0


def checked_mode(N, D, K):
    """Return the mode for row kernels whose answers are then checked with BLAS (N rows).

    As :func:`row_mode`, but one query always runs serially (mode 0, the same bits as mode 2):
    ``region=True`` and ``proba=`` check each answer with NumPy's BLAS right after the kernel,
    and OpenBLAS's threads and Numba's (OpenMP) threads, each spinning after its own parallel
    region, then wait for each other. Measured at (131 072, 16) on 2 cores, default threads,
    each query over the two products with A (median of 20): column chunks on Numba's threads
    17.6× (region) and 31.8× (proba), serial 3.4× and 3.5×.
    """
    return 1 if N > 1 else 0


@kernel()
def _logits_chunk(x, A, c, part):
    K, D = A.shape
    lo = c * _CHUNK
    hi = min(lo + _CHUNK, D)
    for j in range(K):
        part[c, j] = _dot(A[j, lo:hi], x[lo:hi])


@kernel()
def _sum_chunks(part, b, z):
    """z_j = Σ_c part[c, j] + b_j, in chunk order."""
    for j in range(part.shape[1]):
        acc = 0.0
        for c in range(part.shape[0]):
            acc += part[c, j]
        z[j] = acc + b[j]


# Each row function below comes in one kernel per mode, behind a plain Python function that picks
# it: a single query (mode 0, the common case) then compiles only a serial kernel. Compiling a
# ``parallel=True`` kernel costs several times more (each prange loop becomes a gufunc of its own
# that links and compiles the whole row code again), and the serial kernel runs the same row
# code, so the answers have the same bits in every mode.


@kernel()
def _logits_serial(X, A, b):
    N = X.shape[0]
    K, D = A.shape
    nc = max((D + _CHUNK - 1) // _CHUNK, 1)
    Z = np.empty((N, K))
    part = np.empty((nc, K))
    for n in range(N):
        for c in range(nc):
            _logits_chunk(X[n], A, c, part)
        _sum_chunks(part, b, Z[n])
    return Z


@kernel(parallel=True)
def _logits_batch(X, A, b):
    N = X.shape[0]
    K, D = A.shape
    nc = max((D + _CHUNK - 1) // _CHUNK, 1)
    Z = np.empty((N, K))
    for n in prange(N):
        part = np.empty((nc, K))
        for c in range(nc):
            _logits_chunk(X[n], A, c, part)
        _sum_chunks(part, b, Z[n])
    return Z


@kernel(parallel=True)
def _logits_chunks(X, A, b):
    N = X.shape[0]
    K, D = A.shape
    nc = max((D + _CHUNK - 1) // _CHUNK, 1)
    Z = np.empty((N, K))
    part = np.empty((nc, K))
    for n in range(N):
        for c in prange(nc):
            _logits_chunk(X[n], A, c, part)
        _sum_chunks(part, b, Z[n])
    return Z


def logits_rows(X, A, b, mode):
    """Z = X Aᵀ + b, one row at a time (see the note above; ``mode`` from :func:`row_mode`)."""
    if mode == 1:
        return _logits_batch(X, A, b)
    if mode == 2:
        return _logits_chunks(X, A, b)
    return _logits_serial(X, A, b)


@kernel()
def _expand_chunk(x0, y, A, v, unit, c, out, pz, ps):
    """Columns of chunk c of x = x0 + (yᵀA) ∘ v.

    With arrays ``pz``, ``ps`` (not None), also the chunk's share of z = A x (pz[c]) and of
    s = |A| |x| (ps[c]), while the block of A is in cache. Without them (None), Numba prunes that
    code before typing, so the plain expansion does not compile it.
    """
    K, D = A.shape
    # block: K rows of it fit in L1 (32 KiB), so the check's second pass reads it from there
    blk = max(64, min(_BLOCK, (4096 // K) // 8 * 8))
    acc = np.empty(blk)
    lo = c * _CHUNK
    hi = min(lo + _CHUNK, D)
    if pz is not None:
        for j in range(K):
            pz[c, j] = 0.0
            ps[c, j] = 0.0
    for start in range(lo, hi, blk):
        stop = min(start + blk, hi)
        m = stop - start
        for i in range(m):
            acc[i] = 0.0
        # four rows of A per sweep of acc: a quarter of the loads and stores of acc
        j = 0
        while j + 4 <= K:
            y0, y1, y2, y3 = y[j], y[j + 1], y[j + 2], y[j + 3]
            for i in range(m):
                acc[i] += (
                    y0 * A[j, start + i]
                    + y1 * A[j + 1, start + i]
                    + y2 * A[j + 2, start + i]
                    + y3 * A[j + 3, start + i]
                )
            j += 4
        while j < K:
            yj = y[j]
            for i in range(m):
                acc[i] += yj * A[j, start + i]
            j += 1
        if unit:
            for i in range(m):
                out[start + i] = x0[start + i] + acc[i]
        else:
            for i in range(m):
                out[start + i] = x0[start + i] + v[start + i] * acc[i]
        if pz is not None:
            for j in range(K):
                zj, sj = _dot_abs(A[j, start:stop], out[start:stop])
                pz[c, j] += zj
                ps[c, j] += sj


@kernel()
def _expand_serial(X0, Y, A, v, unit):
    N, D = X0.shape
    nc = max((D + _CHUNK - 1) // _CHUNK, 1)
    X = np.empty((N, D))
    for n in range(N):
        for c in range(nc):
            _expand_chunk(X0[n], Y[n], A, v, unit, c, X[n], None, None)
    return X


@kernel(parallel=True)
def _expand_batch(X0, Y, A, v, unit):
    N, D = X0.shape
    nc = max((D + _CHUNK - 1) // _CHUNK, 1)
    X = np.empty((N, D))
    for n in prange(N):
        for c in range(nc):
            _expand_chunk(X0[n], Y[n], A, v, unit, c, X[n], None, None)
    return X


@kernel(parallel=True)
def _expand_chunks(X0, Y, A, v, unit):
    N, D = X0.shape
    nc = max((D + _CHUNK - 1) // _CHUNK, 1)
    X = np.empty((N, D))
    for n in range(N):
        for c in prange(nc):
            _expand_chunk(X0[n], Y[n], A, v, unit, c, X[n], None, None)
    return X


def expand_rows(X0, Y, A, v, unit, mode):
    """X = X0 + (Y A) ∘ v row by row: the counterfactuals from their K-space coordinates."""
    if mode == 1:
        return _expand_batch(X0, Y, A, v, unit)
    if mode == 2:
        return _expand_chunks(X0, Y, A, v, unit)
    return _expand_serial(X0, Y, A, v, unit)


@kernel()
def _certain_row(z, sc, k, gamma):
    """Whether no floating-point evaluation of the logits can take class k from this point.

    ``z`` are logits computed in floating point, ``sc = |A||x| + |b|`` their rounding scale;
    every evaluation of z_j (ours, BLAS in any blocking, scikit-learn's) is within γ sc_j of the
    exact value (Higham, §3.1). Certain when z_k − max_{j≠k} z_j > 4γ (sc_k + max_{j≠k} sc_j)
    (twice the worst case of two evaluations).
    """
    zo = -np.inf
    so = -np.inf
    for j in range(z.shape[0]):
        if j != k:
            zo = max(zo, z[j])
            so = max(so, sc[j])
    need = 4.0 * gamma * (sc[k] + so)
    return math.isfinite(need) and z[k] - zo > need


@kernel(inline="always")
def _row_newton(part, b, G, GF, k, lam, tol, max_iter, y):
    """z̄ from its chunk sums, then the reduced Newton from initial_y (y in place).

    Returns (gnorm, quad, nit, status).
    """
    K = b.shape[0]
    zbar = np.empty(K)
    _sum_chunks(part, b, zbar)
    initial_y(zbar, G, k, lam, y)
    _E, gn, quad, nit, status = reduced_newton(zbar, G, GF, k, lam, y, tol, max_iter)
    return gn, quad, nit, status


@kernel()
def _row_logits(x, pz, ps, b, quad, p, z, sc):
    """Fill the logits z of x*, their scales sc (from the chunk sums) and p = softmax(z).

    Returns whether x* and ``quad`` are finite (the verdict of the λ rows, :func:`_row_verdict`).
    """
    absb = np.empty(b.shape[0])
    for j in range(b.shape[0]):
        absb[j] = abs(b[j])
    _sum_chunks(pz, b, z)
    _sum_chunks(ps, absb, sc)
    softmax_into(z, p)
    finite = math.isfinite(quad)
    for i in range(x.shape[0]):
        if not math.isfinite(x[i]):
            finite = False
            break
    return finite


@kernel()
def _row_verdict(x, pz, ps, b, k, gamma, quad, status, p):
    """Logits z of x* from their chunk sums, p = softmax(z), and the verdict.

    Returns (status, certified): status NUMERIC for a non-finite answer, NOT_TARGET when argmax z
    (ties to the first class, the model's rule) is not k; certified when k wins by more than
    4γ(S_k + max_{j≠k} S_j) (see :func:`_certain_row`).
    """
    K = b.shape[0]
    z = np.empty(K)
    sc = np.empty(K)
    finite = _row_logits(x, pz, ps, b, quad, p, z, sc)
    if status == _OK and not finite:
        return _NUMERIC, False
    best = 0
    for j in range(1, K):
        if z[j] > z[best]:
            best = j
    if status != _OK:
        return status, False
    if best != k:
        # the optimum of problem (2) is not in the target class: λ too large
        return _NOT_TARGET, False
    return _OK, _certain_row(z, sc, k, gamma)


@kernel()
def _reduced_serial(X0, A, b, G, GF, ks, lams, tol, max_iter, v, unit, gamma):
    N, D = X0.shape
    K = A.shape[0]
    nc = max((D + _CHUNK - 1) // _CHUNK, 1)
    X = np.empty((N, D))
    P = np.empty((N, K))
    quad = np.empty(N)
    gn = np.empty(N)
    nit = np.empty(N, dtype=np.int64)
    status = np.empty(N, dtype=np.int64)
    cert = np.empty(N, dtype=np.bool_)
    part = np.empty((nc, K))
    pz = np.empty((nc, K))
    ps = np.empty((nc, K))
    y = np.empty(K)
    for n in range(N):
        for c in range(nc):
            _logits_chunk(X0[n], A, c, part)
        gn[n], quad[n], nit[n], st = _row_newton(part, b, G, GF, ks[n], lams[n], tol, max_iter, y)
        for c in range(nc):
            _expand_chunk(X0[n], y, A, v, unit, c, X[n], pz, ps)
        status[n], cert[n] = _row_verdict(X[n], pz, ps, b, ks[n], gamma, quad[n], st, P[n])
    return X, P, quad, gn, nit, status, cert


@kernel(parallel=True)
def _reduced_batch(X0, A, b, G, GF, ks, lams, tol, max_iter, v, unit, gamma):
    N, D = X0.shape
    K = A.shape[0]
    nc = max((D + _CHUNK - 1) // _CHUNK, 1)
    X = np.empty((N, D))
    P = np.empty((N, K))
    quad = np.empty(N)
    gn = np.empty(N)
    nit = np.empty(N, dtype=np.int64)
    status = np.empty(N, dtype=np.int64)
    cert = np.empty(N, dtype=np.bool_)
    for n in prange(N):
        part = np.empty((nc, K))
        pz = np.empty((nc, K))
        ps = np.empty((nc, K))
        y = np.empty(K)
        for c in range(nc):
            _logits_chunk(X0[n], A, c, part)
        gn[n], quad[n], nit[n], st = _row_newton(part, b, G, GF, ks[n], lams[n], tol, max_iter, y)
        for c in range(nc):
            _expand_chunk(X0[n], y, A, v, unit, c, X[n], pz, ps)
        status[n], cert[n] = _row_verdict(X[n], pz, ps, b, ks[n], gamma, quad[n], st, P[n])
    return X, P, quad, gn, nit, status, cert


@kernel(parallel=True)
def _reduced_chunks(X0, A, b, G, GF, ks, lams, tol, max_iter, v, unit, gamma):
    N, D = X0.shape
    K = A.shape[0]
    nc = max((D + _CHUNK - 1) // _CHUNK, 1)
    X = np.empty((N, D))
    P = np.empty((N, K))
    quad = np.empty(N)
    gn = np.empty(N)
    nit = np.empty(N, dtype=np.int64)
    status = np.empty(N, dtype=np.int64)
    cert = np.empty(N, dtype=np.bool_)
    part = np.empty((nc, K))
    pz = np.empty((nc, K))
    ps = np.empty((nc, K))
    y = np.empty(K)
    for n in range(N):
        for c in prange(nc):
            _logits_chunk(X0[n], A, c, part)
        gn[n], quad[n], nit[n], st = _row_newton(part, b, G, GF, ks[n], lams[n], tol, max_iter, y)
        for c in prange(nc):
            _expand_chunk(X0[n], y, A, v, unit, c, X[n], pz, ps)
        status[n], cert[n] = _row_verdict(X[n], pz, ps, b, ks[n], gamma, quad[n], st, P[n])
    return X, P, quad, gn, nit, status, cert


def reduced_rows(X0, A, b, G, GF, ks, lams, tol, max_iter, v, unit, gamma, mode):
    """Problem (2) for N softmax queries, all in one call (``mode`` from :func:`row_mode`).

    Per row: z̄ = A x̄ + b, the reduced Newton from :func:`initial_y`, x* = x̄ + (yᵀA)∘v with its
    logits and their rounding scale in the same pass over A, p = softmax(z), and the verdict of
    :func:`_row_verdict`. The same code runs for every row in every mode (mode 2 only runs the
    column chunks of the single row on several threads), so an answer has the same bits alone
    or in a batch. Returns (X, P, quad, gnorm, nit, status, cert); quad = ‖x* − x̄‖²_W.
    """
    if mode == 1:
        return _reduced_batch(X0, A, b, G, GF, ks, lams, tol, max_iter, v, unit, gamma)
    if mode == 2:
        return _reduced_chunks(X0, A, b, G, GF, ks, lams, tol, max_iter, v, unit, gamma)
    return _reduced_serial(X0, A, b, G, GF, ks, lams, tol, max_iter, v, unit, gamma)


# ----------------------------------------------------------------------------------------------
# region=True for N queries in one call: per row z̄ = A x̄ + b, the dual and x* = x̄ + (yᵀA) ∘ v, two
# passes over A. The same row code in every mode. The verdict needs the model's own logits of the
# answer (BLAS, as predict), so the kernel does not form its own.


@kernel(inline="always")
def _region_fused_row(part, b, G, k, margin, tol, max_iter, y):
    """z̄ from its chunk sums, then the dual (y in place). Returns (nit, status, yᵀ G y)."""
    K = b.shape[0]
    zbar = np.empty(K)
    _sum_chunks(part, b, zbar)
    nit, status = _region_row(zbar, G, k, margin, tol, max_iter, y)
    gy = np.empty(K)
    _matvec(G, y, gy)
    quad = 0.0
    for j in range(K):
        quad += y[j] * gy[j]
    return nit, status, quad


@kernel()
def answer_status(x, quad, status):
    """Return the solver's status, or NUMERIC for a solved row whose answer is not finite."""
    if status != _OK:
        return status
    if not math.isfinite(quad):
        return _NUMERIC
    for i in range(x.shape[0]):
        if not math.isfinite(x[i]):
            return _NUMERIC
    return _OK


@kernel(inline="always")
def _region_row_full(n, X0, A, b, G, ks, margins, tol, max_iter, v, unit, part, X, Y, dist, nit):
    """Row n of :func:`region_rows` (``part``: its chunk sums' scratch); returns its status."""
    for c in range(part.shape[0]):
        _logits_chunk(X0[n], A, c, part)
    nit[n], st, quad = _region_fused_row(part, b, G, ks[n], margins[n], tol, max_iter, Y[n])
    dist[n] = math.sqrt(max(quad, 0.0))
    for c in range(part.shape[0]):
        _expand_chunk(X0[n], Y[n], A, v, unit, c, X[n], None, None)
    return answer_status(X[n], quad, st)


@kernel(inline="always")
def _region_out(N, D, K):
    """Return the outputs of :func:`region_rows`, empty: X, Y, dist, nit, status."""
    return (
        np.empty((N, D)),
        np.empty((N, K)),
        np.empty(N),
        np.empty(N, dtype=np.int64),
        np.empty(N, dtype=np.int64),
    )


@kernel()
def _region_serial(X0, A, b, G, ks, margins, tol, max_iter, v, unit):
    N, D = X0.shape
    K = A.shape[0]
    nc = max((D + _CHUNK - 1) // _CHUNK, 1)
    X, Y, dist, nit, status = _region_out(N, D, K)
    part = np.empty((nc, K))
    for n in range(N):
        status[n] = _region_row_full(
            n, X0, A, b, G, ks, margins, tol, max_iter, v, unit, part, X, Y, dist, nit
        )
    return X, Y, dist, nit, status


@kernel(parallel=True)
def _region_batch(X0, A, b, G, ks, margins, tol, max_iter, v, unit):
    N, D = X0.shape
    K = A.shape[0]
    nc = max((D + _CHUNK - 1) // _CHUNK, 1)
    X, Y, dist, nit, status = _region_out(N, D, K)
    for n in prange(N):
        part = np.empty((nc, K))
        status[n] = _region_row_full(
            n, X0, A, b, G, ks, margins, tol, max_iter, v, unit, part, X, Y, dist, nit
        )
    return X, Y, dist, nit, status


def region_rows(X0, A, b, G, ks, margins, tol, max_iter, v, unit, mode):
    """``region=True`` for N softmax queries in one call (``mode`` from :func:`checked_mode`).

    Per row: z̄ = A x̄ + b, :func:`~fastcf._kernels.softmax.region.region_dual` with the row's
    margin and x* = x̄ + (yᵀA) ∘ v. Returns (X, Y, dist, nit, status), dist = ‖x* − x̄‖_W =
    √(yᵀ G y), status NUMERIC for a non-finite answer. Rows whose dual is singular come back
    PENDING (their x* is x̄): the caller solves them by
    :func:`fastcf._linear.softmax.region_singular`. The verdict is the caller's, in the model's
    own arithmetic (``fastcf._linear.softmax.judge``).
    """
    if mode == 1:
        return _region_batch(X0, A, b, G, ks, margins, tol, max_iter, v, unit)
    return _region_serial(X0, A, b, G, ks, margins, tol, max_iter, v, unit)
