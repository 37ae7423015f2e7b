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
from fastcf._confirm import ask, forest_proba


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
    count = _Counting(rf)  # (methods set on the instance: the forest itself is asked)
    ask(rf, X[:3])
    assert count.calls == {"predict": 1, "predict_proba": 2}  # (its predict asks predict_proba)
    odd = _ThresholdForest(n_estimators=5, random_state=0).fit(X, y)
    count = _Counting(odd)
    label, _ = ask(odd, X[:50])
    assert count.calls["predict"] == 1  # its own predict, which differs from the argmax
    assert not np.array_equal(label, odd.classes_[np.argmax(odd.predict_proba(X[:50]), axis=1)])


def test_ask_sums_a_forests_trees_after_one_check_against_the_forest(monkeypatch):
    from sklearn.ensemble._forest import ForestClassifier

    X, y = _data()
    rf = RandomForestClassifier(n_estimators=5, random_state=0).fit(X, y)
    calls = []
    own = ForestClassifier.predict_proba

    def counted(self, X):
        calls.append(X.shape[0])
        return own(self, X)

    monkeypatch.setattr(ForestClassifier, "predict_proba", counted)
    for rows in (X[:3], X[3:9], X[9:10]):
        label, P = ask(rf, rows)
        np.testing.assert_array_equal(P, own(rf, rows))
        np.testing.assert_array_equal(label, rf.classes_[np.argmax(own(rf, rows), axis=1)])
    assert calls == [3]  # the forest itself once, to check the sum; then the trees alone


def _forests():
    X, y = _data(400, seed=2)
    y3 = np.where(X[:, 1] < -350, "low", y)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    return [
        (RandomForestClassifier(n_estimators=9, max_depth=6, random_state=0), X, y),
        (RandomForestClassifier(n_estimators=7, random_state=1, class_weight="balanced"), X, y3),
        (RandomForestClassifier(n_estimators=5, max_samples=0.3, min_samples_leaf=3), X, y3),
        (ExtraTreesClassifier(n_estimators=8, max_depth=5, random_state=0), X, y),
        (RandomForestClassifier(n_estimators=6, random_state=0, bootstrap=False), frame, y3),
    ]


@pytest.mark.parametrize("index", range(5))
def test_forest_proba_is_the_forests_own_bit_for_bit(index):
    model, X, y = _forests()[index]
    model.fit(X, y)
    A = np.asarray(X, dtype=np.float64)
    # rows on the forest's own split values (float64 thresholds, float32 inputs), beside them,
    # far away and tiny: where a wrong cast or order shows
    t = np.concatenate([e.tree_.threshold[e.tree_.feature >= 0] for e in model.estimators_])
    f = np.concatenate([e.tree_.feature[e.tree_.feature >= 0] for e in model.estimators_])
    Q = np.repeat(A[:1], t.size, axis=0)
    Q[np.arange(t.size), f] = t
    Q = np.vstack([A[:60], Q, np.nextafter(Q, np.inf), A[:5] * 1e30, A[:5] * 1e-30])
    inp = pd.DataFrame(Q, columns=X.columns) if hasattr(X, "columns") else Q
    P = forest_proba(model, inp)
    assert P is not None
    np.testing.assert_array_equal(P, model.predict_proba(inp))
    one = inp.iloc[60:61] if hasattr(inp, "iloc") else inp[60:61]  # (one row: the explainer's case)
    np.testing.assert_array_equal(forest_proba(model, one), model.predict_proba(one))


def test_forest_proba_leaves_to_the_forest_what_it_would_check_or_thread():
    X, y = _data()
    rf = RandomForestClassifier(n_estimators=4, random_state=0).fit(X, y)
    assert forest_proba(rf, X[:3]) is not None
    for bad in (X[:3].astype(int), X[:3, :2], X[:3].tolist()):
        assert forest_proba(rf, bad) is None
    for value in (np.nan, np.inf, 1e300):  # (1e300 is inf as float32: the forest raises)
        Q = X[:3].copy()
        Q[1, 0] = value
        assert forest_proba(rf, Q) is None
    threaded = RandomForestClassifier(n_estimators=4, random_state=0, n_jobs=2).fit(X, y)
    assert forest_proba(threaded, X[:3]) is None
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    named = RandomForestClassifier(n_estimators=4, random_state=0).fit(frame, y)
    assert forest_proba(named, frame.iloc[:3]) is not None
    assert forest_proba(named, frame[["b", "a", "c"]].iloc[:3]) is None
    assert forest_proba(named, frame.astype({"a": np.float32}).iloc[:3]) is None
    assert forest_proba(named, X[:3]) is None


def test_forest_proba_trusts_no_sum_the_forest_does_not_give():
    X, y = _data()
    rf = RandomForestClassifier(n_estimators=4, random_state=0).fit(X, y)
    import fastcf._confirm as C

    C._FOREST_SUMS[rf] = False  # (as if the first check had found a difference)
    assert forest_proba(rf, X[:3]) is None
    label, P = ask(rf, X[:3])
    np.testing.assert_array_equal(P, rf.predict_proba(X[:3]))


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


def _boosting(kind, n_classes):
    from sklearn.datasets import make_classification

    X, y = make_classification(
        400, 6, n_informative=4, n_classes=n_classes, n_clusters_per_class=1, random_state=3
    )
    if kind == "xgb":
        xgboost = pytest.importorskip("xgboost")
        model = xgboost.XGBClassifier(n_estimators=30, max_depth=3, random_state=0)
    elif kind == "lgbm":
        lightgbm = pytest.importorskip("lightgbm")
        model = lightgbm.LGBMClassifier(n_estimators=30, num_leaves=8, verbose=-1, random_state=0)
    else:
        model = HistGradientBoostingClassifier(max_iter=30, random_state=0)
    return model.fit(X, y), X


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("kind", ["xgb", "lgbm", "hgb"])
def test_a_boosting_judge_asks_one_thread_for_the_models_own_bits(kind, n_classes):
    """Issue 54: a judge's one row of XGBoost, LightGBM or HistGradientBoosting is asked on
    one thread (no OpenMP team: seconds under load), with the model's own bits, and neither
    the model nor a process-wide setting changes."""
    from fastcf import _confirm

    model, X = _boosting(kind, n_classes)
    before = dict(vars(model))
    if kind == "xgb":
        config = model.get_booster().save_config()
    ask(model, X[:1])  # (the first ask: the one-thread verdicts checked against the model's)
    fn, _ = _confirm._ONE_THREAD[model]
    assert fn is not None  # adopted: the bits agreed
    for i in range(40):
        x = X[i : i + 1]
        label, P = ask(model, x)
        own_label, own_P = model.predict(x), model.predict_proba(x)
        assert label.dtype == own_label.dtype and np.array_equal(label, own_label)
        assert P.dtype == own_P.dtype and np.array_equal(P, own_P)
    assert vars(model).keys() == before.keys()
    assert all(vars(model)[k] is v for k, v in before.items())
    if kind == "xgb":
        assert model.get_booster().save_config() == config  # (its nthread untouched)
    many = X[: _confirm.FEW_ROWS + 1]  # a larger batch: the model itself, on its threads
    label, P = ask(model, many)
    assert np.array_equal(label, model.predict(many))
    assert np.array_equal(P, model.predict_proba(many))


def test_a_refit_boosting_model_is_checked_again():
    from fastcf import _confirm

    model, X = _boosting("hgb", 2)
    ask(model, X[:1])
    first = _confirm._ONE_THREAD[model]
    model.set_params(max_iter=10).fit(X, 1 - (X[:, 0] > 0))  # (new predictors)
    label, P = ask(model, X[:1])
    assert _confirm._ONE_THREAD[model] is not first
    assert np.array_equal(label, model.predict(X[:1]))
    assert np.array_equal(P, model.predict_proba(X[:1]))


def test_a_boosting_model_whose_bits_differ_is_asked_itself(monkeypatch):
    from fastcf import _confirm

    model, X = _boosting("hgb", 2)

    def off(model):
        return lambda X, proba: (model.predict(X), model.predict_proba(X) + 1e-16 + 1e-9)

    monkeypatch.setattr(_confirm, "_twin", off)
    label, P = ask(model, X[:1])
    assert _confirm._ONE_THREAD[model][0] is None  # refused: the model is asked from now on
    assert np.array_equal(P, model.predict_proba(X[:1]))
    assert np.array_equal(ask(model, X[1:2])[1], model.predict_proba(X[1:2]))
