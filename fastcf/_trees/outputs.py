"""The boosting libraries' own output arithmetic: probabilities and classes, rounded as they round.

XGBoost and LightGBM decide a class from rounded probabilities, not from the scores, so near a
tie their ``predict`` may differ from an exact comparison of the scores. The classes here
compute the probabilities with the library's own operations, in its own precision and order, and
take the class as its ``predict`` does; :class:`ProbaArgmax` adds the ``band`` (in score units)
within which that may differ from the exact comparison, which widens the rounding bound of the
program (:attr:`fastcf._trees.forest.Forest.delta`), so that it still holds every cell the
library puts in the target class; the library's own arithmetic then accepts or cuts each one.

The exponentials are the C library's, as the libraries call them: LightGBM's ``std::exp`` is
CPython's :func:`math.exp` (both the platform's libm ``exp``); XGBoost's ``expf`` is the
float32 libm function, called through :mod:`ctypes` where its value could differ from the
float64 ``exp`` rounded to float32 (a result within 2^-30 of a float32 rounding midpoint; glibc's
``expf`` rounds a float64 approximation of relative error 1.7·2^-34). Without a loadable libm
(not Linux or macOS), the float64 ``exp`` rounded to float32 is used: it may differ by an ulp in
those rare cases, which only matters for rows within an ulp of a tie (every answer is still
confirmed by the model's own ``predict``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math

import numpy as np

from .forest import Argmax, Logistic, Sign, Softmax

__all__ = [
    "ProbaArgmax",
    "XGBLogistic",
    "XGBSoftmax",
    "XGBMarginSoftmax",
    "LGBLogistic",
    "LGBSoftmax",
    "exp64",
    "expf",
]

_F32 = np.float32
_U32 = 2.0**-24  # unit roundoff of float32
_EXP_MAX = 709.782712893384  # math.exp overflows above log(DBL_MAX)


def _load_expf():
    name = ctypes.util.find_library("m")
    if name is None:  # pragma: no cover - platforms without a separate libm
        return None
    try:
        fn = ctypes.CDLL(name).expf
    except (OSError, AttributeError):  # pragma: no cover
        return None
    fn.restype = ctypes.c_float
    fn.argtypes = [ctypes.c_float]
    return fn


_LIBM_EXPF = _load_expf()
_MATH_EXP = np.frompyfunc(math.exp, 1, 1)


def exp64(x):
    """Return the libm ``exp`` of a float64 array (CPython's :func:`math.exp`, elementwise)."""
    x = np.asarray(x, dtype=np.float64)
    out = np.full(x.shape, np.inf)
    ok = ~(x > _EXP_MAX)  # (NaN stays NaN through math.exp)
    if ok.any():
        out[ok] = _MATH_EXP(x[ok]).astype(np.float64)
    return out


def expf(x):
    """Return the libm ``expf`` of a float32 array (see the module docstring)."""
    x = np.asarray(x, dtype=_F32)
    with np.errstate(over="ignore"):
        e64 = np.exp(x.astype(np.float64))
        r = e64.astype(_F32)
    if _LIBM_EXPF is None or r.size == 0:
        return r
    lo = np.nextafter(r, _F32(-np.inf)).astype(np.float64)
    hi = np.nextafter(r, _F32(np.inf)).astype(np.float64)
    rr = r.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        near = np.minimum(np.abs(e64 - (rr + lo) / 2), np.abs(e64 - (rr + hi) / 2))
        hard = np.isfinite(e64) & (e64 > 0) & (near <= 2.0**-30 * e64)
    for i in np.flatnonzero(hard.ravel()):
        r.flat[i] = _LIBM_EXPF(float(x.flat[i]))
    return r


# ---------------------------------------------------------------------------------- decisions
class ProbaArgmax:
    """The class is the first argmax of the library's own rounded probabilities.

    ``forms`` and ``gap`` are those of the exact comparison of the scores (``base``:
    :class:`~fastcf._trees.forest.Argmax` or :class:`~fastcf._trees.forest.Sign`); ``band``
    bounds, in score units, how far the rounded decision may stray from it.
    """

    def __init__(self, link, base, band: float):
        self.link = link
        self.base = base
        self.n_scores = base.n_scores
        self.band = float(band)

    def predict(self, S):
        return np.argmax(self.link.proba(S), axis=1)

    def forms(self, t: int):
        return self.base.forms(t)

    def gap(self, S):
        return self.base.gap(S)


def binary(link, band):
    """Return the decision of a binary model: class 1 iff ``p_1 > p_0`` of the rounded link."""
    return ProbaArgmax(link, Sign(at_zero=0), band)


def multiclass(link, n_classes, band):
    """Return the decision of a multiclass model: the first argmax of the rounded softmax."""
    return ProbaArgmax(link, Argmax(n_classes), band)


# ---------------------------------------------------------------------------------- XGBoost
class XGBLogistic(Logistic):
    """XGBoost's ``binary:logistic`` (``src/common/math.h`` ``Sigmoid(float)``), in float32.

    ``p = 1 / (expf(min(−m, 88.7)) + 1 + 1e−16)``; ``predict_proba`` is ``[1 − p, p]``
    (float32); ``predict`` gives class 1 iff ``p > 0.5``, the same as ``p > 1 − p``.
    """

    def __init__(self):
        super().__init__(1.0)

    def proba(self, S):
        m = np.asarray(S[:, 0], dtype=np.float64).astype(_F32)
        z = np.minimum(-m, _F32(88.7))
        p = _F32(1.0) / (expf(z) + _F32(1.0) + _F32(1e-16))
        return np.column_stack([_F32(1.0) - p, p]).astype(np.float64)

    def slack(self, tau):
        return 64.0 * _U32 * (1.0 + abs(math.log(tau / (1.0 - tau)))) / (tau * (1.0 - tau))


class XGBSoftmax(Softmax):
    """XGBoost's ``multi:softprob`` (``src/common/math.h`` ``Softmax``), in float32.

    ``w = max_j m_j`` (float32), ``e_j = expf(m_j − w)`` (float32), ``s = Σ_j e_j`` added in a
    double in class order, ``p_j = e_j / float(s)`` (float32); ``predict`` is the first argmax
    of p.
    """

    def proba(self, S):
        m = np.asarray(S, dtype=np.float64).astype(_F32)
        w = m[:, :1].copy()
        for j in range(1, m.shape[1]):
            w = np.fmax(m[:, j : j + 1], w)
        e = expf(m - w)
        s = np.zeros(m.shape[0])
        for j in range(m.shape[1]):
            s = s + e[:, j].astype(np.float64)
        return (e / s.astype(_F32)[:, None]).astype(np.float64)

    def slack(self, tau):
        return 64.0 * _U32 * (1.0 + abs(math.log(tau))) / (tau * (1.0 - tau))


class XGBMarginSoftmax(Softmax):
    """XGBoost's ``multi:softmax``: ``predict_proba`` is SciPy's softmax of the float32 margins.

    (``xgboost/sklearn.py``; ``predict`` is the first argmax of the margins, an exact
    :class:`~fastcf._trees.forest.Argmax`.)
    """

    def proba(self, S):
        from scipy.special import softmax

        return softmax(np.asarray(S, dtype=np.float64).astype(_F32), axis=1).astype(np.float64)

    def slack(self, tau):
        return 64.0 * _U32 * (1.0 + abs(math.log(tau))) / (tau * (1.0 - tau))


# ---------------------------------------------------------------------------------- LightGBM
class LGBLogistic(Logistic):
    """LightGBM's ``binary`` (``src/objective/binary_objective.hpp`` ``ConvertOutput``).

    ``p = 1 / (1 + exp(−σ m))`` in double; ``predict_proba`` is ``[1 − p, p]`` and ``predict``
    its first argmax (``lightgbm/sklearn.py``).
    """

    def proba(self, S):
        p = 1.0 / (1.0 + exp64(-self.scale * np.asarray(S[:, 0], dtype=np.float64)))
        return np.column_stack([1.0 - p, p])


class LGBSoftmax(Softmax):
    """LightGBM's ``multiclass`` (``include/LightGBM/utils/common.h`` ``Softmax``), in double.

    ``w = max_j m_j``, ``e_j = exp(m_j − w)``, ``s = Σ_j e_j`` in class order, ``p_j = e_j /
    s``; ``predict`` is the first argmax of p (``lightgbm/sklearn.py``).
    """

    def proba(self, S):
        m = np.asarray(S, dtype=np.float64)
        w = m[:, :1].copy()
        for j in range(1, m.shape[1]):
            w = np.maximum(m[:, j : j + 1], w)
        e = exp64(m - w)
        s = np.zeros(m.shape[0])
        for j in range(m.shape[1]):
            s = s + e[:, j]
        return e / s[:, None]
