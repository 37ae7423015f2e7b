"""Fitted models of other libraries -> plain arrays.

:func:`linear_model_arrays` turns a fitted scikit-learn linear classifier, or a pipeline whose
steps before it are affine, into ``(A, b, classes, feature_names, probabilistic)`` with
``scores(x) = A @ x + b`` in the *raw* input space (the affine steps folded in);
:func:`check_linear_arrays` checks and normalises such arrays when a user gives them directly
(:meth:`fastcf.LinearExplainer.from_arrays`).

Every supported model predicts by its scores: the argmax of ``A x + b`` (K ≥ 3 rows; ties to the
first class, as ``np.argmax``), or, with one row, ``classes[1]`` iff ``A x + b > 0``. That is
what ``region=True`` needs. ``probabilistic`` says whether the model's ``predict_proba`` is also
the sigmoid (one row) or the softmax (K rows) of those same scores, which ``lam=`` and ``proba=``
need. Checked against each model's own ``decision_function``, ``predict`` and ``predict_proba``
in ``tests/test_linear_models.py``:

===================================================  ====================================
model                                                probabilities = σ / softmax(scores)
===================================================  ====================================
LogisticRegression(CV), binary or multinomial        yes
SGDClassifier(loss="log_loss"), binary               yes
LinearDiscriminantAnalysis                           yes
SGDClassifier, multiclass log_loss                   no (normalised one-vs-rest sigmoids)
SGDClassifier(loss="modified_huber")                 no (clipped scores, normalised)
SGDClassifier (other losses), LinearSVC, Perceptron  no (no predict_proba)
RidgeClassifier(CV), PassiveAggressiveClassifier     no (no predict_proba)
SVC / NuSVC(kernel="linear"), binary                 no (Platt scaling is fitted apart)
OneVsRestClassifier of one of these                  binary: as its estimator; else no
===================================================  ====================================
"""

from __future__ import annotations

import numpy as np

from ._catalog import SCORE_MODELS, signpost
from ._fold import (
    AFFINE_STEPS,
    Terms,
    check_scores,
    fold_scores,
    pipeline_parts,
    probe_rows,
)
from ._validation import as_float_array

__all__ = [
    "check_linear_arrays",
    "check_linear_model",
    "linear_model_arrays",
    "linear_model_fold",
    "score_factor",
    "SUPPORTED_LINEAR",
    "PROBABILISTIC_LINEAR",
]

#: the models whose probabilities are a sigmoid/softmax of their scores (lam= and proba=)
PROBABILISTIC_LINEAR = (
    "LogisticRegression or LogisticRegressionCV (binary or multinomial), binary "
    "SGDClassifier(loss='log_loss'), LinearDiscriminantAnalysis, or a binary "
    "OneVsRestClassifier of one of those"
)

SUPPORTED_LINEAR = (
    "LogisticRegression, LogisticRegressionCV, SGDClassifier (any loss), LinearSVC, "
    "RidgeClassifier, RidgeClassifierCV, Perceptron, PassiveAggressiveClassifier, "
    "LinearDiscriminantAnalysis, binary SVC or NuSVC with kernel='linear', a "
    "OneVsRestClassifier of one of those, or a Pipeline of affine steps ("
    f"{AFFINE_STEPS}) ending in one of those; lam= and proba= need a model "
    f"whose probabilities are a sigmoid/softmax of its scores: {PROBABILISTIC_LINEAR}"
)

_SCORE_MODELS = SCORE_MODELS  # (the catalog's: fastcf._catalog)


def _check_fitted(est, attr, what):
    if not hasattr(est, attr):
        from sklearn.exceptions import NotFittedError

        raise NotFittedError(
            f"this {type(est).__name__} is not fitted yet ({what} has no {attr!r}); call fit first"
        )


def _dense(a):
    """Return ``a`` as a float64 array (``coef_`` is scipy.sparse after ``sparsify()``)."""
    if hasattr(a, "toarray"):
        a = a.toarray()
    return np.asarray(a, dtype=np.float64)


def _score_arrays(clf, n_classes):
    """Return (A, b) of ``coef_`` and ``intercept_``, with one row per class (one if binary)."""
    A = np.array(_dense(clf.coef_), dtype=np.float64, order="C", ndmin=2)
    b = np.array(_dense(clf.intercept_), dtype=np.float64, ndmin=1).ravel()
    if b.shape[0] != A.shape[0]:  # intercept_ = 0.0 (fit_intercept=False in some models)
        b = np.broadcast_to(b, (A.shape[0],)).copy()
    rows = 1 if n_classes == 2 else n_classes
    if A.shape[0] != rows or n_classes < 2:
        raise TypeError(
            f"{type(clf).__name__} has coef_ of shape {A.shape} for {n_classes} classes; "
            f"expected {rows} row(s) of scores"
        )
    return A, b


def _logistic_ovr(clf, n_classes):
    """Whether a LogisticRegression(CV) is one-vs-rest (scikit-learn < 1.8 had ``multi_class``)."""
    mc = getattr(clf, "multi_class", "auto")
    if mc in ("ovr", "warn"):
        return True
    if mc in ("auto", "deprecated"):
        return n_classes <= 2 or getattr(clf, "solver", "") == "liblinear"
    return False  # "multinomial"


def _linear_classifier_arrays(clf, name):
    """Return (A, b, classes, probabilistic) of a classifier of ``_SCORE_MODELS``."""
    _check_fitted(clf, "coef_", "model")
    binarizer = getattr(clf, "_label_binarizer", None)  # RidgeClassifier(CV)
    if str(getattr(binarizer, "y_type_", "")).startswith("multilabel"):
        raise TypeError(
            f"a multilabel {name} predicts a set of labels per sample, not one class: no fastcf "
            "explainer takes multilabel models (fit it on one label per sample; LinearExplainer "
            "takes it then)"
        )
    classes = np.asarray(clf.classes_)
    K = len(classes)
    A, b = _score_arrays(clf, K)
    if name in ("LogisticRegression", "LogisticRegressionCV"):
        ovr = _logistic_ovr(clf, K)
        probabilistic = K == 2 or not ovr  # a binary model is σ(score) either way
        if K == 2 and not ovr:
            # multi_class="multinomial" on two classes (scikit-learn < 1.8): predict_proba is
            # softmax([-s, s]) = σ(2s); doubling the scores keeps predict and makes p = σ(A x + b)
            A, b = 2.0 * A, 2.0 * b
    elif name == "SGDClassifier":
        # log_loss: σ(score) when binary; multiclass normalises one-vs-rest sigmoids
        probabilistic = clf.loss in ("log_loss", "log") and K == 2
    else:
        probabilistic = name == "LinearDiscriminantAnalysis"  # σ / softmax of decision_function
    return A, b, classes, probabilistic


def _svc_arrays(clf, name):
    """Return (A, b, classes, False) of a binary SVC / NuSVC with a linear kernel."""
    if not (isinstance(clf.kernel, str) and clf.kernel == "linear"):
        raise TypeError(f"{name}(kernel={clf.kernel!r}): {_signpost(clf)}")
    _check_fitted(clf, "support_vectors_", name)
    classes = np.asarray(clf.classes_)
    if len(classes) > 2:
        raise TypeError(
            f"a multiclass {name} ({len(classes)} classes) predicts by one-vs-one voting among "
            "its pairwise classifiers, which is not the argmax of affine scores "
            "(decision_function_shape='ovr' only reshapes those votes); use a binary "
            f"{name}, LinearSVC, or OneVsRestClassifier({name}(kernel='linear')) (LinearExplainer "
            "takes those)"
        )
    # coef_ and intercept_ carry scikit-learn's binary sign convention: decision_function
    # = coef_ @ x + intercept_ > 0 means classes_[1] (checked in the tests)
    A, b = _score_arrays(clf, len(classes))
    return A, b, classes, False


def _dual_terms(clf, b):
    """Return the :class:`~fastcf._fold.Terms` of a linear SVM's dual sum ``Σ_i α_i ⟨s_i, x⟩ + b``.

    libsvm computes each kernel value ``⟨s_i, x⟩`` (a sum of D products) and then their
    weighted sum over the support vectors: two layers, whose terms are bounded by
    ``|α|ᵀ |S| |x| + |b|`` — far larger than the primal ``|coef_| |x|`` where the support
    vectors' terms cancel (:mod:`fastcf._linear.dual`).
    """
    S = np.abs(
        np.asarray(
            clf.support_vectors_.toarray()
            if hasattr(clf.support_vectors_, "toarray")
            else clf.support_vectors_,
            dtype=np.float64,
        )
    )
    alpha = np.abs(
        np.asarray(
            clf.dual_coef_.toarray() if hasattr(clf.dual_coef_, "toarray") else clf.dual_coef_,
            dtype=np.float64,
        )
    )
    A = alpha @ S  # (1, D)
    return Terms(A, np.abs(np.asarray(b, dtype=np.float64)), 2, max(S.shape[0], S.shape[1], 1))


def _ovr_arrays(clf):
    """Return (A, b, classes, probabilistic) of a OneVsRestClassifier: a row per estimator."""
    _check_fitted(clf, "estimators_", "OneVsRestClassifier")
    if clf.label_binarizer_.y_type_.startswith("multilabel"):
        raise TypeError(
            "a multilabel OneVsRestClassifier predicts a set of labels per sample, not one class: "
            "no fastcf explainer takes multilabel models"
        )
    rows, offsets, probs, terms = [], [], [], []
    for i, est in enumerate(clf.estimators_):
        try:
            A, b, _, p, t = _classifier_arrays(est)
        except TypeError as exc:
            raise TypeError(
                f"OneVsRestClassifier: estimator {i} ({type(est).__name__}) is not supported: {exc}"
            ) from exc
        if A.shape[0] != 1:
            raise TypeError(
                f"OneVsRestClassifier: estimator {i} has {A.shape[0]} score rows; a binary "
                "estimator has one"
            )
        rows.append(A[0])
        offsets.append(b[0])
        probs.append(p)
        terms.append(t)
    # predict: argmax of the estimators' decision functions (ties to the first, as np.argmax);
    # binary (one estimator): classes_[1] iff its score > 0. predict_proba normalises the
    # estimators' probabilities: the estimator's own sigmoid when binary, not a softmax else
    probabilistic = len(rows) == 1 and probs[0]
    # each estimator's terms (an estimator may be a pipeline, folded on its own)
    stacked = Terms(
        np.vstack([t.A for t in terms]),
        np.concatenate([t.b for t in terms]),
        max(t.depth for t in terms),
        max(t.width for t in terms),
    )
    return (
        np.vstack(rows), np.asarray(offsets), np.asarray(clf.classes_), probabilistic, stacked,
    )  # fmt: skip


def _classifier_arrays(clf):
    """Return (A, b, classes, probabilistic, terms) of a classifier, or of a Pipeline ending in one.

    ``terms``: the :class:`~fastcf._fold.Terms` of its scores (the size of the terms it adds up).
    """
    name = type(clf).__name__
    if name == "Pipeline":
        return linear_model_fold(clf)
    if name == "OneVsRestClassifier":
        return _ovr_arrays(clf)
    if name in _SCORE_MODELS:
        A, b, classes, probabilistic = _linear_classifier_arrays(clf, name)
        return A, b, classes, probabilistic, Terms.of_classifier(A, b)
    if name in ("SVC", "NuSVC"):
        A, b, classes, probabilistic = _svc_arrays(clf, name)
        return A, b, classes, probabilistic, _dual_terms(clf, b)
    if name == "OneVsOneClassifier":
        raise TypeError(
            "OneVsOneClassifier predicts by one-vs-one voting, not the argmax of affine scores; "
            "use OneVsRestClassifier instead (LinearExplainer takes it)"
        )
    raise TypeError(f"LinearExplainer cannot explain a {name}: {_signpost(clf)}")


def _signpost(model):
    """Return :func:`fastcf._catalog.signpost`'s sentence (which explainer takes the model)."""
    return signpost(model)


def linear_model_fold(model):
    """Return ``(A, b, classes, probabilistic, terms)`` of a model, a Pipeline's steps folded in.

    The one fold of a model: the scores of its classifier composed with its steps' maps
    (:func:`fastcf._fold.fold_scores`), beside the size of the terms the model adds up to compute
    them (``terms``, a :class:`~fastcf._fold.Terms`: the scale of its rounding, from its own
    coefficients). A bare classifier (no steps) is its own arrays.

    Parameters
    ----------
    model : estimator
        As :func:`linear_model_arrays` takes.

    Returns
    -------
    A, b, classes, probabilistic
        As :func:`linear_model_arrays` returns them.
    terms : Terms

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> X = np.array([[100.0, 1.0], [101.0, 3.0], [102.0, 2.0], [103.0, 5.0]]); y = [0, 0, 1, 1]
    >>> pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    >>> A, b, classes, probabilistic, terms = linear_model_fold(pipe)
    >>> terms.depth, bool(np.all(terms.scale(X) >= np.abs(X) @ np.abs(A).T + np.abs(b)))
    (2, True)
    """
    steps, clf = pipeline_parts(model)
    A, b, classes, probabilistic, terms = _classifier_arrays(clf)
    A, b, terms = fold_scores(steps, A, b, getattr(model, "n_features_in_", None), terms)
    return A, b, classes, probabilistic, terms


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


def linear_model_arrays(model, *, with_terms=False):
    """Return ``(A, b, classes, feature_names, probabilistic)`` of a fitted linear classifier.

    ``with_terms``: also the size of the terms the model adds up (the :class:`~fastcf._fold.Terms`
    of :func:`linear_model_fold`, last), for :func:`check_linear_model` without a second fold.

    Parameters
    ----------
    model : estimator
        See :data:`SUPPORTED_LINEAR`: a classifier that predicts the argmax of affine scores
        (the sign of one), or a Pipeline of affine steps ending in one.

    Returns
    -------
    A : ndarray of shape (K, D)
        ``K = 1`` for a binary model: ``classes[1]`` iff ``A x + b > 0``
        (``p(classes[1]) = σ(A x + b)`` for a probabilistic one).
    b : ndarray of shape (K,)
    classes : ndarray
    feature_names : ndarray of str or None
    probabilistic : bool
        Whether the model's ``predict_proba`` is the sigmoid (K = 1) or softmax of the scores
        ``A x + b`` (:data:`PROBABILISTIC_LINEAR`); ``False`` means the scores only decide the
        class.

    Raises
    ------
    TypeError
        If the model, or a step of the pipeline, is not supported (the message names it).
    sklearn.exceptions.NotFittedError
        If the model or a step is not fitted.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn.svm import LinearSVC
    >>> X = np.array([[0.0, 1.0], [1.0, 3.0], [2.0, 2.0], [3.0, 5.0]]); y = [0, 0, 1, 1]
    >>> pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    >>> A, b, classes, names, probabilistic = linear_model_arrays(pipe)
    >>> np.allclose(X @ A.T + b, pipe.decision_function(X)[:, None]), probabilistic
    (True, True)
    >>> svm = make_pipeline(StandardScaler(), LinearSVC()).fit(X, y)
    >>> A, b, classes, names, probabilistic = linear_model_arrays(svm)
    >>> np.allclose(X @ A.T + b, svm.decision_function(X)[:, None]), probabilistic
    (True, False)
    """
    A, b, classes, probabilistic, terms = linear_model_fold(model)
    steps, clf = pipeline_parts(model)
    names = getattr(model, "feature_names_in_", None)
    if names is None and steps:
        names = getattr(steps[0][1], "feature_names_in_", None)
    if names is None:
        names = getattr(clf, "feature_names_in_", None) if not steps else None
    if names is not None:
        names = np.asarray([str(n) for n in names], dtype=object)
    out = (np.ascontiguousarray(A), np.ascontiguousarray(b), classes, names, bool(probabilistic))
    return out + (terms,) if with_terms else out


def model_name(model):
    """Return a short name of a model for messages, e.g. ``"Pipeline(StandardScaler, SVC)"``.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn.svm import LinearSVC
    >>> model_name(make_pipeline(StandardScaler(), LinearSVC()))
    'Pipeline(StandardScaler, LinearSVC)'
    """
    if isinstance(model, str):  # a "passthrough" step
        return model
    name = type(model).__name__
    steps = getattr(model, "steps", None) if name == "Pipeline" else None
    if steps:
        return f"{name}({', '.join(model_name(s) for _, s in steps)})"
    inner = getattr(model, "estimator", None) if name == "OneVsRestClassifier" else None
    return f"{name}({model_name(inner)})" if inner is not None else name


def not_probabilistic(source, asked):
    """Return the message of a query that needs probabilities, asked of a model without any.

    Parameters
    ----------
    source : str
        The model (:func:`model_name`) or ``"from_arrays(..., probabilistic=False)"``.
    asked : str
        What was asked, e.g. ``"proba= was asked"``.

    Examples
    --------
    >>> print(not_probabilistic("LinearSVC", "proba= was asked"))  # doctest: +ELLIPSIS
    LinearSVC scores are not probabilities (proba= was asked): only region=True is supported. ...
    """
    return (
        f"{source} scores are not probabilities ({asked}): only region=True is supported. "
        "proba=, lam= (problem (2), the default of explain, and path()) and predict_proba need "
        "a model whose probabilities are a sigmoid/softmax of its scores ("
        f"{PROBABILISTIC_LINEAR}); for arrays that are such logits, use "
        "LinearExplainer.from_arrays(..., probabilistic=True)"
    )


def score_factor(clf):
    """Return the factor between fastcf's scores and the classifier's ``decision_function``.

    2 for a two-class LogisticRegression(multi_class="multinomial") (scikit-learn < 1.8), whose
    scores :func:`_linear_classifier_arrays` doubles; 1 otherwise.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> score_factor(LogisticRegression().fit([[0.0], [1.0]], [0, 1]))
    1.0
    """
    name = type(clf).__name__
    if name in ("LogisticRegression", "LogisticRegressionCV") and hasattr(clf, "classes_"):
        if len(clf.classes_) == 2 and not _logistic_ovr(clf, 2):
            return 2.0
    return 1.0


def check_linear_model(model, A, b, probabilistic, rows=None, terms=None):
    """Check folded scores ``A x + b`` against the fitted model itself, once.

    The scores must reproduce the model's own ``decision_function`` (and, when
    ``probabilistic``, its ``predict_proba``) on probe rows: ``rows`` (training rows, e.g. those
    given to ``fit_mad``) or rows spread over the scale the pipeline's first step recorded.

    Parameters
    ----------
    model : estimator
        The model the user gave.
    A, b : ndarray
        Its folded scores (:func:`linear_model_arrays`).
    probabilistic : bool
    rows : array_like of shape (n, D), optional
    terms : Terms, optional
        The size of the model's terms, as :func:`linear_model_fold` returns it beside the scores
        (default: folded again from the model).

    Raises
    ------
    TypeError
        If they differ by more than rounding (:func:`fastcf._fold.tolerance`; the message names
        the pipeline's steps).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> X = np.array([[0.0, 1.0], [1.0, 3.0], [2.0, 2.0], [3.0, 5.0]]); y = [0, 0, 1, 1]
    >>> clf = LogisticRegression().fit(X, y)
    >>> A, b, classes, names, p = linear_model_arrays(clf)
    >>> check_linear_model(clf, A, b, p)  # silent: the scores are the model's
    >>> check_linear_model(clf, A, b + 1.0, p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    TypeError: the folded model (LogisticRegression) does not reproduce the model's ...
    """
    steps, clf = pipeline_parts(model)
    if terms is None:  # the model's own terms: the scale of its rounding
        terms = linear_model_fold(model)[4]
    n = A.shape[1]
    # at most ~2²² numbers of probe rows (a 10⁵-feature model gets 32 rows)
    k = int(min(64, max(8, (1 << 22) // max(n, 1))))
    R = probe_rows(steps, n, rows=rows, k=k)
    X = R.to_numpy(dtype=np.float64) if hasattr(R, "to_numpy") else np.asarray(R, np.float64)
    if not hasattr(R, "columns") and getattr(model, "feature_names_in_", None) is not None:
        import pandas as pd  # a model fitted on a DataFrame warns on bare arrays

        R = pd.DataFrame(X, columns=list(model.feature_names_in_))
    check_scores(
        model,
        R,
        X @ A.T + b,
        terms.scale(X),
        depth=terms.depth,
        width=max(terms.width, n),
        steps=steps,
        probabilistic=probabilistic,
        factor=score_factor(clf),
        what=f"the folded model ({model_name(model)})",
    )
