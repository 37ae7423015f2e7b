"""Weighted-L1 ("Manhattan") counterfactuals of binary logistic models: a fractional knapsack.

One query. Target logit ζ(x) = s (w·x + c) with s = ±1, u = s w. Moving feature i by δ_i changes
ζ by u_i δ_i at cost c_i |δ_i|: a free feature with u_i ≠ 0 raises ζ at the price
g_i = c_i / |u_i| per unit of ζ, up to its room |u_i| (hi_i − x̄_i) (u_i > 0) or
|u_i| (x̄_i − lo_i) (u_i < 0) inside the box (∞ without one). The cheapest way to raise ζ by t ≥ 0
is the fractional knapsack: take the features in increasing price (ties: lowest index), each up
to its room. Its cost h(t) is convex, piecewise linear, with slopes g_(1) ≤ g_(2) ≤ …

* ``proba=τ`` / ``region=True`` (:func:`constrained_batch`): raise ζ from ζ̄ to θ (logit τ, or
  the margin): walk the prices until t = θ − ζ̄ is covered; the last feature moves partially.
* problem (2) with the L1 cost (:func:`lam_batch`): min λ h(t) − log σ(ζ̄ + t) over t ≥ 0. On a
  piece of price g the derivative λ g − σ(−(ζ̄ + t)) increases, and vanishes at
  ζ̄ + t = log((1 − λg)/(λg)) = log1p(−λg) − log(λg) (none when λg ≥ 1). Walk the pieces: stop at
  the kink where the derivative turns ≥ 0, or inside the piece where it crosses 0.

Without a box only the cheapest feature moves, found in one pass over D next to the one that
forms ζ̄. With a box the cheapest feature often suffices as well; when it does not, the next ones
come from a streaming selection of the 64 cheapest (one pass with a bounded max-heap, then
sorted; redone for 8× as many if they run out), never a full sort of D prices.

Rounding: θ is raised by 2ε (Σ|w_i x̄_i| + |c| + |θ|), as the Euclidean projection does
(:func:`fastcf._kernels.logistic._project_one`), the answer's ζ is recomputed with the same dot
product, and a shortfall pushes the last feature on (doubling pushes from the fourth round, as
:func:`fastcf._kernels.logistic._guard_push`).
"""

import math

import numpy as np

from fastcf._status import Status

from .. import REASSOC, kernel
from .._batch import batch
from ..linalg import dot as _dot
from ..linalg import dot_abs as _dot_abs
from ..logistic import _guard_push
from ..roots import sigmoid
from .kkt import l1_residual

_EPS = 2.220446049250313e-16
_OK = int(Status.OK)
_UNREACHABLE = int(Status.UNREACHABLE)
#: rows per batch thread (:func:`fastcf._kernels._batch.batch`): a row here is a closed form of
#: a fraction of a microsecond; 569 rows ran slower on 2 threads (361 µs) than on one (302),
#: 2 276 faster (795 against 987 µs)
_CHEAP_ROWS = 512
_INFEASIBLE = int(Status.INFEASIBLE)
_NUMERIC = int(Status.NUMERIC)
_GUARD_ROUNDS = 64


# The small helpers below take scalars, never arrays: Numba counts the references of every array
# argument of a call with an atomic instruction, which in a loop over D cost more than the work
# (a heap of 131 072 features took 7 ms instead of 1).


@kernel(callee=True)
def _room(x0i, u, loi, hii):
    """Return the room of a feature in x-units along sign(u) inside [lo, hi]."""
    r = hii - x0i if u > 0.0 else x0i - loi
    return r if r > 0.0 else 0.0


@kernel(callee=True)
def _scan(x0, w, sign, c0, cost, free, lo, hi, bounded):
    """ζ̄, Σ|w_i x̄_i| + |c|, the cheapest feature with room, and whether any feature moves ζ.

    Returns (zeta0, absdot, best, any_w): ``best`` is −1 when no feature has room. Two loops:
    the dot product vectorises on its own (SIMD), the search for the cheapest price c_i/|w_i|
    compares c_i |w_b| < c_b |w_i| (no division); ties: the lowest index.
    """
    d, a = _dot_abs(w, x0)
    best = -1
    bc = 1.0
    bw = 0.0
    any_w = False
    for i in range(x0.shape[0]):
        if free[i] and w[i] != 0.0:
            any_w = True
            aw = abs(w[i])
            if cost[i] * bw < bc * aw:  # strict: the lowest index wins a tie
                if bounded and _room(x0[i], sign * w[i], lo[i], hi[i]) <= 0.0:
                    continue
                bc = cost[i]
                bw = aw
                best = i
    return sign * (d + c0), a + abs(c0), best, any_w


@kernel(callee=True)
def _select(x0, w, sign, cost, free, lo, hi, bounded, skip, m):
    """Return the m cheapest features with room (except ``skip``), sorted by (price, index).

    One streaming pass with a max-heap of the m best so far: once it is full, most features are
    rejected by one comparison with its top, so the pass costs about what forming ζ̄ does (a
    full heap of D features cost ten times more at D = 131 072). Returns (keys, idx, n), n ≤ m.
    """
    keys = np.empty(m)
    idx = np.empty(m, dtype=np.int64)
    n = 0
    for i in range(x0.shape[0]):
        if i == skip or not free[i] or w[i] == 0.0:
            continue
        if bounded and _room(x0[i], sign * w[i], lo[i], hi[i]) <= 0.0:
            continue
        k = cost[i] / abs(w[i])
        if n < m:  # sift up
            pos = n
            n += 1
            while pos > 0:
                par = (pos - 1) // 2
                if keys[par] > k or (keys[par] == k and idx[par] > i):
                    break
                keys[pos] = keys[par]
                idx[pos] = idx[par]
                pos = par
            keys[pos] = k
            idx[pos] = i
        elif k < keys[0] or (k == keys[0] and i < idx[0]):  # replace the top, sift down
            pos = 0
            while True:
                left = 2 * pos + 1
                if left >= n:
                    break
                big = left
                if left + 1 < n and (
                    keys[left + 1] > keys[left]
                    or (keys[left + 1] == keys[left] and idx[left + 1] > idx[left])
                ):
                    big = left + 1
                if keys[big] < k or (keys[big] == k and idx[big] < i):
                    break
                keys[pos] = keys[big]
                idx[pos] = idx[big]
                pos = big
            keys[pos] = k
            idx[pos] = i
    # heapsort: move the top (the largest) to the end, n times
    for end in range(n - 1, 0, -1):
        kt, it = keys[end], idx[end]
        keys[end], idx[end] = keys[0], idx[0]
        pos = 0
        while True:
            left = 2 * pos + 1
            if left >= end:
                break
            big = left
            if left + 1 < end and (
                keys[left + 1] > keys[left]
                or (keys[left + 1] == keys[left] and idx[left + 1] > idx[left])
            ):
                big = left + 1
            if keys[big] < kt or (keys[big] == kt and idx[big] < it):
                break
            keys[pos] = keys[big]
            idx[pos] = idx[big]
            pos = big
        keys[pos] = kt
        idx[pos] = it
    return keys, idx, n


@kernel(callee=True)
def _next(x0, w, sign, cost, free, lo, hi, bounded, best, order, n, pos, m):
    """Return (feature, order, n, pos, m): the next feature after ``best`` in price order.

    ``order[:n]`` holds the m cheapest after ``best``; when they are used up and more may
    exist (n = m), the selection is redone for 8m (its first n are the same: the order is
    total). −1: no feature left.
    """
    if pos >= n and n == m:
        m = 64 if m == 0 else 8 * m
        _k, order, n = _select(x0, w, sign, cost, free, lo, hi, bounded, best, m)
    if pos >= n:
        return -1, order, n, pos, m
    return order[pos], order, n, pos + 1, m


@kernel(callee=True)
def _record(moved, nm, i):
    """Return ``moved`` with ``moved[nm] = i`` (doubled when full: most answers move 1 feature)."""
    if nm == moved.shape[0]:
        grown = np.empty(2 * nm, dtype=np.int64)
        # a loop, not grown[:nm] = moved: a slice assignment compiles NumPy's shape-mismatch
        # error message (string formatting, 2.3 s of a first call's 6-8 s)
        for j in range(nm):
            grown[j] = moved[j]
        moved = grown
    moved[nm] = i
    return moved


# ---------------------------------------------------------------- one query
@kernel(callee=True)
def _constrained_one(x0, w, sign, c0, cost, free, theta, lo, hi, bounded, out):
    """Min Σ c_i |x_i − x̄_i| s.t. ζ(x) ≥ θ (lo ≤ x ≤ hi). Returns (moved, n_moved, status, ζ).

    ``moved[:n_moved]``: the features that moved, in price order. Status: OK, UNREACHABLE (no
    free feature moves ζ), INFEASIBLE (the box stops ζ below θ: ``out`` is then the best the box
    allows, every feature with room at its bound), NUMERIC (the rounding guard failed).
    """
    D = x0.shape[0]
    moved = np.empty(4, dtype=np.int64)
    for i in range(D):
        out[i] = x0[i]
    zeta0, absdot, best, any_w = _scan(x0, w, sign, c0, cost, free, lo, hi, bounded)
    if zeta0 >= theta or not any_w or best < 0:  # x̄: met, unreachable, or no room in the box
        st = _OK if zeta0 >= theta else (_UNREACHABLE if not any_w else _INFEASIBLE)
        return moved, 0, st, sign * (_dot(w, out) + c0)
    theta0 = theta
    theta = theta + 2.0 * _EPS * (absdot + abs(theta))
    u0 = sign * c0
    need = theta - zeta0  # ζ still missing
    cur = best
    moved[0] = cur
    nm = np.int64(1)  # moved: the features that moved, in price order (np.int64: see n_sel)
    order = np.empty(0, dtype=np.int64)  # selected lazily: most answers move one feature
    # np.int64, not literals: a literal 0 would compile _next a second time, for Literal[int](0)
    n_sel = np.int64(0)
    pos = np.int64(0)
    m_sel = np.int64(0)
    r = 0  # guard rounds
    first = True
    while True:
        # advance: cover ``need`` with the current feature, then the next ones
        while need > 0.0:
            u = sign * w[cur]
            au = abs(u)
            room = _room(x0[cur], u, lo[cur], hi[cur]) if bounded else np.inf
            bound = (hi[cur] if u > 0.0 else lo[cur]) if bounded else 0.0
            done = abs(out[cur] - x0[cur])  # already moved (guard rounds)
            if first:
                step = need / au
                first = False
            else:
                step = done + _guard_push(need, au, done, r - 1)
            if step < room:
                out[cur] = x0[cur] + step if u > 0.0 else x0[cur] - step
                need = 0.0
            else:
                out[cur] = bound
                need -= au * (room - done)
                cur, order, n_sel, pos, m_sel = _next(
                    x0, w, sign, cost, free, lo, hi, bounded, best, order, n_sel, pos, m_sel
                )
                if cur < 0:  # the box is used up: met only if θ itself is, as computed
                    z = sign * _dot(w, out) + u0
                    return moved, nm, (_OK if z >= theta0 else _INFEASIBLE), z
                moved = _record(moved, nm, cur)
                nm += 1
                first = True
        z = sign * _dot(w, out) + u0
        if z >= theta:
            return moved, nm, _OK, z
        r += 1
        if r >= _GUARD_ROUNDS:
            return moved, nm, _NUMERIC, z
        need = theta - z


@kernel(callee=True)
def _lam_one(x0, w, sign, c0, cost, free, lam, lo, hi, bounded, out):
    """Min λ Σ c_i |x_i − x̄_i| − log σ(ζ(x)) (lo ≤ x ≤ hi). Returns (moved, n_moved, ζ).

    ζ: the target logit at the answer, from ζ̄ and the steps (not a dot product over D).
    """
    D = x0.shape[0]
    moved = np.empty(4, dtype=np.int64)
    for i in range(D):
        out[i] = x0[i]
    zeta0, _a, best, _any = _scan(x0, w, sign, c0, cost, free, lo, hi, bounded)
    cur = best
    nm = np.int64(0)
    T = 0.0  # ζ raised so far (the features before ``cur`` at their bounds)
    order = np.empty(0, dtype=np.int64)
    # np.int64, not literals: a literal 0 would compile _next a second time, for Literal[int](0)
    n_sel = np.int64(0)
    pos = np.int64(0)
    m_sel = np.int64(0)
    while cur >= 0:
        u = sign * w[cur]
        au = abs(u)
        lg = lam * (cost[cur] / au)
        if lg >= 1.0:
            break  # the derivative λg − σ(−ζ) > 0 on this piece and every later one
        ystar = math.log1p(-lg) - math.log(lg)  # the root on this piece
        inc = ystar - zeta0 - T
        if inc <= 0.0:
            break  # the kink before this piece
        room = _room(x0[cur], u, lo[cur], hi[cur]) if bounded else np.inf
        moved = _record(moved, nm, cur)
        nm += 1
        # (unbounded, the room is inf: an inc of inf or NaN is stepped, never read from the
        # empty box, which the compiled kernel does not bounds-check)
        if not bounded or inc < au * room:
            step = inc / au
            out[cur] = x0[cur] + step if u > 0.0 else x0[cur] - step
            break
        out[cur] = hi[cur] if u > 0.0 else lo[cur]
        T += au * room
        cur, order, n_sel, pos, m_sel = _next(
            x0, w, sign, cost, free, lo, hi, bounded, best, order, n_sel, pos, m_sel
        )
    z = zeta0
    for j in range(nm):
        i = moved[j]
        z += sign * w[i] * (out[i] - x0[i])
    return moved, nm, z


@kernel(callee=True)
def _distance(x0, out, cost, moved, nm):
    d = 0.0
    for j in range(nm):
        i = moved[j]
        d += cost[i] * abs(out[i] - x0[i])
    return d


@kernel(fastmath=REASSOC, callee=True)
def _kkt(x0, out, w, sign, zeta, cost, free, lam, lo, hi, bounded):
    """Return (w·out, Σ|w_i out_i|, the KKT residual of problem (2) at ``out``).

    The residual is the 2-norm of the least subgradient of λ Σ c|δ| − log σ(ζ) plus the box's
    normal cone, at q = σ(−ζ): per free feature the subdifferential is an interval [L, U],
    −q u_i plus λ c_i sign(δ_i) (or [−λ c_i, λ c_i] at δ_i = 0) plus the normal cone, and the
    residual is the distance of 0 from it.
    """
    q = sigmoid(-zeta)
    r2 = 0.0
    d_ = 0.0
    t_ = 0.0
    for i in range(x0.shape[0]):
        p = w[i] * out[i]
        d_ += p
        t_ += abs(p)
        if not free[i]:
            continue
        g = -q * sign * w[i]
        lc = lam * cost[i]
        at_lo = bounded and out[i] <= lo[i]
        at_hi = bounded and out[i] >= hi[i]
        res = l1_residual(g, lc, out[i] - x0[i], at_lo, at_hi)
        r2 += res * res
    return d_, t_, math.sqrt(r2)


# ---------------------------------------------------------------- batches
@kernel()
def _constrained_row(n, X0, w, c0, signs, cost, free, thetas, lo, hi, bounded, out):
    X, zeta, status, dist, nmv = out
    lo_r = lo[n] if lo.shape[0] > 1 else lo[0]
    hi_r = hi[n] if hi.shape[0] > 1 else hi[0]
    moved, nm, status[n], zeta[n] = _constrained_one(
        X0[n], w, signs[n], c0, cost, free, thetas[n], lo_r, hi_r, bounded, X[n]
    )
    dist[n] = _distance(X0[n], X[n], cost, moved, nm)
    nmv[n] = nm


@kernel(inline="always")
def _constrained_out(args):
    N, D = args[0].shape
    X = np.empty((N, D))
    return X, np.empty(N), np.empty(N, dtype=np.int64), np.empty(N), np.empty(N, dtype=np.int64)


_constrained = batch(_constrained_row, _constrained_out, min_rows=_CHEAP_ROWS)


def constrained_batch(X0, w, c0, signs, cost, free, thetas, lo, hi, bounded, parallel):
    """Return the cheapest points with target logit ζ ≥ θ of N queries, in the L1 cost.

    ``lo``, ``hi``: (R, D), one box per row (R = N) or one for every row (R = 1); read only when
    ``bounded``. ``parallel=False`` runs the serial twin (a single query).

    Returns
    -------
    X : (N, D) answers; zeta : (N,) target logit at X (recomputed from X); status : (N,) int64;
    dist : (N,) Σ c_i |x_i − x̄_i|; n_moved : (N,) int64, the features that moved.
    """
    return _constrained(parallel, X0, w, c0, signs, cost, free, thetas, lo, hi, bounded)


@kernel()
def _lam_row(n, X0, w, c0, signs, cost, free, lams, lo, hi, bounded, out):
    X, zeta, dist, gn, scale, nmv = out
    lo_r = lo[n] if lo.shape[0] > 1 else lo[0]
    hi_r = hi[n] if hi.shape[0] > 1 else hi[0]
    moved, nm, zinc = _lam_one(
        X0[n], w, signs[n], c0, cost, free, lams[n], lo_r, hi_r, bounded, X[n]
    )
    # one pass for the logit, its rounding scale and the KKT residual (at σ(−ζ) of the
    # logit formed from the steps: the same up to rounding)
    z, sa, gn[n] = _kkt(X0[n], X[n], w, signs[n], zinc, cost, free, lams[n], lo_r, hi_r, bounded)
    zeta[n] = signs[n] * (z + c0)
    scale[n] = sa + abs(c0)
    dist[n] = _distance(X0[n], X[n], cost, moved, nm)
    nmv[n] = nm


@kernel(inline="always")
def _lam_out(args):
    N, D = args[0].shape
    X = np.empty((N, D))
    nmv = np.empty(N, dtype=np.int64)
    return X, np.empty(N), np.empty(N), np.empty(N), np.empty(N), nmv


_lam = batch(_lam_row, _lam_out, min_rows=_CHEAP_ROWS)


def lam_batch(X0, w, c0, signs, cost, free, lams, lo, hi, bounded, parallel):
    """Problem (2) with the weighted L1 cost for N queries (see the module docstring).

    Returns
    -------
    X : (N, D) minimisers; zeta : (N,) target logit at X; dist : (N,) Σ c_i |x_i − x̄_i|;
    gn : (N,) KKT residual (least subgradient norm); scale : (N,) Σ|w_i x_i| + |c| at X (the
    rounding scale of zeta); n_moved : (N,) int64.
    """
    return _lam(parallel, X0, w, c0, signs, cost, free, lams, lo, hi, bounded)
