"""A second opinion on the region LP's "infeasible": the same linear program, solved by HiGHS.

The dense dual simplex of :func:`~fastcf._kernels.l1.region_lp_one` skips pivots smaller than
``1e-11`` of the tableau row's largest entry, as any simplex code must to stay stable. A row
whose only way into the target class runs through a coefficient that small — a model row of
6.8e-12 beside rows of 1 (soak, ``test_fuzz_linear_few_changes[softmax]``) — is then reported
*infeasible* though a point of the class exists. "Infeasible" is a claim made to the user, so
every row the kernel calls infeasible is solved again here, by HiGHS through
:func:`scipy.optimize.linprog`, on the same program

    min Σ_i c_i (u_i + v_i)  s.t.  (a_t − a_j)·(u − v) ≥ margin_j − (z̄_t − z̄_j)  (j ≠ t),
                                   0 ≤ u ≤ hi − x̄,  0 ≤ v ≤ x̄ − lo,  u_i = v_i = 0 (frozen),

with each row divided by its largest coefficient and the step scaled so that the largest
right-hand side is 1 (HiGHS's tolerances are absolute: unscaled, a margin of 1e-300 would be
met by x̄ itself), and a primal feasibility tolerance of 1e-10. Where HiGHS finds a point, it
replaces the kernel's verdict; the point is judged by the model's own arithmetic like every
answer (and :func:`fastcf._linear.verify.region` raises the margin where it falls short). Where
HiGHS agrees, the row stays infeasible. The rows are rare; the ~1 ms per row of HiGHS's set-up
is paid only by them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["second_opinion"]

#: HiGHS's primal feasibility tolerance on the scaled program (its smallest accepted value)
_FEAS = 1e-10


def second_opinion(model, X, tidx, Margins, Zbar, cost, free, lo, hi, bounded, rows):
    """Solve the region LP of ``rows`` by HiGHS; return ``(found, Xs, gap)`` for those rows.

    Parameters
    ----------
    model : softmax model
        Its ``A`` (K, D) rows.
    X : ndarray of shape (N, D)
        The queries x̄.
    tidx : ndarray of int, shape (N,)
    Margins : ndarray of shape (N, K)
        The margin against each class (the target's column unused).
    Zbar : ndarray of shape (N, K)
        The logits of x̄.
    cost : ndarray of shape (D,)
    free : ndarray of bool, shape (D,)
    lo, hi : ndarray of shape (1, D) or (N, D)
        The box (read only when ``bounded``).
    bounded : bool
    rows : ndarray of int
        The rows to solve.

    Returns
    -------
    found : ndarray of bool, shape (len(rows),)
        Where HiGHS found the program feasible (an optimum).
    Xs : ndarray of shape (len(rows), D)
        Its answers (x̄ where not found).
    gap : ndarray of shape (len(rows),)
        The duality gap of each answer from HiGHS's multipliers, in cost units (nan where not
        found).
    """
    A = model.A
    K, D = A.shape
    idx = np.flatnonzero(free)
    found = np.zeros(rows.size, dtype=bool)
    Xs = X[rows].copy()
    gap = np.full(rows.size, np.nan)
    for n, r in enumerate(rows):
        with np.errstate(all="ignore"):  # hostile scales: a row that does not scale is skipped
            out = _one(A, X[r], int(tidx[r]), Margins[r], Zbar[r], cost, idx, lo, hi, bounded, r)
        if out is not None:
            Xs[n, idx], gap[n] = out
            found[n] = True
    return found, Xs, gap


def _one(A, x, t, margins, zbar, cost, idx, lo, hi, bounded, r):
    """Return (the free features' answer, the duality gap) of one row by HiGHS, or None.

    None where HiGHS finds no point, and where the program does not scale to finite numbers
    (a row of 1e-310 beside a right-hand side of 1: the kernel's verdict then stands).
    """
    from scipy.optimize import linprog

    K = A.shape[0]
    others = np.array([j for j in range(K) if j != t], dtype=np.int64)
    G = A[t, idx][None, :] - A[others][:, idx]  # (K − 1, F)
    rhs = margins[others] - (zbar[t] - zbar[others])
    gmax = np.abs(G).max(axis=1, initial=0.0)
    if np.any((gmax == 0.0) & (rhs > 0.0)):
        return None  # a row no free feature moves, and x̄ short of it: infeasible indeed
    keep = gmax > 0.0
    G, rhs = G[keep] / gmax[keep, None], rhs[keep] / gmax[keep]
    sigma = float(np.max(rhs, initial=0.0))
    if not (0.0 < sigma < np.inf) or not (np.isfinite(G).all() and np.isfinite(rhs).all()):
        return None  # x̄ meets every row (not a row the kernel calls infeasible), or no scale
    x0 = x[idx]
    if bounded:
        b = 0 if lo.shape[0] == 1 else r
        up, down = (hi[b, idx] - x0) / sigma, (x0 - lo[b, idx]) / sigma
    else:
        up = down = np.full(idx.size, np.inf)
    c = np.concatenate([cost[idx], cost[idx]])
    A_ub = -np.hstack([G, -G])
    b_ub = -rhs / sigma
    bnds = np.column_stack([np.zeros(2 * idx.size), np.concatenate([up, down])])
    if not (np.isfinite(c).all() and np.isfinite(b_ub).all()) or np.isnan(bnds).any():
        return None
    # HiGHS meets each scaled row only to _FEAS, absolutely: a row whose right-hand side is
    # below _FEAS of the largest (1e-14 beside 1: a margin of 1e-6 through a row of 1.67
    # beside one through 1.6e-14, soak of docs/scripts/soak_manhattan_region.py) was met by a
    # tie, the margin was raised (verify.region) and raised again, doubling until the box
    # ran out: a false "infeasible". Each row is first asked 2 _FEAS past its right-hand side,
    # so that HiGHS's point meets every row; the program as it is only where that one fails
    # (a box met at a vertex)
    for lift in (2 * _FEAS, 0.0):
        res = linprog(
            c, A_ub=A_ub, b_ub=b_ub - lift, bounds=bnds, method="highs",
            options={"primal_feasibility_tolerance": _FEAS},
        )  # fmt: skip
        if res.status == 0:
            break
    if res.status != 0:
        return None
    u, v = res.x[: idx.size], res.x[idx.size :]
    xs = x0 + sigma * (u - v)
    if bounded:  # x̄ + σ(u − v) rounds past a bound it reaches (x = −1000.0000000000001)
        xs = np.clip(xs, lo[b, idx], hi[b, idx])
    if not np.isfinite(xs).all():
        return None
    b_ub = b_ub - lift
    ub = np.where(np.isfinite(bnds[:, 1]), bnds[:, 1], 0.0)
    dual = b_ub @ res.ineqlin.marginals + ub @ res.upper.marginals
    return xs, sigma * abs(res.fun - dual)
