"""Softmax models, ``region=True`` with a box ``lo ≤ x ≤ hi`` (``bounds=``; paper 000, §3).

:func:`region_boxed`: the QP ``min ‖x − x̄‖²_W`` subject to ``(a_k − a_j)·x + b_k − b_j ≥
margin`` and the box, solved by cvxpy (Clarabel) in units of the step the margins need, its
answer polished on the active set its multipliers name (:func:`_polish_region`). Where Clarabel
fails or falls short, the unbounded optimum if it lies in the box, the primal active set with
the box as rows (:func:`_region_fallback`), then the exact least-distance program
(:func:`_region_ldp`). (``proba=τ`` and problem (2) with a box: :mod:`fastcf._linear.boxed`.)
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .._status import Status
from .metric import distances
from .verify import Raw

_EPS = float(np.finfo(float).eps)
_FAR_STEPS = 1e12  # in units u of the step the margins need (region_boxed)

__all__ = ["region_boxed"]


def region_boxed(model, X, tidx, m, boxes, margins):
    """Solve ``region=True`` with bounds for softmax models: one QP per row (Clarabel).

    ``boxes``: the box (lo, hi) of each row (:func:`fastcf._linear.boxed.row_boxes`);
    ``margins``: one per row. Where Clarabel fails, :func:`_region_fallback`, then
    :func:`_region_ldp`. Returns the raw answers (:class:`~fastcf._linear.verify.Raw`); the
    route finishes them (:func:`fastcf._linear.verify.finish`).
    """
    import cvxpy as cp

    N, D = X.shape
    v, wt = m.v, m.wt
    Xs = X.copy()
    nit = np.zeros(N, dtype=np.int64)
    status = np.zeros(N, dtype=np.int64)
    free = v > 0
    dual_rows = False  # a row answered by _region_fallback or _region_ldp
    for n in range(N):
        k = int(tidx[n])
        box = boxes[n]
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
    method = "cvxpy QP (Clarabel)"
    if dual_rows:
        method += ", or an exact active set where Clarabel failed"
    return Raw(Xs, nit, status, None, method)


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
    solvers = [lambda: region_primal(model, x0[None], t, m, mg, box).x[0]]
    if np.isfinite(lo).any() or np.isfinite(hi).any():
        solvers.insert(0, lambda: region_solution(model, x0[None], t, m, mg).x[0])
    for solve in solvers:
        # an answer that meets the margin rows, in the box: the caller's verdict and the
        # explainer's verification judge it as they judge Clarabel's (at margin 0 it sits on
        # the boundary, where verify.region raises the margin: soak round Q)
        x = solve()
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
