"""A network query's options, and each row's exact answer.

:func:`query` checks the options once into a :class:`NetQuery` (the box each row lives in: the
user's ``bounds=`` ∩ the training data's range from ``fit_data``, x̄ always inside, frozen
features pinned to x̄). :func:`answer` solves each row: the mixed-integer program over the
unstable neurons (:mod:`.program`) with the neurons' bounds over the row's box (:mod:`.bounds`),
then the linear program inside the answer's activation pattern; the stage judges every answer
with the model's own ``predict`` and re-aims refused rows at a larger margin
(:class:`RaiseMargin`).
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

import numpy as np

from .._progress import Tally
from .._status import Status, message
from .._threads import each
from .._validation import (
    check_max_changes,
    check_metric,
    check_question,
    check_scalar,
    check_time_limit,
    resolve_bounds,
    resolve_frozen,
    resolve_weights,
    row_boxes,
)
from .._validation import deadline as time_deadline
from ..results import Solution
from . import proba as _proba
from . import ties as _ties
from .bounds import budget_first_layer, interval, linear_bounds, target_bound
from .euclid import answer_row
from .incumbent import incumbent
from .program import (
    REPAIRS,
    Program,
    network_point,
    output_rows,
    solve_milp,
    ties_differ,
)
from .search import PRUNE, relaxation, search

__all__ = ["NetQuery", "METRICS", "query", "answer", "RaiseMargin", "distance"]

METRICS = ("manhattan", "l0", "euclidean")


class NetQuery(NamedTuple):
    """One network query's checked options (:func:`query`)."""

    metric: str
    w: np.ndarray  # (D,) per-feature costs
    lo: np.ndarray  # (N, D) each row's box (frozen features pinned)
    hi: np.ndarray
    max_changes: int | None
    proba: float | None
    margin: np.ndarray  # (N,) the margin on the logits each row aims at
    theta: float  # the logit the question asks: 0, or logit τ for proba=τ
    time_limit: float | None
    exact: bool = True  # False: the incumbent with a certified bound (no program)
    ties: bool = True  # the tie's program against the margin's answer (:func:`_tie_row`)


def query(ex, X, names, region, proba, margin, metric, weights, frozen, bounds, max_changes,
          time_limit, exact=True):  # fmt: skip
    """Check the options of a query and return its :class:`NetQuery`."""
    proba = check_question(region, proba, "networks")
    check_metric(metric, METRICS)
    margin = check_scalar(margin, "margin", lo=0.0)
    max_changes = check_max_changes(max_changes)
    time_limit = check_time_limit(time_limit)
    D = ex.n_features_in_
    fmask = resolve_frozen(frozen, D, names)
    w = resolve_weights(weights, D, ex.mad_)
    w = np.ones(D) if w is None else w
    bnd = resolve_bounds(bounds, D, X, per_row=True)
    dlo, dhi = -np.inf, np.inf
    if ex.data_box_ is not None:  # the training data's range, stretched to hold x̄
        dlo, dhi = np.minimum(ex.data_box_[0], X), np.maximum(ex.data_box_[1], X)
    lo, hi = row_boxes(X, bnd, fmask, dlo, dhi)
    open_ = ~(np.isfinite(lo) & np.isfinite(hi))
    if open_.any():
        r, c = np.argwhere(open_)[0]
        raise ValueError(
            f"a network is answered over a finite box, and feature {c} (row {r}) has none: "
            "call fit_data(X_train) (the training data's range) or pass bounds=(lo, hi)"
        )
    theta = 0.0 if proba is None else math.log(proba) - math.log1p(-proba)
    net = ex._net
    floor = np.zeros(X.shape[0])
    if net.unit > 2.0**-53:
        # a model computing in less than float64 (PyTorch's float32): aim beyond its rounding,
        # proven over each row's box (:meth:`fastcf._net.model.Net.rounding`), so that the
        # model's own forward pass agrees with the program's float64 on the first answer. The
        # box before the frozen features are pinned: the margin does not depend on which are
        # frozen, so that enumerate's restricted queries (more features frozen, a smaller box)
        # do not aim closer and come back cheaper than their parent (soak_net, seed 30)
        flo, fhi = row_boxes(X, bnd, np.zeros(D, dtype=bool), dlo, dhi)
        # (a frozen feature may have no finite range of its own: its pinned value then)
        flo, fhi = np.where(np.isfinite(flo), flo, lo), np.where(np.isfinite(fhi), fhi, hi)
        floor = np.array([net.rounding(a, b) for a, b in zip(flo, fhi, strict=True)])
    # the margin beyond the logit the question asks (0, or logit τ: an answer exactly at logit τ
    # is refused by the model's own rounding of p about half the time), and beyond the rounding
    base = max(theta, 0.0)
    margins = base + margin + floor
    return NetQuery(metric, w, lo, hi, max_changes, proba, margins, base, time_limit,
                    bool(exact))  # fmt: skip


def distance(x, x0, w, metric):
    """Return the cost of moving ``x0`` to ``x`` (d = x − x̄) in ``metric``.

    ``Σ w |d|``, ``sqrt(Σ (w d)²)`` or ``Σ w [d ≠ 0]``.
    """
    d = x - x0
    if metric == "euclidean":
        return float(np.sqrt(np.sum((w * d) ** 2)))
    return float(w @ np.abs(d)) if metric == "manhattan" else float(w @ (d != 0))


class _Row(NamedTuple):
    x: np.ndarray
    distance: float
    success: bool
    status: int
    message: str
    gap: float
    bound: float
    nodes: int


def _row(net, x0, t, lo, hi, q, margin, rows=None, plain=False, cuts=None, deadline=None):
    """Return the :class:`_Row` of one query row (see the module docstring).

    ``plain``: the plain big-M program (no incumbent, the box's interval bounds, HiGHS's
    default heuristics), the baseline of ``asv_bench/benchmarks/bench_net.py``. ``cuts``:
    more rows ``G h ≥ g`` of the target (:mod:`.proba`'s tangents). ``deadline``
    (``time.perf_counter()``; default: ``q.time_limit`` from now): every step after the first
    answer (the bounds' tightening, the search, HiGHS) stops there.
    """
    if deadline is None:
        deadline = time_deadline(q.time_limit)
    G, g = output_rows(net, t, margin)
    if cuts is not None:
        G, g = np.vstack([G, cuts[0]]), np.concatenate([g, cuts[1]])
    if q.metric == "euclidean" and not plain:
        return _euclid_row(net, x0, t, lo, hi, q, margin, rows, G, g, deadline)
    xi, ci = (
        (None, np.inf)
        if q.max_changes is not None or plain
        else incumbent(net, rows, x0, lo, hi, q.w, G, g, q.metric)
    )
    # the optimum costs at most ci: the neurons' bounds over the box ∩ that L1 ball
    budget = ci * (1 + 1e-9) if q.metric == "manhattan" else np.inf
    if plain:
        ls, us = interval(net.W, net.b, lo, hi, net.relu)
    elif net.relu:
        ls, us = linear_bounds(net.W, net.b, x0, q.w, lo, hi, budget)
    else:
        first = None
        if np.isfinite(budget):
            first = budget_first_layer(net.W[0], net.b[0], x0, q.w, lo, hi, budget)
        ls, us = interval(net.W, net.b, lo, hi, net.relu, first)
    prog = Program(net, x0, lo, hi, q.w, q.metric, q.max_changes, (ls, us))
    if not q.exact and xi is not None:
        # the incumbent, and a certified bound (the neurons' bounds hold in the L1 ball of
        # radius ci, where the optimum lies)
        bound = _certify(net, x0, lo, hi, q, G, g, prog, ci)
        gap = (ci - bound) / ci if ci > 0 else 0.0
        if gap <= PROVEN:
            return _Row(xi, ci, True, int(Status.OK), "incumbent: proven optimal", 0.0, bound, 0)
        text = f"incumbent: a valid answer, at most {gap:.2%} above the optimum (exact=False)"
        return _Row(xi, ci, True, int(Status.MAXITER), text, gap, bound, 0)
    r, how = None, "milp"
    if xi is not None and net.relu and q.metric == "manhattan" and q.max_changes is None:
        # the bounds tightened by linear programs and our own branching (:mod:`.search`);
        # HiGHS's mixed-integer solver where a linear program failed
        r = search(net, x0, lo, hi, q.w, G, g, (ls, us), xi, ci, deadline)
        how = "search"
        if r.status == "failed":
            r, how = None, "milp"
        elif r.x is None:
            st = Status.OK if r.status == "optimal" else Status.MAXITER
            gap = 0.0 if st == Status.OK else (ci - r.bound) / ci if ci > 0 else 0.0
            text = "search: optimal (the incumbent)" if st == Status.OK else _limit(gap)
            row = _Row(xi, ci, True, int(st), text, gap, ci if st == 0 else r.bound, r.nodes)
            return _tie_row(net, prog, q, t, margin, row, deadline, plain)
    if r is None:
        r = solve_milp(prog, G, g, time_limit=_left(deadline), start=xi, plain=plain)
    # the rows the model's own rule takes as the target (a tie given to it, where it is)
    tie = q.proba is None and ties_differ(net, t)
    accept = output_rows(net, t, margin, ties=True) if tie else None
    if r.x is not None:  # a point of the network itself (the program's may be none)
        r = network_point(prog, G, g, r, ci, deadline, plain, accept)
        if tie and r.x is not None and _short_of(net, r.x, G, g):
            # the program's point taken on the tie (``accept``), short of the margin beyond
            # rounding: kept on the tie off its neurons' faces, as the tie program's answer
            # below. On a face (z = -3.6e-17) the model's own sums left a neuron on, its leak
            # gave class 1, the answer was refused, and the re-aim (no tie) answered the
            # margin's 0.5382 where the tie costs 0.2001 (soak_net, seed 91, example 37:
            # enumerate's node with feature 0 frozen)
            on = _ties.on_the_tie(net, prog, r.x, r.changed, *accept)
            r = r if on is None else r._replace(x=on)
    tied = False
    if r.status == "infeasible" and xi is None and tie:
        # nothing beyond the margin: a target reachable only on a tie, which the model's rule
        # gives to the first class (the judge then asks the model itself). After the repairs:
        # a program's false answer at the margin can hide a true one on the tie (soak_net,
        # seed 32: every ReLU off, the logit exactly 0)
        G, g = accept
        tied = True  # (the tie's program already: not again below its answer)
        r = solve_milp(prog, G, g, time_limit=_left(deadline), plain=plain)
        if r.x is not None:
            r = network_point(prog, G, g, r, ci, deadline, plain)
        if r.x is not None:  # (kept on the tie by the network's arithmetic, where it can be)
            on = _ties.on_the_tie(net, prog, r.x, r.changed, G, g)
            r = r if on is None else r._replace(x=on)
    if r.x is None and xi is not None and r.status != "failed":
        # the cutoff left nothing cheaper than the incumbent (up to HiGHS's tolerance): it is
        # the optimum where the search was complete
        st = Status.OK if r.status == "infeasible" else Status.MAXITER
        gap = 0.0 if st == 0 else (ci - r.bound) / ci if ci > 0 else 0.0
        row = _Row(
            xi,
            ci,
            True,
            int(st),
            # (unproven: the time limit, or the repairs ran out)
            "milp: optimal (the incumbent)" if st == 0 else _limit(gap, r.status),
            gap,
            ci if st == 0 else r.bound,
            r.nodes,
        )
        return _tie_row(net, prog, q, t, margin, row, deadline, plain)
    if r.x is None:
        if r.status == "infeasible":
            st, text = Status.INFEASIBLE, _INFEASIBLE
        elif r.status == "time_limit":
            st, text = Status.MAXITER, "time_limit reached before any answer was found"
        elif r.status == "repairs":
            st, text = Status.SOLVER_FAILED, _REPAIRED + ", and none was a point of the network"
        else:
            st, text = Status.SOLVER_FAILED, message(Status.SOLVER_FAILED)
        return _Row(x0.copy(), 0.0, False, int(st), text, math.inf, r.bound, r.nodes)
    x = r.x
    d = distance(x, x0, q.w, q.metric)
    if r.status == "optimal":
        row = _Row(x, d, True, int(Status.OK), f"{how}: optimal", 0.0, r.bound, r.nodes)
    else:
        gap = (d - r.bound) / d if d > 0 else 0.0
        text = _limit(gap, r.status)
        row = _Row(x, d, True, int(Status.MAXITER), text, max(gap, 0.0), r.bound, r.nodes)
    return row if tied else _tie_row(net, prog, q, t, margin, row, deadline, plain)


def _short_of(net, x, G, g):
    """Return whether ``x`` misses the target's rows ``G h ≥ g`` beyond their rounding.

    The rounding as :func:`~fastcf._net.program.network_point`'s (~9000 unit roundoffs of
    ``|G| |h| + |g|``): a miss within it is a margin answer met to the linear program's
    tolerance, not a point on a tie.
    """
    h = net.last_hidden(x[None])[0]
    tol = 9e3 * net.unit * (np.abs(G) @ np.abs(h) + np.abs(g))
    return bool(np.any(G @ h - g < -tol))


def _tie_row(net, prog, q, t, margin, row, deadline, plain):
    """Return ``row``, or a cheaper answer that the model's rule gives the target on a tie.

    The program aims at the margin beyond the decision boundary; where the model's rule gives
    a tie to the target (:func:`~fastcf._net.program.ties_differ`: a binary logit of exactly 0
    is class 0, the first of equal logits wins), the optimum can lie on a region of ties — every
    ReLU off, the logit exactly 0 — that no point at the margin reaches: soak_net, seed 32,
    example 571 answered 6.049 where the tie costs 5.415. Where such a region can be (below:
    an output row whose value with its last-layer neurons off lies in [0, margin)), the tie's
    program (:func:`~fastcf._net.program.output_rows` with ``ties=True``, whose points are a
    superset of the margin's) is solved below ``row``'s cost less :data:`.ties.TIE_GAIN` (HiGHS's
    cutoff); its answer is kept where it is on a region of ties (:func:`.ties.on_the_tie`: flat,
    and on the tie in fastcf's float64 copy of the network), and the stage's judge still asks
    the model itself. Not looked for: a region of ties cheaper than the margin's answer but
    dearer than the tie program's optimum on a sloped boundary (which is rejected), or flat
    at a value other than an output bias (an exact cancellation of weights). A re-aimed row
    (``q.ties`` False: :class:`RaiseMargin`) keeps the margin's answer.

    Measured on 200 queries of fitted networks: no cost (the filter skips the program; the
    same answers); with every output bias set to 0, 1.27× per query at the median.
    """
    if not (q.ties and row.success and q.proba is None and net.relu and ties_differ(net, t)):
        return row
    if row.distance <= 0.0 or q.metric == "euclidean":
        return row
    rows = _ties.ties_can_be(net, t, margin)
    if rows is None:  # (the program runs only where a region of ties can be)
        return row
    (G, g), flat = rows
    cutoff = row.distance * (1.0 - _ties.TIE_GAIN)
    left = _left(deadline)
    r = solve_milp(prog, G, g, cutoff, time_limit=left, plain=plain)
    nodes = row.nodes + r.nodes
    if r.x is not None:
        r = network_point(prog, G, g, r, cutoff, deadline, plain)
        nodes = row.nodes + r.nodes
    x = None if r.x is None else _ties.on_the_tie(net, prog, r.x, r.changed, G, g, flat)
    d = math.inf if x is None else distance(x, prog.x0, q.w, q.metric)
    if not d < cutoff:
        return row._replace(nodes=nodes)
    if r.status == "optimal":  # (the tie's program holds the margin's: its optimum is both's)
        return _Row(x, d, True, int(Status.OK), "milp: optimal (on a tie)", 0.0, r.bound, nodes)
    gap = (d - r.bound) / d if d > 0 else 0.0
    return _Row(x, d, True, int(Status.MAXITER), _limit(gap, r.status), max(gap, 0.0), r.bound,
                nodes)  # fmt: skip


#: ``exact=False``: the incumbent is reported optimal (status 0) when its certified bound is
#: within this relative gap of its cost (the exact search's pruning tolerance)
PROVEN = PRUNE
#: ``exact=False``: the program's LP relaxation is tried as the bound (where the CROWN bound
#: does not prove the incumbent) only with at most this many unstable neurons: there it is
#: cheap and often proves the incumbent; with more it seldom does (the benchmark's networks)
FEW_UNSTABLE = 4


def _certify(net, x0, lo, hi, q, G, g, prog, ci):
    """Return the certified lower bound of an ``exact=False`` row, at most the incumbent's ``ci``.

    The CROWN bound of the target's rows over the box ∩ the ball of radius ``ci`` (the region
    of ``prog``'s neuron bounds; :func:`~fastcf._net.bounds.target_bound`, microseconds); where
    it leaves a gap and few neurons are unstable, the larger of it and the program's linear
    relaxation (:func:`~fastcf._net.search.relaxation`).
    """
    ls, us = prog.ls, prog.us
    bound = target_bound(net.W, net.b, ls, us, x0, q.w, lo, hi, G, g, net.relu, q.metric)
    if bound < ci * (1 - PROVEN):
        open_ = [(a < 0) & (b > 0) for a, b in zip(ls, us, strict=True)]
        if not net.relu or sum(int(m.sum()) for m in open_) <= FEW_UNSTABLE:
            bound = max(bound, relaxation(prog, G, g))
    return max(0.0, min(bound, ci))


def _left(deadline):
    """Return the seconds left before ``deadline`` for HiGHS (None: no limit; at least 1 ms)."""
    return None if deadline == math.inf else max(deadline - time.perf_counter(), 1e-3)


def _limit(gap, status="time_limit"):
    why = _REPAIRED if status == "repairs" else "time_limit"
    return f"{why}: the best answer found, {gap:.2%} above the bound (not proven optimal)"


def _euclid_row(net, x0, t, lo, hi, q, margin, rows, G, g, deadline):
    """Return the :class:`_Row` of a Euclidean query row (:mod:`.euclid`'s branch-and-bound)."""
    opts = dict(exact=q.exact, deadline=deadline, max_changes=q.max_changes)
    x, d, what, gap, bound, nodes = answer_row(net, x0, lo, hi, q.w, G, g, rows, **opts)
    if x is None and what == "infeasible" and q.proba is None and ties_differ(net, t):
        G, g = output_rows(net, t, margin, ties=True)  # (a target reachable only on a tie)
        x, d, what, gap, bound, nodes = answer_row(net, x0, lo, hi, q.w, G, g, rows, **opts)
        pattern, near = (None, False) if x is None else _ties.tie_pattern(net, x)
        if near:
            # an off neuron within its rounding of 0 (the QP's point on its face): the model's
            # own sums can leave it on, its leak moving a logit off the tie (soak_net, seed 41,
            # example 186: class 2 by the model). Its pattern solved again with the off neurons
            # beyond their rounding, the unchanged features held (max_changes)
            y, dy = _ties.strict_tie(net, x, x0, lo, hi, q.w, pattern, G, g, d)
            if y is not None:
                x, d = y, dy
    elif x is not None and d > 0.0 and q.ties and q.proba is None and ties_differ(net, t):
        tied = _euclid_tie(net, x0, t, lo, hi, q, margin, rows, opts, d)
        if tied is not None:
            x, d, what, gap, bound, n = tied
            nodes += n
    if x is None:
        if what == "infeasible":
            st, text = Status.INFEASIBLE, _INFEASIBLE
        elif what == "unproven":
            st, text = Status.SOLVER_FAILED, _UNDECIDED + ": no answer was found"
        else:
            st, text = Status.MAXITER, "time_limit reached before any answer was found"
        return _Row(x0.copy(), 0.0, False, int(st), text, math.inf, bound, nodes)
    if what == "optimal":
        return _Row(x, d, True, int(Status.OK), "branch-and-bound: optimal", 0.0, bound, nodes)
    text = (
        f"incumbent: a valid answer, at most {gap:.2%} above the optimum (exact=False)"
        if what == "incumbent"
        else f"{_UNDECIDED}: the best answer found, at most {gap:.2%} above the bound (not "
        "proven optimal)"
        if what == "unproven"
        else f"time_limit: the best answer found, {gap:.2%} above the bound (not proven optimal)"
    )
    return _Row(x, d, True, int(Status.MAXITER), text, gap, bound, nodes)


def _euclid_tie(net, x0, t, lo, hi, q, margin, rows, opts, d):
    """Return a Euclidean answer on a region of ties cheaper than the margin's ``d``, or None.

    As :func:`_tie_row` for the Manhattan programs: where a region of ties can be
    (:func:`.ties.ties_can_be`), the tie's branch-and-bound (its rows a superset of the
    margin's, so its optimum is the query's where it lies on such a region); kept where it
    costs less than ``d`` by :data:`.ties.TIE_GAIN`, lies on a flat region of ties
    (:func:`.ties.is_flat`) and, with a neuron within its rounding of 0, stays on the tie
    solved with the off neurons beyond it (soak_net, seed 73, example 198: 5.645 called
    optimal, the tie's 0.1294 listed by ``enumerate`` second). ``(x, d, what, gap, bound,
    nodes)`` as :func:`.euclid.answer_row`.
    """
    got = _ties.ties_can_be(net, t, margin)
    if got is None or not net.relu:
        return None
    (G, g), flat = got
    x, dt, what, gap, bound, nodes = answer_row(net, x0, lo, hi, q.w, G, g, rows, **opts)
    if x is None or not dt < d * (1.0 - _ties.TIE_GAIN):
        return None
    changed = None if q.max_changes is None else x != x0
    pattern, near = _ties.tie_pattern(net, x)
    if not _ties.is_flat(net, x, pattern, lo, hi, changed, flat):
        return None
    if near or not bool(net.meets(x[None], G, g)[0]):
        y, dy = _ties.strict_tie(net, x, x0, lo, hi, q.w, pattern, G, g, dt)
        if y is None or not dy < d * (1.0 - _ties.TIE_GAIN):
            return None
        x, dt = y, dy  # (~ε dearer than the tie's optimum, as the margin-free tie above)
    return x, dt, what, gap, bound, nodes


def _proba_row(net, x0, t, lo, hi, q, margin, rows, plain):
    """Return the :class:`_Row` of a multiclass ``proba=`` row: :func:`.proba.kelley`'s loop."""
    slack = max(margin - q.theta, 1e-9)
    deadline = time_deadline(q.time_limit)  # (the row's, over all its programs)

    def solve(G, g):
        if G.shape[0] and time.perf_counter() > deadline:  # (after the first program)
            text = f"time_limit reached before an answer met p_target >= {q.proba}"
            return _Row(x0.copy(), 0.0, False, int(Status.MAXITER), text, math.inf, 0.0, 0), None
        r = _row(net, x0, t, lo, hi, q, margin, rows, plain, (G, g), deadline)
        return r, (r.x if r.success else None)

    r, met = _proba.kelley(solve, net, t, q.proba, slack)
    if met:
        return r
    text = _proba.gave_up(q.proba)
    return _Row(x0.copy(), 0.0, False, int(Status.NUMERIC), text, math.inf, r.bound, r.nodes)


def answer(ex, X, tidx, q, keep_source=True, plain=False):
    """Return the (unjudged) :class:`~fastcf.results.Solution` of the rows ``X``.

    ``keep_source``: a row x̄ that the model's own ``predict`` already puts in the target (and
    at ``p_target >= τ`` for ``proba=``) is answered by x̄ itself, the closest such point.
    ``plain``: as :func:`_row`'s.
    """
    net = ex._net
    data = ex._data
    n = X.shape[0]
    there = ex._in_target(X, tidx, q.proba) if keep_source and n else np.zeros(n, dtype=bool)

    def one(i):
        if there[i]:
            return _Row(X[i].copy(), 0.0, True, int(Status.OK), _SOURCE, 0.0, 0.0, 0)
        m = float(q.margin[i])
        if q.proba is not None and not net.binary:
            return _proba_row(net, X[i], int(tidx[i]), q.lo[i], q.hi[i], q, m, data, plain)
        return _row(net, X[i], int(tidx[i]), q.lo[i], q.hi[i], q, m, data, plain)

    rows = each(one, n, progress=Tally(n, "NetExplainer"))
    success = np.array([r.success for r in rows], dtype=bool)
    return Solution(
        x=np.array([r.x for r in rows]).reshape(X.shape),
        proba=None,
        distance=np.array([r.distance for r in rows], dtype=np.float64),
        success=success,
        status=np.array([r.status for r in rows], dtype=np.int64),
        nit=np.ones(n, dtype=np.int64),
        method="milp",
        message=[r.message for r in rows],
        certified=there & success,  # (the model's own predict said so)
        info={
            "gap": np.array([r.gap for r in rows], dtype=np.float64),
            "bound": np.array([r.bound for r in rows], dtype=np.float64),
            "nodes": np.array([r.nodes for r in rows], dtype=np.int64),
        },
    )


_SOURCE = "the model already classifies the source as the target: x̄ itself"
_UNDECIDED = (
    "a relaxation of the branch-and-bound that neither Clarabel nor HiGHS could solve "
    "(ill-conditioned weights) was left undecided"
)
#: a row whose program gave REPAIRS false answers in turn (:func:`.program.network_point`)
_REPAIRED = (
    f"the mixed-integer program gave false answers (big-M leaks, each excluded) {REPAIRS} times"
)
_INFEASIBLE = (
    "infeasible: no point of the box (bounds=, or the training data's range from fit_data) "
    "that the options leave free is classified as the target"
)


class RaiseMargin:
    """The network family's re-aim policy: a refused row solved again at a larger margin.

    The program's answer meets the target's margin in fastcf's float64 copy of the logits, to
    the linear program's tolerance; the model's own ``predict`` can still refuse an answer on
    the boundary (a tie of logits, a probability that rounds to 1/2, logits so large that their
    rounding exceeds the margin). Such a row is solved again with its margin's excess over the
    logit the question asks (0; logit τ for ``proba=τ``) raised to 10 times the last one, and
    at least ~9000 unit roundoffs of the model's arithmetic (1e-12 in float64) times the size
    of the terms its logits add up (``|W| |h| + |b|`` of the last layer at the answer), for up
    to :data:`~fastcf._resolve.ROUNDS` rounds.
    """

    def __init__(self, ex, X, tidx, q):
        self.ex, self.X, self.tidx, self.q = ex, X, tidx, q

    def aim(self, sol, rows, r):
        """Raise the margins of ``rows``; return them."""
        net = self.ex._net
        h = net.last_hidden(sol.x[rows])
        terms = (np.abs(h) @ np.abs(net.W[-1]).T + np.abs(net.b[-1])).max(axis=1)
        m, base = self.q.margin, self.q.theta
        # the excess over the logit the question asks (0, or logit τ for proba=) grows
        excess = np.maximum(10.0 * np.maximum(m[rows] - base, 1e-9), 9e3 * net.unit * terms)
        m[rows] = base + excess
        return rows

    def solve(self, rows):
        """Solve ``rows`` again at their raised margins."""
        q = self.q
        # (not the tie's program: a refused answer may have been its, which does not move)
        sub = q._replace(lo=q.lo[rows], hi=q.hi[rows], margin=q.margin[rows], ties=False)
        return answer(self.ex, self.X[rows], self.tidx[rows], sub, keep_source=False)
