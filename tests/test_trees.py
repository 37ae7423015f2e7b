"""TreeExplainer: scikit-learn trees and tree ensembles, against brute force.

The references (tests/reference.py) find their own split boundaries by bisection with NumPy's
float32 cast, enumerate every leaf (one tree) or every cell of the threshold grid (ensembles),
and classify each candidate with the model's own ``predict`` / ``predict_proba``.
"""

import math
import pickle

import numpy as np
import pytest
from reference import (
    f32_le_boundary,
    sklearn_tree_splits,
    tree_cells_brute_force,
    tree_leaves_brute_force,
)
from sklearn.datasets import make_classification
from sklearn.ensemble import (
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from fastcf import Status, TreeExplainer
from fastcf._trees.milp import Program
from fastcf._trees.parse_sklearn import boundary, check, parse

RTOL = 1e-9
F32_MAX = float(np.finfo(np.float32).max)


def _data(n_classes, n_features=3, seed=0, n=150):
    return make_classification(
        n_samples=n,
        n_features=n_features,
        n_informative=n_features,
        n_redundant=0,
        n_classes=n_classes,
        n_clusters_per_class=1,
        random_state=seed,
    )


_MODELS = {
    "dt": (lambda: DecisionTreeClassifier(max_depth=4, random_state=0), 3),
    "rf": (lambda: RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0), 2),
    "rf3": (lambda: RandomForestClassifier(n_estimators=3, max_depth=3, random_state=1), 3),
    "et": (lambda: ExtraTreesClassifier(n_estimators=3, max_depth=3, random_state=0), 2),
    "gb": (lambda: GradientBoostingClassifier(n_estimators=3, max_depth=2, random_state=0), 2),
    "gb3": (lambda: GradientBoostingClassifier(n_estimators=2, max_depth=2, random_state=0), 3),
    "gbexp": (
        lambda: GradientBoostingClassifier(
            loss="exponential", n_estimators=3, max_depth=2, random_state=0
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


def _same_distance(got, ref):
    if math.isinf(ref):
        return math.isinf(got)
    # relative to the distance, or 1e-12 absolute: HiGHS ranks objectives only to its own
    # tolerances (~1e-9 absolute), so where the query sits ~1e-8 from a split two cells whose
    # costs differ by an ulp (2.2e-16, seen with highspy 1.7) are a tie to it
    return math.isclose(got, ref, rel_tol=RTOL, abs_tol=1e-12)


def _check_against_cells(model, ex, x0, target, **opts):
    ref_opts = {k: v for k, v in opts.items() if k in ("metric", "max_changes", "proba")}
    if "weights" in opts:
        ref_opts["w"] = opts["weights"]
    if "bounds" in opts:
        ref_opts["lo"], ref_opts["hi"] = (np.broadcast_to(b, x0.shape) for b in opts["bounds"])
    if "frozen" in opts:
        lo = ref_opts.get("lo", np.full(x0.shape, -np.inf)).copy()
        hi = ref_opts.get("hi", np.full(x0.shape, np.inf)).copy()
        lo[opts["frozen"]] = x0[opts["frozen"]]
        hi[opts["frozen"]] = x0[opts["frozen"]]
        ref_opts["lo"], ref_opts["hi"] = lo, hi
    method = {"method": "milp"} if hasattr(model, "tree_") else {}
    res = ex.explain(x0, target, **opts, **method)
    ref, _ = tree_cells_brute_force(model, x0, target, **ref_opts)
    assert _same_distance(res.distance, ref), (res.distance, ref, res.message)
    if res.success:
        assert model.predict(res.x[None])[0] == target
        if "proba" in opts:
            col = list(model.classes_).index(target)
            assert model.predict_proba(res.x[None])[0, col] >= opts["proba"]
        assert res.status == Status.OK
    else:
        assert math.isinf(ref)
        assert res.status in (Status.UNREACHABLE, Status.INFEASIBLE)
    return res


# ---------------------------------------------------------------------------------- (b)
@pytest.mark.parametrize("metric", ["manhattan", "euclidean", "l0"])
def test_ensemble_equals_cell_brute_force(fitted, metric):
    name, model, ex, X = fitted
    for x0 in X[:4]:
        for target in model.classes_:
            _check_against_cells(model, ex, x0, target, metric=metric)


@pytest.mark.parametrize(
    "opts",
    [
        {"frozen": [1]},
        {"weights": np.array([1.0, 2.5, 0.5])},
        {"max_changes": 1},
        {"bounds": (-1.0, 1.5)},
        {"max_changes": 1, "metric": "euclidean", "frozen": [0]},
    ],
    ids=["frozen", "weights", "max_changes", "bounds", "mixed"],
)
def test_ensemble_options_equal_cell_brute_force(fitted, opts):
    name, model, ex, X = fitted
    x0s = np.clip(X[4:8], -1.0, 1.5) if "bounds" in opts else X[4:8]
    for x0 in x0s:
        for target in model.classes_:
            _check_against_cells(model, ex, x0, target, **opts)


@pytest.mark.parametrize("tau", [0.6, 0.8])
def test_proba_equals_cell_brute_force(fitted, tau):
    name, model, ex, X = fitted
    for x0 in X[8:11]:
        for target in model.classes_:
            _check_against_cells(model, ex, x0, target, proba=tau)


def test_batch_rows_equal_single_queries(fitted):
    name, model, ex, X = fitted
    targets = np.resize(model.classes_, 5)[::-1]
    batch = ex.explain(X[:5], targets)
    assert batch.x.shape == (5, 3) and batch.proba.shape == (5, len(model.classes_))
    for i in range(5):
        one = ex.explain(X[i], targets[i])
        assert one.distance == batch.distance[i]
        np.testing.assert_array_equal(one.x, batch.x[i])
        np.testing.assert_array_equal(batch.proba[i], model.predict_proba(batch.x[i : i + 1])[0])


# ---------------------------------------------------------------------------------- (a)
@pytest.mark.parametrize("metric", ["manhattan", "euclidean", "l0"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_single_tree_equals_leaf_brute_force(metric, n_classes):
    X, y = _data(n_classes, n_features=5, seed=3, n=300)
    tree = DecisionTreeClassifier(max_depth=7, random_state=0).fit(X, y)
    ex = TreeExplainer(tree)
    w = np.array([1.0, 0.5, 2.0, 1.5, 1.0])
    for x0 in X[:6]:
        for target in tree.classes_:
            for opts in ({}, {"weights": w}, {"max_changes": 1}):
                res = ex.explain(x0, target, metric=metric, **opts)
                ref_opts = {"w": opts.get("weights"), "max_changes": opts.get("max_changes")}
                ref, _ = tree_leaves_brute_force(tree, x0, target, metric=metric, **ref_opts)
                assert _same_distance(res.distance, ref), (res.distance, ref)
                assert res.method == "leaves" and res.nit == 0
                if res.success:
                    assert tree.predict(res.x[None])[0] == target


def test_single_tree_leaves_equal_milp_and_cells():
    X, y = _data(3, seed=5)
    tree = DecisionTreeClassifier(max_depth=5, random_state=0).fit(X, y)
    ex = TreeExplainer(tree)
    for x0 in X[:5]:
        for target in tree.classes_:
            a = ex.explain(x0, target)
            b = ex.explain(x0, target, method="milp")
            ref, _ = tree_cells_brute_force(tree, x0, target)
            assert _same_distance(a.distance, ref) and _same_distance(b.distance, ref)


def test_single_tree_no_grid_point_is_closer():
    X, y = _data(2, n_features=4, seed=7, n=300)
    tree = DecisionTreeClassifier(max_depth=6, random_state=0).fit(X, y)
    ex = TreeExplainer(tree)
    rng = np.random.default_rng(0)
    lo, hi = X.min(axis=0) - 1, X.max(axis=0) + 1
    grid = rng.uniform(lo, hi, size=(20000, 4))
    splits = sklearn_tree_splits(tree)
    for f, t in splits:  # points on and next to every boundary, in every feature
        b = f32_le_boundary(t)
        for v in (b, float(np.nextafter(b, np.inf))):
            g = rng.uniform(lo, hi, size=(200, 4))
            g[:, f] = v
            grid = np.vstack([grid, g])
    pred = tree.predict(grid)
    for x0 in X[:5]:
        for target in tree.classes_:
            res = ex.explain(x0, target, metric="euclidean")
            assert res.success
            on = grid[pred == target]
            assert np.sqrt(((on - x0) ** 2).sum(axis=1)).min() >= res.distance


# ---------------------------------------------------------------------------------- (c)
def test_boundary_equals_bisection_with_numpy_cast():
    rng = np.random.default_rng(1)
    a = rng.standard_normal(200).astype(np.float32)
    b = np.nextafter(a, np.float32(np.inf))
    mids = (a.astype(np.float64) + b.astype(np.float64)) / 2  # the ties of float32 rounding
    special = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-40, 3.4e38, -3.4e38, F32_MAX, -F32_MAX])
    t = np.concatenate([mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf), a, special])
    got = boundary(t)
    ref = np.array([f32_le_boundary(v) for v in t])
    clip = np.minimum(got, F32_MAX)  # at/above FLT_MAX: every input goes left
    np.testing.assert_array_equal(clip, ref)


def test_answer_is_the_first_float64_past_the_split():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    tree = DecisionTreeClassifier(random_state=0).fit(X, [0, 0, 1, 1])
    t = tree.tree_.threshold[0]
    res = TreeExplainer(tree).explain([0.0], 1)
    x = res.x[0]
    assert tree.predict([[x]])[0] == 1
    assert tree.predict([[np.nextafter(x, -np.inf)]])[0] == 0  # one ulp less goes left
    assert np.float32(x) > t and res.distance == x
    back = TreeExplainer(tree).explain([3.0], 0)
    assert tree.predict([[back.x[0]]])[0] == 0
    assert tree.predict([[np.nextafter(back.x[0], np.inf)]])[0] == 1


def _on_splits(model, n, seed):
    """Rows whose coordinates sit on split values: thresholds, their float32 neighbours and
    the float64 boundaries (where float32 rounding decides the side)."""
    rng = np.random.default_rng(seed)
    by_f = {}
    for f, t in sklearn_tree_splits(model):
        t32 = np.float32(t)
        b = f32_le_boundary(t)
        by_f.setdefault(f, []).extend(
            [
                t,
                float(t32),
                float(np.nextafter(t32, np.float32(np.inf))),
                float(np.nextafter(t32, np.float32(-np.inf))),
                b,
                float(np.nextafter(b, np.inf)),
            ]
        )
    D = model.n_features_in_
    return np.array([[rng.choice(by_f.get(f, [0.0])) for f in range(D)] for _ in range(n)])


def test_queries_on_split_values_are_valid(fitted):
    name, model, ex, X = fitted
    X0 = _on_splits(model, 6, seed=len(name))
    for x0 in X0:
        for target in model.classes_:
            res = _check_against_cells(model, ex, x0, target)
            assert res.success


def test_answers_are_verified_by_the_model_batch(fitted):
    name, model, ex, X = fitted
    X0 = np.vstack([X[20:26], _on_splits(model, 4, seed=9)])
    for target in model.classes_:
        batch = ex.explain(X0, target, metric="euclidean")
        ok = batch.success
        assert ok.all()
        np.testing.assert_array_equal(model.predict(batch.x[ok]), np.full(ok.sum(), target))


# ---------------------------------------------------------------------------------- (d)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_forest_vote_ties_go_to_the_first_class(seed):
    X, y = _data(3, seed=seed)
    rf = RandomForestClassifier(n_estimators=2, random_state=seed).fit(X, y)  # pure leaves
    ex = TreeExplainer(rf)
    P = rf.predict_proba(X)
    assert (np.sort(P, axis=1)[:, -1] == np.sort(P, axis=1)[:, -2]).any()  # ties do occur
    for x0 in X[:6]:
        for target in rf.classes_:
            for metric in ("manhattan", "l0"):
                res = _check_against_cells(rf, ex, x0, target, metric=metric)
                if res.success:
                    p = rf.predict_proba(res.x[None])[0]
                    k = list(rf.classes_).index(target)
                    assert (p[:k] < p[k]).all() and (p[k:] <= p[k]).all()


def test_tree_with_a_tied_leaf():
    X = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [2.0, 1.0], [3.0, 1.0], [3.0, 0.0]])
    y = np.array([0, 1, 1, 2, 2, 0])
    tree = DecisionTreeClassifier(random_state=0).fit(X, y)
    assert (tree.predict_proba(X[:1])[0, :2] == 0.5).all()  # the leaf at x = 0 is a tie
    ex = TreeExplainer(tree)
    for x0 in (X[0], np.array([0.5, 0.5]), np.array([2.5, 0.2])):
        for target in tree.classes_:
            res = ex.explain(x0, target)
            ref, _ = tree_leaves_brute_force(tree, x0, target)
            assert _same_distance(res.distance, ref)
            assert (res.distance == 0.0) == (tree.predict(x0[None])[0] == target)


def test_near_ties_in_inexact_sums_are_cut_off(monkeypatch):
    # two stumps with leaf fractions 1/3 and 2/3: their sums tie in the reals and in float64
    # (1/3 + 2/3 rounds to 1 both ways), and the tie goes to class 0. The program relaxes the
    # target by the rounding bound, so it proposes the tied cells first; each is refused by the
    # library's arithmetic and cut off, until the cell where class 1 truly wins.
    base = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0])  # one split only, at 0.5
    Xa = np.column_stack([base, np.zeros(6)])
    Xb = np.column_stack([np.zeros(6), base])
    ta = DecisionTreeClassifier(max_depth=1).fit(Xa, [0, 1, 1, 0, 0, 1])
    tb = DecisionTreeClassifier(max_depth=1).fit(Xb, [1, 0, 0, 1, 1, 0])
    rf = RandomForestClassifier(n_estimators=2, max_depth=1, random_state=0).fit(Xa, [0, 1] * 3)
    rf.estimators_ = [ta, tb]
    x0 = np.array([1.0, 0.0])
    assert rf.predict([[0.0, 0.0], [1.0, 1.0]]).tolist() == [0, 0]  # the tied cells
    assert (rf.predict_proba([[0.0, 0.0]])[0] == 0.5).all()
    ex = TreeExplainer(rf)
    assert ex._forest.unit == 0.0  # 1/3 is not a binary fraction: the sums are inexact
    for metric in ("manhattan", "euclidean", "l0"):
        res = _check_against_cells(rf, ex, x0, 1, metric=metric)  # (the branch and bound)
        assert res.success and (res.x != x0).all()
    monkeypatch.setattr(Program, "budget", 0)  # the program alone: the ties are cut off
    for metric in ("manhattan", "euclidean", "l0"):
        res = _check_against_cells(rf, ex, x0, 1, metric=metric)
        assert res.success and res.nit == 3  # two tied cells cut off, then the answer
        assert (res.x != x0).all()


# ---------------------------------------------------------------------------------- misc
def test_pandas_names_pickle_and_mad():
    pd = pytest.importorskip("pandas")
    X, y = _data(2, seed=11)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    rf = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(df, y)
    ex = pickle.loads(pickle.dumps(TreeExplainer(rf)))
    ex.fit_mad(df)
    row = df.iloc[0]
    target = 1 - rf.predict(df.iloc[:1])[0]
    res = ex.explain(row, target, weights="mad", frozen=["b"])
    assert res.success and res.x[1] == row["b"]
    assert list(res.to_frame()["feature"]) == ["a", "b", "c"]
    ref, _ = tree_cells_brute_force(
        rf, row.to_numpy(), target, w=1.0 / ex.mad_, lo=np.array([-np.inf, row["b"], -np.inf]),
        hi=np.array([np.inf, row["b"], np.inf]),
    )  # fmt: skip
    assert _same_distance(res.distance, ref)


def test_time_limit_reports_a_gap_or_an_optimum():
    X, y = _data(2, n_features=6, seed=4, n=300)
    rf = RandomForestClassifier(n_estimators=30, max_depth=4, random_state=0).fit(X, y)
    ex = TreeExplainer(rf)
    target = 1 - rf.predict(X[:1])[0]
    res = ex.explain(X[0], target, time_limit=1e-6)
    full = ex.explain(X[0], target)
    assert full.status == Status.OK and full.info["gap"] == 0.0
    if res.success:
        assert rf.predict(res.x[None])[0] == target
        assert res.distance >= full.distance * (1 - RTOL)
        assert res.info["bound"] <= full.distance * (1 + RTOL)
    if res.status == Status.MAXITER and res.success:
        assert 0.0 <= res.info["gap"] <= 1.0
    else:
        assert res.status in (Status.OK, Status.MAXITER)


def test_a_time_limit_spent_by_the_quick_search_starts_no_program():
    """Issue 54 (latency bounds): a 300-tree forest of depth 10 with time_limit=0.5 took
    0.75-2.3 s, its program built and handed to HiGHS after the limit had passed. Past the
    limit, the quick search's answer (the model's own verdict on it) is the answer: status
    MAXITER, no program solved, no bound claimed."""
    X, y = _data(2, n_features=6, seed=4, n=300)
    rf = RandomForestClassifier(n_estimators=30, max_depth=4, random_state=0).fit(X, y)
    ex = TreeExplainer(rf)
    T = 1 - rf.predict(X[:8])
    full = ex.explain(X[:8], T)
    res = ex.explain(X[:8], T, time_limit=1e-9)
    assert full.success.all() and res.success.all()
    assert (rf.predict(res.x) == T).all()
    assert (res.nit == 0).all()  # (no program: nit counts the programs solved)
    assert (res.distance >= full.distance * (1 - RTOL)).all()
    late = res.status == Status.MAXITER
    assert late.any()  # (a row the reductions prove at once is exact: 0-1 of 8 on 3 fits)
    for i in np.flatnonzero(late):
        assert "the program was not started" in res.message[i]
        assert res.info["bound"][i] == 0.0 and res.info["gap"][i] == 1.0


@pytest.mark.needs_jit  # (two full queries of a 60-tree program: slow as Python)
def test_time_limit_holds_the_programs_construction():
    """Issue 54 (latency bounds): ``time_limit`` bounds the whole call, the one-time build of
    the model's program included (300 trees of depth 10: 4.5 s built outside a 0.5 s limit).
    With a limit already spent, each call runs exactly one stage of the build (the clock is
    read between stages, one always runs: no stage starts past the deadline; counted, not
    timed) and fails with the reason (or answers, confirmed by the model); the build goes on
    from call to call, the explainer caches only a finished program, and that program is the
    one built at once."""
    X, y = _data(2, n_features=8, seed=5, n=2000)
    rf = RandomForestClassifier(n_estimators=60, max_depth=8, random_state=0).fit(X, y)
    ex = TreeExplainer(rf)
    T = 1 - rf.predict(X[:2])
    total = None  # (the build's stages, read from its first stopped part)
    for call in range(1, 11):  # (5 stages, one per call)
        res = ex.explain(X[:2], T, time_limit=1e-9)
        assert ex._program is None or ex._program.built  # (never a half-built cache)
        for i in range(2):
            if res.success[i]:
                assert rf.predict(res.x[i : i + 1])[0] == T[i]
            else:
                assert res.status[i] == Status.MAXITER
                assert "time limit reached" in res.message[i]
        if ex._program is not None:
            break
        done, total = ex._builds.part(None).progress
        assert done == call < total  # (one stage per call past the deadline, no more)
        assert "building the model's program" in res.message[0]
        assert f"{done} of {total} stages done" in res.message[0]
        ex = pickle.loads(pickle.dumps(ex))  # (a stopped build travels with the explainer)
    assert call == total  # (the last stage finished the program)
    assert ex._program is not None and ex._builds.part(None) is None
    whole = Program(ex._forest)
    for k, v in vars(whole).items():
        if isinstance(v, np.ndarray):
            assert np.array_equal(v, getattr(ex._program, k)), k
    full = TreeExplainer(rf).explain(X[:2], T)
    again = ex.explain(X[:2], T)
    assert again.success.all() and np.array_equal(again.distance, full.distance)


def test_group_is_np_unique_with_its_inverse():
    from fastcf._trees.structure import group

    rng = np.random.default_rng(0)
    for size, n in ((50, 400), (10**7, 300), (1, 5), (10, 0)):  # a dense table; np.unique
        key = rng.integers(0, size, n)
        uk, inv = group(key, size)
        ref, rinv = np.unique(key, return_inverse=True)
        assert np.array_equal(uk, ref) and np.array_equal(inv, rinv.ravel())
        assert uk.dtype == np.int64 and inv.dtype == rinv.dtype


def test_unreachable_and_infeasible():
    X, y = _data(3, seed=2)
    tree = DecisionTreeClassifier(max_depth=1, random_state=0).fit(X, y)  # two leaves
    ex = TreeExplainer(tree)
    missing = sorted(set(tree.classes_) - set(tree.predict(X)))[0]
    res = ex.explain(X[0], missing)
    assert not res.success and res.status == Status.UNREACHABLE
    f = tree.tree_.feature[0]
    other = [c for c in tree.classes_ if c != tree.predict(X[:1])[0] and c != missing][0]
    res = ex.explain(X[0], other, frozen=[f])
    assert not res.success and res.status == Status.INFEASIBLE and math.isinf(res.distance)
    rf = RandomForestClassifier(n_estimators=3, max_depth=2, random_state=0).fit(X, y)
    rex = TreeExplainer(rf)
    res = rex.explain(X[0], rf.classes_[0], frozen=[0, 1, 2])
    assert res.success == (rf.predict(X[:1])[0] == rf.classes_[0])
    if not res.success:
        assert res.status == Status.INFEASIBLE


# ---------------------------------------------------------------------------------- (e)
def test_refusals():
    X, y = _data(2, seed=0)
    with pytest.raises(ValueError, match="not fitted"):
        TreeExplainer(RandomForestClassifier())
    for reg in (DecisionTreeRegressor(), RandomForestRegressor(n_estimators=2)):
        with pytest.raises(TypeError, match="regressor"):
            TreeExplainer(reg.fit(X, y))
    with pytest.raises(TypeError, match="regressor"):
        TreeExplainer(GradientBoostingRegressor(n_estimators=2).fit(X, y))
    # the refusal says which explainer takes the model
    with pytest.raises(TypeError, match="got LogisticRegression: fastcf.LinearExplainer takes"):
        TreeExplainer(LogisticRegression().fit(X, y))
    with pytest.raises(ValueError, match="one output"):
        TreeExplainer(DecisionTreeClassifier().fit(X, np.column_stack([y, y])))
    with pytest.raises(ValueError, match="init"):
        TreeExplainer(
            GradientBoostingClassifier(n_estimators=2, init=LogisticRegression()).fit(X, y)
        )
    rf = RandomForestClassifier(n_estimators=2, max_depth=2, random_state=0).fit(X, y)
    ex = TreeExplainer(rf)
    bad = X[0].copy()
    bad[1] = np.inf  # (NaN is a missing value, routed by the model: tests/test_trees_missing.py)
    with pytest.raises(ValueError, match="x contains 1 infinite"):
        ex.explain(bad, 1)
    with pytest.raises(ValueError, match="float32"):
        ex.explain(np.array([0.0, 1e39, 0.0]), 1)
    with pytest.raises(ValueError, match="not a class"):
        ex.explain(X[0], 7)
    with pytest.raises(ValueError, match="metric"):
        ex.explain(X[0], 1, metric="cosine")
    with pytest.raises(ValueError, match="region"):
        ex.explain(X[0], 1, region=False)
    with pytest.raises(ValueError, match="method='leaves'"):
        ex.explain(X[0], 1, method="leaves")
    with pytest.raises(ValueError, match="proba"):
        ex.explain(X[0], 1, proba=1.5)
    with pytest.raises(ValueError, match="fit_mad"):
        ex.explain(X[0], 1, weights="mad")


def test_a_wrong_split_rule_is_refused_when_checked():
    X, y = _data(2, seed=6)
    rf = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(X, y)
    forest = parse(rf)
    check(forest, rf)  # the parsed copy agrees with the model
    forest.boundary = np.where(np.isnan(forest.threshold), np.nan, forest.threshold)
    with pytest.raises(ValueError, match="other leaves"):  # x <= t in float64 is not the rule
        check(forest, rf)


@pytest.mark.parametrize("kind", ["forest", "boosting", "hist", "xgboost", "lightgbm"])
def test_an_ensemble_without_a_split_answers_its_one_class(kind):
    """Constant training inputs: every tree is one leaf, the model one class everywhere. Its
    class is answered at distance 0 and the other is unreachable (the program of a forest
    without a split raised an OverflowError: NumPy's bincount of nothing is int64)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    X = np.zeros((20, 3))
    y = np.r_[np.zeros(9), np.ones(11)].astype(int)
    if kind == "xgboost":
        model = pytest.importorskip("xgboost").XGBClassifier(n_estimators=3, n_jobs=1)
    elif kind == "lightgbm":
        model = pytest.importorskip("lightgbm").LGBMClassifier(n_estimators=3, verbose=-1)
    else:
        model = {
            "forest": RandomForestClassifier(3, random_state=0),
            "boosting": GradientBoostingClassifier(n_estimators=3, random_state=0),
            "hist": HistGradientBoostingClassifier(max_iter=3),
        }[kind]
    model.fit(X, y)
    ex = TreeExplainer(model)
    x = np.array([1.0, -2.0, 0.5])
    own = int(model.predict(x[None])[0])
    assert (model.predict(np.random.default_rng(0).normal(size=(50, 3)) * 100) == own).all()
    for opts in ({}, {"metric": "l0", "max_changes": 1}, {"exact": False}, {"proba": 0.5}):
        res = ex.explain(x, own, **opts)
        assert res.success and res.distance == 0.0 and np.array_equal(res.x, x), opts
        res = ex.explain(x, 1 - own, **opts)
        assert not res.success and res.status in (Status.UNREACHABLE, Status.INFEASIBLE), opts
    assert [r.distance for r in ex.enumerate(x, own, k=2)] == [0.0]
