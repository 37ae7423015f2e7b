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
:func:`fastcf._kernels.linalg.nnls`; this module builds the LDP of each prototype of a query's
target class and keeps the best answer (:func:`_solve_query`, Algorithm 1), for one query or a
batch (:func:`lvq_fast_batch`).

The kernels take four records, each made once where its arrays are: the model's constraint
tables (:class:`Tables`, per model), the metric and box (:class:`Metric`) and the user's rows
(:class:`UserRows`) of an ``explain`` call, and the solver's settings (:class:`Settings`).
"""

from typing import NamedTuple

import numpy as np

from fastcf._kernels import kernel
from fastcf._kernels._batch import batch
from fastcf._kernels.linalg import ldp
from fastcf._status import Status

__all__ = ["Metric", "Settings", "Tables", "UserRows", "lvq_fast_batch"]

_OK = int(Status.OK)
_MAXITER = int(Status.MAXITER)
_INFEASIBLE = int(Status.INFEASIBLE)
_NUMERIC = int(Status.NUMERIC)


class Tables(NamedTuple):
    """A model's constraint rows (:func:`fastcf._lvq.model.linear_constraints`), M prototypes.

    ``A[i, j]·x ≤ b[i, j]`` means d(x, p_i) ≤ d(x, p_j) under the shared metric.
    """

    A: np.ndarray  # (M, M, D) float64
    b: np.ndarray  # (M, M) float64
    valid: np.ndarray  # (M, M) bool: p_j belongs to another class than p_i
    proto_cls: np.ndarray  # (M,) int64 class index of each prototype


class Metric(NamedTuple):
    """The distance ½ Σ w_k (x_k − x̄_k)² on the free features, and the box of the queries."""

    w_sqrt: np.ndarray  # (D,) float64 √w
    free: np.ndarray  # (D,) bool: the features that may change
    lo: np.ndarray  # (R, D) float64: R = 1, one box shared by every query, or R = N, one each
    hi: np.ndarray  # (R, D) float64


class UserRows(NamedTuple):
    """The user's constraints ``C x ≤ c``."""

    C: np.ndarray  # (m, D) float64
    c: np.ndarray  # (m,) float64


class Settings(NamedTuple):
    """The margin and the iteration limit of the solver."""

    eps: float  # margin ε: rows A[i, j]·x ≤ b[i, j] − ε
    max_iter: int  # NNLS steps per target prototype


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
def _solve_query(x0, target, tables, metric, r, user, settings):
    """Algorithm 1 for one query: the best of the LDPs of the target class's prototypes.

    For each prototype p_i of class ``target`` the LDP of the module docstring, rows
    A[i, j]·x ≤ b[i, j] − eps for valid j, C x ≤ c, box row r of ``metric``, the frozen
    features fixed; then the one copy of the rule that picks the answer, for a single query
    (called from Python by :func:`lvq_fast_batch`) and for each row of a batch
    (:func:`_fast_row`): a prototype's answer counts when its status is OK or MAXITER and wins
    on a strictly smaller distance (the first of equal ones stays); when none counts, the
    status is NUMERIC if any prototype's was, else INFEASIBLE.

    One kernel, the prototype's LDP written in its loop: a kernel per prototype called from
    here would be linked into this one, and LLVM would optimise and emit all of its code (the
    LDP, NNLS and ``dgelsd`` below it) twice on a first query, about 1 CPU s (issue 54);
    inlined (``inline="always"``), about 0.3 CPU s more of this kernel's own compile time than
    written here (2.0 against 1.7 s, three and six runs on an empty cache, 2026-11-30). A
    single query compiles this kernel and no batch kernel (those link it).

    Returns (x, dist, best, nit, status): the answer (x̄ when none), its distance (inf when
    none), the winning prototype (−1 when none) and the NNLS steps of all the target's LDPs.
    """
    A_all, b_all, valid, proto_cls = tables
    w_sqrt, free, lo_all, hi_all = metric
    lo = lo_all[r]
    hi = hi_all[r]
    C, c = user
    eps, max_iter = settings
    D = x0.shape[0]
    fidx = np.flatnonzero(free)
    nf = fidx.size
    M = A_all.shape[1]
    mu = C.shape[0]
    maxrows = M + mu + 2 * nf
    inv_w = 1.0 / w_sqrt
    x_best = x0.copy()
    dist_best = np.inf
    # int64 throughout: one type on every path, none typed from a literal first
    best = np.int64(-1)
    nit = np.int64(0)
    status_best = np.int64(_INFEASIBLE)
    worst_status = np.int64(_INFEASIBLE)
    for i in range(proto_cls.shape[0]):
        if proto_cls[i] != target:
            continue
        # --- the LDP of prototype i: rows G u ≥ h in u = √w (x − x̄) on the free features
        A = A_all[i]
        b = b_all[i]
        valid_j = valid[i]
        G = np.zeros((maxrows, nf))
        h = np.zeros(maxrows)
        nr = 0
        infeasible = False
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
                # a·x̄; the row's coefficients (per unit of u) and the terms of a·x̄ at their
                # own scale (an absolute floor of 1 dropped every row of prototypes of scale
                # 1e-20 as free of the free features: "infeasible")
                ax = 0.0
                scale = 0.0
                amax = 0.0
                for k in range(D):
                    a = A[j, k] if kind == 0 else C[j, k]
                    term = a * x0[k]
                    ax += term
                    scale = max(scale, abs(term))
                    amax = max(amax, abs(a) * inv_w[k])
                # the plain Σ g² only where no g² can overflow (amax bounds every |g|): run
                # without the JIT, an overflowing g * g warns (an error under the test suite's
                # filters)
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
                    # scaled by the largest entry: Σ g² underflowed to 0 for entries of 2e-200
                    # (a metric Λ = 1e-200) and the row was taken as free of the free features
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
                nr += 1
        for q in range(nf):
            k = fidx[q]
            if np.isfinite(lo[k]):  # u_q ≥ √w (lo − x̄)
                G[nr, q] = 1.0
                h[nr] = w_sqrt[k] * (lo[k] - x0[k])
                nr += 1
            if np.isfinite(hi[k]):  # −u_q ≥ −√w (hi − x̄)
                G[nr, q] = -1.0
                h[nr] = -w_sqrt[k] * (hi[k] - x0[k])
                nr += 1
        # --- its solution: x, its distance dd and status st (INFEASIBLE: no x)
        x = x0.copy()
        dd = np.inf
        it = 0
        st = _INFEASIBLE
        if not infeasible:
            u, _, it, st = ldp(np.ascontiguousarray(G[:nr]), h[:nr].copy(), max_iter)
            if st != _INFEASIBLE:
                umax = 0.0
                for q in range(nf):
                    k = fidx[q]
                    x[k] = x0[k] + u[q] / w_sqrt[k]
                    umax = max(umax, abs(u[q]))
                # ‖u‖: the plain Σ u² where no u² can overflow, else scaled by max |u| (run
                # without the JIT, an overflowing u * u warns); beyond √(max double) it is a
                # numerical failure, as when Σ u² was inf
                if umax <= 1e150:
                    dist2 = 0.0
                    for q in range(nf):
                        dist2 += u[q] * u[q]
                    dd = np.sqrt(dist2)
                else:
                    dd = _norm_scaled(u, nf)
                if not dd < 1.3407807929942596e154:  # √(max double)
                    dd = np.inf
                    st = _NUMERIC
        # --- the rule: prototype i's answer against the best so far
        nit += it
        if st == _OK or st == _MAXITER:
            if dd < dist_best:
                dist_best = dd
                x_best = x
                best = i
                status_best = st
        elif st == _NUMERIC:
            worst_status = _NUMERIC
    if best < 0:
        status_best = worst_status
    return x_best, dist_best, best, nit, status_best


@kernel()
def _fast_row(a, X0, tgt, tables, metric, user, settings, out):
    """Query a of :func:`lvq_fast_batch`: :func:`_solve_query`, written into row a of ``out``.

    Takes the arguments of :func:`lvq_fast_batch` and its output arrays ``out``.
    """
    X, dist, best, nit, status = out
    r = a if metric.lo.shape[0] > 1 else np.int64(0)  # the query's box: its own or the shared one
    x, dist[a], best[a], nit[a], status[a] = _solve_query(
        X0[a], tgt[a], tables, metric, r, user, settings
    )
    # (a loop: a slice assignment compiles NumPy's shape-mismatch message)
    for k in range(X0.shape[1]):
        X[a, k] = x[k]


def lvq_fast_batch(X0, tgt, tables, metric, user, settings, parallel):
    """Algorithm 1 with the exact LDP per target prototype, for N queries (parallel over queries).

    Parameters
    ----------
    X0 : (N, D) queries; tgt : (N,) target class index per query; tables : :class:`Tables` of
    the model; metric : :class:`Metric`, its box lo, hi of shape (R, D) with R = 1 (one box
    shared by every query, e.g. ``lo[None]``) or R = N (row a is the box of query a); user :
    :class:`UserRows`; settings : :class:`Settings`; parallel : bool, run the rows on the batch
    threads (a batch) or in the calling thread (same row code, same bits). A single query that
    is not parallel calls :func:`_solve_query` itself, with the same bits as in a batch: no
    batch kernel to compile on a first call (the serial one links :func:`_solve_query` and
    LLVM emits its code again, ~1 CPU s; the parallel one took 5–7 s when it was a ``prange``
    kernel).

    Returns
    -------
    X : (N, D); dist : (N,); best : (N,) index of the winning prototype (−1 if none);
    nit : (N,); status : (N,)
    """
    if not parallel and X0.shape[0] == 1:
        x, dist, best, nit, status = _solve_query(X0[0], tgt[0], tables, metric, 0, user, settings)
        i64 = np.int64
        return (
            x.reshape(1, -1),
            np.array([dist]),
            np.array([best], i64),
            np.array([nit], i64),
            np.array([status], i64),
        )
    return _fast(parallel, X0, tgt, tables, metric, user, settings)


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
