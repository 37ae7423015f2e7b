"""The KKT residual of one feature of a weighted-L1 problem (binary and softmax alike).

At an answer x of ``min λ Σ c_i |x_i − x̄_i| + F(x)`` over a box, the subdifferential of
feature i is an interval [L, U]: ``g_i + λ c_i sign(δ_i)`` (δ = x − x̄), or
``[g_i − λ c_i, g_i + λ c_i]`` at δ_i = 0, widened to −∞ / +∞ by the box's normal cone where x_i
sits on its lower / upper bound (g: F's gradient). The residual is the distance of 0 from that
interval; the kernels report the 2-norm over the free features (``grad_norm``).
"""

from __future__ import annotations

import numpy as np

from .. import kernel

__all__ = ["l1_residual"]


@kernel(callee=True)
def l1_residual(g, lc, d, at_lo, at_hi):
    """Return the distance of 0 from feature i's subdifferential.

    ``g``: F's partial derivative, ``lc``: λ c_i, ``d``: δ_i; ``at_lo`` / ``at_hi``: x_i on its
    lower / upper bound.
    """
    if d > 0.0:
        lo_v = g + lc
        hi_v = lo_v
    elif d < 0.0:
        lo_v = g - lc
        hi_v = lo_v
    else:
        lo_v = g - lc
        hi_v = g + lc
    if at_hi:
        hi_v = np.inf
    if at_lo:
        lo_v = -np.inf
    return lo_v if lo_v > 0.0 else (-hi_v if hi_v < 0.0 else 0.0)
