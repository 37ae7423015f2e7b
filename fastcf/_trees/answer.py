"""The steps of :meth:`fastcf.TreeExplainer.explain`: a query's options, then its solver.

:func:`answer` checks a query's options and sends its rows to the one solver that answers them:

* ``plausible=True`` — the training regions (:mod:`fastcf._trees.plausible`);
* HistGradientBoosting categories a query leaves free — every combination of them
  (:mod:`fastcf._trees.categorical`);
* one tree — the enumeration of its leaves (:func:`leaves`, :mod:`fastcf._trees.leaves`);
* an ensemble — the mixed-integer program of each row, or its quick search with ``exact=False``
  (:func:`ensemble`, :mod:`fastcf._trees.milp`).

A NaN in a row is held at ``FILL`` (a frozen feature) while the row is answered on the forest
conditioned on its missing features (:mod:`fastcf._trees.missing`), and put back in the answer.
The explainer then confirms every success with the model's own ``predict`` and packages the
result; nothing here is judged only by fastcf's copy of the model.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np

from .._progress import Tally
from .._status import Status
from .._threads import each
from .._validation import (
    check_max_changes,
    check_metric,
    check_question,
    check_time_limit,
    resolve_bounds,
    resolve_frozen,
    resolve_weights,
    row_boxes,
)
from .._validation import deadline as time_deadline
from ..results import Solution
from .categorical import explain_free, free_categories
from .leaves import solve as solve_leaves
from .milp import Answer, Program
from .missing import FILL, check_query, groups
from .query import METRICS, TreeQuery

__all__ = ["METHODS", "answer", "query", "check_domain", "leaves", "ensemble", "program", "unbuilt"]

METHODS = ("auto", "leaves", "milp")


def answer(ex, X, tidx, names, options, memo=None):
    """Return the (unconfirmed) :class:`~fastcf.results.Solution` of the queries ``X``.

    ``options``: :meth:`~fastcf.TreeExplainer.explain`'s keyword arguments; ``memo``: where the
    model's checks keep its probabilities (:meth:`~fastcf.TreeExplainer._in_target`).
    """
    begin = time.perf_counter()  # (the clock of time_limit=, the program's construction in it)
    o = dict(options)
    method, plausible = o.pop("method"), o.pop("plausible")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    forest = ex._forest
    if plausible is not False and (forest.categories is not None or np.isnan(X).any()):
        raise ValueError(
            "plausible=True takes neither a NaN in x nor a model with categorical features "
            "(the training regions are boxes of numeric splits): use plausible=False"
        )
    if forest.categories is not None:  # HistGB's categories: may they change?
        fmask = resolve_frozen(o["frozen"], ex.n_features_in_, names)
        if free_categories(forest, X, fmask).any():
            o.pop("frozen")
            return explain_free(ex, X, tidx, names, fmask, dict(o, method=method))
    q = query(ex, X, names, o["region"], o["proba"], o["metric"], o["weights"], o["frozen"],
              o["bounds"], o["max_changes"])  # fmt: skip
    limit = check_time_limit(o["time_limit"])
    q = q._replace(time_limit=limit, trust=bool(o.get("trust", True)))
    if plausible is not False:
        return _plausible(ex, X, tidx, q, plausible)
    if method == "auto":
        method = "leaves" if ex._table is not None else "milp"
    C = check_query(forest, X, names, type(ex.model).__name__, q.lo, q.hi)
    M = np.isnan(X)
    Xs, q = _hold_missing(X, M, q)
    if method == "leaves":
        if ex._table is None:
            raise ValueError(
                f"method='leaves' answers one tree; this model has {forest.n_trees} trees: use "
                "method='milp' (the default)"
            )
        sol = leaves(ex, Xs, tidx, q, C, X)
    else:
        sol = ensemble(
            ex, Xs, tidx, q, bool(o["exact"]), missing=C, values=X, memo=memo, begin=begin
        )
    return _missing_back(sol, M, names)


def query(ex, X, names, region, proba, metric, weights, frozen, bounds, max_changes):
    """Check the options of a query and return its :class:`~fastcf._trees.query.TreeQuery`."""
    proba = check_question(region, proba, "trees")
    check_metric(metric, METRICS)
    max_changes = check_max_changes(max_changes)
    D = ex.n_features_in_
    dlo, dhi = ex._forest.domain
    check_domain(ex._forest, X, "x")
    fmask = resolve_frozen(frozen, D, names)
    w = resolve_weights(weights, D, ex.mad_)
    w = np.ones(D) if w is None else w
    bnd = resolve_bounds(bounds, D, X, per_row=True)
    lo, hi = row_boxes(X, bnd, fmask, dlo, dhi)
    constrained = bool(fmask.any()) or bnd is not None or max_changes is not None
    return TreeQuery(metric, w, lo, hi, max_changes, proba, None, constrained or proba is not None)


def check_domain(forest, X, name):
    """Raise a ValueError naming ``name`` if a value lies outside the library's domain."""
    dlo, dhi = forest.domain
    out = (X < dlo) | (X > dhi)
    if out.any():
        r, c = np.argwhere(out)[0]
        raise ValueError(
            f"{name} has a value outside the range the model accepts at feature {c} (row "
            f"{r}): {X[r, c]!r}; its split rule is {forest.rule}, read exactly on "
            f"[{dlo:g}, {dhi:g}]"
        )


def _plausible(ex, X, tidx, q, plausible):
    """Answer over the training regions (:mod:`fastcf._trees.plausible`)."""
    from .plausible import solve

    if plausible is not True:
        raise ValueError(f"plausible must be True or False; got {plausible!r}")
    if ex._regions is None:
        raise ValueError(
            "plausible=True needs the training data: call fit_data(X_train) on the explainer first"
        )
    return solve(ex._regions, X, tidx, q)


def _hold_missing(X, M, q):
    """Return the queries the solvers see: each NaN held at ``FILL``, a frozen feature.

    (:mod:`fastcf._trees.missing`: each row is answered on the forest conditioned on its NaN
    pattern, which no longer reads those features.)
    """
    if not M.any():
        return X, q
    lo, hi = q.lo.copy(), q.hi.copy()
    lo[M] = hi[M] = FILL
    return np.where(M, FILL, X), q._replace(lo=lo, hi=hi)


def _missing_back(sol, M, names):
    """Return ``sol`` with the NaN of the queries back in the answers (and said why)."""
    if not M.any():
        return sol
    message = list(sol.message)
    for i in np.flatnonzero(M.any(axis=1) & (sol.status == int(Status.INFEASIBLE))):
        idx = np.flatnonzero(M[i])
        which = ", ".join(str(names[j]) if names is not None else str(j) for j in idx)
        message[i] = f"{message[i]} (the missing features {which} stay missing)"
    return sol._replace(x=np.where(M, np.nan, sol.x), message=message)


def leaves(ex, X, tidx, q, missing=None, values=None):
    """One tree: the enumeration of its leaves (all rows at once, per NaN pattern).

    ``missing``: the (N, D) mask of the features each row conditions the tree on (its NaN,
    held at ``FILL`` in X), ``values`` the queries as given.
    """
    x, dist, found = solve_leaves(ex._table, X, tidx, q)
    if missing is not None:
        for mask, v, r in groups(missing, values):  # the tree conditioned on the pattern
            table = ex._patterns.get("leaves", mask, v)
            qr = q._replace(lo=q.lo[r], hi=q.hi[r])
            x[r], dist[r], found[r] = solve_leaves(table, X[r], tidx[r], qr)
    has = (ex._table.cls[None, :] == tidx[:, None]).any(axis=1)
    status = np.where(
        found, int(Status.OK), np.where(has, int(Status.INFEASIBLE), int(Status.UNREACHABLE))
    ).astype(np.int64)
    n = X.shape[0]
    return Solution.of(
        x=x, proba=None, distance=dist, success=found, status=status,
        nit=np.zeros(n, dtype=np.int64), method="leaves",
        info={"gap": np.where(found, 0.0, np.inf), "bound": np.where(found, dist, np.inf),
              "nodes": np.zeros(n, dtype=np.int64)},
    )  # fmt: skip


#: one program construction at a time (two threads asking the same explainer at once)
_BUILDING = threading.Lock()


def program(ex, deadline=math.inf):
    """Return the explainer's program: built on the first ensemble query, then cached.

    ``deadline`` (``time.perf_counter()``; a query's ``time_limit``): the construction stops
    at the first of its stages past it (:meth:`~fastcf._trees.structure.Structure.advance`)
    and None is returned. What it built is kept apart (``ex._builds``:
    :class:`~fastcf._trees.staged.Builds`) and the next query goes on from there;
    ``ex._program`` only ever holds a finished program.
    """
    with _BUILDING:
        if ex._program is None:
            ex._program = ex._builds.get(None, lambda dl: Program(ex._forest, dl), deadline)
        return ex._program


def unbuilt(x0, part):
    """Return the failure of a query whose time limit passed while its program was built.

    ``part``: the program (finished, or as far as its construction got; None: not begun).
    """
    done, total = part.progress if part is not None else (0, 1)
    if done == total:
        said = "it is built: the next query uses it"
    else:
        said = f"{done} of {total} stages done: the next query goes on from there"
    return Answer(
        x0.copy(), math.inf, False, int(Status.MAXITER),
        f"time limit reached while building the model's program, a one-time step ({said}); "
        "no answer yet", 0, math.inf, 0.0, 0,
    )  # fmt: skip


def ensemble(ex, X, tidx, q, exact=True, plain=False, missing=None, values=None, memo=None,
             begin=None):  # fmt: skip
    """Answer an ensemble: the program of each row (on the batch threads), or the quick search.

    ``plain``: the full program without incumbent, reductions or cutoff (the baseline of
    ``asv_bench/benchmarks/bench_trees.py``). ``missing``: the (N, D) mask of the features
    each row conditions the forest on (its NaN, held at ``FILL`` in X, and the categorical
    features), ``values`` the queries as given; such a row is answered by the program of
    the forest conditioned on its pattern, and confirmed with its NaN back. ``memo``: as
    :func:`answer`'s. ``begin``: when the call started (``time.perf_counter()``; default
    now): the first query's ``time_limit`` runs from then, the one-time construction of the
    model's program (:func:`program`) included; a limit spent before it is built fails every
    row that needs it (status 1, ``success=False``, the message says so), and one spent
    building it fails the first row.
    """
    begin = time.perf_counter() if begin is None else begin
    deadline = time_deadline(q.time_limit, begin)
    main, spent = None, False
    if X.shape[0] and (missing is None or not missing.any(axis=1).all()):
        cached = ex._program is not None
        main = program(ex, deadline)  # (before the threads: built once)
        # built by this call in the first row's whole time: that row fails at once (the
        # search would start past its limit)
        spent = main is not None and not cached and time.perf_counter() >= deadline

    def one(i):
        t = int(tidx[i])
        qi, nan = q, None
        start = begin if i == 0 else time.perf_counter()  # (the first row's clock holds the
        # construction of the model's program)
        if missing is not None and missing[i].any():
            nan = np.isnan(values[i])
            dl = None if q.time_limit is None else start + q.time_limit
            prog = ex._patterns.get("milp", missing[i], values[i], dl)
            if prog is None:  # (the time limit stopped the construction of its program)
                return unbuilt(X[i], ex._patterns.building("milp", missing[i], values[i]))
            qi = q._replace(constrained=True)  # "infeasible", not "unreachable"
        elif main is None:  # (the time limit stopped the construction)
            return unbuilt(X[i], ex._builds.part(None))
        elif i == 0 and spent:
            return unbuilt(X[i], main)
        else:
            prog = main

        def confirm(x):
            if nan is not None:
                x = np.where(nan, np.nan, x)
            return bool(ex._in_target(x[None], np.array([t]), q.proba, memo)[0])

        args = (X[i], t, q.lo[i], q.hi[i], qi, confirm)
        if exact:
            return prog.solve(*args, plain=plain, start=start)
        return prog.quick(*args, start=start)

    # each row a program of milliseconds, on the batch threads (fastcf._threads: n_jobs=)
    answers = each(one, X.shape[0], progress=Tally(X.shape[0], "TreeExplainer"))
    success = np.array([a.success for a in answers], dtype=bool)
    return Solution(
        x=np.array([a.x for a in answers]).reshape(X.shape),
        proba=None,
        distance=np.array([a.distance for a in answers], dtype=np.float64),
        success=success,
        status=np.array([a.status for a in answers], dtype=np.int64),
        nit=np.array([a.runs for a in answers], dtype=np.int64),
        method="milp" if exact else "incumbent",
        message=[a.message for a in answers],
        # each success the model's predict confirmed (an unconfirmed one: for the judge)
        certified=success & np.array([a.confirmed for a in answers], dtype=bool),
        info={
            "gap": np.array([a.gap for a in answers], dtype=np.float64),
            "bound": np.array([a.bound for a in answers], dtype=np.float64),
            "nodes": np.array([a.nodes for a in answers], dtype=np.int64),
        },
    )
