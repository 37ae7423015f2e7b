"""At most m changed features (``max_changes=m``) for GLVQ/GMLVQ, exactly.

With one metric Λ shared by the prototypes the region that target prototype p_i wins,
{x : d(x, p_i) + ε ≤ d(x, p_j) for every p_j of another class}, is a polytope: the quadratic
terms cancel and each constraint reads 2 (p_j − p_i)ᵀ Λ x ≤ p_jᵀΛp_j − p_iᵀΛp_i − ε, the rows
A_ij x ≤ b_ij − ε of :mod:`.model`. The query with at most m changed features is then

    min θ(x, x̄)  over x in the union of those polytopes (and the box, the user rows, x_F = x̄_F)
                 with |{k : x_k ≠ x̄_k}| ≤ m.

Two exact routes, both ending with the ordinary program (:meth:`fastcf.LVQExplainer.explain`'s
own solver, its margin raise and the model's verification) with every feature outside the
chosen support frozen, so the answer is certified as any other:

* Manhattan θ with a finite box on every free feature (:func:`_milp_row`): one mixed-integer LP
  per target prototype on HiGHS, x − x̄ = u − v with 0 ≤ u ≤ (hi − x̄) y, 0 ≤ v ≤ (x̄ − lo) y,
  y binary, Σ y ≤ m (big-M from the box), solved to a zero gap; the best support is then
  re-solved. ``time_limit`` bounds the row (each MILP given the time left); a stopped MILP's
  answer is valid, not proven (status 1, ``info["proven"]`` False).
* otherwise (Euclidean θ, or no finite box) (:func:`_subsets_row`): the branch-and-bound over
  frozen sets of :func:`fastcf._linear.subsets.best_subset` (the one copy of that rule, shared
  with the linear family), whose nodes are the ordinary program with some features frozen;
  freezing only shrinks the feasible set, so a node's optimum bounds its subtree. Its node cap
  (20 000), or the row's ``time_limit``, ends it with the best answer found, status 1, not
  proven.

``info``: ``search`` (``"milp"``, ``"branch-and-bound"``, or ``"none"`` when no more than m
features are free), ``nodes`` (MILP or branch-and-bound nodes), ``proven`` (the answer is
optimal, or none exists), and the answer's ``prototype``.

LGMLVQ (one Ω per prototype: regions bounded by quadrics) is refused before this module runs.
"""

from __future__ import annotations

import math
import time

import numpy as np

from fastcf._linear.subsets import RowProblem, best_subset
from fastcf._stage import stack
from fastcf._status import Status

from .._validation import deadline as time_deadline
from .options import row_options

__all__ = ["solve_max_changes"]

_OK, _MAXITER = int(Status.OK), int(Status.MAXITER)
_INFEASIBLE, _FAILED = int(Status.INFEASIBLE), int(Status.SOLVER_FAILED)
_TOL = 1e-9  # HiGHS's feasibility tolerances for these programs (rows scaled to unit norm)


def solve_max_changes(ex, X, tidx, opts, metric, m, time_limit, solve):
    """Return the :class:`~fastcf.results.Solution` of every row with at most ``m`` changes.

    Parameters
    ----------
    ex : LVQExplainer
    X : ndarray of shape (N, D)
    tidx : ndarray of shape (N,)
        Target class indices.
    opts : fastcf._lvq.options.Options
    metric : {"euclidean", "manhattan"}
    m : int
    time_limit : float or None
        Seconds for each row, from its start: its mixed-integer programs (Manhattan with a
        finite box; each given the time left, the prototypes left unsolved past it) or its
        branch-and-bound over frozen sets stop there with the best answer found (status 1).
    solve : callable
        ``solve(X, tidx, opts) -> Solution``: the ordinary (verified) answer of the rows.
    """
    sols = []
    for a in range(X.shape[0]):
        deadline = time_deadline(time_limit)
        ro = row_options(opts, a)
        Xa, ta = X[a : a + 1], tidx[a : a + 1]
        free = ro.free
        if np.count_nonzero(free) <= m:  # the ordinary answer changes at most m features
            sol, info = solve(Xa, ta, ro), {"search": "none", "nodes": 0, "proven": True}
        else:
            boxed = np.isfinite(ro.lo[free]).all() and np.isfinite(ro.hi[free]).all()
            sol = None
            if metric == "manhattan" and boxed:
                sol, info = _milp_row(ex, Xa, ta, ro, m, deadline, solve)
            if sol is None:  # (also when the MILP's support does not re-solve: rounding)
                sol, info = _subsets_row(Xa, ta, ro, metric, m, solve, deadline)
        base = {"prototype": np.asarray(sol.info["prototype"]) if sol.info else np.full(1, -1)}
        sols.append(sol._replace(info={**base, **info}))
    return stack(sols)


def _objective(sol):
    return float(sol.distance[0]) if sol.success[0] else math.inf


def _fail(sol, x0, m):
    """Return the failure of a row with no answer within ``m`` changes (x = x̄)."""
    status = int(sol.status[0])
    if status == _OK or sol.success[0]:
        status = _INFEASIBLE
        msg = (
            f"infeasible: no point changing at most {m} features (max_changes={m}) is "
            "classified as the target (increase max_changes, or free features / widen bounds)"
        )
    else:
        msg = sol.message[0]
    return sol._replace(
        x=x0[None].copy(),
        distance=np.zeros(1),
        success=np.zeros(1, dtype=bool),
        status=np.array([status], dtype=np.int64),
        message=[msg],
        certified=None,
    )


def _not_proven(sol, why):
    """Return ``sol`` (a valid answer) with status 1 and ``why`` it is not proven optimal."""
    if not sol.success[0]:
        return sol
    return sol._replace(status=np.array([_MAXITER], dtype=np.int64), message=[why])


def _subsets_row(Xa, ta, ro, metric, m, solve, deadline=math.inf):
    """One row by the branch-and-bound over frozen sets (:func:`best_subset`, to ``deadline``)."""

    def node(fmask):
        return solve(Xa, ta, ro._replace(free=~fmask))

    cost = np.sqrt(ro.w) if metric == "euclidean" else ro.w  # (ro.w is w² for Euclidean θ)
    prob = RowProblem(node, Xa[0], _objective, cost)
    val, mask, info = best_subset(prob, ~ro.free, m, deadline=deadline)
    sol = prob.solve(mask)[0]
    if not math.isfinite(val):
        sol = _fail(sol, Xa[0], m)
    elif not info["proven"]:
        late = time.perf_counter() > deadline
        what = "time_limit" if late else "node limit of the branch-and-bound"
        sol = _not_proven(
            sol, f"max_changes: {what} reached; the answer is the best found, not proven optimal"
        )
    info = {"nodes": int(info["nodes"]), "proven": bool(info["proven"])}
    return sol, {"search": "branch-and-bound", **info}


def _milp_row(ex, Xa, ta, ro, m, deadline, solve):
    """One row by one MILP per target prototype; (None, None) when its support fails.

    ``deadline`` (``time.perf_counter()``): each MILP gets the time left; the prototypes
    left past it are not solved (the answer, if any, is then not proven).
    """
    geo = ex._geo
    x0 = Xa[0]
    F = np.flatnonzero(ro.free)
    best, support, nodes, proven, failed = math.inf, None, 0, True, False
    for i in np.flatnonzero(geo.cls == ta[0]):
        left = deadline - time.perf_counter()
        if left <= 0:
            proven = False
            break
        out = _milp(geo, i, x0, ro, F, m, None if deadline == math.inf else left)
        if out is None:
            continue
        status, val, y, n = out
        nodes += n
        if status == _FAILED:
            failed = True
            continue
        proven &= status != _MAXITER  # (an infeasible MILP is proven so)
        if val < best:
            best, support = val, y
    if support is None:
        root = solve(Xa, ta, ro)  # the ordinary answer, for a failure of its own
        why = None
        if not proven:
            why = (_MAXITER, f"time_limit reached before any answer with max_changes={m}")
        elif failed:
            why = (_FAILED, f"the MILP solver failed (HiGHS), max_changes={m}")
        if why is not None:
            root = root._replace(
                success=np.zeros(1, dtype=bool), status=np.array([why[0]]), message=[why[1]]
            )
        return _fail(root, x0, m), {
            "search": "milp",
            "nodes": nodes,
            "proven": proven and not failed,
        }
    free = np.zeros_like(ro.free)
    free[F[support]] = True
    sol = solve(Xa, ta, ro._replace(free=free))
    if not sol.success[0]:
        return None, None  # the support re-solved exactly fails: the branch-and-bound decides
    if not proven:
        sol = _not_proven(
            sol,
            "max_changes: time_limit reached in the MILP; the answer is the best found, not "
            "proven optimal",
        )
    return sol, {"search": "milp", "nodes": nodes, "proven": proven}


def _milp(geo, i, x0, ro, F, m, time_limit):
    """Solve the MILP of target prototype ``i``: (status, θ, support (|F|,) bool, nodes) or None.

    None when the prototype's region is empty for a reason found before any solver (a row
    0·x ≤ h < 0: a prototype equal to one of another class under a margin > 0).
    """
    import highspy

    from fastcf._highs import highs

    others = np.flatnonzero(geo.valid[i])
    G = np.vstack([geo.A[i, others], ro.C])
    h = np.concatenate([geo.b[i, others] - ro.margin, ro.c]) - G @ x0
    top = np.abs(G).max(axis=1, initial=0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.where(top[:, None] > 0, G / np.where(top > 0, top, 1.0)[:, None], 0.0)
    nrm = top * np.sqrt(np.einsum("ij,ij->i", rel, rel))
    zero = ~(nrm > 0)
    if (h[zero] < 0).any():
        return None
    G, h = G[~zero] / nrm[~zero, None], h[~zero] / nrm[~zero]
    up, down = ro.hi[F] - x0[F], x0[F] - ro.lo[F]
    # the program is homogeneous in (h, up, down): solved at the scale of its largest entry
    sig = max(float(np.max(np.abs(h), initial=0.0)), float(np.max(up)), float(np.max(down)))
    sig = float(2.0 ** np.frexp(sig)[1]) if sig > 0 and np.isfinite(sig) else 1.0
    h, up, down = h / sig, up / sig, down / sig
    n, r = F.size, G.shape[0]
    GF = G[:, F]
    eye = np.eye(n)
    # columns [u (n), v (n), y (n)]; rows: G_F (u − v) ≤ h, u − up·y ≤ 0, v − down·y ≤ 0, Σy ≤ m
    A = np.vstack(
        [
            np.hstack([GF, -GF, np.zeros((r, n))]),
            np.hstack([eye, np.zeros((n, n)), -np.diag(up)]),
            np.hstack([np.zeros((n, n)), eye, -np.diag(down)]),
            np.concatenate([np.zeros(2 * n), np.ones(n)])[None],
        ]
    )
    rhs = np.concatenate([h, np.zeros(2 * n), [float(m)]])
    hs = highs(
        "lvq",
        (
            ("primal_feasibility_tolerance", _TOL),
            ("dual_feasibility_tolerance", _TOL),
            ("mip_feasibility_tolerance", _TOL),
        ),
    )
    hs.setOptionValue("time_limit", math.inf if time_limit is None else float(time_limit))
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = 3 * n, A.shape[0]
    lp.col_cost_ = np.concatenate([ro.w[F], ro.w[F], np.zeros(n)])
    lp.col_lower_ = np.zeros(3 * n)
    lp.col_upper_ = np.concatenate([up, down, np.ones(n)])
    lp.row_lower_ = np.full(A.shape[0], -math.inf)
    lp.row_upper_ = rhs
    nz = A != 0.0
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.concatenate([[0], np.cumsum(nz.sum(axis=0))]).astype(np.int32)
    ri, ci = np.nonzero(nz.T)  # column-major order
    lp.a_matrix_.index_ = ci.astype(np.int32)
    lp.a_matrix_.value_ = A.T[ri, ci]
    lp.integrality_ = [highspy.HighsVarType.kContinuous] * (2 * n) + [
        highspy.HighsVarType.kInteger
    ] * n
    hs.passModel(lp)
    hs.run()
    st = hs.getModelStatus()
    info = hs.getInfo()
    nodes = int(getattr(info, "mip_node_count", 0))
    M = highspy.HighsModelStatus
    if st in (M.kInfeasible, M.kUnboundedOrInfeasible):
        return _INFEASIBLE, math.inf, None, nodes
    has_point = int(getattr(info, "primal_solution_status", 0)) == 2  # a feasible point
    if st == M.kOptimal or (st == M.kTimeLimit and has_point):
        v = np.asarray(hs.getSolution().col_value)
        y = v[2 * n :] > 0.5
        status = _OK if st == M.kOptimal else _MAXITER
        return status, float(info.objective_function_value) * sig, y, nodes
    if st == M.kTimeLimit:
        return _MAXITER, math.inf, None, nodes
    return _FAILED, math.inf, None, nodes
