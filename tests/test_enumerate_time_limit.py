"""``time_limit=`` bounds a whole enumeration and LGMLVQ's penalty CCP (issue 54).

No timed asserts: work is counted. A limit of 1e-9 s is spent before the first node is solved
(the first node, ``explain``'s answer, is always solved), so an enumeration solves that one
node and returns at most its answer, marked ``info["enumeration_stopped"] = "time_limit"``;
the penalty CCP runs no round. Every answer returned is still judged by the model. Without a
limit (or with an ample one) the answers are those of the scheme run to its end, unmarked.
"""

import math
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris, make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from tree_models import tabular_data, tabular_pipe

import fastcf
from fastcf import Status, _lawler
from fastcf._lawler import Stop, lawler
from fastcf._tabular import alternatives as tabular_alternatives
from fastcf.lvq import LGMLVQ, LVQExplainer

SPENT = 1e-9  # seconds: gone before the first node is solved


@pytest.fixture
def nodes(monkeypatch):
    """The nodes solved by every ``lawler`` scheme run in the test (a list, appended to)."""
    solved = []

    def counted(solve_node, *args, **kwargs):
        def solve(fmask):
            solved.append(fmask.copy())
            return solve_node(fmask)

        return _real_lawler(solve, *args, **kwargs)

    monkeypatch.setattr(_lawler, "lawler", counted)
    monkeypatch.setattr(tabular_alternatives, "lawler", counted)
    return solved


_real_lawler = lawler


def _stopped(alts, why="time_limit"):
    return all(a.info.get("enumeration_stopped") == why for a in alts)


# ---------------------------------------------------------------------------- the scheme
def _table(D=4):
    """A node's answer changes its first free feature j, at cost j + 1 (D answers in all)."""

    def solve_node(fmask):
        free = np.flatnonzero(~fmask)
        return (free[:1], free[0] + 1.0) if free.size else (None, math.inf)

    def changed(sol):
        return np.isin(np.arange(D), sol)

    def accept(_fmask, sol):
        return type("Answer", (), {"j": int(sol[0]), "info": {}})()

    return solve_node, changed, accept, np.zeros(D, dtype=bool)


def test_lawler_solves_no_node_past_its_deadline(nodes):
    solve_node, changed, accept, fmask0 = _table()
    stop = Stop()
    out = stop.take(_lawler.lawler(solve_node, changed, accept, fmask0, deadline=-math.inf,
                                   stop=stop), k=3)  # fmt: skip
    assert len(nodes) == 1  # the root only
    assert [a.j for a in out] == [0] and stop.reason == "time_limit" and _stopped(out)


def test_lawler_says_which_limit_stopped_it(nodes):
    solve_node, changed, accept, fmask0 = _table()
    stop = Stop()
    out = stop.take(_lawler.lawler(solve_node, changed, accept, fmask0, max_nodes=2,
                                   stop=stop), k=5)  # fmt: skip
    assert len(nodes) == 2 and [a.j for a in out] == [0, 1]
    assert stop.reason == "max_nodes" and _stopped(out, "max_nodes")
    # to its end (every node solved), or k answers first: no limit stopped it, none marked
    for k in (None, 2):
        stop = Stop()
        out = list(stop.take(_lawler.lawler(solve_node, changed, accept, fmask0, stop=stop), k))
        assert stop.reason is None and all("enumeration_stopped" not in a.info for a in out)
    assert [a.j for a in out] == [0, 1]


def test_a_lazy_enumeration_ends_at_its_deadline(nodes):
    solve_node, changed, accept, fmask0 = _table()
    stop = Stop()
    it = stop.take(_lawler.lawler(solve_node, changed, accept, fmask0, deadline=-math.inf,
                                  stop=stop), k=None)  # fmt: skip
    assert [a.j for a in it] == [0] and stop.reason == "time_limit" and len(nodes) == 1


# ---------------------------------------------------------------------------- linear
def _binary_iris():
    X, y = load_iris(return_X_y=True)
    model = LogisticRegression(max_iter=2000).fit(X, (y == 2).astype(int))
    return X, model


LINEAR_QUERIES = [
    dict(region=True),
    dict(region=True, metric="manhattan"),  # (the binary Manhattan kernel's case)
    dict(proba=0.9, metric="manhattan"),
    dict(lam=0.1),
    dict(region=True, max_changes=2),
]


@pytest.mark.parametrize("kw", LINEAR_QUERIES, ids=lambda kw: "-".join(map(str, kw.values())))
def test_linear_enumerate_stops_at_its_time_limit(kw, nodes):
    X, model = _binary_iris()
    ex = fastcf.LinearExplainer(model)
    x = X[0]
    full = ex.enumerate(x, 1, k=4, **kw)
    assert len(full) == 4
    nodes.clear()
    alts = ex.enumerate(x, 1, k=4, time_limit=SPENT, **kw)
    assert len(nodes) <= 1 and len(alts) <= 1  # the first node: explain's answer
    assert alts and _stopped(alts)
    assert np.array_equal(alts[0].x, full[0].x)
    for a in alts:  # judged as every answer
        assert a.success and model.predict(a.x[None])[0] == 1
    lazy = list(ex.enumerate(x, 1, k=None, time_limit=SPENT, **kw))
    assert len(lazy) <= 1


@pytest.mark.parametrize("kw", LINEAR_QUERIES, ids=lambda kw: "-".join(map(str, kw.values())))
def test_linear_enumerate_without_a_limit_is_unchanged(kw):
    X, model = _binary_iris()
    ex = fastcf.LinearExplainer(model)
    for row in (0, 50):
        t = 1 - int(model.predict(X[row][None])[0])
        plain = ex.enumerate(X[row], t, k=4, **kw)
        ample = ex.enumerate(X[row], t, k=4, time_limit=1e6, **kw)
        assert len(plain) == len(ample) == 4
        for a, b in zip(plain, ample, strict=True):
            # (the binary Manhattan kernel and the Python scheme: the same answers)
            np.testing.assert_allclose(a.x, b.x, rtol=1e-12, atol=1e-15)
            assert a.distance == pytest.approx(b.distance, rel=1e-12)
            assert "enumeration_stopped" not in a.info and "enumeration_stopped" not in b.info


def test_linear_enumerate_says_when_max_nodes_stopped_it():
    X, y = load_iris(return_X_y=True)
    ex = fastcf.LinearExplainer(LogisticRegression(max_iter=2000).fit(X, y))  # softmax
    alts = ex.enumerate(X[0], 2, k=20, region=True, metric="manhattan", max_nodes=2)
    assert 1 <= len(alts) < 20 and _stopped(alts, "max_nodes")
    alts = ex.enumerate(X[0], 2, k=2, region=True, metric="manhattan")
    assert len(alts) == 2 and all("enumeration_stopped" not in a.info for a in alts)
    # binary Manhattan (the one-kernel scheme's case: the kernel says so too)
    X, model = _binary_iris()
    ex = fastcf.LinearExplainer(model)
    alts = ex.enumerate(X[0], 1, k=20, region=True, metric="manhattan", max_nodes=2)
    assert 1 <= len(alts) < 20 and _stopped(alts, "max_nodes")


# ---------------------------------------------------------------------------- tabular
@pytest.mark.parametrize(
    "clf",
    [LogisticRegression(max_iter=1000), RandomForestClassifier(8, max_depth=3, random_state=0)],
    ids=["linear", "forest"],
)
def test_tabular_enumerate_stops_at_its_time_limit(clf, nodes):
    X, y = tabular_data()
    model = tabular_pipe(clf).fit(X, y)
    tx = fastcf.TabularExplainer(model, X)
    row = X.iloc[np.flatnonzero(model.predict(X) == 0)[:1]]
    full = tx.enumerate(row, 1, k=3)
    assert len(full) == 3 and all("enumeration_stopped" not in a.info for a in full)
    nodes.clear()
    alts = tx.enumerate(row, 1, k=3, time_limit=SPENT)
    assert len(nodes) <= 1 and len(alts) <= 1
    assert _stopped(alts)
    for a in alts:  # confirmed by the pipeline as every answer
        assert a.success and model.predict(a.x)[0] == 1
    ample = tx.enumerate(row, 1, k=3, time_limit=1e6)
    assert [a.distance for a in ample] == [a.distance for a in full]


# ---------------------------------------------------------------------------- LVQ, trees
def test_lvq_enumerate_stops_at_its_time_limit(nodes):
    rng = np.random.default_rng(5)
    P = rng.normal(size=(4, 3))
    ex = LVQExplainer.from_arrays(P, [0, 0, 1, 1], omega=np.eye(3) + 0.3 * rng.normal(size=(3, 3)))
    x = rng.normal(size=3) * 1.5
    t = 1 - int(ex.predict(x[None])[0])
    full = ex.enumerate(x, t, k=3, metric="manhattan")
    assert len(full) == 3
    nodes.clear()
    alts = ex.enumerate(x, t, k=3, metric="manhattan", time_limit=SPENT)
    assert len(nodes) <= 1 and len(alts) <= 1 and _stopped(alts)
    for a in alts:
        assert a.success and ex.predict(a.x[None])[0] == t
    ample = ex.enumerate(x, t, k=3, metric="manhattan", time_limit=1e6)
    assert [a.distance for a in ample] == [a.distance for a in full]


def test_tree_enumerate_stops_at_its_time_limit(nodes):
    X, y = make_classification(200, 3, n_informative=3, n_redundant=0, random_state=3)
    model = RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0).fit(X, y)
    ex = fastcf.TreeExplainer(model)
    x = X[0]
    t = 1 - int(model.predict(x[None])[0])
    assert len(ex.enumerate(x, t, k=3)) == 3
    nodes.clear()
    alts = ex.enumerate(x, t, k=3, time_limit=SPENT)
    assert len(nodes) <= 1 and len(alts) <= 1 and _stopped(alts)
    for a in alts:
        assert a.success and model.predict(a.x[None])[0] == t


# ---------------------------------------------------------------------------- LGMLVQ's CCP
@pytest.fixture(scope="module")
def lgmlvq():
    X, y = load_iris(return_X_y=True)
    return X, LGMLVQ(prototypes_per_class=2, random_state=0, max_iter=200).fit(X, y)


def test_the_penalty_ccp_stops_at_the_rows_time_limit(lgmlvq):
    X, model = lgmlvq
    ex = LVQExplainer(model)
    rows, t = X[[0, 1, 2]], 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (Clarabel's "inaccurate" rounds, if any)
        full = ex.explain(rows, t)
        res = ex.explain(rows, t, time_limit=SPENT)
    assert (full.nit > 1).all() and (full.status == 0).all()
    assert (res.nit <= 1).all()  # (none here: the limit is spent before the first round)
    assert res.success.all() and (res.status == int(Status.MAXITER)).all()
    assert all("time_limit" in m for m in res.message)
    assert (model.predict(res.x) == t).all()  # the model's own verdict
    assert (res.distance >= full.distance - 1e-9).all()
    assert not any(res.info["exact"])
    same = ex.explain(rows, t, time_limit=1e6)
    assert np.array_equal(same.x, full.x) and np.array_equal(same.nit, full.nit)


def test_a_ccp_stopped_before_any_answer_fails_with_the_reason():
    # p_1's start (2, -1) (feature 1 frozen) is won by p_0: no answer without a round; the
    # rounds find (9.75, -1)
    omega = [np.eye(2), np.diag([1.0, 2.0])]  # (local metrics: the penalty CCP)
    ex = LVQExplainer.from_arrays([[0.0, 0.0], [2.0, 2.0]], [0, 1], omega=omega)
    x = np.array([0.0, -1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = ex.explain(x, 1, frozen=[1])
        res = ex.explain(x, 1, frozen=[1], time_limit=SPENT)
    assert full.success and full.nit >= 1
    assert not res.success and res.status == int(Status.MAXITER) and res.nit == 0
    assert "time_limit" in res.message
    np.testing.assert_array_equal(res.x, x)
