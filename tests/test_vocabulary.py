"""One vocabulary and one front door (issue 53, item 5): the table of options
(``fastcf._options``) against the explainers' own signatures, the words every family takes, and
``fastcf.counterfactual`` taking every option of the explainer it routes to."""

import inspect
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.tree import DecisionTreeClassifier

import fastcf
from fastcf._options import FAMILIES, OPTIONS, REFUSED, families_of, split, stage_of, table

ROOT = Path(__file__).resolve().parents[1]


def _classes():
    return {
        "linear": fastcf.LinearExplainer,
        "lvq": fastcf.LVQExplainer,
        "trees": fastcf.TreeExplainer,
        "tabular": fastcf.TabularExplainer,
        "net": fastcf.NetExplainer,
    }


def _keywords(fn, skip):
    sig = inspect.signature(fn)
    return {n for n, p in sig.parameters.items() if n not in skip and p.kind != p.VAR_KEYWORD}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_table_is_what_each_explainer_takes(family):
    """The table cannot drift from the code: each explainer's ``explain`` takes exactly the
    query options the table gives its family, ``enumerate`` those and ``k``, ``max_nodes``
    (or passes them on), its constructor exactly the build options."""
    cls = _classes()[family]
    query = {n for n in OPTIONS if stage_of(n, family) == "query"}
    build = {n for n in OPTIONS if stage_of(n, family) == "build"}
    refused = REFUSED.get(family, set())
    assert _keywords(cls.explain, {"self", "x", "target"}) == query | refused
    enum = inspect.signature(cls.enumerate)
    if any(p.kind == p.VAR_KEYWORD for p in enum.parameters.values()):
        assert _keywords(cls.enumerate, {"self", "x", "target"}) <= query | {"k", "max_nodes"}
    else:
        # (path-only options stay with explain: verify, method and solver choose a solve)
        assert _keywords(cls.enumerate, {"self", "x", "target"}) - {"k", "max_nodes"} <= query
    assert _keywords(cls.__init__, {"self", "model", "X_train"}) == build


def test_every_family_takes_the_shared_words():
    """The words of the API contract's one vocabulary, in every family."""
    for word in ("region", "metric", "bounds", "frozen", "max_changes", "exact", "time_limit"):
        assert families_of(word) == set(FAMILIES), word
    assert families_of("weights") == set(FAMILIES)  # (tabular's at construction)
    # (LVQ has no probabilities)
    assert families_of("proba") == {"linear", "trees", "tabular", "net"}


def test_the_docs_carry_the_table():
    """docs/tables/vocabulary.md is the table (the vocabulary page includes it); regenerate
    it with ``python -c "import fastcf._options as o; print(o.table())" >
    docs/tables/vocabulary.md``."""
    got = (ROOT / "docs" / "tables" / "vocabulary.md").read_text(encoding="utf-8")
    assert got == table() + "\n"
    page = (ROOT / "docs" / "api" / "vocabulary.md").read_text(encoding="utf-8")
    assert '--8<-- "docs/tables/vocabulary.md"' in page


def test_a_misspelled_or_foreign_option_is_named():
    with pytest.raises(TypeError, match=r"unknown option 'immutible'; did you mean 'immutable'"):
        split("tabular", {"immutible": ["age"]}, where="counterfactual")
    with pytest.raises(TypeError, match=r"unknown option 'metrc'; did you mean 'metric'"):
        split("linear", {"metrc": "manhattan"}, where="counterfactual")
    with pytest.raises(TypeError, match="option 'plausible' is not one LinearExplainer takes.*"
                                        "TabularExplainer, TreeExplainer take it"):  # fmt: skip
        split("linear", {"plausible": True}, where="counterfactual")


# ---------------------------------------------------------------- the words in each family


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(X, y)
    return X, y, model


def test_linear_takes_exact_and_time_limit(cancer):
    X, y, model = cancer
    ex = fastcf.LinearExplainer(model)
    base = ex.explain(X[0], 1, region=True)
    for opts in ({"exact": False}, {"time_limit": 0.5}, {"exact": True, "time_limit": 2}):
        res = ex.explain(X[0], 1, region=True, **opts)
        assert res.success and res.info["exact"] is True
        np.testing.assert_array_equal(res.x, base.x)
    batch = ex.explain(X[:5], 1, region=True, exact=False)
    assert batch.info["exact"].tolist() == batch.success.tolist()
    alts = ex.enumerate(X[0], 1, k=2, region=True, metric="manhattan", exact=False)
    assert all(a.info["exact"] for a in alts)
    with pytest.raises(TypeError, match="exact must be True or False"):
        ex.explain(X[0], 1, region=True, exact="yes")
    for bad in (0.0, -1.0, np.inf):
        with pytest.raises(ValueError, match="time_limit"):
            ex.explain(X[0], 1, region=True, time_limit=bad)


def _credit():
    rng = np.random.default_rng(0)
    n = 300
    X = pd.DataFrame({
        "age": rng.integers(18, 70, n).astype(float),
        "income": np.round(rng.uniform(10, 90, n), 1),
        "home": rng.choice(["own", "rent"], n),
    })  # fmt: skip
    y = ((X.income / 90 + (X.home == "own") * 0.5 + X.age / 140) > 1.0).astype(int)
    pre = ColumnTransformer([("num", StandardScaler(), ["age", "income"]),
                             ("cat", OneHotEncoder(), ["home"])])  # fmt: skip
    return X, make_pipeline(pre, LogisticRegression()).fit(X, y)


def test_tabular_takes_metric_frozen_and_exact():
    X, model = _credit()
    tx = fastcf.TabularExplainer(model, X)
    row = X[model.predict(X) == 0].iloc[[0]]
    base = tx.explain(row, 1)
    assert base.success and base.info["exact"] is True
    same = tx.explain(row, 1, metric="manhattan", exact=False, time_limit=1.0)
    assert same.distance == base.distance
    held = tx.explain(row, 1, frozen=["income"])
    assert held.x.income.iloc[0] == row.income.iloc[0]
    assert held.distance >= base.distance
    assert (model.predict(held.x) == 1).all() or not held.success
    alts = tx.enumerate(row, 1, k=3, frozen=["income"])
    assert all(a.x.income.iloc[0] == row.income.iloc[0] for a in alts)
    with pytest.raises(ValueError, match="metric='euclidean'.*weighted Manhattan"):
        tx.explain(row, 1, metric="euclidean")
    with pytest.raises(ValueError, match="frozen names column 'salary'"):
        tx.explain(row, 1, frozen=["salary"])


# ---------------------------------------------------------------- the front door


def test_the_front_door_takes_construction_and_query_options():
    """``fastcf.counterfactual`` routes a DataFrame pipeline to TabularExplainer with its
    construction options (it failed naming ``TabularExplainer.explain()``, issue 53)."""
    X, model = _credit()
    row = X[model.predict(X) == 0].iloc[[0]]
    res = fastcf.counterfactual(model, row, 1, X_train=X, immutable=["age"], max_changes=1)
    direct = fastcf.TabularExplainer(model, X, immutable=["age"]).explain(row, 1, max_changes=1)
    assert res.success and res.distance == direct.distance
    assert res.x.age.iloc[0] == row.age.iloc[0]
    with pytest.raises(TypeError, match=r"counterfactual: unknown option 'immutible'; did you"):
        fastcf.counterfactual(model, row, 1, X_train=X, immutible=["age"])


def test_the_front_door_takes_tabular_options_for_a_plain_linear_pipeline():
    """A scaler + logistic pipeline on numeric DataFrame columns went to LinearExplainer (a bare
    tree model to TreeExplainer), which refused ``immutable=`` ("TabularExplainer take it");
    with the training DataFrame and an option only TabularExplainer takes, it is answered
    there, the column kept."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"age": rng.uniform(20, 70, 200), "income": rng.uniform(1e4, 1e5, 200)})
    y = (X.income / 1e4 + X.age / 10 > 10).astype(int)
    model = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    row = X[model.predict(X) == 0].iloc[[0]]
    res = fastcf.counterfactual(model, row, 1, X_train=X, immutable=["age"])
    direct = fastcf.TabularExplainer(model, X, immutable=["age"]).explain(row, 1)
    assert res.success and res.distance == direct.distance
    assert res.x.age.iloc[0] == row.age.iloc[0] and res.x.income.iloc[0] != row.income.iloc[0]
    assert model.predict(res.x)[0] == 1
    ex = fastcf.explainer_for(model, X, increase_only=["income"])
    assert isinstance(ex, fastcf.TabularExplainer)
    assert isinstance(fastcf.explainer_for(model, X), fastcf.LinearExplainer)  # (no such option)
    # a bare tree model on a DataFrame too (TreeExplainer refused immutable= the same way)
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    row = X[tree.predict(X) == 0].iloc[[0]]
    res = fastcf.counterfactual(tree, row, 1, X_train=X, immutable=["age"])
    assert res.success and res.x.age.iloc[0] == row.age.iloc[0] and tree.predict(res.x)[0] == 1
    # without the DataFrame it stays linear, and the message names the one explainer
    with pytest.raises(TypeError, match="LinearExplainer takes.*TabularExplainer takes it"):
        fastcf.counterfactual(model, row.to_numpy(), 1, X_train=X.to_numpy(), allowed={})


def test_the_front_door_says_why_lvq_refuses_proba():
    """``counterfactual(lvq_model, x, t, proba=0.9)`` said only that LVQExplainer does not take
    ``proba``; the explainer's own refusal says why (no class probabilities)."""
    from fastcf.lvq_models import GLVQ

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2)) + np.repeat([[0.0, 0.0], [3.0, 3.0]], 30, axis=0)
    model = GLVQ().fit(X, np.repeat([0, 1], 30))
    with pytest.raises(ValueError, match="LVQ models have no class probabilities"):
        fastcf.counterfactual(model, X[0], 1, proba=0.9)
    with pytest.raises(TypeError, match="explainer_for takes the options of an explainer's"):
        fastcf.explainer_for(model, proba=0.9)


def test_the_front_door_gives_mad_weights_from_the_training_data(cancer):
    X, y, model = cancer
    res = fastcf.counterfactual(model, X[0], 1, X_train=X, region=True, weights="mad",
                                metric="manhattan")  # fmt: skip
    ex = fastcf.LinearExplainer(model).fit_mad(X)
    ref = ex.explain(X[0], 1, region=True, weights="mad", metric="manhattan")
    assert res.success and res.distance == ref.distance
    with pytest.raises(TypeError, match="'plausible' is not one LinearExplainer takes"):
        fastcf.counterfactual(model, X[0], 1, plausible=True)


def test_the_front_door_to_trees_with_plausible():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    x0 = X[tree.predict(X) == 0][0]
    res = fastcf.counterfactual(tree, x0, 1, X_train=X, plausible=True)
    ref = fastcf.TreeExplainer(tree).fit_data(X).explain(x0, 1, plausible=True)
    assert res.success and res.distance == ref.distance
    with pytest.raises(TypeError, match="explainer_for takes the options of an explainer's "
                                        "construction"):  # fmt: skip
        fastcf.explainer_for(tree, region=True)


def test_one_tabular_answer_has_to_frame_as_every_answer():
    X, model = _credit()
    row = X[model.predict(X) == 0].iloc[[0]]
    res = fastcf.TabularExplainer(model, X).explain(row, 1)
    frame = res.to_frame()
    assert list(frame.columns) == ["feature", "original", "counterfactual", "cost"]
    assert list(frame.feature) == list(X.columns)
    assert frame.cost.sum() == pytest.approx(res.distance, rel=1e-12)
    moved = frame[frame.original != frame.counterfactual].feature.tolist()
    assert moved == res.changed
