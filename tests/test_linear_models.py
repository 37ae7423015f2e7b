"""Every scikit-learn linear classifier folded into scores (A, b), and which ones are probabilistic.

For each model: the folded scores reproduce the model's own ``decision_function`` and ``predict``
(alone and in pipelines with StandardScaler / MinMaxScaler / PCA), ``region=True`` answers are
classified as the target by the model, and ``probabilistic_`` is True exactly where the model's
``predict_proba`` is the sigmoid/softmax of those scores (checked numerically both ways).
"""

import pickle
import warnings

import numpy as np
import pytest
import sklearn.linear_model as sklm
from scipy.special import expit, softmax
from sklearn.datasets import load_breast_cancer, load_wine
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.linear_model import (
    LogisticRegression,
    LogisticRegressionCV,
    Perceptron,
    RidgeClassifier,
    RidgeClassifierCV,
    SGDClassifier,
)
from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler, PolynomialFeatures, StandardScaler
from sklearn.svm import SVC, LinearSVC, NuSVC

from fastcf import LinearExplainer
from fastcf.adapters import SUPPORTED_LINEAR, linear_model_arrays

HAS_PA = hasattr(sklm, "PassiveAggressiveClassifier")


def fit_quiet(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # PassiveAggressiveClassifier is deprecated since scikit-learn 1.8
        warnings.filterwarnings("ignore", ".*PassiveAggressive.*", FutureWarning)
        # LogisticRegressionCV's l1_ratios default changes in scikit-learn 1.10
        warnings.filterwarnings("ignore", ".*l1_ratios.*", FutureWarning)
        warnings.filterwarnings("ignore", ".*'scoring'.*", FutureWarning)
        warnings.filterwarnings("ignore", ".*use_legacy_attributes.*", FutureWarning)
        # SVC(probability=True) is deprecated since scikit-learn 1.9
        warnings.filterwarnings("ignore", ".*`probability` parameter.*", FutureWarning)
        return model.fit(X, y)


def passive_aggressive():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", ".*PassiveAggressive.*", FutureWarning)
        return sklm.PassiveAggressiveClassifier(random_state=0)


def _data(kind):
    X, y = (load_breast_cancer if kind == "binary" else load_wine)(return_X_y=True)
    return X, y


_Xb, _yb = _data("binary")
_Xm, _ym = _data("multi")
DATA = {
    "binary": (_Xb, _yb, StandardScaler().fit(_Xb)),
    "multi": (_Xm, _ym, StandardScaler().fit(_Xm)),
}

# name -> (factory, probabilistic when binary, when multiclass; None = refused)
MODELS = {
    "LogisticRegression": (lambda: LogisticRegression(max_iter=5000), True, True),
    "LogisticRegressionCV": (lambda: LogisticRegressionCV(Cs=3, cv=3, max_iter=2000), True, True),
    "SGD(hinge)": (lambda: SGDClassifier(random_state=0), False, False),
    "SGD(log_loss)": (lambda: SGDClassifier(loss="log_loss", random_state=0), True, False),
    "SGD(modified_huber)": (
        lambda: SGDClassifier(loss="modified_huber", random_state=0),
        False,
        False,
    ),
    "LinearSVC": (lambda: LinearSVC(max_iter=20000), False, False),
    "LinearSVC(crammer_singer)": (
        lambda: LinearSVC(multi_class="crammer_singer", max_iter=20000),
        False,
        False,
    ),
    "RidgeClassifier": (RidgeClassifier, False, False),
    "RidgeClassifierCV": (RidgeClassifierCV, False, False),
    "Perceptron": (lambda: Perceptron(random_state=0), False, False),
    "LDA": (LinearDiscriminantAnalysis, True, True),
    "LDA(lsqr, shrinkage)": (
        lambda: LinearDiscriminantAnalysis(solver="lsqr", shrinkage="auto"),
        True,
        True,
    ),
    "SVC(linear)": (lambda: SVC(kernel="linear"), False, None),
    "NuSVC(linear)": (lambda: NuSVC(kernel="linear", nu=0.2), False, None),
    "OvR(LogisticRegression)": (
        lambda: OneVsRestClassifier(LogisticRegression(max_iter=5000)),
        True,
        False,
    ),
    "OvR(LinearSVC)": (lambda: OneVsRestClassifier(LinearSVC(max_iter=20000)), False, False),
    "OvR(Pipeline(MinMaxScaler, Perceptron))": (
        lambda: OneVsRestClassifier(make_pipeline(MinMaxScaler(), Perceptron(random_state=0))),
        False,
        False,
    ),
}
if HAS_PA:
    MODELS["PassiveAggressiveClassifier"] = (passive_aggressive, False, False)

PIPES = {
    # "plain": the model fitted on standardised data (no step to fold)
    "plain": lambda m: m,
    "standard": lambda m: make_pipeline(StandardScaler(), m),
    "minmax": lambda m: make_pipeline(MinMaxScaler(), m),
    "standard+pca": lambda m: make_pipeline(StandardScaler(), PCA(n_components=8), m),
}

CASES = [
    (name, kind, pipe)
    for name, (_, pb, pm) in MODELS.items()
    for kind, prob in (("binary", pb), ("multi", pm))
    if prob is not None
    for pipe in PIPES
]


def fitted(name, kind, pipe):
    X, y, scaler = DATA[kind]
    if pipe == "plain":
        X = scaler.transform(X)
    model = fit_quiet(PIPES[pipe](MODELS[name][0]()), X, y)
    return model, X, y


def probes(ex, X, n=200, seed=0):
    """Points near the data where the model's scores are moderate (about N(0, 2²)).

    On the data the scores of these models are often so large that every form of probabilities
    saturates to 0/1 and agrees; here the forms are told apart. x = x_c + δ with x_c the data
    mean and δ the least-squares step to scores S (directions of tiny singular values cut off:
    LDA's rows are nearly dependent, and a huge δ would make A x + b a cancellation).
    """
    xc = X.mean(axis=0)
    S = np.random.default_rng(seed).normal(scale=2.0, size=(n, ex.coef_.shape[0]))
    step = np.linalg.lstsq(ex.coef_, (S - ex.decision_function(xc[None]).reshape(1, -1)).T, 1e-6)
    return xc + step[0].T


def scores_to_proba(d):
    """σ / softmax of scikit-learn decision_function values ((N,) binary, (N, K) else)."""
    if d.ndim == 1:
        p = expit(d)
        return np.column_stack([1 - p, p])
    return softmax(d, axis=1)


@pytest.mark.parametrize(("name", "kind", "pipe"), CASES)
def test_scores_and_predictions_match_the_model(name, kind, pipe):
    model, X, y = fitted(name, kind, pipe)
    ex = LinearExplainer(model)
    K = len(np.unique(y))
    assert ex.coef_.shape == ((1 if K == 2 else K), X.shape[1])
    assert ex.classes_.tolist() == model.classes_.tolist()
    d = model.decision_function(X)
    z = ex.decision_function(X)
    assert z.shape == d.shape
    np.testing.assert_allclose(z, d, rtol=1e-9, atol=1e-9 * (1 + np.abs(d).max()))
    # predict: the same labels wherever the scores are not within rounding of a tie
    if d.ndim == 1:
        clear = np.abs(d) > 1e-8 * (1 + np.abs(d).max())
    else:
        top2 = np.sort(d, axis=1)[:, -2:]
        clear = top2[:, 1] - top2[:, 0] > 1e-8 * (1 + np.abs(d).max())
    assert clear.mean() > 0.9
    np.testing.assert_array_equal(ex.predict(X)[clear], model.predict(X)[clear])
    assert ex.probabilistic_ is MODELS[name][1 if kind == "binary" else 2]


@pytest.mark.parametrize(("name", "kind", "pipe"), [c for c in CASES if c[2] != "minmax"])
def test_region_answers_are_the_target_for_the_model(name, kind, pipe):
    model, X, y = fitted(name, kind, pipe)
    ex = LinearExplainer(model)
    rows = np.arange(0, X.shape[0], X.shape[0] // 5)[:5]
    pred = model.predict(X[rows])
    classes = model.classes_
    targets = np.array(
        [classes[(np.flatnonzero(classes == p)[0] + 1) % len(classes)] for p in pred]
    )
    batch = ex.explain(X[rows], targets, region=True)
    assert batch.success.all()
    np.testing.assert_array_equal(model.predict(batch.x), targets)
    assert batch.proba is None if not ex.probabilistic_ else batch.proba.shape == (5, len(classes))
    one = ex.explain(X[rows[0]], targets[0], region=True)  # the short single-query path
    assert one.success and model.predict(one.x[None])[0] == targets[0]
    if ex.probabilistic_:
        np.testing.assert_allclose(one.proba, model.predict_proba(one.x[None])[0], atol=1e-9)
    else:
        assert one.proba is None
        np.testing.assert_array_equal(one.x, batch.x[0])


# ------------------------------------------------------------ which models are probabilistic
PROBA_MODELS = [
    (name, kind)
    for name, (_, pb, pm) in MODELS.items()
    for kind, prob in (("binary", pb), ("multi", pm))
    if prob is not None
]


@pytest.mark.parametrize(("name", "kind"), PROBA_MODELS)
def test_probabilistic_iff_predict_proba_is_sigmoid_or_softmax_of_scores(name, kind):
    model, X, _ = fitted(name, kind, "standard")
    ex = LinearExplainer(model)
    Xp = np.vstack([X, probes(ex, X)])
    if ex.probabilistic_:
        P = model.predict_proba(Xp)
        assert np.abs(P - scores_to_proba(model.decision_function(Xp))).max() < 1e-12
        np.testing.assert_allclose(ex.predict_proba(Xp), P, rtol=1e-8, atol=1e-12)
        return
    if hasattr(model, "predict_proba"):
        try:
            P = model.predict_proba(Xp)
        except (AttributeError, NotImplementedError):  # e.g. SGD(hinge): no probabilities
            P = None
        if P is not None:  # not of the form: far from a sigmoid/softmax of the scores
            assert np.abs(P - scores_to_proba(model.decision_function(Xp))).max() > 0.05
    with pytest.raises(TypeError, match="not probabilities"):
        ex.predict_proba(X[:2])


def test_svc_with_platt_probabilities_is_not_probabilistic():
    X, y, scaler = DATA["binary"]
    Xs = scaler.transform(X)
    model = fit_quiet(SVC(kernel="linear", probability=True, random_state=0), Xs, y)
    ex = LinearExplainer(model)
    assert not ex.probabilistic_
    Xp = probes(ex, Xs)
    gap = np.abs(model.predict_proba(Xp) - scores_to_proba(model.decision_function(Xp))).max()
    assert gap > 0.05


@pytest.mark.parametrize(
    "loss",
    [
        "hinge",
        "log_loss",
        "modified_huber",
        "squared_hinge",
        "perceptron",
        "squared_error",
        "huber",
        "epsilon_insensitive",
        "squared_epsilon_insensitive",
    ],
)
@pytest.mark.parametrize("kind", ["binary", "multi"])
def test_sgd_every_loss(loss, kind):
    X, y, scaler = DATA[kind]
    model = fit_quiet(
        make_pipeline(StandardScaler(), SGDClassifier(loss=loss, random_state=0)), X, y
    )
    ex = LinearExplainer(model)
    d = model.decision_function(X)
    np.testing.assert_allclose(
        ex.decision_function(X), d, rtol=1e-9, atol=1e-9 * (1 + np.abs(d).max())
    )
    assert ex.probabilistic_ is (loss == "log_loss" and kind == "binary")
    if kind == "multi":  # predict is the argmax of decision_function (one-vs-rest)
        np.testing.assert_array_equal(model.predict(X), model.classes_[np.argmax(d, axis=1)])


def test_sparsified_coef():
    X, y, scaler = DATA["multi"]
    Xs = scaler.transform(X)
    model = fit_quiet(SGDClassifier(penalty="l1", alpha=0.05, random_state=0), Xs, y).sparsify()
    assert hasattr(model.coef_, "toarray")
    ex = LinearExplainer(model)
    np.testing.assert_allclose(ex.decision_function(Xs), model.decision_function(Xs), atol=1e-12)


def test_binary_ovr_has_one_estimator_and_keeps_its_sigmoid():
    X, y, scaler = DATA["binary"]
    Xs = scaler.transform(X)
    model = OneVsRestClassifier(LogisticRegression(max_iter=5000)).fit(Xs, y)
    assert len(model.estimators_) == 1
    ex = LinearExplainer(model)
    assert ex.coef_.shape == (1, X.shape[1]) and ex.probabilistic_
    np.testing.assert_allclose(ex.predict_proba(Xs), model.predict_proba(Xs), atol=1e-12)
    i = int(np.flatnonzero(model.predict(Xs) == 0)[0])
    res = ex.explain(Xs[i], 1, proba=0.8)
    assert res.success
    assert model.predict_proba(res.x[None])[0, 1] == pytest.approx(0.8, abs=1e-9)


def test_logistic_multinomial_on_two_classes_doubles_the_scores():
    """scikit-learn < 1.8, multi_class="multinomial" on two classes: p = softmax([-s, s])."""
    X, y, scaler = DATA["binary"]
    Xs = scaler.transform(X)
    model = LogisticRegression(max_iter=5000).fit(Xs, y)
    A, b, *_, probabilistic = linear_model_arrays(model)
    np.testing.assert_array_equal(A, model.coef_)
    model.multi_class = "multinomial"  # the attribute such a model had
    A2, b2, *_, probabilistic2 = linear_model_arrays(model)
    np.testing.assert_array_equal(A2, 2 * model.coef_)
    np.testing.assert_array_equal(b2, 2 * model.intercept_)
    assert probabilistic and probabilistic2
    s = model.decision_function(Xs)
    np.testing.assert_allclose(expit(Xs @ A2[0] + b2[0]), softmax(np.c_[-s, s], axis=1)[:, 1])


# ------------------------------------------------------------ the forms a model supports
def test_check_form_of_a_model_without_probabilities():
    X, y, scaler = DATA["multi"]
    model = fit_quiet(make_pipeline(StandardScaler(), LinearSVC()), X, y)
    ex = LinearExplainer(model)
    assert ex.probabilistic_ is False
    ex._check_form(None, None, True)  # region=True alone: supported
    for lam, proba, region in [(0.1, None, False), (None, 0.9, False), (None, None, False)]:
        with pytest.raises(TypeError) as info:
            ex._check_form(lam, proba, region)
        msg = str(info.value)
        assert "Pipeline(StandardScaler, LinearSVC) scores are not probabilities" in msg
        assert "only region=True is supported" in msg and "LogisticRegression" in msg
    with pytest.raises(TypeError, match=r"proba= was asked"):
        ex._check_form(None, 0.9, False)
    with pytest.raises(TypeError, match=r"lam= was asked"):
        ex._check_form(0.1, None, False)
    prob = LinearExplainer(fit_quiet(LogisticRegression(max_iter=5000), X, y))
    for form in [(0.1, None, False), (None, 0.9, False), (None, None, True), (None, None, False)]:
        prob._check_form(*form)  # a probabilistic model answers every form


def test_explain_refuses_lam_and_proba_without_probabilities():
    X, y, scaler = DATA["binary"]
    ex = LinearExplainer(fit_quiet(make_pipeline(StandardScaler(), LinearSVC()), X, y))
    for kwargs in [{"proba": 0.9}, {"lam": 0.1}, {}]:
        with pytest.raises(TypeError, match="LinearSVC\\) scores are not probabilities"):
            ex.explain(X[0], 1, **kwargs)
        with pytest.raises(TypeError, match="not probabilities"):
            ex.explain(X[:3], 1, **kwargs)
    with pytest.raises(TypeError, match="not probabilities"):
        ex.path(X[0], 1)


def test_from_arrays_probabilistic_flag():
    A, b = np.array([[1.0, -1.0], [0.5, 2.0], [-1.0, 0.0]]), np.zeros(3)
    ex = LinearExplainer.from_arrays(A, b, probabilistic=False)
    assert ex.probabilistic_ is False
    res = ex.explain(np.array([3.0, 0.0]), 1, region=True)
    assert res.success and res.proba is None and ex.predict(res.x) == 1
    with pytest.raises(TypeError, match=r"from_arrays\(\.\.\., probabilistic=False\) scores"):
        ex._check_form(None, 0.5, False)
    with pytest.raises(TypeError, match="not probabilities"):
        ex.predict_proba(np.zeros(2))
    assert LinearExplainer.from_arrays(A, b).probabilistic_ is True
    svm = LinearExplainer.from_arrays([[3.0, 2.0, 1.0]], [-1.0], probabilistic=False)
    alts = svm.enumerate(np.zeros(3), 1, k=3, region=True, metric="manhattan")
    assert [a.changed.tolist() for a in alts] == [[0], [1], [2]]
    assert all(a.proba is None for a in alts)
    with pytest.raises(TypeError, match="probabilistic must be True or False"):
        LinearExplainer.from_arrays(A, b, probabilistic="no")


def test_pickle_keeps_probabilistic():
    X, y, scaler = DATA["binary"]
    ex = LinearExplainer(fit_quiet(make_pipeline(StandardScaler(), LinearSVC()), X, y))
    ex2 = pickle.loads(pickle.dumps(ex))
    assert ex2.probabilistic_ is False
    r1, r2 = ex.explain(X[:3], 1, region=True), ex2.explain(X[:3], 1, region=True)
    np.testing.assert_array_equal(r1.x, r2.x)
    assert r2.proba is None


def test_distributed_partition_has_no_proba_columns_without_probabilities():
    pytest.importorskip("pandas")
    from fastcf.distributed import explain_partition

    X, y, scaler = DATA["binary"]
    model = fit_quiet(make_pipeline(StandardScaler(), RidgeClassifier()), X, y)
    out = explain_partition(LinearExplainer(model), X[:4], 1, region=True)
    assert not [c for c in out.columns if str(c).startswith("proba_")]
    assert out["success"].all()


# ------------------------------------------------------------ refusals
def test_refusals_name_the_model_and_say_why():
    Xb, yb, sb = DATA["binary"]
    Xm, ym, sm = DATA["multi"]
    Xb, Xm = sb.transform(Xb), sm.transform(Xm)
    # each refusal says why, and names the explainer that takes the model, or says none does
    takes = r"(LinearExplainer takes|no fastcf explainer takes)"
    with pytest.raises(TypeError, match=r"one-vs-one voting.*" + takes):
        LinearExplainer(SVC(kernel="linear").fit(Xm, ym))
    with pytest.raises(TypeError, match=r"one-vs-one voting.*" + takes):
        LinearExplainer(NuSVC(kernel="linear", nu=0.1).fit(Xm, ym))
    with pytest.raises(TypeError, match=r"SVC\(kernel='rbf'\): no fastcf explainer takes a SVC"):
        LinearExplainer(SVC().fit(Xb[:100], yb[:100]))
    with pytest.raises(TypeError, match="predicts by one-vs-one voting.*" + takes):
        LinearExplainer(OneVsOneClassifier(LinearSVC()).fit(Xm, ym))
    with pytest.raises(TypeError, match=r"estimator 0 \(SVC\) is not supported.*" + takes):
        LinearExplainer(OneVsRestClassifier(SVC()).fit(Xm, ym))
    Y = np.column_stack([ym == 0, ym == 1]).astype(int)  # multilabel
    with pytest.raises(TypeError, match="multilabel OneVsRestClassifier.*" + takes):
        LinearExplainer(OneVsRestClassifier(LogisticRegression()).fit(Xm, Y))
    with pytest.raises(TypeError, match="multilabel RidgeClassifier.*" + takes):
        LinearExplainer(RidgeClassifier().fit(Xm, Y))
    with pytest.raises(TypeError, match="cannot explain a KNeighborsClassifier.*" + takes):
        from sklearn.neighbors import KNeighborsClassifier

        LinearExplainer(KNeighborsClassifier().fit(Xm, ym))
    with pytest.raises(
        TypeError, match=r"\(PolynomialFeatures\): PolynomialFeatures is not an affine"
    ):
        LinearExplainer(make_pipeline(PolynomialFeatures(), LinearSVC()).fit(Xm[:, :3], ym))
    for unfitted in (
        LinearSVC(),
        RidgeClassifier(),
        LinearDiscriminantAnalysis(),
        SVC(kernel="linear"),
        OneVsRestClassifier(LinearSVC()),
        make_pipeline(StandardScaler(), Perceptron()),
    ):
        with pytest.raises(NotFittedError):
            LinearExplainer(unfitted)
    for model in ("LinearSVC", "SVC", "LinearDiscriminantAnalysis", "OneVsRestClassifier"):
        assert model in SUPPORTED_LINEAR
