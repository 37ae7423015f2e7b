"""Fitted scikit-learn models and pipelines folded into (A, b) in the raw input space."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer, load_iris, load_wine
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, StandardScaler
from sklearn.svm import SVC

from fastcf import LinearExplainer


def fit_quiet(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y)


PIPES = {
    "plain": lambda: LogisticRegression(max_iter=5000),
    "standard": lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
    "minmax": lambda: make_pipeline(MinMaxScaler(), LogisticRegression(max_iter=2000)),
    "maxabs": lambda: make_pipeline(MaxAbsScaler(), LogisticRegression(max_iter=2000)),
    "pca_whiten": lambda: make_pipeline(
        StandardScaler(), PCA(n_components=5, whiten=True), LogisticRegression(max_iter=2000)
    ),
    "pca": lambda: make_pipeline(StandardScaler(), PCA(n_components=8), LogisticRegression()),
}


@pytest.mark.parametrize("name", sorted(PIPES))
def test_binary_pipeline_promised_probability(name):
    X, y = load_breast_cancer(return_X_y=True)
    model = fit_quiet(PIPES[name](), X, y)
    ex = LinearExplainer(model)
    np.testing.assert_allclose(
        ex.decision_function(X), model.decision_function(X), rtol=1e-9, atol=1e-9
    )
    rejected = np.flatnonzero(model.predict(X) == 0)[:10]
    for i in rejected:
        res = ex.explain(X[i], 1, proba=0.9)
        assert res.success
        p = model.predict_proba(res.x[None])[0, 1]
        assert p == pytest.approx(0.9, abs=1e-9) and p >= 0.9 - 1e-12
        res = ex.explain(X[i], 1, lam=0.01)
        assert model.predict_proba(res.x[None])[0] == pytest.approx(res.proba, abs=1e-9)
    batch = ex.explain(X[rejected], 1, region=True)
    assert batch.success.all() and (model.predict(batch.x) == 1).all()


@pytest.mark.parametrize("name", ["plain", "standard", "pca_whiten"])
def test_multinomial_pipeline(name):
    X, y = load_wine(return_X_y=True)
    model = fit_quiet(PIPES[name](), X, y)
    ex = LinearExplainer(model)
    assert ex.coef_.shape == (3, 13)
    np.testing.assert_allclose(ex.predict_proba(X), model.predict_proba(X), rtol=1e-8, atol=1e-12)
    for i in range(0, 178, 30):
        target = (model.predict(X[i : i + 1])[0] + 1) % 3
        res = ex.explain(X[i], target, proba=0.8)
        assert res.success
        assert model.predict_proba(res.x[None])[0, target] == pytest.approx(0.8, abs=1e-9)
        res = ex.explain(X[i], target, region=True)
        assert res.success and model.predict(res.x[None])[0] == target


def test_sgd_log_loss_binary_and_refusals():
    X, y = load_breast_cancer(return_X_y=True)
    Xs = StandardScaler().fit_transform(X)
    sgd = SGDClassifier(loss="log_loss", random_state=0).fit(Xs, y)
    ex = LinearExplainer(sgd)
    res = ex.explain(Xs[0], 1 - sgd.predict(Xs[:1])[0], proba=0.75)
    assert res.success and sgd.predict_proba(res.x[None])[0].max() == pytest.approx(0.75, abs=1e-9)
    assert ex.probabilistic_
    Xi, yi = load_iris(return_X_y=True)
    # accepted with scores that are not probabilities (region=True only): multiclass SGD and
    # OneVsRestClassifier normalise one-vs-rest sigmoids, hinge has no probabilities
    for model in (
        SGDClassifier(loss="log_loss", random_state=0).fit(Xi, yi),
        SGDClassifier(loss="hinge").fit(Xs, y),
        OneVsRestClassifier(LogisticRegression()).fit(Xi, yi),
    ):
        other = LinearExplainer(model)
        assert not other.probabilistic_
        with pytest.raises(TypeError, match="scores are not probabilities"):
            other.predict_proba(Xi[:1] if other.n_features_in_ == 4 else Xs[:1])
    # the refusal says no explainer takes an RBF SVM, and why
    with pytest.raises(TypeError, match="no fastcf explainer takes a SVC: a kernel SVM"):
        LinearExplainer(SVC().fit(Xs[:50], y[:50]))
    with pytest.raises(TypeError, match="is not affine"):
        LinearExplainer(make_pipeline(MinMaxScaler(clip=True), LogisticRegression()).fit(X, y))
    with pytest.raises(NotFittedError):
        LinearExplainer(LogisticRegression())
    with pytest.raises(NotFittedError):
        LinearExplainer(make_pipeline(StandardScaler(), LogisticRegression()))


def test_pandas_feature_names_and_to_frame():
    data = load_breast_cancer(as_frame=True)
    X, y = data.data, data.target
    model = fit_quiet(make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)), X, y)
    ex = LinearExplainer(model)
    assert list(ex.feature_names_in_) == list(X.columns)
    row = X.iloc[int(np.flatnonzero(model.predict(X) == 0)[0])]
    res = ex.explain(row, 1, proba=0.9, frozen=["mean radius", "mean texture"])
    assert res.success
    frame = res.to_frame()
    assert list(frame.columns) == ["feature", "original", "counterfactual", "change"]
    assert list(frame["feature"]) == list(X.columns)
    assert frame.set_index("feature").loc["mean radius", "change"] == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert model.predict(pd.DataFrame([res.x], columns=X.columns))[0] == 1
    bad = row.rename({"mean radius": "radius"})
    with pytest.raises(ValueError, match="feature names"):
        ex.explain(bad, 1, proba=0.9)
    batch = ex.explain(X.iloc[:5], 1, region=True)
    assert batch.feature_names is not None and len(batch.to_frame()) == 5


def test_one_vs_rest_of_pipelines_is_judged_on_each_estimators_terms():
    """A OneVsRestClassifier of pipelines: each estimator is folded with the size of its own
    terms (whitening on data far from 0), so the check does not refuse it for its rounding;
    a folded coefficient 1e-6 off is still refused."""
    from fastcf.adapters import check_linear_model, linear_model_fold

    rng = np.random.default_rng(3)
    X = 1e5 + 10.0 ** rng.uniform(-3, 3, 6) * rng.standard_normal((150, 6))
    y = np.digitize(X[:, 0] - X[:, 0].mean(), [-1e-3, 1e-3])
    inner = make_pipeline(StandardScaler(), PCA(whiten=True), LogisticRegression(max_iter=2000))
    model = fit_quiet(OneVsRestClassifier(inner), X, y)
    ex = LinearExplainer(model).fit_mad(X)
    assert ex.coef_.shape == (3, 6)
    A, b, _, prob, terms = linear_model_fold(model)
    assert terms.depth == 3 and terms.A.shape == A.shape
    assert np.all(terms.scale(X) >= np.abs(X) @ np.abs(A).T + np.abs(b))
    k, j = np.unravel_index(np.argmax(np.abs(A) * np.abs(X).max(axis=0)), A.shape)
    A2 = A.copy()
    A2[k, j] *= 1 + 1e-6
    check_linear_model(model, A, b, prob, rows=X, terms=terms)  # (the terms of the same fold)
    for given in (None, terms):
        with pytest.raises(TypeError, match="does not reproduce"):
            check_linear_model(model, A2, b, prob, rows=X, terms=given)
