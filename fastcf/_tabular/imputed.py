"""Rows whose missing cells the imputer fills with a value off the column's grid.

A ``SimpleImputer`` fills a missing cell with a statistic of the training column (its mean,
say 0.5406…), which is what the model reads but no value a person recorded: it lies between
two points of the column's grid (0.1 steps, or the integers). Such a cell may stay missing
(the model keeps reading the imputer's value f; cost 0), or the answer fills it in with a
grid point g, at the cost ``w |g − f|`` like any other change. The programs of
:mod:`fastcf._tabular.milp` (and the tree program) count a grid column's moves in whole steps
from the row's own value, which f is not; so :func:`solve_row` solves, for each such column,
each of its three cases as a program whose start is on the grid:

* **kept**: the column held at f (the cell stays missing);
* **up**: the start is ``a`` (the grid point below f) and the column must rise to at least
  ``c`` (the one above f): every answer is a grid point g ≥ c, whose program cost
  ``w (g − a)`` is its true cost ``w (g − f)`` plus the constant ``w (f − a)``, and it counts as
  one change, as it is;
* **down**: the start is ``c`` and the column must fall to at most ``a``: g ≤ a, the program
  cost ``w (c − g)``, the true cost plus ``w (c − f)``.

Every grid point the column may take is in exactly one case, with the true change count and
its true cost up to a constant of the case, so the cheapest of the cases' optima (their
costs recomputed from f) is the exact optimum. A column held by the user (immutable), by
``missing="keep"`` or by an enumeration node has the first case only; an increase-only column
has no down case, a decrease-only one no up case. With several such columns of one row the
cases multiply (at most :data:`MAX_CELLS` columns a row: 3⁴ = 81 programs).
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np

from .._status import Status
from .columns import _is_missing
from .grid import around
from .milp import RowAnswer

__all__ = ["off_grid", "solve_row", "MAX_CELLS"]

#: the most off-grid imputed cells of one row that may change (each triples the programs)
MAX_CELLS = 4


def off_grid(prog, x0, row, frozen):
    """Return (free, held): the numeric positions of the row's imputed cells off their grid.

    ``row``: the query's cells (1-D, the model's columns), ``frozen``: (D,) columns held;
    ``held`` are those of frozen columns.
    """
    s = prog.schema
    free, held = [], []
    for j in np.flatnonzero(prog.grid):
        c = int(prog.num_cols[j])
        if _is_missing(row[c]) and around(x0[j], s.num_res[j], s.num_read[j]) is not None:
            (held if frozen[c] else free).append(int(j))
    return free, held


def _held_value(prog, j, f, a, c):
    """Return the value a held off-grid cell is given to the program: f, or a stand-in.

    The linear programs read f as it is. A tree program reads its columns on their grids (a
    split ``x <= β`` is ``x <= g``, g the grid point at or below β: :mod:`.treeprog`), where
    f, between two grid points, has no place; so the grid point next to it that every split
    of the column routes as it routes f stands in for it (a below f is routed otherwise only by
    a split a <= β < f, c above f only by one f <= β < c). Should the column split on both
    sides of f within its grid cell, f is given as it is, and the model's own check of the
    answer stands (the program may then misread the held cell).
    """
    tf = getattr(prog, "tf", None)
    if tf is None:
        return f
    col = int(prog.num_cols[j])
    beta = tf.node_beta[(tf.node_col == col) & np.isfinite(tf.node_beta)]
    if not np.any((a <= beta) & (beta < f)):
        return a
    if not np.any((f <= beta) & (beta < c)):
        return c
    return f


def solve_row(prog, x0, k0, q, row):
    """Return :func:`_solve_row`'s answer, a value an ulp or two outside the box put on it.

    A continuous column's answer is formed as x̄ plus a move, and rounds past a bound the move
    reaches (−13398.022053590234 against a bound of −13398.022053590232:
    ``docs/scripts/soak_zoo.py``); such a value is the bound itself. The cost follows.
    """
    ans = _solve_row(prog, x0, k0, q, row)
    if ans.status != int(Status.OK) and not ans.info.get("stopped"):
        return ans
    free = ~np.asarray(getattr(prog, "grid", np.zeros(ans.x.shape, bool)), dtype=bool)
    with np.errstate(invalid="ignore"):  # (a grid or integer column keeps its grid point)
        below = free & (ans.x < q.lo) & (q.lo - ans.x <= 4.0 * np.spacing(np.abs(q.lo)))
        above = free & (ans.x > q.hi) & (ans.x - q.hi <= 4.0 * np.spacing(np.abs(q.hi)))
    if not (below.any() or above.any()):
        return ans
    x = np.where(below, q.lo, np.where(above, q.hi, ans.x))
    cn, cc = prog.distance(x0, k0, x, ans.k)
    return ans._replace(x=x, cost=float(cn.sum() + cc.sum()))


def _solve_row(prog, x0, k0, q, row):
    """Return the :class:`RowAnswer` of one row, its off-grid imputed cells in their cases.

    ``prog``: the explainer's program, ``x0, k0``: the row as read (an imputed cell at the
    imputer's value), ``q``: its :class:`~fastcf._tabular.milp.Query`, ``row``: its cells.
    A row without such a cell is ``prog.solve(x0, k0, q)`` itself. The answer's ``cost`` is its
    true cost from ``x0``; its ``info["imputed_cases"]`` how many programs were solved.
    """
    cells, fixed = off_grid(prog, x0, row, q.frozen)
    if not cells and not fixed:
        return prog.solve(x0, k0, q)
    s = prog.schema
    if len(cells) > MAX_CELLS:
        names = [str(s.columns[prog.num_cols[j]]) for j in cells]
        return RowAnswer(
            x0.copy(), k0.copy(), math.inf, int(Status.INVALID_INPUT),
            f"the row has {len(cells)} missing cells whose imputed values lie off their "
            f"columns' grids ({names}); at most {MAX_CELLS} may change: hold some "
            "(immutable=, or missing=\"keep\") or fill them in", {},
        )  # fmt: skip
    options = []
    for j in fixed:  # held by the user or by missing="keep": kept only
        c = int(prog.num_cols[j])
        options.append([("kept", *around(x0[j], s.num_res[j], s.num_read[j]))])
    cells = fixed + cells
    for j in cells[len(fixed) :]:
        c = int(prog.num_cols[j])
        a, up = around(x0[j], s.num_res[j], s.num_read[j])
        d = int(s.direction[c])
        cases = [("kept", a, up)]
        if d >= 0:
            cases.append(("up", a, up))  # start a, at least c
        if d <= 0:
            cases.append(("down", up, a))  # start c, at most a
        options.append(cases)
    begin = time.perf_counter()
    best = failure = None
    runs = 0
    for combo in itertools.product(*options):
        xs, lo, hi, fz = x0.copy(), q.lo.copy(), q.hi.copy(), q.frozen.copy()
        for j, (case, start, edge) in zip(cells, combo, strict=True):
            if case == "kept":
                fz[int(prog.num_cols[j])] = True
                xs[j] = _held_value(prog, j, x0[j], start, edge)
                continue
            xs[j] = start
            if case == "up":
                lo[j] = max(lo[j], edge)
            else:
                hi[j] = min(hi[j], edge)
        limit = q.time_limit
        if limit is not None:
            limit = max(limit - (time.perf_counter() - begin), 1e-3)
        ans = prog.solve(xs, k0, q._replace(lo=lo, hi=hi, frozen=fz, time_limit=limit))
        runs += 1
        held = [j for j, (case, _, _) in zip(cells, combo, strict=True) if case == "kept"]
        if held:  # (a held cell's stand-in back to the imputer's value: the cell stays missing)
            x = ans.x.copy()
            x[held] = x0[held]
            ans = ans._replace(x=x)
        stopped = ans.status == int(Status.MAXITER) and (ans.info or {}).get("stopped")
        if ans.status == int(Status.OK) or stopped:
            cn, cc = prog.distance(x0, k0, ans.x, ans.k)
            cost = float(cn.sum() + cc.sum())
            if best is None or cost < best.cost:
                best = ans._replace(cost=cost)
        elif failure is None or failure.status in _PROVEN:
            failure = ans  # (one that proves nothing says more: a limit, say)
    if best is None:
        return failure._replace(info={**(failure.info or {}), "imputed_cases": runs})
    info = {**(best.info or {}), "imputed_cases": runs}
    if failure is not None and failure.status not in _PROVEN and best.status == int(Status.OK):
        # a case stopped without an answer (a limit): the best of the others is not certified
        info["stopped"] = True
        return best._replace(status=int(Status.MAXITER), info=info)
    return best._replace(info=info)


#: failures that prove a case has no answer
_PROVEN = (int(Status.INFEASIBLE), int(Status.UNREACHABLE))
