"""The linear family's alternatives: :meth:`fastcf.LinearExplainer.enumerate`'s scheme.

Lawler's k-best scheme over restrictions of the query (:func:`fastcf._lawler.lawler`),
with the binary Manhattan case in one kernel (:func:`flipsets`).

``time_limit=`` bounds each query row's whole enumeration, from the row's start
(:func:`fastcf._validation.deadline`): no node is solved past it (a ``max_changes`` node's
branch-and-bound stops there too), and the answers found by then are returned, each judged
as always, marked ``info["enumeration_stopped"] = "time_limit"``. With a limit the binary
Manhattan case runs the Python scheme, which reads the clock between nodes (the kernel does
not; the two give the same answers).
"""

from __future__ import annotations

import numpy as np

from .. import _stage
from .._validation import check_int, deadline, time_left
from .metric import row_box
from .route import keep_source, make_query, row_problem, solve, source_meets, sparse_row

__all__ = ["enumerate_answers", "flipsets"]


def enumerate_answers(ex, x, target, k, max_nodes, options):
    """Return :meth:`fastcf.LinearExplainer.enumerate`'s answers (its arguments, checked here).

    ``options``: the query's keywords of :func:`~fastcf._linear.route.make_query` (``lam``,
    ``proba``, ``region``, ``bounds``, …), and ``time_limit``: seconds for each row's
    enumeration (checked by the caller).
    """
    ex._check_form(options["lam"], options["proba"], options["region"])
    if k is not None:
        k = check_int(k, "k", lo=1)
    max_nodes = check_int(max_nodes, "max_nodes", lo=1)
    X, single, names, tidx = ex._queries(x, target)
    if single:
        return _one(ex, X, tidx, names, k, max_nodes, options)
    # one enumeration per row, each with its row of a per-row box
    return [
        _one(ex, X[i : i + 1], tidx[i : i + 1], names, k, max_nodes,
             {**options, "bounds": _row_bounds(options["bounds"], i, X.shape[0])})
        for i in range(X.shape[0])
    ]  # fmt: skip


def _row_bounds(bounds, i, n):
    """Return row ``i``'s box of ``bounds``: a per-row (n, D) box sliced, a shared one as is."""
    if bounds is None or isinstance(bounds, str):
        return bounds
    try:
        lo, hi = (np.asarray(b, dtype=np.float64) for b in bounds)
    except (TypeError, ValueError):
        return bounds  # not a pair of arrays: make_query says what is wrong
    if lo.ndim == 2 and lo.shape[0] == n and hi.ndim == 2 and hi.shape[0] == n:
        return lo[i], hi[i]
    return bounds


def _one(ex, X, tidx, names, k, max_nodes, options):
    """Return the alternatives of the one query ``X`` (1, D), in ``time_limit`` seconds."""
    from .._lawler import Stop, lawler

    options = dict(options)
    time_limit = options.pop("time_limit", None)
    end = deadline(time_limit)
    q = make_query(ex, X, tidx, names, method="auto", **options)
    if q.form == "proba" and source_meets(ex._model, X, tidx, q.proba)[0]:
        # x̄ already meets τ as the model computes it: x̄ is the only answer (every other
        # answer's changed set contains its empty one)
        sol = keep_source(ex._model, X, tidx, solve(ex, X, tidx, q), q.proba)
        only = _stage.package(ex, _judge(ex, sol, tidx, q.proba), X, tidx, names, True)
        return iter([only]) if k is None else [only]
    if (
        k is not None
        and time_limit is None  # (the kernel does not read the clock)
        and k <= 256
        and q.metric == "manhattan"
        and q.form != "lam"
        and q.max_changes is None
        and ex._model.binary
    ):  # Lawler's scheme in one kernel: the same answers (see _flipsets)
        alts = flipsets(ex, X, tidx, names, q, k, max_nodes)
        if alts is not None:
            return alts
    prob = row_problem(ex, X, tidx, q, 0)

    def solve_node(fmask):
        if q.max_changes is None:
            return prob.solve(fmask)  # lean: the answer and its cost
        # (its branch-and-bound stops at the enumeration's deadline: the time left)
        qn = q if time_limit is None else q._replace(time_limit=time_left(end))
        sol, val, mask = sparse_row(ex, X, tidx, qn, 0, fmask, prob)
        return sol, val

    def accept(fmask, sol):
        # the answer, solved in full and judged by the model: None if not a counterfactual
        if q.max_changes is None:
            sol = prob.full(fmask)
        sol = _judge(ex, sol, tidx, q.proba)
        return sol if sol.success[0] else None

    # the answer returned is solved again in full (accept) unless max_changes= solved it so:
    # the flipset rule is checked on its changed set
    returned = prob.changed if q.max_changes is None else None
    # in the order of the answers returned (the distance; lam=: problem (2)'s objective), not
    # of their nodes' lean values (~3e-8 above the distance)
    cost = prob.objective
    stop = Stop()
    gen = (
        _stage.package(ex, sol, X, tidx, names, True)
        for sol in lawler(solve_node, prob.changed, accept, q.fmask, max_nodes, returned, cost,
                          end, stop)
    )  # fmt: skip
    return stop.take(gen, k)


def _judge(ex, sol, tidx, proba):
    """Return the stage's judge of ``sol``; none certified by a copy that is no judge.

    (:mod:`fastcf._linear.dual`: an SVM's own ``predict`` judges each answer there, and a
    pipeline's ``proba=`` answers must clear τ by the fold's tolerance.)
    """
    trust, in_target = ex._judge_all(proba)
    if not trust:
        sol = sol._replace(certified=None)
    return _stage.judge(in_target, sol, tidx, proba)


def flipsets(ex, X, tidx, names, q, k, max_nodes):
    """Return the enumerate list of a binary Manhattan query from one kernel, or None.

    :func:`fastcf._linear.manhattan.binary_flipsets` runs the scheme of
    :func:`fastcf._lawler.lawler` step for step; its candidates are judged here by
    the model as ``accept`` judges them (row by row). ``None`` (the Python scheme answers)
    whenever a candidate is not confirmed, where the two could differ, or the distances are
    not in order. Stopped at ``max_nodes``, the kernel's answers say so
    (``info["enumeration_stopped"]``), as the Python scheme's do.
    """
    from ..results import _item
    from .manhattan import binary_flipsets

    cost = np.ones(ex.n_features_in_) if q.w is None else q.w
    sol = binary_flipsets(
        ex._model, X, tidx, cost, ~q.fmask, row_box(q.bnd, [0]), q.proba, q.margin, k,
        max_nodes,
    )  # fmt: skip
    if sol is None:
        return None
    sol = _judge(ex, sol, np.full(sol.x.shape[0], tidx[0], dtype=np.int64), q.proba)
    if not sol.success.all() or np.any(np.diff(sol.distance) < 0):
        return None  # (out of order by the distances returned: the Python scheme sorts them)
    if sol.proba is not None and not ex._has_proba:
        sol = sol._replace(proba=None)
    target = ex.classes_[tidx[0]]
    return [_item(sol, i, X[0], target, names, sol.info) for i in range(sol.x.shape[0])]
