"""The exact mixed-integer program of one tabular query, solved by HiGHS.

Variables (one row x̄; numeric columns j, encoded columns c with categories k):

* ``p_j, n_j ≥ 0``: the increase and decrease of numeric column j, ``x_j = x̄_j + p_j − n_j``
  (integer variables for an integer column, so every answer is integral);
* ``δ_{c,k} ∈ {0, 1}``: column c takes category k, ``Σ_k δ_{c,k} = 1``;
* with ``max_changes=m``: ``z_j ∈ {0, 1}``, numeric column j changes.

Objective: ``Σ_j w_j (p_j + n_j) + Σ_{c,k} w_c d_c(k, k̄_c) δ_{c,k}`` with ``d_c`` 1 for a change
of a categorical column (0 for its own category) and ``|rank(k) − rank(k̄)|`` for an ordinal one:
the Manhattan distance in MAD units plus one per changed categorical column by default. At the
optimum ``p_j n_j = 0`` (every cost is positive), so ``p_j + n_j = |x_j − x̄_j|``.

Constraints, with the scores ``s(v) = G v + g`` of :mod:`fastcf._tabular.fold`:

* the target: binary ``s ≥ θ`` (target ``classes[1]``) or ``s ≤ −θ``, θ the margin, or
  ``max(logit τ, 0) + margin`` for ``proba=τ`` (so the answer also is the predicted class);
  softmax ``s_t − s_j ≥ margin`` for every class j ≠ t; a prototype model (GLVQ, GMLVQ:
  one score per prototype) ``s_p − s_q ≥ margin`` for every prototype q of another class, one
  program per prototype p of the target, the cheapest answer kept;
* the box ``lo_j ≤ x_j ≤ hi_j`` as bounds of p and n (training range by default; a row outside its
  box must move into it), within the range of the column's dtype (−128..127 for ``int8``),
  immutable columns fixed, increase-only ``n_j = 0``, decrease-only ``p_j = 0``; categories
  outside the allowed set (never seen in training, refused by the user, below the row's rank for
  an increase-only ordinal column) fixed to 0. An immutable column keeps its own value only if
  the bounds and allowed categories admit it: otherwise the row is infeasible, and the message
  names the column (as for a monotone column whose bounds or categories leave it nowhere to go);
* ``max_changes=m``: ``p_j ≤ (hi_j − x̄_j) z_j``, ``n_j ≤ (x̄_j − lo_j) z_j`` (big-M from the box)
  and ``Σ_j z_j + Σ_c (1 − δ_{c,k̄_c}) ≤ m``: original columns are counted, not encoded features.

HiGHS solves it to a zero gap (``mip_rel_gap = mip_abs_gap = 0``): the answer is the certified
optimum. Its feasibility-jump heuristic is turned off: on these small programs it costs ~5 ms of
a ~0.5 ms solve (which is why this module drives ``highspy`` and not ``scipy.optimize.milp``,
which can set neither it nor the absolute gap). General integer columns with wide ranges still
cost HiGHS 2–10 ms per program; a binary model's program without ``max_changes`` is a covering
knapsack, which :mod:`fastcf._tabular.knapsack` solves exactly in a fraction of that, and HiGHS
takes the rest (softmax models, ``max_changes``, a branch-and-bound past its node limit).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._highs import highs
from .._status import Status
from .grid import step_bounds, steps, value

__all__ = ["Program", "RowAnswer", "Query", "choice_rows"]


class Query(NamedTuple):
    """The per-query options of one row (already checked)."""

    target: int  # index into classes
    threshold: float  # binary: the score bound θ; softmax: the margin on s_t − s_j
    lo: np.ndarray  # (n_num,) box of the numeric columns
    hi: np.ndarray
    allowed: np.ndarray  # (n_ind,) bool: categories the answer may take
    frozen: np.ndarray  # (D,) bool: columns fixed (immutable plus extra)
    max_changes: int | None
    proba: float | None = None  # τ of proba= (the tree program asks it of the forest)
    time_limit: float | None = None  # seconds for the tree program of the row (None: none)
    plausible: bool = False  # tree programs: only regions of the model that hold training rows
    row: object = None  # the query's DataFrame row (tree programs: their model checks see the
    # answer as the result will hold it)


class RowAnswer(NamedTuple):
    """The program's answer for one row."""

    x: np.ndarray  # (n_num,) numeric values
    k: np.ndarray  # (n_cat,) category indices
    cost: float  # recomputed from the answer
    status: int
    message: str
    info: dict


def _highs():
    """Return this thread's HiGHS instance for tabular programs (:func:`fastcf._highs.highs`)."""
    # (feasibility jump: HiGHS >= 1.9; ~5 ms per solve)
    return highs("tabular", (("mip_heuristic_run_feasibility_jump", False),))


class Program:
    """The program template of one explainer: the per-model arrays, built once.

    Parameters
    ----------
    schema : Schema
    """

    folded = True  # the model is affine scores G v + g (TreeProgram: a tree model)

    def __init__(self, schema):
        fold = schema.fold
        self.schema = schema
        self.K = fold.G.shape[0]
        self.n_num = fold.numeric.size
        self.n_ind = int(fold.cat_start[-1])
        self.n_cat = fold.cat_cols.size
        self.G_num = fold.G[:, : self.n_num]
        self.G_ind = fold.G[:, self.n_num :]
        self.g = fold.g
        self.block = np.repeat(np.arange(self.n_cat), np.diff(fold.cat_start))
        self.ordinal = np.array([schema.kind[c] == "ordinal" for c in fold.cat_cols], dtype=bool)
        self.num_cols = fold.numeric
        self.cat_cols = fold.cat_cols
        self.proto = fold.proto_class  # prototype models: the class of each score row
        self.method = "auto"  # "milp": always HiGHS; "bnb": never (tests compare the two)
        # numeric variables in steps of each column's resolution (:mod:`.grid`): whole steps
        # (integer variables) on a grid, value units on a continuous column
        res = schema.num_res
        self.grid = res > 0.0
        self.unit = np.where(self.grid, res, 1.0)
        self.decimal = self.grid & (res != 1.0)  # grids read and written in exact decimals
        self.G_step = self.G_num * self.unit
        self.w_step = schema.w_num * self.unit

    def costs(self, x0, k0):
        """Return the per-indicator costs relative to the row's categories ``k0``."""
        s = self.schema
        start = s.cat_start
        own = start[:-1] + k0  # the row's indicator in each block
        rank = s.cat_rank
        d = np.where(self.ordinal[self.block], np.abs(rank - rank[own][self.block]), 1.0)
        d[own] = 0.0
        return d * s.w_cat[self.block]

    def distance(self, x0, k0, x, k):
        """Return the per-column cost of an answer (numeric block, then encoded block)."""
        s = self.schema
        cn = s.w_num * np.abs(x - x0)
        if self.n_cat:
            c_ind = self.costs(x0, k0)
            cc = c_ind[s.cat_start[:-1] + k]
        else:
            cc = np.zeros(0)
        return cn, cc

    def move(self, x0, delta):
        """Return the values ``x0`` moved by ``delta`` (in steps: whole ones on a grid)."""
        x = x0 + delta * self.unit
        for j in np.flatnonzero(self.decimal & (delta != 0.0)):
            r = self.schema.num_res[j]
            at = steps(x0[j], r, self.schema.num_read[j])
            x[j] = value(at + int(delta[j]), r)  # the grid point itself, not x0 + n·r
        return x

    def solve(self, x0, k0, q):
        """Return the :class:`RowAnswer` of one row (``x0`` numeric values, ``k0`` categories).

        Binary models without ``max_changes`` go to the exact branch-and-bound of
        :mod:`fastcf._tabular.knapsack` (a covering knapsack: sub-millisecond); the rest, and a
        search that reaches its node limit, to HiGHS.
        """
        prep = self._prepare(x0, k0, q)
        if isinstance(prep, RowAnswer):
            return prep
        if self.proto is not None:
            return self._prototypes(x0, k0, q, prep)
        if self.method != "milp" and self.K == 1 and q.max_changes is None:
            from .knapsack import solve_binary

            ans = solve_binary(self, x0, k0, q, prep)
            if ans is not None or self.method == "bnb":
                return ans
        return self._milp(x0, k0, q, prep)

    def _prepare(self, x0, k0, q):
        """Return the bounds ``(p_lo, p_hi, n_lo, n_hi, d_hi)`` of one row.

        An infeasible :class:`RowAnswer` when a column cannot meet its own constraints.
        """
        s = self.schema
        n_cat = self.n_cat
        num_frozen = q.frozen[self.num_cols]
        cat_frozen = q.frozen[self.cat_cols]
        direction = s.direction[self.num_cols]
        # bounds of p and n: x in [lo, hi] within the dtype's range, monotone, frozen
        lo = np.maximum(q.lo, s.num_dlo)
        hi = np.minimum(q.hi, s.num_dhi)
        p_lo = np.maximum(0.0, lo - x0)
        p_hi = np.maximum(0.0, hi - x0)
        n_lo = np.maximum(0.0, x0 - hi)
        n_hi = np.maximum(0.0, x0 - lo)
        p_hi = np.where((direction < 0) | num_frozen, 0.0, p_hi)
        n_hi = np.where((direction > 0) | num_frozen, 0.0, n_hi)
        ints = self.grid & ~self.decimal
        p_lo = np.where(ints, np.ceil(p_lo), p_lo)
        n_lo = np.where(ints, np.ceil(n_lo), n_lo)
        p_hi = np.where(ints, np.floor(p_hi), p_hi)
        n_hi = np.where(ints, np.floor(n_hi), n_hi)
        for j in np.flatnonzero(self.decimal):  # in whole steps, by exact decimal arithmetic
            r = s.num_res[j]
            at = steps(x0[j], r, s.num_read[j])
            if at is None:  # an imputer's value off the grid, held (fastcf._tabular.imputed)
                p_hi[j] = n_hi[j] = 0.0
                continue
            first, last = step_bounds(lo[j], hi[j], r, s.num_read[j])
            p_lo[j], n_lo[j] = max(0, first - at), max(0, at - last)
            p_hi[j] = 0.0 if direction[j] < 0 or num_frozen[j] else max(0, last - at)
            n_hi[j] = 0.0 if direction[j] > 0 or num_frozen[j] else max(0, at - first)
        bad = (p_lo > p_hi) | (n_lo > n_hi)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            return self._infeasible(x0, k0, self._why_numeric(j, x0[j], lo[j], hi[j], q))
        # indicators: allowed, frozen (its own category, if allowed), monotone ordinals
        own = s.cat_start[:-1] + k0
        d_hi = q.allowed.astype(np.float64)
        if n_cat:
            frozen_ind = cat_frozen[self.block]
            d_hi[frozen_ind] = 0.0
            d_hi[own[cat_frozen]] = q.allowed[own[cat_frozen]]
            cdir = s.direction[self.cat_cols][self.block]
            r_own = s.cat_rank[own][self.block]
            d_hi[(cdir > 0) & (s.cat_rank < r_own) & ~frozen_ind] = 0.0
            d_hi[(cdir < 0) & (s.cat_rank > r_own) & ~frozen_ind] = 0.0
            empty = np.add.reduceat(d_hi, s.cat_start[:-1]) == 0
            if empty.any():
                j = int(np.flatnonzero(empty)[0])
                return self._infeasible(x0, k0, self._why_categorical(j, k0[j], q))
        return p_lo, p_hi, n_lo, n_hi, d_hi

    def _held(self, c):
        """Return how column ``c`` is held in place: by the user, or by an enumeration node."""
        return "immutable" if self.schema.frozen[c] else "held fixed"

    def _why_numeric(self, j, v, lo, hi, q):
        """Return why numeric column j (value v, box [lo, hi]) has no value it may take."""
        s = self.schema
        c = self.num_cols[j]
        name = s.columns[c]
        box = f"[{lo:g}, {hi:g}]"
        if q.frozen[c] and not lo <= v <= hi:
            return f"column {name!r} is {self._held(c)}, but its value {v:g} lies outside {box}"
        d = s.direction[c]
        if d and (v > hi if d > 0 else v < lo):
            way = ("increase", "below") if d > 0 else ("decrease", "above")
            return f"column {name!r} is {way[0]}-only, but its bounds {box} lie {way[1]} {v:g}"
        if s.num_res[j] != 1.0:
            return (
                f"column {name!r} has the resolution {s.num_res[j]:g}, but its bounds {box} hold "
                "no value of its grid it may move to"
            )
        return f"column {name!r} is integer, but its bounds {box} hold no integer it may move to"

    def _why_categorical(self, j, k, q):
        """Return why encoded column j (the row's category k) has no category it may take."""
        s = self.schema
        c = self.cat_cols[j]
        name = s.columns[c]
        label = s.fold.labels[c][k]
        if q.frozen[c]:
            return (
                f"column {name!r} is {self._held(c)}, but its category {label!r} is not "
                "allowed (allowed= or bounds= leave it out)"
            )
        d = s.direction[c]
        if d:
            way = "at or above" if d > 0 else "at or below"
            return (
                f"column {name!r} is {'increase' if d > 0 else 'decrease'}-only, and allowed=, "
                f"transitions= or bounds= leave no category {way} its {label!r}"
            )
        return f"column {name!r} has no allowed category (allowed=, transitions=, bounds=)"

    def _prototypes(self, x0, k0, q, prep):
        """Return the best of the programs of the target's prototypes (prototype models).

        The target class's region is the union over its prototypes p of the polyhedra
        ``s_p − s_q ≥ θ`` for every prototype q of another class: one MILP per p, and the
        cheapest answer is the optimum over the union. Any program that fails makes the row
        fail (the minimum would not be certified).
        """
        best = None
        nodes = 0
        lead = np.flatnonzero(self.proto == q.target)
        for p in lead:
            ans = self._milp(x0, k0, q, prep, lead=int(p))
            nodes += ans.info.get("nodes", 0)
            if ans.status == int(Status.SOLVER_FAILED):
                return ans._replace(message=ans.message + f" (program of prototype {int(p)})")
            if ans.status == int(Status.OK) and (best is None or ans.cost < best[0].cost):
                best = (ans, int(p))
        if best is None:
            return self._infeasible(x0, k0, None)
        ans, p = best
        info = {**ans.info, "prototype": p, "programs": int(lead.size), "nodes": nodes}
        msg = f"exact (one MILP per prototype of the target, {lead.size}; HiGHS)"
        return ans._replace(message=msg, info=info)

    def _milp(self, x0, k0, q, prep, lead=None):
        """Return the :class:`RowAnswer` of the MILP of one row, solved by HiGHS.

        ``lead``: for a prototype model, the target's prototype whose region is asked.
        """
        import highspy

        s = self.schema
        n_num, n_ind, n_cat = self.n_num, self.n_ind, self.n_cat
        p_lo, p_hi, n_lo, n_hi, d_hi = prep
        ints = self.grid
        m = q.max_changes
        zcols = np.flatnonzero((p_hi > 0) | (n_hi > 0)) if m is not None else np.zeros(0, int)
        if m is not None:
            # the big-M of a column is its room in the user's box (not its dtype's vast range)
            up = (p_hi > 0) & ~np.isfinite(q.hi)
            down = (n_hi > 0) & ~np.isfinite(q.lo)
            if (up | down).any():
                j = int(np.flatnonzero(up | down)[0])
                raise ValueError(
                    f"max_changes needs finite bounds; column {s.columns[self.num_cols[j]]!r} "
                    "has an infinite one (the default bounds are the training range)"
                )
        n_z = zcols.size
        nv = 2 * n_num + n_ind + n_z
        cost = np.concatenate([self.w_step, self.w_step, self.costs(x0, k0), np.zeros(n_z)])
        lb = np.concatenate([p_lo, n_lo, np.zeros(n_ind), np.zeros(n_z)])
        ub = np.concatenate([p_hi, n_hi, d_hi, np.ones(n_z)])
        # rows
        const = self.g + self.G_num @ x0
        rows, rlo, rhi = [], [], []
        score = np.concatenate(
            [self.G_step, -self.G_step, self.G_ind, np.zeros((self.K, n_z))], axis=1
        )
        t = q.target
        if lead is not None:  # prototype p beats every prototype of another class
            for j in np.flatnonzero(self.proto != t):
                rows.append(score[lead] - score[j])
                rlo.append(q.threshold - (const[lead] - const[j]))
                rhi.append(math.inf)
        elif self.K == 1:
            if t == 1:
                rows.append(score[0])
                rlo.append(q.threshold - const[0])
                rhi.append(math.inf)
            else:
                rows.append(score[0])
                rlo.append(-math.inf)
                rhi.append(-q.threshold - const[0])
        else:
            for j in range(self.K):
                if j != t:
                    rows.append(score[t] - score[j])
                    rlo.append(q.threshold - (const[t] - const[j]))
                    rhi.append(math.inf)
        _scale_rows(rows, rlo, rhi)
        ci, cj, cv, clo, chi = choice_rows(s, n_num, k0, zcols, p_hi, n_hi, m)
        C = np.zeros((clo.size, nv))
        C[ci, cj] = cv
        rows.extend(C)
        rlo.extend(clo.tolist())
        rhi.extend(chi.tolist())
        M = np.array(rows)
        integ = np.concatenate([ints, ints, np.ones(n_ind, bool), np.ones(n_z, bool)])
        h = _highs()
        lp = highspy.HighsLp()
        lp.num_col_ = nv
        lp.num_row_ = M.shape[0]
        lp.col_cost_ = cost
        lp.col_lower_ = lb
        lp.col_upper_ = ub
        lp.row_lower_ = np.array(rlo)
        lp.row_upper_ = np.array(rhi)
        nz = M != 0.0
        cols_nz = nz.sum(axis=0)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = np.concatenate([[0], np.cumsum(cols_nz)]).astype(np.int32)
        ri, ci = np.nonzero(nz.T)  # column-major order
        lp.a_matrix_.index_ = ci.astype(np.int32)
        lp.a_matrix_.value_ = M.T[ri, ci]
        if integ.any():
            lp.integrality_ = [
                highspy.HighsVarType.kInteger if b else highspy.HighsVarType.kContinuous
                for b in integ
            ]
        h.passModel(lp)
        h.run()
        st = h.getModelStatus()
        text = h.modelStatusToString(st)
        info = h.getInfo()
        hinfo = {
            "solver": "HiGHS",
            "highs_status": text,
            "objective": float(info.objective_function_value),
            "mip_gap": float(getattr(info, "mip_gap", 0.0)),
            "nodes": int(getattr(info, "mip_node_count", 0)),
        }
        if st == highspy.HighsModelStatus.kOptimal:
            v = np.asarray(h.getSolution().col_value)
            p, n = v[:n_num], v[n_num : 2 * n_num]
            delta = p - n
            delta = np.where(ints, np.round(delta), delta)
            delta[np.abs(delta) * self.w_step <= 1e-13] = 0.0
            x = self.move(x0, delta)
            dv = v[2 * n_num : 2 * n_num + n_ind]
            k = np.array(
                [int(np.argmax(dv[s.cat_start[j] : s.cat_start[j + 1]])) for j in range(n_cat)],
                dtype=np.int64,
            )
            cn, cc = self.distance(x0, k0, x, k)
            return RowAnswer(
                x,
                k,
                float(cn.sum() + cc.sum()),
                int(Status.OK),
                f"exact (MILP, HiGHS: {text})",
                hinfo,
            )
        if st in (
            highspy.HighsModelStatus.kInfeasible,
            highspy.HighsModelStatus.kUnboundedOrInfeasible,
        ):
            ans = self._infeasible(x0, k0, None)
            return ans._replace(message=ans.message + f" (HiGHS: {text})", info=hinfo)
        return RowAnswer(
            x0.copy(),
            k0.copy(),
            math.inf,
            int(Status.SOLVER_FAILED),
            f"the MILP solver failed (HiGHS: {text})",
            hinfo,
        )

    def _infeasible(self, x0, k0, why):
        msg = (
            "infeasible: no row within the bounds, the immutable and monotone columns, the "
            "allowed categories (and max_changes) is classified as the target"
        )
        if why:  # a column that cannot meet its own constraints, whatever the model
            msg = f"infeasible: the constraints contradict each other: {why}"
        return RowAnswer(x0.copy(), k0.copy(), math.inf, int(Status.INFEASIBLE), msg, {})


def choice_rows(schema, n_num, k0, zcols, p_hi, n_hi, max_changes):
    """Return the rows of the categories and of ``max_changes``, ``low ≤ A v ≤ high``.

    Over the tabular program's first columns ``v = (p, n, δ, z)``: the numeric moves up and
    down (``n_num`` each), the category indicators, then one change indicator z per column of
    ``zcols`` (:class:`Program`'s layout; a network's program puts its neurons after them). One
    row ``Σ_k δ_{c,k} = 1`` per encoded column; with ``max_changes`` m, for the i-th column j
    of ``zcols`` the rows ``p_j − p_hi_j z_i ≤ 0`` and ``n_j − n_hi_j z_i ≤ 0`` (the big-Ms:
    the column's room in the row's box), then ``Σ_i z_i − Σ_c δ_{c,k̄_c} ≤ m − n_cat`` (a
    category changes where its own indicator k̄ is 0).

    Parameters
    ----------
    schema : Schema
        Its ``cat_start``: each encoded column's first indicator (and one past the last).
    n_num : int
        The numeric columns.
    k0 : ndarray of int
        The row's category of each encoded column.
    zcols : ndarray of int
        The numeric columns that may move (a change indicator each; empty without m).
    p_hi, n_hi : ndarray
        The moves' upper bounds (the big-Ms).
    max_changes : int or None
        m (None: the category rows alone).

    Returns
    -------
    rows, cols : ndarray of int64
        Each entry's row (from 0) and column.
    vals : ndarray of float64
    low, high : ndarray of float64
        The rows' bounds.
    """
    cs = np.asarray(schema.cat_start, dtype=np.int64)
    n_cat, n_ind = cs.size - 1, int(cs[-1])
    iz = 2 * n_num + n_ind
    sizes = np.diff(cs)
    R = [np.repeat(np.arange(n_cat), sizes)]  # one category per encoded column
    C = [2 * n_num + np.arange(n_ind)]
    V = [np.ones(n_ind)]
    low, high = [np.ones(n_cat)], [np.ones(n_cat)]
    if max_changes is not None:
        zcols = np.asarray(zcols, dtype=np.int64)
        n_z = zcols.size
        # (the column j's rows, p then n: 2 i and 2 i + 1 after the category rows)
        rp = n_cat + 2 * np.arange(n_z)
        R += [np.column_stack([rp, rp, rp + 1, rp + 1]).ravel()]
        z = iz + np.arange(n_z)
        C += [np.column_stack([zcols, z, n_num + zcols, z]).ravel()]
        ones = np.ones(n_z)
        V += [np.column_stack([ones, -p_hi[zcols], ones, -n_hi[zcols]]).ravel()]
        low.append(np.full(2 * n_z, -math.inf))
        high.append(np.zeros(2 * n_z))
        last = n_cat + 2 * n_z  # Σ z − Σ own δ ≤ m − n_cat
        R += [np.full(n_z + n_cat, last)]
        C += [np.concatenate([z, 2 * n_num + cs[:-1] + np.asarray(k0, dtype=np.int64)])]
        V += [np.concatenate([ones, -np.ones(n_cat)])]
        low.append(np.array([-math.inf]))
        high.append(np.array([float(max_changes - n_cat)]))
    return (
        np.concatenate(R).astype(np.int64), np.concatenate(C).astype(np.int64),
        np.concatenate(V).astype(np.float64), np.concatenate(low), np.concatenate(high),
    )  # fmt: skip


def _scale_rows(rows, rlo, rhi):
    """Scale the score rows (in place) by powers of 2 to a largest coefficient in [1/2, 1).

    A diverged fit (an SGDClassifier with weights ~1e16 and scores ~1e20: the pipeline zoo)
    handed HiGHS rows past its largest accepted matrix value and bounds it reads as infinite;
    it refused the program ("Empty") while rows of the target lay in the box. Scaled by a power
    of 2 the coefficients are the same doubles up to the exponent, each row's inequality the
    same set (its bounds scaled with it), and HiGHS's absolute feasibility tolerance relative
    to the row.
    """
    for i, r in enumerate(rows):
        top = float(np.abs(r).max()) if r.size else 0.0
        if not (0.0 < top < math.inf):
            continue
        e = math.frexp(top)[1]
        if e == 0:
            continue
        rows[i] = np.ldexp(r, -e)
        rlo[i] = math.ldexp(rlo[i], -e) if math.isfinite(rlo[i]) else rlo[i]
        rhi[i] = math.ldexp(rhi[i], -e) if math.isfinite(rhi[i]) else rhi[i]
