"""TreeExplainer(plausible=True): the closest point of a training row's region, against brute force.

The reference (tests/reference.py, ``tree_plausible_brute_force``) finds each split boundary
itself (float32 rule for scikit-learn's trees, bisection on the library's own rule for the
boosted ones), projects the query onto every cell of the threshold grid, keeps the points whose
leaves (the library's own ``apply`` / ``pred_leaf``) are those of a training row, and judges
them with the model's own ``predict`` / ``predict_proba``.
"""

import math

import numpy as np
import pytest
from reference import tree_model_leaves, tree_plausible_brute_force
from sklearn.datasets import make_classification
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.tree import DecisionTreeClassifier

from fastcf import Status, TreeExplainer


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


def _xgb(**kw):
    xgb = pytest.importorskip("xgboost")
    return xgb.XGBClassifier(n_jobs=1, random_state=0, **kw)


def _lgb(**kw):
    lgb = pytest.importorskip("lightgbm")
    return lgb.LGBMClassifier(n_jobs=1, verbose=-1, random_state=0, min_child_samples=5, **kw)


_MODELS = {
    "dt": (lambda: DecisionTreeClassifier(max_depth=4, random_state=0), 3),
    "rf": (lambda: RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0), 2),
    "rf3": (lambda: RandomForestClassifier(n_estimators=4, max_depth=3, random_state=1), 3),
    "et": (lambda: ExtraTreesClassifier(n_estimators=4, max_depth=3, random_state=0), 2),
    "gb": (lambda: GradientBoostingClassifier(n_estimators=4, max_depth=2, random_state=0), 2),
    "gb3": (lambda: GradientBoostingClassifier(n_estimators=2, max_depth=2, random_state=0), 3),
    "hgb2": (lambda: HistGradientBoostingClassifier(max_iter=3, max_depth=2, random_state=0), 2),
    "xgb2": (lambda: _xgb(n_estimators=4, max_depth=2, learning_rate=0.5), 2),
    "xgb3": (lambda: _xgb(n_estimators=2, max_depth=2), 3),
    "lgb2": (lambda: _lgb(n_estimators=4, num_leaves=3, learning_rate=0.3), 2),
    "lgb3": (lambda: _lgb(n_estimators=2, num_leaves=3), 3),
}


@pytest.fixture(scope="module", params=sorted(_MODELS))
def fitted(request):
    make, k = _MODELS[request.param]
    X, y = make_classification(
        n_samples=120, n_features=3, n_informative=3, n_redundant=0, n_classes=k,
        n_clusters_per_class=1, random_state=len(request.param),
    )  # fmt: skip
    model = make().fit(X, y)
    return request.param, model, TreeExplainer(model).fit_data(X), X


def _same(got, ref):
    if math.isinf(ref):
        return math.isinf(got)
    return math.isclose(got, ref, rel_tol=1e-12, abs_tol=1e-12)


def _in_a_training_region(model, X_train, x):
    """Whether x reaches the leaves of some training row in every tree (the library's own)."""
    seen = {tuple(r) for r in tree_model_leaves(model, X_train).tolist()}
    return tuple(tree_model_leaves(model, x[None])[0].tolist()) in seen


_OPTIONS = [
    {},
    {"metric": "euclidean"},
    {"metric": "l0"},
    {"max_changes": 1},
    {"frozen": [0]},
    {"bounds": "around x0"},
    {"metric": "manhattan", "weights": [1.0, 3.0, 0.5], "max_changes": 2},
    {"proba": "the training rows' median"},
]


@pytest.mark.parametrize("opts", _OPTIONS, ids=[str(i) for i in range(len(_OPTIONS))])
def test_matches_the_brute_force_over_training_rows(fitted, opts):
    name, model, ex, X = fitted
    rng = np.random.default_rng(7)
    queries = np.vstack([X[rng.choice(X.shape[0], 3, replace=False)], rng.normal(size=(2, 3))])
    D = X.shape[1]
    checked = 0
    for x0 in queries:
        for target in model.classes_:
            lo = hi = None
            if "proba" in opts:  # a τ that some training regions meet, whatever the model
                tau = float(np.median(model.predict_proba(X).max(axis=1)))
                opts = {**opts, "proba": tau}
            if "bounds" in opts:  # a box that holds x0
                lo, hi = x0 - [np.inf, 0.3, 1.0], x0 + [0.5, np.inf, 1.0]
                opts = {**opts, "bounds": (lo, hi)}
            res = ex.explain(x0, target, plausible=True, **opts)
            if "frozen" in opts:
                lo = np.full(D, -np.inf) if lo is None else lo.copy()
                hi = np.full(D, np.inf) if hi is None else hi.copy()
                lo[opts["frozen"]] = x0[opts["frozen"]]
                hi[opts["frozen"]] = x0[opts["frozen"]]
            ref, _ = tree_plausible_brute_force(
                model, X, x0, target, opts.get("metric", "manhattan"), opts.get("weights"), lo,
                hi, opts.get("max_changes"), opts.get("proba"),
            )  # fmt: skip
            assert _same(res.distance, ref), (name, opts, x0, target, res.distance, ref)
            assert res.success == math.isfinite(ref)
            if res.success:
                checked += 1
                assert res.method == "plausible"
                assert model.predict(res.x[None])[0] == target
                assert _in_a_training_region(model, X, res.x)
                free = ex.explain(x0, target, **opts)  # every input: never dearer
                assert free.success and free.distance <= res.distance * (1 + 1e-12) + 1e-12
            else:
                assert res.status in (Status.UNREACHABLE, Status.INFEASIBLE)
                assert "plausible" in res.message
    assert checked > 0


def test_batch_is_the_rows_one_by_one(fitted):
    name, model, ex, X = fitted
    rng = np.random.default_rng(1)
    Q = np.vstack([X[:4], rng.normal(size=(3, 3))])
    targets = rng.choice(model.classes_, Q.shape[0])
    batch = ex.explain(Q, targets, plausible=True, max_changes=2)
    for i in range(Q.shape[0]):
        one = ex.explain(Q[i], targets[i], plausible=True, max_changes=2)
        assert np.array_equal(one.x, batch.x[i]) and one.status == batch.status[i]


def test_a_training_row_of_the_target_is_its_own_answer():
    X, y = make_classification(100, 3, n_informative=3, n_redundant=0, random_state=3)
    rf = RandomForestClassifier(5, max_depth=3, random_state=0).fit(X, y)
    ex = TreeExplainer(rf).fit_data(X)
    i = int(np.flatnonzero(rf.predict(X) == 1)[0])
    res = ex.explain(X[i], 1, plausible=True)
    assert res.success and res.distance == 0.0 and np.array_equal(res.x, X[i])


def test_no_training_region_in_the_target_is_status_2_and_bounds_status_3():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    tree = DecisionTreeClassifier(random_state=0).fit(X, [0, 0, 1, 1])
    ex = TreeExplainer(tree).fit_data(X[:2])  # only regions of class 0 hold training data
    res = ex.explain([0.0], 1, plausible=True)
    assert not res.success and res.status == Status.UNREACHABLE
    assert "no region of the model that holds training data" in res.message
    assert ex.explain([0.0], 1).success  # without plausible, class 1 is reachable
    ex.fit_data(X)
    res = ex.explain([0.0], 1, plausible=True, bounds=(-1.0, 1.0))
    assert not res.success and res.status == Status.INFEASIBLE
    res = ex.explain([0.0], 1, plausible=True)
    assert res.success and tree.predict(res.x[None])[0] == 1


def test_the_region_not_only_the_training_points():
    # the answer is the closest point of a training region, not a training row
    X = np.array([[0.0, 0.0], [10.0, 10.0], [0.0, 10.0], [10.0, 0.0]])
    tree = DecisionTreeClassifier(random_state=0).fit(X, [0, 1, 0, 0])
    ex = TreeExplainer(tree).fit_data(X)
    res = ex.explain([1.0, 1.0], 1, plausible=True)
    assert res.success and tree.predict(res.x[None])[0] == 1
    assert res.distance < 18.0  # the row (10, 10) is 18 away; the leaf starts at the splits


def test_a_region_is_the_leaf_not_the_cell_of_the_training_row():
    # training rows (0, 0) in the left leaf (x0 <= 0.5) and (1, 0) in the right subtree, which
    # splits on x1 <= 0.5: that cuts the grid's cells but not the left leaf
    X = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 2.0], [0.0, 3.0]])
    tree = DecisionTreeClassifier(random_state=0).fit(X, [1, 1, 1, 0, 1, 1])
    assert tree.tree_.feature[0] == 0 and tree.tree_.node_count == 5
    ex = TreeExplainer(tree).fit_data(X[[0, 2]])
    res = ex.explain([1.0, 5.0], 1, plausible=True)
    assert res.success and res.changed_index.tolist() == [0]  # x1 = 5 stays: same leaf
    # (the training rows' cells both need x1 <= 0.5: 4.5 at least)
    assert res.distance == pytest.approx(0.5, abs=1e-6)
    ref, _ = tree_plausible_brute_force(tree, X[[0, 2]], np.array([1.0, 5.0]), 1)
    assert res.distance == ref


def test_enumerate_forwards_plausible(fitted):
    name, model, ex, X = fitted
    x0 = X[0]
    target = model.classes_[model.classes_ != model.predict(X[:1])[0]][0]
    alts = ex.enumerate(x0, target, k=3, plausible=True)
    first = ex.explain(x0, target, plausible=True)
    if not first.success:
        assert alts == []
        return
    assert alts and np.array_equal(alts[0].x, first.x)
    for a in alts:
        assert a.success and a.method == "plausible" and _in_a_training_region(model, X, a.x)
    assert all(b.distance >= a.distance for a, b in zip(alts, alts[1:], strict=False))


def test_refusals():
    X, y = make_classification(60, 3, n_informative=3, n_redundant=0, random_state=0)
    ex = TreeExplainer(DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y))
    with pytest.raises(ValueError, match=r"plausible=True needs the training data.*fit_data"):
        ex.explain(X[0], 1, plausible=True)
    ex.fit_data(X)
    with pytest.raises(ValueError, match="plausible must be True or False"):
        ex.explain(X[0], 1, plausible="yes")
    with pytest.raises(ValueError, match="X has 2 features"):
        ex.fit_data(X[:, :2])
    with pytest.raises(ValueError, match="X has a value outside the range"):
        ex.fit_data(np.vstack([X, [[1e300, 0.0, 0.0]]]))
    assert ex.mad_ is not None and ex.n_data_regions_ <= X.shape[0]


def test_plausible_refuses_nan_queries_and_categorical_models():
    """The training regions are boxes of numeric splits: a NaN query, or a model with native
    categorical features, is refused by name rather than answered without the restriction."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    gb = HistGradientBoostingClassifier(max_iter=5, random_state=0).fit(X, y)
    ex = TreeExplainer(gb).fit_data(X)
    with pytest.raises(ValueError, match="plausible=True takes neither a NaN"):
        ex.explain([np.nan, -1.0, 0.0], 1, plausible=True)
    Xc = X.copy()
    Xc[:, 2] = rng.integers(0, 4, 200)
    cat = HistGradientBoostingClassifier(max_iter=5, categorical_features=[2], random_state=0).fit(
        Xc, (Xc[:, 0] + (Xc[:, 2] > 1) > 0.5).astype(int)
    )
    exc = TreeExplainer(cat).fit_data(Xc)
    assert exc.n_data_regions_ is None and exc.mad_ is not None
    with pytest.raises(ValueError, match="categorical features"):
        exc.explain(Xc[0], 1 - cat.predict(Xc[:1])[0], plausible=True)
