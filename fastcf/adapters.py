"""Fitted models of other libraries -> plain arrays.

:func:`linear_model_arrays` turns a fitted scikit-learn logistic/softmax classifier, or a pipeline
whose steps before it are affine, into ``(A, b, classes, feature_names)`` with
``logits(x) = A @ x + b`` in the *raw* input space (the affine steps folded in);
:func:`check_linear_arrays` checks and normalises such arrays when a user gives them directly
(:meth:`fastcf.LinearExplainer.from_arrays`).
"""

from __future__ import annotations

import numpy as np

from ._validation import as_float_array

__all__ = ["check_linear_arrays", "linear_model_arrays", "SUPPORTED_LINEAR"]

SUPPORTED_LINEAR = (
    "LogisticRegression (binary or multinomial), LogisticRegressionCV, "
    "SGDClassifier(loss='log_loss') (binary), or a Pipeline of affine steps (StandardScaler, "
    "MinMaxScaler, MaxAbsScaler, PCA) ending in one of those"
)


def _check_fitted(est, attr, what):
    if not hasattr(est, attr):
        from sklearn.exceptions import NotFittedError

        raise NotFittedError(
            f"this {type(est).__name__} is not fitted yet ({what} has no {attr!r}); call fit first"
        )


def _classifier_arrays(clf):
    name = type(clf).__name__
    if name == "OneVsRestClassifier":
        raise TypeError(
            "OneVsRestClassifier is not a softmax model: its classes' probabilities are normalised "
            f"one-vs-rest scores. Supported: {SUPPORTED_LINEAR}"
        )
    if name in ("LogisticRegression", "LogisticRegressionCV"):
        _check_fitted(clf, "coef_", "model")
        K = len(clf.classes_)
        mc = getattr(clf, "multi_class", "auto")
        if K > 2 and (mc == "ovr" or (mc == "auto" and getattr(clf, "solver", "") == "liblinear")):
            raise TypeError(
                f"{name} with one-vs-rest multiclass (multi_class={mc!r}, "
                f"solver={getattr(clf, 'solver', None)!r}) is not a softmax model; refit with a "
                "multinomial solver (e.g. the default 'lbfgs')"
            )
    elif name == "SGDClassifier":
        _check_fitted(clf, "coef_", "model")
        if clf.loss not in ("log_loss", "log"):
            raise TypeError(
                f"SGDClassifier(loss={clf.loss!r}) has no probabilities; only loss='log_loss' is "
                "a logistic model"
            )
        if len(clf.classes_) > 2:
            raise TypeError(
                "a multiclass SGDClassifier is one-vs-rest, not a softmax model; only binary "
                "SGDClassifier(loss='log_loss') is supported"
            )
    else:
        raise TypeError(f"cannot explain a {name}; supported: {SUPPORTED_LINEAR}")
    A = np.array(clf.coef_, dtype=np.float64, order="C", ndmin=2)
    b = np.array(clf.intercept_, dtype=np.float64, ndmin=1).ravel()
    if b.shape[0] != A.shape[0]:
        b = np.broadcast_to(b, (A.shape[0],)).copy()
    return A, b, np.asarray(clf.classes_)


def _fold_step(step, A, b):
    """Given logits = A x' + b with x' = step(x), return (A', b') with logits = A' x + b'."""
    name = type(step).__name__
    if step is None or step == "passthrough":
        return A, b
    if name == "StandardScaler":
        _check_fitted(step, "n_features_in_", "StandardScaler")
        scale = step.scale_ if step.scale_ is not None else 1.0
        mean = step.mean_ if step.mean_ is not None else 0.0
        inv = 1.0 / np.asarray(scale, dtype=np.float64)
        A2 = A * inv
        b2 = b - A2 @ np.broadcast_to(np.asarray(mean, dtype=np.float64), (A.shape[1],))
        return A2, b2
    if name == "MinMaxScaler":
        _check_fitted(step, "scale_", "MinMaxScaler")
        if getattr(step, "clip", False):
            raise TypeError("MinMaxScaler(clip=True) is not affine; refit with clip=False")
        return A * step.scale_, b + A @ step.min_
    if name == "MaxAbsScaler":
        _check_fitted(step, "scale_", "MaxAbsScaler")
        return A / step.scale_, b
    if name == "PCA":
        _check_fitted(step, "components_", "PCA")
        C = np.asarray(step.components_, dtype=np.float64)
        if step.whiten:
            C = C / np.sqrt(step.explained_variance_)[:, None]
        A2 = A @ C
        return A2, b - A2 @ step.mean_
    raise TypeError(
        f"pipeline step {name} is not an affine transform fastcf can fold; supported steps: "
        "StandardScaler, MinMaxScaler(clip=False), MaxAbsScaler, PCA, 'passthrough'"
    )


def check_linear_arrays(A, b, classes=None, feature_names=None):
    """Return ``(A, b, classes, feature_names)`` of logits ``A x + b`` given as arrays, checked.

    Parameters
    ----------
    A : array_like of shape (K, D)
        ``K = 1`` means binary logistic with ``p(classes[1]) = σ(A x + b)``.
    b : array_like of shape (K,)
    classes : array_like of shape (max(K, 2),), optional
        Distinct class labels; ``0, 1, ..., K-1`` by default.
    feature_names : array_like of str, optional

    Returns
    -------
    A : ndarray of shape (K, D)
    b : ndarray of shape (K,)
    classes : ndarray
    feature_names : ndarray of str (object) or None

    Raises
    ------
    ValueError
        If the shapes do not match, A has no row or no column, or the labels are not distinct.

    Examples
    --------
    >>> A, b, classes, names = check_linear_arrays([[1.0, 2.0]], 0.5)
    >>> b.tolist(), classes.tolist(), names
    ([0.5], [0, 1], None)
    """
    A = as_float_array(A, "A", ndim=2)
    b = np.atleast_1d(as_float_array(b, "b", ndim=(0, 1)))
    if b.shape[0] != A.shape[0]:
        raise ValueError(f"b must have shape ({A.shape[0]},) to match A {A.shape}; got {b.shape}")
    if A.shape[1] == 0:
        raise ValueError("A must have at least one feature (column)")
    if A.shape[0] == 0:
        raise ValueError(f"A must have at least one row (K >= 1); got shape {A.shape}")
    n_cls = max(A.shape[0], 2)
    classes = np.arange(n_cls) if classes is None else np.asarray(classes)
    if classes.ndim != 1 or classes.shape[0] != n_cls:
        raise ValueError(
            f"classes must have {n_cls} labels for A with {A.shape[0]} row(s); got {classes.shape}"
        )
    if len(set(classes.tolist())) != n_cls:
        raise ValueError(f"classes must be distinct; got {classes.tolist()}")
    if feature_names is not None:
        feature_names = np.asarray([str(f) for f in feature_names], dtype=object)
        if feature_names.shape != (A.shape[1],):
            raise ValueError(
                f"feature_names must have {A.shape[1]} names; got {feature_names.shape}"
            )
    return A, b, classes, feature_names


def linear_model_arrays(model):
    """Return ``(A, b, classes, feature_names)`` of a fitted linear probabilistic classifier.

    Parameters
    ----------
    model : estimator
        See :data:`SUPPORTED_LINEAR`.

    Returns
    -------
    A : ndarray of shape (K, D)
        ``K = 1`` for a binary model (``p(classes[1]) = σ(A x + b)``).
    b : ndarray of shape (K,)
    classes : ndarray
    feature_names : ndarray of str or None

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> X = np.array([[0.0, 1.0], [1.0, 3.0], [2.0, 2.0], [3.0, 5.0]]); y = [0, 0, 1, 1]
    >>> pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    >>> A, b, classes, names = linear_model_arrays(pipe)
    >>> np.allclose(X @ A.T + b, pipe.decision_function(X)[:, None])
    True
    """
    steps = []
    clf = model
    if type(model).__name__ == "Pipeline":
        if not model.steps:
            raise TypeError("empty Pipeline")
        steps = [s for _, s in model.steps[:-1]]
        clf = model.steps[-1][1]
    A, b, classes = _classifier_arrays(clf)
    for step in reversed(steps):
        A, b = _fold_step(step, A, b)
    names = getattr(model, "feature_names_in_", None)
    if names is None and steps:
        names = getattr(steps[0], "feature_names_in_", None)
    if names is None:
        names = getattr(clf, "feature_names_in_", None) if not steps else None
    if names is not None:
        names = np.asarray([str(n) for n in names], dtype=object)
    return np.ascontiguousarray(A), np.ascontiguousarray(b), classes, names
