"""Missing values (NaN) in TreeExplainer's queries: each library's own routing, exactly.

A missing feature of the query stays missing in the answer and the other features move
(:mod:`fastcf._trees.missing`). The reference (tests/reference.py) enumerates every cell of the
threshold grid with the NaN columns fixed at NaN and asks the model's own ``predict`` about each
candidate, so the library routes the NaN itself; fastcf's answers must have the same distance,
keep every NaN, and be in the target by the model's own ``predict``.
"""

import math

import numpy as np
import pytest
from reference import (
    boosted_cells_brute_force,
    categories_brute_force,
    tree_cells_brute_force,
)
from sklearn.datasets import make_classification
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.tree import DecisionTreeClassifier
from tree_models import lgb, xgb

from fastcf import Status, TreeExplainer
from fastcf._trees import parse_hist, parse_lightgbm, parse_sklearn, parse_xgboost
from fastcf._trees.missing import FILL, check_query, condition, routed

RTOL = 1e-9


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


def _data(n_classes, seed=0, n=240, frac=0.2):
    """Three informative features with about ``frac`` of the cells missing."""
    X, y = make_classification(
        n_samples=n, n_features=3, n_informative=3, n_redundant=0, n_classes=n_classes,
        n_clusters_per_class=1, random_state=seed,
    )  # fmt: skip
    rng = np.random.default_rng(seed)
    Xn = X.copy()
    Xn[rng.random(X.shape) < frac] = np.nan
    return X, Xn, y


_xgb, _lgb = xgb, lgb


# name: (make, classes, fitted on the data with NaN?, brute force)
_MODELS = {
    "hgb2": (lambda: HistGradientBoostingClassifier(max_iter=3, max_depth=2, random_state=0), 2,
             True, "boosted"),
    "hgb3": (lambda: HistGradientBoostingClassifier(max_iter=2, max_depth=2, random_state=0), 3,
             True, "boosted"),
    "hgb2-clean": (lambda: HistGradientBoostingClassifier(max_iter=3, max_depth=2,
                                                          random_state=0), 2, False, "boosted"),
    "xgb2": (lambda: _xgb(n_estimators=4, max_depth=2, learning_rate=0.5), 2, True, "boosted"),
    "xgb3": (lambda: _xgb(n_estimators=2, max_depth=2), 3, True, "boosted"),
    "lgb2": (lambda: _lgb(n_estimators=4, num_leaves=3, learning_rate=0.3), 2, True, "boosted"),
    "lgb3": (lambda: _lgb(n_estimators=2, num_leaves=3), 3, True, "boosted"),
    # fitted without NaN: missing_type "None", a NaN is read as 0.0 and compared
    "lgb2-clean": (lambda: _lgb(n_estimators=4, num_leaves=3, learning_rate=0.3), 2, False,
                   "boosted"),
    "rf2": (lambda: RandomForestClassifier(4, max_depth=2, random_state=0), 2, True, "cells"),
    "rf3": (lambda: RandomForestClassifier(3, max_depth=2, random_state=0), 3, True, "cells"),
    "et2-clean": (lambda: ExtraTreesClassifier(3, max_depth=2, random_state=0), 2, False,
                  "cells"),
    "dt3": (lambda: DecisionTreeClassifier(max_depth=3, random_state=0), 3, True, "cells"),
}  # fmt: skip


@pytest.fixture(scope="module", params=sorted(_MODELS))
def fitted(request):
    make, k, with_nan, ref = _MODELS[request.param]
    X, Xn, y = _data(k, seed=len(request.param))
    model = make().fit(Xn if with_nan else X, y)
    return request.param, model, TreeExplainer(model), Xn, ref


def _reference(kind, model, x0, target, **opts):
    brute = boosted_cells_brute_force if kind == "boosted" else tree_cells_brute_force
    return brute(model, x0, target, **opts)


def _same(got, ref):
    if math.isinf(ref):
        return math.isinf(got)
    return math.isclose(got, ref, rel_tol=RTOL, abs_tol=1e-12)


def _queries(Xn, n=6):
    """Rows with one or two missing features (some patterns repeated)."""
    M = np.isnan(Xn)
    rows = np.flatnonzero((M.sum(axis=1) >= 1) & (M.sum(axis=1) <= 2))
    return Xn[rows[:n]]


def test_nan_queries_against_brute_force(fitted):
    name, model, ex, Xn, ref_kind = fitted
    Q = _queries(Xn)
    assert Q.shape[0] >= 4 and np.isnan(Q).any()
    checked = 0
    for x0 in Q:
        own = model.predict(x0[None])[0]
        for target in model.classes_:
            if target == own:
                continue
            res = ex.explain(x0, target)
            ref, _ = _reference(ref_kind, model, x0, target)
            assert _same(res.distance, ref), (name, x0, target, res.distance, ref, res.message)
            nan = np.isnan(x0)
            np.testing.assert_array_equal(np.isnan(res.x), nan)  # missing stays missing
            assert not set(res.changed_index.tolist()) & set(np.flatnonzero(nan).tolist())
            if res.success:
                assert model.predict(res.x[None])[0] == target
                checked += 1
            else:
                assert res.status == Status.INFEASIBLE and "stay missing" in res.message
    assert checked > 0


def test_nan_queries_with_options_against_brute_force(fitted):
    name, model, ex, Xn, ref_kind = fitted
    x0 = _queries(Xn)[1]
    target = model.classes_[model.classes_ != model.predict(x0[None])[0]][0]
    free = np.flatnonzero(~np.isnan(x0))
    lo, hi = np.full(3, -np.inf), np.full(3, np.inf)
    lo[free[0]], hi[free[0]] = x0[free[0]] - 0.5, x0[free[0]] + 0.5
    for opts, ref_opts in [
        ({"metric": "l0"}, {"metric": "l0"}),
        ({"metric": "euclidean"}, {"metric": "euclidean"}),
        ({"max_changes": 1}, {"max_changes": 1}),
        ({"bounds": (lo, hi)}, {"lo": lo, "hi": hi}),
        ({"frozen": [int(free[-1])]}, {"lo": np.where(np.arange(3) == free[-1], x0, -np.inf),
                                       "hi": np.where(np.arange(3) == free[-1], x0, np.inf)}),
    ]:  # fmt: skip
        res = ex.explain(x0, target, **opts)
        ref, _ = _reference(ref_kind, model, x0, target, **ref_opts)
        assert _same(res.distance, ref), (name, opts, res.distance, ref, res.message)
        if res.success:
            assert model.predict(res.x[None])[0] == target
            assert np.isnan(res.x[np.isnan(x0)]).all()


def test_proba_with_nan_against_brute_force():
    X, Xn, y = _data(2, seed=3)
    model = HistGradientBoostingClassifier(max_iter=3, max_depth=2, random_state=0).fit(Xn, y)
    ex = TreeExplainer(model)
    for x0 in _queries(Xn, 4):
        target = 1 - model.predict(x0[None])[0]
        res = ex.explain(x0, target, proba=0.7)
        ref, _ = boosted_cells_brute_force(model, x0, target, proba=0.7)
        assert _same(res.distance, ref), (res.distance, ref, res.message)
        if res.success:
            assert model.predict_proba(res.x[None])[0, target] >= 0.7


def test_a_batch_of_mixed_patterns_equals_its_rows(fitted):
    name, model, ex, Xn, _ = fitted
    Q = np.vstack([_queries(Xn), Xn[np.isfinite(Xn).all(axis=1)][:2]])
    targets = np.array([model.classes_[model.classes_ != c][0] for c in model.predict(Q)])
    batch = ex.explain(Q, targets)
    for i in range(Q.shape[0]):
        one = ex.explain(Q[i], targets[i])
        assert batch.success[i] == one.success
        assert _same(batch.distance[i], one.distance)
        np.testing.assert_array_equal(batch.x[i], one.x)  # (NaN at the same places)
    assert np.all(model.predict(batch.x[batch.success]) == targets[batch.success])
    # each NaN pattern is answered by one conditioned program (or leaf table), built once
    kinds = {k for k, _ in ex._patterns._builds.done}
    pats = {tuple(r) for r in np.isnan(Q) if r.any()}
    assert len(ex._patterns._builds.done) == len(pats) * len(kinds)


def test_exact_false_with_nan_is_valid_and_bounded():
    X, Xn, y = _data(3, seed=5)
    model = HistGradientBoostingClassifier(max_iter=3, max_depth=3, random_state=0).fit(Xn, y)
    ex = TreeExplainer(model)
    Q = _queries(Xn, 5)
    t = (model.predict(Q) + 1) % 3
    fast = ex.explain(Q, t, exact=False)
    best = ex.explain(Q, t)
    ok = fast.success
    assert ok.any()
    assert np.all(model.predict(fast.x[ok]) == t[ok])
    assert np.all(np.isnan(fast.x) == np.isnan(Q))
    assert np.all(fast.distance[ok] >= best.distance[ok] - 1e-9)
    assert np.all(best.distance[ok] >= fast.info["bound"][ok] - 1e-9)


def test_conditioned_forest_scores_equal_the_model_at_nan(fitted):
    # the forest conditioned on a pattern, at the rows with NaN held at FILL, gives the
    # original forest's scores at the rows with their NaN (which the parsers check against the
    # library's own leaves)
    _, model, ex, Xn, _ = fitted
    fo = ex._forest
    rng = np.random.default_rng(0)
    P = rng.normal(size=(200, 3))
    for mask in ([True, False, False], [False, True, True], [True, True, True]):
        mask = np.array(mask)
        Pn = np.where(mask, np.nan, P)
        co = condition(fo, mask)
        assert not np.isin(co.feature[~co.is_leaf], np.flatnonzero(mask)).any()
        np.testing.assert_array_equal(co.evaluate(np.where(mask, FILL, P)), fo.evaluate(Pn))
        np.testing.assert_array_equal(
            model.classes_[co.predict_index(np.where(mask, FILL, P))], model.predict(Pn)
        )


def test_enumerate_never_lists_a_missing_feature():
    X, Xn, y = _data(2, seed=7)
    rf = RandomForestClassifier(4, max_depth=3, random_state=0).fit(Xn, y)
    x0 = _queries(Xn, 1)[0]
    alts = TreeExplainer(rf).enumerate(x0, 1 - rf.predict(x0[None])[0], k=3)
    assert alts
    for a in alts:
        assert a.success and np.isnan(a.x[np.isnan(x0)]).all()
        assert not np.isnan(x0[a.changed_index]).any()


def test_a_model_that_refuses_nan_is_named_with_the_feature_and_row():
    pd = pytest.importorskip("pandas")
    X, _, y = _data(2)
    gb = GradientBoostingClassifier(n_estimators=3, max_depth=2, random_state=0).fit(X, y)
    ex = TreeExplainer(gb)
    Q = X[:3].copy()
    Q[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN\) at feature 1 \(row 2\).*GradientBoosting"):
        ex.explain(Q, 1)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    exd = TreeExplainer(GradientBoostingClassifier(n_estimators=2).fit(df, y))
    row = df.iloc[[0]].copy()
    row.loc[:, "c"] = np.nan
    with pytest.raises(ValueError, match=r"feature 'c' \(row 0\).*refuses NaN"):
        exd.explain(row, 1)
    assert not routed(parse_sklearn.parse(gb)).any()
    # an infinite value is not a missing one
    bad = X[0].copy()
    bad[0] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        TreeExplainer(HistGradientBoostingClassifier(max_iter=2).fit(X, y)).explain(bad, 1)


def test_check_query_passes_rows_without_nan():
    X, Xn, y = _data(2)
    fo = parse_hist.parse(HistGradientBoostingClassifier(max_iter=2).fit(Xn, y))
    assert not check_query(fo, X[:4], None, "m").any()
    np.testing.assert_array_equal(check_query(fo, Xn[:9], None, "m"), np.isnan(Xn[:9]))


def _flip(forest):
    inner = ~forest.is_leaf
    forest.missing = np.where(inner, 1 - forest.missing, forest.missing).astype(np.int8)


@pytest.mark.parametrize("lib", ["sklearn", "hist", "xgboost", "lightgbm"])
def test_a_wrong_nan_routing_is_refused_when_checked(lib):
    X, Xn, y = _data(2, seed=2)
    if lib == "sklearn":
        model, parser = RandomForestClassifier(3, max_depth=3, random_state=0), parse_sklearn
    elif lib == "hist":
        model, parser = HistGradientBoostingClassifier(max_iter=3, random_state=0), parse_hist
    elif lib == "xgboost":
        model, parser = _xgb(n_estimators=3, max_depth=3), parse_xgboost
    else:
        model, parser = _lgb(n_estimators=3, num_leaves=4), parse_lightgbm
    model.fit(Xn, y)
    forest = parser.parse(model)
    parser.check(forest, model)  # the parsed routing agrees with the model's
    _flip(forest)
    with pytest.raises(ValueError, match="other leaves"):
        parser.check(forest, model)


@pytest.mark.parametrize("missing_type", ["None", "NaN", "Zero"])
@pytest.mark.parametrize("default_left", [True, False])
def test_lightgbm_nan_left(missing_type, default_left):
    # LightGBM's NumericalDecision: a NaN is read as 0.0 unless missing_type is NaN; the
    # default child takes it under NaN and Zero, the threshold decides under None
    for t in (-1.0, -0.0, 0.0, 2.5):
        got = parse_lightgbm.nan_left(t, missing_type, default_left)
        want = default_left if missing_type != "None" else 0.0 <= t
        assert got == want


def test_fit_mad_leaves_nan_out_and_results_count_no_missing_change():
    import pickle

    X, Xn, y = _data(2, seed=8)
    hgb = HistGradientBoostingClassifier(max_iter=3, max_depth=2, random_state=0).fit(Xn, y)
    ex = TreeExplainer(hgb).fit_mad(Xn)
    for f in range(3):  # each feature's MAD over its present values
        v = Xn[~np.isnan(Xn[:, f]), f]
        assert ex.mad_[f] == np.median(np.abs(v - np.median(v)))
    Q = _queries(Xn, 4)
    t = 1 - hgb.predict(Q)
    batch = ex.explain(Q, t, weights="mad")
    assert batch.success.all()
    w = 1.0 / ex.mad_
    np.testing.assert_allclose(
        batch.distance, np.nansum(w * np.abs(batch.x - Q), axis=1), rtol=1e-12
    )
    n_moved = [int(np.sum(~np.isnan(Q[i]) & (batch.x[i] != Q[i]))) for i in range(len(Q))]
    pytest.importorskip("pandas")
    assert batch.to_frame()["n_changed"].tolist() == n_moved
    assert [batch[i].to_sparse().nnz for i in range(len(Q))] == n_moved
    again = pickle.loads(pickle.dumps(ex))  # (with its cached conditioned programs)
    np.testing.assert_array_equal(again.explain(Q, t, weights="mad").x, batch.x)


# ----------------------------------------------------------------- categorical (HistGB)
def _categorical(n_classes, seed=0, n=300):
    """Feature 1 categorical (codes 2, 5, 7, 11), some of it and of feature 0 missing."""
    X, _, y = _data(n_classes, seed=seed, n=n, frac=0.0)
    rng = np.random.default_rng(seed)
    cats = np.array([2.0, 5.0, 7.0, 11.0])
    c = rng.integers(0, 4, n)
    X[:, 1] = cats[c]
    y = (y + (c >= 2)) % n_classes  # the category matters
    X[rng.random(n) < 0.1, 1] = np.nan
    X[rng.random(n) < 0.1, 0] = np.nan
    return X, y


@pytest.mark.parametrize("k", [2, 3])
def test_categorical_frozen_against_brute_force(k):
    X, y = _categorical(k, seed=k)
    hgb = HistGradientBoostingClassifier(
        max_iter=3, max_depth=3, categorical_features=[1], random_state=0
    ).fit(X, y)
    assert any(p.nodes["is_categorical"].any() for s in hgb._predictors for p in s)
    ex = TreeExplainer(hgb)
    rows = [X[i].copy() for i in range(8)]
    rows[0][1] = 3.0  # a category the model never saw: HistGB routes it as missing
    rows[1][1] = -1.0  # (negative: the same)
    checked = 0
    for x0 in rows:
        own = hgb.predict(x0[None])[0]
        for target in hgb.classes_[hgb.classes_ != own]:
            res = ex.explain(x0, target, frozen=[1])
            lo = np.where(np.arange(3) == 1, x0, -np.inf)
            hi = np.where(np.arange(3) == 1, x0, np.inf)
            ref, _ = boosted_cells_brute_force(hgb, x0, target, lo=lo, hi=hi)
            assert _same(res.distance, ref), (x0, target, res.distance, ref, res.message)
            np.testing.assert_array_equal(res.x[1], x0[1])  # the category kept (or NaN)
            assert np.isnan(res.x[0]) == np.isnan(x0[0])
            if res.success:
                assert hgb.predict(res.x[None])[0] == target
                checked += 1
    assert checked > 0


def _free_reference(hgb, x0, target, f, w=1.0, metric="manhattan", max_changes=None):
    """:func:`reference.categories_brute_force` over the categories the model knows."""
    cats = np.unique(hgb._preprocessor.named_transformers_["encoder"].categories_[0])
    cats = cats[~np.isnan(cats)]
    return categories_brute_force(hgb, x0, target, f, cats, w, metric, max_changes)


@pytest.mark.parametrize("k", [2, 3])
def test_free_categories_against_brute_force(k):
    X, y = _categorical(k, seed=10 + k)
    hgb = HistGradientBoostingClassifier(
        max_iter=3, max_depth=3, categorical_features=[1], random_state=0
    ).fit(X, y)
    ex = TreeExplainer(hgb)
    rows = [X[i].copy() for i in np.flatnonzero(~np.isnan(X[:, 1]))[:6]]
    rows[0][1] = 3.0  # an unseen category: it may change into a known one
    moved = 0
    for x0 in rows:
        own = hgb.predict(x0[None])[0]
        for target in hgb.classes_[hgb.classes_ != own]:
            for opts in ({}, {"metric": "l0"}, {"metric": "euclidean"}, {"max_changes": 1}):
                res = ex.explain(x0, target, **opts)
                ref = _free_reference(hgb, x0, target, 1, **opts)
                assert _same(res.distance, ref), (x0, target, opts, res.distance, ref)
                if res.success:
                    assert hgb.predict(res.x[None])[0] == target
                    assert res.status == Status.OK
                    moved += res.x[1] != x0[1]
    assert moved > 0  # some answers change the category


def test_free_categories_batch_and_frozen():
    pd = pytest.importorskip("pandas")
    X, y = _categorical(2)
    df = pd.DataFrame(X, columns=["a", "kind", "c"])
    hgb = HistGradientBoostingClassifier(max_iter=2, categorical_features=["kind"]).fit(df, y)
    ex = TreeExplainer(hgb)
    rows = df.iloc[:6]
    target = 1 - hgb.predict(rows)
    batch = ex.explain(rows, target)
    assert batch.success.all()
    assert (hgb.predict(pd.DataFrame(batch.x, columns=df.columns)) == target).all()
    known = set(hgb._preprocessor.named_transformers_["encoder"].categories_[0].tolist())
    for i in range(6):  # a category is kept or moved to a known one; a NaN one stays NaN
        v, v0 = batch.x[i, 1], X[i, 1]
        assert (np.isnan(v) and np.isnan(v0)) or v == v0 or v in known
        one = ex.explain(rows.iloc[i], target[i])
        assert _same(batch.distance[i], one.distance)
    frozen = ex.explain(rows, target, frozen=["kind"])
    assert np.all(frozen.distance >= batch.distance - 1e-12)
    np.testing.assert_array_equal(frozen.x[:, 1], X[:6, 1])


def test_a_wrong_category_set_is_refused_when_checked():
    X, y = _categorical(2, seed=4)
    hgb = HistGradientBoostingClassifier(max_iter=3, categorical_features=[1], random_state=0)
    hgb.fit(X, y)
    forest = parse_hist.parse(hgb)
    parse_hist.check(forest, hgb)
    forest.categories.left = ~forest.categories.left
    with pytest.raises(ValueError, match="other leaves"):
        parse_hist.check(forest, hgb)


def test_free_categories_infeasible_and_quick_and_tabular_refusal():
    pd = pytest.importorskip("pandas")
    from fastcf import TabularExplainer

    X, y = _categorical(2, seed=1)
    hgb = HistGradientBoostingClassifier(
        max_iter=3, max_depth=3, categorical_features=[1], random_state=0
    ).fit(X, y)
    ex = TreeExplainer(hgb)
    i = int(np.flatnonzero(~np.isnan(X[:, 1]) & ~np.isnan(X[:, 0]))[0])
    t = 1 - hgb.predict(X[i : i + 1])[0]
    # every feature but the category frozen, the category boxed to its own value: infeasible
    # unless the query's own cell is already the target (it is not)
    box = (np.array([-np.inf, X[i, 1], -np.inf]), np.array([np.inf, X[i, 1], np.inf]))
    res = ex.explain(X[i], t, frozen=[0, 2], bounds=box)
    assert not res.success and res.status == Status.INFEASIBLE
    fast = ex.explain(X[:5], 1 - hgb.predict(X[:5]), exact=False)
    best = ex.explain(X[:5], 1 - hgb.predict(X[:5]))
    ok = fast.success
    assert ok.any() and np.all(hgb.predict(fast.x[ok]) == 1 - hgb.predict(X[:5])[ok])
    assert np.all(fast.distance[ok] >= best.distance[ok] - 1e-9)
    assert np.all(best.distance >= best.info["bound"] - 1e-9)
    df = pd.DataFrame(X, columns=["a", "kind", "c"])
    hgbd = HistGradientBoostingClassifier(max_iter=2, categorical_features=["kind"]).fit(df, y)
    with pytest.raises(TypeError, match="native categorical features"):
        TabularExplainer(hgbd, df)


def _zero_as_missing():
    """Data with a quarter of its cells 0.0 and an LGBMClassifier fitted with zero_as_missing."""
    X, _, y = _data(2, seed=3)
    rng = np.random.default_rng(3)
    X[rng.random(X.shape) < 0.25] = 0.0
    model = _lgb(n_estimators=6, num_leaves=5, zero_as_missing=True, subsample=0.8,
                 subsample_freq=1).fit(X, y)  # fmt: skip
    return X, model


def test_lightgbm_zero_as_missing_across_the_threshold_against_brute_force():
    # zero_as_missing=True: a zero (|x| <= 1e-35) and a NaN take the default child; where that
    # child lies across the threshold (default left with the threshold below the zeros, or
    # right with it above), the inputs that go left are two intervals (issue 52, item 7c)
    X, model = _zero_as_missing()
    rng = np.random.default_rng(3)
    df = model.booster_.trees_to_dataframe()
    zero = df[df["missing_type"] == "Zero"]
    left = zero["missing_direction"] == "left"
    across = (left & (zero["threshold"] < -parse_lightgbm.ZERO)) | (
        ~left & (zero["threshold"] > parse_lightgbm.ZERO)
    )
    assert across.any()  # the case the parse used to refuse
    ex = TreeExplainer(model)
    forest = ex._forest
    # every row's leaf is LightGBM's own (pred_leaf) on the band, next to it and at NaN
    Z = parse_lightgbm.ZERO
    band = [0.0, -0.0, Z, -Z, Z / 2, np.nextafter(Z, 1.0), np.nextafter(-Z, -1.0), np.nan]
    P = forest.probe(rng, 200)
    mask = rng.random(P.shape) < 0.4
    P[mask] = rng.choice(band, size=int(mask.sum()))
    P = np.vstack([P, np.array(band)[rng.integers(0, len(band), size=(40, 3))]])
    own = model.predict(P, pred_leaf=True)
    index = parse_lightgbm._walk_all(model)[-1]  # LightGBM's leaf index of each position
    mine = forest.leaves(P) - forest.offset[None, :]
    got = np.column_stack([index[t][mine[:, t]] for t in range(len(index))])
    np.testing.assert_array_equal(got, own)
    # the answers: those of the brute force over the cells (the band's edges among them),
    # zeros and NaN in the queries included
    Q = X[:6].copy()
    Q[0, 0], Q[1, 1], Q[2, :2] = 0.0, np.nan, [0.0, -Z]
    checked = 0
    for x0 in Q:
        target = 1 - model.predict(x0[None])[0]
        for opts in ({}, {"metric": "l0"}):
            res = ex.explain(x0, target, **opts)
            ref, _ = boosted_cells_brute_force(model, x0, target, **opts)
            assert _same(res.distance, ref), (x0, target, opts, res.distance, ref, res.message)
            if res.success:
                assert model.predict(res.x[None])[0] == target
                checked += 1
    assert checked >= 6


def test_lightgbm_zero_band_copies_past_the_node_limit_are_refused(monkeypatch):
    _, model = _zero_as_missing()
    monkeypatch.setattr(parse_lightgbm, "MAX_NODES", 8)
    with pytest.raises(ValueError, match="zero_as_missing splits whose zeros cross"):
        TreeExplainer(model)


def test_time_limit_holds_the_build_of_a_nan_patterns_program():
    """Issue 54: a row with NaN is answered by the program of its pattern, built on the
    pattern's first query within that query's ``time_limit`` (in stages: a limit spent
    before it is built fails the row with the reason, the next query goes on, only finished
    programs are cached), and the finished program answers as one built at once."""
    X, y = make_classification(
        n_samples=1000, n_features=6, n_informative=6, n_redundant=0, random_state=5
    )
    X[::7, 2] = np.nan
    model = HistGradientBoostingClassifier(max_iter=30, max_depth=5, random_state=0).fit(X, y)
    ex = TreeExplainer(model)
    x = X[7].copy()
    target = 1 - model.predict(x[None])[0]
    for _ in range(10):  # (5 stages, at least one per call)
        res = ex.explain(x, target, time_limit=1e-6)
        assert all(getattr(p, "built", True) for p in ex._patterns._builds.done.values())
        if ex._patterns._builds.done:
            break
        assert not res.success and res.status == Status.MAXITER
        assert "building the model's program" in res.message
    assert ex._patterns._builds.done and not ex._patterns._builds.parts
    if res.success:
        assert model.predict(res.x[None])[0] == target
    full = TreeExplainer(model).explain(x, target)
    again = ex.explain(x, target)
    assert again.success and again.distance == full.distance
