"""A quick valid answer of an ensemble query (an incumbent), to prune the exact program.

No optimality claim: the answer only bounds the optimum from above, which lets the program drop
every leaf and interval that costs more on its own (:mod:`fastcf._trees.milp`). Every candidate
is evaluated with the library's arithmetic (:class:`~fastcf._trees.forest.Forest`), many at once.

* Leaf projections (the "feature tweaking" of Tolomei et al., 2017): x̄ projected onto the box of
  every leaf of every tree; the cheapest one in the target class is kept.
* Greedy over single-feature moves: from a start, every allowed interval of every free feature
  gives a candidate (that feature at the interval's point closest to x̄). If some candidates
  are in the target class, the cheapest is taken; otherwise the move of best gain in the
  target's margin per unit of cost is made and the search goes on. Started from x̄ and from the
  leaf projections of best margin.
* Polish: single-feature moves back towards x̄ that keep the answer in the target class.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .query import coord_cost

__all__ = ["incumbent", "cost_of"]

_STARTS = 3  # leaf projections the greedy search also starts from


class _Moves(NamedTuple):
    """Every single-feature move: to the point of an allowed interval closest to x̄."""

    f: np.ndarray  # feature
    p: np.ndarray  # the new value
    c: np.ndarray  # its per-coordinate cost


def _margin(forest, Z, t, tau):
    """Return the target's margin at sums Z (N, S): >= 0 about where the class is reached."""
    out = np.full(Z.shape[0], np.inf)
    for a, _ in forest.decision.forms(t):
        out = np.minimum(out, Z @ a)
    if tau is not None:
        for a, r in forest.link.forms(t, tau, forest.divisor, Z.shape[1]):
            out = np.minimum(out, Z @ a - r)
    return out


def _evaluate(forest, R, t, tau):
    """Return (valid, margin) of the rows R: in the target class (and τ), and how far."""
    S = forest.evaluate(R)
    ok = forest.decision.predict(S) == t
    if tau is not None:
        ok &= forest.link.proba(S)[:, t] >= tau
    Z = S * forest.divisor if forest.divisor != 1.0 else S  # (the margin is a guide only)
    return ok, _margin(forest, Z, t, tau)


def cost_of(x, x0, q):
    """Return the objective value of x (the square of the Euclidean distance)."""
    return float(coord_cost(x - x0, q.w, q.metric).sum())


def _too_many(X, x0, q):
    if q.max_changes is None:
        return np.zeros(X.shape[0], dtype=bool)
    return np.count_nonzero(X != x0, axis=1) > q.max_changes


def _greedy(forest, x, x0, t, q, mv, margin):
    """Greedy single-feature moves from x (of target margin ``margin``); a valid x or None."""
    now = coord_cost(x - x0, q.w, q.metric)
    rows = np.arange(mv.f.size)
    for _ in range(2 * x0.shape[0] + 2):
        allowed = mv.p != x[mv.f]
        if q.max_changes is not None and np.count_nonzero(x != x0) >= q.max_changes:
            allowed &= x[mv.f] != x0[mv.f]
        idx = rows[allowed]
        if idx.size == 0:
            return None
        R = np.repeat(x[None], idx.size, axis=0)
        R[np.arange(idx.size), mv.f[idx]] = mv.p[idx]
        ok, m = _evaluate(forest, R, t, q.proba)
        total = now.sum() - now[mv.f[idx]] + mv.c[idx]
        if ok.any():
            best = idx[np.flatnonzero(ok)[np.argmin(total[ok])]]
            x = x.copy()
            x[mv.f[best]] = mv.p[best]
            return x
        gain = m - margin
        score = np.where(gain > 0, gain / np.maximum(total - now.sum(), 1e-300), -np.inf)
        b = int(np.argmax(score))
        if not math.isfinite(score[b]):
            return None
        x = x.copy()
        x[mv.f[idx[b]]] = mv.p[idx[b]]
        now[mv.f[idx[b]]] = mv.c[idx[b]]
        margin = m[b]
    return None


def _polish(forest, x, x0, t, q, mv):
    """Improve a valid x by single-feature moves that keep it valid, best saving first."""
    now = coord_cost(x - x0, q.w, q.metric)
    for _ in range(4 * x0.shape[0] + 4):
        idx = np.flatnonzero(mv.c < now[mv.f])  # moves of one feature towards x̄
        if idx.size == 0:
            return x
        R = np.repeat(x[None], idx.size, axis=0)
        R[np.arange(idx.size), mv.f[idx]] = mv.p[idx]
        ok, _ = _evaluate(forest, R, t, q.proba)
        ok &= ~_too_many(R, x0, q)
        if not ok.any():
            return x
        saving = now[mv.f[idx]] - mv.c[idx]
        best = idx[np.flatnonzero(ok)[np.argmax(saving[ok])]]
        x = x.copy()
        x[mv.f[best]] = mv.p[best]
        now[mv.f[best]] = mv.c[best]
    return x


def incumbent(forest, x0, t, q, cells, P):
    """Return a point the library's arithmetic puts in target t (and τ), or None.

    ``cells``: the intervals of the query (points, costs, allowed ranges per feature);
    ``P``: candidate points (n, D), the projections of x̄ onto leaf boxes.
    """
    parts = [
        (np.full(kb - ka + 1, f), cells.points[f][ka : kb + 1], cells.costs[f][ka : kb + 1])
        for f, (ka, kb) in enumerate(cells.ranges)
        if kb > ka
    ]
    if not parts:
        return None
    mv = _Moves(*(np.concatenate(a) for a in zip(*parts, strict=True)))
    found = []
    ok, m = _evaluate(forest, P, t, q.proba) if P.shape[0] else (np.zeros(0, bool), np.zeros(0))
    ok &= ~_too_many(P, x0, q)
    if ok.any():
        c = coord_cost(P[ok] - x0, q.w, q.metric).sum(axis=1)
        found.append(P[ok][np.argmin(c)])
    ok0, m0 = _evaluate(forest, x0[None], t, q.proba)
    if ok0[0]:
        return x0.copy()
    starts = [(x0, m0[0])]
    if not ok.any() and P.shape[0]:
        fine = ~_too_many(P, x0, q)
        order = np.argsort(-np.where(fine, m, -np.inf))[:_STARTS]
        starts += [(P[i], m[i]) for i in order if fine[i]]
    for x, margin in starts:
        g = _greedy(forest, x, x0, t, q, mv, margin)
        if g is not None:
            found.append(g)
    if not found:
        return None
    found = [_polish(forest, x, x0, t, q, mv) for x in found]
    return min(found, key=lambda x: cost_of(x, x0, q))
