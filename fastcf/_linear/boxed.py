"""Softmax models with a box ``lo ≤ x ≤ hi`` (``bounds=``; paper 000, §3 with bound constraints).

With a box the answer leaves the range of V Aᵀ, so the K-space reduction of
:mod:`fastcf._linear.softmax` no longer applies as such; it does on each face of the box:

* :func:`bounded_one`, problem (2): a projected Newton method (Bertsekas, 1982). Each iteration
  splits the free features into an ε-active set (at a bound, the gradient pushing outward) and the
  rest F, takes the exact Newton step on F and a scaled gradient step on the active set, then
  backtracks along the projection arc (Armijo). The Newton step on F is the reduced one with the
  metric restricted to F: with v_F = V on F (0 elsewhere), G_F = A diag(v_F) Aᵀ and the Hessian of
  E on F, λ W_F + Aᵀ S A (S = diag(p) − p pᵀ = Tᵀ T, T = Π diag(√p), Π = I − √p √pᵀ), Woodbury
  gives for the gradient g

      d_F = −(V_F g − V_F Aᵀ Tᵀ (λI + T G_F Tᵀ)⁻¹ T A V_F g) / λ,

  a K×K system with eigenvalues ≥ λ, factored and applied by the same kernels as the unboxed
  Newton method (:func:`fastcf._kernels.softmax.core._factor`,
  :func:`~fastcf._kernels.softmax.core._apply_inverse`). Once the active set is identified this is
  Newton's method on a face of the box: quadratic convergence to the exact optimum, KKT residual
  at rounding level. Chosen over L-BFGS-B (only linear convergence, stops at ~1e−8) and over a
  pure active-set loop (can cycle). Cost: O(DK²) per iteration for the restricted Gram matrix.
  Where fewer features are free than there are classes (|F| < K) the step comes from the
  |F|×|F| Hessian itself instead (:func:`_direct_step`): the Woodbury form rounds away a
  coefficient tiny beside the others and cancels at tiny λ (soak round R, seed 371).
  The energy E and its gradient are :func:`fastcf._linear.model.softmax_energy`.
* :func:`proba_bounded_one`, ``proba=τ``: a bisection in log λ over :func:`bounded_one` for
  log p_k(x*(λ)) = log τ (p_k(x*(λ)) increases as λ decreases), warm-started.
  :func:`proba_boxed` runs it row by row, each in its box.

``region=True`` with a box is a QP of its own: :mod:`fastcf._linear.boxed_region`.
"""

from __future__ import annotations

import math

import numpy as np

from .._kernels.softmax.core import _apply_inverse, _factor
from .._resolve import raise_log_tau
from .._stage import reaim
from .._status import Status
from .model import softmax_energy
from .verify import Raw

_EPS = float(np.finfo(float).eps)

__all__ = [
    "LAM_METHOD",
    "PROBA_METHOD",
    "bounded_one",
    "lam_boxed",
    "path_boxed",
    "proba_boxed",
    "proba_bounded_one",
    "row_boxes",
]


def row_boxes(bnd, N):
    """Return the box of each of ``N`` query rows: a list of (lo, hi) of shape (D,), or None.

    The row-by-row solvers (this module's, :mod:`fastcf._linear.boxed_region`'s, the reference
    methods) take their rows' boxes from the route in this form, so that the two layouts of
    ``bnd`` (one box for every row, or one per row) are told apart here, once per call, not by
    each solver (:func:`fastcf._linear.metric.row_box`).
    """
    if bnd is None:
        return None
    if bnd[0].ndim == 1:
        return [bnd] * N
    lo, hi = bnd
    return [(lo[n], hi[n]) for n in range(N)]


def bounded_one(model, x0, k, lam, v, wt, bnd, tol, max_iter, x_init=None, rel=False):
    """Problem (2) with a box for one query: projected Newton (see the module docstring).

    ``rel``: stop at ‖∇E‖ ≤ ``tol`` times the larger of its two forces, λ‖W(x − x̄)‖ and
    ‖Aᵀ(p − e_k)‖ (the λ-search of ``proba=``, whose λ can be ~1e-20 where the model's
    gradient is ~1e-13: an absolute ``tol`` held at x̄ itself, soak round P), not ``tol``.

    Returns
    -------
    x, nit, status, projected gradient norm
    """
    lo, hi = bnd
    A, b, AT = model.A, model.b, model.AT
    K = A.shape[0]
    free0 = v > 0
    x = x0.copy() if x_init is None else np.clip(x_init, lo, hi)
    x[~free0] = x0[~free0]
    M = np.empty((K, K))
    sp = np.empty(K)
    u = np.empty(K)
    t = np.empty(K)

    def val_grad(x):
        return softmax_energy(A, b, x0, k, lam, x, wt, free0)

    def projected(g, x):
        return np.where(((x <= lo) & (g > 0)) | ((x >= hi) & (g < 0)), 0.0, g)

    def limit(x, g):
        if not rel:
            return tol
        # the two forces on the features the projected gradient keeps (a large force
        # against a bound would otherwise set the scale for the free features' tiny ones)
        keep = free0 & ~(((x <= lo) & (g > 0)) | ((x >= hi) & (g < 0)))
        with np.errstate(over="ignore", invalid="ignore"):
            pull = lam * wt[keep] * (x[keep] - x0[keep])
            push = g[keep] - pull
            out = tol * max(float(np.linalg.norm(pull)), float(np.linalg.norm(push)))
        return out if np.isfinite(out) else tol  # (forces past the doubles: no scale)

    E, g, p = val_grad(x)
    eps = np.finfo(float).eps
    width = (hi - lo)[free0]
    span = float(width.max(initial=0.0)) if np.isfinite(width).all() else math.inf
    for it in range(max_iter + 1):
        gn = float(np.linalg.norm(projected(g, x)))
        if gn <= limit(x, g):
            return x, it, Status.OK, gn
        if it == max_iter:
            break
        width = float(np.linalg.norm(x - np.clip(x - g, lo, hi)))
        eps_k = min(1e-6, width)
        active = free0 & (((x <= lo + eps_k) & (g > 0)) | ((x >= hi - eps_k) & (g < 0)))
        F = free0 & ~active
        d = _direct_step(A, p, lam, wt, g, F) if 0 < F.sum() < K else None
        if d is None:
            vF = np.where(F, v, 0.0)
            GF = (A * vF) @ AT
            GF = 0.5 * (GF + GF.T)  # exactly symmetric, as the kernels read it
            if _factor(GF, p, lam, M, sp, u) != Status.OK:
                return x, it, Status.NUMERIC, gn
            Vg = vF * g
            _apply_inverse(M, sp, A @ Vg, t)  # t = Tᵀ (λI + T G_F Tᵀ)⁻¹ T A V_F g
            num = -(Vg - vF * (AT @ t))  # the step times λ
            with np.errstate(over="ignore", invalid="ignore"):
                d = num / lam
        else:
            num = d * lam
        num[active] = -g[active] * v[active]
        with np.errstate(over="ignore", invalid="ignore"):
            d[active] = num[active] / lam  # (the scaled gradient step on the active set)
        steps = _steps(d, num, span)
        if not steps:
            # a Newton step past the doubles (λ ~ 1e-181 from the λ-search's walk down, soak
            # 2026-11-26: it raised an overflow warning) where the box does not bound every
            # free feature: not converged, which the λ-search reports as a numerical failure,
            # never as "infeasible"
            return x, it, Status.NUMERIC, gn
        Escale = 1.0 + abs(E)
        for alpha, d in ((2.0**-i, d) for d in steps for i in range(60)):
            xn = np.clip(x + alpha * d, lo, hi)
            xn[~free0] = x0[~free0]
            with np.errstate(over="ignore", invalid="ignore"):
                # a trial point past the doubles' range (a step ~1/λ at λ ~ e^-700) has an
                # energy of inf or NaN: rejected below, and the step halved; so is a trial
                # whose predicted decrease overflows (a step ~3.5e25 long against a gradient
                # ~1e283 at λ ~ 2e-303: soak 2026-11-29, enumerate of a proba= query whose
                # K-space answer failed) — the comparisons below are False for −inf and NaN
                En, gnew, pnew = val_grad(xn)
                pred = float(g @ (xn - x))
            if En <= E + 1e-4 * pred or (
                abs(pred) <= 64 * eps * Escale and En <= E + 64 * eps * Escale
            ):
                break
        else:  # no step decreases E: converged if ‖∇E‖ is near its limit (relative in rel)
            return x, it, (Status.OK if gn <= 1e3 * limit(x, g) else Status.NUMERIC), gn
        if np.array_equal(xn, x):
            return x, it, Status.OK, gn
        x, E, g, p = xn, En, gnew, pnew
    return x, max_iter, Status.MAXITER, float(np.linalg.norm(projected(g, x)))


def _steps(d, num, span):
    """Return the steps the line search halves, in turn.

    First the Newton step ``d`` (``num / λ``), then ``num`` scaled to the box's widest side
    ``span`` where halving cannot bring ``d`` inside the box.

    At a tiny λ (the λ-search of ``proba=`` walks it to ~1e-180) the Newton step is ~1/λ long:
    every trial along it, even halved 60 times, lands on the same corner of the box (the
    projection of a point ~1e90 away), and an arc the search never sampled was called no
    descent, a false numerical failure; past the doubles the step is not even a number. Where
    the box bounds every free feature no point is further than ``span``, so the same direction
    at that length is halved next. Empty: a step past the doubles and no such box.
    """
    out = [d] if np.isfinite(d).all() else []
    big = float(np.abs(num).max(initial=0.0))
    far = not out or float(np.abs(d).max(initial=0.0)) * 2.0**-59 > span
    if far and math.isfinite(span) and big > 0.0 and np.isfinite(num).all():
        out.append(num * (span / big))
    return out


def _direct_step(A, p, lam, wt, g, F):
    """Return the Newton step on the features ``F`` from the |F|×|F| Hessian, or None.

    H_F = λ W_F + Āᵀ diag(p) Ā on F, with the rows centred at their mean under p
    (Ā = A − 1 pᵀA: Aᵀ S A without the cancellation of Aᵀ diag(p) A − Aᵀp pᵀA), equilibrated
    (unit diagonal) and factored by Cholesky. Taken where |F| < K: the data term can then hold
    every direction of F, and H_F sees a feature whose coefficients are 1e-11 beside ones of
    1e-2. The Woodbury step does not: its K×K matrix G_F = A V_F Aᵀ adds 1e-22/w to 1e-4/w,
    and its step, (V_F g − V_F Aᵀ t)/λ at λ ~ 1e-27, is the difference of two large numbers
    (soak round R, seed 371: the λ-search walked λ to e⁻⁸⁰ and called a feasible query
    infeasible). None, for the Woodbury step, where H_F is not safely positive definite: a
    pivot of the equilibrated matrix below 1e-8 (a direction the data term does not hold and
    λ W_F barely does: its step would carry ~κ ε of error).
    """
    idx = np.flatnonzero(F)
    AF = A[:, idx]
    Ac = AF - p @ AF
    H = (Ac.T * p) @ Ac
    H[np.diag_indices_from(H)] += lam * wt[idx]
    dg = np.diag(H)
    if not (np.isfinite(H).all() and (dg > 0.0).all()):
        return None
    s = 1.0 / np.sqrt(dg)
    try:
        L = np.linalg.cholesky(H * s[:, None] * s[None, :])
    except np.linalg.LinAlgError:
        return None
    if not np.diag(L).min() ** 2 >= 1e-8:
        return None
    d = np.zeros_like(g)
    with np.errstate(over="ignore", invalid="ignore"):
        # a gradient ~1e283 at λ ~ 2e-303 (soak 2026-11-29): a step past the doubles is no
        # step (None: the Woodbury step, whose own checks then decide), not a warning
        y = np.linalg.solve(L.T, np.linalg.solve(L, -s * g[idx]))
        d[idx] = s * y
    return d if np.isfinite(d).all() else None


def proba_bounded_one(model, x0, k, v, wt, bnd, tau):
    """``proba=τ`` with a box for one query: bisection in log λ over :func:`bounded_one`.

    Returns
    -------
    x, status, λ, total Newton iterations
    """
    A, b = model.A, model.b
    log_tau = math.log(tau)

    def logp(lam, x_init):
        x, it, st, _ = bounded_one(
            model, x0, k, lam, v, wt, bnd, 1e-12, 100, x_init=x_init, rel=True
        )
        z = A @ x + b
        m = z.max()
        return z[k] - m - math.log(np.exp(z - m).sum()), x, it, st == Status.OK

    z = A @ x0 + b
    if z[k] - z.max() - math.log(np.exp(z - z.max()).sum()) >= log_tau:
        return x0.copy(), Status.OK, np.inf, 0
    free = v > 0
    if not (A[:, free] != A[k, free]).any():
        # no free feature moves any margin: p_k is the same everywhere (the search would walk
        # its answer to ~1e17 through seconds of Newton solves first; soak round P)
        return x0.copy(), Status.UNREACHABLE, np.nan, 0
    t_lo = t_hi = None
    x_lo = None
    total = 0
    t = 0.0
    xw = None
    sure = True  # every solve below τ converged: "infeasible" is a finding, not a guess
    for _ in range(400):
        f, x, it, ok = logp(math.exp(t), xw)
        total += it
        xw = x
        # the λ of an answer follows the problem's scale, not 1: rows of 4.4e-16 against a
        # competitor 1e5 above need λ ~ e^-83, and a floor at e^-80 called a reachable τ
        # infeasible (a soak find, 2026-11-26). The floor is e^-700, a normal double; the steps
        # stay small, each solve warm from the last (a step across the λ where p_k jumps to τ
        # from far away left Newton's line search no step it could take)
        if f >= log_tau:
            t_lo, x_lo = t, x
            if t_hi is not None:
                break
            t = min(t + 2.3, 700.0)
        else:
            t_hi = t
            sure = sure and ok
            if t_lo is not None:
                break
            if _ceiling(A, b, k, x, free, bnd) < log_tau:  # certified out of reach
                return x, Status.INFEASIBLE, math.exp(t), total
            if t <= -700.0:
                return x, Status.INFEASIBLE if sure else Status.NUMERIC, math.exp(t), total
            t = max(t - 2.3, -700.0)
    if t_lo is None or t_hi is None:  # pragma: no cover - no bracket within e^±700
        return x, Status.NUMERIC, math.exp(t), total
    for _ in range(200):
        if t_hi - t_lo <= 1e-14 * max(1.0, abs(t_lo)):
            break
        t = 0.5 * (t_lo + t_hi)
        f, x, it, _ok = logp(math.exp(t), x_lo)
        total += it
        if f >= log_tau:
            t_lo, x_lo = t, x
            if f - log_tau <= 1e-15:
                break
        else:
            t_hi = t
    return x_lo, Status.OK, math.exp(t_lo), total


def _ceiling(A, b, k, x, free, bnd):
    """Return an upper bound of log p_k over the box: its linearisation at x maximised there.

    log p_k is concave, so log p_k(x') ≤ log p_k(x) + ∇ᵀ(x' − x) for every x' (∇ = Aᵀ(e_k − p)
    on the free features); a feature with ∇_i ≠ 0 and no bound on its ascent side makes it +∞.
    """
    lo, hi = bnd
    z = A @ x + b
    m = z.max()
    e = np.exp(z - m)
    p = e / e.sum()
    g = A[k] - p @ A
    g = np.where(free, g, 0.0)
    room = np.where(g > 0.0, hi - x, np.where(g < 0.0, lo - x, 0.0))
    with np.errstate(invalid="ignore", over="ignore"):
        rise = np.where(g != 0.0, g * room, 0.0)
    # less the rounding of the logits (and more): a bound within it of log τ certifies nothing
    slack = 1e-10 * (1.0 + float(np.abs(z).max()))
    return float(z[k] - m - math.log(e.sum()) + rise.sum()) + slack


LAM_METHOD = "reduced (active set)"
PROBA_METHOD = "reduced (λ search, active set)"


def lam_boxed(model, X, tidx, m, boxes, lams, tol, max_iter):
    """Problem (2) with a box for N queries (:func:`bounded_one` row by row, each in its box).

    ``boxes``: the box (lo, hi) of each row (:func:`row_boxes`).

    Returns the raw answers (:class:`~fastcf._linear.verify.Raw`); the route finishes them
    (:func:`fastcf._linear.verify.finish`).
    """
    N = X.shape[0]
    Xs = np.empty_like(X)
    nit = np.zeros(N, dtype=np.int64)
    status = np.zeros(N, dtype=np.int64)
    for n in range(N):
        Xs[n], nit[n], status[n], _ = bounded_one(
            model, X[n], int(tidx[n]), float(lams[n]), m.v, m.wt, boxes[n], tol, max_iter
        )
    return Raw(Xs, nit, status, lams, LAM_METHOD)


def proba_boxed(model, X, tidx, m, boxes, proba):
    """Solve ``proba=τ`` with bounds for softmax models, row by row (:func:`_proba_row`).

    ``boxes``: the box (lo, hi) of each row (:func:`row_boxes`). Returns
    the raw answers (:class:`~fastcf._linear.verify.Raw`, with each row's λ); the route finishes
    them.
    """
    N = X.shape[0]
    Xs = X.copy()
    nit = np.zeros(N, dtype=np.int64)
    status = np.zeros(N, dtype=np.int64)
    lamv = np.full(N, np.nan)
    for n in range(N):
        Xs[n], status[n], lamv[n], nit[n] = _proba_row(
            model, X[n], int(tidx[n]), m.v, m.wt, boxes[n], proba
        )
    return Raw(Xs, nit, status, lamv, PROBA_METHOD)


def _proba_row(model, x0, k, v, wt, box, proba):
    """``proba=τ`` of one row in a box, re-solved (:func:`fastcf._stage.reaim`) where it is short.

    Judged in the model's arithmetic (the bisection's is NumPy's A @ x): short of τ, again for
    log τ raised by twice the shortfall; p_k ≥ τ but the class within rounding of its boundary
    (τ = 1/2 with two classes in contention), by twice the rounding need. As
    softmax.proba_solution does.
    """
    t1 = np.array([k])
    tau = proba

    def pick(state, rnd):
        nonlocal tau
        xs, st = state[0], state[1]
        if st != Status.OK:
            return None
        with np.errstate(over="ignore", invalid="ignore"):
            # both arithmetics the verdict reads: BLAS's (the explainer's check) and the row
            # kernels' (``finish``); at logits ~4000 they differ by ~1e-13 and an answer at τ in
            # one was short in the other (soak round P, seed 306)
            pk = min(
                float(model.proba_from_logits(model.check_logits(xs[None]))[0, k]),
                float(model.proba_from_logits(model.logits(xs[None]))[0, k]),
            )
            if not pk >= proba:
                up = float(raise_log_tau(proba, np.array([pk]))[0])
                if rnd > 0:
                    # still short after a re-solve: the two arithmetics differ by up to the
                    # rounding need, which twice a shortfall need not cover (logits ~10⁷: a
                    # need of 8.7e-7, three raises of ~1e-12 each, then "numerical failure";
                    # soak round T, seed 415)
                    need = float(model.rounding_need(xs[None], t1)[0])
                    up = max(up, 2 * need + 8 * _EPS)
            elif not model.surely_in(xs[None], t1)[0][0]:
                up = 2 * float(model.rounding_need(xs[None], t1)[0]) + 8 * _EPS
            else:
                return None
        if not math.isfinite(up):
            return None
        # (a huge rounding need, at an answer ~1e300 away, overflowed exp: capped, since τ goes
        # at most halfway to 1 anyway; soak round P)
        tau = min(tau * math.exp(min(up, 1.0)), 0.5 * (1 + tau))
        return t1

    def solve(_rows):
        return proba_bounded_one(model, x0, k, v, wt, box, tau)

    def merge(state, _rows, sub):
        return (*sub[:3], state[3] + sub[3])

    return reaim(proba_bounded_one(model, x0, k, v, wt, box, proba), pick, solve, merge)


def path_boxed(model, x0, k, lams, m, bnd, warm, tol, max_iter):
    """Solve the λ-path with a box: :func:`bounded_one` at each λ, warm-started.

    Returns the raw answers ``(XL, nit, status, gn)``, one row per λ; the path's route
    (:func:`fastcf._linear.solvers.path`) makes them a path.
    """
    L = lams.shape[0]
    XL = np.empty((L, x0.shape[0]))
    nit = np.zeros(L, dtype=np.int64)
    status = np.zeros(L, dtype=np.int64)
    gn = np.zeros(L)
    xw = None
    for i, lm in enumerate(lams):
        xi, nit[i], status[i], gn[i] = bounded_one(
            model, x0, k, float(lm), m.v, m.wt, bnd, tol, max_iter, x_init=xw
        )
        XL[i] = xi
        xw = xi if warm else None
    return XL, nit, status, gn
