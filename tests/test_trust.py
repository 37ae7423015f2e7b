"""An explainer built from a fitted model checks its copy against the model itself (issue 31).

LinearExplainer's fold is tested in test_fold.py; here the LVQ reading of prototypes, and
``verify="model"`` of the LVQ family.
"""

import numpy as np
import pytest
from sklearn.datasets import load_iris

import fastcf
from fastcf.lvq import GLVQ, GMLVQ


class _Mislabelled:
    """A prototype model whose predict is not the nearest-prototype rule of its attributes."""

    def __init__(self, model):
        self.prototypes_ = model.prototypes_
        self.prototype_labels_ = model.prototype_labels_
        self.classes_ = model.classes_
        self._model = model

    def predict(self, X):
        # every class shifted by one: what a reading of the wrong label attribute would give
        p = self._model.predict(X)
        idx = np.searchsorted(self.classes_, p)
        return self.classes_[(idx + 1) % self.classes_.size]


@pytest.mark.parametrize("cls", [GLVQ, GMLVQ])
def test_lvq_reading_is_checked_against_predict(cls):
    X, y = load_iris(return_X_y=True)
    model = cls(random_state=0).fit(X, y)
    ex = fastcf.LVQExplainer(model).fit_mad(X)  # the reading reproduces predict
    assert (ex.predict(X) == model.predict(X)).all()
    with pytest.raises(TypeError, match="do not reproduce its predict"):
        fastcf.LVQExplainer(_Mislabelled(model))


def test_lvq_fit_mad_rechecks_on_training_rows():
    X, y = load_iris(return_X_y=True)
    model = GLVQ(random_state=0).fit(X, y)
    ex = fastcf.LVQExplainer(model)
    ex.model = _Mislabelled(model)  # as if the model changed after the explainer was built
    with pytest.raises(TypeError, match="do not reproduce its predict"):
        ex.fit_mad(X)


def test_lvq_verify_model():
    X, y = load_iris(return_X_y=True)
    model = GMLVQ(random_state=0).fit(X, y)
    ex = fastcf.LVQExplainer(model)
    rows = X[y == 0][:8]
    res = ex.explain(rows, 1, verify="model")
    assert res.success.all()
    assert (model.predict(res.x) == 1).all()
    ex.model = _Mislabelled(model)  # the model's own predict now disagrees with every answer
    fold = ex.explain(rows, 1)
    checked = ex.explain(rows, 1, verify="model")
    one = ex.explain(rows[0], 1, verify="model")
    assert fold.success.all()
    assert not checked.success.any() and (checked.status == fastcf.Status.NUMERIC).all()
    assert not one.success and one.status == 4 and "does not confirm" in one.message
    arrays = fastcf.LVQExplainer.from_arrays(ex.prototypes_, ex.prototype_labels_)
    with pytest.raises(ValueError, match="from_arrays"):
        arrays.explain(rows[0], 1, verify="model")
    with pytest.raises(ValueError, match="verify must be"):
        ex.explain(rows[0], 1, verify=True)


def test_status_is_exported_with_one_meaning_per_value():
    assert fastcf.Status.OK == 0 and fastcf.Status.INFEASIBLE == 3
    assert len({int(s) for s in fastcf.Status}) == len(fastcf.Status)
    assert "Status" in fastcf.__all__ and "Status" in dir(fastcf)


def test_changed_carries_names_where_known():
    import pandas as pd
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    data = load_breast_cancer(as_frame=True)
    X, y = data.data, data.target
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X, y)
    ex = fastcf.LinearExplainer(model).fit_mad(X)
    row = X[model.predict(X) == 0].iloc[0]
    res = ex.explain(row, 1, region=True, metric="manhattan", weights="mad")
    assert res.success and res.changed_index.size >= 1
    assert res.changed.tolist() == [X.columns[j] for j in res.changed_index]
    frame = res.to_frame().set_index("feature")
    assert (frame.loc[res.changed, "change"] != 0).all()
    plain = fastcf.LinearExplainer.from_arrays(ex.coef_, ex.intercept_)
    res = plain.explain(row.to_numpy(), 1, region=True, metric="manhattan")
    assert res.changed.dtype.kind == "i" and (res.changed == res.changed_index).all()
    assert isinstance(row, pd.Series)


def test_front_door_routes_and_every_refusal_names_an_explainer():
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import Normalizer, OneHotEncoder, StandardScaler
    from sklearn.svm import SVC

    X, y = load_iris(return_X_y=True)
    yb = (y == 2).astype(int)
    forest = RandomForestClassifier(n_estimators=3, max_depth=2, random_state=0).fit(X, yb)
    ex = fastcf.explainer_for(forest)
    assert type(ex).__name__ == "TreeExplainer"
    hist = HistGradientBoostingClassifier(max_iter=3).fit(X, yb)
    assert type(fastcf.explainer_for(hist)).__name__ == "TreeExplainer"
    res = fastcf.counterfactual(forest, X[0], 1)
    assert res.success and forest.predict(res.x[None])[0] == 1

    frame = pd.DataFrame({"a": X[:, 0], "c": np.where(X[:, 1] > 3, "hi", "lo")})
    ct = ColumnTransformer([("n", StandardScaler(), ["a"]), ("c", OneHotEncoder(), ["c"])])
    tab = make_pipeline(ct, LogisticRegression()).fit(frame, yb)
    refusals = {
        "TabularExplainer(model, X_train)": tab,
        "explain it with fastcf.TabularExplainer(model, X_train)": make_pipeline(
            StandardScaler(), RandomForestClassifier(n_estimators=2, random_state=0)
        ).fit(X, yb),
        "kernel='linear'": SVC().fit(X, yb),
        "Voronoi": KNeighborsClassifier().fit(X, yb),
    }
    for says, model in refusals.items():
        with pytest.raises(TypeError) as info:
            fastcf.explainer_for(model)
        msg = str(info.value)
        assert says in msg, msg
        assert len(msg) < 500, msg  # one or two lines, not a catalogue
        assert "Explainer" in msg, msg
    with pytest.raises(TypeError, match=r"\(Normalizer\): Normalizer is not an affine"):
        fastcf.explainer_for(make_pipeline(Normalizer(), LogisticRegression()).fit(X, yb))
    with pytest.raises(TypeError, match="no explainer for str.*LinearExplainer"):
        fastcf.counterfactual("abc", X[0], 1)


def test_every_explainers_refusal_names_the_explainer_that_takes_the_model():
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from fastcf.lvq import GLVQ

    X, y = load_iris(return_X_y=True)
    yb = (y == 2).astype(int)
    frame = pd.DataFrame({"a": X[:, 0], "c": np.where(X[:, 1] > 3, "hi", "lo")})
    ct = ColumnTransformer([("n", StandardScaler(), ["a"]), ("c", OneHotEncoder(), ["c"])])
    tab = make_pipeline(ct, LogisticRegression()).fit(frame, yb)
    forest = RandomForestClassifier(n_estimators=2, max_depth=2, random_state=0).fit(X, yb)
    linear = LogisticRegression(max_iter=500).fit(X, yb)
    lvq = GLVQ(random_state=0).fit(X, yb)
    knn = KNeighborsClassifier().fit(X, yb)
    cases = [
        (fastcf.LinearExplainer, forest, "fastcf.TreeExplainer takes"),
        (fastcf.LinearExplainer, knn, "no fastcf explainer takes a KNeighborsClassifier"),
        (fastcf.LVQExplainer, tab, "fastcf.TabularExplainer(model, X_train) takes"),
        (fastcf.LVQExplainer, linear, "fastcf.LinearExplainer takes"),
        (fastcf.TreeExplainer, linear, "fastcf.LinearExplainer takes"),
        (fastcf.TreeExplainer, lvq, "fastcf.LVQExplainer takes"),
        (fastcf.TreeExplainer, tab, "fastcf.TabularExplainer(model, X_train) takes"),
    ]
    for cls, model, says in cases:
        with pytest.raises(TypeError) as info:
            cls(model)
        msg = str(info.value)
        assert says in msg, (cls.__name__, msg)
        assert len(msg) < 500, msg


def test_the_front_door_routes_a_tabular_pipeline_given_its_training_frame():
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=200).round(1), "c": rng.choice(["hi", "lo"], 200)})
    y = ((frame.a > 0) ^ (frame.c == "hi")).astype(int)
    ct = ColumnTransformer([("n", StandardScaler(), ["a"]), ("c", OneHotEncoder(), ["c"])])
    for final in (LogisticRegression(), RandomForestClassifier(5, max_depth=3, random_state=0)):
        pipe = make_pipeline(ct, final).fit(frame, y)
        ex = fastcf.explainer_for(pipe, frame, immutable=["c"])
        assert type(ex).__name__ == "TabularExplainer"
        row = frame[pipe.predict(frame) == 0].iloc[[0]]
        res = fastcf.counterfactual(pipe, row, 1, X_train=frame)
        assert res.success and pipe.predict(res.x)[0] == 1
        fixed = ex.explain(row, 1)
        assert fixed.x.c.iloc[0] == row.c.iloc[0]  # the explainer's immutable column kept
    with pytest.raises(TypeError, match="without X_train"):
        fastcf.explainer_for(pipe, immutable=["c"])
    with pytest.raises(TypeError, match="pass X_train= here"):
        fastcf.counterfactual(pipe, row, 1)
