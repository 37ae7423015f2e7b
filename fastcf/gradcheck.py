"""The Taylor test for derivatives (lecture slides 002, "derivative check").

For a smooth f and a direction d,

    |f(x + h d) - f(x)|                 = O(h)     (first order)
    |f(x + h d) - f(x) - h dᵀ∇f(x)|     = O(h²)    (second order, only if ∇f is right)

so halving h must halve the first error and quarter the second one, until rounding takes over.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validation import as_float_array, check_int, check_scalar

__all__ = ["check_gradient", "GradientCheck"]


@dataclass(frozen=True)
class GradientCheck:
    """Result of :func:`check_gradient`.

    Attributes
    ----------
    h : ndarray
        Step lengths, decreasing.
    first_order : ndarray
        ``|f(x + h d) - f(x)|``.
    second_order : ndarray
        ``|f(x + h d) - f(x) - h dᵀ∇f(x)|``.
    order1, order2 : float
        Observed orders of decay: median slope on a log-log scale over the last quarter of the
        steps above the rounding level (the asymptotic regime); ``nan`` when no step is above it.
    passed : bool
        The second-order error decays as O(h²), i.e. order2 is closer to 2 than to 1
        (order2 >= 1.5: the last steps of a wrong gradient decay as O(h), while a right one can
        read below 2 where a third-order term still bends the curve, e.g. ½x² + sin x at
        x = −406.8); or it stays at rounding level over all steps while the first-order error
        does not (e.g. an exact gradient of a quadratic).
    """

    h: np.ndarray
    first_order: np.ndarray
    second_order: np.ndarray
    order1: float
    order2: float
    passed: bool

    def table(self) -> str:
        """Return the Taylor table as text: h, first-order error, second-order error."""
        rows = [f"{'h':>10} {'|f(x+hd)-f(x)|':>18} {'|f(x+hd)-f(x)-h dᵀg|':>22}"]
        for h, e1, e2 in zip(self.h, self.first_order, self.second_order, strict=True):
            rows.append(f"{h:10.3e} {e1:18.6e} {e2:22.6e}")
        rows.append(f"observed orders: {self.order1:.2f} (expect 1), {self.order2:.2f} (expect 2)")
        return "\n".join(rows)

    def __repr__(self) -> str:
        return (
            f"GradientCheck(passed={self.passed}, order1={self.order1:.3f}, "
            f"order2={self.order2:.3f}, n_steps={self.h.size})"
        )


def _median_order(h, err, floor):
    ok = err > floor
    slopes = []
    for i in range(len(h) - 1):
        if ok[i] and ok[i + 1] and err[i + 1] > 0:
            slopes.append(np.log(err[i] / err[i + 1]) / np.log(h[i] / h[i + 1]))
    # the asymptotic regime is at the smallest steps above the rounding floor: use the last
    # quarter of the valid pairs (at least 3). Not the smaller half: where a wrong slope's O(h)
    # error crosses a strong curvature's O(h²) term late (H = 1000·11ᵀ + I), the half mixes both
    # regimes and its median can still read 2 (an open finding of the first soak run)
    tail = slopes[-max(3, -(-len(slopes) // 4)) :]
    return float(np.median(tail)) if tail else float("nan")


def check_gradient(f, x, direction=None, *, h0=1.0, n_steps=30, factor=0.5, random_state=0):
    """Taylor test of a gradient.

    Parameters
    ----------
    f : callable
        ``f(x) -> (value, grad)`` with ``value`` a float and ``grad`` an array shaped like ``x``.
    x : array_like
        The point at which to test.
    direction : array_like, optional
        Direction d; a random unit vector (seeded by ``random_state``) by default.
    h0 : float, default=1.0
        Largest step, scaled by ``max(1, |x|)``.
    n_steps : int, default=30
        Number of steps; each is ``factor`` times the previous one.
    factor : float, default=0.5
    random_state : int, default=0

    Returns
    -------
    GradientCheck

    Examples
    --------
    >>> import numpy as np
    >>> from fastcf import check_gradient
    >>> f = lambda x: (float(np.sum(np.exp(x))), np.exp(x))
    >>> check_gradient(f, np.array([0.1, -0.3])).passed
    True
    >>> wrong = lambda x: (float(np.sum(np.exp(x))), 1.01 * np.exp(x))
    >>> check_gradient(wrong, np.array([0.1, -0.3])).passed
    False
    """
    if not callable(f):
        raise TypeError(f"f must be callable as f(x) -> (value, grad); got {type(f).__name__}")
    x = as_float_array(x, "x")
    if x.size == 0:
        raise ValueError(f"x must hold at least one value; got shape {x.shape}")
    h0 = check_scalar(h0, "h0", lo=0.0, lo_open=True)
    n_steps = check_int(n_steps, "n_steps", lo=2)
    factor = check_scalar(factor, "factor", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    if direction is None:
        d = np.random.default_rng(random_state).standard_normal(x.shape)
    else:
        d = as_float_array(direction, "direction")
        if d.shape != x.shape:
            raise ValueError(f"direction must have the shape of x {x.shape}; got {d.shape}")
    big = float(np.max(np.abs(d))) if d.size else 0.0
    if big == 0 or not np.isfinite(big):
        raise ValueError("direction must be finite and non-zero")
    d = d / big  # first: the norm of a tiny direction (1e-207) underflows to 0
    d = d / np.linalg.norm(d)
    f0, g0 = f(x)
    f0 = float(f0)
    g0 = np.asarray(g0, dtype=np.float64)
    if g0.size != x.size:
        raise ValueError(
            f"f(x) must return (value, grad) with grad shaped like x {x.shape}; "
            f"got grad of shape {g0.shape}"
        )
    slope = float(np.dot(np.ravel(g0), np.ravel(d)))
    scale = max(1.0, float(np.linalg.norm(x)))
    hs = h0 * scale * factor ** np.arange(n_steps)
    e1 = np.empty(n_steps)
    e2 = np.empty(n_steps)
    fh = np.empty(n_steps)
    for i, h in enumerate(hs):
        fh[i] = float(f(x + h * d)[0])
        e1[i] = abs(fh[i] - f0)
        e2[i] = abs(fh[i] - f0 - h * slope)
    eps = np.finfo(float).eps
    floor = 100 * eps * (abs(f0) + np.abs(fh) + hs * abs(slope) + 1e-300)
    # f evaluated with cancellation rounds above 100 eps |f| (a plateau of e2 at ~1e-15 for
    # f ~ 0.03): when the smallest steps' e2 are within 1e4 eps of the values, take them as the
    # rounding level and keep only errors ten times above it, so that the last pairs measure
    # the Taylor remainder, not the rounding. The level is the largest of the last four: the
    # rounding noise is random, and the smallest step alone can read far below it (the fuzz
    # suite: ½xᵀHx with H = 8562·11ᵀ + I near the valley x₁ ≈ −x₂ has f ≈ 1.3 but noise
    # ≈ 3e-13 from cancelling terms ≈ 5e3; e2[-1] read 2e-14 and order2 1.45 on a right
    # gradient, 9% of the points tried)
    tail = slice(-min(4, n_steps), None)
    level = float(np.max(e2[tail]))
    values = abs(f0) + float(np.max(np.abs(fh[tail]))) + hs[tail][0] * abs(slope)
    plateau = level if level <= 1e4 * eps * values else 0.0
    order1 = _median_order(hs, e1, np.maximum(floor, 10 * plateau))
    order2 = _median_order(hs, e2, np.maximum(floor, 10 * plateau))
    if np.isnan(order2):
        order2 = _median_order(hs, e2, floor)
    if np.isnan(order2):
        # second-order error at rounding level everywhere: fine if f really moved
        passed = bool(np.nanmax(e1) > np.max(floor))
    else:
        passed = bool(order2 >= 1.5)
    return GradientCheck(hs, e1, e2, order1, order2, passed)
