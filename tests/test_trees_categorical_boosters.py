"""LightGBM's and XGBoost's categorical splits: sets, routed as each library routes.

LightGBM casts a value to ``int`` (2.7 is category 2, −0.5 category 0) and sends a NaN, a
negative cast or a category outside a split's set right. XGBoost reads float32(v), sends the
categories a node lists right, a NaN to the default child and any other value (negative, 2²⁴
or more, unlisted) left. Exactness is checked against a brute force over (category) × (cells of
the other features), every candidate judged by the model's own ``predict``; the parsed leaves
against each library's own ``pred_leaf`` on values at the edges of its cast.
"""

import json
import math

import numpy as np
import pytest
from reference import boosted_cells_brute_force, categories_brute_force, xgb_listed_max
from tree_models import lgb, xgb

from fastcf import Status, TreeExplainer
from fastcf._trees import parse_lightgbm, parse_xgboost

RTOL = 1e-9
LIBS = ["lightgbm", "xgboost"]
PARSER = {"lightgbm": parse_lightgbm, "xgboost": parse_xgboost}
EDGES = [0.0, -0.0, 0.5, 0.999, 1.0, 2.7, 5.2, 6.0, -0.5, -0.999, -1.0, 2.0**24 - 1, 2.0**24,
         2.0**24 - 0.25, 2.0**31 - 1, 2.0**31, 1e30, np.nan]  # fmt: skip


def _same(got, ref):
    if math.isinf(ref):
        return math.isinf(got)
    return math.isclose(got, ref, rel_tol=RTOL, abs_tol=1e-12)


def _data(n_classes, seed=0, n=400, nan=False):
    """Feature 1 categorical (0..5), the class depending on it and on feature 0."""
    rng = np.random.default_rng(seed)
    c = rng.integers(0, 6, n).astype(np.float64)
    X = np.column_stack([rng.normal(size=n), c, rng.normal(size=n)])
    y = ((c % 3 == 0).astype(int) + (X[:, 0] > 0.2)) % n_classes
    if nan:
        X[rng.random(n) < 0.1, 1] = np.nan
        X[rng.random(n) < 0.1, 0] = np.nan
    return X, y


def _model(lib, n_classes, seed=0, nan=False, **kw):
    X, y = _data(n_classes, seed, nan=nan)
    if lib == "lightgbm":
        params = dict(n_estimators=4, num_leaves=5, min_data_per_group=5, cat_smooth=1.0)
        m = lgb(**{**params, **kw}).fit(X, y, categorical_feature=[1])
        assert (m.booster_.trees_to_dataframe()["decision_type"] == "==").any()
    else:
        params = dict(n_estimators=4, max_depth=3, tree_method="hist", max_cat_to_onehot=1)
        types = ["q", "c", "q"]
        m = xgb(enable_categorical=True, feature_types=types, **{**params, **kw}).fit(X, y)
        trees = json.loads(m.get_booster().save_raw("json"))["learner"]["gradient_booster"]
        assert any(any(t["split_type"]) for t in trees["model"]["trees"])
    return m, X


def _own_leaves(lib, m, P, forest):
    """The library's own leaves of the rows P, as positions of the parsed trees."""
    if lib == "lightgbm":
        own = np.asarray(m.predict(P, pred_leaf=True)).reshape(P.shape[0], -1)
        _, maps, *_ = parse_lightgbm._walk_all(m)
        return np.column_stack([mp[own[:, t]] for t, mp in enumerate(maps)])
    import xgboost

    dm = xgboost.DMatrix(P, feature_types=m.feature_types, enable_categorical=True)
    own = m.get_booster().predict(dm, pred_leaf=True).reshape(P.shape[0], -1).astype(np.int64)
    trees = json.loads(m.get_booster().save_raw("json"))["learner"]["gradient_booster"]
    return np.column_stack(
        [parse_xgboost._positions(t)[own[:, i]] for i, t in enumerate(trees["model"]["trees"])]
    )


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("k", [2, 3])
def test_free_category_equals_the_brute_force(lib, k):
    m, X = _model(lib, k, seed=k)
    ex = TreeExplainer(m)
    assert ex._forest.categories.values[1].size >= 2
    # the brute force's categories are those of the training data, not fastcf's own list
    cats = np.unique(X[:, 1][~np.isnan(X[:, 1])])
    rows = [X[i].copy() for i in range(5)]
    rows[0][1] = 2.7  # category 2 to both
    rows[1][1] = -0.5  # category 0 to LightGBM, no category to XGBoost
    moved = 0
    for x0 in rows:
        own = m.predict(x0[None])[0]
        for target in m.classes_[m.classes_ != own]:
            for opts in ({}, {"metric": "l0"}, {"metric": "euclidean"}, {"max_changes": 1}):
                res = ex.explain(x0, target, **opts)
                ref = categories_brute_force(m, x0, target, 1, cats, **opts)
                assert _same(res.distance, ref), (x0, target, opts, res.distance, ref)
                if res.success:
                    assert m.predict(res.x[None])[0] == target
                    assert res.status == Status.OK
                    assert res.x[1] == x0[1] or res.x[1] in ex._forest.categories.values[1]
                    moved += res.x[1] != x0[1]
    assert moved > 0  # some answers change the category


def _xgb_one_listed(seed, n_cats=2, listed_class=0):
    """An XGBoost model whose one categorical feature's splits list only the categories below
    its largest training category (issue 52: the largest goes left everywhere)."""
    rng = np.random.default_rng(seed)
    c = rng.integers(0, n_cats, 400).astype(np.float64)
    X = np.c_[rng.normal(size=400), c]
    y = (c == n_cats - 1).astype(int)
    m = xgb(n_estimators=3, max_depth=1, enable_categorical=True, feature_types=["q", "c"],
            tree_method="hist").fit(X, y)  # fmt: skip
    return m, X


@pytest.mark.parametrize("n_cats", [2, 4])
def test_xgboost_offers_the_category_that_no_split_lists(n_cats):
    """A category seen in training and listed by no split goes left at every node; when every
    smaller category is listed, it is the only way into the target (issue 52, item 1)."""
    m, X = _xgb_one_listed(0, n_cats)
    assert xgb_listed_max(m, 1) < n_cats - 1  # the largest training category is listed nowhere
    ex = TreeExplainer(m)
    cats = np.unique(X[:, 1])
    for x0 in ([0.0, 0.0], [1.5, 0.0], [-2.0, float(n_cats - 2)]):
        x0 = np.asarray(x0)
        res = ex.explain(x0, 1)
        ref = categories_brute_force(m, x0, 1, 1, cats)
        assert math.isfinite(ref)
        assert res.success and res.status == Status.OK, res.message
        assert _same(res.distance, ref), (x0, res.distance, ref)
        assert m.predict(res.x[None])[0] == 1


def test_xgboost_with_its_training_data_offers_only_the_categories_it_holds():
    """Without data the category past the largest listed one stands for every unlisted one,
    which may be one the data never held (soak find: code 2 of a model trained on 0 and 1, a
    cheaper answer no applicant could take); ``fit_mad(X)`` offers the rows' codes only, and
    the answer is the brute force's over them."""
    rng = np.random.default_rng(69)
    x = np.round(rng.normal(size=60), 1)
    c = rng.integers(0, 2, 60).astype(float)
    y = ((c == 1).astype(int) + (x > 0.3)) % 2
    flip = rng.random(60) < 0.1
    y[flip] = 1 - y[flip]
    X = np.c_[x, c]
    m = xgb(n_estimators=2, max_depth=2, enable_categorical=True, feature_types=["q", "c"],
            tree_method="hist", max_cat_to_onehot=1)  # fmt: skip
    m.fit(X, y)
    assert xgb_listed_max(m, 1) == 1.0  # the largest training category is listed
    x0 = np.array([1.0, 0.0])
    free = TreeExplainer(m).explain(x0, 1)
    assert free.success and free.x[1] == 2.0  # valid for the model, but no category of the data
    assert m.predict(free.x[None])[0] == 1
    ex = TreeExplainer(m).fit_mad(X)
    res = ex.explain(x0, 1)
    ref = categories_brute_force(m, x0, 1, 1, np.array([0.0, 1.0]))
    assert res.success and res.x[1] in (0.0, 1.0) and _same(res.distance, ref)
    assert m.predict(res.x[None])[0] == 1


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("value", [2.7, -0.5, -1.0, 9.0, 2.0**24, 2.0**31, np.nan])
def test_frozen_category_is_routed_as_the_library_routes_it(lib, value):
    """A frozen category keeps the query's own value, whatever the library makes of it: a
    cast into a category, a negative one, one the model never saw, one past the cast's range,
    NaN."""
    m, X = _model(lib, 2, seed=5, nan=True)
    ex = TreeExplainer(m)
    checked = feasible = 0
    for i in range(6):
        x0 = X[i].copy()
        x0[1] = value
        if np.isnan(x0[0]):
            continue
        target = 1 - m.predict(x0[None])[0]
        res = ex.explain(x0, target, frozen=[1])
        lo = np.where(np.arange(3) == 1, x0, -np.inf)
        hi = np.where(np.arange(3) == 1, x0, np.inf)
        ref, _ = boosted_cells_brute_force(m, x0, target, lo=lo, hi=hi)  # (a NaN stays NaN)
        assert _same(res.distance, ref), (x0, target, res.distance, ref, res.message)
        feasible += math.isfinite(ref)
        np.testing.assert_array_equal(res.x[1], x0[1])  # kept, bit for bit (or NaN)
        if res.success:
            assert m.predict(res.x[None])[0] == target
            checked += 1
    # every query the brute force answers is answered (a value XGBoost reads as no category goes
    # left at every set split, where this model puts every row in class 1: none there)
    assert checked == feasible
    assert feasible > 0 or lib == "xgboost"


@pytest.mark.parametrize("lib", LIBS)
def test_leaves_equal_the_library_on_the_cast_edges(lib):
    """The parsed forest's leaves are the library's own on values at the edges of its cast."""
    m, X = _model(lib, 3, seed=2, nan=True, n_estimators=6)
    forest = PARSER[lib].parse(m)
    P = np.repeat(X[:40], len(EDGES), axis=0)
    P[:, 1] = np.tile(EDGES, 40)
    mine = forest.leaves(P) - forest.offset[None, :]
    np.testing.assert_array_equal(mine, _own_leaves(lib, m, P, forest))


@pytest.mark.parametrize("lib", LIBS)
def test_a_wrong_category_set_is_refused_when_checked(lib):
    m, _ = _model(lib, 2, seed=4)
    forest = PARSER[lib].parse(m)
    PARSER[lib].check(forest, m)
    forest.categories.left = ~forest.categories.left
    with pytest.raises(ValueError, match="other leaves|disagree|leaves"):
        PARSER[lib].check(forest, m)


def test_lightgbm_booster_rf_and_batch():
    lightgbm = pytest.importorskip("lightgbm")
    X, y = _data(3, seed=7)
    params = dict(min_data_per_group=5, cat_smooth=1.0, verbose=-1, num_threads=1)
    ds = lightgbm.Dataset(X, y, categorical_feature=[1], params=params)
    booster = lightgbm.train(
        {**params, "objective": "multiclass", "num_class": 3, "num_leaves": 5}, ds, 4
    )
    ex = TreeExplainer(booster)
    assert ex._forest.categories is not None
    own = np.argmax(booster.predict(X[:6]), axis=1)
    res = ex.explain(X[:6], (own + 1) % 3)
    assert res.success.all()
    assert np.array_equal(np.argmax(booster.predict(res.x), axis=1), (own + 1) % 3)
    rf, _ = _model("lightgbm", 2, seed=8, boosting_type="rf", bagging_freq=1, bagging_fraction=0.7)
    ex = TreeExplainer(rf)
    target = 1 - rf.predict(X[:6])
    res = ex.explain(X[:6], target)
    assert res.success.all() and np.array_equal(rf.predict(res.x), target)


def test_xgboost_fitted_on_pandas_categories_is_refused():
    pd = pytest.importorskip("pandas")
    X, y = _data(2, seed=3)
    df = pd.DataFrame({"a": X[:, 0], "c": pd.Categorical(X[:, 1].astype(int)), "z": X[:, 2]})
    m = xgb(n_estimators=2, max_depth=2, enable_categorical=True, tree_method="hist").fit(df, y)
    with pytest.raises(ValueError, match="pandas categories.*feature_types"):
        TreeExplainer(m)


def test_tabular_pipeline_with_set_splits_is_refused_with_the_way_out():
    """TabularExplainer answers threshold trees only: a pipeline whose LightGBM model splits
    by sets of categories is refused with a TypeError that says what to do instead."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("lightgbm")
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OrdinalEncoder

    from fastcf import TabularExplainer

    X, y = _data(2, seed=9)
    df = pd.DataFrame({"a": X[:, 0], "kind": X[:, 1].astype(int).astype(str), "z": X[:, 2]})
    pre = ColumnTransformer([("cat", OrdinalEncoder(), ["kind"])], remainder="passthrough")
    params = dict(n_estimators=3, num_leaves=4, min_data_per_group=5, cat_smooth=1.0)
    pipe = Pipeline([("pre", pre), ("clf", lgb(**params))])
    pipe.fit(df, y, clf__categorical_feature=[0])
    with pytest.raises(TypeError, match="native categorical features.*TreeExplainer"):
        TabularExplainer(pipe, df)
