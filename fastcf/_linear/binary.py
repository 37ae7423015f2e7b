"""Binary logistic models in closed form (paper 000, §4; kernels: :mod:`fastcf._kernels.logistic`).

For the logit z(x) = w·x + c and a target of sign s (+1 for ``classes_[1]``, −1 for
``classes_[0]``), the target's logit is ζ(x) = s (w·x + c). With V = W⁻¹ (0 on frozen features):

* problem (2), ``min λ/2 ‖x − x̄‖²_W − log σ(ζ(x))``: stationarity gives
  x* = x̄ + (q/λ) s V w with q = 1 − p_target(x*) = φ(α, ζ̄), α = wᵀVw / λ, ζ̄ = ζ(x̄) — the scalar
  root of Theorem 4.2, computed to full relative precision (:func:`lam_closed_form`); with a box,
  the breakpoints of the clipped ray are walked to the segment that holds the root (exact,
  O(D log D));
* ``proba=τ`` and ``region=True``: the projection of x̄ onto the half-space ζ(x) ≥ θ
  (θ = logit τ, or the margin), piecewise linear in the multiplier with a box (:func:`project`);
* the λ-path: the closed form at every λ (:func:`path`, the raw answers).

The solvers return the kernels' raw answers (:class:`fastcf._linear.verify.Raw`, with the
target logit ζ of each); the route's one finish (:func:`fastcf._linear.verify.finish`) makes
them a :class:`~fastcf.results.Solution`.
"""

from __future__ import annotations

import numpy as np

from .._kernels import logistic as _lk
from .verify import Raw

__all__ = ["kernel_box", "lam_closed_form", "path", "project"]

_EMPTY = np.empty((1, 0))  # the kernels' box when there is none (never read)


def kernel_box(bnd):
    """Return the box as the kernels take it: (lo, hi) of shape (R, D), R = N or 1."""
    if bnd is None:
        return _EMPTY, _EMPTY
    lo, hi = bnd
    return (lo[None], hi[None]) if lo.ndim == 1 else (lo, hi)


def lam_closed_form(model, X, tidx, m, bnd, lams):
    """Problem (2) for N queries by the closed form (one kernel call).

    The answer's ``nit`` is 0 (a closed form); the scalar root's own iterations go to
    ``info["phi_nit"]``. A success whose target logit exceeds 4γ times the rounding scale
    Σ|w_i x_i| + |c| is positive in every evaluation of the model (see
    :func:`fastcf._kernels.softmax._certain_row`): the finish
    (:func:`fastcf._linear.verify.finish`, to which this returns the kernel's raw answers,
    :class:`~fastcf._linear.verify.Raw`) makes it ``certified``, and it is not rechecked.
    """
    N = X.shape[0]
    lo, hi = kernel_box(bnd)
    Xs, zeta, q, nit, status, dist, gn, scale = _lk.lam_batch(
        X,
        model.w,
        model.c,
        tidx,
        m.vw,
        m.wt,
        lams,
        lo,
        hi,
        bnd is not None,
        200,
        m.wvw,
        m.wfree2,
        m.unit_wt,
        N > 1,
    )
    return Raw(
        Xs, np.zeros_like(nit), status, lams, "closed form", {"phi_nit": nit}, zeta, dist, gn,
        scale, m.wvw == 0.0,
    )  # fmt: skip


def project(model, X, tidx, m, bnd, proba, margins):
    """``proba=τ`` or ``region=True``: the closest point with ζ ≥ θ.

    θ = logit τ for ``proba=τ``, raised to ``margins`` where both are given (``proba=τ`` with
    τ ≥ 1/2 is solved as ``region=True`` at margin logit τ by ``verify.region``, whose raises
    keep its answers beyond rounding of the decision boundary). Returns the kernel's raw
    answers (:class:`~fastcf._linear.verify.Raw`); the route finishes them.
    """
    N = X.shape[0]
    if proba is not None:
        theta = model.theta(proba)  # logit τ, so that ζ ≥ θ gives p_target ≥ τ
        thetas = np.full(N, theta) if margins is None else np.maximum(margins, theta)
    else:
        thetas = margins
    lo, hi = kernel_box(bnd)
    Xs, zeta, status, dist = _lk.project_batch(
        X, model.w, model.c, tidx, m.vw, m.wt, thetas, lo, hi, bnd is not None, N > 1
    )
    return Raw(
        Xs, np.zeros(N, dtype=np.int64), status, None, "projection", None, zeta, dist,
        certify=proba is None,
    )  # fmt: skip


def path(model, x0, k, lams, m, bnd):
    """Solve the λ-path of a binary model: the closed form at every λ of ``lams``.

    Returns the raw answers of :func:`lam_closed_form`, one row per λ; the path's route
    (:func:`fastcf._linear.solvers.path`) finishes them and makes them a path.
    """
    L = lams.shape[0]
    Xr = np.repeat(x0[None, :], L, axis=0)
    return lam_closed_form(model, Xr, np.full(L, k), m, bnd, np.ascontiguousarray(lams))
