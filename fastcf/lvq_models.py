"""GLVQ, GMLVQ and LGMLVQ: prototype classifiers as scikit-learn estimators.

All three minimise the generalised LVQ cost (Sato & Yamada 1996)

    E = (1/N) Σ_n f(μ_n),     μ_n = (d⁺_n − d⁻_n) / (d⁺_n + d⁻_n)

with SciPy's L-BFGS-B and the analytic gradients of :mod:`fastcf._kernels.lvq_cost`. GMLVQ learns
one global Ω (distance ‖Ω(x − w)‖², relevance matrix Λ = ΩᵀΩ with trace 1); LGMLVQ learns one
Ω_k per prototype (Schneider, Biehl & Hammer 2009). The trace normalisation is built into the cost
(the cost sees Ω/‖Ω‖_F), so L-BFGS never drifts along the scale direction.
"""

from __future__ import annotations

import numbers

import numpy as np
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from fastcf._kernels.lvq_cost import glvq_cost_grad, lvq_distances
from fastcf._validation import check_int, check_scalar

__all__ = ["GLVQ", "GMLVQ", "LGMLVQ"]

_MODE = {"glvq": 0, "gmlvq": 1, "lgmlvq": 2}


def _conditioned(X):
    """Return (X', shift, scale) with X = X'·scale + shift, X' of spread about 1 if X's is extreme.

    The GLVQ cost depends on the data only through ratios of distances, so it is invariant to a
    translation and a global rescaling (the prototypes move with the data, Ω is unchanged). Its
    gradient is not: with a spread s the squared distances are ~s² and the gradient's terms
    ~1/s², which under- and overflow for s far from 1 (the fuzz suite: a feature of 8e-162 gave
    inf − inf in the gradient of LGMLVQ). Data whose spread lies in [2⁻⁶⁴, 2⁶⁴] are returned
    unchanged (bit-for-bit the same fit); otherwise X is centred and divided by the power of two
    nearest to its spread.
    """
    with np.errstate(over="ignore", invalid="ignore"):  # values near the float64 limit
        center = X.mean(axis=0)
        spread = float(np.max(np.abs(X - center))) if X.size else 0.0
    if not np.isfinite(spread):  # the mean or the differences overflowed: scale only
        center = np.zeros(X.shape[1])
        spread = float(np.max(np.abs(X)))
    if spread == 0.0:
        # every sample the same point: only a translation can condition it. Left at 2.4e-89, the
        # first steps of L-BFGS gave squared distances of ~1e-178, whose square underflowed to 0
        # in the gradient's denominator: inf − inf (soak round R, seed 340). Centred, the data
        # are 0 exactly; kept as they are where their magnitude is within the range above
        big = float(np.max(np.abs(center))) if X.size else 0.0
        if big == 0.0 or 2.0**-64 <= big <= 2.0**64 or not np.isfinite(big):
            return X, 0.0, 1.0
        return np.ascontiguousarray(X - center), center, 1.0
    if 2.0**-64 <= spread <= 2.0**64:
        return X, 0.0, 1.0
    scale = float(np.ldexp(1.0, int(np.clip(np.round(np.log2(spread)), -1022, 1023))))
    return np.ascontiguousarray((X - center) / scale), center, scale


class _LVQBase(ClassifierMixin, BaseEstimator):
    _kind = "glvq"

    # ------------------------------------------------------------------ validation helpers
    def _check_params(self, n_classes):
        """Validate the parameters at ``fit`` (scikit-learn style); return prototypes per class."""
        ppc = self.prototypes_per_class
        if isinstance(ppc, numbers.Integral) and not isinstance(ppc, (bool, np.bool_)):
            ppc = np.full(n_classes, check_int(ppc, "prototypes_per_class", lo=1), dtype=np.int64)
        else:
            try:
                ppc = np.asarray(ppc)
            except Exception:  # pragma: no cover - defensive
                ppc = np.asarray([None])
            if ppc.dtype.kind not in "iu" or ppc.shape != (n_classes,):
                raise ValueError(
                    "prototypes_per_class must be an integer >= 1 or one per class "
                    f"({n_classes}); got {self.prototypes_per_class!r}"
                )
            ppc = ppc.astype(np.int64)
            if (ppc < 1).any():
                raise ValueError(
                    f"prototypes_per_class must be integers >= 1; got {self.prototypes_per_class!r}"
                )
        if self.activation not in ("identity", "sigmoid"):
            raise ValueError(f"activation must be 'identity' or 'sigmoid'; got {self.activation!r}")
        check_scalar(self.beta, "beta", lo=0.0, lo_open=True)
        check_int(self.max_iter, "max_iter", lo=1)
        check_scalar(self.tol, "tol", lo=0.0)
        return ppc

    def _n_components(self, D):
        nc = getattr(self, "n_components", None)
        nc = check_int(nc, "n_components", lo=1, hi=D, allow_none=True)
        return D if nc is None else nc

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y):
        """Fit the prototypes (and metric) by minimising the GLVQ cost with L-BFGS.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        check_classification_targets(y)
        self.classes_, yi = np.unique(y, return_inverse=True)
        n_classes = self.classes_.shape[0]
        if n_classes < 2:
            raise ValueError(
                f"LVQ needs samples of at least 2 classes; got 1 class ({self.classes_[0]!r})"
            )
        ppc = self._check_params(n_classes)
        rng = np.random.default_rng(self.random_state)
        X = np.ascontiguousarray(X)
        yi = yi.astype(np.int64)
        n, D = X.shape
        X, shift, scale = _conditioned(X)
        # initial prototypes: class mean pulled halfway towards random class members
        W, wlab = [], []
        for c in range(n_classes):
            Xc = X[yi == c]
            mean = Xc.mean(axis=0)
            pick = rng.choice(Xc.shape[0], size=ppc[c], replace=Xc.shape[0] < ppc[c])
            for k, s in enumerate(pick):
                W.append(mean if k == 0 else mean + 0.5 * (Xc[s] - mean))
                wlab.append(c)
        W = np.ascontiguousarray(W, dtype=np.float64)
        wlab = np.asarray(wlab, dtype=np.int64)
        K = W.shape[0]
        mode = _MODE[self._kind]
        d = self._n_components(D)
        M = 1 if mode < 2 else K
        om0 = np.zeros((M, d, D))
        for m in range(M):
            om0[m] = np.eye(d, D)
        om0 /= np.sqrt(np.einsum("mij,mij->m", om0, om0))[:, None, None]
        act = 0 if self.activation == "identity" else 1
        beta = float(self.beta)
        nW = K * D

        def unpack(theta):
            Wt = theta[:nW].reshape(K, D)
            if mode == 0:
                return Wt, om0, None
            raw = theta[nW:].reshape(M, d, D)
            norms = np.sqrt(np.einsum("mij,mij->m", raw, raw))
            norms = np.where(norms > 0, norms, 1.0)
            return Wt, raw / norms[:, None, None], norms

        def fun(theta):
            Wt, om, norms = unpack(theta)
            cost, gW, gO = glvq_cost_grad(
                X, yi, np.ascontiguousarray(Wt), wlab, om, mode, act, beta
            )
            if mode == 0:
                return cost, gW.ravel()
            # chain rule through Ω̃ = Ω / ‖Ω‖_F: ∂E/∂Ω = (G − ⟨G, Ω̃⟩ Ω̃) / ‖Ω‖_F
            inner = np.einsum("mij,mij->m", gO, om)
            gRaw = (gO - inner[:, None, None] * om) / norms[:, None, None]
            return cost, np.concatenate([gW.ravel(), gRaw.ravel()])

        theta0 = W.ravel() if mode == 0 else np.concatenate([W.ravel(), om0.ravel()])
        res = minimize(
            fun,
            theta0,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": int(self.max_iter), "gtol": float(self.tol), "ftol": 1e-12},
        )
        W, om, _ = unpack(res.x)
        if scale != 1.0 or np.any(shift != 0.0):
            W = W * scale + shift
        self.prototypes_ = np.ascontiguousarray(W)
        self._proto_class = wlab
        self.prototype_labels_ = self.classes_[wlab]
        self.n_iter_ = int(res.nit)
        self.cost_ = float(res.fun)
        if mode == 1:
            self.omega_ = np.ascontiguousarray(om[0])
        elif mode == 2:
            self.omegas_ = np.ascontiguousarray(om)
        self._omegas = np.ascontiguousarray(om)
        return self

    # ------------------------------------------------------------------ prediction
    def _distances(self, X):
        check_is_fitted(self, "prototypes_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return lvq_distances(
            np.ascontiguousarray(X), self.prototypes_, self._omegas, _MODE[self._kind]
        )

    def predict(self, X):
        """Label of the nearest prototype.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        dist = self._distances(X)
        return self.prototype_labels_[np.argmin(dist, axis=1)]

    def decision_function(self, X):
        """Scores from the class-wise smallest distances.

        Multiclass: ``−min_k d_k`` per class, shape (n_samples, n_classes). Binary: the distance to
        the closest prototype of ``classes_[0]`` minus that of ``classes_[1]``, shape (n_samples,),
        positive means ``classes_[1]``, as scikit-learn's convention asks.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray
        """
        dist = self._distances(X)
        n_classes = self.classes_.shape[0]
        per_class = np.full((dist.shape[0], n_classes), np.inf)
        for c in range(n_classes):
            per_class[:, c] = dist[:, self._proto_class == c].min(axis=1)
        if n_classes == 2:
            return per_class[:, 0] - per_class[:, 1]
        return -per_class


class GLVQ(_LVQBase):
    """Generalised LVQ with the squared Euclidean distance.

    Parameters
    ----------
    prototypes_per_class : int or array-like of int, default=1
        Number of prototypes per class (one int for all classes, or one per class in the order of
        ``classes_``).
    activation : {"sigmoid", "identity"}, default="sigmoid"
        The function f applied to μ = (d⁺ − d⁻)/(d⁺ + d⁻) in the cost.
    beta : float, default=2.0
        Slope of the sigmoid.
    max_iter : int, default=1000
        L-BFGS iterations.
    tol : float, default=1e-8
        Gradient tolerance of L-BFGS.
    random_state : int, Generator or None, default=None
        Seeds the choice of initial prototypes.

    Attributes
    ----------
    prototypes_ : ndarray of shape (n_prototypes, n_features)
    prototype_labels_ : ndarray of shape (n_prototypes,)
        The class label (not an index) of every prototype.
    classes_ : ndarray
    n_iter_ : int
    cost_ : float
        Final value of the mean GLVQ cost.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from fastcf.lvq import GLVQ
    >>> X, y = load_iris(return_X_y=True)
    >>> m = GLVQ(prototypes_per_class=1, random_state=0).fit(X, y)
    >>> m.prototypes_.shape, bool(m.score(X, y) > 0.8)
    ((3, 4), True)
    """

    _kind = "glvq"

    def __init__(
        self,
        prototypes_per_class=1,
        *,
        activation="sigmoid",
        beta=2.0,
        max_iter=1000,
        tol=1e-8,
        random_state=None,
    ):
        self.prototypes_per_class = prototypes_per_class
        self.activation = activation
        self.beta = beta
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state


class GMLVQ(_LVQBase):
    """Generalised matrix LVQ: one global Ω, d(x, w) = ‖Ω(x − w)‖², Λ = ΩᵀΩ with trace 1.

    Parameters
    ----------
    prototypes_per_class : int or array-like of int, default=1
    n_components : int or None, default=None
        Rows d of Ω (None: d = n_features).
    activation : {"sigmoid", "identity"}, default="sigmoid"
    beta : float, default=2.0
    max_iter : int, default=1000
    tol : float, default=1e-8
    random_state : int, Generator or None, default=None

    Attributes
    ----------
    prototypes_, prototype_labels_, classes_, n_iter_, cost_
        As in :class:`GLVQ`.
    omega_ : ndarray of shape (d, n_features)
        Normalised so that ``trace(omega_.T @ omega_) == 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from fastcf.lvq import GMLVQ
    >>> X, y = load_iris(return_X_y=True)
    >>> m = GMLVQ(random_state=0).fit(X, y)
    >>> round(float(np.trace(m.omega_.T @ m.omega_)), 12), bool(m.score(X, y) > 0.9)
    (1.0, True)
    """

    _kind = "gmlvq"

    def __init__(
        self,
        prototypes_per_class=1,
        *,
        n_components=None,
        activation="sigmoid",
        beta=2.0,
        max_iter=1000,
        tol=1e-8,
        random_state=None,
    ):
        self.prototypes_per_class = prototypes_per_class
        self.n_components = n_components
        self.activation = activation
        self.beta = beta
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state


class LGMLVQ(_LVQBase):
    """Localised GMLVQ: one Ω_k per prototype, d(x, w_k) = ‖Ω_k(x − w_k)‖², each trace(Ω_kᵀΩ_k) = 1.

    Parameters
    ----------
    prototypes_per_class : int or array-like of int, default=1
    n_components : int or None, default=None
        Rows d of every Ω_k (None: d = n_features).
    activation : {"sigmoid", "identity"}, default="sigmoid"
    beta : float, default=2.0
    max_iter : int, default=1000
    tol : float, default=1e-8
    random_state : int, Generator or None, default=None

    Attributes
    ----------
    prototypes_, prototype_labels_, classes_, n_iter_, cost_
        As in :class:`GLVQ`.
    omegas_ : ndarray of shape (n_prototypes, d, n_features)

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from fastcf.lvq import LGMLVQ
    >>> X, y = load_iris(return_X_y=True)
    >>> m = LGMLVQ(random_state=0).fit(X, y)
    >>> m.omegas_.shape, bool(m.score(X, y) > 0.9)
    ((3, 4, 4), True)
    """

    _kind = "lgmlvq"

    def __init__(
        self,
        prototypes_per_class=1,
        *,
        n_components=None,
        activation="sigmoid",
        beta=2.0,
        max_iter=1000,
        tol=1e-8,
        random_state=None,
    ):
        self.prototypes_per_class = prototypes_per_class
        self.n_components = n_components
        self.activation = activation
        self.beta = beta
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
