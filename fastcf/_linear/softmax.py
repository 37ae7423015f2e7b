"""Softmax models by the K-space Newton method (paper 000, §3).

The kernels are those of :mod:`fastcf._kernels.softmax`, whose docstring derives the reduction.

Stationarity of problem (2) puts x* − x̄ in the range of V Aᵀ: with x = x̄ + V Aᵀ y (y ∈ R^K) and
G = A V Aᵀ, the logits are z̄ + G y and ‖x − x̄‖²_W = yᵀ G y, so every solver here works on K
unknowns and touches the D features only to form z̄ = A x̄ + b and the answer x̄ + (Y A) ∘ v.

* :func:`reduced_lam`: problem (2) for N queries, every Newton step of every row in one kernel
  call (``reduced_rows``), with the rounding certificate of each success;
* :func:`constrained`: ``proba=τ`` by a search over λ (``proba_batch``: regula falsi in log λ on
  log p_k(x*(λ)) − log τ) with an ulp re-solve loop, and ``region=True`` by the (K−1)-variable
  dual QP of the target's region (``region_batch``, an exact active set);
* :func:`reduced_path`: problem (2) along a grid of λ, warm-started (§3.4; ``lam_path``);
* :func:`finish`: the verdict, distance and projected gradient norm of answers in R^D (also used
  by the boxed solver and the D-dimensional reference methods, for both families).
"""

from __future__ import annotations

import math

import numpy as np

from .._kernels import softmax as _sk
from .._kernels.linalg import dot as _dot
from .._status import Status
from ..results import CounterfactualPath
from .verify import solution, verdict

__all__ = ["constrained", "finish", "reduced_lam", "reduced_path", "region_singular"]

# the codes as plain ints: NumPy compares an array with an int much faster than with an
# IntEnum member (as the kernels do, see fastcf._kernels)
_NUMERIC = int(Status.NUMERIC)
_OK = int(Status.OK)
_PENDING = int(Status.PENDING)
_INFEASIBLE = int(Status.INFEASIBLE)


def region_singular(zbar, G, k, margin):
    """Return (y, status): ``region_dual`` for a row whose dual Q = D V Dᵀ is singular.

    Q has rank r < K − 1 when fewer directions are free than classes compete (frozen features,
    D < K − 1): then some margin rows are linear combinations of others, and the active set of
    the kernel (which needs Q_PP nonsingular) cannot tell "met together" from "contradictory".
    Here Q = R Rᵀ with R (K−1, r) from its eigendecomposition (eigenvalues below 1e-13 of the
    largest are 0), and the least-distance program min ½‖v‖² s.t. R v ≥ c — the same dual,
    so the same multipliers ν — is solved by NNLS (Lawson & Hanson, *Solving Least Squares
    Problems*, ch. 23: with unit rows G = R/‖R_a‖, h = c/‖R_a‖ and E = [Gᵀ; hᵀ], the NNLS
    solution ν̂ of min ‖E ν̂ − e_{r+1}‖ gives ν = ν̂ / (1 − hᵀν̂) / ‖R_a‖; a vanishing 1 − hᵀν̂
    proves infeasibility). Rare (only singular rows come here), so SciPy, not a kernel.
    """
    from scipy.optimize import nnls

    K = zbar.shape[0]
    others = np.array([j for j in range(K) if j != k])
    Q = G[k, k] - G[k][others][None, :] - G[others][:, k][:, None] + G[np.ix_(others, others)]
    Q = 0.5 * (Q + Q.T)
    c = margin - (zbar[k] - zbar[others])
    lam, U = np.linalg.eigh(Q)
    top = max(float(lam.max()), 0.0)
    keep = lam > 1e-13 * top
    y = np.zeros(K)
    if not keep.any():  # no free direction moves any margin
        return y, (_OK if (c <= 0).all() else _INFEASIBLE)
    R = U[:, keep] * np.sqrt(lam[keep])
    norms = np.linalg.norm(R, axis=1)
    live = norms > 1e-7 * math.sqrt(top)  # rows that free directions move at all
    scale = max(1.0, float(np.abs(zbar).max()))
    if (c[~live] > 1e-12 * scale).any():  # a margin no free direction changes, unmet
        return y, _INFEASIBLE
    Gn = R[live] / norms[live, None]
    h = c[live] / norms[live]
    r = Gn.shape[1]
    E = np.vstack([Gn.T, h[None, :]])
    f = np.zeros(r + 1)
    f[r] = 1.0
    nuh, _ = nnls(E, f, maxiter=50 * (K + r + 10))
    denom = 1.0 - float(h @ nuh)
    if denom <= 1e-12:
        return y, _INFEASIBLE
    nu = np.zeros(K - 1)
    nu[live] = nuh / denom / norms[live]
    y[others] = -nu
    y[k] = nu.sum()
    return y, _OK


def resolve_singular(Zbar, G, tidx, margins, Y, status):
    """Re-solve in place the rows ``region_batch`` left PENDING (:func:`region_singular`)."""
    for n in np.flatnonzero(status == _PENDING):
        Y[n], status[n] = region_singular(Zbar[n], G, int(tidx[n]), float(margins[n]))


def reduced_lam(model, X, tidx, lams, m, tol, max_iter):
    """Problem (2) by the reduced Newton, every step of every row in one kernel call.

    ‖x − x̄‖²_W = yᵀ G y and ‖∇E‖ come from the K-space solver; the logits of the answer,
    their rounding scale, the probabilities and the verdict from the pass that forms it.
    Successes that the rounding bound certifies (``certified``) are not rechecked by
    the explainer's verification.
    """
    N = X.shape[0]
    Xs, P, quad, gn, nit, status, cert = _sk.reduced_rows(
        X,
        model.A,
        model.b,
        m.GV,
        m.GF,
        tidx,
        lams,
        tol,
        max_iter,
        m.v,
        m.unit_v,
        model.gamma,
        _sk.row_mode(N, model.A.shape[1], model.A.shape[0]),
    )
    dist = np.sqrt(np.maximum(quad, 0.0))
    return solution(Xs, P, dist, status == _OK, status, nit, lams, gn, "reduced", cert)


def constrained(model, X, tidx, m, proba, margins, tol, max_iter):
    """``proba=τ`` (``margins`` None) or ``region=True`` (``margins``: one per row)."""
    N = X.shape[0]
    Zbar = model.logits(X)
    if proba is not None:
        log_tau = np.full(N, math.log(proba))
        Y, lamv, nit, status = _sk.proba_batch(
            Zbar, m.GV, m.GF, tidx, log_tau, tol, max_iter, N > 1
        )
        # p_k ≥ τ holds in log space; rounding of the normalised probabilities can leave it
        # an ulp short: re-solve those rows for a τ a few ulps higher
        for _ in range(3):
            # both arithmetics that judge the answer: the row kernels (finish) and
            # predict_proba's BLAS (the explainer's verification)
            Xs = model.expand(X, Y, m)
            rows = np.arange(N)
            short = (status == _OK) & (
                (model.proba_from_logits(model.logits(Xs))[rows, tidx] < proba)
                | (model.proba_from_logits(model.check_logits(Xs))[rows, tidx] < proba)
            )
            if not short.any():
                break
            log_tau[short] += 8 * np.finfo(float).eps * (1 + abs(math.log(proba)))
            idx = np.flatnonzero(short)
            Y2, lam2, nit2, st2 = _sk.proba_batch(
                Zbar[idx], m.GV, m.GF, tidx[idx], log_tau[idx], tol, max_iter, idx.size > 1
            )
            Y[idx], lamv[idx], nit[idx], status[idx] = Y2, lam2, nit[idx] + nit2, st2
        method = "reduced (λ search)"
    else:
        Y, nit, status = _sk.region_batch(
            Zbar, m.GV, tidx, margins, 1e-12, 10 * model.A.shape[0] + 100, N > 1
        )
        resolve_singular(Zbar, m.GV, tidx, margins, Y, status)
        lamv = None
        method = "reduced (dual active set)"
    Xs = model.expand(X, Y, m)
    return finish(model, X, Xs, tidx, nit, status, lamv, m, None, method, proba_min=proba)


def finish(model, X, Xs, tidx, nit, status, lams, m, bnd, method, proba_min=None):
    """Return the :class:`~fastcf.results.Solution` of answers ``Xs`` in R^D.

    The class from the row kernels' logits (the explainer re-checks with ``predict``'s
    arithmetic); for problem (2) (``lams`` given, no ``proba_min``) also the norm of the
    (projected, with ``bnd``) gradient of E at the answer.
    """
    N = X.shape[0]
    v, wt = m.v, m.wt
    Z = model.logits(Xs)
    # a failed answer may be huge or non-finite (NUMERIC below): no warnings for its P
    with np.errstate(over="ignore", invalid="ignore"):
        P, pred = model.rows_proba_pred(Z)
    status = status.copy()
    status[(status == _OK) & ~np.isfinite(Xs).all(axis=1)] = _NUMERIC
    lam_mode = lams is not None and proba_min is None
    success, status = verdict(pred, P, tidx, status, proba_min, lam_mode, False)
    gn = None
    diff = Xs - X
    dist = np.sqrt(np.einsum("ij,ij->i", diff * wt if not np.all(wt == 1) else diff, diff))
    if lam_mode:
        Pm = P.copy()
        Pm[np.arange(N), tidx] -= 1.0
        G = lams[:, None] * wt * diff + Pm @ model.A
        G[:, v == 0] = 0.0
        if bnd is not None:
            lo, hi = bnd
            G = np.where((Xs <= lo) & (G > 0), 0.0, G)
            G = np.where((Xs >= hi) & (G < 0), 0.0, G)
        gn = np.sqrt(np.einsum("ij,ij->i", G, G))
    return solution(Xs, P, dist, success, status, nit, lams, gn, method)


def reduced_path(model, x0, k, target, lams, m, warm, tol, max_iter, names, xx=None):
    """Solve the λ-path of a softmax model without bounds in one kernel call (``lam_path``).

    ``xx``: x0·x0 if the caller has it.
    """
    A_, v = model.A, m.v
    D, K = A_.shape[1], A_.shape[0]
    x0norm = math.sqrt(_dot(x0, x0) if xx is None else xx)
    if not math.isfinite(x0norm):  # x0·x0 overflowed
        x0norm = float(np.linalg.norm(x0))
    zbar = _sk.logits_rows(x0[None, :], A_, model.b, _sk.row_mode(1, D, K))[0]
    Y, P, dist, gn, nit, status, ndoubt = _sk.lam_path(
        zbar,
        m.GV,
        m.GF,
        k,
        lams,
        tol,
        max_iter,
        warm,
        model.row_norms,
        x0norm,
        model.abs_b,
        m.vmax,
        model.gamma_path,
    )

    def form(Yr):
        out = Yr @ A_
        out *= v
        out += x0
        return out

    def XL():  # formed on first access of path.X
        return form(Y)

    # the K-space logits decide the class only where their rounding cannot: under
    # cancellation in G y (a target that can never win, λ → 0, y huge) they can name the
    # target while the point itself is in another class (soak finding); such rows (PENDING)
    # are formed and rechecked as explain() rechecks (model.surely_in)
    if ndoubt:
        rows = np.flatnonzero(status == _PENDING)
        good = model.surely_in(form(Y[rows]), np.full(rows.size, k))[0]
        status[rows] = np.where(good, _OK, _NUMERIC)
    return CounterfactualPath(
        lams=lams,
        X=XL,
        x0=x0,
        target=target,
        proba=P,
        distance=dist,
        nit=nit,
        success=status == _OK,
        status=status,
        grad_norm=gn,
        method="reduced",
        feature_names=names,
    )
