"""Answers on each column's grid of values: resolution and levels (issue 33, item 1)."""

import numpy as np
import pandas as pd
import pytest
from reference import tabular_grid_brute_force
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import fastcf
from fastcf import Status
from fastcf._tabular.grid import infer_resolution, steps, value


def test_infer_resolution():
    assert infer_resolution(np.array([27.2, 31.0, np.nan, 12.5])) == 0.1
    assert infer_resolution(np.array([1.25, 3.5])) == 0.01
    assert infer_resolution(np.array([3.0, -7.0])) == 1.0
    # float32 holds 27.2 as 27.200000762939453: its own shortest decimal is the value recorded
    assert infer_resolution(np.array([27.2, 3.1], dtype=np.float32), np.float32) == 0.1
    # ... and so do doubles that went through float32 (issue 52, item 4: they were continuous)
    assert infer_resolution(np.array([27.2, 3.1], dtype=np.float32)) == 0.1
    assert infer_resolution(np.array([27.2, 3.1], dtype=np.float32).astype(np.float64)) == 0.1
    assert infer_resolution(np.array([12.539999961853027, 26.0])) == 0.01
    # (not every float32: random ones have more than six decimals as float32 too)
    r32 = np.random.default_rng(0).normal(size=50).astype(np.float32).astype(np.float64)
    assert infer_resolution(r32) == 0.0
    assert infer_resolution(np.random.default_rng(0).normal(size=100)) == 0.0
    assert infer_resolution(np.array([0.1234567])) == 0.0  # 7 decimals: continuous
    assert infer_resolution(np.array([np.nan])) == 0.0


def test_steps_and_values_are_exact_decimals():
    assert steps(27.2, 0.1) == 272 and value(272, 0.1) == 27.2
    assert 272 * 0.1 != 27.2  # what the grid must not do
    assert steps(27.25, 0.1) is None
    assert steps(-3.5, 0.5) == -7 and value(-7, 0.5) == -3.5
    assert value(3, 0.01) == 0.03


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {
            "dti": rng.uniform(5, 45, n).round(1),
            "income": rng.normal(50, 15, n).round(1),
            "term": rng.choice([36, 60], n),
            "home": rng.choice(["rent", "own"], n),
        }
    )
    z = -0.15 * X.dti + 0.1 * X.income - 0.05 * X.term + 0.5 * (X.home == "own")
    y = (z + rng.normal(0, 1, n) > np.median(z)).astype(int)
    pre = make_column_transformer(
        (StandardScaler(), ["dti", "income", "term"]), (OneHotEncoder(), ["home"])
    )
    return X, make_pipeline(pre, LogisticRegression()).fit(X, y)


@pytest.fixture(scope="module")
def loans():
    X, model = _data()
    ex = fastcf.TabularExplainer(model, X, levels={"term": [36, 60]})
    return X, model, ex


def test_the_schema_shows_each_columns_grid(loans):
    X, model, ex = loans
    assert ex.resolution_ == {"dti": 0.1, "income": 0.1}
    assert ex.kinds_["term"] == "levels"


def _decimals(v):
    text = repr(float(v))
    return len(text.split(".")[1]) if "." in text and "e" not in text else 0


@pytest.mark.parametrize("method", ["auto", "milp"])
def test_answers_lie_on_the_grid_and_are_optimal_on_it(loans, method):
    X, model, ex = loans
    ex._program.method = method  # the branch-and-bound of binary models, and HiGHS
    try:
        rows = X[model.predict(X) == 0]
        s = model.decision_function(rows)
        rows = rows[s > -0.6].iloc[:6]  # near the boundary: the brute force's box holds answers
        assert len(rows) >= 3
        w = ex.weights_
        for i in range(len(rows)):
            row = rows.iloc[[i]]
            d0, m0 = float(row.dti.iloc[0]), float(row.income.iloc[0])
            box = {"dti": (d0 - 3.0, d0 + 3.0), "income": (m0 - 3.0, m0 + 3.0)}
            res = ex.explain(row, 1, bounds=box)
            assert res.success, res.message
            ans = res.x
            assert int(model.predict(ans)[0]) == 1
            assert _decimals(ans.dti.iloc[0]) <= 1 and _decimals(ans.income.iloc[0]) <= 1
            assert int(ans.term.iloc[0]) in (36, 60)
            # no change smaller than a step: a changed column moved a whole step or more
            for col in ("dti", "income"):
                dx = abs(float(ans[col].iloc[0]) - float(row[col].iloc[0]))
                assert dx == 0.0 or dx >= 0.1 - 1e-12
            grids = {
                "dti": [value(k, 0.1) for k in range(steps(d0, 0.1) - 30, steps(d0, 0.1) + 31)],
                "income": [value(k, 0.1) for k in range(steps(m0, 0.1) - 30, steps(m0, 0.1) + 31)],
                "term": [36, 60],
                "home": ["rent", "own"],
            }
            x0 = row.iloc[0]

            def cost(col, v, x0=x0):
                if col == "home":
                    return float(v != x0.home) * w["home"]
                return w[col] * abs(float(v) - float(x0[col]))

            best, _ = tabular_grid_brute_force(model.decision_function, row, grids, cost, 1)
            assert res.distance == pytest.approx(best, rel=1e-9, abs=1e-12)
    finally:
        ex._program.method = "auto"


def test_without_a_grid_the_answer_is_cheaper_or_equal(loans):
    X, model, ex = loans
    cont = fastcf.TabularExplainer(
        model, X, resolution={"dti": None, "income": None}, levels={"term": [36, 60]}
    )
    assert cont.resolution_ == {"dti": None, "income": None}
    rows = X[model.predict(X) == 0].iloc[:15]
    a, b = ex.explain(rows, 1), cont.explain(rows, 1)
    assert a.success.all() and b.success.all()
    assert (np.asarray(a.distance) >= np.asarray(b.distance) - 1e-12).all()
    # and a grid answer is within one step of each moved column of the continuous one's cost
    assert (np.asarray(a.distance) <= np.asarray(b.distance) + 2 * 0.1 * max(ex.weights_["dti"],
            ex.weights_["income"]) + 1e-9).all()  # fmt: skip


def test_levels_are_honoured_with_monotone_and_bounds():
    X, model = _data(seed=1)
    ex = fastcf.TabularExplainer(
        model, X, levels={"term": [36, 48, 60]}, decrease_only=["term"], immutable=["home"]
    )
    rows = X[model.predict(X) == 0].iloc[:20]
    res = ex.explain(rows, 1)
    ok = np.asarray(res.success)
    assert ok.any()
    t = res.x.term.to_numpy()
    assert set(t) <= {36, 48, 60}
    assert (t <= rows.term.to_numpy()).all()  # decrease-only
    np.testing.assert_array_equal(model.predict(res.x[ok]), 1)
    # a level the training data lacks (48) is one an answer may take
    assert "levels" == ex.kinds_["term"]


def test_grid_refusals_name_the_column(loans):
    X, model, ex = loans
    row = X.iloc[[0]].copy()
    row["dti"] = 27.25
    with pytest.raises(ValueError, match=r"'dti' of row 0 holds 27.25, off its resolution 0.1"):
        ex.explain(row, 1)
    row = X.iloc[[0]].copy()
    row["term"] = 48
    with pytest.raises(ValueError, match=r"'term' of row 0 holds 48, not one of its levels"):
        ex.explain(row, 1)
    # in a batch: that row's status, the others answered
    rows = X.iloc[:3].copy()
    rows.loc[rows.index[1], "dti"] = 27.25
    res = ex.explain(rows, 1)
    assert int(res.status[1]) == int(Status.INVALID_INPUT) and "resolution" in res.message[1]
    with pytest.raises(ValueError, match="not a numeric input"):
        fastcf.TabularExplainer(model, X, levels={"home": [1, 2]})
    with pytest.raises(ValueError, match="must be a number > 0"):
        fastcf.TabularExplainer(model, X, resolution={"dti": 0})
    with pytest.raises(TypeError, match="resolution must be a dict"):
        fastcf.TabularExplainer(model, X, resolution=0.1)
    with pytest.raises(ValueError, match="whole number"):
        fastcf.TabularExplainer(model, X, resolution={"term": 0.5})


def test_a_column_of_a_few_spread_values_defaults_to_its_levels():
    X, model = _data()
    ex = fastcf.TabularExplainer(model, X)  # no levels given: term takes 36 or 60 in training
    assert ex.kinds_["term"] == "levels" and ex.levels_ == {"term": [36.0, 60.0]}
    rows = X[model.predict(X) == 0].iloc[:20]
    res = ex.explain(rows, 1)
    assert set(res.x.term) <= {36, 60}
    # {column: None}: its grid instead (whole months)
    grid = fastcf.TabularExplainer(model, X, levels={"term": None})
    assert grid.kinds_["term"] == "integer" and grid.levels_ == {}
    # values that fill their grid keep it (a count 0-5), and a resolution= also keeps the grid
    assert fastcf.TabularExplainer(model, X, resolution={"term": 12}).levels_ == {}
    from fastcf._tabular.grid import infer_levels

    assert infer_levels(np.repeat(np.arange(6.0), 20), 1.0) is None
    assert infer_levels(np.repeat([6.0, 12.0, 24.0], 30), 1.0).tolist() == [6.0, 12.0, 24.0]
    assert infer_levels(np.array([36.0, 60.0]), 1.0) is None  # too few rows to tell


def _f32_data(n=500, seed=0):
    """Columns recorded to 2 and 1 decimals that went through float32 (12.54 is stored as
    12.539999961853027), as data read from a float32 source is."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "rate": np.round(rng.uniform(5, 25, n), 2),
        "years": np.round(rng.uniform(0, 30, n), 1),
        "debt": np.round(rng.uniform(0, 50, n), 2),
    }).astype(np.float32).astype(np.float64)  # fmt: skip
    y = ((X.rate < 12) & (X.years > 5) | (X.debt < 10)).astype(int)
    return X, y


def _f32_models():
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from tree_models import xgb

    X, y = _f32_data()
    yield "logistic", X, make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    yield "forest", X, RandomForestClassifier(20, max_depth=4, random_state=0).fit(X, y)
    yield "hgb", X, HistGradientBoostingClassifier(max_iter=20, random_state=0).fit(X, y)
    if xgb is not None:
        yield "xgboost", X, xgb(n_estimators=20, max_depth=3).fit(X, y)


def test_float32_rounded_decimals_keep_their_grid():
    """Doubles that went through float32 are read on the grid they were recorded on: answers
    move such a column by whole steps (no 1-ulp move "26.0 → 26.0", no value off the grid),
    and the kinds say which columns are continuous (issue 52, item 4)."""
    from fastcf._tabular.grid import grid_dtype

    for name, X, model in _f32_models():
        ex = fastcf.TabularExplainer(model, X)
        assert ex.resolution_ == {"rate": 0.01, "years": 0.1, "debt": 0.01}, name
        assert set(ex.kinds_.values()) == {"numeric"}, name
        rows = X[model.predict(X) == 0].iloc[:15]
        out = ex.explain(rows, 1)
        assert out.success.all(), (name, out.message)
        assert (model.predict(out.x) == 1).all()
        for c, r in ex.resolution_.items():
            read = grid_dtype(X[c].to_numpy(), X[c].dtype)
            for a, b in zip(rows[c], out.x[c], strict=True):
                assert steps(b, r, read) is not None, (name, c, b)
                if a != b:  # a whole step at least (float32's rounding of the row aside)
                    gap = abs(float(np.spacing(np.float32(a))))  # (np.spacing < 0 below 0)
                    assert abs(b - a) >= r - gap, (name, c, a, b)


def test_continuous_columns_are_marked():
    rng = np.random.default_rng(1)
    X = pd.DataFrame({
        "x": rng.normal(size=300), "k": rng.integers(0, 9, 300).astype(float),
        "d": np.round(rng.uniform(0, 1, 300), 1), "unused": rng.normal(size=300),
    })  # fmt: skip
    y = (X.x + X.k / 9 + X.d > 1).astype(int)
    pre = make_column_transformer((StandardScaler(), ["x", "k", "d"]), remainder="drop")
    model = make_pipeline(pre, LogisticRegression()).fit(X, y)
    ex = fastcf.TabularExplainer(model, X)
    assert ex.kinds_ == {"x": "continuous", "k": "integer", "d": "numeric", "unused": "unused"}
    assert ex.resolution_ == {"x": None, "k": 1.0, "d": 0.1}
    # every column of the frame has its MAD (issue 52, item 7: the unused one was a KeyError)
    assert set(ex.mad_) == set(X.columns)
    assert ex.mad_["unused"] > 0


def test_a_float32_row_at_its_training_edge_is_inside_its_bounds():
    """The default bounds (the training range) of a float32-rounded column are read as its
    values are (soak find: a training maximum 2.799999952316284 was read as 27.99999952 steps,
    floor 27, so a row at 2.8 was outside its bounds: moved down for nothing, or called
    infeasible with max_changes=1)."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": np.round(rng.uniform(0, 2.8, 200), 1),
                      "b": np.round(rng.uniform(0, 1, 200), 2)})  # fmt: skip
    X.loc[0, ["a", "b"]] = [2.8, 0.1]
    X = X.astype(np.float32).astype(np.float64)
    assert X.a.max() == X.a.iloc[0] != 2.8
    y = (X.a + 3 * X.b > 3.2).astype(int)
    model = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    ex = fastcf.TabularExplainer(model, X)
    row = X.iloc[[0]]
    wide = ex.explain(row, 1, bounds={"a": (0.0, 2.8)})
    for res in (ex.explain(row, 1), ex.explain(row, 1, max_changes=1), wide):
        assert res.success, res.message
        assert res.x.a.iloc[0] == row.a.iloc[0]  # a stays: only b moves
        assert res.distance == pytest.approx(wide.distance, rel=1e-12)
        assert model.predict(res.x)[0] == 1
