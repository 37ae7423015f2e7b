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
