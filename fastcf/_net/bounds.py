"""Bounds on every hidden neuron's pre-activation over a query's box.

Interval arithmetic, layer by layer: for ``z = W h + b`` with ``l ≤ h ≤ u``,
``W⁺ l + W⁻ u + b ≤ z ≤ W⁺ u + W⁻ l + b`` (``W⁺``, ``W⁻``: the positive and negative parts),
and ``max(l, 0) ≤ ReLU(z) ≤ max(u, 0)``. A neuron whose bounds keep one sign is *stable*: its
ReLU is affine over the whole box and the program needs no binary variable for it.

With a *budget* (the weighted L1 cost c of an answer already known, so that the optimum lies in
``{x : Σ w_i |x_i − x̄_i| ≤ c}``), the first layer's bounds are exact over the box ∩ that ball:
``max a·x`` there is a fractional knapsack (take the features by |a_i| / w_i, each up to its room
in the box, until the budget is spent), which leaves many more neurons stable near x̄.

The bounds are widened by a relative 1e-9 (and an absolute ``1e-9 · scale``) so that the
rounding of the products never makes a neuron look stable that is not.

Examples
--------
>>> import numpy as np
>>> W = [np.array([[1.0, -1.0]]), np.array([[1.0]])]
>>> b = [np.array([0.0]), np.array([0.0])]
>>> l, u = interval(W, b, np.array([0.0, 0.0]), np.array([1.0, 2.0]), relu=True)
>>> float(l[0][0]) < -1.99, float(u[0][0]) > 0.99
(True, True)
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "interval",
    "budget_first_layer",
    "widen",
    "linear_bounds",
    "box_bounds",
    "target_bound",
    "cheapest",
]


def widen(lo, hi):
    """Return ``(lo, hi)`` widened by a relative 1e-9 of their scale (rounding of the sums)."""
    pad = 1e-9 * (np.abs(lo) + np.abs(hi)) + 1e-12
    return lo - pad, hi + pad


def box_bounds(W, b, lo, hi):
    """Return the least and the largest of ``W h + b`` over the box ``lo ≤ h ≤ hi`` (not widened).

    ``W⁺ lo + W⁻ hi + b`` and ``W⁺ hi + W⁻ lo + b``, W⁺ and W⁻ the positive and negative parts.
    """
    Wp, Wn = np.maximum(W, 0.0), np.minimum(W, 0.0)
    return Wp @ lo + Wn @ hi + b, Wp @ hi + Wn @ lo + b


def interval(W, b, lo, hi, relu=True, first=None):
    """Return the bounds (lists ``l``, ``u``) of each hidden layer's pre-activations.

    Parameters
    ----------
    W, b : sequences of arrays
        The network's layers (:class:`~fastcf._net.model.Net`), the logits' layer last (not
        bounded here).
    lo, hi : ndarray of shape (D,)
        The box of the inputs (finite).
    relu : bool
        Hidden activation ReLU (True) or the identity.
    first : (l, u), optional
        Bounds of the first layer computed otherwise (:func:`budget_first_layer`), intersected
        with the box's.
    """
    ls, us = [], []
    hl, hu = lo, hi
    for i, (Wi, bi) in enumerate(zip(W[:-1], b[:-1], strict=True)):
        zl, zu = widen(*box_bounds(Wi, bi, hl, hu))
        if i == 0 and first is not None:
            zl, zu = np.maximum(zl, first[0]), np.minimum(zu, first[1])
        ls.append(zl)
        us.append(zu)
        hl, hu = (np.maximum(zl, 0.0), np.maximum(zu, 0.0)) if relu else (zl, zu)
    return ls, us


def budget_first_layer(W0, b0, x0, w, lo, hi, budget):
    """Return the bounds of ``W0 x + b0`` over the box ∩ ``{Σ w_i |x_i − x̄_i| ≤ budget}``.

    Each neuron's maximum is a fractional knapsack from x̄ (which must lie in the box): the
    features in decreasing |a_i| / w_i, each moved to its end of the box in a's direction, until
    the budget is spent; its minimum likewise. Widened as :func:`widen`.
    """
    up = np.where(W0 > 0, hi - x0, x0 - lo)  # room in the direction that raises a·x
    dn = np.where(W0 > 0, x0 - lo, hi - x0)  # room in the direction that lowers it
    base = W0 @ x0 + b0
    return widen(
        base - _knapsack(np.abs(W0), w, dn, budget), base + _knapsack(np.abs(W0), w, up, budget)
    )


def _knapsack(G, w, room, budget):
    """Return max Σ_i G_i m_i s.t. 0 ≤ m_i ≤ room_i, Σ w_i m_i ≤ budget, for every row of G."""
    ratio = G / w
    order = np.argsort(-ratio, axis=1, kind="stable")
    Gs = np.take_along_axis(G, order, axis=1)
    cost = np.take_along_axis(room, order, axis=1) * w[order]  # budget to use each feature up
    gain = Gs * np.take_along_axis(room, order, axis=1)
    spent = np.cumsum(cost, axis=1)
    before = spent - cost
    full = spent <= budget
    out = np.where(full, gain, 0.0).sum(axis=1)
    # the first feature that the budget cannot take whole: its fraction
    part = np.argmin(full, axis=1)
    rows = np.flatnonzero(~full.all(axis=1))
    if rows.size:
        j = part[rows]
        left = budget - before[rows, j]
        out[rows] += Gs[rows, j] * left / w[order[rows, j]]
    return out


def _maximize(L, x0, w, lo, hi, budget, radius=np.inf):
    """Return an upper bound of ``L x`` for each row of ``L`` over the box ∩ the balls.

    The box ∩ ``Σ w |x − x̄| ≤ budget``: exact (a fractional knapsack); with a finite
    ``radius``, also the least of that and the maximum over the ellipsoid
    ``Σ (w (x − x̄))² ≤ radius²``, ``L x̄ + radius ‖L / w‖₂`` (a feature of weight 0 is free).
    """
    if not np.isfinite(budget):
        out = np.maximum(L, 0.0) @ hi + np.minimum(L, 0.0) @ lo
    else:
        up = np.where(L > 0, hi - x0, x0 - lo)
        out = L @ x0 + _knapsack(np.abs(L), w, up, budget)
    if np.isfinite(radius) and np.all(w > 0):
        out = np.minimum(out, L @ x0 + radius * np.sqrt(((L / w) ** 2).sum(axis=1)))
    return out


def linear_bounds(W, b, x0, w, lo, hi, budget=np.inf, radius=np.inf):
    """Return the bounds (lists ``l``, ``u``) of each hidden layer's pre-activations, by CROWN.

    Layer by layer, each neuron's pre-activation is bounded above by a linear function of x,
    found backward through the earlier layers (Zhang et al., NeurIPS 2018): where the
    coefficient of a ReLU's output is positive its upper relaxation ``h ≤ s (z − l)``
    (``s = u / (u − l)``) replaces it, where negative its lower one ``h ≥ α z`` (α = 1 where
    ``u ≥ −l``, else 0); a stable neuron is exact. That linear function is maximised over the
    box ∩ the L1 ball of radius ``budget`` around x̄ (a fractional knapsack, or the box's
    corners without a budget; and within ``radius`` in weighted Euclidean terms, where finite:
    :func:`_maximize`); the lower bound likewise, with the signs turned. ReLU networks
    only (an identity layer is affine: :func:`interval` with a budget is then as tight for
    the first layer). Widened as :func:`widen`.
    """
    ls, us = [], []
    slopes = []  # per layer: (s, t, a) of the upper relaxation s z + t and the lower a z
    for Wk, bk in zip(W[:-1], b[:-1], strict=True):
        bounds = []
        for sign in (1.0, -1.0):
            lam, const = _backward(W, b, slopes, sign * Wk, sign * bk)
            bounds.append(_maximize(lam, x0, w, lo, hi, budget, radius) + const)
        zl, zu = widen(-bounds[1], bounds[0])
        ls.append(zl)
        us.append(zu)
        slopes.append(_slopes(zl, zu))
    return ls, us


def _slopes(zl, zu, relu=True):
    """Return ``(s, t, a)``: a layer's ReLU between ``a z`` and ``s z + t`` over ``[zl, zu]``."""
    if not relu:  # (an identity layer: exact)
        one = np.ones(zl.shape)
        return one, np.zeros(zl.shape), one
    unstable = (zl < 0) & (zu > 0)
    on = zl >= 0
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(unstable, zu / (zu - zl), on.astype(np.float64))
    t = np.where(unstable, -s * zl, 0.0)
    a = np.where(unstable, (zu >= -zl).astype(np.float64), on.astype(np.float64))
    return s, t, a


def _backward(W, b, slopes, lam, const):
    """Return ``(Λ, c)``: ``lam · h + const ≤ Λ x + c`` over the region of ``slopes``' bounds.

    ``h``: the output of the layer of ``slopes[-1]``. Each ReLU is replaced by its upper
    relaxation where its coefficient is positive, by its lower one where negative, layer by
    layer down to the input (CROWN's backward pass).
    """
    for m in range(len(slopes) - 1, -1, -1):
        s, t, a = slopes[m]
        pos, neg = np.maximum(lam, 0.0), np.minimum(lam, 0.0)
        coef = pos * s + neg * a  # the relaxed coefficients of z_m
        const = const + pos @ t + coef @ b[m]
        lam = coef @ W[m]
    return lam, const


def target_bound(W, b, ls, us, x0, w, lo, hi, G, g, relu=True, metric="manhattan"):
    """Return a lower bound of the cost of the points of the region meeting ``G h ≥ g``.

    The region: where the bounds ``ls``, ``us`` of every hidden pre-activation hold (the box,
    or the box ∩ an L1 ball: :func:`linear_bounds`); ``h`` the last hidden layer's output. By
    CROWN (as :func:`linear_bounds`), each row holds ``G_k h(x) ≤ Λ_k x + c_k`` there, so an
    answer has ``Λ_k x ≥ g_k − c_k``. The cheapest such x of the box is a fractional knapsack
    from x̄: Manhattan (``Σ w |x − x̄|``), the features in decreasing ``|Λ_ki| / w_i``, each to
    its end of the box, until the row is met, exact; L0 (``Σ w [x ≠ x̄]``), the same with each
    feature's whole gain ``|Λ_ki|`` times its room for ``w_i``, the knapsack's relaxation. The
    bound is the largest over the rows, each row asked less by a bound of the rounding of its
    terms (:func:`cheapest`); ``inf`` where no point of the box meets a row's relaxation (no
    answer in the region).

    Examples
    --------
    >>> import numpy as np
    >>> W = [np.array([[1.0, 0.0]]), np.array([[1.0]])]
    >>> b = [np.array([0.0]), np.array([0.0])]
    >>> lo, hi, x0, w = np.zeros(2), np.ones(2), np.zeros(2), np.array([1.0, 2.0])
    >>> ls, us = linear_bounds(W, b, x0, w, lo, hi)
    >>> G, g = np.array([[1.0]]), np.array([0.5])  # h ≥ 0.5 asks x_0 ≥ 0.5: cost 0.5
    >>> 0.4999 < target_bound(W, b, ls, us, x0, w, lo, hi, G, g) <= 0.5
    True
    """
    slopes = [_slopes(zl, zu, relu) for zl, zu in zip(ls, us, strict=True)]
    G = np.asarray(G, dtype=np.float64)
    lam, const = _backward(W, b, slopes, G, np.zeros(G.shape[0]))
    # the rounding of the backward pass and of Λ x: at most γ times the magnitudes of the terms
    # it adds (the same pass on |W|, |b|, |G| and each ReLU's larger slope), γ = 4 u (the
    # terms of the longest sum: D plus every layer's width) — a generous standard bound
    mag, cmag = np.abs(G), np.abs(g)
    for m in range(len(slopes) - 1, -1, -1):
        s, t, a = slopes[m]
        coef = mag * np.maximum(s, a)
        cmag = cmag + mag @ np.abs(t) + coef @ np.abs(b[m])
        mag = coef @ np.abs(W[m])
    terms = cmag + mag @ np.maximum(np.abs(lo), np.abs(hi))
    gamma = 4.0 * np.finfo(np.float64).eps * (x0.shape[0] + sum(v.shape[0] for v in ls) + 2)
    return cheapest(lam, g - const, x0, w, lo, hi, metric, err=gamma * terms)


def cheapest(L, r, x0, w, lo, hi, metric="manhattan", err=None):
    """Return a lower bound of the cost from x̄ of the points of the box with ``L x ≥ r``.

    Row by row, a fractional knapsack (as :func:`target_bound`): exact for one row and the
    Manhattan cost, the largest over the rows otherwise. ``err``: a bound of the rounding of
    each row's ``r − L x`` over the box (each row is asked that much less), by default a
    relative 1e-9 of its terms; the cost is shaded down by a relative 1e-12 (the knapsack's
    own sums). ``inf`` where the box holds no point meeting a row.
    """
    need = r - L @ x0  # what each row must still gain from x̄
    if err is None:
        err = 1e-9 * (np.abs(r) + np.abs(L) @ np.maximum(np.abs(lo), np.abs(hi))) + 1e-12
    need = need - err
    best = 0.0
    for k in np.flatnonzero(need > 0):
        room = np.where(L[k] > 0, hi - x0, x0 - lo)
        gain = np.abs(L[k]) * room  # the most each feature adds to the row
        cost = w * room if metric == "manhattan" else w.astype(np.float64)
        use = gain > 0
        left = need[k] - gain[use & (w <= 0)].sum()  # (a feature of weight 0 moves for nothing)
        if left <= 0:
            continue
        use &= w > 0
        gain, cost = gain[use], cost[use]
        order = np.argsort(-(gain / cost), kind="stable")
        gain, cost = gain[order], cost[order]
        upto = np.cumsum(gain)
        j = int(np.searchsorted(upto, left))  # the first feature that meets the row
        if j >= gain.size:
            return float(np.inf)
        before = upto[j - 1] if j else 0.0
        best = max(best, float(cost[:j].sum() + cost[j] * (left - before) / gain[j]))
    return best * (1.0 - 1e-12)
