"""The checked options of one tree query, and the metric's per-coordinate cost.

Every metric is separable: the cost of an answer is a sum over features of a cost of that
feature's move d_f = x_f − x̄_f, so the cheapest point of a box is the projection of x̄ onto it
(a clip per coordinate) whatever the metric, and the cost of moving a feature into an interval
is a number per interval (linear in the MILP's interval binaries):

* ``"manhattan"``: ``Σ w_f |d_f|``;
* ``"euclidean"``: ``sqrt(Σ (w_f d_f)²)`` (the solvers minimise its square);
* ``"l0"``: ``Σ w_f [d_f ≠ 0]`` (the number of changed features with unit weights);
* ``"mixed"`` (internal: tabular columns, :mod:`fastcf._tabular.treeprog`): Manhattan
  ``w_f |d_f|`` where ``w_f > 0``, L0 ``|w_f| [d_f ≠ 0]`` where ``w_f < 0`` (a nominal column).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["TreeQuery", "METRICS", "coord_cost", "finish"]

METRICS = ("manhattan", "euclidean", "l0")


class TreeQuery(NamedTuple):
    """One explain call's options, checked (the façade builds it)."""

    metric: str
    w: np.ndarray  # (D,) per-feature costs (ones by default)
    lo: np.ndarray  # (N, D) box of each query: the domain ∩ bounds, x̄ itself on frozen features
    hi: np.ndarray  # (N, D)
    max_changes: int | None
    proba: float | None
    time_limit: float | None
    constrained: bool  # frozen/bounds/max_changes/proba given: no answer is "infeasible"
    #: prune with the parsed copy before the model confirms (False: the stage's re-aim of an
    #: answer the model refused, every candidate confirmed before it prunes)
    trust: bool = True


def coord_cost(d, w, metric):
    """Return the per-coordinate cost of moves ``d`` (broadcast with ``w``) under ``metric``."""
    # (a move across most of the float64 range costs inf, silently: HistGradientBoosting's
    # domain is every double, and a weight of 3 times a move of 1e308 overflows; soak find)
    with np.errstate(over="ignore"):
        if metric == "manhattan":
            return w * np.abs(d)
        if metric == "euclidean":
            return (w * d) ** 2
        if metric == "mixed":
            return np.where(w < 0.0, np.where(d != 0.0, -w, 0.0), w * np.abs(d))
    return np.where(d != 0.0, w, 0.0)


def finish(total, metric):
    """Return the distance from a sum of per-coordinate costs (the square root for Euclidean)."""
    return np.sqrt(total) if metric == "euclidean" else total
