"""Warm-started SMO for the constrained SVM dual (EnumSV, paper 003).

The dual, written as libsvm writes it (a minimisation)::

    min_α  ½ αᵀQα − eᵀα    s.t.  0 ≤ α_i ≤ C,  Σ y_i α_i = 0,  α_i = 0 for i ∉ S

with ``Q_ij = y_i y_j k(x_i, x_j)``. The paper's objective is ``f(α) = eᵀα − ½ αᵀQα`` (maximised),
so ``f = −(libsvm objective)``.

Q is given by a :class:`QSpec` (the data, the labels and the kernel) and its rows live in a
:class:`RowCache`: ``rows`` has ``m`` slots of length ``n``; ``slot_of[i]`` is the slot holding
row ``i`` (−1 if none), ``owner[s]`` the row held by slot ``s``, ``stamp[s]`` its last use. When
``m >= n`` nothing is ever evicted and the cache is the dense matrix, filled lazily; otherwise the
least recently used row is evicted (a linear scan over the slots: simple, and cheap next to
computing a row). ``counters`` = [clock, slots in use, rows computed, rows evicted]. Both records
are made once per enumeration and passed whole to every kernel (Numba takes a named tuple of
arrays and scalars as one argument and caches the kernels compiled for it).

Everything here is deterministic (sequential loops, fixed tie-breaking): the same warm start and
the same active set give bit-identical α.
"""

from typing import NamedTuple

import numpy as np

from fastcf._kernels import kernel
from fastcf._kernels.linalg import inverse_add, inverse_remove, invert
from fastcf._status import Status

__all__ = [
    "KIND_LINEAR",
    "KIND_POLY",
    "KIND_RBF",
    "KIND_SIGMOID",
    "KIND_PRECOMPUTED",
    "QSpec",
    "RowCache",
    "kernel_block",
    "kernel_diag",
    "make_cache",
    "get_row",
    "solve",
    "solve_children",
]

KIND_LINEAR = 0
KIND_POLY = 1
KIND_RBF = 2
KIND_SIGMOID = 3
KIND_PRECOMPUTED = 4

_OK = int(Status.OK)
_MAXITER = int(Status.MAXITER)
#: the subset holds a single class: α = 0 is its only feasible point, not an SVM
_DEGENERATE = int(Status.DEGENERATE)

LOOSE_TOL = 1e-3  # SMO's tolerance before the exact active-set step
TAU = 1e-12  # libsvm's guard for a non-positive curvature along the working pair


class QSpec(NamedTuple):
    """The matrix Q of the dual, ``Q_ij = y_i y_j k(x_i, x_j)``, by what defines it.

    ``kind, gamma, coef0, degree`` are :class:`fastcf._svm.model.KernelSpec`'s ``params``; for
    ``KIND_PRECOMPUTED`` X is the Gram matrix.
    """

    X: np.ndarray  # (n, d) float64 training data, or the (n, n) Gram matrix
    y: np.ndarray  # (n,) float64 labels ±1
    kind: int  # KIND_*
    gamma: float
    coef0: float
    degree: float


class RowCache(NamedTuple):
    """The rows of Q computed so far (module docstring); :func:`make_cache` allocates one."""

    rows: np.ndarray  # (m, n) float64: m slots
    slot_of: np.ndarray  # (n,) int64: the slot of each row, −1 if none
    owner: np.ndarray  # (m,) int64: the row of each slot, −1 if none
    stamp: np.ndarray  # (m,) int64: the clock of each slot's last use
    counters: np.ndarray  # (4,) int64: clock, slots in use, rows computed, rows evicted


@kernel()
def _kval(A, i, B, j, kind, gamma, coef0, degree):
    """k(A[i], B[j]) for the vector kernels (not for ``KIND_PRECOMPUTED``)."""
    d = A.shape[1]
    if kind == KIND_RBF:
        s = 0.0
        for t in range(d):
            diff = A[i, t] - B[j, t]
            s += diff * diff
        return np.exp(-gamma * s)
    s = 0.0
    for t in range(d):
        s += A[i, t] * B[j, t]
    if kind == KIND_LINEAR:
        return s
    if kind == KIND_POLY:
        return (gamma * s + coef0) ** degree
    return np.tanh(gamma * s + coef0)  # KIND_SIGMOID


@kernel()
def kernel_block(A, B, kind, gamma, coef0, degree):
    """Kernel matrix ``K[p, q] = k(A[p], B[q])``, shape (len(A), len(B))."""
    m = A.shape[0]
    p = B.shape[0]
    out = np.empty((m, p))
    for a in range(m):
        for b in range(p):
            out[a, b] = _kval(A, a, B, b, kind, gamma, coef0, degree)
    return out


@kernel()
def kernel_diag(X, kind, gamma, coef0, degree):
    """Diagonal ``k(x_i, x_i)``; for ``KIND_PRECOMPUTED`` X is the Gram matrix."""
    n = X.shape[0]
    out = np.empty(n)
    for i in range(n):
        if kind == KIND_PRECOMPUTED:
            out[i] = X[i, i]
        else:
            out[i] = _kval(X, i, X, i, kind, gamma, coef0, degree)
    return out


def make_cache(n, n_slots):
    """Allocate an empty :class:`RowCache` with ``n_slots`` rows of length ``n`` (plain NumPy).

    At least 2 slots (:func:`_smo_loop` holds two rows at once), at most ``n``.
    """
    n_slots = max(2, min(int(n_slots), int(n)))
    rows = np.empty((n_slots, n))
    slot_of = np.full(n, -1, dtype=np.int64)
    owner = np.full(n_slots, -1, dtype=np.int64)
    stamp = np.zeros(n_slots, dtype=np.int64)
    counters = np.zeros(4, dtype=np.int64)
    return RowCache(rows, slot_of, owner, stamp, counters)


@kernel()
def get_row(i, q, cache):
    """Row ``i`` of Q (``y_i y_j k(x_i, x_j)`` for all j), from ``cache`` or computed into it.

    ``q`` is the :class:`QSpec` of Q, ``cache`` its :class:`RowCache`.

    Literal arguments: a caller's variable that starts as a constant (``i = -1`` before the loop
    that finds i) is typed ``Literal[int](-1)`` for a while during Numba's type inference, and
    the call is compiled for that type too (a second specialisation of this kernel and of
    :func:`_kval`, nearly a second of compile time never used). The callers start such
    variables as ``np.int64(-1)``.
    """
    X, y, kind, gamma, coef0, degree = q
    rows, slot_of, owner, stamp, counters = cache
    counters[0] += 1
    s = slot_of[i]
    if s >= 0:
        stamp[s] = counters[0]
        return rows[s]
    m = rows.shape[0]
    if counters[1] < m:
        s = counters[1]
        counters[1] += 1
    else:  # evict the least recently used row
        s = 0
        for t in range(1, m):
            if stamp[t] < stamp[s]:
                s = t
        slot_of[owner[s]] = -1
        counters[3] += 1
    owner[s] = i
    slot_of[i] = s
    stamp[s] = counters[0]
    n = X.shape[0]
    row = rows[s]
    yi = y[i]
    if kind == KIND_PRECOMPUTED:
        for j in range(n):
            row[j] = yi * y[j] * X[i, j]
    else:
        for j in range(n):
            row[j] = yi * y[j] * _kval(X, i, X, j, kind, gamma, coef0, degree)
    counters[2] += 1
    return row


@kernel()
def _init_gradient(alpha, act, G, q, cache):
    """G = Qα − e (α is zero outside the active indices).

    G is only ever read on the active indices; it is updated on all n entries anyway, because a
    contiguous loop vectorises and an indexed one does not.
    """
    n = G.shape[0]
    G[:] = -1.0
    for t in range(act.shape[0]):
        j = act[t]
        aj = alpha[j]
        if aj != 0.0:
            row = get_row(j, q, cache)
            for k in range(n):
                G[k] += aj * row[k]


@kernel()
def _objective_and_intercept(alpha, act, G, y, C):
    """f(α) = eᵀα − ½αᵀQα = ½ Σ α_i (1 − G_i), and libsvm's intercept b = −ρ."""
    f = 0.0
    nr_free = 0
    sum_free = 0.0
    ub = np.inf
    lb = -np.inf
    for t in range(act.shape[0]):
        i = act[t]
        f += alpha[i] * (1.0 - G[i])
        yG = y[i] * G[i]
        if alpha[i] >= C:
            if y[i] < 0:
                ub = min(ub, yG)
            else:
                lb = max(lb, yG)
        elif alpha[i] <= 0.0:
            if y[i] > 0:
                ub = min(ub, yG)
            else:
                lb = max(lb, yG)
        else:
            nr_free += 1
            sum_free += yG
    if nr_free > 0:
        rho = sum_free / nr_free
    else:
        rho = 0.5 * (ub + lb)
    return 0.5 * f, -rho


@kernel()
def _smo_loop(alpha, act, G, QD, C, q, cache, tol, max_iter):
    """SMO as in libsvm, with second-order working-set selection (WSS2, Fan et al. 2005).

    Returns (status, n_iter); stops when the maximal violation m(α) − M(α) < tol.
    """
    y = q.y
    n_act = act.shape[0]
    it = 0
    while it < max_iter:
        # --- select i: the maximal violator of the first kind
        Gmax = -np.inf
        i = np.int64(-1)  # not a literal: see get_row's note on literal arguments
        for t in range(n_act):
            k = act[t]
            if y[k] > 0:
                if alpha[k] < C and -G[k] >= Gmax:
                    Gmax = -G[k]
                    i = k
            else:
                if alpha[k] > 0.0 and G[k] >= Gmax:
                    Gmax = G[k]
                    i = k
        if i == -1:
            return _OK, it
        Qi = get_row(i, q, cache)
        # --- select j: the largest second-order decrease of the objective
        Gmax2 = -np.inf
        jbest = np.int64(-1)  # not a literal: see get_row's note on literal arguments
        obj_min = np.inf
        for t in range(n_act):
            k = act[t]
            if y[k] > 0:
                if alpha[k] > 0.0:
                    grad_diff = Gmax + G[k]
                    if G[k] >= Gmax2:
                        Gmax2 = G[k]
                    if grad_diff > 0.0:
                        quad = QD[i] + QD[k] - 2.0 * y[i] * Qi[k]
                        if quad <= 0.0:
                            quad = TAU
                        obj = -(grad_diff * grad_diff) / quad
                        if obj <= obj_min:
                            jbest = k
                            obj_min = obj
            else:
                if alpha[k] < C:
                    grad_diff = Gmax - G[k]
                    if -G[k] >= Gmax2:
                        Gmax2 = -G[k]
                    if grad_diff > 0.0:
                        quad = QD[i] + QD[k] + 2.0 * y[i] * Qi[k]
                        if quad <= 0.0:
                            quad = TAU
                        obj = -(grad_diff * grad_diff) / quad
                        if obj <= obj_min:
                            jbest = k
                            obj_min = obj
        if Gmax + Gmax2 < tol or jbest == -1:
            return _OK, it
        j = jbest
        it += 1
        Qj = get_row(j, q, cache)
        # Qi stays valid: the cache has >= 2 slots and row i was used more recently than any
        # other row but j, so fetching j never evicts it.
        old_ai = alpha[i]
        old_aj = alpha[j]
        ai = old_ai
        aj = old_aj
        if y[i] != y[j]:
            quad = QD[i] + QD[j] + 2.0 * Qi[j]
            if quad <= 0.0:
                quad = TAU
            delta = (-G[i] - G[j]) / quad
            diff = ai - aj
            ai += delta
            aj += delta
            if diff > 0.0:
                if aj < 0.0:
                    aj = 0.0
                    ai = diff
            else:
                if ai < 0.0:
                    ai = 0.0
                    aj = -diff
            if diff > 0.0:  # C_i - C_j = 0
                if ai > C:
                    ai = C
                    aj = C - diff
            else:
                if aj > C:
                    aj = C
                    ai = C + diff
        else:
            quad = QD[i] + QD[j] - 2.0 * Qi[j]
            if quad <= 0.0:
                quad = TAU
            delta = (G[i] - G[j]) / quad
            total = ai + aj
            ai -= delta
            aj += delta
            if total > C:
                if ai > C:
                    ai = C
                    aj = total - C
            else:
                if aj < 0.0:
                    aj = 0.0
                    ai = total
            if total > C:
                if aj > C:
                    aj = C
                    ai = total - C
            else:
                if ai < 0.0:
                    ai = 0.0
                    aj = total
        alpha[i] = ai
        alpha[j] = aj
        dai = ai - old_ai
        daj = aj - old_aj
        for k in range(G.shape[0]):  # all n entries: contiguous (see _init_gradient)
            G[k] += Qi[k] * dai + Qj[k] * daj
    return _MAXITER, it


@kernel()
def _max_violation(alpha, act, G, y, C):
    """m(α) − M(α), SMO's stopping quantity (≤ 0 at an exact optimum)."""
    Gmax = -np.inf
    Gmax2 = -np.inf
    for t in range(act.shape[0]):
        k = act[t]
        if y[k] > 0:
            if alpha[k] < C:
                Gmax = max(Gmax, -G[k])
            if alpha[k] > 0.0:
                Gmax2 = max(Gmax2, G[k])
        else:
            if alpha[k] > 0.0:
                Gmax = max(Gmax, G[k])
            if alpha[k] < C:
                Gmax2 = max(Gmax2, -G[k])
    return Gmax + Gmax2


@kernel()
def _active_set(alpha, act, G, C, q, cache, tol, max_pivots):
    """Primal active-set method started from the feasible ``alpha`` (and its gradient ``G``).

    The free set F = {0 < α < C} is kept; each step solves the equality-constrained KKT system
    on F exactly, [Q_FF y_F; y_Fᵀ 0] [δ; b] = [−G_F; 0], steps towards it until an α hits a bound
    (which then leaves F), and once the full step is taken adds the bounded index that violates
    its KKT condition most. The inverse of the KKT matrix is formed once and then updated by
    bordering (one index in) or deflation (one index out), O(|F|²) per pivot (see
    :mod:`fastcf._kernels.linalg`). A child differs
    from its parent by one index, so a few pivots usually reach the exact optimum. Returns the
    number of pivots, or −1 when it gives up (singular system, no free index, too many pivots,
    F outgrowing its workspace); α stays feasible either way and the caller finishes with SMO.
    """
    y = q.y
    n_act = act.shape[0]
    n = alpha.shape[0]
    inF = np.zeros(n, dtype=np.bool_)
    nF = 0
    for t in range(n_act):
        k = act[t]
        if 0.0 < alpha[k] < C:
            nF += 1
    if nF == 0:
        return -1
    cap = min(n_act, 2 * nF + 32)  # workspace for F; beyond it, give up (SMO takes over)
    F = np.empty(cap, dtype=np.int64)
    nF = 0
    for t in range(n_act):
        k = act[t]
        if 0.0 < alpha[k] < C:
            inF[k] = True
            F[nF] = k
            nF += 1
    # matrix index 0 is the multiplier b (the row y_Fᵀ), index a + 1 is F[a]
    Minv = np.empty((cap + 1, cap + 1))
    M = np.empty((nF + 1, nF + 1))
    M[0, 0] = 0.0
    for a in range(nF):
        row = get_row(F[a], q, cache)
        M[0, a + 1] = y[F[a]]
        M[a + 1, 0] = y[F[a]]
        for c in range(nF):
            M[a + 1, c + 1] = row[F[c]]
    if not invert(M, nF + 1, Minv):
        return -1
    sol = np.empty(cap + 1)
    u = np.empty(cap + 1)
    w = np.empty(cap + 1)
    for piv in range(max_pivots):
        if nF == 0:
            return -1
        m = nF + 1
        # sol = Minv [0; −G_F]
        for i in range(m):
            s = 0.0
            for a in range(nF):
                s -= Minv[i, a + 1] * G[F[a]]
            sol[i] = s
        b = sol[0]
        # The step must keep y_Fᵀα fixed: SMO, which finishes the solve, preserves y_Fᵀα and so
        # would converge to the optimum of the wrong (shifted) equality. A nearly singular KKT
        # matrix that passed the pivot tests (a rank-deficient Q_FF: e.g. the degree-3
        # polynomial kernel of 1-D data has rank 1, or duplicated rows) gives a δ that does not
        # satisfy y_Fᵀδ = 0; found by the fuzz suite as a child whose objective exceeded its
        # parent's. Then give up here: α is still feasible and SMO takes over.
        eq = 0.0
        mass = 0.0
        for a in range(nF):
            eq += y[F[a]] * sol[a + 1]
            mass += abs(sol[a + 1])
        if not abs(eq) <= 1e-9 * mass:  # also catches a NaN
            return -1
        # ratio test: the largest step t <= 1 that keeps 0 <= α_F <= C
        t_step = 1.0
        block = -1
        for a in range(nF):
            k = F[a]
            d = sol[a + 1]
            if d < 0.0:
                tk = -alpha[k] / d
            elif d > 0.0:
                tk = (C - alpha[k]) / d
            else:
                continue
            if tk < t_step:
                t_step = tk
                block = a
        if t_step < 0.0:
            t_step = 0.0
        for a in range(nF):
            k = F[a]
            dk = t_step * sol[a + 1]
            if dk != 0.0:
                row = get_row(k, q, cache)
                for kk in range(n):  # all n entries: contiguous (see _init_gradient)
                    G[kk] += dk * row[kk]
            alpha[k] = min(max(alpha[k] + dk, 0.0), C)
        if block >= 0:
            k = F[block]
            alpha[k] = 0.0 if sol[block + 1] < 0.0 else C
            inF[k] = False
            if not inverse_remove(Minv, m, block + 1):
                return -1
            F[block] = F[nF - 1]
            nF -= 1
            continue
        # full step taken: look for the bounded index violating its KKT condition most
        worst = np.int64(-1)  # not a literal: see get_row's note on literal arguments
        wv = 0.5 * tol
        for t in range(n_act):
            k = act[t]
            if inF[k]:
                continue
            r = G[k] + b * y[k]
            v = -r if alpha[k] <= 0.0 else r
            if v > wv:
                wv = v
                worst = k
        if worst == -1:
            return piv + 1
        if nF == cap:
            return -1
        row = get_row(worst, q, cache)
        u[0] = y[worst]
        for a in range(nF):
            u[a + 1] = row[F[a]]
        if not inverse_add(Minv, m, u, row[worst], w):
            return -1
        inF[worst] = True
        F[nF] = worst
        nF += 1
    return -1


@kernel(inline="always")
def solve(alpha, active, QD, C, q, cache, tol, max_iter, use_active_set):
    """Solve the dual restricted to ``active`` from the feasible start ``alpha`` (in place).

    ``QD`` is the diagonal of Q, ``q`` Q's :class:`QSpec` and ``cache`` its :class:`RowCache`.

    With ``use_active_set`` the exact active-set step runs first (see ``_active_set``); SMO then
    runs from wherever it stopped until the maximal violation is below ``tol`` (zero SMO
    iterations when the active-set step already reached it).

    Returns (status, n_iter, f, b); n_iter counts SMO iterations plus active-set pivots. ``alpha``
    must be feasible (box, equality, zero outside the active set). A single-class active set
    returns status DEGENERATE with α = 0.
    """
    y = q.y
    # the active indices, in order (np.flatnonzero's, without compiling its 0.3 s of generic code)
    n_act = 0
    for j in range(active.shape[0]):
        if active[j]:
            n_act += 1
    act = np.empty(n_act, dtype=np.int64)
    n_act = 0
    for j in range(active.shape[0]):
        if active[j]:
            act[n_act] = j
            n_act += 1
    n_pos = 0
    for t in range(act.shape[0]):
        if y[act[t]] > 0:
            n_pos += 1
    if n_pos == 0 or n_pos == act.shape[0]:
        alpha[:] = 0.0
        return _DEGENERATE, 0, 0.0, 0.0
    G = np.zeros(alpha.shape[0])
    _init_gradient(alpha, act, G, q, cache)
    n_piv = 0
    it = 0
    if _max_violation(alpha, act, G, y, C) < tol:
        # already optimal (e.g. Proposition 1: only non-support indices were removed): α is
        # returned bit-for-bit unchanged
        f, b = _objective_and_intercept(alpha, act, G, y, C)
        return _OK, 0, f, b
    if use_active_set:
        max_piv = 50 + act.shape[0] // 10
        p = _active_set(alpha, act, G, C, q, cache, tol, max_piv)
        n_piv += max(p, 0)
        # SMO to a loose tolerance identifies the free set (cheap: SMO's slow phase is the
        # last digits); the exact KKT solve on that set then replaces the slow phase
        status, it = _smo_loop(alpha, act, G, QD, C, q, cache, max(tol, LOOSE_TOL), max_iter)
        if it > 0:
            _init_gradient(alpha, act, G, q, cache)
            p = _active_set(alpha, act, G, C, q, cache, tol, max_piv)
            n_piv += max(p, 0)
    # SMO to the requested tolerance: zero iterations when the exact step already got there
    status, it2 = _smo_loop(alpha, act, G, QD, C, q, cache, tol, max(max_iter - it, 1))
    it += it2
    if it2 > 0:
        # refresh the gradient so that f and b carry no drift from the incremental updates
        _init_gradient(alpha, act, G, q, cache)
    f, b = _objective_and_intercept(alpha, act, G, y, C)
    return status, it + n_piv, f, b


@kernel()
def remove_and_rebalance(alpha, r, y, active, C):
    """Set α_r = 0 and restore Σ y_i α_i = 0 without enlarging the support.

    After removing α_r the other class carries α_r more mass than r's class. The mass is moved,
    in this order, until none is missing: off the free (0 < α < C) α's of the other class, onto
    the free α's of r's class, off the other class's bounded (α = C) ones — each step
    proportional to the room of each index. Free α's are the ones an optimum moves most easily,
    so this start is close to the child's optimum; the last step is always enough, since
    Σ_other α ≥ α_r at a feasible parent. Deterministic; keeps 0 ≤ α ≤ C.
    """
    ar = alpha[r]
    alpha[r] = 0.0
    if ar <= 0.0:
        return
    yr = y[r]
    other = -yr
    n = alpha.shape[0]
    need = ar
    # the three moves, each on the α_j of class ``cls`` with 0 < α_j < ``hi_excl``: ``take``
    # mass off them (towards 0) or onto them (towards C), proportionally to each one's room. A
    # loop, not three calls of a kernel: one copy of the code, and no kernel level of its own
    for step in range(3):
        cls = yr if step == 1 else other
        hi_excl = np.inf if step == 2 else C
        take = step != 1
        room = 0.0
        for j in range(n):
            if active[j] and y[j] == cls and 0.0 < alpha[j] < hi_excl:
                room += alpha[j] if take else C - alpha[j]
        if room <= 0.0 or need <= 0.0:
            continue
        frac = need / room
        if frac >= 1.0:
            for j in range(n):
                if active[j] and y[j] == cls and 0.0 < alpha[j] < hi_excl:
                    alpha[j] = 0.0 if take else C
            need = need - room
            continue
        for j in range(n):
            if active[j] and y[j] == cls and 0.0 < alpha[j] < hi_excl:
                if take:
                    alpha[j] = min(max(alpha[j] - frac * alpha[j], 0.0), C)
                else:
                    alpha[j] = min(max(alpha[j] + frac * (C - alpha[j]), 0.0), C)
        need = 0.0
    if need > 1e-12 * max(ar, 1.0):  # cannot happen at a feasible parent; stay feasible anyway
        for j in range(alpha.shape[0]):
            alpha[j] = 0.0


@kernel()
def solve_children(
    alpha_parent, active_parent, branch, QD, C, q, cache, tol, max_iter, use_active_set
):
    """Solve α*(S minus {i}) for every i in ``branch``, each warm-started from the parent's α.

    An index i < 0 in ``branch`` solves S itself from the parent's α (the root of Lawler's
    scheme and a warm-started subset: ``fastcf._svm.lawler``): a query compiles this one kernel,
    with :func:`solve` inlined, not :func:`solve` as well (its code linked and optimised twice).

    The other arguments are :func:`solve`'s. Returns alphas (m, n), status (m,), n_iter (m,),
    f (m,), b (m,).
    """
    y = q.y
    m = branch.shape[0]
    n = alpha_parent.shape[0]
    alphas = np.empty((m, n))
    status = np.empty(m, dtype=np.int64)
    n_iter = np.empty(m, dtype=np.int64)
    fs = np.empty(m)
    bs = np.empty(m)
    active = np.empty(n, dtype=np.bool_)
    for c in range(m):
        r = branch[c]
        for j in range(n):
            active[j] = active_parent[j]
            alphas[c, j] = alpha_parent[j]
        a = alphas[c]
        if r >= 0:  # (r < 0: the parent itself, from its own α: the root's solve)
            active[r] = False
            remove_and_rebalance(a, r, y, active, C)
        st, it, f, b = solve(a, active, QD, C, q, cache, tol, max_iter, use_active_set)
        status[c] = st
        n_iter[c] = it
        fs[c] = f
        bs[c] = b
    return alphas, status, n_iter, fs, bs
