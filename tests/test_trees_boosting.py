"""TreeExplainer on HistGradientBoosting, XGBoost and LightGBM classifiers, against brute force.

The reference (tests/reference.py, ``boosted_cells_brute_force``) reads each library's splits by
its own route (XGBoost's text dump, LightGBM's ``trees_to_dataframe``), finds every boundary by
bisection on the library's documented rule, enumerates every cell of the threshold grid and
classifies each candidate with the model's own ``predict`` / ``predict_proba``. The parsed
copies are compared bit for bit with the libraries' own raw scores, probabilities and classes.
"""

import math
import pickle

import numpy as np
import pytest
from reference import bisect_boundary, boosted_cells_brute_force
from sklearn.datasets import make_classification
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from tree_models import lgb, xgb

import fastcf
from fastcf import Status, TreeExplainer
from fastcf._trees import outputs, parse_hist, parse_lightgbm, parse_xgboost

RTOL = 1e-9
F32_MAX = float(np.finfo(np.float32).max)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    # the libraries' OpenMP pools spin on a busy machine: one thread answers small models faster
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


def _data(n_classes, seed=0, n=200):
    X, y = make_classification(
        n_samples=n, n_features=3, n_informative=3, n_redundant=0, n_classes=n_classes,
        n_clusters_per_class=1, random_state=seed,
    )  # fmt: skip
    # float32-unfriendly scales: float32 rounding at 3e5 is 1/32; 1e-6 needs the exponent range
    X[:, 0] = 3e5 + 1e5 * X[:, 0]
    X[:, 1] = 1e-6 * X[:, 1]
    return X, y


_xgb, _lgb = xgb, lgb


_MODELS = {
    "hgb2": (lambda: HistGradientBoostingClassifier(max_iter=3, max_depth=2, random_state=0), 2),
    "hgb3": (lambda: HistGradientBoostingClassifier(max_iter=2, max_depth=2, random_state=0), 3),
    "xgb2": (lambda: _xgb(n_estimators=4, max_depth=2, learning_rate=0.5), 2),
    "xgb3": (lambda: _xgb(n_estimators=2, max_depth=2), 3),
    "xgbsm": (lambda: _xgb(n_estimators=2, max_depth=2, objective="multi:softmax"), 3),
    "lgb2": (lambda: _lgb(n_estimators=4, num_leaves=3, learning_rate=0.3), 2),
    "lgb3": (lambda: _lgb(n_estimators=2, num_leaves=3), 3),
    "lgbrf": (
        lambda: _lgb(
            boosting_type="rf", n_estimators=3, num_leaves=3, subsample=0.7, subsample_freq=1
        ),
        2,
    ),
}


@pytest.fixture(scope="module", params=sorted(_MODELS))
def fitted(request):
    make, k = _MODELS[request.param]
    X, y = _data(k, seed=len(request.param))
    model = make().fit(X, y)
    return request.param, model, TreeExplainer(model), X


def _raw(model, R):
    root = type(model).__module__.split(".")[0]
    if root == "xgboost":
        raw = model.predict(R, output_margin=True)
    elif root == "lightgbm":
        raw = model.predict(R, raw_score=True)
    else:
        raw = model.decision_function(R)
    return np.asarray(raw, dtype=np.float64).reshape(R.shape[0], -1)


def _on_splits(forest, n, seed):
    """Rows on and next to every boundary and threshold (and random rows around them)."""
    rng = np.random.default_rng(seed)
    P = forest.probe(rng, n)
    extra = [0.0, parse_lightgbm.ZERO, -parse_lightgbm.ZERO, 1e-36]
    Q = P.copy()
    Q[rng.random(Q.shape) < 0.3] = rng.choice(extra)
    return np.vstack([P, Q])


def _same_distance(got, ref):
    if math.isinf(ref):
        return math.isinf(got)
    return math.isclose(got, ref, rel_tol=RTOL, abs_tol=1e-12)


def _check_against_cells(model, ex, x0, target, **opts):
    res = ex.explain(x0, target, **opts)
    ref_opts = {k: v for k, v in opts.items() if k in ("metric", "max_changes", "proba")}
    if "frozen" in opts:
        lo, hi = np.full(x0.shape, -np.inf), np.full(x0.shape, np.inf)
        lo[opts["frozen"]] = hi[opts["frozen"]] = x0[opts["frozen"]]
        ref_opts["lo"], ref_opts["hi"] = lo, hi
    ref, _ = boosted_cells_brute_force(model, x0, target, **ref_opts)
    assert _same_distance(res.distance, ref), (res.distance, ref, res.message)
    if res.success:
        assert model.predict(res.x[None])[0] == target
        if "proba" in opts:
            col = list(model.classes_).index(target)
            assert model.predict_proba(res.x[None])[0, col] >= opts["proba"]
        assert res.status == Status.OK
    else:
        assert math.isinf(ref)
    return res


# ---------------------------------------------------------------------------------- the parse
def test_parse_agrees_bit_for_bit(fitted):
    name, model, ex, X = fitted
    fo = ex._forest
    rng = np.random.default_rng(0)
    R = np.vstack([_on_splits(fo, 400, seed=1), X + rng.normal(scale=0.3, size=X.shape) * X.std(0)])
    np.testing.assert_array_equal(fo.evaluate(R), _raw(model, R) / fo.divisor)
    np.testing.assert_array_equal(fo.predict_proba(R), model.predict_proba(R))
    np.testing.assert_array_equal(model.classes_[fo.predict_index(R)], model.predict(R))


def test_explainer_for_routes_to_tree_explainer(fitted):
    name, model, ex, X = fitted
    assert type(fastcf.explainer_for(model)).__name__ == "TreeExplainer"


# ---------------------------------------------------------------------------------- optimality
@pytest.mark.parametrize("metric", ["manhattan", "euclidean", "l0"])
def test_explain_equals_cell_brute_force(fitted, metric):
    name, model, ex, X = fitted
    for x0 in X[:2]:
        for target in model.classes_:
            _check_against_cells(model, ex, x0, target, metric=metric)


@pytest.mark.parametrize("opts", [{"proba": 0.7}, {"frozen": [2], "max_changes": 1}])
def test_options_equal_cell_brute_force(fitted, opts):
    name, model, ex, X = fitted
    for x0 in X[2:4]:
        for target in model.classes_:
            _check_against_cells(model, ex, x0, target, **opts)


def test_queries_on_split_values(fitted):
    name, model, ex, X = fitted
    X0 = _on_splits(ex._forest, 2, seed=3)
    for x0 in X0:
        for target in model.classes_:
            res = _check_against_cells(model, ex, x0, target)
            assert res.success


def test_batch_is_confirmed_by_predict(fitted):
    name, model, ex, X = fitted
    for target in model.classes_:
        batch = ex.explain(X[10:14], target, metric="euclidean")
        assert batch.success.all()
        np.testing.assert_array_equal(model.predict(batch.x), np.full(4, target))
        np.testing.assert_array_equal(batch.proba, model.predict_proba(batch.x))


@pytest.mark.parametrize("lib", ["hgb", "xgb", "lgb"])
def test_larger_models_agree_and_answer(lib):
    # deeper trees, more of them: the parse still agrees bit for bit, the answers are confirmed
    X, y = _data(3, seed=9, n=400)
    model = {
        "hgb": lambda: HistGradientBoostingClassifier(max_iter=15, max_depth=5, random_state=0),
        "xgb": lambda: _xgb(n_estimators=15, max_depth=5, learning_rate=0.2),
        "lgb": lambda: _lgb(n_estimators=15, num_leaves=15, learning_rate=0.2),
    }[lib]().fit(X, y)
    ex = TreeExplainer(model)
    R = np.vstack([_on_splits(ex._forest, 300, seed=2), X])
    np.testing.assert_array_equal(ex._forest.evaluate(R), _raw(model, R))
    np.testing.assert_array_equal(ex._forest.predict_proba(R), model.predict_proba(R))
    for target in model.classes_:
        res = ex.explain(X[0], target, metric="l0")
        assert res.success and model.predict(res.x[None])[0] == target
        assert res.distance <= 3


# ---------------------------------------------------------------------------------- split rules
def test_xgboost_boundary_equals_bisection_with_numpy_cast():
    rng = np.random.default_rng(2)
    c = (rng.standard_normal(300) * 10.0 ** rng.integers(-8, 8, 300)).astype(np.float32)
    special = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-38, 3e5, F32_MAX, -F32_MAX], np.float32)
    c = np.concatenate([c, np.nextafter(c, np.float32(np.inf)), special])
    got = parse_xgboost.boundary(c)
    for ci, b in zip(c, got, strict=True):
        ref = bisect_boundary(lambda x, ci=ci: bool(np.float32(x) < ci), -F32_MAX, F32_MAX)
        assert min(b, F32_MAX) == ref or (ref == -math.inf and b < -F32_MAX), (ci, b, ref)


def _lgb_rule(x, t, missing_type, default_left):
    """LightGBM's rule as documented: |x| <= 1e-35f read as 0; zeros to the default side for
    missing_type Zero; else ``x <= t`` in double."""
    if abs(x) <= float(np.float32(1e-35)):
        return default_left if missing_type == "Zero" else 0.0 <= t
    return x <= t


@pytest.mark.parametrize("missing_type", ["None", "NaN", "Zero"])
@pytest.mark.parametrize("default_left", [True, False])
def test_lightgbm_boundary_equals_bisection(missing_type, default_left):
    z = parse_lightgbm.ZERO
    below = float(np.nextafter(-z, -1.0))
    ts = [-1.5, 2.0, -z, z, 0.0, -0.0, z / 2, -z / 2, float(np.nextafter(z, 1)), -2 * z, 3e5]
    ts += [below, float(np.nextafter(below, -1.0))]
    for t in ts:
        b = parse_lightgbm.boundary(t, missing_type, default_left)
        pts = np.sort([t - 1.0, t, (t - z) / 2, (t + z) / 2, -z, 0.0, z, 2 * abs(t) + 1.0])
        pts = np.concatenate([pts, np.nextafter(pts, -1.0), np.nextafter(pts, 1.0)])
        left = np.array([_lgb_rule(x, t, missing_type, default_left) for x in np.sort(pts)])
        np.testing.assert_array_equal(
            parse_lightgbm.go_left(np.sort(pts), t, missing_type, default_left), left
        )
        if b is None:  # refused: the inputs that go left are no interval
            assert missing_type == "Zero"
            assert (np.diff(left.astype(int)) > 0).any()  # a right-going x below a left one
            continue
        ref = bisect_boundary(
            lambda x, t=t: _lgb_rule(x, t, missing_type, default_left), -1e300, 1e300
        )
        assert b == ref, (t, b, ref)
        assert not (np.diff(left.astype(int)) > 0).any()  # an interval indeed


def test_xgboost_decision_near_a_zero_margin():
    # base_margin moves every margin next to 0, where XGBoost's float32 sigmoid rounds p to
    # 0.5 for small positive margins: the parsed decision must follow the library's, not the sign
    X, y = _data(2, seed=4)
    model = _xgb(n_estimators=3, max_depth=2).fit(X, y)
    fo = parse_xgboost.parse(model)
    S0 = fo.evaluate(X[:40]) - fo.base  # the trees' sum (float32 rounding aside)
    rng = np.random.default_rng(0)
    tiny = rng.choice([0.0, 1e-9, 5e-8, 9e-8, 1.2e-7, 3e-7, -1e-8], size=40)
    bm = (-S0[:, 0] + tiny).astype(np.float32)
    mine = []
    for i in range(40):  # each row with its own base margin
        fo.base = np.array([float(bm[i])])
        mine.append(fo.predict_proba(X[i : i + 1])[0])
    mine = np.array(mine)
    own = model.predict_proba(X[:40], base_margin=bm)
    np.testing.assert_array_equal(mine, own)
    np.testing.assert_array_equal(np.argmax(mine, axis=1), model.predict(X[:40], base_margin=bm))
    assert (np.abs(own[:, 1] - 0.5) < 1e-6).any()  # rows near the tie were reached


def test_expf_is_the_c_library_one():
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("m")
    if name is None:
        pytest.skip("no libm")
    fn = ctypes.CDLL(name).expf
    fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
    x = np.random.default_rng(5).uniform(-80, 80, 20000).astype(np.float32)
    ref = np.array([fn(float(v)) for v in x], dtype=np.float32)
    np.testing.assert_array_equal(outputs.expf(x), ref)


# ---------------------------------------------------------------------------------- iterations
def test_early_stopping_uses_the_best_iteration():
    X, y = _data(3, seed=6, n=300)
    xgb_model = _xgb(n_estimators=20, max_depth=2, early_stopping_rounds=1, learning_rate=0.9)
    xgb_model.fit(X[:150], y[:150], eval_set=[(X[150:], y[150:])], verbose=False)
    fo = parse_xgboost.parse(xgb_model)
    assert fo.n_trees == 3 * (xgb_model.best_iteration + 1) < 3 * 20
    lgb = pytest.importorskip("lightgbm")
    lgb_model = _lgb(n_estimators=30, num_leaves=3, learning_rate=0.9)
    import inspect

    if "eval_X" in inspect.signature(lgb_model.fit).parameters:  # LightGBM >= 4.7
        held_out = {"eval_X": X[150:], "eval_y": y[150:]}
    else:
        held_out = {"eval_set": [(X[150:], y[150:])]}
    lgb_model.fit(X[:150], y[:150], callbacks=[lgb.early_stopping(1, False)], **held_out)
    fl = parse_lightgbm.parse(lgb_model)
    assert fl.n_trees == 3 * lgb_model.best_iteration_ < 3 * 30
    for model in (xgb_model, lgb_model):
        ex = TreeExplainer(model)
        res = ex.explain(X[0], model.classes_[-1])
        assert res.success and model.predict(res.x[None])[0] == model.classes_[-1]


def test_pandas_and_pickle():
    pd = pytest.importorskip("pandas")
    X, y = _data(2, seed=7)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    for model in (_xgb(n_estimators=3, max_depth=2), _lgb(n_estimators=3, num_leaves=3)):
        model.fit(df, y)
        ex = pickle.loads(pickle.dumps(TreeExplainer(model)))
        target = 1 - model.predict(df.iloc[:1])[0]
        res = ex.explain(df.iloc[0], target, frozen=["b"])
        if res.success:
            assert res.x[1] == df.iloc[0]["b"]
            assert model.predict(pd.DataFrame(res.x[None], columns=df.columns))[0] == target
        ref, _ = _reference_frozen(model, df.iloc[0].to_numpy(), target, 1)
        assert _same_distance(res.distance, ref)


def _reference_frozen(model, x0, target, f):
    lo, hi = np.full(x0.shape, -np.inf), np.full(x0.shape, np.inf)
    lo[f] = hi[f] = x0[f]
    return boosted_cells_brute_force(model, x0, target, lo=lo, hi=hi)


# ---------------------------------------------------------------------------------- refusals
def test_refusals_hist_gradient_boosting():
    X, y = _data(2)
    with pytest.raises(ValueError, match="not fitted"):
        TreeExplainer(HistGradientBoostingClassifier())
    with pytest.raises(TypeError, match="regressor"):
        TreeExplainer(HistGradientBoostingRegressor(max_iter=2).fit(X, y))
    Xc = X.copy()
    Xc[:, 2] = np.arange(len(X)) % 3
    hgb = HistGradientBoostingClassifier(max_iter=2, categorical_features=[2]).fit(Xc, y)
    # categorical features are taken (tests/test_trees_missing.py); non-numeric ones refused
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(
        {"a": X[:, 0], "b": X[:, 1], "c": np.array(["u", "v", "w"])[Xc[:, 2].astype(int)]}
    )
    df["c"] = df["c"].astype("category")
    hgb = HistGradientBoostingClassifier(max_iter=2, categorical_features="from_dtype").fit(df, y)
    with pytest.raises(ValueError, match="categorical feature 'c'.*non-numeric"):
        TreeExplainer(hgb)
    ex = TreeExplainer(HistGradientBoostingClassifier(max_iter=2).fit(X, y))
    bad = X[0].copy()
    bad[1] = -np.inf  # (NaN is a missing value, routed by the model: test_trees_missing.py)
    with pytest.raises(ValueError, match="infinite"):
        ex.explain(bad, 1)


def test_refusals_xgboost():
    xgb = pytest.importorskip("xgboost")
    pd = pytest.importorskip("pandas")
    X, y = _data(2)
    with pytest.raises(ValueError, match="not fitted"):
        TreeExplainer(_xgb())
    for booster, what in (("gblinear", "gblinear"), ("dart", "dart")):
        with pytest.raises(ValueError, match=what):
            TreeExplainer(_xgb(n_estimators=2, booster=booster).fit(X, y))
    with pytest.raises(ValueError, match="missing=0"):
        TreeExplainer(_xgb(n_estimators=2, missing=0.0).fit(X, y))
    with pytest.raises(ValueError, match="binary:logitraw"):
        TreeExplainer(_xgb(n_estimators=2, objective="binary:logitraw").fit(X, y))
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    df["c"] = pd.Categorical(np.arange(len(X)) % 3)
    cat = _xgb(n_estimators=2, enable_categorical=True, tree_method="hist").fit(df, y)
    assert any(_trees_json(cat))
    # (fitted on numeric codes with feature_types its sets are taken:
    # tests/test_trees_categorical_boosters.py)
    with pytest.raises(ValueError, match="pandas categories"):
        TreeExplainer(cat)
    with pytest.raises(TypeError, match="regressor XGBRegressor"):
        TreeExplainer(xgb.XGBRegressor(n_estimators=2).fit(X, y))
    # (a bare Booster is taken, as its classifier: tests/test_trees_boosters.py)
    with pytest.raises(ValueError, match="float32"):
        TreeExplainer(_xgb(n_estimators=2).fit(X, y)).explain(np.array([1e39, 0.0, 0.0]), 1)


def _trees_json(model):
    import json

    raw = json.loads(model.get_booster().save_raw("json"))
    return [
        [s for s in t["split_type"] if s]
        for t in raw["learner"]["gradient_booster"]["model"]["trees"]
    ]


def test_refusals_lightgbm():
    lgb = pytest.importorskip("lightgbm")
    X, y = _data(3)
    with pytest.raises(ValueError, match="not fitted"):
        TreeExplainer(_lgb())
    Xc = X.copy()
    rng = np.random.default_rng(0)
    Xc[:, 2] = np.where(y == 1, rng.choice([0, 2], len(y)), rng.choice([1, 3], len(y)))
    cat = _lgb(n_estimators=3, num_leaves=4, min_data_per_group=5, cat_smooth=1)
    cat.fit(Xc, y, categorical_feature=[2])
    assert (cat.booster_.trees_to_dataframe()["decision_type"] == "==").any()
    # categorical splits are taken (tests/test_trees_lgb_categorical.py)
    assert TreeExplainer(cat)._forest.categories is not None
    with pytest.raises(ValueError, match="linear tree"):
        TreeExplainer(_lgb(n_estimators=2, num_leaves=3, linear_tree=True).fit(X, y))
    with pytest.raises(ValueError, match="multiclassova"):
        TreeExplainer(_lgb(n_estimators=2, num_leaves=3, objective="multiclassova").fit(X, y))
    Xz = X.copy()
    Xz[::3] = 0.0
    zero = _lgb(n_estimators=3, num_leaves=4, zero_as_missing=True).fit(Xz, y)
    TreeExplainer(zero)  # taken, also where the zeros cross a threshold (test_trees_missing)
    with pytest.raises(TypeError, match="regressor LGBMRegressor"):
        TreeExplainer(lgb.LGBMRegressor(n_estimators=2, verbose=-1).fit(X, y))


@pytest.mark.parametrize("lib", ["hgb", "xgb", "lgb"])
def test_a_wrong_split_rule_is_refused_when_checked(lib):
    X, y = _data(2, seed=8)
    model, parser, wrong = {
        # HGB's float64 rule through a float32 cast; XGBoost's x < c taken as x <= c;
        # LightGBM's double rule through a float32 cast
        "hgb": (lambda: HistGradientBoostingClassifier(max_iter=3, max_depth=2), parse_hist,
                lambda t: t.astype(np.float32)),
        "xgb": (lambda: _xgb(n_estimators=3, max_depth=2), parse_xgboost, lambda t: t),
        "lgb": (lambda: _lgb(n_estimators=3, num_leaves=4), parse_lightgbm,
                lambda t: t.astype(np.float32)),
    }[lib]  # fmt: skip
    model = model().fit(X, y)
    forest = parser.parse(model)
    parser.check(forest, model)
    t = forest.threshold
    forest.boundary = np.where(np.isnan(t), np.nan, wrong(t).astype(np.float64))
    with pytest.raises(ValueError, match="other leaves"):
        parser.check(forest, model)


def test_lightgbm_thresholds_dumped_as_1e300_are_read_within_their_domain():
    """LightGBM dumps a threshold of +inf (every number left, NaN right) as 1e300 (its
    AvoidInf), so the rule is known only within ±1e300: a fuzz find (NaN in training, seed 0)
    was refused by the parse check on probe rows at 1.02e300. Values beyond are refused."""
    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(60, 2)) * 2.0) / 2.0
    s = X @ rng.normal(size=2) + 0.5 * rng.normal(size=60) * np.abs(X).mean()
    y = np.digitize(s, np.quantile(s, [1 / 3, 2 / 3]))
    X[rng.random(X.shape) < 0.1] = np.nan
    m = lgb(n_estimators=2, max_depth=2, num_leaves=4, min_child_samples=3).fit(X, y)
    thresholds = m.booster_.trees_to_dataframe()["threshold"]
    assert (thresholds == 1e300).any()  # the case: a split that sends every number left
    ex = TreeExplainer(m)  # accepted: the check agrees with LightGBM within the domain
    x0 = np.array([0.5, -1.0])
    target = (m.predict(x0[None])[0] + 1) % 3
    res = ex.explain(x0, target)
    assert not res.success or m.predict(res.x[None])[0] == target
    with pytest.raises(ValueError, match="read exactly on"):
        ex.explain(np.array([0.5, 1.02e300]), target)
