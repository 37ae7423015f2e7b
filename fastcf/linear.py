"""Inverse classification for logistic and softmax classifiers (paper 000).

:class:`LinearExplainer` answers three kinds of query for a model with logits ``z = A x + b``:

* ``lam=λ``: problem (2), ``min_x λ/2 ‖x − x̄‖²_W − log p_target(x)``;
* ``proba=τ``: ``min ‖x − x̄‖_W`` subject to ``p_target(x) ≥ τ``;
* ``region=True``: the closest point classified as the target, with a margin on the logits.

Binary models (one weight row, as scikit-learn stores them) are solved in closed form through the
scalar root φ(α, β) (Theorem 4.2); softmax models by Newton's method in the K-dimensional space
spanned by the weight rows (see :mod:`fastcf._kernels.softmax`). The explainer holds the arguments,
the model and the dispatch; the solvers live in :mod:`fastcf._linear`, one module per problem.
"""

from __future__ import annotations

import math

import numpy as np

from ._base import BaseExplainer
from ._linear.fast import constrained_one, plain_query
from ._linear.metric import MetricCache
from ._linear.model import make_model
from ._linear.verify import region as _region
from ._validation import (
    as_float_array,
    as_queries,
    check_int,
    check_probability,
    check_scalar,
    check_scalar_positive,
    resolve_bounds,
    resolve_frozen,
    resolve_weights,
)
from .adapters import check_linear_arrays, linear_model_arrays

__all__ = ["LinearExplainer"]

_METHODS = ("auto", "reduced", "woodbury", "lbfgs", "cg", "gd")
_REDUCED = ("auto", "reduced")  # the exact solvers (closed form, K-space Newton)
_DEFAULT_LAMS = np.logspace(3, -5, 100)  # path()'s grid (copied for each path)


class LinearExplainer(BaseExplainer):
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

    _has_proba = True

    def __init__(self, model):
        self._init_arrays(*linear_model_arrays(model))

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
        self._init_arrays(*check_linear_arrays(A, b, classes, feature_names))
        return self

    def _init_arrays(self, A, b, classes, names):
        A = np.ascontiguousarray(A, dtype=np.float64)
        b = np.ascontiguousarray(b, dtype=np.float64)
        if not (np.isfinite(A).all() and np.isfinite(b).all()):
            raise ValueError("the model's weights (A, b) contain NaN or infinite values")
        self.coef_ = A
        self.intercept_ = b
        self._set_classes(classes)
        self.n_features_in_ = A.shape[1]
        self.feature_names_in_ = names
        self.mad_ = None
        self._model = make_model(A, b)  # BinaryModel or SoftmaxModel: the family, chosen once
        self._cache = MetricCache(self._model)

    # ------------------------------------------------------------------ model evaluation
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
        out = self._model.model_logits(X)
        return out[0] if single else out

    def predict_proba(self, X):
        """Class probabilities in the order of ``classes_``.

        Parameters
        ----------
        X : array_like of shape (N, D) or (D,)

        Returns
        -------
        ndarray of shape (N, n_classes) or (n_classes,)
        """
        X, single, _ = as_queries(X, self.n_features_in_, name="X")
        P = self._model.proba_from_logits(self._model.model_logits(X))
        return P[0] if single else P

    def predict(self, X):
        """Predicted class labels (scikit-learn's rule: argmax; ties to the first class).

        Parameters
        ----------
        X : array_like of shape (N, D) or (D,)

        Returns
        -------
        ndarray of shape (N,)
        """
        X, _, _ = as_queries(X, self.n_features_in_, name="X")
        return self.classes_[self._model.predict_index(self._model.model_logits(X))]

    def _in_target(self, X, tidx, proba=None):
        return self._model.in_target(X, tidx, proba)

    def _options(self, X, names, frozen, weights, bounds):
        """Return the metric (frozen features, weights) and the box of a query."""
        fmask = resolve_frozen(frozen, self.n_features_in_, names)
        w = resolve_weights(weights, self.n_features_in_, self.mad_)
        bnd = resolve_bounds(bounds, self.n_features_in_, X, per_row=True)
        return fmask, w, bnd, self._cache.get(fmask, w)

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
            Per-feature box: each of lo, hi a scalar, an array of shape (D,) (one box for every
            query) or of shape (N, D) (one box per query row); ±inf allowed. Each source row
            must lie inside its box.
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
        if frozen is None and weights is None and bounds is None and method in _REDUCED:
            if proba is None and region is False:  # the short paths of one common query
                fast = self._explain_one(x, target, lam, tol, max_iter)
            elif lam is None and (
                (proba is not None and region is False) or (proba is None and region is True)
            ):  # proba=τ alone, or region=True (with its margin) alone
                fast = constrained_one(self, x, target, proba, margin, tol, max_iter)
            else:
                fast = None
            if fast is not None:
                return fast
        if (lam is not None) + (proba is not None) + bool(region) > 1:
            raise ValueError("give only one of lam=, proba= or region=True")
        if method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}; got {method!r}")
        tol = check_scalar(tol, "tol", lo=0.0, lo_open=True)
        max_iter = check_int(max_iter, "max_iter", lo=1)
        X, single, names, tidx = self._queries(x, target)
        fmask, w, bnd, m = self._options(X, names, frozen, weights, bounds)
        if proba is not None or region:
            if method not in _REDUCED:
                raise ValueError(
                    f"method={method!r} applies to problem (2) (lam=); proba= and region=True are "
                    "solved exactly by the default method"
                )
            if proba is not None:
                proba = check_probability(proba, "proba")
                sol = self._model.constrained(X, tidx, m, bnd, proba, None, tol, max_iter)
            else:
                margin = check_scalar(margin, "margin", lo=0.0)
                sol = _region(self._model, X, tidx, m, bnd, margin, tol, max_iter)
        else:
            n = X.shape[0]
            lams = check_scalar_positive(0.01 if lam is None else lam, "lam", allow_array=True, n=n)
            lams = np.full(n, lams) if np.ndim(lams) == 0 else np.ascontiguousarray(lams)
            if method in _REDUCED:
                sol = self._model.lam(X, tidx, m, bnd, lams, tol, max_iter)
            else:  # scipy.optimize is imported there, not at start-up (most of the import time)
                from ._linear.reference import lam_reference

                sol = lam_reference(
                    self._model, X, tidx, m, w, fmask, bnd, lams, method, tol, max_iter
                )
        return self._package(self._verify(sol, tidx, proba), X, tidx, names, single)

    def _label(self, k):
        t = self.classes_[k]
        return t.item() if hasattr(t, "item") else t

    def _explain_one(self, x, target, lam, tol, max_iter):
        """Answer the common query (one float64 x̄, a float λ, no options) on a short path.

        The same solver and result code as :meth:`explain` (the same bits), the argument checks
        reduced to type tests (``_linear.fast.plain_query``); ``None`` whenever anything is
        unusual.
        """
        if type(lam) is not float or not 0.0 < lam < math.inf:
            return None
        plain = plain_query(self, x, target, tol, max_iter)
        if plain is None:
            return None
        X = x[None, :]
        tidx = np.array([plain[0]], dtype=np.int64)
        sol = self._model.lam(X, tidx, self._cache.default, None, np.array([lam]), tol, max_iter)
        return self._package(self._verify(sol, tidx, None), X, tidx, self.feature_names_in_, True)

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
        tol = check_scalar(tol, "tol", lo=0.0, lo_open=True)
        max_iter = check_int(max_iter, "max_iter", lo=1)
        X, single, names, tidx = self._queries(x, target)
        _fmask, w, bnd, m = self._options(X, names, frozen, weights, bounds)
        if not single:
            raise ValueError(
                f"path takes one query x of shape ({self.n_features_in_},); got {X.shape}"
            )
        if bnd is not None and bnd[0].ndim == 2:  # the box of the one row, given as (1, D)
            bnd = (bnd[0][0], bnd[1][0])
        k = int(tidx[0])
        target = self._label(k)
        return self._model.path(X[0], k, target, lams, m, warm_start, tol, max_iter, names, w, bnd)

    def _path_one(self, x, target, lams, frozen, weights, bounds, warm, tol, max_iter):
        """Answer the common λ-path (one float64 x̄, no options) on a short path.

        As :meth:`_explain_one`: the same solver and result as :meth:`path`; ``None`` whenever
        anything is unusual.
        """
        if not (frozen is None and weights is None and bounds is None and type(warm) is bool):
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
        plain = plain_query(self, x, target, tol, max_iter)
        if plain is None:
            return None
        k, xx = plain
        m, names = self._cache.default, self.feature_names_in_
        return self._model.path(x, k, self._label(k), lams, m, warm, tol, max_iter, names, xx=xx)
