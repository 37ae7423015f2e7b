"""The rank-revealing ``region=True`` solves of softmax models (paper 000, §3).

K-space's dual QP of the target's region needs its Hessian Q = D V Dᵀ nonsingular on the
active set. Where it is singular in floating point (fewer free directions than classes compete,
frozen features, or rows equal to rounding), the kernel marks the row PENDING and these solve it:

* :func:`region_singular`: the same dual by NNLS (Lawson & Hanson, ch. 23), for one row;
* :func:`resolve_singular`: every PENDING row of a batch through it;
* :func:`region_primal`: the least-distance program in the D features itself, by a primal active
  set whose working rows are solved by SVD (the rows' rounding, not K-space's, decides).

Moved unchanged from :mod:`fastcf._linear.softmax` (which calls them).
"""

from __future__ import annotations

import math

import numpy as np

from .._status import Status
from .verify import Raw

__all__ = ["region_singular", "resolve_singular", "region_primal", "REGION_PRIMAL_METHOD"]

_NUMERIC = int(Status.NUMERIC)
_OK = int(Status.OK)
_PENDING = int(Status.PENDING)
_INFEASIBLE = int(Status.INFEASIBLE)
_EPS_F = float(np.finfo(float).eps)
REGION_PRIMAL_METHOD = "least distance (primal active set, SVD)"


def region_singular(zbar, k, margin, A, v):
    """Return (y, status): ``region_dual`` for a row whose dual Q = D V Dᵀ is singular.

    Q has rank r < K − 1 when fewer directions are free than classes compete (frozen features,
    D < K − 1): then some margin rows are linear combinations of others, and the active set of
    the kernel (which needs Q_PP nonsingular) cannot tell "met together" from "contradictory".
    Here Q = R Rᵀ with R = D V^{1/2} (K−1, D) formed from ``A`` and the metric's ``v``, where a
    row that no free feature moves is exactly 0, and the least-distance program
    min ½‖v‖² s.t. R v ≥ c — the same dual, so the same multipliers ν — is solved by NNLS
    (Lawson & Hanson, *Solving Least Squares Problems*, ch. 23: with unit rows G = R/‖R_a‖,
    h = c/‖R_a‖ and E = [Gᵀ; hᵀ], the NNLS solution ν̂ of min ‖E ν̂ − e_{r+1}‖ gives
    ν = ν̂ / (1 − hᵀν̂) / ‖R_a‖; a vanishing 1 − hᵀν̂ proves infeasibility). Rare (only singular
    rows come here), so SciPy, not a kernel. (R used to come from Q's eigendecomposition, whose
    error of ε √(max λ) per entry made it call rows below 1e-7 √(max λ) immovable: a row of 1e-8
    beside one of 10⁴, a move of 10⁸, was called infeasible; soak round N.)
    """
    from scipy.optimize import nnls

    K = zbar.shape[0]
    others = np.array([j for j in range(K) if j != k])
    c = margin - (zbar[k] - zbar[others])
    y = np.zeros(K)
    on = v > 0.0
    R = (A[k, on] - A[others][:, on]) * np.sqrt(v[on])
    norms = np.linalg.norm(R, axis=1)
    live = norms > 0.0
    if not live.any():  # no free direction moves any margin
        return y, (_OK if (c <= 0).all() else _INFEASIBLE)
    if (c[~live] > 0.0).any():  # a margin no free direction changes, unmet
        return y, _INFEASIBLE
    with np.errstate(over="ignore", invalid="ignore"):
        Gn = R[live] / norms[live, None]
        h = c[live] / norms[live]
    if not (np.isfinite(h).all() and np.isfinite(Gn).all()):
        # a margin beyond the doubles in units of its row (rows of norm ~1e-300 against a
        # margin of 1: soak round Q, an overflow warning): out of the NNLS's reach
        return y, _NUMERIC
    # The program is homogeneous in h: v(s h) = s v(h) and ν(s h) = s ν(h) for s > 0. Solve it
    # for h / max(h): Lawson & Hanson's 1 − hᵀν̂ is 1 / (1 + ‖v‖²) at the optimum, so with an
    # unscaled h of 10⁶ it fell under the infeasibility threshold of a feasible row, and at
    # smaller moves it lost digits of ν to the division by it (soak round M, seed 11542).
    s = float(h.max())
    if s <= 0.0:  # x̄ meets every live margin already: v = 0, ν = 0
        return y, _OK
    h = h / s
    r = Gn.shape[1]
    E = np.vstack([Gn.T, h[None, :]])
    f = np.zeros(r + 1)
    f[r] = 1.0
    nuh, _ = nnls(E, f, maxiter=50 * (K + r + 10))
    denom = 1.0 - float(h @ nuh)
    if denom <= 1e-12:
        # infeasible only with a Farkas certificate: ν̂ ≥ 0 with hᵀν̂ ≈ 1 and Gnᵀν̂ = 0 to
        # rounding in every feature, relative to that feature's own terms Σ_a |Gn_ai| ν̂_a. A
        # feasible answer ~1e9 times the rows' scale away also gives 1 − hᵀν̂ = 1/(1 + ‖v‖²)
        # ≈ 0, but there some feature's column does not cancel (rows (−1, 1e-9) and
        # (0.5, 1e-9): the second feature, soak round N): a numerical failure, not a proof
        with np.errstate(over="ignore", invalid="ignore"):
            res = np.abs(Gn.T @ nuh)
            scale = np.abs(Gn.T) @ nuh
        if (res <= 1e-8 * scale).all():
            return y, _INFEASIBLE
        return y, _NUMERIC
    nu = np.zeros(K - 1)
    with np.errstate(over="ignore", invalid="ignore"):
        nu[live] = s * nuh / denom / norms[live]
        total = nu.sum()
    if not (np.isfinite(nu).all() and math.isfinite(total)):
        return np.zeros(K), _NUMERIC  # a move beyond the doubles (rows of norm ~1e-300)
    # NNLS's ν is accurate to ~1e-15 relative, so a margin raised by its rounding need (~1e-14
    # of a logit difference) could be lost in it (a three-way tie at margin 7e-15 came back at
    # the tie, soak round N): the active rows' equalities R_P R_Pᵀ ν_P = c_P, solved again
    # (rows with ν ≤ 1e-12 max ν are degenerate copies of active ones: left at 0). Kept when
    # ν_P ≥ 0 and every row then holds to rounding
    P = nu > 1e-12 * nu.max()
    if P.any():
        RP = R[P]
        with np.errstate(all="ignore"):
            nuP = np.linalg.lstsq(RP @ RP.T, c[P], rcond=None)[0]
            nu2 = np.zeros_like(nu)
            nu2[P] = nuP
            Rw = R @ (R[P].T @ nuP)
            tol = 8 * _EPS_F * (np.abs(R) @ np.abs(R[P].T @ nuP) + np.abs(c))
        if np.isfinite(nuP).all() and (nuP >= 0.0).all() and (Rw >= c - tol).all():
            nu = nu2
            total = nu.sum()
    y[others] = -nu
    y[k] = total
    return y, _OK


def region_primal(model, X, tidx, m, margins, box=None):
    """``region=True`` rows by a primal active set in x (no K-space, no normal equations).

    The region's nearest point is the least-distance program min ‖u‖² s.t. R u ≥ c, with
    R = D V^{1/2} (the margin rows a_k − a_j on the free features, scaled by the metric) and
    x = x̄ + V^{1/2} u. The K-space dual solves it through Q = R Rᵀ, whose condition is that of
    R squared, and NNLS (:func:`region_singular`) through 1 − hᵀν̂ = 1/(1 + ‖u‖²), which
    vanishes for answers ~10⁸ times the rows' scale away: a row of 6e-8 (2⁻²⁴) beside rows of 1
    put both out of reach (soak round Q, seed 316; round N's nearly opposite rows, 1e-9). Here
    each step solves the working rows' equalities R_W u = c_W for the least-norm u by SVD
    (:func:`_least_norm`: the condition of R, not its square) and their multipliers from
    u = R_Wᵀ ν;
    a row with ν < 0 leaves, the most violated row enters, until every row holds to rounding
    with ν ≥ 0 (the KKT conditions of the convex program) or 4 × (rows) + 20 steps. Rows not
    solved keep status NUMERIC. ``box``: (lo, hi) of one query (the same for every row of X),
    whose finite sides on the free features join R as rows √v_i u_i ≥ lo_i − x̄_i and
    −√v_i u_i ≥ x̄_i − hi_i (for up to 2 000 free features: a fallback, not a solver for large
    boxes; beyond that the row is left NUMERIC). Returns the raw answers
    (:class:`~fastcf._linear.verify.Raw`), as the other solvers in R^D.
    """
    N, D = X.shape
    A_, v = model.A, m.v
    K = A_.shape[0]
    Zbar = model.check_logits(X)
    on = v > 0.0
    sv = np.sqrt(v[on])
    Xs = X.copy()
    status = np.full(N, _NUMERIC, dtype=np.int64)
    nit = np.zeros(N, dtype=np.int64)
    for n in range(N):
        k = int(tidx[n])
        others = np.array([j for j in range(K) if j != k])
        R = (A_[k, on] - A_[others][:, on]) * sv
        c = margins[n] - (Zbar[n, k] - Zbar[n, others])
        if box is not None:
            lo, hi = box[0][on], box[1][on]
            fl, fh = np.isfinite(lo), np.isfinite(hi)
            if fl.any() or fh.any():
                if on.sum() > 2000:
                    continue
                eye = np.diag(sv)
                x0 = X[n, on]
                R = np.vstack([R, eye[fl], -eye[fh]])
                c = np.concatenate([c, lo[fl] - x0[fl], x0[fh] - hi[fh]])
        if not (np.isfinite(R).all() and np.isfinite(c).all()):
            continue
        u = np.zeros(R.shape[1])
        W = []
        with np.errstate(all="ignore"):
            for it in range(4 * R.shape[0] + 20):
                nit[n] = it + 1
                viol = _violation(R, c, u)
                if len(W) > 1:
                    nu = np.linalg.lstsq(R[W].T, u, rcond=None)[0]
                    nu[-1] = max(nu[-1], 0.0)  # the row just added stays: it was violated
                    if (nu < 0.0).any():
                        W.pop(int(np.argmin(nu)))
                        u = _least_norm(R[W], c[W])
                        continue
                if not (viol > 0.0).any():
                    status[n] = _OK
                    break
                j = int(np.argmax(viol / np.maximum(np.linalg.norm(R, axis=1), 1e-300)))
                if j in W:  # a working row unmet at its own solve: no progress is possible
                    break
                W, u = _enter(R, c, W, j)
                if W is None:
                    break
        if status[n] == _OK:
            Xs[n, on] = X[n, on] + sv * u
            if box is not None:  # on the box's sides to rounding: exactly there
                Xs[n] = np.clip(Xs[n], box[0], box[1])
    return Raw(Xs, nit, status, None, REGION_PRIMAL_METHOD)


def _violation(R, c, u):
    """Return c − R u less its rounding (> 0: the row is unmet).

    The rounding is normwise, 16ε (‖R_j‖ ‖u‖ + |c_j|): what a least-norm solve by SVD can reach
    on every row at once. Against each row's own terms |R_j||u| (componentwise) a side of the box
    u_1 ≤ 0 could not be met by the u_1 ~ 1e-17 that a solve with u_0 ~ 0.09 leaves (soak round Q,
    seed 320); the answers are checked in the model's arithmetic afterwards all the same.
    """
    tol = 16 * _EPS_F * (_norms(R) * _norms(u[None, :])[0] + np.abs(c))
    return c - R @ u - tol


def _norms(M):
    """Return the 2-norms of the rows of M, scaled: no underflow for entries ~1e-263."""
    s = np.abs(M).max(axis=1, initial=0.0)
    t = np.where(s > 0.0, s, 1.0)
    return s * np.sqrt(np.einsum("ij,ij->i", M / t[:, None], M / t[:, None]))


def _holds(R, c, u):
    """Tell whether R u = c holds to the rounding of each row's own terms."""
    return not ((_violation(R, c, u) > 0.0).any() or (_violation(-R, -c, u) > 0.0).any())


def _enter(R, c, W, j):
    """Return (W, u): row j joins the working rows W, with the least-norm u that meets them.

    Where the rows with j cannot all hold as equalities (j depends on them: a side of the box
    that cuts off where a margin row held), one old row leaves: of those whose removal leaves
    equalities that hold and an answer that still meets the removed row, the one giving the
    least norm. (None, u) when no removal does (the caller stops: a numerical failure).
    """
    W2 = W + [j]
    u = _least_norm(R[W2], c[W2])
    if _holds(R[W2], c[W2], u):
        return W2, u
    best = None
    for i in W:
        W3 = [w for w in W2 if w != i]
        u3 = _least_norm(R[W3], c[W3])
        if _holds(R[W3], c[W3], u3) and _violation(R[i : i + 1], c[i : i + 1], u3)[0] <= 0.0:
            if best is None or np.linalg.norm(u3) < np.linalg.norm(best[1]):
                best = (W3, u3)
    return (None, u) if best is None else best


def _least_norm(R, c):
    """Return the least-norm u with R u = c: SVD (``lstsq``), then two steps of refinement.

    The SVD's residual is small against ‖R‖ ‖u‖, and with a row of 0.004 beside a move of 5·10²
    along a column of 6e-8 that was 1.5 times the rounding of that row's own terms |R||u|, so its
    margin failed the test by a hair (soak round Q); a refinement step solves for the residual
    and brings it within that rounding.
    """
    u = np.linalg.lstsq(R, c, rcond=None)[0]
    for _ in range(2):
        u = u + np.linalg.lstsq(R, c - R @ u, rcond=None)[0]
    return u


def resolve_singular(Zbar, tidx, margins, Y, status, A, v):
    """Re-solve in place the rows ``region_batch`` left PENDING (:func:`region_singular`)."""
    for n in np.flatnonzero(status == _PENDING):
        Y[n], status[n] = region_singular(Zbar[n], int(tidx[n]), float(margins[n]), A, v)


# ----------------------------------------------------------------------------------------------
