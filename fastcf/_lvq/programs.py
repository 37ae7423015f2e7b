"""The convex programs of paper 001 in cvxpy: one per target prototype, built once, re-solved.

For GLVQ/GMLVQ (one metric Λ) the constraints of eq. 9 are linear (:mod:`.model`), and the
program of target prototype p_i is, in the shifted variable z = x − x̄,

    min_z ½‖W^{1/2} z‖²   (Euclidean θ, a QP, eq. 11)   or   Σ_k w_k |z_k|   (Manhattan, an LP,
    eq. 10/21: the epigraph variables β ≥ |z| are cvxpy's job; the paper's eq. 18/21 write β > 0
    where β ≥ 0 is meant)

    s.t.  (G z)_r / ‖G_r‖ ≤ h_r,   G = [A_ij (p_j of another class); C],
          h = ([b_ij − ε; c] − G x̄) / ‖G_r‖,   lo − x̄ ≤ z ≤ hi − x̄,   z_F = 0.

Rows are scaled to unit norm: same feasible set, and the solver's absolute tolerances then mean
distances in input units (GMLVQ's trace-normalised Λ makes raw rows tiny). Only the vectors h and
the box change per query, so each program is built once per explainer, target prototype and
option pattern with ``cp.Parameter``s (:func:`program`) and re-solved. cvxpy's
``Problem.solve`` re-applies the parameters through its sparse tensors at every call (about
0.5 ms, ten times Clarabel's own solve), so :func:`compile_program` reads the affine map from
the parameters to the cone program's vector b once and each query then costs one mat-vec and one
Clarabel call (:func:`solve_compiled`), as cvxpylayers does.

Every solver outcome becomes a status (:mod:`fastcf._status`): a solution is accepted only when
cvxpy's status is in ``cp.settings.SOLUTION_PRESENT`` (Clarabel: Solved/AlmostSolved);
infeasibility is status INFEASIBLE, any other outcome SOLVER_FAILED — never an exception.
"""

from __future__ import annotations

import warnings

import numpy as np

from fastcf._lvq.options import row_options
from fastcf._status import Status, message
from fastcf.results import Solution

__all__ = [
    "SOLVER_NAMES",
    "method_label",
    "program",
    "snap_l1",
    "solve",
    "solve_cvxpy",
    "theta",
]

#: the cvxpy solvers ``solver=`` may name
SOLVER_NAMES = {"CLARABEL", "OSQP", "SCS", "HIGHS", "SCIPY", "ECOS", "GUROBI", "MOSEK", "CPLEX"}
_OK, _INFEASIBLE, _FAILED = int(Status.OK), int(Status.INFEASIBLE), int(Status.SOLVER_FAILED)
_NUMERIC = int(Status.NUMERIC)
_CLARABEL_TOL = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}


def solver_name(solver):
    """Return the cvxpy solver that runs for ``solver=`` (None: Clarabel)."""
    return "CLARABEL" if solver is None else str(solver).upper()


def method_label(metric, solver):
    """Return the ``method`` of the results, e.g. ``"cvxpy QP (CLARABEL)"``."""
    return f"cvxpy {'QP' if metric == 'euclidean' else 'LP'} ({solver_name(solver)})"


def theta(z, metric, w):
    """Return θ(x̄ + z, x̄): ‖W^{1/2} z‖₂ or Σ_k w_k |z_k|."""
    if metric == "euclidean":
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            d = float(np.sqrt(np.sum(w * z * z)))
            if not 1e-150 < d < 1e150 and d != 0.0:
                # the plain sum of squares overflows (a prototype 1e155 away: the distance was
                # inf, and the answer was dropped as no closer than none) or underflows:
                # scaled by the largest term, as LAPACK's dnrm2
                u = np.sqrt(w) * np.abs(z)
                top = float(u.max(initial=0.0))
                if top > 0.0 and np.isfinite(top):
                    d = top * float(np.sqrt(np.sum((u / top) ** 2)))
        return d
    return float(np.sum(w * np.abs(z)))


#: a Manhattan move below this fraction of the largest (weighted) move is the interior-point
#: solver's residue, not a move (see :func:`snap_l1`)
SNAP_REL = 1e-8


def snap_l1(z, w, rows=None, room=0.0):
    """Return a Manhattan answer's move ``z`` with the solver's residue set to exactly 0.

    Clarabel (an interior-point method) ends near a vertex of the LP, not on it: the features
    the vertex leaves unchanged move by ~1e-11 (of a move of ~1), so every feature counted as
    changed and ``enumerate``/``max_changes`` saw no sparsity. Moves with w_k |z_k| at most
    :data:`SNAP_REL` times the largest are set to 0, a move towards x̄ (inside the box). With
    ``rows = (G, h)`` (the program's constraints G z ≤ h, in squared distance) the snapped move
    is kept only where no row moves by more than ``room`` (half the margin ε of eq. 9b: the
    answer keeps d_i + ε/2 ≤ d_j) past the unsnapped one; a real move is never dropped. The
    model's own arithmetic judges the answer afterwards, as always.
    """
    size = w * np.abs(z)
    top = float(np.max(size, initial=0.0))
    small = (size <= SNAP_REL * top) & (z != 0.0)
    if not (top > 0.0 and np.isfinite(top)) or not small.any():
        return z
    zs = np.where(small, 0.0, z)
    if rows is not None:
        G, h = rows
        with np.errstate(over="ignore", invalid="ignore"):
            before = float(np.max(G @ z - h, initial=-np.inf))
            after = float(np.max(G @ zs - h, initial=-np.inf))
            slack = 1e-12 * float(np.max(np.abs(h), initial=1.0))
        if not after <= max(before, 0.0) + max(room, slack):
            return z
    return zs


def program(cache, geo, i, metric, opts, ccp=False):
    """Return the cvxpy program of target prototype ``i``, built once and kept in ``cache``.

    ``opts`` holds one box, lo/hi of shape (D,) (:func:`fastcf._lvq.options.row_options`).

    ``ccp=True`` builds the convexified program of one penalty-CCP round instead (:mod:`.ccp`).
    """
    w, free, lo, hi, C = opts.w, opts.free, opts.lo, opts.hi, opts.C
    key = (
        i,
        metric,
        free.tobytes(),
        np.isfinite(lo).tobytes(),
        np.isfinite(hi).tobytes(),
        C.tobytes(),
        w.tobytes(),
        ccp,
    )
    prog = cache.get(key)
    if prog is not None:
        return prog
    import cvxpy as cp

    D = geo.prototypes.shape[1]
    z = cp.Variable(D)  # x = x̄ + z
    # the weights are constants of the program (part of the cache key): as parameters they
    # would make cvxpy rebuild the objective matrix at every solve; per query only vectors change
    if metric == "euclidean":
        obj = 0.5 * cp.sum_squares(cp.multiply(np.sqrt(w), z))  # eq. 11, shifted by x̄
    else:
        obj = w @ cp.abs(z)  # eq. 10/21
    cons, par = [], {}
    others = np.flatnonzero(geo.valid[i])
    if not ccp:
        G = np.vstack([geo.A[i, others], C])
        # each row's norm, scaled by its largest entry (Σ a² underflows for rows of 1e-160)
        top = np.abs(G).max(axis=1, initial=0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            rel = np.where(top[:, None] > 0, G / np.where(top > 0, top, 1.0)[:, None], 0.0)
        nrm = top * np.sqrt(np.einsum("ij,ij->i", rel, rel))
        par["zero_row"] = ~(nrm > 0)  # 0·z ≤ h: decided by the sign of h, before any solver
        nrm = np.where(nrm > 0, nrm, 1.0)
        h = cp.Parameter(G.shape[0])
        cons.append((G / nrm[:, None]) @ z <= h)
        par["h"] = h
        par["row_norm"] = nrm
    else:
        if C.shape[0]:
            hu = cp.Parameter(C.shape[0])
            cons.append(C @ z <= hu)
            par["hu"] = hu
        m = others.size
        s = cp.Variable(m, nonneg=True)
        R = cp.Parameter((m, D))
        kappa = cp.Parameter(m)
        off = cp.Parameter(geo.omegas.shape[1])
        tau = cp.Parameter(nonneg=True)
        fi = cp.sum_squares(geo.omegas[i] @ z + off)  # d(x, p_i), convex
        # f(x) − ĝ_j(x; x_k) ≤ s_j  with ĝ_j the linearisation of d(x, p_j) (eq. 36–42)
        cons.append(fi - kappa - R @ z <= s)
        obj = obj + tau * cp.sum(s)
        par.update(R=R, kappa=kappa, off=off, tau=tau, s=s)
    fix = np.flatnonzero(~free)
    if fix.size:
        cons.append(z[fix] == 0)
    lo_idx = np.flatnonzero(np.isfinite(lo) & free)
    hi_idx = np.flatnonzero(np.isfinite(hi) & free)
    if lo_idx.size:
        par["lo"] = cp.Parameter(lo_idx.size)
        cons.append(z[lo_idx] >= par["lo"])
    if hi_idx.size:
        par["hi"] = cp.Parameter(hi_idx.size)
        cons.append(z[hi_idx] <= par["hi"])
    prog = {
        "prob": cp.Problem(cp.Minimize(obj), cons),
        "z": z,
        "par": par,
        "others": others,
        "lo_idx": lo_idx,
        "hi_idx": hi_idx,
    }
    cache[key] = prog
    return prog


def set_box(prog, x0, lo, hi):
    """Set the box parameters of ``prog`` for the query ``x0``: lo − x̄ ≤ z ≤ hi − x̄."""
    par = prog["par"]
    if "lo" in par:
        par["lo"].value = (lo - x0)[prog["lo_idx"]]
    if "hi" in par:
        par["hi"].value = (hi - x0)[prog["hi_idx"]]


def solve(prob, solver):
    """Solve with cvxpy's ``Problem.solve``; return (status, message), never raising."""
    import cvxpy as cp

    name = solver_name(solver)
    # warm_start=False: cvxpy's default reuses the solver of the program's last solve (Clarabel's
    # data updated in place) and the cached programs are shared by every query of the
    # explainer, so an answer (a CCP round) depended on the queries asked before it (explain
    # and enumerate's first node disagreed: soak_stage.py --only lvq --seed 541, case 380)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if name == "CLARABEL":  # tighter than the defaults (1e-8): exact to ~1e-10
                prob.solve(solver=name, warm_start=False, **_CLARABEL_TOL)
            else:
                prob.solve(solver=name, warm_start=False)
        except cp.error.SolverError as exc:
            return _FAILED, f"{message(_FAILED)}: {name}: {exc}"
    note = "; ".join(str(w.message) for w in caught)
    st = prob.status
    if st in cp.settings.SOLUTION_PRESENT:
        msg = message(_OK) + (f" ({name} status {st})" if st != cp.OPTIMAL else "")
        return _OK, msg + (f"; solver warnings: {note}" if note else "")
    if st in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
        return _INFEASIBLE, message(_INFEASIBLE)
    return _FAILED, f"{message(_FAILED)}: {name} status {st}" + (f"; {note}" if note else "")


def compile_program(prog):
    """Compile a parameterised program once for Clarabel; None when that is not possible.

    Our parameters enter only the constraint vector b of the compiled cone program, affinely, so
    the affine map is read once from cvxpy's own ``get_problem_data`` (one probe per parameter
    entry), after checking that the objective and the matrix A do not move.
    """
    import cvxpy as cp

    prob, par = prog["prob"], prog["par"]
    names = [k for k in ("h", "lo", "hi") if k in par]
    notes = []

    def solver_data():
        # warnings of the compilation are recorded and reported in every result's message
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = prob.get_problem_data(cp.CLARABEL)
        notes.extend(str(w.message) for w in caught if str(w.message) not in notes)
        return out

    sizes = [par[k].size for k in names]
    saved = {k: par[k].value for k in names}  # the current query's values, restored below
    for k in names:
        par[k].value = np.zeros(par[k].size)
    data, chain, _ = solver_data()
    pp = data[cp.settings.PARAM_PROB]
    b0 = np.asarray(data["b"], dtype=np.float64).copy()
    Mb = np.zeros((b0.shape[0], int(sum(sizes))))
    col = 0
    for k, size in zip(names, sizes, strict=True):
        for e in range(size):
            v = np.zeros(size)
            v[e] = 1.0
            par[k].value = v
            d2 = solver_data()[0]
            same = (
                np.array_equal(d2["c"], data["c"])
                and (d2["A"] != data["A"]).nnz == 0
                and ("P" not in data or (d2["P"] != data["P"]).nnz == 0)
            )
            if not same:
                return None  # a parameter moved more than b: keep Problem.solve
            Mb[:, col] = d2["b"] - b0
            col += 1
        par[k].value = np.zeros(size)
    for k in names:
        par[k].value = saved[k]
    return {
        "data": data,
        "solver": chain.solver,
        "names": names,
        "b0": b0,
        "Mb": Mb,
        "zcol": pp.var_id_to_col[prog["z"].id],
        "note": "; cvxpy warnings: " + "; ".join(notes) if notes else "",
    }


def solve_compiled(prog, D):
    """Re-solve a compiled program with Clarabel; return (status, message, z) or None."""
    comp = prog.get("compiled", False)
    if comp is False:
        comp = prog["compiled"] = compile_program(prog)
    if comp is None:
        return None
    pvec = np.concatenate([np.atleast_1d(prog["par"][k].value) for k in comp["names"]])
    data = dict(comp["data"])
    data["b"] = comp["b0"] + comp["Mb"] @ pvec
    try:
        sol = comp["solver"].solve_via_data(data, False, False, _CLARABEL_TOL)
    except Exception as exc:  # noqa: BLE001 - any solver failure becomes SOLVER_FAILED
        return _FAILED, f"{message(_FAILED)}: CLARABEL: {exc}", None
    st = str(sol.status)
    if st in ("Solved", "AlmostSolved"):  # cvxpy's SOLUTION_PRESENT (optimal, optimal_inaccurate)
        z = np.asarray(sol.x[comp["zcol"] : comp["zcol"] + D], dtype=np.float64)
        note = "" if st == "Solved" else " (CLARABEL status AlmostSolved)"
        return _OK, message(_OK) + note + comp["note"], z
    if st in ("PrimalInfeasible", "AlmostPrimalInfeasible"):
        return _INFEASIBLE, message(_INFEASIBLE), None
    return _FAILED, f"{message(_FAILED)}: CLARABEL status {st}", None


def _param_scale(h, x0, lo, hi, free):
    """Return a power of 2 near the largest of |h| and the finite box offsets.

    Those of the free features; 1 where all are 0 or not finite.
    """
    top = float(np.max(np.abs(h), initial=0.0))
    with np.errstate(invalid="ignore", over="ignore"):
        for off in (lo - x0, hi - x0):
            fin = np.isfinite(off) & free
            if fin.any():
                top = max(top, float(np.max(np.abs(off[fin]))))
    if not (top > 0.0 and np.isfinite(top)):
        return 1.0
    return float(2.0 ** np.frexp(top)[1])


def solve_cvxpy(cache, geo, X, tgt, metric, opts, solver, compiled=True) -> Solution:
    """Solve Algorithm 1 with the convex program of every target prototype (shared metric).

    Parameters
    ----------
    cache : dict
        The explainer's program cache.
    geo : fastcf._lvq.model.Geometry
    X : ndarray of shape (N, D)
    tgt : ndarray of shape (N,)
        Target class indices.
    metric : {"euclidean", "manhattan"}
    opts : fastcf._lvq.options.Options
        Its box lo/hi is shared, shape (D,), or one per query, shape (N, D).
    solver : str or None
        cvxpy solver name (None: Clarabel).
    compiled : bool, default=True
        Re-solve Clarabel programs through :func:`solve_compiled`; False runs cvxpy's
        ``Problem.solve`` every time (the benchmarks compare both).
    """
    N, D = X.shape
    Xcf = X.copy()
    dist = np.full(N, np.inf)
    proto = np.full(N, -1, dtype=np.int64)
    status = np.full(N, _INFEASIBLE, dtype=np.int64)
    messages = [message(_INFEASIBLE)] * N
    for a in range(N):  # one solver call per query and target prototype
        x0 = X[a]
        ro = row_options(opts, a)  # the row's own box when the bounds are per row
        fail = None
        for i in np.flatnonzero(geo.cls == tgt[a]):
            prog = program(cache, geo, i, metric, ro)
            others = prog["others"]
            G_b = np.concatenate([geo.b[i, others] - opts.margin, opts.c])
            G = np.vstack([geo.A[i, others], opts.C])
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                hv = (G_b - G @ x0) / prog["par"]["row_norm"]
            if (hv[prog["par"]["zero_row"]] < 0).any():
                # a row with no coefficient and a negative right-hand side (a target prototype
                # equal to one of another class, under a margin > 0): no point. Clarabel called
                # 0·z ≤ −1e-6, scaled to −1e-12, met within its tolerance, and that prototype's
                # "answer" won (soak round T, seed 431)
                continue
            if np.isnan(hv).any() or (hv == -np.inf).any():
                # a row of 1e-310 against a right-hand side of 1 (soak round T, seed 428: a
                # RuntimeWarning, and cvxpy refuses a parameter that is not finite)
                fail = (_NUMERIC, "numerical failure: a constraint of the program overflows")
                continue
            # the program is positively homogeneous in (h, lo − x̄, hi − x̄): solved for them
            # divided by a power of 2 near their largest size, its answer z multiplied back
            # (exact). At data of scale 10¹⁰ (or 10⁻²⁰) Clarabel, whose tolerances are
            # absolute, called every query "infeasible" (and 1 of 10 at 10⁵)
            vacuous = hv == np.inf  # a·z ≤ ∞: met by every z, kept far outside the scale
            sig = _param_scale(np.where(vacuous, 0.0, hv), x0, ro.lo, ro.hi, ro.free)
            prog["par"]["h"].value = np.where(vacuous, 1e10, hv / sig)
            set_box(prog, x0 / sig, ro.lo / sig, ro.hi / sig)
            out = None
            if compiled and solver_name(solver) == "CLARABEL":
                out = solve_compiled(prog, D)
            if out is None:
                st, msg = solve(prog["prob"], solver)
                z = None if st != _OK else np.asarray(prog["z"].value, dtype=np.float64)
            else:
                st, msg, z = out
            if st != _OK:
                if st != _INFEASIBLE:
                    fail = (st, msg)
                continue
            z = z * sig
            z[~opts.free] = 0.0
            if metric == "manhattan":
                z = snap_l1(z, opts.w, (G, G_b - G @ x0), 0.5 * opts.margin)
            dd = theta(z, metric, opts.w)
            if dd < dist[a]:
                dist[a], Xcf[a], proto[a], status[a], messages[a] = dd, x0 + z, i, _OK, msg
        if proto[a] < 0 and fail is not None:
            status[a], messages[a] = fail
    return Solution(
        x=Xcf,
        proba=None,
        distance=dist,
        success=status == _OK,
        status=status,
        nit=np.zeros(N, dtype=np.int64),
        method=method_label(metric, solver),
        message=messages,
        info={"prototype": proto},
    )
