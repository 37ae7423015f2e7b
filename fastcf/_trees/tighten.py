"""Reduced-cost fixing: the linear relaxation of a pruned tree program shrinks it further.

The program of :mod:`fastcf._trees.build` only needs the cells of cost <= ρ. Its linear
relaxation (all columns continuous) has optimum L with reduced costs d and solution v; for every
feasible point z of the program, LP duality gives ``cost(z) >= L + Σ_j d_j (z_j − v_j)``. Each
term is >= ``−E_j`` with ``E_j = d_j v_j`` where ``d_j > 0`` and ``|d_j| (1 − v_j)`` where
``d_j < 0`` (0 when v is complementary to d, as at an optimal basis; small otherwise), so with
``E = Σ_j E_j``:

* a binary y_j with ``L + d_j (1 − v_j) − E > ρ`` is 0 in every cell of cost <= ρ, one with
  ``L − d_j v_j − E > ρ`` is 1: the feature's range of intervals shrinks to one side of the
  boundary;
* a leaf's λ_l is 1 in every cell that reaches the leaf (the program is integral in λ once y
  is), so ``L + d_l (1 − v_l) − E > ρ`` kills the leaf.

The reductions of :mod:`fastcf._trees.reduce` then run again on the smaller ranges and fewer
leaves (a range that shrinks kills the leaves outside it, a dead leaf narrows the hulls), and the
relaxation of the smaller program is solved again, a few rounds while they fix a good share of
the columns. If ``L > ρ`` (or HiGHS's dual simplex passes ρ, its objective bound), no cell of
cost <= ρ exists. A tolerance of 1e-7 (1 + |ρ|) plus HiGHS's sum of dual infeasibilities keeps
every fixing valid under the solver's own rounding.
"""

from __future__ import annotations

import numpy as np

from .build import build
from .reduce import Costs, reduce

__all__ = ["tighten", "ROUNDS"]

#: relaxations solved at most
ROUNDS = 3
#: a round that fixes fewer than this share of the columns ends the loop
MIN_SHARE = 0.05


def _relaxation(built):
    """Solve the relaxation in place; return (L, v, d, slack) or a verdict string."""
    import highspy

    h = built.h
    h.run()
    st = h.getModelStatus()
    S = highspy.HighsModelStatus
    if st == S.kObjectiveBound:
        return "above"
    if st in (S.kInfeasible, S.kUnboundedOrInfeasible):
        return "infeasible"
    if st != S.kOptimal:
        return "unknown"
    info = h.getInfo()
    sol = h.getSolution()
    v = np.asarray(sol.col_value)
    d = np.asarray(sol.col_dual)
    slack = float(info.sum_dual_infeasibilities)
    return float(info.objective_function_value), v, d, slack


def tighten(st, q, c, red, forms, lforms, rho, time_limit=np.inf):
    """Return (red, proven): the reductions after reduced-cost fixing at cutoff ρ.

    ``proven``: no cell of cost <= ρ is feasible (the incumbent is optimal). ``red`` is a
    :class:`~fastcf._trees.reduce.Reduced` (unchanged if the relaxation could not be used).
    ``time_limit``: seconds for all the relaxations (a relaxation stopped by it is not used).
    """
    import time

    end = time.perf_counter() + time_limit
    for _ in range(ROUNDS):
        built = build(st, q, c, red, forms, rho, relax=True)
        built.h.setOptionValue("time_limit", max(0.0, end - time.perf_counter()))
        out = _relaxation(built)
        if out in ("above", "infeasible"):
            return red, True
        if isinstance(out, str):
            return red, False
        L, v, d, slack = out
        tol = 1e-7 * (1.0 + abs(rho)) + slack
        if L > rho + tol:
            return red, True
        E = float(np.where(d > 0, d * v, np.where(d < 0, -d * (1.0 - v), 0.0)).sum())
        zero = L + d * (1.0 - v) - E > rho + tol  # the column is 0 in every cell of cost <= ρ
        one = L - d * v - E > rho + tol  # ... 1
        ny = built.col_g.size
        fixed = int(zero.sum() + one[:ny].sum())
        if fixed == 0:
            return red, False
        cf = np.searchsorted(st.yoff, built.col_g, side="right") - 1
        cj = built.col_g - st.yoff[cf]
        ka, kb = red.ka.copy(), red.kb.copy()
        np.maximum.at(ka, cf[zero[:ny]], cj[zero[:ny]] + 1)  # y = 0: x_f > b_j
        np.minimum.at(kb, cf[one[:ny]], cj[one[:ny]])  # y = 1: x_f <= b_j
        alive = red.alive.copy()
        kl = np.flatnonzero(built.lcol >= 0)
        dead = kl[zero[built.lcol[kl]]]
        alive[dead] = False
        pruned = red.pruned.copy()  # a cell may still reach these leaves: no constant tree
        pruned[st.leaf_tree[dead]] = True
        red = reduce(st, Costs(c.flat, c.kbar, ka, kb), rho, lforms, alive)
        if red.empty:
            return red, True
        red = red._replace(pruned=red.pruned | pruned)
        if fixed < MIN_SHARE * built.n_cols:
            return red, False
    return red, False
