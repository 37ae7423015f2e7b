"""Inverse classification for logistic and softmax classifiers (paper 000).

:class:`LinearExplainer` answers three kinds of query for a model with logits ``z = A x + b``:

* ``lam=λ``: problem (2), ``min_x λ/2 ‖x − x̄‖²_W − log p_target(x)``;
* ``proba=τ``: ``min ‖x − x̄‖_W`` subject to ``p_target(x) ≥ τ``;
* ``region=True``: the closest point classified as the target, with a margin on the logits.

Binary models (one weight row, as scikit-learn stores them) are solved in closed form through the
scalar root φ(α, β) (Theorem 4.2); softmax models by Newton's method in the K-dimensional space
spanned by the weight rows (see :mod:`fastcf._kernels.softmax`).
"""

from __future__ import annotations

import math
import threading
import warnings
from typing import NamedTuple

import numpy as np

from ._kernels import logistic as _lk
from ._kernels import softmax as _sk
from ._kernels.linalg import cholesky_inplace, cholesky_solve_inplace
from ._kernels.linalg import dot as _dot
from ._validation import (
    as_float_array,
    as_queries,
    check_probability,
    check_scalar_positive,
    class_index,
    median_absolute_deviation,
    resolve_bounds,
    resolve_frozen,
    resolve_targets,
    resolve_weights,
)
from .adapters import linear_model_arrays
from .results import STATUS_MESSAGES, Counterfactual, CounterfactualBatch, CounterfactualPath

__all__ = ["LinearExplainer"]


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


_METHODS = ("auto", "reduced", "woodbury", "lbfgs", "cg", "gd")
_DEFAULT_LAMS = np.logspace(3, -5, 100)  # path()'s grid (copied for each path)
_EMPTY = np.empty(0)


def _messages(status, success, kind):
    out = []
    for st, ok in zip(status.tolist(), success.tolist(), strict=True):
        if ok and st == 0:
            out.append(f"{kind}: converged" if kind != "closed form" else "exact (closed form)")
        else:
            out.append(STATUS_MESSAGES.get(st, "unknown status"))
    return out


def _verdict(pred, P, tidx, status, proba_min, lam_mode, unreachable):
    """Return (success, status): success = classified as the target (and p ≥ τ when asked).

    The status of an answer that is not a success says why (2, 4, 5 or 7, see
    :mod:`fastcf.results`).
    """
    success = (pred == tidx) & (status == 0)
    status = status.copy()
    if proba_min is not None:
        met = P[np.arange(len(tidx)), tidx] >= proba_min
        status[(status == 0) & met & ~success] = 7
        success &= met
    if unreachable:
        status[(status == 0) & ~success] = 2
    status[(status == 0) & ~success] = 5 if lam_mode else 4
    return success, status


def _result(x, P, dist, success, status, nit, lams, gn, method):
    return {
        "x": x,
        "proba": P,
        "distance": dist,
        "success": success,
        "status": status,
        "nit": nit,
        "lam": lams,
        "grad_norm": gn,
        "method": method,
        "message": _messages(status, success, method),
    }


class LinearExplainer:
    """Counterfactuals of logistic-regression and softmax classifiers.

    Parameters
    ----------
    model : estimator
        A fitted ``LogisticRegression`` (binary or multinomial), ``LogisticRegressionCV``,
        binary ``SGDClassifier(loss="log_loss")``, or a ``Pipeline`` whose steps before the
        classifier are affine (``StandardScaler``, ``MinMaxScaler``, ``MaxAbsScaler``, ``PCA``);
        those steps are folded into ``(A, b)`` so that counterfactuals live in the raw input
        space. Use :meth:`from_arrays` for any other source of weights.

    Attributes
    ----------
    coef_ : ndarray of shape (K, D)
        Weights in the raw input space (K = 1 for a binary model).
    intercept_ : ndarray of shape (K,)
    classes_ : ndarray
    n_features_in_ : int
    feature_names_in_ : ndarray of str or None
    mad_ : ndarray of shape (D,) or None
        Per-feature median absolute deviation, set by :meth:`fit_mad`.

    Notes
    -----
    All per-model work (contiguous float64 weights, the Gram matrix ``A Aᵀ``) is done once here;
    each query does only per-query work. The explainer is immutable after construction apart from
    :meth:`fit_mad` and an internal cache of Gram matrices per metric, and is safe to share between
    threads.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import LogisticRegression
    >>> X, y = load_iris(return_X_y=True)
    >>> model = LogisticRegression(max_iter=1000).fit(X, y)
    >>> ex = LinearExplainer(model)
    >>> res = ex.explain(X[0], target=2, proba=0.5)
    >>> bool(res.success), int(model.predict(res.x[None])[0])
    (True, 2)
    >>> round(float(res.proba[2]), 10)
    0.5
    """

    def __init__(self, model):
        A, b, classes, names = linear_model_arrays(model)
        self._init_arrays(A, b, classes, names)

    @classmethod
    def from_arrays(cls, A, b, classes=None, feature_names=None):
        """Build an explainer from logits ``z = A x + b``.

        Parameters
        ----------
        A : array_like of shape (K, D)
            ``K = 1`` means binary logistic with ``p(classes[1]) = σ(A x + b)`` (scikit-learn's
            convention); ``K = 2`` is the equivalent two-class softmax.
        b : array_like of shape (K,)
        classes : array_like of shape (max(K, 2),), optional
            Class labels; ``0, 1, ..., K-1`` by default.
        feature_names : array_like of str, optional

        Returns
        -------
        LinearExplainer

        Examples
        --------
        >>> import numpy as np
        >>> ex = LinearExplainer.from_arrays(np.eye(3, 4), np.zeros(3), classes=["a", "b", "c"])
        >>> ex.explain(np.zeros(4), target="c", lam=0.1).target
        'c'
        """
        self = cls.__new__(cls)
        A = as_float_array(A, "A", ndim=2)
        b = as_float_array(b, "b", ndim=(0, 1))
        b = np.atleast_1d(b)
        if b.shape[0] != A.shape[0]:
            raise ValueError(
                f"b must have shape ({A.shape[0]},) to match A {A.shape}; got {b.shape}"
            )
        if A.shape[1] == 0:
            raise ValueError("A must have at least one feature (column)")
        if A.shape[0] == 0:
            raise ValueError(f"A must have at least one row (K >= 1); got shape {A.shape}")
        n_cls = max(A.shape[0], 2)
        classes = np.arange(n_cls) if classes is None else np.asarray(classes)
        if classes.ndim != 1 or classes.shape[0] != n_cls:
            raise ValueError(
                f"classes must have {n_cls} labels for A with {A.shape[0]} row(s); "
                f"got {classes.shape}"
            )
        if len(set(classes.tolist())) != n_cls:
            raise ValueError(f"classes must be distinct; got {classes.tolist()}")
        if feature_names is not None:
            feature_names = np.asarray([str(f) for f in feature_names], dtype=object)
            if feature_names.shape != (A.shape[1],):
                raise ValueError(
                    f"feature_names must have {A.shape[1]} names; got {feature_names.shape}"
                )
        self._init_arrays(A, b, classes, feature_names)
        return self

    def _init_arrays(self, A, b, classes, names):
        A = np.ascontiguousarray(A, dtype=np.float64)
        b = np.ascontiguousarray(b, dtype=np.float64)
        if not (np.isfinite(A).all() and np.isfinite(b).all()):
            raise ValueError("the model's weights (A, b) contain NaN or infinite values")
        self.coef_ = A
        self.intercept_ = b
        self.classes_ = np.asarray(classes)
        self._class_index = class_index(self.classes_)
        self.n_features_in_ = A.shape[1]
        # γ_{D+1} = (D+1)u / (1 − (D+1)u): the relative rounding bound of a logit (Higham, §3.1)
        u = np.finfo(float).eps / 2
        self._gamma = (A.shape[1] + 1) * u / (1 - (A.shape[1] + 1) * u)
        # γ_{D+K+2}: the bound of lam_path's certificate (forming x̄ + V Aᵀ y, then A x + b)
        n = A.shape[1] + A.shape[0] + 2
        self._gamma_path = n * u / (1 - n * u)
        self.feature_names_in_ = names
        self.mad_ = None
        self._binary = A.shape[0] <= 2
        if A.shape[0] == 2:  # two-class softmax == logistic with w = a1 − a0
            self._w = np.ascontiguousarray(A[1] - A[0])
            self._c = float(b[1] - b[0])
        elif A.shape[0] == 1:
            self._w = np.ascontiguousarray(A[0])
            self._c = float(b[0])
        # the softmax form of the model (for binary: rows [0, w]), used by the K-space solvers
        if self._binary:
            self._A = np.ascontiguousarray(np.vstack([np.zeros_like(self._w), self._w]))
            self._b = np.array([0.0, self._c])
        else:
            self._A = A
            self._b = b
        self._AT = np.ascontiguousarray(self._A.T)
        self._row_norms = np.sqrt(np.einsum("ij,ij->i", self._A, self._A))  # path certificate
        self._abs_b = np.abs(self._b)
        G = self._A @ self._A.T
        self._G = 0.5 * (G + G.T)  # exactly symmetric (a no-op when BLAS made it so)
        self._gram_cache = {}
        self._lock = threading.Lock()
        self._no_frozen = np.zeros(A.shape[1], dtype=bool)
        self._default_metric = self._make_metric(self._no_frozen, None)

    # ------------------------------------------------------------------ model evaluation
    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_lock", None)
        state["_gram_cache"] = {}
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def decision_function(self, X):
        """Logits ``A x + b``: shape (N,) for a binary model (as scikit-learn), else (N, K).

        Parameters
        ----------
        X : array_like of shape (N, D) or (D,)

        Returns
        -------
        ndarray
        """
        X, single, _ = as_queries(X, self.n_features_in_, name="X")
        out = self._model_logits(X)
        return out[0] if single else out

    def _model_logits(self, X):
        """Return the logits with the model's own arithmetic (BLAS, as scikit-learn)."""
        return X @ self._w + self._c if self._binary else X @ self._AT + self._b

    def _check_logits(self, X):
        """Return the logits by BLAS one row at a time (the bits of ``predict`` of a row alone).

        A batch GEMM rounds differently from a row GEMV. NumPy's matmul of a stack of (1, D)
        matrices calls the same BLAS routine for every element of the stack, so row n here
        equals ``X[n:n+1] @ Aᵀ`` bit for bit. Used to verify answers, so that a query's verdict
        does not depend on its batch.
        """
        if self._binary:
            return (X[:, None, :] @ self._w)[:, 0] + self._c
        return (X[:, None, :] @ self._AT)[:, 0, :] + self._b

    def predict_proba(self, X):
        """Class probabilities in the order of ``classes_``.

        Parameters
        ----------
        X : array_like of shape (N, D) or (D,)

        Returns
        -------
        ndarray of shape (N, n_classes) or (n_classes,)
        """
        Xq, single, _ = as_queries(X, self.n_features_in_, name="X")
        Z = self._model_logits(Xq)
        P = self._proba_from_logits(Z)
        return P[0] if single else P

    def _proba_from_logits(self, Z):
        if self._binary:
            return _lk.binary_proba(np.ascontiguousarray(Z, dtype=np.float64).reshape(-1))
        m = Z.max(axis=1, keepdims=True)
        E = np.exp(Z - m)
        return E / E.sum(axis=1, keepdims=True)

    def _predict_index(self, Z):
        if self._binary:
            return (np.asarray(Z).reshape(-1) > 0).astype(np.int64)
        return np.argmax(Z, axis=1)

    def predict(self, X):
        """Predicted class labels (scikit-learn's rule: argmax; ties to the first class).

        Parameters
        ----------
        X : array_like of shape (N, D) or (D,)

        Returns
        -------
        ndarray of shape (N,)
        """
        Z = self.decision_function(X)
        Z = np.atleast_1d(Z) if self._binary else np.atleast_2d(Z)
        return self.classes_[self._predict_index(Z)]

    def _logits(self, X):
        """Return Z = X Aᵀ + b (row kernels: bit-identical per row whatever the batch)."""
        return _sk.logits_rows(X, self._A, self._b, _sk.row_mode(X.shape[0], *self._A.shape[::-1]))

    def _expand(self, X, Y, v):
        """Return the counterfactuals X + (Y A) ∘ v from their K-space coordinates."""
        unit = v is self._default_metric.v
        return _sk.expand_rows(
            X, Y, self._A, v, unit, _sk.row_mode(X.shape[0], *self._A.shape[::-1])
        )

    def fit_mad(self, X):
        """Store the per-feature median absolute deviation of ``X`` for ``weights="mad"``.

        Parameters
        ----------
        X : array_like of shape (N, D)
            Training data, in the raw input space.

        Returns
        -------
        self
        """
        X, _, _ = as_queries(X, self.n_features_in_, self.feature_names_in_, name="X")
        self.mad_ = median_absolute_deviation(X)
        return self

    # ------------------------------------------------------------------ metric helpers
    def _make_metric(self, frozen_mask, weights):
        D = self.n_features_in_
        free = ~frozen_mask
        wt = np.ones(D) if weights is None else weights
        v = np.where(free, 1.0 / wt, 0.0) if (weights is not None or frozen_mask.any()) else wt
        wt_f = np.where(free, wt, 0.0) if frozen_mask.any() else wt
        GV = (self._A * v) @ self._A.T if v is not wt else self._G
        GF = GV if weights is None else (self._A * free) @ self._A.T
        vw = wfree2 = wvw = None
        if self._binary:
            vw = np.ascontiguousarray(v * self._w) if v is not wt else self._w
            wvw = float(self._w @ vw)
            wfree2 = float(np.sum(self._w[free] ** 2))
        unit = weights is None
        # G_V, G_F exactly symmetric (a GEMM of A V and Aᵀ need not be): the kernels read G by
        # rows for G by columns (_matvec)
        GV = 0.5 * (GV + GV.T) if GV is not self._G else GV
        GF = GV if weights is None else 0.5 * (GF + GF.T)
        vmax = float(v.max()) if v.size else 0.0
        return _Metric(v, wt_f, GV, GF, vw, wvw, wfree2, unit, vmax)

    def _metric(self, frozen_mask, weights):
        """Return the per-metric constants (cached).

        V = W⁻¹ (0 on frozen features), W (0 on frozen features), G_V = A V Aᵀ, G_F = A F Aᵀ
        and, for binary models, V w, wᵀVw and Σ_free w².
        """
        if weights is None and not frozen_mask.any():
            return self._default_metric
        key = (frozen_mask.tobytes(), None if weights is None else weights.tobytes())
        hit = self._gram_cache.get(key)
        if hit is not None:
            return hit
        out = self._make_metric(frozen_mask, weights)
        with self._lock:
            if len(self._gram_cache) > 16:
                self._gram_cache.clear()
            self._gram_cache[key] = out
        return out

    def _prepare(self, x, target, frozen, weights, bounds):
        X, single, names = as_queries(x, self.n_features_in_, self.feature_names_in_)
        N = X.shape[0]
        if N == 0:
            raise ValueError("x is empty: need at least one query row")
        tidx = resolve_targets(target, self.classes_, N, index=self._class_index)
        fmask = resolve_frozen(frozen, self.n_features_in_, names)
        w = resolve_weights(weights, self.n_features_in_, self.mad_)
        bnd = resolve_bounds(bounds, self.n_features_in_, X)
        return X, single, names, tidx, fmask, w, bnd

    # ------------------------------------------------------------------ public queries
    def explain(
        self,
        x,
        target,
        lam=None,
        *,
        proba=None,
        region=False,
        margin=1e-6,
        frozen=None,
        weights=None,
        bounds=None,
        method="auto",
        tol=1e-10,
        max_iter=100,
    ):
        """Find the closest point that the model puts in ``target``.

        Exactly one of ``lam``, ``proba`` or ``region=True`` selects the problem; with none,
        ``lam=0.01``.

        Parameters
        ----------
        x : array_like of shape (D,) or (N, D)
            The source instance(s); pandas Series/DataFrame keep their feature names.
        target : label or array_like of N labels
            Class label(s) as in ``classes_``.
        lam : float or array_like of shape (N,), optional
            λ > 0 of problem (2): ``min λ/2 ‖x − x̄‖²_W − log p_target(x)``.
        proba : float, optional
            τ ∈ (0, 1): ``min ‖x − x̄‖_W`` s.t. ``p_target(x) ≥ τ`` (exact; x̄ itself if it
            already meets τ).
        region : bool, default=False
            The closest point classified as the target: ``z_target ≥ z_j + margin`` for all j.
        margin : float, default=1e-6
            Margin on the logits for ``region=True``. Where the logits are so large that their
            rounding error could exceed it (logits ~1e10), the margin of that query is raised
            above a worst-case bound of that error, so that every floating-point evaluation of
            the model (batch or single row, BLAS or not) agrees on the class of the answer.
        frozen : sequence of int or str, optional
            Features that must not change (indices or feature names).
        weights : array_like of shape (D,) or "mad", optional
            Diagonal metric ``‖W^{1/2}(x − x̄)‖``; ``"mad"`` uses 1/MAD from :meth:`fit_mad`.
        bounds : (lo, hi), optional
            Per-feature box (scalars or arrays; ±inf allowed). The source must lie inside.
        method : {"auto", "reduced", "woodbury", "lbfgs", "cg", "gd"}, default="auto"
            Solver of problem (2). ``"auto"``/``"reduced"``: closed form for binary models, the
            K-dimensional Newton for softmax. The others run in R^D, for comparison.
        tol : float, default=1e-10
            Tolerance on ‖∇E‖ (iterative methods).
        max_iter : int, default=100
            Iteration limit of the iterative methods.

        Returns
        -------
        Counterfactual or CounterfactualBatch
            A batch when ``x`` is 2-D.

        Examples
        --------
        >>> import numpy as np
        >>> ex = LinearExplainer.from_arrays(np.array([[1.0, -2.0]]), np.array([0.0]))
        >>> res = ex.explain(np.array([-1.0, 1.0]), target=1, lam=0.1)
        >>> bool(res.success), res.method, res.nit
        (True, 'closed form', 0)
        >>> res.grad_norm < 1e-12
        True
        """
        if (
            proba is None
            and region is False
            and frozen is None
            and weights is None
            and bounds is None
            and (method == "auto" or method == "reduced")
        ):
            fast = self._explain_one(x, target, lam, tol, max_iter)
            if fast is not None:
                return fast
        modes = (lam is not None) + (proba is not None) + bool(region)
        if modes > 1:
            raise ValueError("give only one of lam=, proba= or region=True")
        if method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}; got {method!r}")
        tol = check_scalar_positive(tol, "tol")
        if (
            isinstance(max_iter, bool)
            or not isinstance(max_iter, (int, np.integer))
            or max_iter < 1
        ):
            raise ValueError(f"max_iter must be a positive integer; got {max_iter!r}")
        X, single, names, tidx, fmask, w, bnd = self._prepare(x, target, frozen, weights, bounds)
        N = X.shape[0]
        if proba is not None or region:
            if method not in ("auto", "reduced"):
                raise ValueError(
                    f"method={method!r} applies to problem (2) (lam=); proba= and region=True are "
                    "solved exactly by the default method"
                )
            if proba is not None:
                tau = check_probability(proba, "proba")
                res = self._constrained(
                    X, tidx, fmask, w, bnd, proba=tau, margin=None, tol=tol, max_iter=max_iter
                )
            else:
                if isinstance(margin, bool) or not isinstance(margin, (int, float, np.floating)):
                    raise TypeError(f"margin must be a real number >= 0; got {margin!r}")
                if not (np.isfinite(margin) and margin >= 0):
                    raise ValueError(f"margin must be finite and >= 0; got {margin!r}")
                res = self._region(X, tidx, fmask, w, bnd, float(margin), tol, max_iter)
        else:
            lams = check_scalar_positive(0.01 if lam is None else lam, "lam", allow_array=True, n=N)
            lams = np.full(N, lams) if np.ndim(lams) == 0 else np.ascontiguousarray(lams)
            res = self._lam(X, tidx, fmask, w, bnd, lams, method, tol, max_iter)
        self._verify(res, tidx, proba if proba is not None else None)
        return self._package(res, X, tidx, names, single)

    def _plain_query(self, x, target, tol, max_iter):
        """Return (k, x·x) for the common query, or ``None`` when anything is unusual.

        The common query is one float64 C-contiguous x̄ of the right length, finite, a known
        target, a float ``tol`` and an int ``max_iter`` in range: the short paths
        (:meth:`_explain_one`, :meth:`_path_one`) reduce the argument checks to these type tests,
        and on ``None`` the public method validates (and raises) as usual.
        """
        if (
            type(x) is not np.ndarray
            or x.ndim != 1
            or x.dtype != np.float64
            or x.shape[0] != self.n_features_in_
            or not x.flags.c_contiguous
            or type(tol) is not float
            or not 0.0 < tol < math.inf
            or type(max_iter) is not int
            or max_iter < 1
        ):
            return None
        try:
            k = self._class_index.get(target.item() if hasattr(target, "item") else target)
        except TypeError:  # unhashable
            return None
        if k is None:
            return None
        # one pass, no warnings: x·x is finite iff x is (and not huge: those go the long way).
        # Not NumPy's x @ x: OpenBLAS runs a long dot on its own threads, which then spin and
        # slowed the parallel row kernel that follows 12× at (131 072, 16) on 2 cores
        xx = _dot(x, x)
        if not math.isfinite(xx):
            return None
        return k, xx

    def _names(self):
        names = self.feature_names_in_
        return None if names is None else np.asarray(names, object)

    def _explain_one(self, x, target, lam, tol, max_iter):
        """Answer the common query (one float64 x̄, a λ, no options) on a short path.

        The same kernel and the same result code as :meth:`explain` (so the answer has the same
        bits), with the argument checks reduced to type tests (:meth:`_plain_query`). Returns
        ``None`` whenever anything is unusual (a NaN or inf in ``x`` included), and
        :meth:`explain` then validates (and raises) as usual.
        """
        if type(lam) is not float or not 0.0 < lam < math.inf:
            return None
        plain = self._plain_query(x, target, tol, max_iter)
        if plain is None:
            return None
        X = x[None, :]
        tidx = np.array([plain[0]], dtype=np.int64)
        if self._binary:
            res = self._lam(
                X, tidx, self._no_frozen, None, None, np.array([lam]), "auto", tol, max_iter
            )
        else:
            res = self._reduced_lam(X, tidx, np.array([lam]), self._default_metric, tol, max_iter)
        self._verify(res, tidx, None)
        return self._package(res, X, tidx, self._names(), True)

    def _surely_in(self, Xr, tr):
        """Return (in_class, Z): rows whose class ``tr`` holds in every evaluation of the model.

        Z are the logits computed by BLAS one row at a time (:meth:`_check_logits`); the margin
        of the target over the others must exceed :meth:`_rounding_need` (an answer within
        rounding of the decision boundary is in one class or the other depending on who
        evaluates it).
        """
        Z = self._check_logits(Xr)
        with np.errstate(over="ignore", invalid="ignore"):
            need = self._rounding_need(Xr, tr)
            if self._binary:
                margin = np.where(tr == 1, Z, -Z)
            else:
                Zo = Z.copy()
                Zo[np.arange(tr.size), tr] = -np.inf
                margin = Z[np.arange(tr.size), tr] - Zo.max(axis=1)
            return np.isfinite(need) & (margin > need), Z

    def _verify(self, res, tidx, proba):
        """Re-check every success that no rounding bound certified yet (in place).

        The class: the margin of the target over the others, computed by BLAS one row at a time
        (:meth:`_check_logits`), must exceed :meth:`_rounding_need`, so that every evaluation of
        the model (batch or single row, BLAS or not) puts the answer in the target class; near
        the boundary at large magnitudes (logits ~1e10) it may not. ``proba``: p_target ≥ τ in
        that same row-by-row arithmetic (at p = τ another evaluation can differ by the rounding
        of the logits).
        A success that fails becomes status 4.
        """
        check = res["success"]
        if "certified" in res:  # certified by a rounding bound (_certain_row): not rechecked
            check = check & ~res.pop("certified")
        if not check.any():
            return
        rows = np.flatnonzero(check)
        good, Z = self._surely_in(res["x"][rows], tidx[rows])
        if proba is not None:
            P = self._proba_from_logits(Z)
            good &= P[np.arange(rows.size), tidx[rows]] >= proba
        if good.all():
            return
        bad = np.zeros(check.shape, dtype=bool)
        bad[rows[~good]] = True
        if bad.any():
            res["success"] = res["success"] & ~bad
            res["status"] = np.where(bad, 4, res["status"])
            msg = (
                "numerical failure: the answer lies within rounding of the decision boundary "
                "(increase margin= or proba=)"
            )
            res["message"] = [msg if b else m for b, m in zip(bad, res["message"], strict=True)]

    def path(
        self,
        x,
        target,
        lams=None,
        *,
        frozen=None,
        weights=None,
        bounds=None,
        warm_start=True,
        tol=1e-10,
        max_iter=100,
    ):
        """Solutions of problem (2) over a decreasing sequence of λ, warm-started (§3.4).

        Parameters
        ----------
        x : array_like of shape (D,)
        target : label
        lams : array_like of shape (L,), optional
            λ values; ``np.logspace(3, -5, 100)`` by default. Solved in the order given
            (decreasing λ is the efficient order).
        frozen, weights, bounds, tol, max_iter
            As in :meth:`explain`.
        warm_start : bool, default=True
            Start each solve from a prediction made of the previous solutions (§3.4 warm-
            starts from the last one): the cubic Hermite extrapolation in log λ of the last
            two solutions and their tangents dy/d(log λ), which starts Newton O(h⁴) from the
            answer on a smooth path — about 1.3 Newton iterations per λ on the default grid,
            against 1.8 for a secant predictor and 2.7–3 for the last solution. A prediction
            that does not converge within 10 iterations falls back to the last solution (within
            ``max_iter``). ``False`` starts every solve cold, for comparison.

        Returns
        -------
        CounterfactualPath

        Examples
        --------
        >>> import numpy as np
        >>> ex = LinearExplainer.from_arrays(np.eye(3, 5), np.zeros(3))
        >>> path = ex.path(np.zeros(5), target=2, lams=np.logspace(2, -2, 9))
        >>> bool(np.all(np.diff(path.proba[:, 2]) > 0))
        True
        """
        fast = self._path_one(x, target, lams, frozen, weights, bounds, warm_start, tol, max_iter)
        if fast is not None:
            return fast
        lams = _DEFAULT_LAMS.copy() if lams is None else as_float_array(lams, "lams", ndim=1)
        if lams.size == 0 or not (lams > 0).all():
            raise ValueError("lams must be a non-empty 1-D array of values > 0")
        tol = check_scalar_positive(tol, "tol")
        if (
            isinstance(max_iter, bool)
            or not isinstance(max_iter, (int, np.integer))
            or max_iter < 1
        ):
            raise ValueError(f"max_iter must be a positive integer; got {max_iter!r}")
        X, single, names, tidx, fmask, w, bnd = self._prepare(x, target, frozen, weights, bounds)
        if not single:
            raise ValueError(
                f"path takes one query x of shape ({self.n_features_in_},); got {X.shape}"
            )
        x0 = X[0]
        k = int(tidx[0])
        L = lams.shape[0]
        if self._binary:
            Xr = np.repeat(X, L, axis=0)
            res = self._lam(
                Xr, np.full(L, k), fmask, w, bnd, np.ascontiguousarray(lams), "auto", tol, max_iter
            )
            XL, nit, status, gn = res["x"], res["nit"], res["status"], res["grad_norm"]
            method = "closed form"
        else:
            m = self._metric(fmask, w)
            v, wt = m.v, m.wt
            if bnd is not None:
                XL = np.empty((L, x0.shape[0]))
                nit = np.zeros(L, dtype=np.int64)
                status = np.zeros(L, dtype=np.int64)
                gn = np.zeros(L)
                xw = None
                for i, lm in enumerate(lams):
                    xi, nit[i], status[i], gn[i] = self._bounded_one(
                        x0, k, float(lm), v, wt, bnd, tol, max_iter, x_init=xw
                    )
                    XL[i] = xi
                    xw = xi if warm_start else None
                method = "reduced (active set)"
            else:
                return self._reduced_path(x0, k, lams, m, warm_start, tol, max_iter, names)
        Z = self._model_logits(XL)
        wt_full = np.ones_like(x0) if w is None else w
        dist = np.sqrt(np.einsum("ij,ij->i", (XL - x0) * wt_full, XL - x0))
        return self._path_result(lams, XL, x0, k, Z, dist, nit, status, gn, method, names)

    def _path_one(self, x, target, lams, frozen, weights, bounds, warm, tol, max_iter):
        """Answer the common λ-path (softmax, one float64 x̄, no options) on a short path.

        As :meth:`_explain_one`: the same kernel and result as :meth:`path`, the argument checks
        reduced to type tests; ``None`` (and :meth:`path` validates as usual) whenever anything
        is unusual.
        """
        if (
            self._binary
            or frozen is not None
            or weights is not None
            or bounds is not None
            or type(warm) is not bool
        ):
            return None
        if lams is None:
            lams = _DEFAULT_LAMS.copy()
        elif (
            type(lams) is not np.ndarray
            or lams.ndim != 1
            or lams.dtype != np.float64
            or lams.size == 0
            or not lams.flags.c_contiguous
            or not (lams > 0).all()
        ):
            return None
        plain = self._plain_query(x, target, tol, max_iter)
        if plain is None:
            return None
        k, xx = plain
        return self._reduced_path(
            x, k, lams, self._default_metric, warm, tol, max_iter, self._names(), xx=xx
        )

    def _reduced_path(self, x0, k, lams, m, warm, tol, max_iter, names, xx=None):
        """Solve the λ-path of a softmax model without bounds in one kernel call (``lam_path``).

        ``xx``: x0·x0 if the caller has it.
        """
        A_, v = self._A, m.v
        D, K = A_.shape[1], A_.shape[0]
        x0norm = math.sqrt(_dot(x0, x0) if xx is None else xx)
        if not math.isfinite(x0norm):  # x0·x0 overflowed
            x0norm = float(np.linalg.norm(x0))
        zbar = _sk.logits_rows(x0[None, :], A_, self._b, _sk.row_mode(1, D, K))[0]
        Y, P, dist, gn, nit, status, ndoubt = _sk.lam_path(
            zbar,
            m.GV,
            m.GF,
            k,
            lams,
            tol,
            max_iter,
            warm,
            self._row_norms,
            x0norm,
            self._abs_b,
            m.vmax,
            self._gamma_path,
        )

        def form(Yr):
            out = Yr @ A_
            out *= v
            out += x0
            return out

        def XL():  # formed on first access of path.X
            return form(Y)

        # the K-space logits decide the class only where their rounding cannot: under
        # cancellation in G y (a target that can never win, λ → 0, y huge) they can name the
        # target while the point itself is in another class (soak finding); such rows (status
        # −1) are formed and rechecked as explain() rechecks (_surely_in)
        if ndoubt:
            rows = np.flatnonzero(status < 0)
            good = self._surely_in(form(Y[rows]), np.full(rows.size, k))[0]
            status[rows] = np.where(good, 0, 4)
        target = self.classes_[k]
        return CounterfactualPath(
            lams=lams,
            X=XL,
            x0=x0,
            target=target.item() if hasattr(target, "item") else target,
            proba=P,
            distance=dist,
            nit=nit,
            success=status == 0,
            status=status,
            grad_norm=gn,
            method="reduced",
            feature_names=names,
        )

    def _path_result(self, lams, XL, x0, k, Z, dist, nit, status, gn, method, names):
        P = self._proba_from_logits(Z)
        # the model's decision is the argmax of the logits: probabilities can round to a tie
        pred = self._predict_index(Z)
        finite = np.isfinite(Z).all(axis=-1) if Z.ndim == 2 else np.isfinite(Z)
        status = np.where((status == 0) & ~(finite & np.isfinite(dist)), 4, status)
        success = (pred == k) & (status == 0)
        status = np.where((status == 0) & ~success, 5, status)
        return CounterfactualPath(
            lams=lams,
            X=XL,  # an array, or a function that forms it on first access
            x0=x0,
            target=self.classes_[k].item()
            if hasattr(self.classes_[k], "item")
            else self.classes_[k],
            proba=P,
            distance=dist,
            nit=np.asarray(nit),
            success=success,
            status=status,
            grad_norm=np.asarray(gn),
            method=method,
            feature_names=names,
        )

    # ------------------------------------------------------------------ problem (2)
    def _lam(self, X, tidx, fmask, w, bnd, lams, method, tol, max_iter):
        N, D = X.shape
        m = self._metric(fmask, w)
        v, wt, GV = m.v, m.wt, m.GV
        if self._binary and method in ("auto", "reduced"):
            signs = np.where(tidx == 1, 1.0, -1.0)
            lo, hi = bnd if bnd is not None else (_EMPTY, _EMPTY)
            Xs, zeta, q, nit, status, dist, gn, scale = _lk.lam_batch(
                X,
                self._w,
                self._c,
                signs,
                m.vw,
                wt,
                lams,
                lo,
                hi,
                bnd is not None,
                200,
                m.wvw,
                m.wfree2,
                m.unit_wt,
                N > 1,
            )
            unreachable = m.wvw == 0.0
            # a closed form: nit = 0 (the scalar root's own iterations go to info["phi_nit"])
            res = self._finish_binary(
                Xs,
                zeta,
                tidx,
                np.zeros_like(nit),
                status,
                lams,
                dist,
                gn,
                "closed form",
                unreachable,
                proba_min=None,
            )
            res["info"] = {"phi_nit": nit}
            # a target logit above 4γ·scale is positive in every evaluation (see _certain_row)
            res["certified"] = res["success"] & (zeta > 4.0 * self._gamma * scale)
            return res
        if method in ("auto", "reduced"):
            if bnd is not None:
                Xs = np.empty_like(X)
                nit = np.zeros(N, dtype=np.int64)
                status = np.zeros(N, dtype=np.int64)
                for n in range(N):
                    Xs[n], nit[n], status[n], _ = self._bounded_one(
                        X[n], int(tidx[n]), float(lams[n]), v, wt, bnd, tol, max_iter
                    )
                return self._finish_softmax(
                    X, Xs, tidx, nit, status, lams, wt, v, bnd, "reduced (active set)"
                )
            return self._reduced_lam(X, tidx, lams, m, tol, max_iter)
        # D-dimensional reference methods, one query at a time (scipy.optimize is imported
        # here, not at start-up: it is most of the import time of the package)
        from . import _solvers

        if bnd is not None and method != "lbfgs":
            raise ValueError(
                f"bounds are supported by method='auto'/'reduced' (exact) and 'lbfgs' "
                f"(L-BFGS-B); got method={method!r}"
            )
        Xs = np.empty_like(X)
        nit = np.zeros(N, dtype=np.int64)
        status = np.zeros(N, dtype=np.int64)
        infos = []
        wt1 = np.ones(D) if w is None else w
        for n in range(N):
            prob = _solvers.SoftmaxProblem(
                self._A,
                self._b,
                X[n],
                int(tidx[n]) if not self._binary else int(tidx[n]),
                float(lams[n]),
                wt1,
                ~fmask,
            )
            if method == "woodbury":
                xs, it, st, _g, info = _solvers.woodbury_newton(
                    prob, GV, tol=tol, max_iter=max_iter
                )
            elif method in ("lbfgs", "cg"):
                xs, it, st, _g, info = _solvers.scipy_method(
                    prob, method, tol=tol, max_iter=max(max_iter, 1000), bounds=bnd
                )
            else:
                xs, it, st, _g, info = _solvers.gradient_descent(
                    prob, tol=tol, max_iter=max(max_iter, 1000)
                )
            Xs[n], nit[n], status[n] = xs, it, st
            infos.append(info)
        res = self._finish_softmax(X, Xs, tidx, nit, status, lams, wt, v, bnd, method)
        res["info"] = {"per_query": infos}
        return res

    def _reduced_lam(self, X, tidx, lams, m, tol, max_iter):
        """Problem (2) by the reduced Newton, every step of every row in one kernel call.

        ‖x − x̄‖²_W = yᵀ G y and ‖∇E‖ come from the K-space solver; the logits of the answer,
        their rounding scale, the probabilities and the verdict from the pass that forms it.
        Successes that the rounding bound certifies (``certified``) are not rechecked by
        :meth:`_verify`.
        """
        N = X.shape[0]
        Xs, P, quad, gn, nit, status, cert = _sk.reduced_rows(
            X,
            self._A,
            self._b,
            m.GV,
            m.GF,
            tidx,
            lams,
            tol,
            max_iter,
            m.v,
            m.v is self._default_metric.v,
            self._gamma,
            _sk.row_mode(N, self.n_features_in_, self._A.shape[0]),
        )
        success = status == 0
        res = _result(
            Xs, P, np.sqrt(np.maximum(quad, 0.0)), success, status, nit, lams, gn, "reduced"
        )
        res["certified"] = cert
        return res

    def _bounded_one(self, x0, k, lam, v, wt, bnd, tol, max_iter, x_init=None):
        """Problem (2) with a box for a softmax model: projected Newton (Bertsekas, 1982).

        Each iteration splits the free features into an ε-active set (at a bound, with the
        gradient pushing outward) and the rest, takes the exact Newton step on the rest — through
        the same K×K Woodbury system as the unconstrained solver, with the metric restricted to
        those features — and a scaled gradient step on the active set, then backtracks along the
        projection arc (Armijo). Once the active set is identified this is Newton's method on a
        face of the box: quadratic convergence to the exact optimum, KKT residual at rounding
        level. Chosen over L-BFGS-B (only linear convergence, stops at ~1e−8) and over a pure
        active-set loop (can cycle). Cost: O(DK²) per iteration for the restricted Gram matrix.
        """
        lo, hi = bnd
        A, b, AT = self._A, self._b, self._AT
        K = A.shape[0]
        free0 = v > 0
        x = x0.copy() if x_init is None else np.clip(x_init, lo, hi)
        x[~free0] = x0[~free0]

        def val_grad(x):
            z = A @ x + b
            m = z.max()
            e = np.exp(z - m)
            s = e.sum()
            p = e / s
            d = x - x0
            E = 0.5 * lam * float(np.dot(wt * d, d)) + m + np.log(s) - z[k]
            pe = p.copy()
            pe[k] -= 1.0
            g = lam * wt * d + AT @ pe
            g[~free0] = 0.0
            return E, g, p

        def projected(g, x):
            return np.where(((x <= lo) & (g > 0)) | ((x >= hi) & (g < 0)), 0.0, g)

        E, g, p = val_grad(x)
        eps = np.finfo(float).eps
        for it in range(max_iter + 1):
            gn = float(np.linalg.norm(projected(g, x)))
            if gn <= tol:
                return x, it, 0, gn
            if it == max_iter:
                break
            width = float(np.linalg.norm(x - np.clip(x - g, lo, hi)))
            eps_k = min(1e-6, width)
            active = free0 & (((x <= lo + eps_k) & (g > 0)) | ((x >= hi - eps_k) & (g < 0)))
            vF = np.where(free0 & ~active, v, 0.0)
            GF = (A * vF) @ AT
            sp = np.sqrt(p)
            B = sp[:, None] * GF * sp[None, :]
            u = B @ sp
            M = B - np.outer(sp, u) - np.outer(u, sp) + (sp @ u) * np.outer(sp, sp)
            M[np.diag_indices(K)] += lam
            M = np.ascontiguousarray(M)
            if cholesky_inplace(M, K) != 0:
                return x, it, 4, gn
            Vg = vF * g
            t = sp * (A @ Vg)
            t -= sp * (sp @ t)
            cholesky_solve_inplace(M, t, K)
            t = sp * (t - sp * (sp @ t))
            d = -(Vg - vF * (AT @ t)) / lam
            d[active] = -g[active] * v[active] / lam
            alpha = 1.0
            Escale = 1.0 + abs(E)
            for _ls in range(60):
                xn = np.clip(x + alpha * d, lo, hi)
                xn[~free0] = x0[~free0]
                En, gnew, pnew = val_grad(xn)
                pred = float(g @ (xn - x))
                if En <= E + 1e-4 * pred or (
                    abs(pred) <= 64 * eps * Escale and En <= E + 64 * eps * Escale
                ):
                    break
                alpha *= 0.5
            else:
                return x, it, (0 if gn <= 1e3 * tol else 4), gn
            if np.array_equal(xn, x):
                return x, it, 0, gn
            x, E, g, p = xn, En, gnew, pnew
        return x, max_iter, 1, float(np.linalg.norm(projected(g, x)))

    # ------------------------------------------------------------------ constrained forms
    def _rounding_need(self, Xs, tidx):
        """Return the margin a point needs so that no evaluation of its logits can change its class.

        Any evaluation of ``z_i = a_i·x + b_i`` in floating point (BLAS in any blocking order,
        scikit-learn's ``predict``, our row kernels) is within ``γ S_i``,
        ``S_i = Σ_j |a_ij x_j| + |b_i|``, γ = (D+1)u / (1 − (D+1)u) (Higham, *Accuracy and
        Stability of Numerical Algorithms*, §3.1). A margin ``z_k − z_j`` computed in any of
        them that exceeds ``4γ (S_k + S_j)`` (twice the worst case of two evaluations) holds in
        all of them: this returns ``4γ (S_k + max_{j≠k} S_j)`` per row (``4γ S`` for a binary
        model, whose other logit is 0) — the criterion of :func:`_kernels.softmax._certain_row`.
        """
        Xa = np.abs(Xs)[:, None, :]  # a stack of rows: each row's bits whatever the batch
        if self._binary:
            return 4 * self._gamma * ((Xa @ np.abs(self._w))[:, 0] + abs(self._c))
        S = (Xa @ np.abs(self._AT))[:, 0, :] + np.abs(self._b)
        rows = np.arange(Xs.shape[0])
        Sk = S[rows, tidx]
        S[rows, tidx] = -np.inf
        return 4 * self._gamma * (Sk + S.max(axis=1))

    def _region(self, X, tidx, fmask, w, bnd, margin, tol, max_iter):
        """``region=True``: solve with ``margin``; re-solve rows where rounding can exceed it.

        At ordinary magnitudes the rounding of the logits (~1e-13) is far below the default
        margin and nothing is re-solved. At logits ~1e10 the margin of a row is raised to twice
        the margin it needs (:meth:`_rounding_need`, evaluated at the answer), so that a success
        does not depend on which arithmetic (batch or single row, BLAS or not) evaluates it.
        """
        N = X.shape[0]
        margins = np.full(N, margin)
        res = self._constrained(X, tidx, fmask, w, bnd, None, margins, tol, max_iter)
        for _ in range(4):
            # successes, and failures of the solver's own check (status 4) that a larger
            # margin can repair
            ok = np.isin(res["status"], (0, 4)) & np.isfinite(res["x"]).all(axis=1)
            if not ok.any():
                break
            need = np.zeros(N)
            with np.errstate(over="ignore", invalid="ignore"):
                need[ok] = self._rounding_need(res["x"][ok], tidx[ok])
                bump = ok & (margins < need) & np.isfinite(2 * need)
            if not bump.any():
                break
            idx = np.flatnonzero(bump)
            margins[idx] = 2 * need[idx]
            sub = self._constrained(
                X[idx], tidx[idx], fmask, w, bnd, None, margins[idx], tol, max_iter
            )
            for key in ("x", "proba", "distance", "success", "status", "lam", "grad_norm"):
                if res[key] is not None:
                    res[key][idx] = sub[key]
            res["nit"][idx] += sub["nit"]
            msgs = list(res["message"])
            for j, i in enumerate(idx):
                msgs[i] = sub["message"][j]
            res["message"] = msgs
        return res

    def _constrained(self, X, tidx, fmask, w, bnd, proba, margin, tol, max_iter):
        """``proba=`` (``margin`` None) or ``region=True`` (``margin``: one per row)."""
        N, D = X.shape
        m = self._metric(fmask, w)
        v, wt, GV, GF = m.v, m.wt, m.GV, m.GF
        if self._binary:
            signs = np.where(tidx == 1, 1.0, -1.0)
            vw = m.vw
            if proba is not None:
                # θ = logit τ, rounded up until σ(θ) ≥ τ in floating point, so that meeting
                # ζ ≥ θ really gives p_target ≥ τ
                theta = math.log(proba) - math.log1p(-proba)
                while self._proba_from_logits(np.array([theta]))[0, 1] < proba:
                    theta = float(np.nextafter(theta, np.inf))
                thetas = np.full(N, theta)
            else:
                thetas = margin
            lo, hi = bnd if bnd is not None else (np.empty(0), np.empty(0))
            Xs, zeta, status, dist = _lk.project_batch(
                X,
                self._w,
                self._c,
                signs,
                vw,
                wt,
                thetas,
                lo,
                hi,
                bnd is not None,
                N > 1,
            )
            return self._finish_binary(
                Xs,
                zeta,
                tidx,
                np.zeros(N, dtype=np.int64),
                status,
                None,
                dist,
                None,
                "projection",
                False,
                proba_min=proba,
            )
        if bnd is not None:
            return self._constrained_cvxpy(X, tidx, v, wt, bnd, proba, margin)
        Zbar = self._logits(X)
        if proba is not None:
            log_tau = np.full(N, math.log(proba))
            Y, lamv, nit, status = _sk.proba_batch(
                Zbar, GV, GF, tidx, log_tau, tol, max_iter, N > 1
            )
            # p_k ≥ τ holds in log space; rounding of the normalised probabilities can leave it
            # an ulp short: re-solve those rows for a τ a few ulps higher
            for _ in range(3):
                # both arithmetics that judge the answer: the row kernels (_finish_softmax) and
                # predict_proba's BLAS (_verify)
                Xs = self._expand(X, Y, v)
                rows = np.arange(N)
                short = (status == 0) & (
                    (self._proba_from_logits(self._logits(Xs))[rows, tidx] < proba)
                    | (self._proba_from_logits(self._check_logits(Xs))[rows, tidx] < proba)
                )
                if not short.any():
                    break
                log_tau[short] += 8 * np.finfo(float).eps * (1 + abs(math.log(proba)))
                idx = np.flatnonzero(short)
                Y2, lam2, nit2, st2 = _sk.proba_batch(
                    Zbar[idx], GV, GF, tidx[idx], log_tau[idx], tol, max_iter, idx.size > 1
                )
                Y[idx], lamv[idx], nit[idx], status[idx] = Y2, lam2, nit[idx] + nit2, st2
            method = "reduced (λ search)"
        else:
            Y, nit, status = _sk.region_batch(
                Zbar, GV, tidx, margin, 1e-12, 10 * self._A.shape[0] + 100, N > 1
            )
            lamv = None
            method = "reduced (dual active set)"
        Xs = self._expand(X, Y, v)
        res = self._finish_softmax(
            X, Xs, tidx, nit, status, lamv, wt, v, None, method, proba_min=proba
        )
        return res

    def _constrained_cvxpy(self, X, tidx, v, wt, bnd, proba, margin):
        """Solve proba=/region= with bounds for softmax models.

        region: a QP solved by cvxpy (Clarabel); proba: the λ search over the exact box solver.
        """
        import cvxpy as cp

        N, D = X.shape
        lo, hi = bnd
        Xs = X.copy()
        nit = np.zeros(N, dtype=np.int64)
        status = np.zeros(N, dtype=np.int64)
        lamv = np.full(N, np.nan)
        free = v > 0
        for n in range(N):
            k = int(tidx[n])
            if proba is not None:
                xs, st, lm, it = self._proba_bounded_one(X[n], k, v, wt, bnd, proba)
                Xs[n], status[n], lamv[n], nit[n] = xs, st, lm, it
                continue
            xv = cp.Variable(D)
            D_rows = self._A[k] - np.delete(self._A, k, axis=0)
            e = self._b[k] - np.delete(self._b, k)
            cons = [D_rows @ xv + e >= margin[n], xv >= lo, xv <= hi]
            if (~free).any():
                cons.append(xv[~free] == X[n][~free])
            prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(wt, cp.square(xv - X[n])))), cons)
            try:
                # cvxpy warns "Solution may be inaccurate" (status optimal_inaccurate): the
                # answer is verified against the model below, as every answer is
                with warnings.catch_warnings(record=True):
                    warnings.simplefilter("always")
                    prob.solve(solver=cp.CLARABEL)
            except cp.error.SolverError:
                status[n] = 6
                continue
            if prob.status in cp.settings.SOLUTION_PRESENT and xv.value is not None:
                Xs[n] = np.clip(xv.value, lo, hi)
                Xs[n][~free] = X[n][~free]
            else:
                status[n] = 3 if "infeasible" in prob.status else 6
        method = "reduced (λ search, active set)" if proba is not None else "cvxpy QP (Clarabel)"
        return self._finish_softmax(
            X,
            Xs,
            tidx,
            nit,
            status,
            lamv if proba else None,
            wt,
            v,
            bnd,
            method,
            proba_min=proba,
        )

    def _proba_bounded_one(self, x0, k, v, wt, bnd, tau):
        log_tau = math.log(tau)

        def logp(lam, x_init):
            x, it, st, _ = self._bounded_one(x0, k, lam, v, wt, bnd, 1e-12, 100, x_init=x_init)
            z = self._A @ x + self._b
            m = z.max()
            return z[k] - m - math.log(np.exp(z - m).sum()), x, it

        z = self._A @ x0 + self._b
        if z[k] - z.max() - math.log(np.exp(z - z.max()).sum()) >= log_tau:
            return x0.copy(), 0, np.inf, 0
        t_lo = t_hi = None
        x_lo = None
        total = 0
        t = 0.0
        xw = None
        for _ in range(60):
            f, x, it = logp(math.exp(t), xw)
            total += it
            xw = x
            if f >= log_tau:
                t_lo, x_lo = t, x
                if t_hi is not None:
                    break
                t += 2.3
            else:
                t_hi = t
                if t_lo is not None:
                    break
                t -= 2.3
                if t < -80:
                    return x, 3, math.exp(t), total
        for _ in range(200):
            if t_hi - t_lo <= 1e-14 * max(1.0, abs(t_lo)):
                break
            t = 0.5 * (t_lo + t_hi)
            f, x, it = logp(math.exp(t), x_lo)
            total += it
            if f >= log_tau:
                t_lo, x_lo = t, x
                if f - log_tau <= 1e-15:
                    break
            else:
                t_hi = t
        return x_lo, 0, math.exp(t_lo), total

    # ------------------------------------------------------------------ results
    def _finish_binary(
        self, Xs, zeta, tidx, nit, status, lams, dist, gn, method, unreachable, proba_min
    ):
        # zeta = target logit at Xs, recomputed from Xs; the model predicts classes_[1] iff z > 0
        pos = tidx == 1
        z = np.where(pos, zeta, -zeta)
        pred = (z > 0).astype(np.int64)
        P = self._proba_from_logits(z)
        status = status.copy()
        # a step that overflowed (tiny w, e.g. |w| = 1e-158) lands at ±inf, where the logit
        # "classifies" it: that is a numerical failure, not an answer
        status[(status == 0) & ~(np.isfinite(Xs).all(axis=1) & np.isfinite(dist))] = 4
        success, status = _verdict(pred, P, tidx, status, proba_min, lams is not None, unreachable)
        return _result(Xs, P, dist, success, status, nit, lams, gn, method)

    def _finish_softmax(
        self,
        X,
        Xs,
        tidx,
        nit,
        status,
        lams,
        wt,
        v,
        bnd,
        method,
        proba_min=None,
    ):
        N, D = X.shape
        Z = self._logits(Xs)  # the solver's check; explain() re-checks with predict's (_verify)
        # a failed answer may be huge or non-finite (status 4 below): no warnings for its P
        with np.errstate(over="ignore", invalid="ignore"):
            if self._binary:
                P = self._proba_from_logits(Z[:, 1] - Z[:, 0])
                pred = (Z[:, 1] - Z[:, 0] > 0).astype(np.int64)
            else:
                P = self._proba_from_logits(Z)
                pred = np.argmax(Z, axis=1)
        status = status.copy()
        status[(status == 0) & ~np.isfinite(Xs).all(axis=1)] = 4
        success, status = _verdict(
            pred, P, tidx, status, proba_min, lams is not None and proba_min is None, False
        )
        gn = None
        diff = Xs - X
        dist = np.sqrt(np.einsum("ij,ij->i", diff * wt if not np.all(wt == 1) else diff, diff))
        if lams is not None and proba_min is None:
            Pm = P.copy()
            Pm[np.arange(N), tidx] -= 1.0
            G = lams[:, None] * wt * diff + Pm @ self._A
            G[:, v == 0] = 0.0
            if bnd is not None:
                lo, hi = bnd
                G = np.where((Xs <= lo) & (G > 0), 0.0, G)
                G = np.where((Xs >= hi) & (G < 0), 0.0, G)
            gn = np.sqrt(np.einsum("ij,ij->i", G, G))
        return _result(Xs, P, dist, success, status, nit, lams, gn, method)

    def _package(self, res, X, tidx, names, single):
        targets = self.classes_[tidx]
        if single:
            t = targets[0]
            return Counterfactual(
                x=res["x"][0],
                x0=X[0],
                target=t.item() if hasattr(t, "item") else t,
                proba=res["proba"][0],
                distance=float(res["distance"][0]),
                success=bool(res["success"][0]),
                status=int(res["status"][0]),
                message=res["message"][0],
                nit=int(res["nit"][0]),
                method=res["method"],
                lam=None
                if res["lam"] is None or not np.isfinite(res["lam"][0])
                else float(res["lam"][0]),
                grad_norm=None if res["grad_norm"] is None else float(res["grad_norm"][0]),
                feature_names=names,
                info=res.get("info", {}),
            )
        return CounterfactualBatch(
            x=res["x"],
            x0=X,
            target=targets,
            proba=res["proba"],
            distance=res["distance"],
            success=res["success"],
            status=res["status"],
            message=res["message"],
            nit=np.asarray(res["nit"]),
            method=res["method"],
            lam=res["lam"],
            grad_norm=res["grad_norm"],
            feature_names=names,
            info=res.get("info", {}),
        )
