"""The per-metric constants of a linear model and their cache (paper 000, §3.1 and §4).

A query's metric is ``‖x − x̄‖²_W`` with W diagonal and some features frozen. Writing
V = W⁻¹ on the free features and 0 on the frozen ones, every solver works with

* ``v``: V (the step x − x̄ = V Aᵀ y lies in the range of V Aᵀ, see :mod:`fastcf._kernels.softmax`);
* ``wt``: W on the free features, 0 on the frozen ones (the distance);
* ``GV = A V Aᵀ`` (the K×K Gram matrix of the reduced Newton method, ``‖x − x̄‖²_W = yᵀ G_V y``);
* ``GF = A F Aᵀ`` with F the free-feature mask (``‖∇_x E‖² = rᵀ G_F r``; equal to G_V when
  W = I);
* for binary models (one weight row w): ``V w``, ``wᵀ V w`` and ``Σ_free w²``, the constants of
  the closed form (Theorem 4.2).

They depend on the model and the metric only, so they are computed once per (frozen mask,
weights) pair and cached. The cache is thread-safe (a lock guards its writes; a read of a dict is
atomic) and is emptied when the explainer is pickled.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np

__all__ = ["MetricCache", "_Metric", "make_metric", "row_box"]


class _Metric(NamedTuple):
    v: np.ndarray  # W⁻¹ on free features, 0 on frozen ones
    wt: np.ndarray  # W on free features, 0 on frozen ones
    GV: np.ndarray  # A V Aᵀ
    GF: np.ndarray  # A F Aᵀ (F: free-feature mask)
    vw: np.ndarray | None  # binary: V w
    wvw: float | None  # binary: wᵀ V w
    wfree2: float | None  # binary: Σ_free w²
    unit_wt: bool  # W = I on the free features
    vmax: float  # max of v (0 when D = 0)
    unit_v: bool  # V = I: no weights and no frozen feature (the default metric)


def row_box(bnd, n):
    """Return the box of query row ``n`` (an int) or rows ``n`` (indices).

    ``bnd``: None, one box (lo, hi) of shape (D,) shared by every row (returned as it is), or
    one box per row, of shape (N, D) (sliced).
    """
    if bnd is None or bnd[0].ndim == 1:
        return bnd
    return bnd[0][n], bnd[1][n]


def make_metric(model, frozen_mask, weights):
    """Return the :class:`_Metric` of ``model`` for a frozen mask and weights (or ``None``)."""
    D = model.A.shape[1]
    free = ~frozen_mask
    wt = np.ones(D) if weights is None else weights
    v = np.where(free, 1.0 / wt, 0.0) if (weights is not None or frozen_mask.any()) else wt
    wt_f = np.where(free, wt, 0.0) if frozen_mask.any() else wt
    GV = (model.A * v) @ model.A.T if v is not wt else model.G
    GF = GV if weights is None else (model.A * free) @ model.A.T
    vw, wvw, wfree2 = model.metric_extras(v, free, v is wt)
    unit = weights is None
    # G_V, G_F exactly symmetric (a GEMM of A V and Aᵀ need not be): the kernels read G by
    # rows for G by columns (_matvec)
    GV = 0.5 * (GV + GV.T) if GV is not model.G else GV
    GF = GV if weights is None else 0.5 * (GF + GF.T)
    vmax = float(v.max()) if v.size else 0.0
    return _Metric(v, wt_f, GV, GF, vw, wvw, wfree2, unit, vmax, v is wt)


class MetricCache:
    """The metrics of one model: the default one (W = I, nothing frozen) and a small cache.

    Parameters
    ----------
    model : BinaryModel or SoftmaxModel
    """

    def __init__(self, model):
        self._model = model
        self.default = make_metric(model, np.zeros(model.A.shape[1], dtype=bool), None)
        self._cache = {}
        self._lock = threading.Lock()

    def get(self, frozen_mask, weights):
        """Return the per-metric constants (cached).

        V = W⁻¹ (0 on frozen features), W (0 on frozen features), G_V = A V Aᵀ, G_F = A F Aᵀ
        and, for binary models, V w, wᵀVw and Σ_free w².
        """
        if weights is None and not np.count_nonzero(frozen_mask):
            return self.default
        key = (frozen_mask.tobytes(), None if weights is None else weights.tobytes())
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        out = make_metric(self._model, frozen_mask, weights)
        with self._lock:
            if len(self._cache) > 16:
                self._cache.clear()
            self._cache[key] = out
        return out

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_lock", None)
        state["_cache"] = {}
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()


def distances(diff, wt=None):
    """Return the row norms ‖d‖_W = √(Σ_i w_i d_i²) of ``diff`` (N, D), W = diag(``wt``).

    The plain sum of squares overflows for steps beyond ~1e154 and underflows below ~1e-154
    (a finite answer 4.6e201 away had the distance inf; soak round O): such rows are scaled by
    their largest term, as LAPACK's dnrm2.
    """
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        d2 = np.einsum("ij,ij->i", diff if wt is None else diff * wt, diff)
        dist = np.sqrt(d2)
        tiny = dist < 1e-150
        if tiny.any():  # an exact 0 (x̄ itself) is not odd; one that underflowed is
            tiny &= (diff != 0).any(axis=1)
        odd = np.flatnonzero(~(dist < 1e150) | tiny)
        if odd.size:
            d = np.abs(diff[odd]) if wt is None else np.sqrt(wt) * np.abs(diff[odd])
            big = d.max(axis=1)
            ok = (big > 0.0) & np.isfinite(big)
            r = d[ok] / big[ok, None]
            dist[odd[ok]] = big[ok] * np.sqrt(np.einsum("ij,ij->i", r, r))
    return dist
