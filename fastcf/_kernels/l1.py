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
from numba import prange

from fastcf._status import Status

from . import REASSOC, kernel
from .linalg import dot as _dot
from .linalg import dot_abs as _dot_abs
from .logistic import _guard_push
from .roots import sigmoid

_EPS = 2.220446049250313e-16
_OK = int(Status.OK)
_UNREACHABLE = int(Status.UNREACHABLE)
_INFEASIBLE = int(Status.INFEASIBLE)
_NUMERIC = int(Status.NUMERIC)
_MAXITER = int(Status.MAXITER)
_GUARD_ROUNDS = 64


# The small helpers below take scalars, never arrays: Numba counts the references of every array
# argument of a call with an atomic instruction, which in a loop over D cost more than the work
# (a heap of 131 072 features took 7 ms instead of 1).


@kernel()
def _room(x0i, u, loi, hii):
    """Return the room of a feature in x-units along sign(u) inside [lo, hi]."""
    r = hii - x0i if u > 0.0 else x0i - loi
    return r if r > 0.0 else 0.0


@kernel()
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


# ---------------------------------------------------------------- a binary heap of (key, index)
@kernel()
def _less(ka, ia, kb, ib):
    """(ka, ia) < (kb, ib): by key, then by index (ties: the lowest index first)."""
    return ka < kb or (ka == kb and ia < ib)


@kernel()
def _sift_down(keys, idx, pos, n):
    while True:
        left = 2 * pos + 1
        if left >= n:
            return
        small = left
        if left + 1 < n and _less(keys[left + 1], idx[left + 1], keys[left], idx[left]):
            small = left + 1
        if not _less(keys[small], idx[small], keys[pos], idx[pos]):
            return
        keys[pos], keys[small] = keys[small], keys[pos]
        idx[pos], idx[small] = idx[small], idx[pos]
        pos = small


@kernel()
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


@kernel()
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


@kernel()
def _heapify(keys, idx, n):
    """Order keys[:n] (with idx) as a min-heap in place, O(n), one call (no per-node calls)."""
    for start in range(n // 2 - 1, -1, -1):
        pos = start
        while True:
            left = 2 * pos + 1
            if left >= n:
                break
            small = left
            right = left + 1
            if right < n and (
                keys[right] < keys[left] or (keys[right] == keys[left] and idx[right] < idx[left])
            ):
                small = right
            if not (
                keys[small] < keys[pos] or (keys[small] == keys[pos] and idx[small] < idx[pos])
            ):
                break
            keys[pos], keys[small] = keys[small], keys[pos]
            idx[pos], idx[small] = idx[small], idx[pos]
            pos = small


@kernel()
def _pop(keys, idx, n):
    """Return (index, new size) of the heap's minimum (−1 when empty)."""
    if n == 0:
        return -1, 0
    top = idx[0]
    n -= 1
    keys[0] = keys[n]
    idx[0] = idx[n]
    _sift_down(keys, idx, 0, n)
    return top, n


@kernel()
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
@kernel()
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


@kernel()
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


@kernel()
def _distance(x0, out, cost, moved, nm):
    d = 0.0
    for j in range(nm):
        i = moved[j]
        d += cost[i] * abs(out[i] - x0[i])
    return d


@kernel(fastmath=REASSOC)
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
        d = out[i] - x0[i]
        if d > 0.0:
            lo_v = g + lc
            hi_v = lo_v
        elif d < 0.0:
            lo_v = g - lc
            hi_v = lo_v
        else:
            lo_v = g - lc
            hi_v = g + lc
        if bounded:
            if out[i] >= hi[i]:
                hi_v = np.inf
            if out[i] <= lo[i]:
                lo_v = -np.inf
        res = lo_v if lo_v > 0.0 else (-hi_v if hi_v < 0.0 else 0.0)
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


@kernel()
def _constrained_out(N, D):
    X = np.empty((N, D))
    return X, np.empty(N), np.empty(N, dtype=np.int64), np.empty(N), np.empty(N, dtype=np.int64)


@kernel()
def _constrained_serial(X0, w, c0, signs, cost, free, thetas, lo, hi, bounded):
    N, D = X0.shape
    out = _constrained_out(N, D)
    for n in range(N):
        _constrained_row(n, X0, w, c0, signs, cost, free, thetas, lo, hi, bounded, out)
    return out


@kernel(parallel=True)
def _constrained_parallel(X0, w, c0, signs, cost, free, thetas, lo, hi, bounded):
    N, D = X0.shape
    out = _constrained_out(N, D)
    for n in prange(N):
        _constrained_row(np.int64(n), X0, w, c0, signs, cost, free, thetas, lo, hi, bounded, out)
    return out


def constrained_batch(X0, w, c0, signs, cost, free, thetas, lo, hi, bounded, parallel):
    """Return the cheapest points with target logit ζ ≥ θ of N queries, in the L1 cost.

    ``lo``, ``hi``: (R, D), one box per row (R = N) or one for every row (R = 1); read only when
    ``bounded``. ``parallel=False`` runs the serial twin (a single query).

    Returns
    -------
    X : (N, D) answers; zeta : (N,) target logit at X (recomputed from X); status : (N,) int64;
    dist : (N,) Σ c_i |x_i − x̄_i|; n_moved : (N,) int64, the features that moved.
    """
    args = (X0, w, c0, signs, cost, free, thetas, lo, hi, bounded)
    return _constrained_parallel(*args) if parallel else _constrained_serial(*args)


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


@kernel()
def _lam_out(N, D):
    X = np.empty((N, D))
    nmv = np.empty(N, dtype=np.int64)
    return X, np.empty(N), np.empty(N), np.empty(N), np.empty(N), nmv


@kernel()
def _lam_serial(X0, w, c0, signs, cost, free, lams, lo, hi, bounded):
    N, D = X0.shape
    out = _lam_out(N, D)
    for n in range(N):
        _lam_row(n, X0, w, c0, signs, cost, free, lams, lo, hi, bounded, out)
    return out


@kernel(parallel=True)
def _lam_parallel(X0, w, c0, signs, cost, free, lams, lo, hi, bounded):
    N, D = X0.shape
    out = _lam_out(N, D)
    for n in prange(N):
        _lam_row(np.int64(n), X0, w, c0, signs, cost, free, lams, lo, hi, bounded, out)
    return out


def lam_batch(X0, w, c0, signs, cost, free, lams, lo, hi, bounded, parallel):
    """Problem (2) with the weighted L1 cost for N queries (see the module docstring).

    Returns
    -------
    X : (N, D) minimisers; zeta : (N,) target logit at X; dist : (N,) Σ c_i |x_i − x̄_i|;
    gn : (N,) KKT residual (least subgradient norm); scale : (N,) Σ|w_i x_i| + |c| at X (the
    rounding scale of zeta); n_moved : (N,) int64.
    """
    args = (X0, w, c0, signs, cost, free, lams, lo, hi, bounded)
    return _lam_parallel(*args) if parallel else _lam_serial(*args)


# =====================================================================================
# Softmax models: the region LP by a dual simplex with K − 1 rows
# =====================================================================================
#
# min Σ_i c_i (δ⁺_i + δ⁻_i)  s.t.  Σ_i M_ji (δ⁺_i − δ⁻_i) − s_j = r_j,  s ≥ 0,
#                                   0 ≤ δ⁺_i ≤ hi_i − x̄_i,  0 ≤ δ⁻_i ≤ x̄_i − lo_i,
# with M_ji = a_ti − a_{c_j} i (c_j: the j-th class other than the target t) and
# r_j = margin_j − (z̄_t − z̄_{c_j}). Variables: v < D is δ⁺_v, D ≤ v < 2D is δ⁻_{v−D},
# v ≥ 2D is the slack of row v − 2D. A row of the tableau needs ρᵀM_i = ρ̃·a_{:,i} with
# ρ̃_t = Σ_j ρ_j, ρ̃_{c_j} = −ρ_j: M is never formed, A is read through Aᵀ (D, K).

_LP_PIVOT = 1e-11  # relative pivot tolerance
_LP_DUAL = 1e-12  # Harris tolerance on the (cost-scaled) reduced costs
_LP_PRIMAL = 1e-12  # relative primal feasibility tolerance


@kernel()
def _lu_factor(B, piv, n):
    """LU with partial pivoting of B[:n, :n] in place. Returns False when singular."""
    for k in range(n):
        p = k
        big = abs(B[k, k])
        for i in range(k + 1, n):
            if abs(B[i, k]) > big:
                big = abs(B[i, k])
                p = i
        piv[k] = p
        if big == 0.0:
            return False
        if p != k:
            for j in range(n):
                B[k, j], B[p, j] = B[p, j], B[k, j]
        for i in range(k + 1, n):
            f = B[i, k] / B[k, k]
            B[i, k] = f
            for j in range(k + 1, n):
                B[i, j] -= f * B[k, j]
    return True


@kernel()
def _lu_solve(LU, piv, b, n):
    """Solve B x = b in place (b becomes x) from :func:`_lu_factor`."""
    for k in range(n):
        p = piv[k]
        if p != k:
            b[k], b[p] = b[p], b[k]
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= LU[i, j] * b[j]
        b[i] = s
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s -= LU[i, j] * b[j]
        b[i] = s / LU[i, i]


@kernel()
def _lu_solve_t(LU, piv, b, n):
    """Solve Bᵀ x = b in place from :func:`_lu_factor` (P B = L U, so Bᵀ = Uᵀ Lᵀ P)."""
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= LU[j, i] * b[j]
        b[i] = s / LU[i, i]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s -= LU[j, i] * b[j]
        b[i] = s
    for k in range(n - 1, -1, -1):
        p = piv[k]
        if p != k:
            b[k], b[p] = b[p], b[k]


@kernel()
def _col_entry(AT, v, j, D, t, cls):
    """Entry of row j of the column of variable v."""
    if v < 2 * D:
        i = v if v < D else v - D
        e = AT[i, t] - AT[i, cls[j]]
        return e if v < D else -e
    return -1.0 if v - 2 * D == j else 0.0


@kernel()
def _expand(vec, t, cls, R, out):
    """Write the K-space form of a row vector: out_t = Σ vec, out_{c_j} = −vec_j."""
    s = 0.0
    for j in range(R):
        out[cls[j]] = -vec[j]
        s += vec[j]
    out[t] = s


@kernel()
def region_lp_one(AT, zbar, t, margins, cost, free, x0, lo, hi, bounded, max_iter, out, ydual):
    """Solve the region LP of one query by a dual simplex. Returns (nit, status, gap).

    ``margins`` (K,): the margin of each row (the target's entry is not read). ``out`` receives
    the answer x (x̄ outside the optimum: INFEASIBLE / UNREACHABLE / MAXITER), ``ydual`` (K − 1)
    the row duals; ``gap`` is the duality gap of the answer (primal − dual objective, both
    recomputed from scratch). Status: OK, UNREACHABLE (no free feature moves a logit
    difference), INFEASIBLE (no point of the box meets the margins), MAXITER, NUMERIC (a
    singular basis).
    """
    D, K = AT.shape
    R = K - 1
    cls = np.empty(R, dtype=np.int64)
    j = 0
    for k in range(K):
        if k != t:
            cls[j] = k
            j += 1
    for i in range(D):
        out[i] = x0[i]
    for j in range(R):
        ydual[j] = 0.0
    rhs = np.empty(R)
    need = False
    for j in range(R):
        rhs[j] = margins[cls[j]] - (zbar[t] - zbar[cls[j]])
        if rhs[j] > 0.0:
            need = True
    if not need:
        return 0, _OK, 0.0
    # κ = max_i ‖M_i‖∞ / c_i (logits per unit cost) puts the slacks in the units of the
    # structural variables (cost), so that no pivoting rule depends on the features' units
    kappa = 0.0
    for i in range(D):
        if not free[i]:
            continue
        for j in range(R):
            e = abs(AT[i, t] - AT[i, cls[j]]) / cost[i]
            if e > kappa:
                kappa = e
    if kappa == 0.0:
        return 0, _UNREACHABLE, 0.0
    sdual = 1.0 / kappa
    nv = 2 * D + R
    pos = np.full(nv, -1, dtype=np.int64)  # position in the basis, −1 when nonbasic
    atup = np.zeros(2 * D, dtype=np.bool_)  # nonbasic at its upper bound
    bas = np.empty(R, dtype=np.int64)
    for j in range(R):
        bas[j] = 2 * D + j
        pos[2 * D + j] = j
    B = np.empty((R, R))
    piv = np.empty(R, dtype=np.int64)
    xb = np.empty(R)
    y = np.empty(R)
    rho = np.empty(R)
    yk = np.empty(K)
    rk = np.empty(K)
    gi = np.empty(D)  # the tableau row / c
    hi_ = np.empty(D)  # yᵀM_i / c
    rscale = 0.0
    for j in range(R):
        rscale = max(rscale, abs(rhs[j]))
    tolp = _LP_PRIMAL * rscale * sdual  # in cost units
    status = _MAXITER
    nit = 0
    for it in range(max_iter + 1):
        nit = it
        # the basis, its factors, the basic values and the duals
        for a in range(R):
            for j in range(R):
                B[j, a] = _col_entry(AT, bas[a], j, D, t, cls)
        if not _lu_factor(B, piv, R):
            status = _NUMERIC
            break
        for j in range(R):
            xb[j] = rhs[j]
        if bounded:
            for v in range(2 * D):
                if atup[v]:
                    i = v if v < D else v - D
                    # the column of δ⁺_i is M_i, of δ⁻_i −M_i: either way −M_i (hi − x̄) or
                    # +M_i (x̄ − lo) moves to the right-hand side, i.e. −M_i (bound − x̄)
                    step = (hi[i] if v < D else lo[i]) - x0[i]
                    for j in range(R):
                        xb[j] -= (AT[i, t] - AT[i, cls[j]]) * step
        _lu_solve(B, piv, xb, R)
        for a in range(R):
            v = bas[a]
            y[a] = cost[v if v < D else v - D] if v < 2 * D else 0.0
        _lu_solve_t(B, piv, y, R)
        # leaving: the largest primal infeasibility, in cost units
        p = -1
        worst = tolp
        up = False
        for a in range(R):
            v = bas[a]
            if v < 2 * D:
                i = v if v < D else v - D
                c = cost[i]
                ub = np.inf
                if bounded:
                    ub = hi[i] - x0[i] if v < D else x0[i] - lo[i]
                lowv = -xb[a] * c
                upv = (xb[a] - ub) * c
            else:
                lowv = -xb[a] * sdual
                upv = -np.inf
            if lowv > worst:
                worst = lowv
                p = a
                up = False
            if upv > worst:
                worst = upv
                p = a
                up = True
        if p < 0:
            status = _OK
            break
        if it == max_iter:
            break
        # the tableau row of the leaving variable: ρ = B⁻ᵀ e_p
        for j in range(R):
            rho[j] = 0.0
        rho[p] = 1.0
        _lu_solve_t(B, piv, rho, R)
        _expand(rho, t, cls, R, rk)
        _expand(y, t, cls, R, yk)
        # Harris ratio test on cost-scaled quantities (d̂ = d/c, α̂ = α/c: unit-free); one pass
        # over A for the row of the tableau (α) and the reduced costs (d)
        amax = 0.0
        for i in range(D):
            if not free[i]:
                continue
            g = 0.0
            h = 0.0
            for k in range(K):
                g += rk[k] * AT[i, k]
                h += yk[k] * AT[i, k]
            gi[i] = g / cost[i]
            hi_[i] = h / cost[i]
            if abs(gi[i]) > amax:
                amax = abs(gi[i])
        for j in range(R):
            if pos[2 * D + j] < 0 and abs(rho[j]) * kappa > amax:
                amax = abs(rho[j]) * kappa
        if amax == 0.0:
            status = _INFEASIBLE
            break
        atol = _LP_PIVOT * amax
        # pass 1: the largest step allowed with the tolerance; pass 2: the largest pivot there
        tmax = np.inf
        for pass_ in range(2):
            best = -1
            bsize = 0.0
            for i in range(D):
                if not free[i]:
                    continue
                for side in range(2):
                    v = i if side == 0 else i + D
                    if pos[v] >= 0:
                        continue
                    alpha = gi[i] if side == 0 else -gi[i]
                    dhat = 1.0 - (hi_[i] if side == 0 else -hi_[i])
                    upper = atup[v]
                    if upper:
                        dhat = -dhat
                    if dhat < 0.0:
                        dhat = 0.0
                    # leaving to its lower bound wants α < 0 at lower, α > 0 at upper
                    s = -alpha if not up else alpha
                    if upper:
                        s = -s
                    if s <= atol:
                        continue
                    if pass_ == 0:
                        r_ = (dhat + _LP_DUAL) / s
                        if r_ < tmax:
                            tmax = r_
                    elif dhat / s <= tmax and s > bsize:
                        bsize = s
                        best = v
            for j in range(R):
                v = 2 * D + j
                if pos[v] >= 0:
                    continue
                alpha = -rho[j] * kappa
                dhat = y[j] * kappa
                if dhat < 0.0:
                    dhat = 0.0
                s = -alpha if not up else alpha
                if s <= atol:
                    continue
                if pass_ == 0:
                    r_ = (dhat + _LP_DUAL) / s
                    if r_ < tmax:
                        tmax = r_
                elif dhat / s <= tmax and s > bsize:
                    bsize = s
                    best = v
            if pass_ == 0 and tmax == np.inf:
                break
        if tmax == np.inf or best < 0:
            status = _INFEASIBLE
            break
        # pivot
        leave = bas[p]
        pos[leave] = -1
        if leave < 2 * D:
            atup[leave] = up
        bas[p] = best
        pos[best] = p
        if best < 2 * D:
            atup[best] = False
    if status != _OK:
        for j in range(R):
            ydual[j] = 0.0
        return nit, status, np.nan
    # the answer: nonbasic at their bounds exactly, basic clipped into their ranges
    for a in range(R):
        v = bas[a]
        if v < 2 * D:
            i = v if v < D else v - D
            d = xb[a]
            if d < 0.0:
                d = 0.0
            ub = np.inf
            if bounded:
                ub = hi[i] - x0[i] if v < D else x0[i] - lo[i]
            # unbounded, lo and hi are empty and a basic value of inf (margins raised to
            # 1e276: soak round R, seed 350) read hi[i] past its end, unchecked in the compiled
            # kernel: x came back as that memory's bits and was called a success
            if bounded and d >= ub:
                out[i] = hi[i] if v < D else lo[i]
            elif d > 0.0 or not d == d:
                out[i] = x0[i] + d if v < D else x0[i] - d
    if bounded:
        for v in range(2 * D):
            if atup[v]:
                i = v if v < D else v - D
                out[i] = hi[i] if v < D else lo[i]
    for j in range(R):
        ydual[j] = y[j]
    # duality gap: primal Σ c|δ| against rᵀy − Σ_i [U_i (yᵀM_i − c_i)⁺ + L_i (−yᵀM_i − c_i)⁺]
    _expand(y, t, cls, R, yk)
    primal = 0.0
    dual = 0.0
    for j in range(R):
        dual += rhs[j] * (y[j] if y[j] > 0.0 else 0.0)
    for i in range(D):
        if not free[i]:
            continue
        primal += cost[i] * abs(out[i] - x0[i])
        h = 0.0
        for k in range(K):
            h += yk[k] * AT[i, k]
        over = abs(h) - cost[i]
        # a basic feature has |h| = c_i exactly in exact arithmetic: an excess within the
        # rounding of h is not dual infeasibility (times an infinite room it made the gap inf,
        # depending on the rounding of NumPy's and Numba's versions)
        if over > 1e-12 * cost[i]:
            room = np.inf
            if bounded:
                room = hi[i] - x0[i] if h > 0.0 else x0[i] - lo[i]
            dual -= over * room
    return nit, _OK, primal - dual


def region_lp_batch(AT, Zbar, tidx, Margins, cost, free, X0, lo, hi, bounded, max_iter, parallel):
    """Solve the region LP (:func:`region_lp_one`) of N queries.

    ``Margins`` (N, K): each row's margin per class (raised where rounding needs it);
    ``lo``, ``hi``: (R, D) as in :func:`constrained_batch`. Returns (X, nit, status, gap, Y).
    """
    if parallel:
        return _region_parallel(AT, Zbar, tidx, Margins, cost, free, X0, lo, hi, bounded, max_iter)
    return _region_serial(AT, Zbar, tidx, Margins, cost, free, X0, lo, hi, bounded, max_iter)


@kernel()
def _region_row(n, AT, Zbar, tidx, Margins, cost, free, X0, lo, hi, bounded, max_iter, out):
    X, nit, status, gap, Y = out
    lo_r = lo[n] if lo.shape[0] > 1 else lo[0]
    hi_r = hi[n] if hi.shape[0] > 1 else hi[0]
    nit[n], status[n], gap[n] = region_lp_one(
        AT, Zbar[n], tidx[n], Margins[n], cost, free, X0[n], lo_r, hi_r, bounded, max_iter,
        X[n], Y[n],
    )  # fmt: skip


@kernel()
def _region_out(N, D, K):
    return (
        np.empty((N, D)), np.empty(N, dtype=np.int64), np.empty(N, dtype=np.int64),
        np.empty(N), np.empty((N, K - 1)),
    )  # fmt: skip


@kernel()
def _region_serial(AT, Zbar, tidx, Margins, cost, free, X0, lo, hi, bounded, max_iter):
    N, D = X0.shape
    out = _region_out(N, D, AT.shape[1])
    for n in range(N):
        _region_row(n, AT, Zbar, tidx, Margins, cost, free, X0, lo, hi, bounded, max_iter, out)
    return out


@kernel(parallel=True)
def _region_parallel(AT, Zbar, tidx, Margins, cost, free, X0, lo, hi, bounded, max_iter):
    N, D = X0.shape
    out = _region_out(N, D, AT.shape[1])
    for n in prange(N):
        _region_row(
            np.int64(n), AT, Zbar, tidx, Margins, cost, free, X0, lo, hi, bounded, max_iter, out
        )
    return out


# =====================================================================================
# Softmax models: problem (2) and proba=τ with the L1 cost, by the entropy dual
# =====================================================================================
#
# Margins m_j = z_t − z_{c_j} = m̄_j + (M δ)_j. With F(δ) = log(1 + Σ_j exp(−m_j)) = −log p_t,
# problem (2) is min_δ λ Σ c_i |δ_i| + F(δ) over the box, and its Fenchel dual is
#
#     max_q  Ψ(q) = −m̄ᵀq − Σ_{k=0}^{R} q_k log q_k − Σ_i ψ_i(M_iᵀq),
#     q ∈ R^R, q_0 = 1 − Σ_j q_j (a probability vector),
#     ψ_i(v) = U_i (v − λc_i)⁺ + L_i (−v − λc_i)⁺,
#
# U_i = hi_i − x̄_i, L_i = x̄_i − lo_i (∞: a hard constraint |v| ≤ λ c_i). At the optimum q are
# the non-target probabilities of the answer and δ_i ∈ ∂ψ_i(M_iᵀq): 0 inside (|v_i| < λc_i),
# the bound beyond (|v_i| > λc_i), and for the features on a kink ("tight", |v_i| = λc_i) the
# Lagrange multipliers of v_i = ±λc_i. Ψ is strictly concave on the simplex; the method is an
# active set in R = K − 1 variables: Newton steps on the face of the tight features, an exact
# line search across the kinks of ψ (stopping at a wall or where the slope changes sign), and at
# a face optimum the release of the tight feature whose multiplier leaves [0, U_i] (or
# [−L_i, 0]). q is carried as log q (Newton steps are multiplicative: Δq_k = q_k r_k), so that
# classes of probability ~1e−300 keep their relative precision. Where damped Newton on the
# primal of the face finds its minimiser (_face_opt), the step goes straight to the face's
# optimum (the same point: the two share their stationarity conditions); the dual Newton
# direction alone needs many steps when classes of q_j ~ 1e−30 must grow by orders of magnitude.

_IN = 0  # state of a feature: inside (δ = 0)
# ``proba`` of _polish: NumPy booleans, typed ``bool``; the literals True and False are typed
# Literal[bool](True) and Literal[bool](False), and _polish and _at_rounding were compiled once
# for each (the same code: Numba prunes no branch on a literal bool argument)
_NO = np.bool_(False)
_YES = np.bool_(True)
_TIGHT = 1  # ±1: on the kink v = ±λc (δ between 0 and the bound)
_BEYOND = 2  # ±2: beyond the kink (δ at the bound)


@kernel()
def _mcol(AT, i, t, cls, R, out):
    """Write M_i into ``out``: the change of the margins per unit of feature i."""
    for j in range(R):
        out[j] = AT[i, t] - AT[i, cls[j]]


@kernel()
def _nontarget(m, R, q):
    """Fill q_j = p_{c_j} from the margins m; return log p_t."""
    umax = 0.0
    for j in range(R):
        if -m[j] > umax:
            umax = -m[j]
    s = math.exp(-umax)
    for j in range(R):
        q[j] = math.exp(-m[j] - umax)
        s += q[j]
    for j in range(R):
        q[j] /= s
    return -umax - math.log(s)


@kernel()
def _log_nontarget(m, R, lq):
    """lq_0 = log p_t, lq_{j+1} = log p_{c_j} from the margins m."""
    umax = 0.0
    for j in range(R):
        if -m[j] > umax:
            umax = -m[j]
    s = math.exp(-umax)
    for j in range(R):
        s += math.exp(-m[j] - umax)
    ls = umax + math.log(s)
    lq[0] = -ls
    for j in range(R):
        lq[j + 1] = -m[j] - ls


@kernel()
def _first_kink(v, w, lc, st):
    """Return (α, new side) of the next kink of feature i along v + α w (α = ∞: none)."""
    if st == _IN:
        if w > 0.0:
            return (lc - v) / w, 1
        if w < 0.0:
            return (-lc - v) / w, -1
        return np.inf, 0
    if st == _BEYOND and w < 0.0:
        return (lc - v) / w, 1
    if st == -_BEYOND and w > 0.0:
        return (-lc - v) / w, -1
    return np.inf, 0


@kernel(inline="always")
def _log_step(alpha, rk, dk):
    """log(1 + α r_k), r_k = e^{d_k} − 1; r_k = inf where that overflowed.

    A jump from an underflowed q_k (logits of scale 1e4: q_k ~ e⁻⁵⁰⁰⁰) to a face's optimum has
    r_k = e^{d_k} − 1 beyond the doubles; there 1 + α r_k = α e^{d_k} + 1 − α, whose log is
    d_k + log(α + (1 − α) e^{−d_k}).
    """
    if rk != np.inf:  # (a NaN goes this way too, as before)
        return math.log1p(alpha * rk)
    if alpha == 0.0:
        # no step: 0, not d_k + log(e^{−d_k}), whose e^{−d_k} underflows for d_k ~ 2e5 and
        # made log q_k −inf, then NaN (a line search stopped at a kink at α = 0; soak round P)
        return 0.0
    v = alpha + (1.0 - alpha) * math.exp(-dk)
    # α beyond 1 can make v ≤ 0 (the step past the point where q_k reaches 0): NaN, as the
    # compiled log gives, also where the kernels run as Python (math.log raised ValueError)
    return dk + math.log(v) if v > 0.0 else (-np.inf if v == 0.0 else np.nan)


@kernel(inline="always")
def _delta(lqk, rk, dk):
    """Δ_k = q_k r_k; where r_k overflowed, q_k (e^{d_k} − 1) = e^{lq_k + d_k} to the last bit."""
    if rk != np.inf:
        return math.exp(lqk) * rk
    return math.exp(lqk + dk)


@kernel()
def _dphi(lq, r, dq, e, R, alpha, pen):
    """φ'(α) along the direction: Σ_j Δ_j g_j(α) − pen, with Δ_j = q_j r_j (j ≥ 1).

    g_j(α) = e_j − log(1 + α r_j) + log(1 + α r_0), e_j = g_j(0) (the gradient of the smooth
    part, without the beyond features' constant slopes: those are in ``pen``). ``dq``: log(1 +
    r_k) where r_k overflowed (:func:`_log_step`).
    """
    l0 = _log_step(alpha, r[0], dq[0])
    s = 0.0
    for j in range(1, R + 1):
        s += _delta(lq[j], r[j], dq[j]) * (e[j] - _log_step(alpha, r[j], dq[j]) + l0)
    return s - pen


@kernel()
def _d2phi(lq, r, dq, R, alpha):
    s = 0.0
    for k in range(R + 1):
        if r[k] != np.inf:
            den = 1.0 + alpha * r[k]
            s -= math.exp(lq[k]) * r[k] * r[k] / den
        else:  # r_k / (1 + α r_k) with r_k = e^{d_k} − 1 overflowed
            ed = math.exp(-dq[k])
            s -= math.exp(lq[k] + dq[k]) * (1.0 - ed) / (alpha + (1.0 - alpha) * ed)
    return s


@kernel()
def _line_root(lq, r, dq, e, R, pen, a, b):
    """Return the root of φ' in [a, b] by Newton and bisection.

    φ'(a) > 0 ≥ φ'(b⁻); b may be the end of the domain (φ' → −∞ there).
    """
    x = a
    lo_ = a
    hi_ = b
    for _ in range(200):
        f = _dphi(lq, r, dq, e, R, x, pen)
        if f > 0.0:
            lo_ = x
        else:
            hi_ = x
        if f == 0.0:
            return x
        d2 = _d2phi(lq, r, dq, R, x)
        xn = x - f / d2 if d2 < 0.0 else 0.5 * (lo_ + hi_)
        if not (lo_ < xn < hi_):
            xn = 0.5 * (lo_ + hi_)
        if abs(xn - x) <= 4.0 * _EPS * abs(xn) or hi_ - lo_ <= 4.0 * _EPS * hi_:
            return xn
        x = xn
    return x


@kernel()
def _heap_push(keys, idx, n, key, i):
    """Push (key, i) on a heap with free slots; returns the new size."""
    pos = n
    keys[pos] = key
    idx[pos] = i
    while pos > 0:
        parent = (pos - 1) // 2
        if _less(keys[pos], idx[pos], keys[parent], idx[parent]):
            keys[pos], keys[parent] = keys[parent], keys[pos]
            idx[pos], idx[parent] = idx[parent], idx[pos]
            pos = parent
        else:
            break
    return n + 1


@kernel()
def _face_system(AT, t, cls, lq, e, tl, nT, R, N, mu, r):
    """Newton on the face: multipliers μ (= δ of the tight features) and the direction r.

    Maximise gᵀΔ − ½ Δᵀ S⁻¹ Δ s.t. NᵀΔ = 0 (S = diag(q) − qqᵀ, N = [M_i], i tight): μ solves
    (NᵀSN) μ = NᵀSg, Δ = S (g − Nμ); returned as Δ_k = q_k r_k (k = 0 the target). Returns
    (decrement gᵀΔ, ok).
    """
    q = np.empty(R)
    for j in range(R):
        q[j] = math.exp(lq[j + 1])
    ok = True
    if nT > 0:
        col = np.empty(R)
        for a in range(nT):
            _mcol(AT, tl[a], t, cls, R, col)
            for j in range(R):
                N[j, a] = col[j]
        # S N and S g with S = diag(q) − q qᵀ
        SN = np.empty((R, nT))
        for a in range(nT):
            s = 0.0
            for j in range(R):
                s += q[j] * N[j, a]
            for j in range(R):
                SN[j, a] = q[j] * (N[j, a] - s)
        sg = 0.0
        for j in range(R):
            sg += q[j] * e[j + 1]
        G = np.empty((nT, nT))
        h = np.empty(nT)
        for a in range(nT):
            acc = 0.0
            for j in range(R):
                acc += N[j, a] * q[j] * (e[j + 1] - sg)
            h[a] = acc
            for b2 in range(nT):
                acc = 0.0
                for j in range(R):
                    acc += N[j, a] * SN[j, b2]
                G[a, b2] = acc
        # equilibrated (unit diagonal) before the pivots are judged: a tight column of 2⁻²⁴
        # beside one of 0.5 has G_aa ~ 1e-15 of the other's, and a pivot test against the
        # largest diagonal called that independent pair singular; dropping one and adding it
        # back at α = 0 cycled to the iteration limit (soak round S, seed 395)
        piv = np.empty(nT, dtype=np.int64)
        dsc = np.empty(nT)
        for a in range(nT):
            if not G[a, a] > 0.0:
                return 0.0, False
            dsc[a] = 1.0 / math.sqrt(G[a, a])
        for a in range(nT):
            h[a] *= dsc[a]
            for b2 in range(nT):
                G[a, b2] *= dsc[a] * dsc[b2]
        ok = _lu_factor(G, piv, nT)
        if ok:
            for a in range(nT):
                if abs(G[a, a]) <= 1e-14:
                    ok = False
        if not ok:
            return 0.0, False
        _lu_solve(G, piv, h, nT)
        for a in range(nT):
            mu[a] = h[a] * dsc[a]
    # e − Nμ, centred: r_j = (e − Nμ)_j − qᵀ(e − Nμ), r_0 = −qᵀ(e − Nμ)
    res = np.empty(R)
    for j in range(R):
        acc = e[j + 1]
        for a in range(nT):
            acc -= N[j, a] * mu[a]
        res[j] = acc
    bar = 0.0
    for j in range(R):
        bar += q[j] * res[j]
    r[0] = -bar
    dec = 0.0
    for j in range(R):
        r[j + 1] = res[j] - bar
        dec += q[j] * r[j + 1] * res[j]
    return dec, ok


@kernel()
def _face_phi(mbar, bsum, N, nT, dd, lam, cost, state, tl, m, q):
    """φ(δ_T) = λ Σ_T σ_i c_i δ_i + F(m̄ + b + M_T δ_T); fills the margins m and q there."""
    R = mbar.shape[0]
    for j in range(R):
        acc = mbar[j] + bsum[j]
        for a in range(nT):
            acc += N[j, a] * dd[a]
        m[j] = acc
    val = -_nontarget(m, R, q)
    for a in range(nT):
        sg = 1.0 if state[tl[a]] > 0 else -1.0
        val += lam * sg * cost[tl[a]] * dd[a]
    return val


_FACE_STEP = 64.0  # the largest change of a margin in one Newton step of _face_opt


@kernel()
def _face_opt(AT, t, cls, mbar, lam, cost, state, tl, nT, mu, bsum, lqs):
    """Return whether the current face has an optimum; if so ``lqs`` = its log q, μ = its δ_T.

    On the face (the tight features' signs fixed, the beyond features at their bounds, the rest
    at 0) the primal is min φ = λ Σ_T σ_i c_i δ_i + F(m̄ + b + M_T δ_T) over the tight
    features' δ (b = Σ_beyond δ_i M_i): smooth and convex, Hessian M_Tᵀ S M_T. Its minimiser's
    probabilities are the dual's optimum on the face (the same stationarity conditions). Damped
    Newton from the multipliers μ; False for a singular face or one without a minimiser.
    """
    R = mbar.shape[0]
    n1 = max(nT, 1)
    m = np.empty(R)
    q = np.empty(R)
    N = np.empty((R, n1))
    col = np.empty(R)
    for a in range(nT):
        _mcol(AT, tl[a], t, cls, R, col)
        for j in range(R):
            N[j, a] = col[j]
    d = np.empty(n1)
    dt = np.empty(n1)
    for a in range(nT):
        d[a] = mu[a]
    g = np.empty(n1)
    step_v = np.empty(n1)
    G = np.empty((n1, n1))
    piv = np.empty(n1, dtype=np.int64)
    SN = np.empty((R, n1))
    f = _face_phi(mbar, bsum, N, nT, d, lam, cost, state, tl, m, q)
    ok = nT == 0
    # from a good start Newton needs ~5 steps. From a start where the face's probabilities are
    # e⁻⁵⁰⁰ away from its optimum, F is linear there and the Newton step astronomical: each step
    # is then capped to move no margin by more than ``cap`` (q by at most e^cap), a damped Newton
    # step all the same (soak round M: at logits of scale 10⁴ the dual's own steps grew such a
    # class by e^15 per iteration and ran out of iterations). The cap starts at _FACE_STEP and
    # doubles after each capped step taken whole (F still linear along it), so a margin e^4700
    # from its optimum takes ~7 capped steps, not 73 (soak round Q: with a fixed cap the 60
    # steps covered margins of 3840 and no more, and the dual ran to its iteration limit)
    cap = _FACE_STEP
    for _it in range(60):
        if nT == 0:
            break
        gmax = 0.0  # the gradient λσc − M_Tᵀq, relative to λc (q: at d)
        for a in range(nT):
            i = tl[a]
            acc = 0.0
            for j in range(R):
                acc += N[j, a] * q[j]
            sg = 1.0 if state[i] > 0 else -1.0
            g[a] = sg * lam * cost[i] - acc
            gmax = max(gmax, abs(g[a]) / (lam * cost[i]))
        # converged at 1e-14, or at the rounding of the margins the gradient is made of (as
        # below): on a face whose optimum is not unique Newton crawls along it at that level
        mround = 0.0
        for j in range(R):
            acc = abs(mbar[j]) + abs(bsum[j])
            for a in range(nT):
                acc += abs(N[j, a] * d[a])
            mround = max(mround, acc)
        if gmax <= max(1e-14, 16.0 * _EPS * mround):
            ok = True
            break
        for a in range(nT):
            sq = 0.0
            for j in range(R):
                sq += q[j] * N[j, a]
            for j in range(R):
                SN[j, a] = q[j] * (N[j, a] - sq)
        for a in range(nT):
            for b2 in range(nT):
                acc = 0.0
                for j in range(R):
                    acc += N[j, a] * SN[j, b2]
                G[a, b2] = acc
            # 1e-12 of each column's own scale on the diagonal: where q's weights leave the
            # Hessian singular (a class at q ~ e⁻⁵⁰ that the optimum needs, or a face whose
            # optimum is not unique) the step is then capped steepest descent along the flat
            # directions and Newton along the others, not an astronomical step along the flat
            # ones (soak round Q: a face made of two features at the same price)
            nn = 0.0
            for j in range(R):
                nn += N[j, a] * N[j, a]
            G[a, a] += 1e-12 * nn
        for a in range(nT):
            step_v[a] = g[a]
        if _lu_factor(G, piv, nT):
            _lu_solve(G, piv, step_v, nT)  # the Newton step is −step_v
        # else: F is linear to rounding (one class holds all of q, so S = diag(q) − q qᵀ is 0:
        # soak round Q, margins 1.6e3 apart): steepest descent, the step capped below as ever
        slope = 0.0
        for a in range(nT):
            slope -= g[a] * step_v[a]
        if not slope < 0.0:
            return False
        h = 1.0
        dmax = 0.0
        for j in range(R):
            dm = 0.0
            for a in range(nT):
                dm += N[j, a] * step_v[a]
            dmax = max(dmax, abs(dm))
            if abs(dm) * h > cap:
                h = cap / abs(dm)
        capped = h < 1.0
        accepted = False
        ft = f
        for _bt in range(30):
            moved = False
            for a in range(nT):
                dt[a] = d[a] - h * step_v[a]
                moved = moved or dt[a] != d[a]
            if not moved:  # the step is below an ulp of δ_T: Newton has converged at rounding
                break
            ft = _face_phi(mbar, bsum, N, nT, dt, lam, cost, state, tl, m, q)
            if ft <= f + 1e-4 * h * slope:
                accepted = True
                break
            h *= 0.5
        if not accepted:
            # no decrease left at rounding level, or a step below an ulp of δ_T: converged if the
            # gradient is small against the rounding of the margins it is made of (each q_j moves
            # by its margin's rounding, relative): at logits 10⁵ the margins m̄ + b + M_T δ
            # cancel to ~1e-11 and the gradient cannot go below that (soak round N); mround is
            # that of this δ_T, computed above
            ok = gmax <= max(1e-10, 16.0 * _EPS * mround)
            f = _face_phi(mbar, bsum, N, nT, d, lam, cost, state, tl, m, q)
            break
        # a capped step taken whole: the cap doubles. A capped step cut back by the line search
        # went past the minimiser: the cap becomes half the step taken, so that the steps that
        # follow close in on it as a bisection would. Reset to _FACE_STEP instead, each overshoot
        # began the doubling again from 64 (soak round S, seed 395: a one-feature face with
        # margins 3·10⁷ from its optimum, ~17 steps per halving, the 60 steps ran out)
        if capped and _bt == 0:
            cap = 2.0 * cap
        elif capped:
            cap = max(_FACE_STEP, 0.5 * h * dmax)
        else:
            cap = _FACE_STEP
        for a in range(nT):
            d[a] = dt[a]
        f = ft
    if not ok:
        return False
    for j in range(R):
        acc = mbar[j] + bsum[j]
        for a in range(nT):
            acc += N[j, a] * d[a]
        m[j] = acc
    _log_nontarget(m, R, lqs)
    for a in range(nT):
        mu[a] = d[a]
    return True


@kernel()
def _restore(AT, t, cls, lq, lam, cost, state, tl, nT, R):
    """Put the tight features back on their kinks: q ← q + S N (NᵀSN)⁻¹ (σλc − Nᵀq).

    Rounding moves the tight features off their kinks by ~ε per step; without this the drift
    builds up over the steps of a face (and an exact line search can amplify it).
    """
    if nT == 0:
        return
    q = np.empty(R)
    for j in range(R):
        q[j] = math.exp(lq[j + 1])
    N = np.empty((R, nT))
    col = np.empty(R)
    dfc = np.empty(nT)
    big = 0.0
    for a in range(nT):
        i = tl[a]
        _mcol(AT, i, t, cls, R, col)
        acc = 0.0
        for j in range(R):
            N[j, a] = col[j]
            acc += col[j] * q[j]
        sg = 1.0 if state[i] > 0 else -1.0
        dfc[a] = sg * lam * cost[i] - acc
        big = max(big, abs(dfc[a]) / (lam * cost[i]))
    if big == 0.0:
        return
    G = np.empty((nT, nT))
    SN = np.empty((R, nT))
    for a in range(nT):
        s = 0.0
        for j in range(R):
            s += q[j] * N[j, a]
        for j in range(R):
            SN[j, a] = q[j] * (N[j, a] - s)
    for a in range(nT):
        for b2 in range(nT):
            acc = 0.0
            for j in range(R):
                acc += N[j, a] * SN[j, b2]
            G[a, b2] = acc
    piv = np.empty(nT, dtype=np.int64)
    if not _lu_factor(G, piv, nT):
        return
    _lu_solve(G, piv, dfc, nT)
    # Δq = S N z, as Δq_k = q_k r_k with r centred
    res = np.empty(R)
    for j in range(R):
        acc = 0.0
        for a in range(nT):
            acc += N[j, a] * dfc[a]
        res[j] = acc
    bar = 0.0
    for j in range(R):
        bar += q[j] * res[j]
    if abs(bar) >= 0.5:
        return
    for j in range(R):
        if abs(res[j] - bar) >= 0.5:
            return
    lq[0] += math.log1p(-bar)
    for j in range(R):
        lq[j + 1] += math.log1p(res[j] - bar)


@kernel()
def _twin_of_tight(AT, t, cls, R, i, tl, nT, cost):
    """Whether feature i's column M_i / c_i is exactly ± that of a tight feature."""
    for a in range(nT):
        f = tl[a]
        if f == i:
            continue
        same = True
        opposite = True
        for j in range(R):
            mi = (AT[i, t] - AT[i, cls[j]]) * cost[f]
            mf = (AT[f, t] - AT[f, cls[j]]) * cost[i]
            same = same and mi == mf
            opposite = opposite and mi == -mf
            if not (same or opposite):
                break
        if same or opposite:
            return True
    return False


@kernel()
def lam_dual(AT, t, mbar, lam, cost, free, rp, rm, lq, state, tl, nT, mu, max_iter):
    """Maximise the entropy dual Ψ of problem (2) (see above) from (lq, state, tl[:nT]).

    ``lq`` (R+1): log q (lq[0]: the target); ``state`` (D) int8; ``tl``: the tight features;
    ``mu`` (R): their multipliers at exit. Returns (nit, status, nT). Status: OK, MAXITER,
    NUMERIC (a singular face system that dropping features did not cure).
    """
    D, K = AT.shape
    R = K - 1
    cls = np.empty(R, dtype=np.int64)
    j = 0
    for k in range(K):
        if k != t:
            cls[j] = k
            j += 1
    e = np.empty(R + 1)
    es = np.empty(R + 1)
    r = np.empty(R + 1)
    N = np.empty((R, R))
    qk = np.empty(K)
    dk = np.empty(K)
    v = np.empty(D)
    w = np.empty(D)
    keys = np.empty(2 * D + 1)
    hidx = np.empty(2 * D + 1, dtype=np.int64)
    col = np.empty(R)
    bsum = np.empty(R)
    qs = np.empty(R)
    lqs = np.empty(R + 1)
    dq = np.empty(R + 1)
    mu2 = np.empty(R + 1)
    lq_top = np.empty(R + 1)
    stall = 0
    last_drop = -1  # the feature last dropped from a singular face
    jumped = False  # the last iteration jumped to a singular face's optimum
    for it in range(max_iter):
        for k in range(R + 1):
            lq_top[k] = lq[k]
        _restore(AT, t, cls, lq, lam, cost, state, tl, nT, R)
        # v_i = M_iᵀq for every free feature, and the beyond features' slopes Σ δ_i M_i
        for jj in range(R):
            qs[jj] = math.exp(lq[jj + 1])
        _expand(qs, t, cls, R, qk)
        for jj in range(R):
            bsum[jj] = 0.0
        for i in range(D):
            if not free[i]:
                continue
            acc = 0.0
            for k in range(K):
                acc += qk[k] * AT[i, k]
            v[i] = acc
            st = state[i]
            if st == _BEYOND or st == -_BEYOND:
                d = rp[i] if st > 0 else -rm[i]
                _mcol(AT, i, t, cls, R, col)
                for jj in range(R):
                    bsum[jj] += d * col[jj]
        # the gradient of Ψ on this piece: −m̄ − log(q_j/q_0) − Σ_beyond δ_i M_i
        e[0] = 0.0
        for jj in range(R):
            e[jj + 1] = -mbar[jj] - (lq[jj + 1] - lq[0]) - bsum[jj]
        dec, ok = _face_system(AT, t, cls, lq, e, tl, nT, R, N, mu, r)
        if not ok and nT > 0 and not jumped:
            # singular in q's weights — a class at q ~ e⁻⁵⁰ that the face's optimum needs, or
            # two features at the same price (soak round Q: dropping one and adding it back at
            # α = 0 cycled to the iteration limit). The face's primal Newton may still find its
            # optimum: jump there first, and drop a feature only if it cannot
            for a in range(nT):
                mu2[a] = 0.0
            if _face_opt(AT, t, cls, mbar, lam, cost, state, tl, nT, mu2, bsum, lqs):
                moved = False
                for k in range(R + 1):
                    moved = moved or lq[k] != lqs[k]
                    lq[k] = lqs[k]
                if moved:
                    jumped = True
                    continue
        jumped = False
        if not ok:
            # a singular face (dependent tight columns): drop the last tight feature. If the
            # line search put that same feature back and the face is singular again (classes
            # at q ~ 1e-44 leave two tight columns dependent in q's weights: soak round P, a
            # cycle to the iteration limit), drop the oldest tight feature instead
            if nT == 0:
                return it, _NUMERIC, nT
            if nT >= 2 and tl[nT - 1] == last_drop:
                last_drop = -1
                state[tl[0]] = _IN
                for a in range(nT - 1):
                    tl[a] = tl[a + 1]
                nT -= 1
                continue
            nT -= 1
            last_drop = tl[nT]
            state[tl[nT]] = _IN
            continue
        scale_e = 1.0
        for jj in range(R):
            scale_e = max(scale_e, abs(mbar[jj]))
        if nT == R:
            dec = 0.0  # a vertex of the dual: the face is a point
        # the step's drift off the tight kinks (NᵀΔ = 0 up to rounding of the large q_j): a
        # direction at rounding level, taken far by the line search (classes with q_j ~ 1e−30
        # that still move by large factors), would drift off them; cap the step so that
        # the drift stays within what _restore repairs
        acap = np.inf
        for a in range(nT):
            dv = 0.0
            for jj in range(R):
                dv += N[jj, a] * math.exp(lq[jj + 1]) * r[jj + 1]
            if dv != 0.0:
                acap = min(acap, 1e-9 * lam * cost[tl[a]] / abs(dv))
        # the decrement weighs class j by q_j: a class that collapsed to q_j ~ 1e−30 but wants
        # to grow back (r_j > 0 large) would go unseen; the face is optimal when the decrement
        # is at rounding level and no class wants to grow. By more than 1e-4 of itself: a class
        # that the decrement does not see has q_j r_j² ≤ 1e-22, so below that its share of any
        # v_i is under 1e-18 |M_i|, while the face system's own noise moves the r_j of classes
        # at q ~ e⁻²⁷ by ±5e-6 from one step to the next, and a test at 1e-8 never held there
        # (soak round R, seed 356: the face optimum reached at step 3, then to the iteration
        # limit). The answer's own KKT conditions are checked after the dual in any case
        grow = 0.0
        for k in range(R + 1):
            grow = max(grow, r[k])
        if nT == R or (dec <= 1e-22 * scale_e and grow <= 1e-4) or stall >= 2:
            stall = 0
            # a face optimum: release the worst multiplier outside its range (in cost units)
            worst = 0.0
            wa = -1
            wnew = 0
            mscale = 0.0
            for a in range(nT):
                mscale = max(mscale, abs(mu[a]) * cost[tl[a]])
            tolm = 1e-12 * mscale + 1e-300
            for a in range(nT):
                i = tl[a]
                sg = 1 if state[i] > 0 else -1
                val = sg * mu[a]
                room = rp[i] if sg > 0 else rm[i]
                if -val * cost[i] > max(worst, tolm):
                    worst = -val * cost[i]
                    wa = a
                    wnew = _IN
                elif (val - room) * cost[i] > max(worst, tolm):
                    worst = (val - room) * cost[i]
                    wa = a
                    wnew = sg * _BEYOND
            if wa < 0:
                return it, _OK, nT
            state[tl[wa]] = wnew
            for a in range(wa, nT - 1):
                tl[a] = tl[a + 1]
                mu[a] = mu[a + 1]
            nT -= 1
            continue
        # the direction: towards the face's optimum when the primal Newton finds it (one
        # step then crosses the face, and classes of tiny q_j take their values at once),
        # else the dual Newton direction
        for a in range(nT):
            mu2[a] = mu[a]
        jump = _face_opt(AT, t, cls, mbar, lam, cost, state, tl, nT, mu2, bsum, lqs)
        if jump:
            for k in range(R + 1):
                dq[k] = lqs[k] - lq[k]
                r[k] = math.expm1(dq[k]) if dq[k] < 709.0 else np.inf
        else:
            for k in range(R + 1):
                dq[k] = np.inf  # (unused: the Newton direction's r is finite)
        # the line search: w_i = M_iᵀΔ, kinks in a heap; φ' takes the smooth part's gradient
        # (the beyond features' slopes are in ``pen``)
        es[0] = 0.0
        for jj in range(R):
            es[jj + 1] = e[jj + 1] + bsum[jj]
        for jj in range(R):
            col[jj] = _delta(lq[jj + 1], r[jj + 1], dq[jj + 1])  # Δ
        _expand(col, t, cls, R, dk)
        pen = 0.0
        # np.int64, not the literal 0: while typing this loop Numba would see nh as
        # Literal[int](0) and compile _heapify and _pop a second time for it
        nh = np.int64(0)
        for i in range(D):
            if not free[i]:
                continue
            st = state[i]
            if st == _TIGHT or st == -_TIGHT:
                continue
            acc = 0.0
            mag = 0.0
            for k in range(K):
                acc += dk[k] * AT[i, k]
                mag += abs(dk[k] * AT[i, k])
            if abs(acc) <= 1e-13 * mag:
                acc = 0.0
            w[i] = acc
            if st == _BEYOND:
                pen += rp[i] * acc
            elif st == -_BEYOND:
                pen -= rm[i] * acc
            a_k, _side = _first_kink(v[i], acc, lam * cost[i], st)
            if a_k < np.inf:  # collected unordered: most line searches stop at the first kink
                keys[nh] = max(a_k, 0.0)
                hidx[nh] = i
                nh += 1
        heaped = False
        first = -1
        for h_ in range(nh):
            if first < 0 or _less(keys[h_], hidx[h_], keys[first], hidx[first]):
                first = h_
        adom = np.inf
        for k in range(R + 1):
            if r[k] < 0.0:
                adom = min(adom, -1.0 / r[k])
        a0 = 0.0
        alpha = -1.0
        added = -1
        crossed = False
        while alpha < 0.0:
            if nh > 0:
                top = 0 if heaped else first
                b = keys[top]
                i = hidx[top]
            else:
                b = np.inf
                i = -1
            if jump and not crossed and b >= 1.0:
                alpha = 1.0  # the face's optimum, on this piece: the maximum of the segment
                break
            if b >= acap and acap < adom:
                if _dphi(lq, r, dq, es, R, acap, pen) > 0.0:
                    alpha = acap
                else:
                    alpha = _line_root(lq, r, dq, es, R, pen, a0, acap)
                break
            if b >= adom:
                alpha = _line_root(lq, r, dq, es, R, pen, a0, adom)
                break
            if _dphi(lq, r, dq, es, R, b, pen) <= 0.0:
                alpha = _line_root(lq, r, dq, es, R, pen, a0, b)
                break
            if not heaped:  # past the first kink: order the rest (O(D) heapify)
                _heapify(keys, hidx, nh)
                heaped = True
            i, nh = _pop(keys, hidx, nh)
            if _twin_of_tight(AT, t, cls, R, i, tl, nT, cost):
                # its column is a tight one's, per unit cost (±): v_i stays on its kink with
                # the tight feature's, and the two together make the face singular. Adding it
                # and dropping it again cycled to the iteration limit (soak round R, seed 337:
                # two identical columns at logits 3.75·10⁷); the tight twin moves for both
                a0 = b
                continue
            st = state[i]
            a_k, side = _first_kink(v[i], w[i], lam * cost[i], st)
            room = rp[i] if side > 0 else rm[i]
            if st == _IN:
                if room == np.inf:  # a wall
                    alpha = b
                    added = i
                    state[i] = side * _TIGHT
                    break
                newpen = pen + (rp[i] * w[i] if side > 0 else -rm[i] * w[i])
                if _dphi(lq, r, dq, es, R, b, newpen) <= 0.0:
                    alpha = b
                    added = i
                    state[i] = side * _TIGHT
                    break
                state[i] = side * _BEYOND
                pen = newpen
                crossed = True
            else:  # beyond, crossing back inside
                newpen = pen - (rp[i] * w[i] if st > 0 else -rm[i] * w[i])
                if _dphi(lq, r, dq, es, R, b, newpen) <= 0.0:
                    alpha = b
                    added = i
                    state[i] = side * _TIGHT
                    break
                state[i] = _IN
                pen = newpen
                crossed = True
                # np.int8 (the type of state[i]): the literal _IN would compile it twice
                a_n, _s = _first_kink(v[i], w[i], lam * cost[i], np.int8(_IN))
                if a_n < np.inf:
                    nh = _heap_push(keys, hidx, nh, a_n, i)  # the other side, further on
            a0 = b
        if added >= 0 and nT == R:  # never: R independent tight columns leave no direction
            state[added] = _IN
            return it, _NUMERIC, nT
        if added >= 0:
            tl[nT] = added
            mu[nT] = 0.0
            nT += 1
        if jump and alpha == 1.0:
            for k in range(R + 1):
                lq[k] = lqs[k]
        else:
            for k in range(R + 1):
                lq[k] += _log_step(alpha, r[k], dq[k])
        same = True
        for k in range(R + 1):
            same = same and lq[k] == lq_top[k]
            if not lq[k] == lq[k]:  # NaN: no iteration can recover it
                return it + 1, _NUMERIC, nT
        # an iteration that ends where it started (α = 0, or a jump back to the face's optimum
        # that _restore had moved by an ulp: at logits 10⁸ the optimum is reached, but its
        # rounding-level growth r ~ 1e-8 stays above the test above) would repeat itself to the
        # iteration limit: a stall
        if added < 0 and (alpha <= 0.0 or same):
            stall += 1
        else:
            stall = 0
    return max_iter, _MAXITER, nT


@kernel()
def _classes(K, t):
    cls = np.empty(K - 1, dtype=np.int64)
    j = 0
    for k in range(K):
        if k != t:
            cls[j] = k
            j += 1
    return cls


@kernel()
def _cold_start(AT, t, cls, mbar, lam, cost, free, rp, rm, lq, state):
    """Set a strictly feasible dual point: the probabilities at x̄, scaled to |M_iᵀq| < λc_i.

    Returns nT = 0 (no tight feature); ``state``: inside, or beyond where the room is finite
    and |v_i| > λ c_i.
    """
    D, K = AT.shape
    R = K - 1
    _log_nontarget(mbar, R, lq)
    qs = np.empty(R)
    for j in range(R):
        qs[j] = math.exp(lq[j + 1])
    qk = np.empty(K)
    _expand(qs, t, cls, R, qk)
    s = 1.0
    for i in range(D):
        state[i] = _IN
        if not free[i]:
            continue
        v = 0.0
        for k in range(K):
            v += qk[k] * AT[i, k]
        room = rp[i] if v > 0.0 else rm[i]
        if room == np.inf and abs(v) > 0.0:
            s = min(s, 0.5 * lam * cost[i] / abs(v))
    if s < 1.0:  # q ← s q: q_0 = 1 − s (1 − q_0) = s q_0 + (1 − s)
        q0 = math.exp(lq[0])
        for j in range(R):
            lq[j + 1] += math.log(s)
        lq[0] = math.log(s * q0 + (1.0 - s))
        for j in range(R):
            qs[j] *= s
        _expand(qs, t, cls, R, qk)
    for i in range(D):
        if not free[i]:
            continue
        v = 0.0
        for k in range(K):
            v += qk[k] * AT[i, k]
        if v > lam * cost[i]:
            state[i] = _BEYOND
        elif v < -lam * cost[i]:
            state[i] = -_BEYOND
    # np.int64, not the literal 0: Numba would type nT as Literal[int](0) and compile lam_dual
    # and its callees a second time for it (4 s of a cold start)
    return np.int64(0)


@kernel()
def _rescale(lq, R, ratio):
    """Rescale q ← ratio·q: the dual point of λ for λ·ratio (every feature keeps its state)."""
    q0 = math.exp(lq[0])
    rest = 1.0 - q0
    new0 = ratio * q0 + (1.0 - ratio) if ratio <= 1.0 else 1.0 - ratio * rest
    if not new0 > 0.0:
        return False
    for j in range(R):
        lq[j + 1] += math.log(ratio)
    lq[0] = math.log(new0)
    return True


@kernel()
def _delta_of(state, tl, nT, mu, rp, rm, free, delta):
    """δ of the dual's answer: 0 inside, the bound beyond, the clipped multiplier on a kink."""
    for i in range(state.shape[0]):
        st = state[i]
        if not free[i] or st == _IN:
            delta[i] = 0.0
        elif st == _BEYOND:
            delta[i] = rp[i]
        elif st == -_BEYOND:
            delta[i] = -rm[i]
        else:
            delta[i] = 0.0
    for a in range(nT):
        i = tl[a]
        d = mu[a]
        if state[i] > 0:
            d = min(max(d, 0.0), rp[i])
        else:
            d = max(min(d, 0.0), -rm[i])
        delta[i] = d


@kernel()
def _margins_of(AT, t, cls, mbar, state, free, delta, m):
    """Write m = m̄ + Σ_i δ_i M_i (the features that moved) into ``m``."""
    R = mbar.shape[0]
    col = np.empty(R)
    for j in range(R):
        m[j] = mbar[j]
    for i in range(state.shape[0]):
        if free[i] and state[i] != _IN and delta[i] != 0.0:
            _mcol(AT, i, t, cls, R, col)
            for j in range(R):
                m[j] += delta[i] * col[j]


@kernel()
def _margins_round(AT, t, cls, mbar, free, delta, m):
    """Write m = m̄ + Σ_i δ_i M_i into ``m``; return mround = max_j |m̄_j| + Σ_i |δ_i M_ij|.

    ε·mround bounds the rounding of the margins so formed; a change e of the margins moves each
    q_j by at most 2 q_j max|e|, so v_i = M_iᵀq is known to 2ε·mround Σ_k |q_k a_ki|.
    """
    R = mbar.shape[0]
    col = np.empty(R)
    acc = np.empty(R)
    for j in range(R):
        m[j] = mbar[j]
        acc[j] = abs(mbar[j])
    for i in range(delta.shape[0]):
        if free[i] and delta[i] != 0.0:
            _mcol(AT, i, t, cls, R, col)
            for j in range(R):
                m[j] += delta[i] * col[j]
                acc[j] += abs(delta[i] * col[j])
    mround = 0.0
    for j in range(R):
        mround = max(mround, acc[j])
    return mround


@kernel()
def _answer_q(AT, t, cls, mbar, free, delta):
    """Return (q in K-space form, mround) at x̄ + δ: the answer's own probabilities."""
    K = AT.shape[1]
    R = K - 1
    m = np.empty(R)
    mround = _margins_round(AT, t, cls, mbar, free, delta, m)
    q = np.empty(R)
    _nontarget(m, R, q)
    qk = np.empty(K)
    _expand(q, t, cls, R, qk)
    return qk, mround


@kernel(inline="always")
def _slope_tol(AT, qk, i, lc, rtol, mround):
    """Return (v_i = M_iᵀq, λc_i, the tolerance of |v_i| against λc_i).

    rtol of λc_i, or 16 times the rounding of v_i, 2ε·mround Σ_k |q_k a_ki| (see
    :func:`_margins_round`), whichever is larger.
    """
    v = 0.0
    sens = 0.0
    for k in range(qk.shape[0]):
        v += qk[k] * AT[i, k]
        sens += abs(qk[k] * AT[i, k])
    return v, lc, max(rtol * lc, 32.0 * _EPS * mround * sens)


@kernel()
def _at_rounding(AT, t, cls, mbar, state, free, d, N, q, F, lam, cost, tl, nT, proba, log_tau):
    """Whether _polish's residual F (at δ = ``d``, q its probabilities) is at rounding level.

    The margins m̄ + Σ δ_i M_i are formed to ε·mround, mround = max_j |m̄_j| + Σ_i |δ_i M_ij|,
    and a change e of the margins moves q_j by at most 2 q_j max|e|: so F_a = M_aᵀq − σλc is
    known to 2ε·mround Σ_j |M_ja| q_j and log p_t to 2ε·mround. At margins of 10⁶ (δ = 1.6·10⁴
    on rows of 10³) that is 1e-7 of λc, and the fixed 1e-9 refused the right structure at every
    λ while the dual ran to its iteration limit (soak round Q, seed 321). Accepted within 16×.
    """
    R = mbar.shape[0]
    m = np.empty(R)
    tol = 32.0 * _EPS * _margins_round(AT, t, cls, mbar, free, d, m)  # 16 × 2ε·mround
    for a in range(nT):
        sens = 0.0
        for j in range(R):
            sens += abs(N[j, a]) * q[j]
        if not abs(F[a]) <= max(1e-9 * lam * cost[tl[a]], tol * sens):
            return False
    if proba and not abs(F[nT]) <= max(1e-9 * (1.0 + abs(log_tau)), tol):
        return False
    return True


@kernel()
def _polish(AT, t, cls, mbar, lam, log_tau, cost, free, rp, rm, state, tl, nT, delta, proba):
    """Newton on the primal KKT system of a fixed structure (the tight features' δ, and λ).

    problem (2): M_aᵀ q(δ) = σ_a λ c_a for the tight a. ``proba``: the same with λ unknown and
    log p_t(δ) = log τ. Returns (λ, converged). ``delta`` is updated when converged.
    """
    R = mbar.shape[0]
    n = nT + 1 if proba else nT
    if n == 0 or (proba and nT == 0):
        return lam, not proba
    m = np.empty(R)
    q = np.empty(R)
    N = np.empty((R, nT))
    col = np.empty(R)
    for a in range(nT):
        _mcol(AT, tl[a], t, cls, R, col)
        for j in range(R):
            N[j, a] = col[j]
    d = delta.copy()
    J = np.empty((n, n))
    F = np.empty(n)
    piv = np.empty(n, dtype=np.int64)
    SN = np.empty((R, nT))
    best = np.inf
    fn = np.inf
    for it in range(31):
        _margins_of(AT, t, cls, mbar, state, free, d, m)
        lpt = _nontarget(m, R, q)
        fn = 0.0
        for a in range(nT):
            i = tl[a]
            acc = 0.0
            for j in range(R):
                acc += N[j, a] * q[j]
            sg = 1.0 if state[i] > 0 else -1.0
            F[a] = acc - sg * lam * cost[i]
            fn = max(fn, abs(F[a]) / (lam * cost[i]))
        if proba:
            F[nT] = lpt - log_tau
            fn = max(fn, abs(F[nT]) / (1.0 + abs(log_tau)))
        if fn <= 4.0 * _EPS or it == 30:
            break
        if it > 3 and fn >= 0.5 * best:
            break  # no longer converging quadratically: at rounding level, or the wrong structure
        best = min(best, fn)
        for a in range(nT):
            s = 0.0
            for j in range(R):
                s += q[j] * N[j, a]
            for j in range(R):
                SN[j, a] = q[j] * (N[j, a] - s)
        for a in range(nT):
            for b2 in range(nT):
                acc = 0.0
                for j in range(R):
                    acc += N[j, a] * SN[j, b2]
                J[a, b2] = -acc
            if proba:
                sg = 1.0 if state[tl[a]] > 0 else -1.0
                J[a, nT] = -sg * cost[tl[a]]
                acc = 0.0
                for j in range(R):
                    acc += q[j] * N[j, a]
                J[nT, a] = acc
        if proba:
            J[nT, nT] = 0.0
        if not _lu_factor(J, piv, n):
            return lam, False
        for a in range(n):
            F[a] = -F[a]
        _lu_solve(J, piv, F, n)
        for a in range(nT):
            d[tl[a]] += F[a]
        if proba:
            lam += F[nT]
            if not lam > 0.0:
                return lam, False
    if not fn <= 1e-9 and not _at_rounding(
        AT, t, cls, mbar, state, free, d, N, q, F, lam, cost, tl, nT, proba, log_tau
    ):
        return lam, False
    for a in range(nT):  # the structure must hold: signs and rooms of the tight features
        i = tl[a]
        if state[i] > 0 and not (0.0 <= d[i] <= rp[i]):
            return lam, False
        if state[i] < 0 and not (-rm[i] <= d[i] <= 0.0):
            return lam, False
    for a in range(nT):
        delta[tl[a]] = d[tl[a]]
    return lam, True


@kernel()
def _kkt_check(AT, t, cls, mbar, lam, cost, free, state, delta, rtol):
    """Whether every feature's state is optimal for λ at δ (the others: by construction)."""
    D = AT.shape[0]
    qk, mround = _answer_q(AT, t, cls, mbar, free, delta)
    for i in range(D):
        if not free[i]:
            continue
        st = state[i]
        if st == _TIGHT or st == -_TIGHT:
            continue
        # rtol of λc, or the rounding of v_i (as _at_rounding accepts for the tight features:
        # a column equal to a tight one's has v_i = ±λc to that rounding, not to rtol; soak
        # round R, seed 337: two identical columns at margins 3.75·10⁵, the right structure
        # refused at every λ and the collapsed bracket's unpolished answer returned)
        v, lc, tol = _slope_tol(AT, qk, i, lam * cost[i], rtol, mround)
        if st == _IN and abs(v) > lc + tol:
            return False
        if st == _BEYOND and v < lc - tol:
            return False
        if st == -_BEYOND and v > -lc + tol:
            return False
    return True


@kernel()
def _finish_row(AT, t, cls, mbar, lam, cost, free, x0, lo, hi, bounded, lq, rp, rm, delta, out):
    """Form x, and return (KKT residual, duality gap, −log p_t) of problem (2) at λ."""
    D, K = AT.shape
    R = K - 1
    for i in range(D):
        d = delta[i]
        if not free[i] or d == 0.0:
            out[i] = x0[i]
        elif bounded and d == rp[i]:  # (unbounded: the box is empty, and rp = inf)
            out[i] = hi[i]
        elif bounded and d == -rm[i]:
            out[i] = lo[i]
        else:
            xi = x0[i] + d
            if bounded:
                xi = min(max(xi, lo[i]), hi[i])
            out[i] = xi
    # margins from the answer's own steps
    m = np.empty(R)
    col = np.empty(R)
    for j in range(R):
        m[j] = mbar[j]
    primal = 0.0
    for i in range(D):
        if free[i] and out[i] != x0[i]:
            st = out[i] - x0[i]
            primal += cost[i] * abs(st)
            _mcol(AT, i, t, cls, R, col)
            for j in range(R):
                m[j] += st * col[j]
    q = np.empty(R)
    lpt = _nontarget(m, R, q)
    qk = np.empty(K)
    _expand(q, t, cls, R, qk)
    # the KKT residual: the least element of λ c ∂|δ| − v + N_box per feature
    r2 = 0.0
    for i in range(D):
        if not free[i]:
            continue
        v = 0.0
        for k in range(K):
            v += qk[k] * AT[i, k]
        g = -v
        lc = lam * cost[i]
        d = out[i] - x0[i]
        if d > 0.0:
            lo_v = g + lc
            hi_v = lo_v
        elif d < 0.0:
            lo_v = g - lc
            hi_v = lo_v
        else:
            lo_v = g - lc
            hi_v = g + lc
        if bounded:
            if out[i] >= hi[i]:
                hi_v = np.inf
            if out[i] <= lo[i]:
                lo_v = -np.inf
        res = lo_v if lo_v > 0.0 else (-hi_v if hi_v < 0.0 else 0.0)
        r2 += res * res
    # the dual value Ψ at the answer's own probabilities q (the dual optimum when the answer is
    # optimal; a hard constraint |v_i| ≤ λc_i that q misses by rounding is not charged)
    dual = lpt * math.exp(lpt) * -1.0
    for j in range(R):
        if q[j] > 0.0:
            dual -= mbar[j] * q[j] + q[j] * math.log(q[j])
    for i in range(D):
        if not free[i]:
            continue
        v = 0.0
        for k in range(K):
            v += qk[k] * AT[i, k]
        lc = lam * cost[i]
        if v > lc and rp[i] < np.inf:
            dual -= rp[i] * (v - lc)
        elif v < -lc and rm[i] < np.inf:
            dual -= rm[i] * (-v - lc)
    obj = lam * primal - lpt
    return math.sqrt(r2), obj - dual, -lpt


@kernel()
def _rooms(x0, lo, hi, bounded, free):
    D = x0.shape[0]
    rp = np.empty(D)
    rm = np.empty(D)
    for i in range(D):
        if bounded:
            rp[i] = max(hi[i] - x0[i], 0.0)
            rm[i] = max(x0[i] - lo[i], 0.0)
        else:
            rp[i] = np.inf
            rm[i] = np.inf
    return rp, rm


@kernel()
def softmax_lam_one(AT, zbar, t, lam, cost, free, x0, lo, hi, bounded, max_iter, out):
    """Problem (2) with the L1 cost for one query of a softmax model.

    Returns (nit, status, KKT residual, duality gap, n_moved).
    """
    D, K = AT.shape
    R = K - 1
    cls = _classes(K, t)
    mbar = np.empty(R)
    for j in range(R):
        mbar[j] = zbar[t] - zbar[cls[j]]
    rp, rm = _rooms(x0, lo, hi, bounded, free)
    lq = np.empty(R + 1)
    state = np.zeros(D, dtype=np.int8)
    tl = np.empty(R + 1, dtype=np.int64)
    mu = np.empty(R + 1)
    delta = np.zeros(D)
    nT = _cold_start(AT, t, cls, mbar, lam, cost, free, rp, rm, lq, state)
    nit, status, nT = lam_dual(
        AT, t, mbar, lam, cost, free, rp, rm, lq, state, tl, nT, mu, max_iter
    )
    _delta_of(state, tl, nT, mu, rp, rm, free, delta)
    if status == _OK:
        _polish(AT, t, cls, mbar, lam, 0.0, cost, free, rp, rm, state, tl, nT, delta, _NO)
    # the certificate: the answer's own KKT conditions. Where they fail (or the dual ran out of
    # iterations), once more from the answer's probabilities; an answer that still fails them
    # is a numerical failure, never "the optimum"
    if (status == _OK or status == _MAXITER) and not (
        status == _OK and _primal_ok(AT, t, cls, mbar, lam, cost, free, rp, rm, delta)
    ):
        nT = _restart(AT, t, cls, mbar, lam, cost, free, rp, rm, lq, state, delta)
        it2, status, nT = lam_dual(
            AT, t, mbar, lam, cost, free, rp, rm, lq, state, tl, nT, mu, max_iter
        )
        nit += it2
        _delta_of(state, tl, nT, mu, rp, rm, free, delta)
        if status == _OK:
            _polish(AT, t, cls, mbar, lam, 0.0, cost, free, rp, rm, state, tl, nT, delta, _NO)
            if not _primal_ok(AT, t, cls, mbar, lam, cost, free, rp, rm, delta):
                status = _NUMERIC
    gn, gap, _f = _finish_row(
        AT, t, cls, mbar, lam, cost, free, x0, lo, hi, bounded, lq, rp, rm, delta, out
    )
    nm = 0
    for i in range(D):
        if out[i] != x0[i]:
            nm += 1
    return nit, status, gn, gap, nm


@kernel()
def _primal_ok(AT, t, cls, mbar, lam, cost, free, rp, rm, delta):
    """Whether δ meets the KKT conditions of problem (2) at λ, at its own probabilities.

    v_i = M_iᵀq(δ) must be λc_i where δ_i > 0, −λc_i where δ_i < 0 (one-sided at a bound of the
    box) and within ±λc_i where δ_i = 0; each to 1e-8 of λc_i or to the rounding of v_i
    (2ε·mround Σ_k |q_k a_ki|, times 16, mround the largest margin term as in _at_rounding).
    This is the primal side only: it does not trust the dual's probabilities, which can hold a
    class underflowed to e⁻¹⁰⁶ that the answer's own probabilities put at 0.98.
    """
    D = AT.shape[0]
    qk, mround = _answer_q(AT, t, cls, mbar, free, delta)
    for i in range(D):
        if not free[i]:
            continue
        v, lc, tol = _slope_tol(AT, qk, i, lam * cost[i], 1e-8, mround)
        d = delta[i]
        if d > 0.0:
            bad = (lc - v > tol) or (v - lc > tol and d < rp[i])
        elif d < 0.0:
            bad = (v + lc > tol) or (-lc - v > tol and -d < rm[i])
        else:
            bad = (v - lc > tol and rp[i] > 0.0) or (-lc - v > tol and rm[i] > 0.0)
        if bad or not v == v:
            return False
    return True


@kernel()
def _restart(AT, t, cls, mbar, lam, cost, free, rp, rm, lq, state, delta):
    """Cold-start the dual from the probabilities at x̄ + δ, not at x̄. Returns nT = 0.

    The dual moves a class's log-probability by a bounded amount per iteration: a class at
    q ~ e⁻⁹⁸⁰⁰⁰⁰ at x̄ that the answer needs at 0.98 (a competitor whose row the moved features
    barely touch) was still at e⁻⁹⁸⁰⁰⁰⁰ when the dual stalled, and it stopped on the wrong face
    (soak round Q, seed 321: a duality gap of 4·10⁴, called the optimum).
    """
    R = mbar.shape[0]
    m = np.empty(R)
    col = np.empty(R)
    for j in range(R):
        m[j] = mbar[j]
    for i in range(delta.shape[0]):
        if free[i] and delta[i] != 0.0:
            _mcol(AT, i, t, cls, R, col)
            for j in range(R):
                m[j] += delta[i] * col[j]
    return _cold_start(AT, t, cls, m, lam, cost, free, rp, rm, lq, state)


@kernel()
def _box_floor(AT, t, cls, mbar, free, rp, rm, state, delta):
    """Return a lower bound of −log p_t over the box: its linearisation at δ, minimised there.

    −log p_t is convex, so F(δ) + ∇F(δ)ᵀ(δ' − δ) ≤ F(δ') for every δ'; the minimum over the box
    is −∞ when a feature with ∇F_i ≠ 0 has an infinite room on the descent side.
    """
    D, K = AT.shape
    R = K - 1
    m = np.empty(R)
    q = np.empty(R)
    _margins_of(AT, t, cls, mbar, state, free, delta, m)
    lpt = _nontarget(m, R, q)
    qk = np.empty(K)
    _expand(q, t, cls, R, qk)
    fl = -lpt
    for i in range(D):
        if not free[i]:
            continue
        v = 0.0
        for k in range(K):
            v += qk[k] * AT[i, k]
        g = -v  # ∂F/∂δ_i
        if g < 0.0:  # F falls as δ_i rises: up to its room
            if rp[i] == np.inf:
                return -np.inf
            fl += g * (rp[i] - delta[i])
        elif g > 0.0:
            if rm[i] == np.inf:
                return -np.inf
            fl += g * (-rm[i] - delta[i])
    return fl


@kernel()
def softmax_proba_one(AT, zbar, t, log_tau, cost, free, x0, lo, hi, bounded, max_iter, out):
    """``proba=τ`` with the L1 cost for one query of a softmax model: a search over λ.

    p_t(x*(λ)) is continuous and nonincreasing in λ; x*(λ) = x̄ for λ ≥ λ₀ = max_i |v̄_i|/c_i.
    A bracket in log λ, then regula falsi (Illinois), each λ solved by :func:`lam_dual`
    (warm-started by rescaling the dual point, which keeps every feature's state); at each λ
    the KKT system of ``proba=`` on the structure found (the tight features' δ and λ, with
    log p_t = log τ) is solved by Newton (:func:`_polish`) and accepted when every feature's
    state is optimal there. Returns (λ, nit, status, gap), gap = Σc|δ| minus the Lagrangian
    lower bound (Ψ_λ(q) + log τ)/λ.
    """
    D, K = AT.shape
    R = K - 1
    cls = _classes(K, t)
    mbar = np.empty(R)
    for j in range(R):
        mbar[j] = zbar[t] - zbar[cls[j]]
    for i in range(D):
        out[i] = x0[i]
    lq = np.empty(R + 1)
    _log_nontarget(mbar, R, lq)
    if lq[0] >= log_tau:
        return np.nan, 0, _OK, 0.0
    rp, rm = _rooms(x0, lo, hi, bounded, free)
    qs = np.empty(R)
    for j in range(R):
        qs[j] = math.exp(lq[j + 1])
    qk = np.empty(K)
    _expand(qs, t, cls, R, qk)
    lam0 = 0.0
    for i in range(D):
        if not free[i]:
            continue
        v = 0.0
        for k in range(K):
            v += qk[k] * AT[i, k]
        room = rp[i] if v > 0.0 else rm[i]
        if room > 0.0:
            lam0 = max(lam0, abs(v) / cost[i])
    anyw = False
    for i in range(D):
        if free[i]:
            for k in range(K):
                if k != t and AT[i, k] != AT[i, t]:
                    anyw = True
    if not anyw:
        return np.nan, 0, _UNREACHABLE, np.nan
    if lam0 == 0.0:
        return np.nan, 0, _INFEASIBLE, np.nan
    state = np.zeros(D, dtype=np.int8)
    tl = np.empty(R + 1, dtype=np.int64)
    mu = np.empty(R + 1)
    delta = np.zeros(D)
    m = np.empty(R)
    q = np.empty(R)
    nit = 0
    lam_prev = -1.0
    nT = 0
    lo_l = -np.inf  # log λ with h ≥ 0 (p_t ≥ τ)
    hi_l = math.log(lam0)  # log λ with h < 0
    h_lo = 0.0
    h_hi = 0.0
    side = 0
    ll = hi_l - math.log(2.0)
    step = math.log(10.0)
    lam = lam0
    status = _MAXITER
    for _outer in range(200):
        lam = math.exp(ll)
        if lam == 0.0:
            # λ underflowed on the way down to the floor below (λ₀ ~ 1e-5 and ll < −745): the
            # floor's verdict, a few steps early. Rescaled by 0, the dual point took log 0
            # (math domain error run as Python, CI's no-JIT stage; −inf compiled)
            return lam_prev, nit, _INFEASIBLE, np.nan
        warm = lam_prev > 0.0 and _rescale(lq, R, lam / lam_prev)
        if not warm:
            nT = _cold_start(AT, t, cls, mbar, lam, cost, free, rp, rm, lq, state)
        it, st, nT = lam_dual(AT, t, mbar, lam, cost, free, rp, rm, lq, state, tl, nT, mu, max_iter)
        nit += it
        if st == _MAXITER:  # once more from the probabilities of its answer (see _restart)
            _delta_of(state, tl, nT, mu, rp, rm, free, delta)
            nT = _restart(AT, t, cls, mbar, lam, cost, free, rp, rm, lq, state, delta)
            it, st, nT = lam_dual(
                AT, t, mbar, lam, cost, free, rp, rm, lq, state, tl, nT, mu, max_iter
            )
            nit += it
        if st != _OK:
            return lam, nit, st, np.nan
        lam_prev = lam
        _delta_of(state, tl, nT, mu, rp, rm, free, delta)
        # the exact answer of this structure, if it is the optimal one
        trial = delta.copy()
        lam_s, conv = _polish(
            AT, t, cls, mbar, lam, log_tau, cost, free, rp, rm, state, tl, nT, trial, _YES
        )
        if conv and _kkt_check(AT, t, cls, mbar, lam_s, cost, free, state, trial, 1e-11):
            delta[:] = trial
            lam = lam_s
            status = _OK
            break
        _margins_of(AT, t, cls, mbar, state, free, delta, m)
        h = _nontarget(m, R, q) - log_tau
        if h >= 0.0:
            lo_l, h_lo = ll, h
            if side == 1:
                h_hi *= 0.5
            side = 1
        else:
            hi_l, h_hi = ll, h
            if side == -1:
                h_lo *= 0.5
            side = -1
        if lo_l == -np.inf:  # no bracket yet: λ smaller, in growing steps
            # infeasible when even the box's floor of −log p_t is above −log τ (certified), or
            # at λ ~ e^−700 λ₀ (no box: p_t's supremum below τ)
            if _box_floor(AT, t, cls, mbar, free, rp, rm, state, delta) > -log_tau:
                return lam, nit, _INFEASIBLE, np.nan
            if ll < math.log(lam0) - 700.0:
                return lam, nit, _INFEASIBLE, np.nan
            ll -= step
            step *= 2.0
            continue
        if hi_l - lo_l <= 4.0 * _EPS * max(1.0, abs(hi_l)):
            # the bracket has collapsed without a structure to polish (p_t jumps over τ only
            # by rounding): the answer of the side with p_t ≥ τ
            lam = math.exp(lo_l)
            if _rescale(lq, R, lam / lam_prev):
                it, st, nT = lam_dual(
                    AT, t, mbar, lam, cost, free, rp, rm, lq, state, tl, nT, mu, max_iter
                )
                nit += it
                _delta_of(state, tl, nT, mu, rp, rm, free, delta)
                lam_prev = lam
                status = st
            break
        ll = (lo_l * (-h_hi) + hi_l * h_lo) / (h_lo - h_hi)  # regula falsi in log λ
        if not (lo_l < ll < hi_l):
            ll = 0.5 * (lo_l + hi_l)
    if status != _OK:
        return lam, nit, status, np.nan
    # the certificate: the dual of problem (2) at λ, at the answer's probabilities
    _gn, gap, fval = _finish_row(
        AT, t, cls, mbar, lam, cost, free, x0, lo, hi, bounded, lq, rp, rm, delta, out
    )
    # problem (2) at λ: gap = λΣc|δ| + F − Ψ. proba=: Σc|δ| − (Ψ − ℓ)/λ with ℓ = −log τ, the
    # Lagrangian bound, = gap/λ + (ℓ − F)/λ
    return lam, nit, _OK, gap / lam + (-log_tau - fval) / lam


@kernel()
def _sm_lam_row(n, AT, Zbar, tidx, lams, cost, free, X0, lo, hi, bounded, max_iter, out):
    X, nit, status, gn, gap, nmv = out
    lo_r = lo[n] if lo.shape[0] > 1 else lo[0]
    hi_r = hi[n] if hi.shape[0] > 1 else hi[0]
    nit[n], status[n], gn[n], gap[n], nmv[n] = softmax_lam_one(
        AT, Zbar[n], tidx[n], lams[n], cost, free, X0[n], lo_r, hi_r, bounded, max_iter, X[n]
    )


@kernel()
def _sm_lam_out(N, D):
    return (
        np.empty((N, D)), np.empty(N, dtype=np.int64), np.empty(N, dtype=np.int64),
        np.empty(N), np.empty(N), np.empty(N, dtype=np.int64),
    )  # fmt: skip


@kernel()
def _sm_lam_serial(AT, Zbar, tidx, lams, cost, free, X0, lo, hi, bounded, max_iter):
    N, D = X0.shape
    out = _sm_lam_out(N, D)
    for n in range(N):
        _sm_lam_row(n, AT, Zbar, tidx, lams, cost, free, X0, lo, hi, bounded, max_iter, out)
    return out


@kernel(parallel=True)
def _sm_lam_parallel(AT, Zbar, tidx, lams, cost, free, X0, lo, hi, bounded, max_iter):
    N, D = X0.shape
    out = _sm_lam_out(N, D)
    for n in prange(N):
        _sm_lam_row(
            np.int64(n), AT, Zbar, tidx, lams, cost, free, X0, lo, hi, bounded, max_iter, out
        )
    return out


def softmax_lam_batch(AT, Zbar, tidx, lams, cost, free, X0, lo, hi, bounded, max_iter, parallel):
    """Problem (2) with the L1 cost for N queries of a softmax model (:func:`softmax_lam_one`).

    Returns (X, nit, status, KKT residual, duality gap, n_moved).
    """
    args = (AT, Zbar, tidx, lams, cost, free, X0, lo, hi, bounded, max_iter)
    return _sm_lam_parallel(*args) if parallel else _sm_lam_serial(*args)


@kernel()
def _sm_proba_row(n, AT, Zbar, tidx, log_tau, cost, free, X0, lo, hi, bounded, max_iter, out):
    X, lam, nit, status, gap = out
    lo_r = lo[n] if lo.shape[0] > 1 else lo[0]
    hi_r = hi[n] if hi.shape[0] > 1 else hi[0]
    lam[n], nit[n], status[n], gap[n] = softmax_proba_one(
        AT, Zbar[n], tidx[n], log_tau[n], cost, free, X0[n], lo_r, hi_r, bounded, max_iter, X[n]
    )


@kernel()
def _sm_proba_out(N, D):
    return (
        np.empty((N, D)), np.empty(N), np.empty(N, dtype=np.int64),
        np.empty(N, dtype=np.int64), np.empty(N),
    )  # fmt: skip


@kernel()
def _sm_proba_serial(AT, Zbar, tidx, log_tau, cost, free, X0, lo, hi, bounded, max_iter):
    N, D = X0.shape
    out = _sm_proba_out(N, D)
    for n in range(N):
        _sm_proba_row(n, AT, Zbar, tidx, log_tau, cost, free, X0, lo, hi, bounded, max_iter, out)
    return out


@kernel(parallel=True)
def _sm_proba_parallel(AT, Zbar, tidx, log_tau, cost, free, X0, lo, hi, bounded, max_iter):
    N, D = X0.shape
    out = _sm_proba_out(N, D)
    for n in prange(N):
        _sm_proba_row(
            np.int64(n), AT, Zbar, tidx, log_tau, cost, free, X0, lo, hi, bounded, max_iter, out
        )
    return out


def softmax_proba_batch(
    AT, Zbar, tidx, log_tau, cost, free, X0, lo, hi, bounded, max_iter, parallel
):
    """``proba=τ`` with the L1 cost for N queries of a softmax model (:func:`softmax_proba_one`).

    ``log_tau`` (N,): log τ per row. Returns (X, λ, nit, status, gap).
    """
    args = (AT, Zbar, tidx, log_tau, cost, free, X0, lo, hi, bounded, max_iter)
    return _sm_proba_parallel(*args) if parallel else _sm_proba_serial(*args)
