"""A bare XGBoost / LightGBM ``Booster`` (``xgboost.train``, ``lightgbm.train``), issue 32.

Read as its classifier reads it (fastcf._trees.boosters): the answers for the Booster of a
fitted classifier are the classifier's own answers, bit for bit, and each is confirmed by the
Booster's own ``predict``.
"""

import numpy as np
import pytest
from sklearn.datasets import make_classification

import fastcf

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")


def _data(k):
    return make_classification(300, 5, n_informative=4, n_redundant=0, n_classes=k, random_state=k)


CLASSIFIERS = {
    "xgb-binary": lambda: xgb.XGBClassifier(n_estimators=15, max_depth=3, random_state=0),
    "xgb-softprob": lambda: xgb.XGBClassifier(n_estimators=8, max_depth=3, random_state=0),
    "xgb-softmax": lambda: xgb.XGBClassifier(
        n_estimators=8, max_depth=3, objective="multi:softmax", random_state=0
    ),
    "lgb-binary": lambda: lgb.LGBMClassifier(n_estimators=15, num_leaves=7, verbose=-1),
    "lgb-multiclass": lambda: lgb.LGBMClassifier(n_estimators=8, num_leaves=7, verbose=-1),
}


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_a_booster_answers_as_its_classifier(name):
    X, y = _data(2 if "binary" in name else 3)
    clf = CLASSIFIERS[name]().fit(X, y)
    booster = clf.get_booster() if name.startswith("xgb") else clf.booster_
    ex = fastcf.explainer_for(booster)
    assert type(ex).__name__ == "TreeExplainer" and ex.model.booster is booster
    assert np.array_equal(ex.classes_, clf.classes_)
    rows = X[:6]
    # the Booster read as its classifier: the same classes and probabilities
    assert np.array_equal(ex.model.predict(X), clf.predict(X))
    assert np.array_equal(ex.model.predict_proba(X), clf.predict_proba(X))
    T = (clf.predict(rows) + 1) % len(clf.classes_)
    for kw in ({}, {"proba": 0.6}, {"metric": "euclidean", "max_changes": 2}):
        a = ex.explain(rows, T, **kw)
        b = fastcf.TreeExplainer(clf).explain(rows, T, **kw)
        assert np.array_equal(a.x, b.x) and np.array_equal(a.status, b.status)
        assert a.success.any()
        ok = a.success
        # the Booster's own output on each success: its target class (and τ)
        raw = booster.predict(xgb.DMatrix(a.x[ok]) if name.startswith("xgb") else a.x[ok])
        if name == "xgb-softmax":
            assert np.array_equal(raw.astype(int), T[ok])
        elif raw.ndim == 1:
            assert np.array_equal((raw > 0.5).astype(int), T[ok])
        else:
            assert np.array_equal(np.argmax(raw, axis=1), T[ok])
            if "proba" in kw:
                assert (raw[np.arange(ok.sum()), T[ok]] >= 0.6).all()


def test_a_booster_of_a_regression_is_refused_saying_why():
    X, y = _data(2)
    booster = xgb.train({"objective": "reg:squarederror"}, xgb.DMatrix(X, y.astype(float)), 3)
    with pytest.raises(ValueError, match="reg:squarederror"):
        fastcf.TreeExplainer(booster)
    booster = lgb.train({"objective": "regression", "verbose": -1}, lgb.Dataset(X, y), 3)
    with pytest.raises(ValueError, match="regression"):
        fastcf.TreeExplainer(booster)


@pytest.mark.parametrize(
    "objective, why",
    [
        ("regression", "a regression objective"),
        ("huber", "a regression objective"),
        ("lambdarank", "a ranking objective"),
        ("cross_entropy_lambda", "not a probability"),
        ("multiclassova", "do not sum to 1"),
    ],
)
def test_a_lightgbm_booster_of_another_objective_is_refused_saying_what_and_why(objective, why):
    # issue 52, item 7a: the message names the objective, why it is refused and what is taken
    X, y = _data(3 if objective == "multiclassova" else 2)
    params = {"objective": objective, "verbose": -1, "num_leaves": 3}
    data = lgb.Dataset(X, y)
    if objective == "multiclassova":
        params["num_class"] = 3
    elif objective == "lambdarank":
        data = lgb.Dataset(X, y, group=[30] * 10)
    booster = lgb.train(params, data, 2)
    with pytest.raises(ValueError) as info:
        fastcf.TreeExplainer(booster)
    msg = str(info.value)
    assert f"objective {objective!r}" in msg and why in msg, msg
    assert "TreeExplainer explains classifiers" in msg and "binary" in msg, msg


def test_a_cross_entropy_booster_answers_as_a_binary_classifier():
    # cross_entropy (xentropy) predicts p = sigmoid(raw score), as binary: class 1 iff p > 0.5
    from reference import boosted_cells_brute_force

    X, _ = _data(2)
    soft = 1.0 / (1.0 + np.exp(-2.0 * (X[:, 0] - 0.5 * X[:, 1])))  # labels in [0, 1]
    params = {"objective": "cross_entropy", "verbose": -1, "num_leaves": 4, "num_threads": 1}
    booster = lgb.train(params, lgb.Dataset(X, soft), 6)
    raw = booster.predict(X, raw_score=True)
    np.testing.assert_allclose(booster.predict(X), 1.0 / (1.0 + np.exp(-raw)), rtol=0, atol=1e-15)
    ex = fastcf.TreeExplainer(booster)
    assert ex.model.objective == "cross_entropy" and ex.classes_.tolist() == [0, 1]
    p = booster.predict(X)
    np.testing.assert_array_equal(ex.model.predict_proba(X), np.column_stack([1 - p, p]))
    checked = 0
    for x0 in X[:5]:
        target = 1 - int(booster.predict(x0[None])[0] > 0.5)
        for opts in ({}, {"proba": 0.6}, {"metric": "euclidean"}):
            res = ex.explain(x0, target, **opts)
            ref, _ = boosted_cells_brute_force(ex.model, x0, target, **opts)
            assert np.isclose(res.distance, ref, rtol=1e-9, atol=1e-12), (res.distance, ref)
            if res.success:
                q = booster.predict(res.x[None])[0]  # the Booster's own probability
                assert int(q > 0.5) == target
                assert (q if target == 1 else 1 - q) >= opts.get("proba", 0.0)
                checked += 1
    assert checked >= 10
