"""The one stage (fastcf._stage): every family's explain goes through it, and its loop.

The loop (:func:`fastcf._stage.settle`) is tested on a toy family whose judge and re-aim are
known; the families' own re-aim policies are tested by their soaks (tests/test_lvq.py's data at
scale 10⁵, tests/test_tabular.py's margins). Here: that each family's explain passes through
the stage's judge and package once, that ``verify=`` means the same in every family, and what
the loop does with a budget, a failed re-solve and a row the judge never accepts.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression

import fastcf
from fastcf import _stage
from fastcf._status import BOUNDARY_MESSAGE, Status
from fastcf.results import Solution


def _toy(x, success=None):
    n = x.shape[0]
    return Solution(
        x=np.asarray(x, dtype=float)[:, None],
        proba=None,
        distance=np.abs(x).astype(float),
        success=np.ones(n, bool) if success is None else np.asarray(success, bool),
        status=np.zeros(n, np.int64),
        nit=np.ones(n, np.int64),
        method="toy",
        message=["ok"] * n,
    )


class _Doubling:
    """Re-aim: the answer doubled; records every round's rows."""

    def __init__(self, fail_rows=()):
        self.sol, self.calls, self.fail_rows = None, [], set(fail_rows)

    def aim(self, sol, rows, r):
        self.sol = sol
        self.calls.append((r, rows.tolist()))
        return rows

    def solve(self, rows):
        x = 2 * self.sol.x[rows, 0]
        ok = np.array([r not in self.fail_rows for r in rows.tolist()])
        return _toy(x, ok)


def _judge(sol, rows):
    return (sol.x[:, 0] if rows is None else sol.x[rows, 0]) >= 1.0


def test_settle_re_aims_only_refused_successes_and_judges_them_again():
    sol = _toy(np.array([0.3, 2.0, 0.6]), success=[True, True, False])
    policy = _Doubling()
    out = _stage.settle(sol, _judge, policy)
    # row 0: 0.3 → 0.6 → 1.2 (two rounds); row 2 never claimed success: never re-aimed
    assert policy.calls == [(0, [0]), (1, [0])]
    assert out.x[:, 0].tolist() == [1.2, 2.0, 0.6]
    assert out.success.tolist() == [True, True, False]
    assert out.nit.tolist() == [3, 1, 1]  # each re-solve's iterations added
    assert out.certified.tolist() == [True, True, False]


def test_settle_budget_and_the_refused_rows_status():
    sol = _toy(np.array([1e-9, 5.0]))
    policy = _Doubling()
    out = _stage.settle(sol, _judge, policy, rounds=3)
    assert [r for r, _ in policy.calls] == [0, 1, 2]  # the budget: three rounds, no more
    assert out.x[0, 0] == 8e-9
    assert out.success.tolist() == [False, True]
    assert out.status.tolist() == [int(Status.NUMERIC), 0]
    assert out.message[0] == BOUNDARY_MESSAGE and out.message[1] == "ok"


def test_settle_keeps_the_old_answer_where_the_re_solve_fails():
    sol = _toy(np.array([0.4, 0.7]))
    out = _stage.settle(sol, _judge, _Doubling(fail_rows={0}), rounds=2)
    assert out.x[0, 0] == 0.4  # its re-solves failed: the old answer, refused
    assert out.status[0] == int(Status.NUMERIC) and not out.success[0]
    assert out.x[1, 0] == 1.4 and out.success[1]


def test_judge_without_policy_asks_only_uncertified_rows():
    sol = _toy(np.array([0.5, 0.5, 3.0]))._replace(certified=np.array([True, False, False]))
    asked = []

    def in_target(X, tidx, proba):
        asked.append(X[:, 0].tolist())
        return X[:, 0] >= 1.0

    out = _stage.judge(in_target, sol, np.zeros(3, np.int64))
    assert asked == [[0.5, 3.0]]  # the certified row is not asked again
    assert out.success.tolist() == [True, False, True]
    assert out.status.tolist() == [0, int(Status.NUMERIC), 0]
    assert out.certified.tolist() == [True, False, False]  # a refused row keeps none


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X, y


def _explainers(iris):
    X, y = iris
    lin = fastcf.LinearExplainer(LogisticRegression(max_iter=500).fit(X, y))
    lvq = fastcf.LVQExplainer.from_arrays([X[y == c].mean(axis=0) for c in range(3)], [0, 1, 2])
    forest = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    trees = fastcf.TreeExplainer(forest)
    return {"linear": (lin, {"region": True}), "lvq": (lvq, {}), "trees": (trees, {})}


@pytest.mark.parametrize("family", ["linear", "lvq", "trees"])
def test_every_family_explains_through_the_stage(iris, family, monkeypatch):
    ex, opts = _explainers(iris)[family]
    X, _ = iris
    judged, packaged = [], []
    real_judge, real_settle, real_package = _stage.judge, _stage.settle, _stage.package

    def counted(real, into):
        def step(*a, **k):
            into.append(real.__name__)
            return real(*a, **k)

        return step

    monkeypatch.setattr(_stage, "judge", counted(real_judge, judged))
    monkeypatch.setattr(_stage, "settle", counted(real_settle, judged))
    monkeypatch.setattr(_stage, "package", counted(real_package, packaged))
    res = ex.explain(X[:3], 2, **opts)  # a batch: the long path
    # judged (with or without a re-aim policy: LVQ's route settles, then the stage judges
    # what is certified already), packaged once
    assert judged and set(judged) <= {"judge", "settle"} and len(packaged) == 1
    assert isinstance(res, fastcf.CounterfactualBatch)
    assert np.asarray(res.info["exact"]).dtype == bool


@pytest.mark.parametrize("family", ["linear", "lvq", "trees"])
def test_verify_is_one_word_in_every_family(iris, family):
    ex, opts = _explainers(iris)[family]
    X, _ = iris
    with pytest.raises(ValueError, match="verify must be 'fold' or 'model'"):
        ex.explain(X[0], 2, verify="always", **opts)
    if ex.model is None:  # built from arrays: no model to ask
        with pytest.raises(ValueError, match="verify='model' needs the fitted model"):
            ex.explain(X[0], 2, verify="model", **opts)
        return
    res = ex.explain(X[0], 2, verify="model", **opts)
    assert res.success
    assert ex.model.predict(res.x[None])[0] == 2


def test_trees_re_aim_a_refused_answer_without_trusting_the_copy(iris, monkeypatch):
    """The tree program prunes with its parsed copy; where the model refuses the answer, the
    stage's judge refuses it and the family's re-aim (``trees._Distrust``) solves the row again
    with every candidate confirmed by the model (``trust=False``)."""
    from fastcf import trees as trees_module
    from fastcf._trees import answer as tree_answer

    X, y = iris
    forest = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    ex = fastcf.TreeExplainer(forest)
    real = trees_module.TreeExplainer._in_target
    calls = {"n": 0}

    def refuses_twice(self, Xq, tidx, proba=None, memo=None):
        calls["n"] += 1
        if calls["n"] <= 2:  # the program's confirmation and the stage's judge: refused
            return np.zeros(Xq.shape[0], dtype=bool)
        return real(self, Xq, tidx, proba, memo)

    trusts = []
    real_answer = tree_answer.answer

    def recorded(ex_, Xq, tidx, names, options, memo=None):
        trusts.append(options.get("trust", True))
        return real_answer(ex_, Xq, tidx, names, options, memo)

    monkeypatch.setattr(trees_module.TreeExplainer, "_in_target", refuses_twice)
    monkeypatch.setattr(tree_answer, "answer", recorded)
    res = ex.explain(X[0], 2)
    assert trusts == [True, False]  # solved, refused, solved again without trust
    assert res.success and forest.predict(res.x[None])[0] == 2


def test_tabular_explains_through_the_stage(monkeypatch):
    """A DataFrame query passes the same steps: read (rows, options), solve, the judge and
    re-aim loop (its pipeline's own predict), package (DataFrame views), finish."""
    import pandas as pd

    X = pd.DataFrame({"a": np.arange(40.0) % 11, "b": np.arange(40.0) % 3})
    model = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0)
    model.fit(X, X.a + X.b > 7.5)
    tx = fastcf.TabularExplainer(model, X)
    steps = []
    for name in ("run", "answer", "settle", "finish"):
        real = getattr(_stage, name)

        def step(*a, _real=real, _name=name, **k):
            steps.append(_name)
            return _real(*a, **k)

        monkeypatch.setattr(_stage, name, step)
    rows = X[~model.predict(X)].iloc[:3]
    res = tx.explain(rows, True)
    assert steps == ["run", "answer", "settle", "finish"]
    assert isinstance(res, fastcf.CounterfactualBatch) and isinstance(res.x, pd.DataFrame)
    assert res.success.all() and model.predict(res.x).all()
    assert all(info["exact"] is True for info in res.info)  # (one dict per row)
    steps.clear()
    one = tx.explain(rows.iloc[0], True)  # one row: one answer, its x a one-row DataFrame
    assert steps == ["run", "answer", "settle", "finish"]
    assert isinstance(one, fastcf.Counterfactual) and one.x.shape == (1, 2)
    assert one.distance == res.distance[0]


def test_verify_is_one_word_in_the_tabular_family():
    import pandas as pd

    X = pd.DataFrame({"a": np.arange(20.0), "b": np.arange(20.0) % 3})
    model = LogisticRegression().fit(X, X.a > 9.5)
    tx = fastcf.TabularExplainer(model, X)
    with pytest.raises(ValueError, match="verify must be 'fold' or 'model'"):
        tx.explain(X.iloc[[0]], True, verify="always")
    res = tx.explain(X.iloc[[0]], True, verify="model")
    assert res.success and bool(model.predict(res.x)[0])
    assert tx.enumerate(X.iloc[[0]], True, k=1, verify="model")[0].success


def test_linear_enumerate_takes_verify_and_marks_every_answer(iris):
    X, y = iris
    model = LogisticRegression(max_iter=500).fit(X, y)
    ex = fastcf.LinearExplainer(model)
    with pytest.raises(ValueError, match="verify must be 'fold' or 'model'"):
        ex.enumerate(X[0], 2, k=2, region=True, verify="always")
    alts = ex.enumerate(X[0], 2, k=3, region=True, metric="manhattan", verify="model")
    assert alts and all(a.success for a in alts)
    assert all(model.predict(a.x[None])[0] == 2 for a in alts)
    lazy = ex.enumerate(X[0], 2, k=None, region=True, metric="manhattan", verify="model")
    first = next(lazy)
    assert first.info["exact"] and np.array_equal(first.x, alts[0].x)
