"""Short paths of the common single query of :class:`fastcf.LinearExplainer` (paper 000).

The common query is one finite float64 x̄ with a known target and no options (no frozen features,
weights or bounds; the default method). Its arguments are checked by type tests only
(:func:`plain_query`), and it calls the same kernels as the public method, in the same order on
the same arrays, so the answers are the same bits (``tests/test_linear_latency_paths.py``):

* :func:`constrained_one`, ``region=True`` and ``proba=τ``: the work of
  :func:`fastcf._linear.verify.region`, :func:`fastcf._linear.softmax.constrained` /
  :func:`fastcf._linear.binary.project`, their verdict and the explainer's ``_verify`` for one
  row, without what they recompute (the answer's logits and probabilities, formed once; the
  rounding need, computed once for the margin loop and the verification). A query that would
  need a raised margin (logits ~1e10) returns ``None`` and takes the long path. A softmax
  query makes the long path's one kernel call (``region_rows`` / ``proba_rows``) and judges its
  answer as ``softmax.judge`` does, with scalars; a ``proba=τ`` answer short of
  τ goes on in the long path's re-solve loop (:func:`fastcf._linear.softmax.proba_solution`).

Why a second route for one query: it is 3.4–4.0× faster. ``docs/scripts/short_path.py``
(2026-11-26, both timed alternately in one process) measured the short path at 28–46 µs and
the long path (the same row as a batch of one) at 100–156 µs for ``region=True`` and
``proba=0.9`` on breast cancer (30 features, binary) and digits (64 features, 10 classes);
``lam=`` (:func:`fastcf._linear.paths.explain_one`) 25–36 µs against 50–60 µs. Its equality
with the long path is held by the bit tests, not by construction.

Every guarantee of the long path holds: a success is rechecked in the model's own arithmetic
(``check_logits``, BLAS one row at a time) against the rounding need, and ``proba=`` meets τ in
both the row kernels' and BLAS's probabilities.
"""

from __future__ import annotations

import math

import numpy as np

from .._kernels import logistic as _lk
from .._kernels.linalg import dot as _dot
from .._resolve import ROUNDS
from .._status import BOUNDARY_MESSAGE, Status, messages
from ..results import Solution
from . import fallbacks as _fb
from .model import BinaryModel
from .softmax import PROBA_METHOD as _PROBA_METHOD
from .softmax import REGION_METHOD as _REGION_METHOD
from .softmax import honest_infeasible, proba_solution, rows_proba, rows_region
from .verify import keep_source, solution

__all__ = ["constrained_one", "plain_query"]

_OK = int(Status.OK)
_NUMERIC = int(Status.NUMERIC)
_MAXITER = int(Status.MAXITER)
_INFEASIBLE = int(Status.INFEASIBLE)
_BELOW_DECISION = int(Status.BELOW_DECISION)
_PENDING = int(Status.PENDING)
_NO_BOX = (np.empty((1, 0)), np.empty((1, 0)))  # the logistic kernels' box when there is none


def plain_query(ex, x, target, tol, max_iter):
    """Return (k, x·x) for the common query, or ``None`` when anything is unusual.

    The common query: one finite float64 C-contiguous x̄ of the right length, a known target,
    a float ``tol`` and an int ``max_iter`` in range (type tests only); on ``None`` the public
    method validates (and raises) as usual.
    """
    if (
        type(x) is not np.ndarray
        or x.ndim != 1
        or x.dtype != np.float64
        or x.shape[0] != ex.n_features_in_
        or not x.flags.c_contiguous
        or type(tol) is not float
        or not 0.0 < tol < math.inf
        or type(max_iter) is not int
        or max_iter < 1
    ):
        return None
    try:
        k = ex._class_index.get(target.item() if hasattr(target, "item") else target)
    except TypeError:  # unhashable
        return None
    if k is None:
        return None
    # one pass, no warnings: x·x is finite iff x is (and not huge: those go the long way).
    # Not NumPy's x @ x: OpenBLAS runs a long dot on its own threads, which then spin and
    # slowed the parallel row kernel that follows 12× at (131 072, 16) on 2 cores
    xx = _dot(x, x)
    if not math.isfinite(xx):
        return None
    return k, xx


def constrained_one(ex, x, target, proba, margin, tol, max_iter):
    """Answer one common ``proba=τ`` (``margin`` None) or ``region=True`` query, or ``None``.

    ``proba``: a float in (0, 1) or None; ``margin``: a float ≥ 0 or None (type tests here).
    """
    if proba is not None:
        if type(proba) is not float or not 0.0 < proba < 1.0:
            return None
    elif type(margin) is not float or not 0.0 <= margin < math.inf:
        return None
    plain = plain_query(ex, x, target, tol, max_iter)
    if plain is None:
        return None
    k = plain[0]
    X = x[None, :]
    tidx = np.array([k], dtype=np.int64)
    model, m = ex._model, ex._cache.default
    if getattr(model, "close_rows", False):  # the long path's shifted re-solves
        return None
    if proba is not None and not isinstance(model, BinaryModel):
        # the long path's solver (one kernel call per round, its own checks) and verification
        sol = _softmax_proba_one(model, X, k, tidx, m, proba, tol, max_iter)
        return ex._package(ex._verify(sol, tidx, proba), X, tidx, ex.feature_names_in_, True)
    if isinstance(model, BinaryModel):
        found = _binary_one(model, X, k, tidx, m, proba, margin)
    else:
        found = _softmax_region_one(model, X, k, tidx, m, margin)
    if found is None:
        return None
    Xs, P, dist, st, ok, nit, lam, method, Zc, need, bound, cert = found
    bad = False
    if ok and not cert:  # _verify: the model's own arithmetic (BLAS, one row), beyond the need
        with np.errstate(over="ignore", invalid="ignore"):
            Zc = model.check_logits(Xs) if Zc is None else Zc
            tm = model.target_margin(Zc, tidx)[0]
            # the cheap upper bound of the need decides most answers; the exact need the rest
            if not tm > (_need_bound(model, Xs) if bound is None else bound):
                need = model.rounding_need(Xs, tidx) if need is None else need
                bad = not (np.isfinite(need[0]) and tm > need[0])
            if not bad and proba is not None:
                bad = not model.proba_from_logits(Zc)[0, k] >= proba
        if bad:
            st, ok = _NUMERIC, False
    status = np.array([st], dtype=np.int64)
    success = np.array([ok])
    msg = [BOUNDARY_MESSAGE] if bad else messages(status, success, method)
    sol = Solution(Xs, P, dist, success, status, nit, method, msg, lam, None)
    if proba is not None and not (ok and dist[0] == 0.0) and _source_may_meet(model, X, k, proba):
        sol = keep_source(model, X, tidx, sol, proba)
    return ex._package(sol, X, tidx, ex.feature_names_in_, True)


def _softmax_proba_one(model, X, k, tidx, m, proba, tol, max_iter):
    """:func:`~fastcf._linear.softmax.proba_solution` and ``keep_source`` for one softmax row.

    The common case, done here with less Python around the kernel: the first solve is final
    (its answer not short of τ in the model's arithmetic): the solution ``proba_solution``
    builds after its first round, judged as :func:`~fastcf._linear.softmax.judge` does,
    with scalars (the certificate may use the cheap bound in Python floats instead of NumPy's;
    either way a success is a success). Otherwise ``proba_solution`` goes on from that first
    solve and verdict: the same bits either way. ``keep_source`` is skipped where the kernel's
    log p_k(x̄) is below log τ by more than the rounding of two evaluations of it can cover
    (:func:`_need_bound` bounds twice the logits' part; 1e-9 covers the evaluation of the
    softmax): BLAS's p_k(x̄) is then below τ, so x̄ cannot meet it.
    """
    log_tau = math.log(proba)
    out = rows_proba(model, X, tidx, np.array([log_tau]), m, tol, max_iter)
    Xs, _Y, dist, lamv, nit, status, lp0 = out
    st = int(status[0])
    with np.errstate(over="ignore", invalid="ignore"):
        Z = model.check_logits(Xs)
        P = model.proba_from_logits(Z)
    pk = P[0, k]
    cert = False
    if st == _OK:
        z = Z[0]
        if not pk >= proba:
            st = _PENDING
        elif int(np.argmax(z)) != k:
            st = _BELOW_DECISION
        else:
            tm = _margin_one(z, k)
            cert = tm > _need_bound(model, Xs)
            if not cert:  # judge's exact test: within rounding of the class boundary, re-solve
                with np.errstate(over="ignore", invalid="ignore"):
                    need = model.rounding_need(Xs, tidx)[0]
                if not (math.isfinite(need) and tm > need):
                    st = _PENDING
    status = np.array([st], dtype=np.int64)
    if st == _INFEASIBLE:  # the λ-search's verdict, checked by the region form
        status = honest_infeasible(model, X, tidx, m, proba, status)
        st = int(status[0])
    if st == _PENDING or st == _MAXITER:  # re-solves (MAXITER: proba_solution's "stuck" rows)
        judged = (P, status, np.zeros(1, dtype=bool), np.array([pk]))
        sol = proba_solution(model, X, tidx, m, proba, tol, max_iter, (out, judged))
    else:
        success = np.array([st == _OK])
        certified = np.array([cert])
        sol = solution(Xs, P, dist, success, status, nit, lamv, None, _PROBA_METHOD, certified)
    if sol.certified is None or not sol.certified[0]:  # as model.constrained does
        sol = _fb.retry(model, sol, X, tidx, m, proba, None, tol, max_iter)
    if sol.success[0] and sol.distance[0] == 0.0:
        return sol
    if lp0[0] + _need_bound(model, X) + 1e-9 < log_tau:  # x̄ surely below τ
        return sol
    return keep_source(model, X, tidx, sol, proba)


def _margin_one(z, k):
    """Return z_k − max_{j≠k} z_j of one row of logits (``target_margin``, with scalars)."""
    zo = z.copy()
    zo[k] = -np.inf
    return float(z[k] - zo.max())


def _source_may_meet(model, X, k, proba):
    """Return whether x̄ may meet ``proba=τ`` as the model computes it (a cheap, loose test).

    For :func:`~fastcf._linear.verify.keep_source`, which decides exactly: binary models by
    their logit at x̄ in BLAS's arithmetic against θ = logit τ, with a slack (1e-9 relative to
    |θ|, 1/τ and 1/(1 − τ), the scales of logit τ's sensitivity) far above the rounding that
    separates "ζ̄ ≥ θ" from "σ(ζ̄) ≥ τ"; a false "may" only costs the exact test. Softmax models:
    always (their exact test is their cheap one).
    """
    if not isinstance(model, BinaryModel):
        return True
    z = float(model.check_logits(X)[0])
    zk = z if k == 1 else -z
    theta = model.theta(proba)
    return zk >= theta - 1e-9 * (1.0 + abs(theta) + 1.0 / proba + 1.0 / (1.0 - proba))


def _verdict(pred, P, k, st, proba):
    """:func:`fastcf._linear.verify.verdict` of one row of a ``proba=`` / ``region=`` answer."""
    ok = pred == k and st == _OK
    if proba is not None:
        met = bool(P[0, k] >= proba)
        if st == _OK and met and not ok:
            st = _BELOW_DECISION
        ok = ok and met
    if st == _OK and not ok:
        st = _NUMERIC
    return st, ok


def _binary_one(model, X, k, tidx, m, proba, margin):
    """:func:`fastcf._linear.binary.project` and its ``finish`` for one row."""
    sign = 1.0 if k == 1 else -1.0
    theta = model.theta(proba) if proba is not None else margin
    lo, hi = _NO_BOX
    Xs, zeta, status, dist = _lk.project_batch(
        X, model.w, model.c, np.array([sign]), m.vw, m.wt, np.array([theta]), lo, hi, False, False
    )
    z = zeta if k == 1 else -zeta
    P = model.proba_from_logits(z)
    st = int(status[0])
    if st == _OK and not (np.isfinite(Xs).all() and math.isfinite(dist[0])):
        st = _NUMERIC
    st, ok = _verdict(int(z[0] > 0), P, k, st, proba)
    need = bound = None
    # region=True, and proba=τ ≥ 1/2 (margin logit τ: the long path solves it as region=True)
    raisable = proba is None or model.proba_as_region(proba)
    if raisable and st in (_OK, _NUMERIC, _BELOW_DECISION) and np.isfinite(Xs).all():
        rise, need, bound = _margin_need(model, Xs, tidx, theta)  # verify.region's first round
        if rise:
            return None  # verify.region re-solves with a larger margin: the long path
    nit = np.zeros(1, dtype=np.int64)
    return Xs, P, dist, st, ok, nit, None, "projection", None, need, bound, False


def _need_bound(model, Xs):
    """Return an upper bound of ``model.rounding_need`` of the one row ``Xs`` (cheap: O(D)).

    By Cauchy–Schwarz S_i = Σ_j |a_ij x_j| + |b_i| ≤ ‖a_i‖₂ ‖x‖₂ + |b_i|, so the need
    4γ (S_k + max_{j≠k} S_j) ≤ 8γ (max_i ‖a_i‖₂ ‖x‖₂ + max_i |b_i|); the factor 1 + 8γ covers the
    rounding of this bound's own evaluation (a dot product of positive terms and five more
    operations). A margin above the bound is above the need: the exact need (a product with |A|,
    ~10 µs at (64, 10)) is only computed when the bound cannot decide, so the outcome is that of
    the exact need.
    """
    x = Xs[0]
    # Python floats throughout (γ, the norms, x·x): an overflow is inf, silently, as under
    # np.errstate(over="ignore"), without the cost of entering that context per query
    return model.need_of_norm(math.sqrt(_dot(x, x)))


def _margin_need(model, Xs, tidx, margin):
    """Return (rise, need, bound) for a ``region=True`` answer (``verify.region``'s first round).

    ``rise``: the margin, or the answer's own margin in the model's arithmetic, is not above
    the rounding need, so the answer must be re-solved with a larger one (the long path does
    that). ``need``: the exact need, or ``None`` when the cheap bound already shows the margin
    above it with room (not computed). ``bound``: :func:`_need_bound` (the verification reuses
    it).
    """
    bound = _need_bound(model, Xs)
    if margin > 4.0 * bound:
        return False, None, bound
    with np.errstate(over="ignore", invalid="ignore"):
        need = model.rounding_need(Xs, tidx)
        tm = model.target_margin(model.check_logits(Xs), tidx)[0]
        rise = bool((not margin > need[0] or not tm > need[0]) and np.isfinite(2 * need[0]))
    return rise, need, bound


def first_round_rises(model, sol, i, tidx, margin):
    """Tell whether ``verify.region``'s first round re-solves row ``i`` of ``sol`` (one target).

    For the short paths that answer one row (:func:`l1_row`) or a few alternatives of one
    query (``manhattan.binary_flipsets``) as the long path would: a success, or a failure a
    larger margin can repair, whose margin is not above its rounding need.
    """
    if sol.status[i] not in (_OK, _NUMERIC, _BELOW_DECISION) or not math.isfinite(sol.distance[i]):
        return False
    return _margin_need(model, sol.x[i : i + 1], tidx[:1], margin)[0]


def _softmax_region_one(model, X, k, tidx, m, margin):
    """:func:`fastcf._linear.softmax.region_solution` for one ``region=True`` row.

    Judged as :func:`~fastcf._linear.softmax.judge` does, with scalars (the certificate
    may use the cheap bound in Python floats; either way a success is a success). ``None`` (the
    long path) for a singular dual, where ``verify.region`` would raise the margin, and for
    the rows ``fallbacks.input_space_retry`` re-solves (a numerical failure, the iteration
    limit, an answer within rounding of the class boundary).
    """
    K = model.A.shape[0]
    margins = np.array([margin])
    Xs, _Y, dist, nit, status = rows_region(model, X, tidx, margins, m, 1e-12, 10 * K + 100)
    st = int(status[0])
    if st == _PENDING:  # a singular dual (D < K − 1): the rank-revealing solve, the long way
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        Z = model.check_logits(Xs)
        P = model.proba_from_logits(Z)
    need = bound = None
    if st == _OK and int(np.argmax(Z[0])) != k:  # (an OK answer is finite: the kernel checked)
        st = _NUMERIC
    if st == _NUMERIC or st == _MAXITER:
        return None  # verify.region's raise, or model.constrained's re-solve: the long path
    cert = False
    if st == _OK:
        rise, need, bound = _margin_need(model, Xs, tidx, margin)  # verify.region's first round
        if rise:
            return None  # verify.region re-solves with a larger margin: the long path
        tm = _margin_one(Z[0], k)
        cert = tm > bound
        if not cert:  # within rounding of the boundary: the input-space re-solve too
            with np.errstate(over="ignore", invalid="ignore"):
                need = model.rounding_need(Xs, tidx) if need is None else need
            if not (np.isfinite(need[0]) and tm > need[0]):
                return None
    return Xs, P, dist, st, st == _OK, nit, None, _REGION_METHOD, Z, need, bound, cert


def manhattan_one(ex, x, target, proba, margin, weights, tol, max_iter):
    """Answer one common ``metric="manhattan"`` ``proba=`` / ``region=True`` query.

    The long path's solver (:func:`fastcf._linear.manhattan.constrained_l1`: the binary kernel,
    or the softmax dual simplex / λ-search, and its ``finish``), verification and result, with
    the argument checks reduced to type tests and ``verify.region``'s first round on one row:
    the same bits. ``weights`` None or ``"mad"`` (with ``fit_mad`` done); ``None`` (the long
    path) whenever anything is unusual.
    """
    model = ex._model
    if proba is not None:
        if type(proba) is not float or not 0.0 < proba < 1.0:
            return None
    elif type(margin) is not float or not 0.0 <= margin < math.inf:
        return None
    cost = _unit_cost(ex, weights)
    if cost is None:
        return None
    plain = plain_query(ex, x, target, tol, max_iter)
    if plain is None:
        return None
    X = x[None, :]
    tidx = np.array([plain[0]], dtype=np.int64)
    sol = l1_row(model, X, tidx, cost[0], cost[1], None, proba, margin, tol, max_iter)
    if sol is None:
        return None
    if (
        proba is not None
        and not (sol.success[0] and sol.distance[0] == 0.0)
        and _source_may_meet(model, X, int(tidx[0]), proba)
    ):
        sol = keep_source(model, X, tidx, sol, proba)
    return ex._package(ex._verify(sol, tidx, proba), X, tidx, ex.feature_names_in_, True)


def l1_row(model, X, tidx, cost, free, bnd, proba, margin, tol, max_iter):
    """Solve one Manhattan ``proba=`` / ``region=True`` row as the long path does.

    :func:`fastcf._linear.manhattan.constrained_l1` (the binary knapsack kernel, or the softmax
    LP / λ-search, and its ``finish``) and, for ``region=True``, ``verify.region``'s first round
    on the one row: ``None`` when the margin is below the answer's rounding need (the long path
    re-solves with a larger one), else the same :class:`~fastcf.results.Solution` as the long
    path.
    """
    from .manhattan import constrained_l1

    margins = None if proba is not None else np.array([margin])
    if model.proba_as_region(proba):
        margin = model.theta(proba)  # solved as region=True at margin logit τ (the long path)
        margins = np.array([margin])
    # region=True (and proba=τ solved as region): the long path's call, without the LP's own
    # re-solves (rounds=0: verify.region's are the only ones; with them this short path gave
    # other bits than the long path, and enumerate's first answer differed from explain's by
    # 6e-12 where the LP met its margin to its tolerance: soak find)
    rounds = 0 if margins is not None else ROUNDS
    sol = constrained_l1(
        model, X, tidx, cost, free, bnd, proba, margins, tol, max_iter, rounds=rounds
    )
    if margins is not None and first_round_rises(model, sol, 0, tidx, margin):
        return None  # verify.region re-solves with a larger margin: the long path
    return sol


def _unit_cost(ex, weights):
    """Return (cost, all-free mask) for ``weights`` None or ``"mad"`` (cached), else None."""
    if weights is None:
        key = None
    elif type(weights) is str and weights == "mad" and ex.mad_ is not None:
        key = id(ex.mad_)
    else:
        return None
    hit = ex.__dict__.get("_l1_cost")
    if hit is not None and hit[0] == key and (key is None or hit[3] is ex.mad_):
        return hit[1], hit[2]
    D = ex.n_features_in_
    cost = np.ones(D) if key is None else 1.0 / ex.mad_
    free = np.ones(D, dtype=bool)
    ex.__dict__["_l1_cost"] = (key, cost, free, ex.mad_)
    return cost, free
