"""A fast valid answer of a network query: its cost bounds the search (:mod:`.answer`).

Manhattan: from x̄, the steepest single-feature moves inside each activation pattern up to the
target (:func:`_greedy`), then the closest point of the pattern it reached. And from the training
rows (:meth:`fastcf.NetExplainer.fit_data`) with the query's frozen features
set to x̄'s and clipped into its box, those that fastcf's copy of the network puts in the target
by the margin; the nearest of them, x_r, is walked back toward x̄ along the segment by bisection
to a point still in the target, and that point's activation pattern is solved exactly (the
closest point of its polytope, :func:`~fastcf._net.program.solve_pattern`). The answer is a point
of the network in the target: a valid counterfactual, and its cost a budget for the exact search
(the optimum lies in the weighted L1 ball of that radius: :mod:`fastcf._net.bounds`).
"""

from __future__ import annotations

import numpy as np

from .._status import Status
from .bounds import cheapest
from .program import pattern_rows, snap, solve_pattern

_OK, _INFEASIBLE = int(Status.OK), int(Status.INFEASIBLE)

__all__ = ["incumbent", "meets", "walk"]


def meets(net, X, G, g):
    """Return which rows of ``X`` the copy puts in the target by the margin: ``G h ≥ g``."""
    return net.meets(X, G, g)


def incumbent(net, rows, x0, lo, hi, w, G, g, metric, starts=2, steps=24, walks=4):
    """Return ``(x, cost)`` of a valid answer in the box (``None, inf`` where none is found).

    The greedy path (Manhattan), and the ``starts`` nearest training candidates each bisected
    and solved in their pattern; the best is then improved by a walk over adjacent patterns
    (:func:`_walk`).
    """
    best, best_cost = None, np.inf
    if metric == "manhattan":
        x = _greedy(net, x0, lo, hi, w, G, g)
        if x is not None:
            best, best_cost = x, float(_cost(x[None], x0, w, metric)[0])
            # its pattern's linear program, unless the greedy point (in the target) already
            # costs that program's lower bound (its pattern's rows alone: a knapsack)
            floor = _floor(net, net.pattern(x), x0, lo, hi, w, G, g)
            if best_cost > floor * (1 + 1e-8) or not meets(net, x[None], G, g)[0]:
                y = _solve(net, x, x0, lo, hi, w, G, g, metric)
                if y is not None:
                    best, best_cost = y, float(_cost(y[None], x0, w, metric)[0])
    near = np.empty((0, x0.shape[0]))
    if rows is not None and rows.shape[0]:
        pinned = lo == hi
        C = np.clip(rows, lo, hi)
        C[:, pinned] = x0[pinned]
        near = _nearest(net, C, x0, w, G, g, metric, starts)
    if best is None and near.shape[0] == 0:
        return None, np.inf
    for far in near:
        x = _bisect(net, x0, far, G, g, steps)
        pattern = net.pattern(x)
        if metric == "manhattan" and _floor(net, pattern, x0, lo, hi, w, G, g) >= best_cost:
            continue  # (its pattern's program cannot pay)
        y = _solve(net, x, x0, lo, hi, w, G, g, metric, pattern)
        if y is not None:
            x = y
        c = float(_cost(x[None], x0, w, metric)[0])
        if c < best_cost:
            best, best_cost = x, c
    if metric == "manhattan" and walks:
        best, best_cost = _walk(net, best, best_cost, x0, lo, hi, w, G, g, walks)
    return best, best_cost


def _nearest(net, C, x0, w, G, g, metric, k):
    """Return the ``k`` rows of ``C`` nearest x̄ (ties: in order) that the copy puts in the target.

    The rows are judged in order of cost, in growing chunks (32, 64, 128, ...), until k are
    found: a forward pass of every training row costs more than the rest of the incumbent. The
    first chunk is found by a partition (most queries need no other), the rest by a sort.
    """
    cost = _cost(C, x0, w, metric)
    order = _smallest(cost, 32)
    picked, at, size = [], 0, 32
    while len(picked) < k and at < cost.size:
        if at == order.size:
            order = np.argsort(cost, kind="stable")
        idx = order[at : at + size]
        picked.extend(idx[meets(net, C[idx], G, g)][: k - len(picked)])
        at, size = at + size, size * 2
    return C[np.array(picked, dtype=np.int64)]


def _smallest(cost, m):
    """Return the indices of the ``m`` smallest of ``cost`` in the order of a stable sort."""
    if cost.size <= m:
        return np.argsort(cost, kind="stable")
    t = np.partition(cost, m - 1)[m - 1]
    below = np.flatnonzero(cost < t)
    idx = np.concatenate([below, np.flatnonzero(cost == t)[: m - below.size]])
    return idx[np.argsort(cost[idx], kind="stable")]


def _greedy(net, x0, lo, hi, w, G, g, steps=64):
    """Return a point in the target reached from x̄ by the steepest single-feature moves.

    Inside the current activation pattern the target's rows ``G h(x) ≥ g`` are affine in x;
    the row furthest from being met (aimed a relative 1e-9 beyond, as :func:`_solve`) is raised
    along the feature of largest slope per unit cost (|∂/∂x_i| / w_i) that has room in the box,
    up to the first of: the row met, the box's end, or a neuron changing sign (the pattern's
    boundary, where the slopes change). None if no step helps within ``steps`` moves.
    """
    x = x0.copy()
    aim = g + 1e-9 * (1.0 + np.abs(g))  # (as :func:`_solve`: the rounding of the forward pass)
    for _ in range(steps):
        zs, pre, R, r = _maps(net, x, G, aim)  # the target's rows inside x's pattern: R x ≥ r
        short = r - R @ x
        k = int(np.argmax(short))
        if short[k] <= 0:
            return x
        grad = R[k]
        room = np.where(grad > 0, hi - x, x - lo)
        score = np.where(room > 0, np.abs(grad) / w, 0.0)
        i = int(np.argmax(score))
        if score[i] <= 0:
            return None
        d = np.sign(grad[i])
        step = min(room[i], short[k] / abs(grad[i]))
        # the pattern's boundary along e_i: the first neuron whose z crosses zero
        floor = 1e-15 * (1.0 + abs(x[i]))
        for z, (A, _c) in zip(zs, pre, strict=False):  # (zs: none for an identity network)
            dz = A[:, i] * d
            cross = z * dz < 0
            if cross.any():
                t = -z[cross] / dz[cross]
                t = t[t > floor]
                if t.size:
                    step = min(step, float(t.min()) * (1 + 1e-12))
        x[i] = min(max(x[i] + d * step, lo[i]), hi[i])
    return x if meets(net, x[None], G, g)[0] else None


def _maps(net, x, G, g):
    """Return x's pre-activations, its pattern's affine maps and the target's rows there.

    One pass over the layers: the forward pass's ``z`` (whose signs are the pattern, as
    :meth:`~fastcf._net.model.Net.pattern`), each hidden layer's ``(A, c)`` with ``z = A x + c``
    inside the pattern (as :meth:`~fastcf._net.model.Net.affine`), and ``(R, r)``: the target's
    rows ``G h ≥ g`` as ``R x ≥ r``. An identity network has no boundaries: ``zs`` is empty.
    """
    h, A, c = x, None, None
    zs, pre = [], []
    for W, b in zip(net.W[:-1], net.b[:-1], strict=True):
        z = W @ h + b
        A, c = (W, b) if A is None else (W @ A, W @ c + b)
        pre.append((A, c))
        if net.relu:
            zs.append(z)
            on = z > 0.0
            h = np.where(on, z, 0.0)
            A, c = A * on[:, None], c * on
        else:
            h = z
    if A is None:  # (no hidden layer)
        return zs, pre, G, g
    return zs, pre, G @ A, g - G @ c


def _rows(net, pattern, pre, G, g):
    """Return ``(R, r)``: the target's rows ``G h ≥ g`` on the input inside ``pattern``."""
    if pre:
        Al, cl = pre[-1]
        if net.relu:
            Al, cl = Al * pattern[-1][:, None], cl * pattern[-1]
    else:
        Al, cl = np.eye(G.shape[1]), np.zeros(G.shape[1])
    return G @ Al, g - G @ cl


def _floor(net, pattern, x0, lo, hi, w, G, g):
    """Return a lower bound of the Manhattan cost of ``pattern``'s linear program.

    The target's rows inside the pattern, ``R x ≥ r``, alone over the box (the pattern's own
    rows left out): a knapsack from x̄ (:func:`~fastcf._net.bounds.cheapest`), microseconds
    where the program takes a few hundred.
    """
    pre, _ = net.affine(pattern)
    R, r = _rows(net, pattern, pre, G, g)
    return cheapest(R, r, x0, w, lo, hi)


def _cost(X, x0, w, metric):
    d = X - x0
    return np.abs(d) @ w if metric == "manhattan" else (d != 0) @ w


def _bisect(net, x0, far, G, g, steps):
    """Return the point of the segment x̄ → far nearest x̄ found still in the target.

    The segment's points at a grid of 32 fractions are judged at once; the first in the target
    and the one before it bracket the next grid, for ``ceil(steps / 5)`` grids (a resolution of
    at least 2^-steps of the segment, as many steps of bisection). (Small grids: a forward pass
    of a few hundred rows is where BLAS starts its threads, slow on a busy machine.)
    """
    a, b = 0.0, 1.0
    for _ in range(-(-steps // 5)):
        m = np.linspace(a, b, 33)[1:]
        ok = meets(net, x0 + m[:, None] * (far - x0), G, g)
        j = int(np.argmax(ok)) if ok.any() else m.size - 1
        a, b = (a if j == 0 else float(m[j - 1])), float(m[j])
    return x0 + b * (far - x0)


def _solve(net, x, x0, lo, hi, w, G, g, metric, pattern=None):
    """Return the closest point of ``x``'s pattern (or ``pattern``'s) in the target, or None.

    The linear program aims a relative 1e-9 beyond the target's rows: its optimum lies on them,
    and the rounding of the forward pass would put it on the wrong side about half the time.
    """
    movable = None if metric == "manhattan" else x != x0
    pattern = net.pattern(x) if pattern is None else pattern
    aim = g + 1e-9 * (1.0 + np.abs(g))
    y, solved = _pattern_lp(net, pattern, x0, lo, hi, w, G, aim, movable)
    if not solved:  # (HiGHS, where the small dual simplex gave no answer)
        y = solve_pattern(net, pattern, x0, lo, hi, w, G, aim, metric, movable)
    if y is not None and meets(net, y[None], G, g)[0]:
        return y
    return None


def _pattern_lp(net, pattern, x0, lo, hi, w, G, g, movable=None):
    """Return ``(x, solved)``: :func:`~fastcf._net.program.solve_pattern`'s Manhattan program.

    Solved by :func:`fastcf._kernels.pattern_lp.pattern_lp` (a dense dual simplex: a tenth of
    HiGHS's time on these programs of a few dozen rows); x None where it is infeasible; solved
    False where it gave no answer (then HiGHS is asked).
    """
    from .._kernels.pattern_lp import pattern_lp

    if movable is not None:
        lo, hi = np.where(movable, lo, x0), np.where(movable, hi, x0)
    A, b = pattern_rows(net, pattern, G, g)  # A x ≤ b, x = x̄ + p − n: −A p + A n ≥ A x̄ − b
    M = np.ascontiguousarray(np.hstack([-A, A]))
    v = np.empty(M.shape[1])
    status, _ = pattern_lp(M, A @ x0 - b, np.concatenate([w, w]),
                           np.concatenate([hi - x0, x0 - lo]), v)  # fmt: skip
    if status == _INFEASIBLE:
        return None, True
    if status != _OK:
        return None, False
    D = x0.shape[0]
    return snap(net, np.clip(x0 + (v[:D] - v[D:]), lo, hi), x0, lo, hi, G, g), True


def walk(net, x, cost, solve, tries=4, steps=10):
    """Improve ``x`` over the patterns next to it: flip a neuron on its pattern's boundary.

    At the closest point of a pattern's polytope some neurons sit at z = 0; the pattern with
    one of them flipped shares that face, and its own closest point may cost less. Each step
    tries the flips of the ``tries`` neurons nearest zero (their scale-free |z| / ‖∇z‖) and
    moves to the best improvement; it stops when none improves, after ``steps`` steps.
    ``solve(pattern, limit)`` returns the closest point of a pattern and its cost, ``(None,
    inf)`` where there is none or it cannot cost less than ``limit``: each metric's program
    (Manhattan here; Euclidean in :mod:`.euclid`). Returns ``(x, cost)``.
    """
    if not net.relu:
        return x, cost
    for _ in range(steps):
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
        for _gap, layer, j in near[:tries]:
            flipped = [p.copy() for p in pattern]
            flipped[layer][j] = ~flipped[layer][j]
            y, c = solve(flipped, step_cost)
            if y is not None and c < step_cost * (1 - 1e-12):
                step, step_cost = y, c
        if step is None:
            break
        x, cost = step, step_cost
    return x, cost


def _walk(net, x, cost, x0, lo, hi, w, G, g, walks):
    """:func:`walk` with the Manhattan program of each pattern."""

    def solve(pattern, limit):
        if _floor(net, pattern, x0, lo, hi, w, G, g) >= limit * (1 - 1e-12):
            return None, np.inf  # (the flipped pattern's program cannot pay)
        y = _solve(net, x, x0, lo, hi, w, G, g, "manhattan", pattern)
        return (None, np.inf) if y is None else (y, float(_cost(y[None], x0, w, "manhattan")[0]))

    return walk(net, x, cost, solve, walks)
