"""The models EnumSV outputs (paper 003) and the two metrics of its experiments (§5).

:class:`EnumeratedSVM` is one binary SVM trained on a subset S ⊆ [n] of the data: the optimum α of
the dual restricted to S, with SVC's conventions for the decision function. Its kernel is the one
:class:`KernelSpec` shared by every model of an enumeration (the data, the kernel kind and its
parameters, resolved once on the whole data set). :func:`hinge_loss` is the §5.1 metric (the test
hinge loss of each model against the best one), :func:`demographic_parity` the §5.2 one (the
fairness scenario).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fastcf._status import message
from fastcf._validation import as_float_array

__all__ = ["KINDS", "KernelSpec", "EnumeratedSVM", "hinge_loss", "demographic_parity"]

#: kernel names and the integer codes the Numba kernels of :mod:`fastcf._kernels.smo` use
KINDS = {"linear": 0, "poly": 1, "rbf": 2, "sigmoid": 3, "precomputed": 4}
PRECOMPUTED = KINDS["precomputed"]


def smo_kernels():
    """Return :mod:`fastcf._kernels.smo`, imported on first use.

    ``import fastcf.svm_enum`` must not compile (or load) kernels.
    """
    from fastcf._kernels import smo

    return smo


class KernelSpec(NamedTuple):
    """The training data and kernel shared by every model of one enumeration.

    ``params`` is the group ``(kind, gamma, coef0, degree)`` that every kernel of
    :mod:`fastcf._kernels.smo` takes after its data arrays.
    """

    X: np.ndarray
    kind: int
    gamma: float
    coef0: float
    degree: float
    n_features_in: int

    @property
    def params(self) -> tuple:
        """``(kind, gamma, coef0, degree)``, in the order of the kernels' arguments."""
        return self.kind, self.gamma, self.coef0, self.degree

    @property
    def name(self) -> str:
        """The kernel's name (a key of :data:`KINDS`)."""
        return next(k for k, v in KINDS.items() if v == self.kind)


class EnumeratedSVM:
    """One model of the enumeration: a binary SVM trained on a subset of the data.

    Follows :class:`sklearn.svm.SVC`'s conventions: ``decision_function(X) > 0`` means
    ``classes_[1]``, ``dual_coef_[0] = y_i α_i`` over the support vectors with y_i = +1 for
    ``classes_[1]`` and −1 for ``classes_[0]``.

    Attributes
    ----------
    rank : int
        1-based position in the enumeration (0 for a model solved outside of it).
    objective : float
        The dual objective f(α) = Σα − ½ αᵀQα (larger is better).
    alpha : ndarray of shape (n,)
        The Lagrange multipliers over the whole training set (zero outside the subset).
    support_ : ndarray of int
        Sorted indices of the support vectors, {i : α_i > support_tol}.
    support_vectors_ : ndarray of shape (n_SV, n_features)
        The support vectors (shape (n_SV, 0) for a precomputed kernel, as in scikit-learn).
    dual_coef_ : ndarray of shape (1, n_SV)
        ``y_i α_i`` over the support vectors.
    intercept_ : ndarray of shape (1,)
        b, as libsvm computes it: the mean of −y_i G_i over the free support vectors
        (0 < α_i < C), or the midpoint of the feasible interval when none is free.
    classes_ : ndarray of shape (2,)
        The two class labels, sorted.
    n_support_ : ndarray of shape (2,)
        Number of support vectors of each class.
    removed_ : tuple of int
        The indices removed on the search path: the model was trained on [n] minus these.
    n_iter_ : int
        Solver iterations for this model (SMO iterations plus active-set pivots).
    status : int
        0 = converged, 1 = iteration limit reached (codes of :class:`fastcf._status.Status`).

    Examples
    --------
    >>> import numpy as np
    >>> from fastcf import enumerate_svms
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0], [4.0, 0.0]])
    >>> best = enumerate_svms(X, ["a", "a", "b", "b"], k=1, C=10.0)[0]
    >>> best.support_
    array([1, 2])
    >>> best.predict([[0.5, 1.0], [3.5, -1.0]]).tolist()
    ['a', 'b']
    >>> best.message
    'converged'
    """

    def __init__(
        self,
        *,
        rank,
        objective,
        alpha,
        support,
        y_pm,
        intercept,
        classes,
        spec,
        removed,
        n_iter,
        status,
    ):
        self.rank = int(rank)
        self.objective = float(objective)
        self.alpha = alpha
        self.support_ = support
        self.dual_coef_ = (y_pm[support] * alpha[support])[None, :]
        self.intercept_ = np.array([float(intercept)])
        self.classes_ = classes
        self.n_support_ = np.array(
            [int(np.sum(y_pm[support] < 0)), int(np.sum(y_pm[support] > 0))], dtype=np.int32
        )
        self._spec = spec
        if spec.kind == PRECOMPUTED:
            self.support_vectors_ = np.empty((support.size, 0))
        else:
            self.support_vectors_ = spec.X[support]
        self.removed_ = tuple(int(i) for i in removed)
        self.n_iter_ = int(n_iter)
        self.status = int(status)

    @property
    def message(self) -> str:
        """The text of ``status`` (:func:`fastcf._status.message`)."""
        return message(self.status)

    def decision_function(self, X) -> np.ndarray:
        """Signed distance-like score, > 0 for ``classes_[1]``.

        Parameters
        ----------
        X : array-like of shape (m, n_features)
            For a precomputed kernel: the kernel values between the queries and the *whole*
            training set, shape (m, n), as :class:`sklearn.svm.SVC` expects.

        Returns
        -------
        ndarray of shape (m,)
        """
        spec = self._spec
        X = as_float_array(X, "X", ndim=2)
        if X.shape[1] != spec.n_features_in:
            what = "training samples" if spec.kind == PRECOMPUTED else "features"
            raise ValueError(
                f"X has {X.shape[1]} columns but the model was trained with "
                f"{spec.n_features_in} {what}"
            )
        if spec.kind == PRECOMPUTED:
            Kx = np.ascontiguousarray(X[:, self.support_])
        else:
            sv = np.ascontiguousarray(self.support_vectors_)
            Kx = smo_kernels().kernel_block(X, sv, *spec.params)
        return Kx @ self.dual_coef_[0] + self.intercept_[0]

    def predict(self, X) -> np.ndarray:
        """Class labels: ``classes_[1]`` where the decision function is > 0, else ``classes_[0]``.

        Parameters
        ----------
        X : array-like of shape (m, n_features)

        Returns
        -------
        ndarray of shape (m,)
        """
        return self.classes_[(self.decision_function(X) > 0).astype(np.intp)]

    def hinge_loss(self, X, y) -> float:
        """Mean hinge loss ``max(0, 1 − y f(x))`` on (X, y), y in ``classes_`` (paper §5.1).

        Parameters
        ----------
        X : array-like of shape (m, n_features)
        y : array-like of shape (m,)
            Labels from ``classes_``.

        Returns
        -------
        float
        """
        return hinge_loss(self, X, y)

    def demographic_parity(self, X, sensitive, positive=None) -> float:
        """Demographic parity of the predictions on X (§5.2); see :func:`demographic_parity`.

        Parameters
        ----------
        X : array-like of shape (m, n_features)
        sensitive : array-like of shape (m,)
            The binary sensitive attribute (0/1 or bool).
        positive : label, optional
            The favourable label; default ``classes_[1]``.

        Returns
        -------
        float
        """
        return demographic_parity(
            self.predict(X), sensitive, positive=self.classes_[1] if positive is None else positive
        )

    def __repr__(self) -> str:
        return (
            f"EnumeratedSVM(rank={self.rank}, objective={self.objective:.10g}, "
            f"n_support={self.support_.size}, removed={len(self.removed_)}, "
            f"status={self.status})"
        )


def hinge_loss(model, X, y) -> float:
    """Mean hinge loss ``mean(max(0, 1 − t · model.decision_function(X)))``, t = ±1.

    Parameters
    ----------
    model : EnumeratedSVM or any fitted binary classifier with ``decision_function`` and
        ``classes_`` (t = +1 for ``classes_[1]``).
    X : array-like of shape (m, n_features)
    y : array-like of shape (m,)
        Labels from ``model.classes_``.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from fastcf import enumerate_svms
    >>> from fastcf.svm_enum import hinge_loss
    >>> X = np.array([[0.0], [1.0], [3.0], [4.0]])
    >>> m = enumerate_svms(X, [0, 0, 1, 1], k=1, C=10.0)[0]
    >>> round(hinge_loss(m, X, [0, 0, 1, 1]), 12)
    0.0
    """
    y = np.asarray(y)
    classes = np.asarray(model.classes_)
    unknown = ~np.isin(y, classes)
    if unknown.any():
        raise ValueError(
            f"y holds labels {np.unique(y[unknown]).tolist()[:5]} that are not in the model's "
            f"classes_ {classes.tolist()}"
        )
    t = np.where(y == classes[1], 1.0, -1.0)
    d = np.asarray(model.decision_function(X), dtype=float)
    if d.shape != t.shape:
        raise ValueError(f"y has {t.shape[0]} labels but X has {d.shape[0]} rows")
    return float(np.mean(np.maximum(0.0, 1.0 - t * d)))


def demographic_parity(y_pred, sensitive, positive=1) -> float:
    """Demographic parity |P(ŷ = positive | s = 1) − P(ŷ = positive | s = 0)| (Calders et al.).

    Parameters
    ----------
    y_pred : array-like of shape (m,)
        Predicted labels.
    sensitive : array-like of shape (m,)
        The binary sensitive attribute (0/1 or bool); both groups must be present.
    positive : label, default 1
        The favourable (or, in the paper's COMPAS example, the predicted-risk) label.

    Returns
    -------
    float
        0 means the prediction is independent of the attribute; larger is more unequal.

    Examples
    --------
    >>> from fastcf.svm_enum import demographic_parity
    >>> demographic_parity([1, 1, 0, 0], [1, 1, 0, 0])
    1.0
    >>> demographic_parity([1, 0, 1, 0], [1, 1, 0, 0])
    0.0
    """
    y_pred = np.asarray(y_pred)
    s = np.asarray(sensitive)
    if s.shape != y_pred.shape:
        raise ValueError(
            f"sensitive must have one value per prediction ({y_pred.shape}); got {s.shape}"
        )
    values = np.unique(s)
    if not np.all(np.isin(values, [0, 1])):
        raise ValueError(f"sensitive must be binary (0/1 or bool); got values {values[:5]}")
    s = s.astype(bool)
    if s.all() or not s.any():
        raise ValueError("sensitive must contain both groups (0 and 1)")
    pos = y_pred == positive
    return float(abs(pos[s].mean() - pos[~s].mean()))
