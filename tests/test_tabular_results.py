"""Tabular answers are every family's result type (issue 53, item 3).

``TabularExplainer`` answers with a :class:`fastcf.Counterfactual` (one row) or a
:class:`fastcf.CounterfactualBatch` (several), in their DataFrame form (``FrameCounterfactual``,
``FrameCounterfactualBatch``): ``x``/``x0`` DataFrames with the model's columns, dtypes and
labels, ``changes``, ``changed``, ``costs``, ``to_frame`` and a batch's ``summary``. The names of
the former classes, ``TabularCounterfactual`` and ``TabularBatch``, warn for one release, and
normal use warns nothing. The explainer is a ``BaseExplainer`` whose array steps refuse by name.
"""

import importlib
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler

import fastcf
from fastcf._base import BaseExplainer
from fastcf.tabular import FrameCounterfactual, FrameCounterfactualBatch, TabularExplainer

NUMERIC = ["income", "age"]


def _data(n=240, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {
            "income": rng.normal(50, 12, n).round(1),
            "age": rng.integers(20, 70, n),
            "home": rng.choice(["own", "rent", "parents"], n),
            "edu": pd.Categorical(
                rng.choice(["low", "mid", "high"], n), ["low", "mid", "high"], ordered=True
            ),
        }
    )
    score = (
        0.08 * (X.income - 50)
        + 1.2 * (X.home == "own")
        + 0.8 * X.edu.cat.codes
        + rng.normal(0, 0.4, n)
    )
    return X, (score > 1.0).astype(int)


@pytest.fixture(scope="module")
def setup():
    X, y = _data()
    pre = make_column_transformer(
        (StandardScaler(), NUMERIC),
        (OneHotEncoder(), ["home"]),
        (OrdinalEncoder(categories=[["low", "mid", "high"]]), ["edu"]),
    )
    model = make_pipeline(pre, LogisticRegression()).fit(X, y)
    tx = TabularExplainer(model, X, immutable=["age"])
    rows = X[model.predict(X) == 0].iloc[:8]
    return X, model, tx, rows


# ---------------------------------------------------------------- one answer


def test_one_answer_is_a_counterfactual_with_dataframe_views(setup):
    X, model, tx, rows = setup
    res = tx.explain(rows.iloc[[0]], 1)
    assert isinstance(res, fastcf.Counterfactual) and isinstance(res, FrameCounterfactual)
    assert not isinstance(res, fastcf.CounterfactualBatch)
    assert res.success and res.status == 0 and model.predict(res.x)[0] == 1
    # x and x0: one-row DataFrames with the model's columns, dtypes and labels
    for frame in (res.x, res.x0):
        assert isinstance(frame, pd.DataFrame) and frame.shape == (1, X.shape[1])
        assert list(frame.columns) == list(X.columns)
    pd.testing.assert_series_equal(res.x.dtypes, X.dtypes)
    assert res.x.home.iloc[0] in set(X.home) and res.x.edu.iloc[0] in list(X.edu.cat.categories)
    pd.testing.assert_frame_equal(res.x0, rows.iloc[[0]])
    # the changes, their labels, positions and costs agree
    ch = res.changes
    assert list(ch.columns) == ["column", "before", "after", "cost"]
    assert res.changed == list(ch.column) and isinstance(res.changed, list)
    assert res.changed and "age" not in res.changed  # immutable
    assert [X.columns[j] for j in res.changed_index] == res.changed
    np.testing.assert_array_equal(res.changed_mask(), np.isin(X.columns, res.changed))
    assert res.costs.shape == (X.shape[1],)
    assert res.distance == pytest.approx(res.costs.sum(), rel=1e-12)
    assert res.distance == pytest.approx(ch.cost.sum(), rel=1e-12)
    # the Counterfactual fields, filled for a tabular answer
    assert list(res.feature_names) == list(X.columns)
    assert isinstance(res.nit, int) and res.nit == res.info.get("nodes", 0)
    assert res.lam is None and res.grad_norm is None
    assert res.method.startswith("milp") and res.info["exact"] is True
    assert res.proba.shape == (2,) and res.proba[1] > 0.5
    assert isinstance(res.target, int) and res.target == 1
    assert isinstance(res.message, str) and res.message
    assert repr(res).startswith("FrameCounterfactual(success=True, status=0")


def test_one_answer_delta_holds_the_numeric_columns(setup):
    X, model, tx, rows = setup
    res = tx.explain(rows.iloc[[1]], 1)
    d = res.delta
    assert isinstance(d, pd.DataFrame) and list(d.columns) == NUMERIC
    assert d.index.equals(res.x.index) and (d.dtypes == np.float64).all()
    np.testing.assert_allclose(
        d.to_numpy(), res.x[NUMERIC].to_numpy(float) - res.x0[NUMERIC].to_numpy(float)
    )
    with pytest.raises(TypeError, match=r"\.changes"):
        res.to_sparse()


def test_one_answer_to_frame_lays_out_every_column(setup):
    X, model, tx, rows = setup
    res = tx.explain(rows.iloc[2], 1)  # a Series works as well
    frame = res.to_frame()
    assert list(frame.columns) == ["feature", "original", "counterfactual", "cost"]
    assert list(frame.feature) == list(X.columns)
    assert frame.cost.sum() == pytest.approx(res.distance, rel=1e-12)
    moved = frame[frame.original != frame.counterfactual].feature.tolist()
    assert moved == res.changed


def test_changed_mask_tol_applies_to_numeric_columns():
    cols = ["a", "b", "c", "d"]
    x0 = pd.DataFrame({"a": [1.0], "b": ["u"], "c": [np.nan], "d": [np.nan]}, index=[7])
    x = pd.DataFrame({"a": [1.25], "b": ["v"], "c": [np.nan], "d": [2.0]}, index=[7])
    res = FrameCounterfactual(
        x=x, x0=x0, target=1, proba=None, distance=3.0, success=True, status=0, message="",
        nit=0, method="milp", feature_names=np.asarray(cols, dtype=object),
        costs=np.array([0.25, 1.0, 0.0, 1.75]),
    )  # fmt: skip
    assert res.changed == ["a", "b", "d"]
    np.testing.assert_array_equal(res.changed_mask(0.5), [False, True, False, True])
    d = res.delta  # a cell missing on both sides did not move; one filled in has no number
    assert list(d.columns) == ["a", "c", "d"] and list(d.index) == [7]
    np.testing.assert_array_equal(d.to_numpy()[0, :2], [0.25, 0.0])
    assert np.isnan(d.to_numpy()[0, 2])


# ---------------------------------------------------------------- a batch


def test_batch_is_a_counterfactual_batch_with_dataframe_views(setup):
    X, model, tx, rows = setup
    batch = tx.explain(rows, 1)
    n, D = rows.shape
    assert isinstance(batch, fastcf.CounterfactualBatch)
    assert isinstance(batch, FrameCounterfactualBatch) and len(batch) == n
    assert batch.x.shape == (n, D) and batch.x0.shape == (n, D)
    assert batch.x.index.equals(rows.index) and list(batch.x.columns) == list(X.columns)
    pd.testing.assert_series_equal(batch.x.dtypes, X.dtypes)
    assert (model.predict(batch.x)[batch.success] == 1).all() and batch.success.all()
    # the stacked fields
    assert batch.target.shape == (n,) and (batch.target == 1).all()
    assert batch.distance.shape == (n,) and batch.status.shape == (n,)
    assert batch.proba.shape == (n, 2) and len(batch.message) == n
    assert batch.nit.shape == (n,) and batch.nit.dtype == np.int64
    assert batch.method.startswith("milp") and batch.lam is None and batch.grad_norm is None
    assert isinstance(batch.info, list) and all(i["exact"] for i in batch.info)
    assert list(batch.feature_names) == list(X.columns) and batch.costs.shape == (n, D)
    # each answer, by index and by iteration
    answers = list(batch)
    assert len(answers) == n and all(isinstance(a, fastcf.Counterfactual) for a in answers)
    for i, a in enumerate(answers):
        pd.testing.assert_frame_equal(a.x, batch.x.iloc[[i]])
        pd.testing.assert_frame_equal(a.x0, rows.iloc[[i]])
        assert a.distance == batch.distance[i] and a.nit == batch.nit[i]
        assert a.info is batch.info[i]
        np.testing.assert_array_equal(a.costs, batch.costs[i])
    pd.testing.assert_frame_equal(batch[-1].x, batch.x.iloc[[n - 1]])
    with pytest.raises(IndexError):
        batch[n]
    # the counts, the summary, the numeric moves
    assert batch.n_changed.tolist() == [len(a.changed) for a in answers]
    s = batch.summary
    assert s["n"] == n and s["n_success"] == n and s["share_with_recourse"] == 1.0
    assert set(s["changed_share"]) <= set(X.columns) - {"age"}
    assert s["cost"]["median"] == pytest.approx(np.median(batch.distance))
    d = batch.delta
    assert list(d.columns) == NUMERIC and d.index.equals(rows.index)
    assert (d["age"] == 0).all()
    with pytest.raises(TypeError, match="tabular batch"):
        batch.to_sparse()
    assert repr(batch).startswith(f"FrameCounterfactualBatch(n={n}, success={n}/{n}")


def test_batch_to_frame_one_row_per_query(setup):
    X, model, tx, rows = setup
    batch = tx.explain(rows, 1)
    frame = batch.to_frame()
    assert list(frame.columns) == [
        "target", "success", "status", "distance", "n_changed", "changed",
    ]  # fmt: skip
    assert frame.index.equals(rows.index)
    assert frame.n_changed.tolist() == batch.n_changed.tolist()
    assert frame.changed.tolist() == [", ".join(map(str, a.changed)) for a in batch]


def test_enumerate_answers_are_counterfactuals(setup):
    X, model, tx, rows = setup
    alts = tx.enumerate(rows.iloc[[0]], 1, k=3)
    assert alts and all(isinstance(a, FrameCounterfactual) for a in alts)
    assert all(isinstance(a, fastcf.Counterfactual) for a in alts)
    assert alts[0].distance == pytest.approx(tx.explain(rows.iloc[[0]], 1).distance)


# ---------------------------------------------------------------- deprecated names


@pytest.mark.parametrize("module", ["fastcf.tabular", "fastcf._tabular.results"])
@pytest.mark.parametrize(
    ("old", "new", "base"),
    [
        ("TabularCounterfactual", FrameCounterfactual, "fastcf.Counterfactual"),
        ("TabularBatch", FrameCounterfactualBatch, "fastcf.CounterfactualBatch"),
    ],
)
def test_deprecated_names_warn_and_are_the_new_classes(module, old, new, base):
    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=rf"{module}\.{old} is deprecated") as rec:
        cls = getattr(mod, old)
    assert cls is new
    message = str(rec[0].message)
    assert base in message and new.__name__ in message  # what to use instead
    assert rec[0].filename == __file__  # it points at the code that reads the name
    with pytest.warns(DeprecationWarning, match=old):
        exec(f"from {module} import {old}", {})
    assert old not in mod.__all__
    with pytest.raises(AttributeError, match="no attribute 'TabularNothing'"):
        mod.TabularNothing  # noqa: B018


def test_deprecated_names_still_match_the_answers(setup):
    X, model, tx, rows = setup
    with pytest.warns(DeprecationWarning):
        from fastcf.tabular import TabularBatch, TabularCounterfactual
    assert isinstance(tx.explain(rows.iloc[[0]], 1), TabularCounterfactual)
    assert isinstance(tx.explain(rows.iloc[:2], 1), TabularBatch)


def test_normal_use_emits_no_warning(setup):
    X, model, tx, rows = setup
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ex = TabularExplainer(model, X, immutable=["age"])
        res = ex.explain(rows.iloc[[0]], 1)
        batch = ex.explain(rows, 1)
        alts = ex.enumerate(rows.iloc[[0]], 1, k=2)
        for a in [res, *batch, *alts]:
            _ = (a.changes, a.changed, a.delta, a.to_frame(), repr(a), a.changed_index)
        _ = (batch.summary, batch.to_frame(), batch.delta, batch.n_changed, repr(batch))
        _ = dir(fastcf.tabular), fastcf.Counterfactual, fastcf.CounterfactualBatch


def test_importing_the_modules_emits_no_warning():
    code = (
        "import fastcf, fastcf.tabular, fastcf._tabular.results, fastcf.plot\n"
        "from fastcf.tabular import *\n"
        "from fastcf._tabular.results import *\n"
        "import inspect; inspect.getmembers(fastcf.tabular)\n"
    )
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr


# ---------------------------------------------------------------- the explainer


def test_explainer_is_a_base_explainer(setup):
    X, model, tx, rows = setup
    assert isinstance(tx, BaseExplainer)
    np.testing.assert_array_equal(tx.classes_, model.classes_)
    assert tx.n_features_in_ == X.shape[1]
    assert list(tx.feature_names_in_) == list(X.columns)
    assert isinstance(tx.mad_, dict) and set(NUMERIC) <= set(tx.mad_)
    assert tx._has_proba and tx._allow_nan
    with pytest.raises(TypeError, match="X_train at construction"):
        tx.fit_mad(X)
    with pytest.raises(TypeError, match="x must be a DataFrame"):
        tx._queries(rows.to_numpy(), 1)  # the stage's first step reads DataFrame rows
    frame, single, _, tidx = tx._queries(rows, 1)
    assert frame is rows and not single and tidx.tolist() == [1] * len(rows)
    batch = tx.explain(rows, 1)  # the model's own verdict, as the answers carry it
    tidx = np.ones(len(rows), dtype=np.int64)
    np.testing.assert_array_equal(tx._in_target(batch.x, tidx), batch.success)
    assert not tx._in_target(rows, tidx).any()
    np.testing.assert_array_equal(
        tx._in_target(batch.x, tidx, proba=0.99), model.predict_proba(batch.x)[:, 1] >= 0.99
    )


def test_plot_changes_refuses_a_tabular_answer(setup):
    from fastcf.plot import plot_changes

    X, model, tx, rows = setup
    with pytest.raises(TypeError, match="plot_recourse"):
        plot_changes(tx.explain(rows.iloc[[0]], 1))
