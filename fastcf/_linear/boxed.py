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
  The energy E and its gradient are :func:`fastcf._linear.reference.softmax_energy`.
* :func:`proba_bounded_one`, ``proba=τ``: a bisection in log λ over :func:`bounded_one` for
  log p_k(x*(λ)) = log τ (p_k(x*(λ)) increases as λ decreases), warm-started.
* :func:`constrained_boxed`, ``region=True``: the QP ``min ‖x − x̄‖²_W`` subject to
  ``(a_k − a_j)·x + b_k − b_j ≥ margin`` and the box, solved by cvxpy (Clarabel).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .._resolve import raise_log_tau
from .._stage import reaim
from .._status import Status
from .metric import distances, row_box
from .reference import softmax_energy
from .verify import finish_softmax

try:  # the kernels' package split into one module per algorithm (fastcf._kernels.softmax.core)
    from .._kernels.softmax.core import _apply_inverse, _factor
except ImportError:  # pragma: no cover - the single-module layout
    from .._kernels.softmax import _apply_inverse, _factor

_EPS = float(np.finfo(float).eps)
_FAR_STEPS = 1e12  # in units u of the step the margins need (constrained_boxed)

__all__ = ["bounded_one", "constrained_boxed", "lam_boxed", "path_boxed", "proba_bounded_one"]


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


def lam_boxed(model, X, tidx, m, bnd, lams, tol, max_iter):
    """Problem (2) with a box for N queries (:func:`bounded_one` row by row, each in its box)."""
    N = X.shape[0]
    Xs = np.empty_like(X)
    nit = np.zeros(N, dtype=np.int64)
    status = np.zeros(N, dtype=np.int64)
    for n in range(N):
        Xs[n], nit[n], status[n], _ = bounded_one(
            model, X[n], int(tidx[n]), float(lams[n]), m.v, m.wt, row_box(bnd, n), tol, max_iter
        )
    return finish_softmax(model, X, Xs, tidx, nit, status, lams, m, bnd, "reduced (active set)")


def constrained_boxed(model, X, tidx, m, bnd, proba, margins):
    """Solve ``proba=`` / ``region=True`` with bounds for softmax models.

    region: a QP solved by cvxpy (Clarabel); proba: the λ search over the exact box solver.
    ``bnd``: one box (lo, hi of shape (D,)) for every row, or one per row ((N, D)).
    """
    import cvxpy as cp

    N, D = X.shape
    v, wt = m.v, m.wt
    Xs = X.copy()
    nit = np.zeros(N, dtype=np.int64)
    status = np.zeros(N, dtype=np.int64)
    lamv = np.full(N, np.nan)
    free = v > 0
    dual_rows = False  # a region row answered by _region_fallback
    for n in range(N):
        k = int(tidx[n])
        box = row_box(bnd, n)  # the query's own box (one per row, or the shared one)
        if proba is not None:
            xs, st, lm, it = _proba_row(model, X[n], k, v, wt, box, proba)
            Xs[n], status[n], lamv[n], nit[n] = xs, st, lm, it
            continue
        # in the step δ = x − x̄, from the model's own logits of x̄: x̄ that meets the margins
        # is its own answer, and the QP is not the difference of two large numbers (with
        # x̄ = 10⁷ and the box [x̄ − 1, x̄ + 1] Clarabel called x̄ itself infeasible)
        z = model.logits(X[n : n + 1])[0]
        others = np.arange(model.A.shape[0]) != k
        c = margins[n] - (z[k] - z[others])
        if (c <= 0.0).all():
            continue  # Xs[n] = x̄, status OK
        dv = cp.Variable(D)
        D_rows = model.A[k] - model.A[others]
        lo, hi = box
        if ((c > 0.0) & ~np.any(D_rows[:, free] != 0.0, axis=1)).any():
            # a margin that no free feature moves, unmet: infeasible, exactly (cvxpy was handed
            # a zero row with margins that verify.region had raised to 1e280: NaN data)
            status[n] = Status.INFEASIBLE
            continue
        # in units u of the step the margins need (|c| / |M|), the cost by its largest weight:
        # Clarabel called a step of 10⁵ at weight 100 (a cost of 10¹²) infeasible
        # (u below 1 too: margins of 1e-297 — a tie raised to its floor — were below
        # Clarabel's tolerances, and it failed)
        u = float(np.abs(c).max()) / max(float(np.abs(D_rows).max()), 1e-300)
        if not (math.isfinite(u) and u > 0.0):
            u = 1.0
        wn = wt / max(float(wt.max()), 1e-300)
        with np.errstate(over="ignore", invalid="ignore"):
            slo, shi = (lo - X[n]) / u, (hi - X[n]) / u
        # bounds beyond 1e12 steps are no bounds here (the margins need a step of ~1): with a
        # tie raised to its floor, u ~ 1e-271 put the box [0, 1] at 1e271, and Clarabel failed
        # (soak round O). A bound dropped this way that the answer crosses is caught by the clip
        # below and the verdict
        slo = np.where(slo < -_FAR_STEPS, -np.inf, slo)
        shi = np.where(shi > _FAR_STEPS, np.inf, shi)
        cons = [D_rows @ dv >= c / u, dv >= slo, dv <= shi]
        if (~free).any():
            cons.append(dv[~free] == 0.0)
        prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(wn, cp.square(dv)))), cons)
        try:
            # cvxpy warns "Solution may be inaccurate" (status optimal_inaccurate): the
            # answer is verified against the model, as every answer is
            with warnings.catch_warnings(record=True):
                warnings.simplefilter("always")
                prob.solve(solver=cp.CLARABEL)
            solved = prob.status in cp.settings.SOLUTION_PRESENT and dv.value is not None
            st_n = Status.INFEASIBLE if "infeasible" in prob.status else Status.SOLVER_FAILED
        except cp.error.SolverError:
            solved, st_n = False, Status.SOLVER_FAILED
        if solved:
            duals = [np.atleast_1d(np.asarray(con.dual_value, dtype=float)) for con in cons[:3]]
            d = _polish_region(
                u * np.asarray(dv.value), D_rows, c, wt, free, lo - X[n], hi - X[n], duals
            )
            xn = np.clip(X[n] + d, lo, hi)
            xn[~free] = X[n][~free]
            # "optimal" (or "optimal_inaccurate") but short of a margin by more than the
            # polish leaves (soak round Q: a row of 1e-10 and a step of 10¹⁰, which Clarabel
            # put at 7.6·10⁹): the fallback below, as for a failure
            if _meets_rows(D_rows, c, xn - X[n], xn):
                Xs[n] = xn
                continue
            st_n = Status.NUMERIC
        # Clarabel can call a badly scaled feasible problem infeasible (a margin row of 1e-9
        # beside one of 1, margin 0 raised to its floor: soak round P). The unbounded optimum,
        # where it lies in the box, is the bounded one (the optimum of a relaxation, feasible);
        # else the primal active set with the box as rows (soak round Q)
        xf = _region_fallback(model, X[n], k, m, margins[n], box, D_rows, c)
        if xf is None:
            xf, feasible = _region_ldp(X[n], D_rows, c, wt, free, lo, hi)
            if feasible and st_n == Status.INFEASIBLE:
                # the exact program found the rows feasible in the box, its step short of
                # them by rounding: a numerical failure, not Clarabel's "infeasible"
                st_n = Status.NUMERIC
        if xf is None:
            status[n] = st_n
        else:
            Xs[n] = xf
            dual_rows = True
    method = "reduced (λ search, active set)" if proba is not None else "cvxpy QP (Clarabel)"
    if dual_rows:
        method += ", or an exact active set where Clarabel failed"
    lams = lamv if proba else None
    return finish_softmax(model, X, Xs, tidx, nit, status, lams, m, bnd, method, proba_min=proba)


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


def _region_fallback(model, x0, k, m, margin, box, D_rows, c):
    """Return an answer of ``region=True`` where Clarabel failed, or None.

    The unbounded optimum where it lies in the box (then it is the bounded one): the K-space
    dual (:func:`fastcf._linear.softmax.region_solution`) on the query's metric, for a box with
    a finite side (the input-space re-solve of unbounded queries passes an unbounded box:
    K-space failed there already). Then the primal least-distance active set
    (:func:`fastcf._linear.singular.region_primal`) with the box's sides as rows of its own, so
    its answer is the bounded optimum: it holds where the margin rows differ in scale by 10⁷
    and more (soak round Q: a row of 1.2e-7 beside one of 1, margin 0, an explicit infinite box;
    the same with a box [0, 1]³ that the unbounded optimum leaves: Clarabel called both
    infeasible). ``D_rows``, ``c``: the caller's margin rows and their right-hand sides.
    """
    from .singular import region_primal
    from .softmax import region_solution

    lo, hi = box
    t, mg = np.array([k]), np.array([margin])
    solvers = [lambda: region_primal(model, x0[None], t, m, mg, box)]
    if np.isfinite(lo).any() or np.isfinite(hi).any():
        solvers.insert(0, lambda: region_solution(model, x0[None], t, m, mg))
    for solve in solvers:
        # an answer that meets the margin rows, in the box: the caller's verdict and the
        # explainer's verification judge it as they judge Clarabel's (at margin 0 it sits on
        # the boundary, where verify.region raises the margin: soak round Q)
        x = solve().x[0]
        if np.isfinite(x).all() and (x >= lo).all() and (x <= hi).all():
            if _meets_rows(D_rows, c, x - x0, x):
                return x
    return None


def _region_ldp(x0, D_rows, c, wt, free, lo, hi):
    """Return ``(x, feasible)``: the answer by the exact least-distance program, or None.

    ``feasible``: whether that program found the margin rows feasible in the box (an answer
    short of them by rounding is None, a numerical failure, not an infeasible query).

    min Σ wt δ² s.t. D_rows δ ≥ c, lo ≤ x̄ + δ ≤ hi, δ = 0 off ``free``: in u = √wt δ on the
    free features a least-distance program ``min ½‖u‖² s.t. G u ≥ h`` with unit rows (the
    margin rows and the box's finite sides), solved exactly by Lawson and Hanson's dual NNLS
    (:func:`fastcf._kernels.linalg.ldp`, the LVQ family's QP). The last resort where Clarabel
    and :func:`_region_fallback` failed: 3-class models whose margin rows differ little
    (a Ridge or PassiveAggressive classifier after a scaler, data far from 0: numerical
    failures in ``docs/scripts/soak_zoo.py`` that Manhattan answered). Kept only where it
    meets the margin rows (:func:`_meets_rows`) in the box; the explainer's judge then judges
    it as every answer.
    """
    from .._kernels.linalg import ldp

    F = np.flatnonzero(free)
    if F.size == 0:
        return None, False
    s = np.sqrt(wt[F])
    dlo, dhi = lo[F] - x0[F], hi[F] - x0[F]
    rows, rhs = [D_rows[:, F] / s], [c]
    e = np.eye(F.size)
    fin_lo, fin_hi = np.isfinite(dlo), np.isfinite(dhi)
    rows += [e[fin_lo], -e[fin_hi]]
    rhs += [(s * dlo)[fin_lo], -(s * dhi)[fin_hi]]
    G, h = np.vstack(rows), np.concatenate(rhs)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        norm = np.sqrt((G * G).sum(axis=1))
        keep = norm > 0.0
        if (~keep & (h > 0.0)).any() or not (np.isfinite(G).all() and np.isfinite(h).all()):
            return None, False
        G, h = np.ascontiguousarray(G[keep] / norm[keep, None]), h[keep] / norm[keep]
    u, lam, _it, status = ldp(G, h, 50 * (G.shape[0] + F.size) + 100)
    if status != 0 or not np.isfinite(u).all():
        return None, False
    d = np.zeros_like(x0)
    d[F] = u / s
    # its multipliers name the active set, on which the polish of Clarabel's answers makes the
    # step exact (the NNLS meets the rows to ~1e-13 relative: short of _meets_rows' 64ε)
    y = np.zeros(keep.size)
    y[keep] = lam
    nm, nlo = c.size, int(fin_lo.sum())
    ylo, yhi = np.zeros_like(x0), np.zeros_like(x0)
    ylo[F[fin_lo]] = y[nm : nm + nlo]
    yhi[F[fin_hi]] = y[nm + nlo :]
    d = _polish_region(d, D_rows, c, wt, free, lo - x0, hi - x0, (y[:nm], ylo, yhi))
    x = np.clip(x0 + d, lo, hi)
    x[~free] = x0[~free]
    return (x if _meets_rows(D_rows, c, x - x0, x) else None), True


def _meets_rows(D_rows, c, d, x):
    """Tell whether the step d meets the margin rows D_rows d ≥ c to the rounding of their terms.

    64ε (|D_rows| |d| + |c|): Clarabel's answer, polished, meets them to rounding; one short by
    more failed (soak round Q: a row of 1e-10 and a step of 10¹⁰ that it called optimal at
    7.6·10⁹; a step of 10⁸ from x̄ = −10⁸ that it left 0.05 short, within 1e-9 of its terms).
    Plus 4ε |D_rows| |x|: the answer ``x = x̄ + d`` is a double, and the step read back from it
    (``x − x̄``) is off by its rounding — an exact step of 0.2 from x̄ ~ 3.6·10⁵ came back short
    by 2e-10, and every answer of a Ridge classifier there was refused
    (``docs/scripts/soak_zoo.py``). The model's own verdict judges the answer after this.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        aD = np.abs(D_rows)
        tol = 64 * _EPS * (aD @ np.abs(d) + np.abs(c)) + 4 * _EPS * (aD @ np.abs(x))
        short = c - D_rows @ d > tol
    return not short.any()


def _polish_region(d, M, c, wt, free, dlo, dhi, duals):
    """Return Clarabel's step ``d`` of the boxed region QP polished on its active set, or ``d``.

    Clarabel stops at a gap of ~1e-8: an answer meant to sit on a margin (raised by
    ``verify.region`` to its rounding need, ~1e-14) lands on either side of it, or 5e-5 past a
    margin of 1e-301 (margin 0 at a tie was a numerical failure). Its multipliers (``duals``:
    the margin rows, x ≥ lo, x ≤ hi) name the active set, on which the optimum is exact:
    min Σ wt δ² with those rows as equalities, δ_F = W_F⁻¹ M_Fᵀ μ, (M_F W_F⁻¹ M_Fᵀ) μ = r
    (least squares for dependent rows). Kept only when it is feasible to rounding, μ ≥ 0 and it
    costs no more than ``d`` (else the active set was wrong: ``d`` stays). Solution polishing
    as in OSQP (Stellato et al., 2020, §5.2).
    """
    ym, ylo, yhi = duals
    with np.errstate(all="ignore"):
        top = max(float(np.abs(np.concatenate(duals)).max()), 1e-300)
        act = ym > 1e-6 * top
        at_lo = free & np.isfinite(dlo) & (ylo > 1e-6 * top)
        at_hi = free & np.isfinite(dhi) & (yhi > 1e-6 * top) & ~at_lo
    # the costs compared as scaled norms: Σ wt δ² overflows at wt = 3.6e277 and δ = 1e27, with a
    # RuntimeWarning (soak round R, seed 334), and inf ≤ inf took any step (the tolerances are
    # the square roots of the old ones on Σ wt δ²: 1 + 1e-6 and 1e-300)
    cost_d = distances(d[None], wt)[0]
    # the active set Clarabel's multipliers name, then the margin rows alone (near a tie a
    # bound and a margin row can both carry multipliers for the same coordinate)
    for lo_a, hi_a in ((at_lo, at_hi), (np.zeros_like(free), np.zeros_like(free))):
        dp = _equality_qp(M, c, wt, free, dlo, dhi, act, lo_a, hi_a)
        if dp is not None and distances(dp[None], wt)[0] <= cost_d * (1 + 5e-7) + 1e-150:
            return dp
    return d


def _equality_qp(M, c, wt, free, dlo, dhi, act, at_lo, at_hi):
    """Return the step of min Σ wt δ² on an active set, or None.

    The rows ``act`` of M δ ≥ c are equalities and the bounds ``at_lo`` / ``at_hi`` fixed; None
    where a multiplier μ is negative or the step is infeasible beyond rounding. The normal
    equations carry ~cond(M_F W_F⁻¹ M_Fᵀ) ε of error, so the step is refined once on the rows'
    own residual c − M δ (iterative refinement): unrefined, a Gram matrix of condition 242 left
    the exact active set's step 0.019 short of a margin row of 6·10¹¹, twice the 8ε check, and
    a feasible query was called infeasible (``docs/scripts/soak_zoo.py`` seed 0 case 3655,
    scikit-learn 1.6).
    """
    eps = np.finfo(float).eps
    with np.errstate(all="ignore"):
        F = free & ~at_lo & ~at_hi
        dp = np.zeros(M.shape[1])
        dp[at_lo] = dlo[at_lo]
        dp[at_hi] = dhi[at_hi]
        if act.any() and F.any():
            MF = M[np.ix_(act, F)]
            r = c[act] - M[np.ix_(act, ~F)] @ dp[~F]
            vi = 1.0 / wt[F]
            GF = (MF * vi) @ MF.T
            mu = np.linalg.lstsq(GF, r, rcond=None)[0]
            dp[F] = vi * (MF.T @ mu)
            dmu = np.linalg.lstsq(GF, c[act] - M[act] @ dp, rcond=None)[0]
            mu = mu + dmu
            dp[F] += vi * (MF.T @ dmu)
            if (mu < -1e-9 * (1.0 + np.abs(mu).max())).any():
                return None
        if not np.isfinite(dp).all():
            return None
        tol = 8 * eps * (np.abs(M) @ np.abs(dp) + np.abs(c))
        if (M @ dp >= c - tol).all() and ((dp >= dlo) & (dp <= dhi)).all():
            return dp
    return None


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
