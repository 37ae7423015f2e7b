"""A fast valid answer of a network query: its cost bounds the search (:mod:`.answer`).

From the training rows (:meth:`fastcf.NetExplainer.fit_data`) with the query's frozen features
set to x̄'s and clipped into its box, those that fastcf's copy of the network puts in the target
by the margin; the nearest of them, x_r, is walked back toward x̄ along the segment by bisection
to a point still in the target, and that point's activation pattern is solved exactly (the
closest point of its polytope, :func:`~fastcf._net.program.solve_pattern`). The answer is a point
of the network in the target: a valid counterfactual, and its cost a budget for the exact search
(the optimum lies in the weighted L1 ball of that radius: :mod:`fastcf._net.bounds`).
"""

from __future__ import annotations

import numpy as np

from .program import solve_pattern

__all__ = ["incumbent", "meets"]


def meets(net, X, G, g):
    """Return which rows of ``X`` the copy puts in the target by the margin: ``G h ≥ g``."""
    h = np.asarray(X, dtype=np.float64)
    for W, b in zip(net.W[:-1], net.b[:-1], strict=True):
        h = h @ W.T + b
        if net.relu:
            np.maximum(h, 0.0, out=h)
    return np.all(h @ G.T >= g, axis=1)


def incumbent(net, rows, x0, lo, hi, w, G, g, metric, starts=4, steps=30, walks=8):
    """Return ``(x, cost)`` of a valid answer in the box (``None, inf`` where none is found).

    The ``starts`` nearest candidates are each bisected and solved in their pattern; the best
    is then improved by a walk over adjacent patterns (:func:`_walk`).
    """
    if rows is None or rows.shape[0] == 0:
        return None, np.inf
    pinned = lo == hi
    C = np.clip(rows, lo, hi)
    C[:, pinned] = x0[pinned]
    ok = meets(net, C, G, g)
    if not ok.any():
        return None, np.inf
    C = C[ok]
    cost = _cost(C, x0, w, metric)
    best, best_cost = None, np.inf
    for j in np.argsort(cost, kind="stable")[:starts]:
        x = _bisect(net, x0, C[j], G, g, steps)
        y = _solve(net, x, x0, lo, hi, w, G, g, metric)
        if y is not None:
            x = y
        c = float(_cost(x[None], x0, w, metric)[0])
        if c < best_cost:
            best, best_cost = x, c
    if metric == "manhattan" and walks:
        best, best_cost = _walk(net, best, best_cost, x0, lo, hi, w, G, g, walks)
    return best, best_cost


def _cost(X, x0, w, metric):
    d = X - x0
    return np.abs(d) @ w if metric == "manhattan" else (d != 0) @ w


def _bisect(net, x0, far, G, g, steps):
    """Return the point of the segment x̄ → far nearest x̄ found still in the target."""
    a, b = 0.0, 1.0
    for _ in range(steps):
        m = 0.5 * (a + b)
        if meets(net, (x0 + m * (far - x0))[None], G, g)[0]:
            b = m
        else:
            a = m
    return x0 + b * (far - x0)


def _solve(net, x, x0, lo, hi, w, G, g, metric, pattern=None):
    """Return the closest point of ``x``'s pattern (or ``pattern``'s) in the target, or None."""
    movable = None if metric == "manhattan" else x != x0
    pattern = net.pattern(x) if pattern is None else pattern
    y = solve_pattern(net, pattern, x0, lo, hi, w, G, g, metric, movable)
    if y is not None and meets(net, y[None], G, g)[0]:
        return y
    return None


def _walk(net, x, cost, x0, lo, hi, w, G, g, walks):
    """Improve ``x`` over the patterns next to it: flip a neuron on its pattern's boundary.

    At the closest point of a pattern's polytope some neurons sit at z = 0; the pattern with
    one of them flipped shares that face, and its own closest point may cost less. Each step
    tries the flips of the ``walks`` neurons nearest zero (their scale-free |z| / ‖∇z‖) and
    moves to the best improvement; it stops when none improves.
    """
    if not net.relu:
        return x, cost
    for _ in range(10):
        pattern = net.pattern(x)
        pre, _ = net.affine(pattern)
        near = []
        for layer, (A, c) in enumerate(pre):
            z = A @ x + c
            size = np.abs(A) @ np.abs(x) + np.abs(c) + 1e-300
            for j in np.flatnonzero(np.abs(z) <= 1e-7 * size):
                near.append((abs(z[j]) / size[j], layer, j))
        near.sort()
        step, step_cost = None, cost
        for _gap, layer, j in near[:walks]:
            flipped = [p.copy() for p in pattern]
            flipped[layer][j] = ~flipped[layer][j]
            y = _solve(net, x, x0, lo, hi, w, G, g, "manhattan", flipped)
            if y is not None:
                c = float(_cost(y[None], x0, w, "manhattan")[0])
                if c < step_cost * (1 - 1e-12):
                    step, step_cost = y, c
        if step is None:
            break
        x, cost = step, step_cost
    return x, cost
