"""TabularExplainer on ColumnTransformer pipelines ending in a tree model, against brute force."""

import pickle

import numpy as np
import pandas as pd
import pytest
from reference import tabular_model_brute_force
from sklearn.compose import make_column_transformer
from sklearn.decomposition import PCA
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    MinMaxScaler,
    OneHotEncoder,
    OrdinalEncoder,
    PolynomialFeatures,
    StandardScaler,
)
from sklearn.tree import DecisionTreeClassifier
from tree_models import EDU, W, tabular_cost, tabular_data, tabular_grids, tabular_pipe

import fastcf
from fastcf import Status


def _data(n=240, seed=0, classes=2):
    return tabular_data(n, seed, classes, cuts=(4.5,) if classes == 2 else (3.5, 5.0))


_pipe = tabular_pipe


MODELS = {
    "tree": lambda: DecisionTreeClassifier(max_depth=5, random_state=0),
    "forest": lambda: RandomForestClassifier(8, max_depth=4, random_state=0),
    "boosting": lambda: GradientBoostingClassifier(n_estimators=8, max_depth=2, random_state=0),
}


@pytest.fixture(scope="module", params=sorted(MODELS))
def fitted(request):
    X, y = _data()
    scaler = MinMaxScaler if request.param == "forest" else StandardScaler
    model = _pipe(MODELS[request.param](), scaler).fit(X, y)
    return X, model, fastcf.TabularExplainer(model, X, weights=W)


_grids = tabular_grids
_cost = tabular_cost


def _check(model, res, row, target, expected, grids=None):
    """The answer is classified as the target, costs what it says, and is the brute force's."""
    assert res.success, res.message
    assert model.predict(res.x)[0] == target
    cost = _cost(row)
    own = sum(cost(c, res.x[c].iloc[0]) for c in W)
    assert res.distance == pytest.approx(own, rel=1e-9, abs=1e-12)
    assert res.distance == pytest.approx(expected, rel=1e-9, abs=1e-12)
    for c, vals in (grids or {}).items():
        assert res.x[c].iloc[0] in vals, c


def _rows(X, model, target, k=4):
    return X[model.predict(X) != target].iloc[:k]


def test_brute_force(fitted):
    X, model, tx = fitted
    for target in (0, 1):
        rows = _rows(X, model, target, 3)
        for i in range(rows.shape[0]):
            row = rows.iloc[[i]]
            g = _grids(X, row)
            best, _ = tabular_model_brute_force(model, row, g, _cost(row), target)
            res = tx.explain(row, target)
            _check(model, res, row, target, best, g)
            assert res.x.d.iloc[0] == round(res.x.d.iloc[0], 1)  # on the column's grid
            assert res.x.n.dtype == X.n.dtype and res.x.edu.dtype == X.edu.dtype


def test_batch_and_enumerate(fitted):
    X, model, tx = fitted
    rows = _rows(X, model, 1, 5)
    b = tx.explain(rows, 1)
    assert b.success.all() and (model.predict(b.x) == 1).all()
    for i in range(rows.shape[0]):
        assert b.distance[i] == pytest.approx(tx.explain(rows.iloc[[i]], 1).distance, rel=1e-12)
    again = pickle.loads(pickle.dumps(tx)).explain(rows, 1)  # explainers pickle
    assert np.array_equal(again.distance, b.distance)
    alts = tx.enumerate(rows.iloc[[0]], 1, k=3)
    assert alts and alts[0].distance == pytest.approx(b.distance[0], rel=1e-12)
    assert all(a.success and model.predict(a.x)[0] == 1 for a in alts)
    assert all(a.distance >= b.distance[0] - 1e-12 for a in alts)


def test_constraints(fitted):
    X, model, tx = fitted
    row = _rows(X, model, 1, 1)
    r0 = row.iloc[0]
    cases = [
        ({"immutable": ["job", "n"]}, {}, dict(fixed=("job", "n"))),
        ({"increase_only": ["d"], "decrease_only": ["edu"]}, {}, None),
        ({}, {"allowed": {"job": ["a", "b"]}}, dict(allowed={"job": ["a", "b"]})),
        ({}, {"bounds": {"d": (1.0, 2.5), "n": (3, 9)}}, dict(box={"d": (1.0, 2.5), "n": (3, 9)})),
        ({}, {"bounds": {"edu": ("ba", None)}}, dict(allowed={"edu": ["ba", "ms"]})),
        (
            {},
            {"transitions": {"job": {r0.job: ["a"]}}},
            dict(allowed={"job": sorted({r0.job, "a"})}),
        ),
    ]
    for init, opts, grid in cases:
        ex = fastcf.TabularExplainer(model, X, weights=W, **init) if init else tx
        if grid is None:  # monotone: the grids one side of the row
            g = _grids(X, row)
            g["d"] = [v for v in g["d"] if v >= r0.d]
            g["edu"] = EDU[: EDU.index(r0.edu) + 1]
        else:
            g = _grids(X, row, **grid)
        best, _ = tabular_model_brute_force(model, row, g, _cost(row), 1)
        res = ex.explain(row, 1, **opts)
        if np.isfinite(best):
            _check(model, res, row, 1, best, g)
        else:
            assert not res.success and res.status == int(Status.INFEASIBLE)


def test_max_changes_and_proba(fitted):
    X, model, tx = fitted
    for row in (_rows(X, model, 1, 3).iloc[[i]] for i in range(3)):
        g = _grids(X, row)
        best, _ = tabular_model_brute_force(model, row, g, _cost(row), 1, max_changes=1)
        res = tx.explain(row, 1, max_changes=1)
        if np.isfinite(best):
            _check(model, res, row, 1, best, g)
            assert res.changes.shape[0] <= 1
        else:
            assert not res.success and res.status == int(Status.INFEASIBLE)
        best, _ = tabular_model_brute_force(model, row, g, _cost(row), 1, proba=0.7)
        res = tx.explain(row, 1, proba=0.7)
        if np.isfinite(best):
            _check(model, res, row, 1, best, g)
            assert model.predict_proba(res.x)[0, 1] >= 0.7 and res.proba[1] >= 0.7
        else:
            assert not res.success


def test_contradictions(fitted):
    X, model, tx = fitted
    row = _rows(X, model, 1, 1)
    ex = fastcf.TabularExplainer(model, X, immutable=["d"], increase_only=["n"])
    d0, n0 = row.d.iloc[0], row.n.iloc[0]
    for opts in (
        {"bounds": {"d": (d0 + 0.5, d0 + 1.0)}},  # immutable outside its bounds
        {"bounds": {"n": (n0 - 5, n0 - 1)}},  # increase-only with bounds below
        {"allowed": {"job": []}},
    ):
        res = ex.explain(row, 1, **opts)
        assert not res.success and res.status == int(Status.INFEASIBLE), opts
        assert "contradict" in res.message
    # frozen everything: the model must already say 1, else infeasible
    frozen = fastcf.TabularExplainer(model, X, immutable=["n", "d", "job", "edu"])
    res = frozen.explain(row, 1)
    assert not res.success and res.status == int(Status.INFEASIBLE)


def test_multiclass_levels_and_ordinal_own_forbidden():
    X, y = _data(classes=3, seed=1)
    X["term"] = np.random.default_rng(2).choice([36, 60], X.shape[0])
    pre = make_column_transformer(
        (StandardScaler(), ["n", "d", "term"]),
        (OneHotEncoder(), ["job"]),
        (OrdinalEncoder(), ["edu"]),
    )
    model = make_pipeline(pre, RandomForestClassifier(6, max_depth=4, random_state=1)).fit(X, y)
    w = {**W, "term": 0.05}
    tx = fastcf.TabularExplainer(model, X, weights=w)
    assert tx.kinds_["term"] == "levels"

    def cost(row):
        base = _cost(row)
        return lambda c, v: w[c] * abs(v - row.term.iloc[0]) if c == "term" else base(c, v)

    for target in (0, 2):
        row = X[model.predict(X) != target].iloc[[0]]
        g = {**_grids(X, row), "term": [36, 60]}
        best, _ = tabular_model_brute_force(model, row, g, cost(row), target)
        res = tx.explain(row, target)
        assert res.success and model.predict(res.x)[0] == target
        assert res.distance == pytest.approx(best, rel=1e-9)
        assert res.x.term.iloc[0] in (36, 60)
        # the row's own ordinal category forbidden, between two allowed ones
        row = row.copy()
        row["edu"] = pd.Categorical(["ba"], categories=EDU, ordered=True)
        g["edu"] = ["hs", "ms"]
        best, _ = tabular_model_brute_force(model, row, g, cost(row), target)
        res = tx.explain(row, target, allowed={"edu": ["hs", "ms"]})
        if np.isfinite(best):
            assert res.success and model.predict(res.x)[0] == target
            assert res.distance == pytest.approx(best, rel=1e-9)
            assert res.x.edu.iloc[0] in ("hs", "ms")
        else:
            assert not res.success


@pytest.mark.parametrize(
    "step, name",
    [
        (PolynomialFeatures(2), "PolynomialFeatures"),
        (FunctionTransformer(np.log1p), "FunctionTransformer"),
    ],
)
def test_refused_steps(step, name):
    X, y = _data(120)
    pre = make_column_transformer((step, ["n", "d"]), (OneHotEncoder(), ["job"]))
    model = make_pipeline(pre, DecisionTreeClassifier(max_depth=3, random_state=0))
    model.fit(X[["n", "d", "job"]], y)
    with pytest.raises(TypeError, match=name):
        fastcf.TabularExplainer(model, X[["n", "d", "job"]])


def test_refused_mixing():
    X, y = _data(120)
    pre = make_column_transformer(
        (OneHotEncoder(sparse_output=False), ["job"]), ("passthrough", ["n"])
    )
    model = make_pipeline(pre, PCA(2), DecisionTreeClassifier(max_depth=3, random_state=0))
    model.fit(X[["n", "job"]], y)
    with pytest.raises(TypeError, match="mixes the columns"):
        fastcf.TabularExplainer(model, X[["n", "job"]])


def test_misread_split_is_caught():
    """The check at build time fails when a raw boundary is wrong (so it can fail)."""
    from fastcf._tabular.treeprog import TreeProgram

    X, y = _data(160)
    model = _pipe(DecisionTreeClassifier(max_depth=4, random_state=0)).fit(X, y)
    tx = fastcf.TabularExplainer(model, X)
    tf = tx._program.tf
    on = np.flatnonzero(np.isfinite(tf.node_beta) & (tf.node_col == 0))
    tf.node_beta[on] += 3.0  # column "n": every split moved by 3
    with pytest.raises(TypeError, match="does not reproduce the pipeline"):
        TreeProgram(tx._schema, tf, model, X)


def test_raw_boundaries_are_the_pipelines():
    """Each raw boundary β: the pipeline's own transform sends β left and the next double right."""
    from fastcf._tabular.treefold import _Probe, raw_boundaries

    X, y = _data(160)
    X["d"] = X.d + np.random.default_rng(3).normal(0, 1e-3, X.shape[0])  # a continuous column
    model = _pipe(RandomForestClassifier(5, max_depth=4, random_state=0)).fit(X, y)
    tx = fastcf.TabularExplainer(model, X)
    assert tx.resolution_["d"] is None
    tf = tx._program.tf
    fo = tf.forest
    on = np.flatnonzero(np.isfinite(tf.node_beta) & (tf.node_col >= 0))
    assert on.size > 10
    pre = model[:-1]
    for nxt, side in ((False, True), (True, False)):
        frame = pd.concat([X.iloc[[0]]] * on.size, ignore_index=True)
        for c in (0, 1):
            v = np.where(tf.node_col[on] == c, tf.node_beta[on], X.iloc[0, c])
            frame[X.columns[c]] = np.nextafter(v, np.inf) if nxt else v
        T = pre.transform(frame)
        left = T[np.arange(on.size), fo.feature[on]] <= fo.boundary[on]
        assert (left == side).all()
    # the bisection from the fold's guess finds the same doubles as from the whole line
    probe = _Probe(pre, X, {})
    j = fo.feature[on]
    b = fo.boundary[on]
    full, s1 = raw_boundaries(probe, tf.node_col[on], j, b, np.ones(on.size, bool))
    assert (s1 == -1).all() and np.array_equal(full, tf.node_beta[on])


@pytest.mark.parametrize("lib", ["xgboost", "lightgbm"])
@pytest.mark.parametrize("classes", [2, 3])
def test_boosting_libraries(lib, classes):
    mod = pytest.importorskip(lib)
    X, y = _data(200, seed=4, classes=classes)
    if lib == "xgboost":
        clf = mod.XGBClassifier(n_estimators=6, max_depth=3, random_state=0)
    else:
        clf = mod.LGBMClassifier(n_estimators=6, num_leaves=8, min_child_samples=5, verbose=-1)
    model = _pipe(clf).fit(X, y)
    tx = fastcf.TabularExplainer(model, X, weights=W)
    for target in range(classes):
        row = X[model.predict(X) != target].iloc[[0]]
        g = _grids(X, row)
        best, _ = tabular_model_brute_force(model, row, g, _cost(row), target)
        _check(model, tx.explain(row, target), row, target, best, g)
    best, _ = tabular_model_brute_force(model, row, g, _cost(row), target, proba=0.6)
    res = tx.explain(row, target, proba=0.6)
    if np.isfinite(best):
        _check(model, res, row, target, best, g)
        assert model.predict_proba(res.x)[0, target] >= 0.6
    else:
        assert not res.success


def test_missing_cell_imputed_and_bare_model():
    from sklearn.impute import SimpleImputer

    X, y = _data(200, seed=5)
    Xm = X.copy()
    Xm.loc[Xm.index[::7], "d"] = np.nan
    pre = make_column_transformer(
        (make_pipeline(SimpleImputer(strategy="most_frequent"), StandardScaler()), ["d"]),
        ("passthrough", ["n"]),
        (OneHotEncoder(), ["job"]),
        (OrdinalEncoder(), ["edu"]),
    )
    model = make_pipeline(pre, RandomForestClassifier(6, max_depth=4, random_state=0)).fit(Xm, y)
    tx = fastcf.TabularExplainer(model, Xm, weights=W)
    fill = float(model[0].named_transformers_["pipeline"][0].statistics_[0])
    rows = Xm[Xm.d.isna() & (model.predict(Xm) == 0)].iloc[:3]
    assert rows.shape[0]
    for i in range(rows.shape[0]):
        row = rows.iloc[[i]]
        g = _grids(X, row.fillna({"d": fill}))
        g["d"] = [np.nan] + g["d"]  # the cell may stay missing (it reads as the imputed value)
        base = _cost(row.fillna({"d": fill}))

        def cost(c, v, base=base):
            return 0.0 if c == "d" and np.isnan(v) else base(c, v)

        best, _ = tabular_model_brute_force(model, row, g, cost, 1)
        res = tx.explain(row, 1)
        assert res.success and model.predict(res.x)[0] == 1
        assert res.distance == pytest.approx(best, rel=1e-9, abs=1e-12)
    # a tree model fitted on the DataFrame itself (numeric columns, no preprocessing)
    num = X[["n", "d"]]
    rf = RandomForestClassifier(6, max_depth=4, random_state=0).fit(num, y)
    tx = fastcf.TabularExplainer(rf, num, weights={"n": W["n"], "d": W["d"]})
    row = num[rf.predict(num) == 0].iloc[[0]]
    g = {c: v for c, v in _grids(X, X.loc[row.index]).items() if c in ("n", "d")}
    best, _ = tabular_model_brute_force(rf, row, g, _cost(row), 1)
    res = tx.explain(row, 1)
    assert res.success and rf.predict(res.x)[0] == 1
    assert res.distance == pytest.approx(best, rel=1e-9)


def test_category_unseen_in_training_is_never_an_answer():
    X, y = _data(200, seed=6)
    pre = make_column_transformer(
        (StandardScaler(), ["n", "d"]),
        (OneHotEncoder(categories=[["a", "b", "c", "d", "e"]]), ["job"]),  # "e": never seen
        (OrdinalEncoder(), ["edu"]),
    )
    model = make_pipeline(pre, RandomForestClassifier(8, max_depth=4, random_state=0)).fit(X, y)
    tx = fastcf.TabularExplainer(model, X, weights=W)
    for i in range(4):
        row = X[model.predict(X) == 0].iloc[[i]]
        g = _grids(X, row)  # the seen categories only
        best, _ = tabular_model_brute_force(model, row, g, _cost(row), 1)
        res = tx.explain(row, 1)
        _check(model, res, row, 1, best, g)
        assert res.x.job.iloc[0] != "e"


def test_front_door_points_to_tabular_and_numpy_pipelines_work():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    yb = (y == 2).astype(int)
    pipe = make_pipeline(StandardScaler(), RandomForestClassifier(5, max_depth=3, random_state=0))
    pipe.fit(X, yb)  # fitted on an array: the DataFrame's columns are its features, in order
    with pytest.raises(TypeError, match=r"TabularExplainer\(model, X_train\)"):
        fastcf.explainer_for(pipe)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    tx = fastcf.TabularExplainer(pipe, frame, immutable=["a"])
    assert tx.resolution_ == {"a": 0.1, "b": 0.1, "c": 0.1, "d": 0.1}
    row = frame[pipe.predict(X) == 0].iloc[[0]]
    res = tx.explain(row, 1)
    assert res.success and pipe.predict(res.x.to_numpy())[0] == 1
    assert res.x.a.iloc[0] == row.a.iloc[0]
    g = {c: [k / 10 for k in range(round(frame[c].min() * 10), round(frame[c].max() * 10) + 1)]
         for c in "bcd"}  # fmt: skip
    w = tx.weights_

    class Arr:  # the pipeline on DataFrames of the brute force
        classes_ = pipe.classes_

        def predict(self, df):
            return pipe.predict(df.to_numpy())

    best, _ = tabular_model_brute_force(
        Arr(), row, g, lambda c, v: w[c] * abs(v - row[c].iloc[0]), 1
    )
    assert res.distance == pytest.approx(best, rel=1e-9)


def test_random_allowed_sets_and_bounds(fitted):
    """Allowed sets that split the default order, leave out the row's own category, with
    bounds: each query gets its own order of categories (and two sides for an ordinal)."""
    X, model, tx = fitted
    rng = np.random.default_rng(7)
    rows = _rows(X, model, 1, 6)
    jobs = sorted(X.job.unique())
    found = 0
    for i in range(rows.shape[0]):
        row = rows.iloc[[i]]
        job = list(rng.choice(jobs, rng.integers(1, 4), replace=False))
        edu = list(rng.choice(EDU, rng.integers(1, 3), replace=False))
        lo = int(rng.integers(0, 8))
        opts = {"allowed": {"job": job, "edu": edu}, "bounds": {"n": (lo, lo + 6)}}
        g = _grids(X, row, box={"n": (lo, lo + 6)}, allowed={"job": job, "edu": edu})
        best, _ = tabular_model_brute_force(model, row, g, _cost(row), 1)
        res = tx.explain(row, 1, **opts)
        if np.isfinite(best):
            _check(model, res, row, 1, best, g)
            found += 1
        else:
            assert not res.success and res.status == int(Status.INFEASIBLE)
    assert found >= 3


def test_continuous_column_against_independent_boundaries():
    """A continuous column: every cell's cheapest point is x̄ or a split's raw boundary β (or
    the double after it); β is found here independently, one bisection per split, asking the
    pipeline's own transform and the tree's float32 rule."""
    from reference import bisect_boundary, sklearn_tree_splits

    X, y = _data(200, seed=8)
    X["d"] = X.d + np.random.default_rng(8).uniform(-0.05, 0.05, X.shape[0])
    X = X[["d", "n", "job"]]
    pre = make_column_transformer((StandardScaler(), ["d", "n"]), (OneHotEncoder(), ["job"]))
    model = make_pipeline(pre, DecisionTreeClassifier(max_depth=4, random_state=0)).fit(X, y)
    w = {"d": 1.7, "n": 0.3, "job": 0.9}
    tx = fastcf.TabularExplainer(model, X, weights=w)
    assert tx.resolution_["d"] is None
    lo, hi = float(X.d.min()), float(X.d.max())

    def left(t):
        def rule(x):
            frame = X.iloc[[0]].copy()
            frame["d"] = x
            return float(np.float32(pre.transform(frame)[0, 0])) <= t  # (t: float64)

        return rule

    betas = [bisect_boundary(left(t), lo, hi) for f, t in sklearn_tree_splits(model[-1]) if f == 0]
    for target in (0, 1):
        row = X[model.predict(X) != target].iloc[[0]]
        d0 = float(row.d.iloc[0])
        cand = {d0} | {b for b in betas if np.isfinite(b)}
        cand |= {float(np.nextafter(b, np.inf)) for b in betas if np.isfinite(b) and b < hi}
        g = {
            "d": sorted(v for v in cand if min(lo, d0) <= v <= max(hi, d0)),
            "n": list(range(int(X.n.min()), int(X.n.max()) + 1)),
            "job": sorted(X.job.unique()),
        }

        def cost(c, v, row=row):
            v0 = row[c].iloc[0]
            return w[c] * (v != v0) if c == "job" else w[c] * abs(float(v) - float(v0))

        best, _ = tabular_model_brute_force(model, row, g, cost, target)
        res = tx.explain(row, target)
        assert res.success and model.predict(res.x)[0] == target
        assert res.distance == pytest.approx(best, rel=1e-9, abs=1e-12)


def test_the_final_check_reuses_the_programs_verdict_of_the_same_input(fitted, monkeypatch):
    """One row: each of the program's checks is one pass of the pipeline (its ``predict`` and
    ``predict_proba`` together), one of them asked of the answer exactly as the result holds it;
    the final check and the reported probabilities add no pass. A batch's final check asks the
    model (fails on the code that asked twice, or asked predict and predict_proba apart)."""
    from fastcf._tabular.verdicts import _same_input

    X, model, tx = fitted
    rows = X[model.predict(X) == 0].iloc[:4]
    passes, checks = [], []
    pre = model.steps[0][1]  # (every pass of the pipeline starts with its first step)
    transform, confirm = pre.transform, tx._program.confirm

    def counting(inp, *args, **kw):
        passes.append(inp.copy())
        return transform(inp, *args, **kw)

    def counted(*args):
        checks.append(args)
        return confirm(*args)

    monkeypatch.setattr(pre, "transform", counting)
    monkeypatch.setattr(tx._program, "confirm", counted)
    for i in range(rows.shape[0]):
        passes.clear()
        checks.clear()
        res = tx.explain(rows.iloc[[i]], 1)
        assert len(checks) >= 1 and len(passes) == len(checks)
        assert sum(_same_input(c, res.x) for c in passes) == 1
        assert res.success and model.predict(res.x)[0] == 1
        np.testing.assert_array_equal(res.proba, model.predict_proba(res.x)[0])
    passes.clear()
    batch = tx.explain(rows, [1] * rows.shape[0])
    assert all(batch.success)
    assert any(c.shape[0] == rows.shape[0] for c in passes)


def test_same_input_is_strict():
    from fastcf._tabular.verdicts import _same_input

    a = pd.DataFrame({"x": [0.0], "c": ["a"], "k": pd.Categorical(["u"], categories=["u", "v"])})
    assert _same_input(a, a.copy())
    assert _same_input(a, a.set_axis([7]))  # (the index is not an input of the model)
    b = a.copy()
    b["x"] = -0.0
    assert not _same_input(a, b)  # -0.0 is not 0.0 to a model that divides by it
    assert not _same_input(a, a.astype({"x": np.float32}))
    assert not _same_input(a, a[["c", "x", "k"]])
    assert not _same_input(a, a.astype({"k": object}))
    b = a.copy()
    b["c"] = "b"
    assert not _same_input(a, b)
    n = pd.DataFrame({"x": [np.nan], "c": [pd.NA]}, dtype=object)
    assert not _same_input(n, n.copy())  # pd.NA == pd.NA is not known: asked again
    f = pd.DataFrame({"x": [np.nan]})
    assert _same_input(f, f.copy())  # the same bytes
    assert _same_input(a.to_numpy(), a.to_numpy().copy())
    assert not _same_input(a.to_numpy(), b.to_numpy())
    assert not _same_input(np.zeros((1, 2)), np.zeros((1, 2), dtype=np.float32))


def test_bounds_that_leave_the_row_out_count_as_changes():
    """Bounds that leave out the row's n and d force both to change: ``max_changes=1`` has no
    answer (the quick search returned x̄'s clipped cell, two changes, as a success: fuzz find),
    ``max_changes=2`` has the brute force's."""
    X, y = _data(240, seed=0)
    model = _pipe(DecisionTreeClassifier(max_depth=4, random_state=0)).fit(X, y)
    tx = fastcf.TabularExplainer(model, X, weights=W)
    row = X.iloc[[0]]
    box = {"n": (0, 0), "d": (0.0, 0.0)}
    assert row.n.iloc[0] != 0 and row.d.iloc[0] != 0.0
    target = 1 - int(model.predict(row)[0])
    g = _grids(X, row, box=box)
    for m in (1, 2):
        best, _ = tabular_model_brute_force(model, row, g, _cost(row), target, max_changes=m)
        res = tx.explain(row, target, bounds=box, max_changes=m)
        if np.isfinite(best):
            _check(model, res, row, target, best, g)
        else:
            assert not res.success and res.status == int(Status.INFEASIBLE), m
    assert not tx.explain(row, target, bounds=box, max_changes=1).success


def test_two_scalers_before_a_forest_are_taken():
    # the bisection of the raw boundaries probed ±1.8e308: the first scaler (a column of
    # spread 0.01) overflowed to inf, and the second refused it ("Input X contains infinity")
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(0, 0.01, 200), "b": rng.normal(0, 1, 200)})
    y = (X.a / 0.01 + X.b > 0).astype(int)
    model = make_pipeline(
        StandardScaler(), StandardScaler(), RandomForestClassifier(5, max_depth=3, random_state=0)
    ).fit(X, y)
    tx = fastcf.TabularExplainer(model, X)
    rows = X[model.predict(X) == 0].iloc[:5]
    res = tx.explain(rows, 1)
    assert res.success.all() and (model.predict(res.x) == 1).all()
