"""TabularExplainer(time_limit=) on tree pipelines: stopped answers, confirmed by the model.

No timed asserts: a stop is forced by wrapping the forest program's ``solve`` (the answer it
would give when HiGHS stops: the same point reported as not certified, or no point), and a
real tiny limit is only checked for consistency (whatever was found, the model confirms it).
"""

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import fastcf
from fastcf import Status
from fastcf._tabular import treeorders
from fastcf._trees.milp import Answer


def _data(n=240, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {
            "n": rng.integers(0, 16, n),
            "d": rng.uniform(0.0, 4.0, n).round(1),
            "job": rng.choice(["a", "b", "c"], n),
        }
    )
    s = X.n / 4 + X.d + 1.5 * (X.job == "c") - (X.job == "a") + rng.normal(0, 0.7, n)
    return X, (s > 3.5).astype(int)


def _pipe(clf):
    pre = make_column_transformer((StandardScaler(), ["n", "d"]), (OneHotEncoder(), ["job"]))
    return make_pipeline(pre, clf)


@pytest.fixture(scope="module")
def forest():
    X, y = _data()
    model = _pipe(RandomForestClassifier(12, max_depth=4, random_state=0)).fit(X, y)
    return X, model, fastcf.TabularExplainer(model, X)


def _rows(X, model, target, k=4):
    return X[model.predict(X) != target].iloc[:k]


def test_an_ample_limit_is_the_exact_answer(forest):
    X, model, tx = forest
    rows = _rows(X, model, 1)
    exact = tx.explain(rows, 1)
    limited = tx.explain(rows, 1, time_limit=60.0)
    assert np.array_equal(exact.status, limited.status) and (limited.status == 0).all()
    assert np.array_equal(exact.distance, limited.distance)
    pd.testing.assert_frame_equal(exact.x, limited.x)


def _stopping(monkeypatch, keep_point, seen):
    """Make every forest program stop as at a time limit (after solving it in full)."""
    real = treeorders.GridProgram.solve

    def solve(self, x0, t, lo, hi, q, confirm, *args, **kwargs):
        seen.append(q.time_limit)
        ans = real(self, x0, t, lo, hi, q, confirm, *args, **kwargs)
        if keep_point and ans.success:
            return ans._replace(status=int(Status.MAXITER), gap=0.5, bound=0.5 * ans.distance)
        return Answer(x0.copy(), math.inf, False, int(Status.MAXITER), "time limit", 1, 1.0,
                      0.0, 0)  # fmt: skip

    monkeypatch.setattr(treeorders.GridProgram, "solve", solve)


def test_a_stop_with_an_answer_is_a_success_with_status_1(forest, monkeypatch):
    X, model, tx = forest
    rows = _rows(X, model, 1)
    exact = tx.explain(rows, 1)
    seen = []
    _stopping(monkeypatch, True, seen)
    res = tx.explain(rows, 1, time_limit=5.0)
    assert seen and all(0.0 < s <= 5.0 for s in seen)  # the row's time reached the program
    assert res.success.all() and (res.status == int(Status.MAXITER)).all()
    assert (model.predict(res.x) == 1).all()  # the pipeline's own predict
    assert np.array_equal(res.distance, exact.distance)
    for i, info in enumerate(res.info):
        assert info["stopped"] and info["gap"] == pytest.approx(0.5)
        assert info["bound"] == pytest.approx(0.5 * res.distance[i])
    assert all("time limit reached" in m for m in res.message)


def test_a_stop_without_an_answer_is_a_failure(forest, monkeypatch):
    X, model, tx = forest
    row = _rows(X, model, 1, 1)
    _stopping(monkeypatch, False, [])
    res = tx.explain(row, 1, time_limit=5.0)
    assert not res.success and res.status == int(Status.MAXITER)
    assert math.isinf(res.distance)
    pd.testing.assert_frame_equal(res.x.reset_index(drop=True), row.reset_index(drop=True))


def test_a_re_solve_gets_what_the_rows_earlier_solves_left(forest, monkeypatch):
    """The limit is the row's, all its solves together: a row the pipeline refuses once is
    solved again at a raised margin with the limit less the time its first solve took (each
    solve made to take at least 0.2 s; the refusal forced once)."""
    import time

    from fastcf._tabular import solve as tab_solve

    X, model, tx = forest
    row = _rows(X, model, 1, 1)
    seen, refused = [], []
    real = treeorders.GridProgram.solve

    def slow(self, x0, t, lo, hi, q, confirm, *args, **kwargs):
        seen.append(q.time_limit)
        time.sleep(0.2)
        return real(self, x0, t, lo, hi, q, confirm, *args, **kwargs)

    real_verify = tab_solve.verify

    def refuse_once(*args, **kwargs):
        ok, proba = real_verify(*args, **kwargs)
        if not refused:
            refused.append(True)
            ok = np.zeros_like(ok)
        return ok, proba

    monkeypatch.setattr(treeorders.GridProgram, "solve", slow)
    monkeypatch.setattr(tab_solve, "verify", refuse_once)
    res = tx.explain(row, 1, time_limit=5.0)
    assert res.success and res.status == 0 and model.predict(res.x)[0] == 1
    assert "margin raised" in res.message
    # one program per solve here (one plan; the program gets what is left of the solve's
    # time when it starts): the second at most 5 s less the first's 0.2 s (no lower bound is
    # asserted: a loaded machine may take any time before a program starts)
    assert len(seen) == 2 and seen[0] <= 5.0
    assert seen[1] <= 5.0 - 0.2


def test_a_tiny_real_limit_gives_only_confirmed_answers(forest):
    X, model, tx = forest
    rows = _rows(X, model, 1, 6)
    exact = tx.explain(rows, 1)
    res = tx.explain(rows, 1, time_limit=1e-4)
    assert set(res.status.tolist()) <= {0, 1}
    ok = res.success
    assert (model.predict(res.x[ok]) == 1).all()
    assert (res.distance[ok] >= exact.distance[ok] - 1e-9).all()
    for i in np.flatnonzero(ok & (res.status == 1)):
        assert res.info[i]["bound"] <= res.distance[i] + 1e-9
        assert 0.0 <= res.info[i]["gap"] <= 1.0


def test_refusals(forest):
    X, model, tx = forest
    row = _rows(X, model, 1, 1)
    for bad in (0.0, -1.0, math.nan):
        with pytest.raises(ValueError, match="time_limit"):
            tx.explain(row, 1, time_limit=bad)
    with pytest.raises((TypeError, ValueError), match="time_limit"):
        tx.explain(row, 1, time_limit="1s")
    y = model.predict(X)
    linear = fastcf.TabularExplainer(_pipe(LogisticRegression()).fit(X, y), X)
    # a linear program is solved to optimality in milliseconds: the limit is accepted, as every
    # family takes it (issue 53), and changes nothing
    res = linear.explain(row, 1, time_limit=1.0)
    assert res.success and res.status == 0 and res.info["exact"]
    assert res.distance == linear.explain(row, 1).distance


def test_enumerate_takes_the_limit(forest, monkeypatch):
    X, model, tx = forest
    row = _rows(X, model, 1, 1)
    exact = tx.enumerate(row, 1, k=3)
    assert len(exact) >= 2 and all(a.status == 0 for a in exact)
    seen = []
    _stopping(monkeypatch, True, seen)
    alts = tx.enumerate(row, 1, k=3, time_limit=5.0)
    assert seen and all(0.0 < s <= 5.0 for s in seen)
    assert [a.distance for a in alts] == [a.distance for a in exact]
    for a in alts:  # stopped answers, each confirmed by the pipeline's predict
        assert a.success and a.status == int(Status.MAXITER) and model.predict(a.x)[0] == 1
    linear = fastcf.TabularExplainer(_pipe(LogisticRegression()).fit(X, model.predict(X)), X)
    limited = linear.enumerate(row, 1, k=2, time_limit=1.0)
    assert [a.distance for a in limited] == [a.distance for a in linear.enumerate(row, 1, k=2)]


def test_a_rows_limit_holds_the_build_of_its_orders_program():
    """Issue 54: a row whose categories need a program of their own order (``allowed=``)
    builds it within the row's limit: a limit spent before it is built fails the row with the
    reason (status 1), the stages done are kept for the next row, and only finished programs
    are cached; the finished one answers as one built at once."""
    X, y = _data()
    model = _pipe(RandomForestClassifier(12, max_depth=4, random_state=0)).fit(X, y)
    tx = fastcf.TabularExplainer(model, X)
    rows = X[(model.predict(X) != 1) & (X.job == "b")]
    row = rows.iloc[:1]
    allowed = {"job": ["a", "c"]}  # (not contiguous in the default order: an order of its own)
    exact = fastcf.TabularExplainer(model, X).explain(row, 1, allowed=allowed)
    prog = tx._program
    n0 = len(prog._programs.done)
    for _ in range(10):  # (5 stages, at least one per call)
        res = tx.explain(row, 1, allowed=allowed, time_limit=1e-6)
        assert all(p.built for p in prog._programs.done.values())
        if res.success:
            assert model.predict(res.x)[0] == 1
        else:
            assert res.status == int(Status.MAXITER)
        if len(prog._programs.done) > n0:
            break
        assert "building the model's program" in res.message
    assert len(prog._programs.done) > n0 and not prog._programs.parts
    again = tx.explain(row, 1, allowed=allowed)
    assert again.success and again.distance == exact.distance
