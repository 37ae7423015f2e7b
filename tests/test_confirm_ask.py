"""The model's own verdicts, asked once (``fastcf._confirm.ask``), and the probabilities reported.

``ask`` returns what ``model.predict`` and ``model.predict_proba`` return, sharing the work the
model's own code would do twice (a ``Pipeline``'s transform; a forest's ``predict``, defined as
the argmax of its ``predict_proba``). The references are the two calls themselves.
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from fastcf import TreeExplainer
from fastcf._confirm import ask


class _Counting:
    """Count the calls of a model's ``predict`` and ``predict_proba`` (wrapping its methods)."""

    def __init__(self, model):
        self.calls = {"predict": 0, "predict_proba": 0}
        for name in self.calls:
            method = getattr(model, name)

            def counted(X, method=method, name=name):
                self.calls[name] += 1
                return method(X)

            setattr(model, name, counted)


class _ThresholdForest(RandomForestClassifier):
    """A forest whose ``predict`` is not the argmax of its ``predict_proba``."""

    def predict(self, X):
        return self.classes_[(self.predict_proba(X)[:, 1] >= 0.8).astype(int)]


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) * [1.0, 100.0, 0.01] + [5.0, -300.0, 0.0]
    y = np.where(X[:, 0] - 5.0 + 0.01 * (X[:, 1] + 300.0) > 0, "yes", "no")
    return X, y


@pytest.mark.parametrize(
    "make",
    [
        lambda: RandomForestClassifier(n_estimators=7, max_depth=4, random_state=0),
        lambda: ExtraTreesClassifier(n_estimators=5, max_depth=3, random_state=0),
        lambda: _ThresholdForest(n_estimators=7, max_depth=4, random_state=0),
        lambda: GradientBoostingClassifier(n_estimators=10, max_depth=2, random_state=0),
        lambda: make_pipeline(StandardScaler(), RandomForestClassifier(5, random_state=0)),
        lambda: Pipeline(
            [
                ("a", None),
                ("s", StandardScaler()),
                ("b", "passthrough"),
                ("m", HistGradientBoostingClassifier(max_iter=10)),
            ]
        ),  # fmt: skip
    ],
)
def test_ask_returns_what_the_two_calls_return(make):
    X, y = _data()
    model = make().fit(X, y)
    Q = np.vstack([X[:40], X[:5] * 1e3, [[5.0, -300.0, 0.0]]])
    label, P = ask(model, Q)
    assert label.dtype == model.predict(Q).dtype
    np.testing.assert_array_equal(label, model.predict(Q))
    np.testing.assert_array_equal(P, model.predict_proba(Q))  # (bit for bit)
    label2, none = ask(model, Q, proba=False)
    np.testing.assert_array_equal(label2, model.predict(Q))
    assert none is None


def test_ask_calls_a_forest_once_and_a_subclass_that_redefines_predict_twice():
    X, y = _data()
    rf = RandomForestClassifier(n_estimators=5, random_state=0).fit(X, y)
    count = _Counting(rf)
    ask(rf, X[:3])
    assert count.calls == {"predict": 0, "predict_proba": 1}
    odd = _ThresholdForest(n_estimators=5, random_state=0).fit(X, y)
    count = _Counting(odd)
    label, _ = ask(odd, X[:50])
    assert count.calls["predict"] == 1  # its own predict, which differs from the argmax
    assert not np.array_equal(label, odd.classes_[np.argmax(odd.predict_proba(X[:50]), axis=1)])


class _CountingScaler(StandardScaler):
    """A StandardScaler that counts its ``transform`` calls."""

    calls = 0

    def transform(self, X, copy=None):
        type(self).calls += 1
        return super().transform(X, copy=copy)


def test_ask_transforms_a_pipeline_once():
    X, y = _data()
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": np.where(X[:, 2] > 0, "p", "q")})
    pre = make_column_transformer((_CountingScaler(), ["a", "b"]), (OneHotEncoder(), ["c"]))
    pipe = make_pipeline(pre, GradientBoostingClassifier(n_estimators=5)).fit(frame, y)
    _CountingScaler.calls = 0
    label, P = ask(pipe, frame.iloc[:4])
    assert _CountingScaler.calls == 1  # (one transform for both verdicts)
    np.testing.assert_array_equal(label, pipe.predict(frame.iloc[:4]))
    np.testing.assert_array_equal(P, pipe.predict_proba(frame.iloc[:4]))


@pytest.mark.parametrize("kind", ["rf", "hist"])
@pytest.mark.parametrize("proba", [None, 0.7])
def test_reported_probabilities_are_the_models_at_the_answers(kind, proba):
    X, y = _data(400, seed=1)
    if kind == "rf":
        model = RandomForestClassifier(n_estimators=9, max_depth=4, random_state=0).fit(X, y)
        Q = X[:6].copy()
    else:
        model = HistGradientBoostingClassifier(max_iter=15, random_state=0).fit(X, y)
        Q = X[:6].copy()
        Q[1, 2] = np.nan  # (a missing value: its answer keeps it, and is confirmed so)
    target = np.where(model.predict(Q) == "yes", "no", "yes")
    ex = TreeExplainer(model).fit_mad(X)
    res = ex.explain(Q, target, proba=proba)
    assert res.success.any()
    np.testing.assert_array_equal(res.proba, model.predict_proba(res.x))
    ok = model.predict(res.x[res.success]) == target[res.success]
    assert ok.all()
    one = ex.explain(Q[1], target[1], proba=proba)
    np.testing.assert_array_equal(one.proba, model.predict_proba(one.x[None])[0])
