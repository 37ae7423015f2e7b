"""Queries row by row: the O(DK) products of a query, problem (2) and ``region=True`` for N queries.

:func:`logits_rows` (Z = X Aᵀ + b), :func:`expand_rows` (x = x̄ + (yᵀA) ∘ v),
:func:`reduced_rows` (per row: z̄, the reduced Newton from its cold start, x* with its logits and
their rounding scale, and the verdict) and :func:`region_rows` (per row: z̄, the region dual and
x*), in the modes of :func:`row_mode`; and the K-space parts of those row functions for the
BLAS mode (:func:`kspace_reduced`, :func:`kspace_finish`, :func:`verdict_rows`), whose products
the caller makes with BLAS (``fastcf._linear.model.SoftmaxModel``).
"""

import math

import numpy as np

from fastcf._status import Status

from .. import kernel
from .._batch import batch
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
# of per-chunk sums, whatever the thread that runs the row (``mode=0``, or ``mode=1``: a batch, in
# parallel over rows). A large A (``mode=3``) has its products made by BLAS instead (see
# :func:`row_mode`).

_BLOCK = 512  # columns per block: the accumulators stay in L1 while A is streamed once
_CHUNK = 4096  # columns per chunk (a multiple of _BLOCK)
BLAS = 3  # the mode of row_mode for a large A: products by BLAS, the K-space part by kernels


def row_mode(N, D, K):
    """Return the mode of the row functions for N rows of A of shape (K, D).

    0: the row kernels, serial; 1: the row kernels, parallel over rows (batches); 3 (:data:`BLAS`):
    A large enough to pay for threads (D·K ≥ 2¹⁸ and D > 4096), whatever N: the two products of
    each row by BLAS, one row at a time (NumPy's matmul of a stack of rows makes the same BLAS
    call for every row, so a row's bits do not depend on its batch), and the K-space part by the
    kernels below. The products then run on OpenBLAS's threads, as do the model's own checks
    and the caller's other NumPy work: a query on Numba's threads (the former mode 2, column
    chunks in parallel) met OpenBLAS's threads still spinning after the previous product and
    waited for them. Measured at (131 072, 16) on 2 cores, default threads, per query over the
    two products with A (median of 20 problems · the worst): ``lam=`` 1.8 · 22× (Numba's
    chunks), ``region=True`` 3.6 · 3.6× and ``proba=`` 3.7 · 3.7× (serial kernels).
    """
    if D * K >= 1 << 18 and D > _CHUNK:
        return BLAS
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


# Each row function below has a serial kernel and a chunk kernel run on the batch threads
# (:func:`fastcf._kernels._batch.batch`) behind a plain Python function that picks one: a single
# query (mode 0, the common case) then compiles only the serial kernel. Both run the same row
# code, so the answers have the same bits in every mode.


@kernel()
def _logits_row(n, X, A, b, out):
    Z = out[0]
    K, D = A.shape
    part = np.empty((max((D + _CHUNK - 1) // _CHUNK, 1), K))
    for c in range(part.shape[0]):
        _logits_chunk(X[n], A, c, part)
    _sum_chunks(part, b, Z[n])


@kernel(inline="always")
def _logits_out(args):
    return (np.empty((args[0].shape[0], args[1].shape[0])),)  # Z (N, K)


_logits = batch(_logits_row, _logits_out)


def blas_logits(X, A, b):
    """Z = X Aᵀ + b by BLAS, one row at a time (the products of :data:`BLAS` mode).

    NumPy's matmul of a stack of (1, D) rows makes the same BLAS call for every row, so row n
    has the bits of ``X[n:n+1] @ A.T + b`` whatever the batch. Overflow gives inf, silently, as
    in the row kernels.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        return (X[:, None, :] @ A.T)[:, 0, :] + b


def blas_expand(X0, Y, A, v, unit):
    """X = X0 + (Y A) ∘ v by BLAS, one row at a time (as :func:`blas_logits`)."""
    with np.errstate(over="ignore", invalid="ignore"):
        # a new array, updated in place: x0 + v ∘ t, the kernels' two roundings
        T = (Y[:, None, :] @ A)[:, 0, :]
        if not unit:
            T *= v
        T += X0
        return T


def logits_rows(X, A, b, mode):
    """Z = X Aᵀ + b, one row at a time (see the note above; ``mode`` from :func:`row_mode`)."""
    if mode == BLAS:
        return blas_logits(X, A, b)
    return _logits(mode == 1, X, A, b)[0]


@kernel()
def _expand_chunk(x0, y, A, v, unit, c, out, pz, ps):
    """Columns of chunk c of x = x0 + (yᵀA) ∘ v.

    With (nc, K) arrays ``pz``, ``ps``, also the chunk's share of z = A x (pz[c]) and of
    s = |A| |x| (ps[c]), while the block of A is in cache; with arrays of 0 rows (the plain
    expansion), not. Always arrays, never None: None compiled a second specialisation of this
    kernel (about 1 s), and that code costs little to compile once (``x`` is the same either way).
    """
    K, D = A.shape
    # block: K rows of it fit in L1 (32 KiB), so the check's second pass reads it from there
    blk = max(64, min(_BLOCK, (4096 // K) // 8 * 8))
    acc = np.empty(blk)
    lo = c * _CHUNK
    hi = min(lo + _CHUNK, D)
    sums = pz.shape[0] > 0
    if sums:
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
        if sums:
            for j in range(K):
                zj, sj = _dot_abs(A[j, start:stop], out[start:stop])
                pz[c, j] += zj
                ps[c, j] += sj


@kernel()
def _expand_row(n, X0, Y, A, v, unit, out):
    X = out[0]
    D = X0.shape[1]
    nosums = np.empty((0, 0))  # no chunk sums (see _expand_chunk)
    for c in range(max((D + _CHUNK - 1) // _CHUNK, 1)):
        _expand_chunk(X0[n], Y[n], A, v, unit, c, X[n], nosums, nosums)


@kernel(inline="always")
def _expand_out(args):
    return (np.empty(args[0].shape),)  # X, as X0 (N, D)


_expand = batch(_expand_row, _expand_out)


def expand_rows(X0, Y, A, v, unit, mode):
    """X = X0 + (Y A) ∘ v row by row: the counterfactuals from their K-space coordinates."""
    if mode == BLAS:
        return blas_expand(X0, Y, A, v, unit)
    return _expand(mode == 1, X0, Y, A, v, unit)[0]


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
def _reduced_row(n, X0, A, b, G, GF, ks, lams, tol, max_iter, v, unit, gamma, out):
    X, P, quad, gn, nit, status, cert = out
    K, D = A.shape
    nc = max((D + _CHUNK - 1) // _CHUNK, 1)
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


@kernel(inline="always")
def _reduced_out(args):
    N, D = args[0].shape  # X0
    K = args[1].shape[0]  # A
    X = np.empty((N, D))
    P = np.empty((N, K))
    quad = np.empty(N)
    gn = np.empty(N)
    nit = np.empty(N, dtype=np.int64)
    status = np.empty(N, dtype=np.int64)
    cert = np.empty(N, dtype=np.bool_)
    return X, P, quad, gn, nit, status, cert


_reduced = batch(_reduced_row, _reduced_out)


def reduced_rows(X0, A, b, G, GF, ks, lams, tol, max_iter, v, unit, gamma, mode):
    """Problem (2) for N softmax queries, all in one call (``mode`` 0 or 1 of :func:`row_mode`).

    Per row: z̄ = A x̄ + b, the reduced Newton from :func:`initial_y`, x* = x̄ + (yᵀA)∘v with its
    logits and their rounding scale in the same pass over A, p = softmax(z), and the verdict of
    :func:`_row_verdict`. The same code runs for every row in both modes (0 and 1), so an answer
    has the same bits alone or in a batch. Returns (X, P, quad, gnorm, nit, status, cert);
    quad = ‖x* − x̄‖²_W.
    """
    return _reduced(mode == 1, X0, A, b, G, GF, ks, lams, tol, max_iter, v, unit, gamma)


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


@kernel()
def _region_row_full(n, X0, A, b, G, ks, margins, tol, max_iter, v, unit, out):
    """Row n of :func:`region_rows`; ``out`` = (X, dist, nit, status)."""
    X, dist, nit, status = out
    K, D = A.shape
    part = np.empty((max((D + _CHUNK - 1) // _CHUNK, 1), K))  # the row's chunk sums
    for c in range(part.shape[0]):
        _logits_chunk(X0[n], A, c, part)
    y = np.empty(K)  # the row's dual (no caller reads it: not an output)
    nit[n], st, quad = _region_fused_row(part, b, G, ks[n], margins[n], tol, max_iter, y)
    dist[n] = math.sqrt(max(quad, 0.0))
    nosums = part[:0]  # 0 rows: no chunk sums (see _expand_chunk)
    for c in range(part.shape[0]):
        _expand_chunk(X0[n], y, A, v, unit, c, X[n], nosums, nosums)
    status[n] = answer_status(X[n], quad, st)


@kernel(inline="always")
def _region_out(args):
    """Return the outputs of :func:`region_rows`, empty: X, dist, nit, status."""
    N, D = args[0].shape  # X0
    return (
        np.empty((N, D)),
        np.empty(N),
        np.empty(N, dtype=np.int64),
        np.empty(N, dtype=np.int64),
    )


_region = batch(_region_row_full, _region_out)


def region_rows(X0, A, b, G, ks, margins, tol, max_iter, v, unit, mode):
    """``region=True`` for N softmax queries in one call (``mode`` 0 or 1 of :func:`row_mode`).

    Per row: z̄ = A x̄ + b, :func:`~fastcf._kernels.softmax.region.region_dual` with the row's
    margin and x* = x̄ + (yᵀA) ∘ v. Returns (X, dist, nit, status), dist = ‖x* − x̄‖_W =
    √(yᵀ G y), status NUMERIC for a non-finite answer. Rows whose dual is singular come back
    PENDING (their x* is x̄): the caller solves them by
    :func:`fastcf._linear.softmax.region_singular`. The verdict is the caller's, in the model's
    own arithmetic (``fastcf._linear.softmax.judge``).
    """
    return _region(mode == 1, X0, A, b, G, ks, margins, tol, max_iter, v, unit)


# ----------------------------------------------------------------------------------------------
# The K-space parts of the row functions, for the BLAS mode (row_mode 3): the caller makes the
# products (z̄ = A x̄ + b, x* = x̄ + (yᵀA) ∘ v and, for problem (2), the logits of x*) with BLAS, one
# row at a time; these kernels run the rest of each row as the row kernels above do. Serial over
# the rows: a row's K-space work is microseconds against the products' milliseconds.


@kernel()
def kspace_reduced(Zbar, G, GF, ks, lams, tol, max_iter):
    """Problem (2) in K-space for N rows of z̄: :func:`initial_y`, then the reduced Newton.

    Returns (Y, quad, gnorm, nit, status), quad = yᵀ G y = ‖x* − x̄‖²_W (as :func:`reduced_rows`).
    """
    N, K = Zbar.shape
    Y = np.empty((N, K))
    quad = np.empty(N)
    gn = np.empty(N)
    nit = np.empty(N, dtype=np.int64)
    status = np.empty(N, dtype=np.int64)
    for n in range(N):
        initial_y(Zbar[n], G, ks[n], lams[n], Y[n])
        _E, gn[n], quad[n], nit[n], status[n] = reduced_newton(
            Zbar[n], G, GF, ks[n], lams[n], Y[n], tol, max_iter
        )
    return Y, quad, gn, nit, status


@kernel()
def kspace_finish(X, Y, G, status):
    """Return (dist, status) of N answers x* formed from their K-space coordinates Y.

    dist = √(yᵀ G y) (as :func:`region_rows`; ``lamsearch.proba_rows`` likewise), status that of
    :func:`answer_status` (NUMERIC for a solved row whose answer is not finite).
    """
    N, K = Y.shape
    dist = np.empty(N)
    out = np.empty(N, dtype=np.int64)
    gy = np.empty(K)
    for n in range(N):
        _matvec(G, Y[n], gy)
        quad = 0.0
        for j in range(K):
            quad += Y[n, j] * gy[j]
        dist[n] = math.sqrt(max(quad, 0.0))
        out[n] = answer_status(X[n], quad, status[n])
    return dist, out


@kernel()
def verdict_rows(X, Z, S, ks, gamma, quad, status):
    """Judge N answers of problem (2) whose logits Z and scales S are given (as ``reduced_rows``).

    S = |A||x*| + |b| or an upper bound of it (the certificate then holds a fortiori). Returns (P,
    status, cert), as :func:`_row_verdict` does row by row.
    """
    N, K = Z.shape
    P = np.empty((N, K))
    st = np.empty(N, dtype=np.int64)
    cert = np.empty(N, dtype=np.bool_)
    for n in range(N):
        softmax_into(Z[n], P[n])
        finite = math.isfinite(quad[n])
        for i in range(X.shape[1]):
            if not math.isfinite(X[n, i]):
                finite = False
                break
        st[n], cert[n] = status[n], False
        if status[n] == _OK and not finite:
            st[n] = _NUMERIC
            continue
        if status[n] != _OK:
            continue
        best = 0
        for j in range(1, K):
            if Z[n, j] > Z[n, best]:
                best = j
        if best != ks[n]:
            st[n] = _NOT_TARGET
            continue
        cert[n] = _certain_row(Z[n], S[n], ks[n], gamma)
    return P, st, cert
