"""Manhattan counterfactuals of softmax models, ``region=True``: the LP by a dual simplex.

One query, K − 1 rows (the target t against each other class c_j), 2D bounded columns:

    min Σ_i c_i (δ⁺_i + δ⁻_i)  s.t.  Σ_i M_ji (δ⁺_i − δ⁻_i) − s_j = r_j,  s ≥ 0,
                                      0 ≤ δ⁺_i ≤ hi_i − x̄_i,  0 ≤ δ⁻_i ≤ x̄_i − lo_i,

with M_ji = a_ti − a_{c_j} i and r_j = margin_j − (z̄_t − z̄_{c_j}). Variables: v < D is δ⁺_v,
D ≤ v < 2D is δ⁻_{v−D}, v ≥ 2D is the slack of row v − 2D. A row of the tableau needs
ρᵀM_i = ρ̃·a_{:,i} with ρ̃_t = Σ_j ρ_j, ρ̃_{c_j} = −ρ_j: M is never formed, A is read through
Aᵀ (D, K). The (K − 1)×(K − 1) basis is factorised afresh at each iteration
(:func:`fastcf._kernels.linalg._lu_factor`).

:func:`region_lp_one` solves one query, :func:`region_lp_batch` N of them.
"""

import numpy as np

from fastcf._status import Status

from .. import kernel
from .._batch import batch
from ..linalg import _lu_factor, _lu_solve, _lu_solve_t
from .kspace import _expand

_OK = int(Status.OK)
_UNREACHABLE = int(Status.UNREACHABLE)
_INFEASIBLE = int(Status.INFEASIBLE)
_NUMERIC = int(Status.NUMERIC)
_MAXITER = int(Status.MAXITER)

_LP_PIVOT = 1e-11  # relative pivot tolerance
_LP_DUAL = 1e-12  # Harris tolerance on the (cost-scaled) reduced costs
_LP_PRIMAL = 1e-12  # relative primal feasibility tolerance


@kernel(callee=True)
def _col_entry(AT, v, j, D, t, cls):
    """Entry of row j of the column of variable v."""
    if v < 2 * D:
        i = v if v < D else v - D
        e = AT[i, t] - AT[i, cls[j]]
        return e if v < D else -e
    return -1.0 if v - 2 * D == j else 0.0


@kernel()
def region_lp_one(AT, zbar, t, margins, cost, free, x0, lo, hi, bounded, max_iter, out, ydual):
    """Solve the region LP of one query by a dual simplex. Returns (nit, status, gap).

    ``margins`` (K,): the margin of each row (the target's entry is not read). ``out`` receives
    the answer x (x̄ outside the optimum: INFEASIBLE / UNREACHABLE / MAXITER), ``ydual`` (K − 1)
    the row duals; ``gap`` is the duality gap of the answer (primal − dual objective, both
    recomputed from scratch). Status: OK, UNREACHABLE (no free feature moves a logit
    difference), INFEASIBLE (no point of the box meets the margins), MAXITER, NUMERIC (a
    singular basis).
    """
    D, K = AT.shape
    R = K - 1
    cls = np.empty(R, dtype=np.int64)
    j = 0
    for k in range(K):
        if k != t:
            cls[j] = k
            j += 1
    for i in range(D):
        out[i] = x0[i]
    for j in range(R):
        ydual[j] = 0.0
    rhs = np.empty(R)
    need = False
    for j in range(R):
        rhs[j] = margins[cls[j]] - (zbar[t] - zbar[cls[j]])
        if rhs[j] > 0.0:
            need = True
    if not need:
        return 0, _OK, 0.0
    # κ = max_i ‖M_i‖∞ / c_i (logits per unit cost) puts the slacks in the units of the
    # structural variables (cost), so that no pivoting rule depends on the features' units
    kappa = 0.0
    for i in range(D):
        if not free[i]:
            continue
        for j in range(R):
            e = abs(AT[i, t] - AT[i, cls[j]]) / cost[i]
            if e > kappa:
                kappa = e
    if kappa == 0.0:
        return 0, _UNREACHABLE, 0.0
    sdual = 1.0 / kappa
    nv = 2 * D + R
    pos = np.full(nv, -1, dtype=np.int64)  # position in the basis, −1 when nonbasic
    atup = np.zeros(2 * D, dtype=np.bool_)  # nonbasic at its upper bound
    bas = np.empty(R, dtype=np.int64)
    for j in range(R):
        bas[j] = 2 * D + j
        pos[2 * D + j] = j
    B = np.empty((R, R))
    piv = np.empty(R, dtype=np.int64)
    xb = np.empty(R)
    y = np.empty(R)
    rho = np.empty(R)
    yk = np.empty(K)
    rk = np.empty(K)
    gi = np.empty(D)  # the tableau row / c
    hi_ = np.empty(D)  # yᵀM_i / c
    rscale = 0.0
    for j in range(R):
        rscale = max(rscale, abs(rhs[j]))
    tolp = _LP_PRIMAL * rscale * sdual  # in cost units
    status = _MAXITER
    nit = 0
    for it in range(max_iter + 1):
        nit = it
        # the basis, its factors, the basic values and the duals
        for a in range(R):
            for j in range(R):
                B[j, a] = _col_entry(AT, bas[a], j, D, t, cls)
        if not _lu_factor(B, piv, R):
            status = _NUMERIC
            break
        for j in range(R):
            xb[j] = rhs[j]
        if bounded:
            for v in range(2 * D):
                if atup[v]:
                    i = v if v < D else v - D
                    # the column of δ⁺_i is M_i, of δ⁻_i −M_i: either way −M_i (hi − x̄) or
                    # +M_i (x̄ − lo) moves to the right-hand side, i.e. −M_i (bound − x̄)
                    step = (hi[i] if v < D else lo[i]) - x0[i]
                    for j in range(R):
                        xb[j] -= (AT[i, t] - AT[i, cls[j]]) * step
        _lu_solve(B, piv, xb, R)
        for a in range(R):
            v = bas[a]
            y[a] = cost[v if v < D else v - D] if v < 2 * D else 0.0
        _lu_solve_t(B, piv, y, R)
        # leaving: the largest primal infeasibility, in cost units
        p = -1
        worst = tolp
        up = False
        for a in range(R):
            v = bas[a]
            if v < 2 * D:
                i = v if v < D else v - D
                c = cost[i]
                ub = np.inf
                if bounded:
                    ub = hi[i] - x0[i] if v < D else x0[i] - lo[i]
                lowv = -xb[a] * c
                upv = (xb[a] - ub) * c
            else:
                lowv = -xb[a] * sdual
                upv = -np.inf
            if lowv > worst:
                worst = lowv
                p = a
                up = False
            if upv > worst:
                worst = upv
                p = a
                up = True
        if p < 0:
            status = _OK
            break
        if it == max_iter:
            break
        # the tableau row of the leaving variable: ρ = B⁻ᵀ e_p
        for j in range(R):
            rho[j] = 0.0
        rho[p] = 1.0
        _lu_solve_t(B, piv, rho, R)
        _expand(rho, t, cls, R, rk)
        _expand(y, t, cls, R, yk)
        # Harris ratio test on cost-scaled quantities (d̂ = d/c, α̂ = α/c: unit-free); one pass
        # over A for the row of the tableau (α) and the reduced costs (d)
        amax = 0.0
        for i in range(D):
            if not free[i]:
                continue
            g = 0.0
            h = 0.0
            for k in range(K):
                g += rk[k] * AT[i, k]
                h += yk[k] * AT[i, k]
            gi[i] = g / cost[i]
            hi_[i] = h / cost[i]
            if abs(gi[i]) > amax:
                amax = abs(gi[i])
        for j in range(R):
            if pos[2 * D + j] < 0 and abs(rho[j]) * kappa > amax:
                amax = abs(rho[j]) * kappa
        if amax == 0.0:
            status = _INFEASIBLE
            break
        atol = _LP_PIVOT * amax
        # pass 1: the largest step allowed with the tolerance; pass 2: the largest pivot there
        tmax = np.inf
        for pass_ in range(2):
            best = -1
            bsize = 0.0
            for i in range(D):
                if not free[i]:
                    continue
                for side in range(2):
                    v = i if side == 0 else i + D
                    if pos[v] >= 0:
                        continue
                    alpha = gi[i] if side == 0 else -gi[i]
                    dhat = 1.0 - (hi_[i] if side == 0 else -hi_[i])
                    upper = atup[v]
                    if upper:
                        dhat = -dhat
                    if dhat < 0.0:
                        dhat = 0.0
                    # leaving to its lower bound wants α < 0 at lower, α > 0 at upper
                    s = -alpha if not up else alpha
                    if upper:
                        s = -s
                    if s <= atol:
                        continue
                    if pass_ == 0:
                        r_ = (dhat + _LP_DUAL) / s
                        if r_ < tmax:
                            tmax = r_
                    elif dhat / s <= tmax and s > bsize:
                        bsize = s
                        best = v
            for j in range(R):
                v = 2 * D + j
                if pos[v] >= 0:
                    continue
                alpha = -rho[j] * kappa
                dhat = y[j] * kappa
                if dhat < 0.0:
                    dhat = 0.0
                s = -alpha if not up else alpha
                if s <= atol:
                    continue
                if pass_ == 0:
                    r_ = (dhat + _LP_DUAL) / s
                    if r_ < tmax:
                        tmax = r_
                elif dhat / s <= tmax and s > bsize:
                    bsize = s
                    best = v
            if pass_ == 0 and tmax == np.inf:
                break
        if tmax == np.inf or best < 0:
            status = _INFEASIBLE
            break
        # pivot
        leave = bas[p]
        pos[leave] = -1
        if leave < 2 * D:
            atup[leave] = up
        bas[p] = best
        pos[best] = p
        if best < 2 * D:
            atup[best] = False
    if status != _OK:
        for j in range(R):
            ydual[j] = 0.0
        return nit, status, np.nan
    # the answer: nonbasic at their bounds exactly, basic clipped into their ranges
    for a in range(R):
        v = bas[a]
        if v < 2 * D:
            i = v if v < D else v - D
            d = xb[a]
            if d < 0.0:
                d = 0.0
            ub = np.inf
            if bounded:
                ub = hi[i] - x0[i] if v < D else x0[i] - lo[i]
            # unbounded, lo and hi are empty and a basic value of inf (margins raised to
            # 1e276: soak round R, seed 350) read hi[i] past its end, unchecked in the compiled
            # kernel: x came back as that memory's bits and was called a success
            if bounded and d >= ub:
                out[i] = hi[i] if v < D else lo[i]
            elif d > 0.0 or not d == d:
                out[i] = x0[i] + d if v < D else x0[i] - d
    if bounded:
        for v in range(2 * D):
            if atup[v]:
                i = v if v < D else v - D
                out[i] = hi[i] if v < D else lo[i]
    for j in range(R):
        ydual[j] = y[j]
    # duality gap: primal Σ c|δ| against rᵀy − Σ_i [U_i (yᵀM_i − c_i)⁺ + L_i (−yᵀM_i − c_i)⁺]
    _expand(y, t, cls, R, yk)
    primal = 0.0
    dual = 0.0
    for j in range(R):
        dual += rhs[j] * (y[j] if y[j] > 0.0 else 0.0)
    for i in range(D):
        if not free[i]:
            continue
        primal += cost[i] * abs(out[i] - x0[i])
        h = 0.0
        for k in range(K):
            h += yk[k] * AT[i, k]
        over = abs(h) - cost[i]
        # a basic feature has |h| = c_i exactly in exact arithmetic: an excess within the
        # rounding of h is not dual infeasibility (times an infinite room it made the gap inf,
        # depending on the rounding of NumPy's and Numba's versions)
        if over > 1e-12 * cost[i]:
            room = np.inf
            if bounded:
                room = hi[i] - x0[i] if h > 0.0 else x0[i] - lo[i]
            dual -= over * room
    return nit, _OK, primal - dual


@kernel()
def _region_row(n, AT, Zbar, tidx, Margins, cost, free, X0, lo, hi, bounded, max_iter, out):
    X, nit, status, gap, Y = out
    lo_r = lo[n] if lo.shape[0] > 1 else lo[0]
    hi_r = hi[n] if hi.shape[0] > 1 else hi[0]
    nit[n], status[n], gap[n] = region_lp_one(
        AT, Zbar[n], tidx[n], Margins[n], cost, free, X0[n], lo_r, hi_r, bounded, max_iter,
        X[n], Y[n],
    )  # fmt: skip


@kernel(inline="always")
def _region_out(args):
    K = args[0].shape[1]  # AT
    N, D = args[6].shape  # X0
    return (
        np.empty((N, D)), np.empty(N, dtype=np.int64), np.empty(N, dtype=np.int64),
        np.empty(N), np.empty((N, K - 1)),
    )  # fmt: skip


_region = batch(_region_row, _region_out)


def region_lp_batch(AT, Zbar, tidx, Margins, cost, free, X0, lo, hi, bounded, max_iter, parallel):
    """Solve the region LP (:func:`region_lp_one`) of N queries.

    ``Margins`` (N, K): each row's margin per class (raised where rounding needs it);
    ``lo``, ``hi``: (R, D) as in :func:`.knapsack.constrained_batch`.
    Returns (X, nit, status, gap, Y).
    """
    if not parallel and X0.shape[0] == 1:
        return _region_one(AT, Zbar, tidx, Margins, cost, free, X0, lo, hi, bounded, max_iter)
    return _region(parallel, AT, Zbar, tidx, Margins, cost, free, X0, lo, hi, bounded, max_iter)


def _region_one(AT, Zbar, tidx, Margins, cost, free, X0, lo, hi, bounded, max_iter):
    """:func:`region_lp_batch` for one query: :func:`region_lp_one` called from here.

    Not the batch's serial kernel, which links the solver and has LLVM optimise and emit all
    its code once more (issue 54: 0.9 CPU s of a first ``region=True`` query). The row's kernel
    on the row's arguments, as :func:`_region_row` passes them: the same bits as the row of a
    batch (tests/test_manhattan.py checks it).
    """
    D, K = AT.shape
    X, Y = np.empty((1, D)), np.empty((1, K - 1))  # the outputs of _region_out, one row
    nit, status, gap = np.empty(1, dtype=np.int64), np.empty(1, dtype=np.int64), np.empty(1)
    nit[0], status[0], gap[0] = region_lp_one(
        AT, Zbar[0], tidx[0], Margins[0], cost, free, X0[0], lo[0], hi[0], bounded, max_iter,
        X[0], Y[0],
    )  # fmt: skip
    return X, nit, status, gap, Y
