"""``enumerate`` returns its answers in the order of the distances returned (issue 53).

Lawler's scheme (:func:`fastcf._lawler.lawler`) pops its nodes by their values, which can
differ from the costs of the answers returned: the linear family's lean values sit up to ~3e-8
above the distances, a tabular answer's margin steps can raise its cost above its node's. The
answers are held and released in the order of their returned costs; the first is ``explain``'s.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris, make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from tree_models import tabular_data, tabular_pipe

import fastcf
from fastcf._lawler import lawler


def _run(values, costs, sets, D, k=None, max_nodes=100):
    """Run the scheme on a table of nodes: ``values[Z]``, ``costs[Z]``, ``sets[Z]`` by Z."""
    solved = []

    def solve_node(fmask):
        key = tuple(np.flatnonzero(fmask))
        solved.append(key)
        return key, values.get(key, np.inf)

    def changed(key):
        S = np.zeros(D, dtype=bool)
        S[list(sets[key])] = True
        return S

    out = lawler(
        solve_node, changed, lambda fmask, key: key, np.zeros(D, dtype=bool), max_nodes,
        cost=lambda key: costs[key],
    )  # fmt: skip
    return list(out), solved


def test_lawler_orders_by_the_cost_returned_not_the_node_value():
    # the root's value is 1.0 but its answer costs 1.0 + 3e-3 (a re-solve's margin step); the
    # child with 0 frozen has value 1.0 + 1e-3 and costs that: cheaper as returned
    values = {(): 1.0, (0,): 1.0 + 1e-3, (1,): 2.0, (0, 1): np.inf}
    costs = {(): 1.0 + 3e-3, (0,): 1.0 + 1e-3, (1,): 2.0}
    sets = {(): {0}, (0,): {1}, (1,): {0}}
    out, _ = _run(values, costs, sets, 2)
    assert out == [(0,), ()]
    assert [costs[a] for a in out] == sorted(costs[a] for a in out)


def test_lawler_drops_an_answer_released_after_a_cheaper_subset():
    # the root's answer changes {0, 1} at cost 1 + 2e-3, the child's with 0 frozen {1} at
    # 1 + 1e-3: returned first, it makes the root's answer (its set contains {1}) dominated
    values = {(): 1.0, (0,): 1.0 + 1e-3, (1,): 3.0, (0, 1): np.inf}
    costs = {(): 1.0 + 2e-3, (0,): 1.0 + 1e-3, (1,): 3.0}
    sets = {(): {0, 1}, (0,): {1}, (1,): {0}}
    out, _ = _run(values, costs, sets, 2)
    assert out == [(0,), (1,)]


def test_lawler_returns_an_answer_within_the_slack_of_its_value_at_once():
    # a cost 3e-8 above the node's value (the linear family's lean gap): the first answer is
    # returned before any child is solved (no waiting for an order beyond rounding)
    import itertools

    values = {(): 1.0, (0,): 1.0, (1,): 2.0, (0, 1): np.inf}
    costs = {(): 1.0 + 3e-8, (0,): 1.0, (1,): 2.0}
    sets = {(): {0, 1}, (0,): {1}, (1,): {0}}
    solved = []

    def solve_node(fmask):
        key = tuple(np.flatnonzero(fmask))
        solved.append(key)
        return key, values[key]

    def changed(key):
        return np.isin(np.arange(2), list(sets[key]))

    gen = lawler(solve_node, changed, lambda fmask, key: key, np.zeros(2, dtype=bool), 100,
                 cost=lambda key: costs[key])  # fmt: skip
    assert list(itertools.islice(gen, 1)) == [()]
    assert solved == [()]


def test_lawler_keeps_the_scheme_order_when_costs_are_values():
    values = {(): 1.0, (0,): 2.0, (1,): 3.0, (0, 1): np.inf}
    sets = {(): {0, 1}, (0,): {1}, (1,): {0}}
    out, _ = _run(values, values, sets, 2)
    assert out == [(), (0,), (1,)]


def _check(ex, x, target, first, alts):
    """The distances are non-decreasing and the first is ``explain``'s (or equal cost)."""
    d = [a.distance for a in alts]
    assert all(a.success for a in alts)
    # (non-decreasing up to lawler's slack, 1e-6 relative: fastcf._lawler)
    assert all(b >= a * (1 - 1e-6) for a, b in zip(d, d[1:], strict=False)), d
    if first.success:
        assert d and d[0] == pytest.approx(first.distance, rel=1e-9, abs=1e-12)
    else:
        assert not d


@pytest.mark.parametrize("metric", ["manhattan", "euclidean"])
@pytest.mark.parametrize("binary", [True, False], ids=["binary", "softmax"])
def test_linear_enumerate_is_in_order_of_the_distances(metric, binary):
    X, y = load_iris(return_X_y=True)
    if binary:
        y = (y == 2).astype(int)
    model = LogisticRegression(max_iter=2000).fit(X, y)
    ex = fastcf.LinearExplainer(model)
    for row in (0, 60, 120):
        x = X[row]
        t = int((model.predict(x[None])[0] + 1) % (2 if binary else 3))
        kw = dict(metric=metric, region=True)
        _check(ex, x, t, ex.explain(x, t, **kw), ex.enumerate(x, t, k=4, **kw))


@pytest.mark.parametrize("metric", ["manhattan", "euclidean"])
def test_lvq_enumerate_is_in_order_of_the_distances(metric):
    rng = np.random.default_rng(5)
    P = rng.normal(size=(4, 3))
    ex = fastcf.LVQExplainer.from_arrays(
        P, [0, 0, 1, 1], omega=np.eye(3) + 0.3 * rng.normal(size=(3, 3))
    )
    X = rng.normal(size=(3, 3)) * 1.5
    for x in X:
        t = 1 - int(ex.predict(x[None])[0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            first = ex.explain(x, t, metric=metric)
            alts = ex.enumerate(x, t, k=4, metric=metric)
        _check(ex, x, t, first, alts)


def test_tree_enumerate_is_in_order_of_the_distances():
    X, y = make_classification(200, 3, n_informative=3, n_redundant=0, random_state=3)
    model = RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0).fit(X, y)
    ex = fastcf.TreeExplainer(model)
    for row in range(3):
        x = X[row]
        t = 1 - int(model.predict(x[None])[0])
        _check(ex, x, t, ex.explain(x, t), ex.enumerate(x, t, k=5))


def test_tabular_enumerate_is_in_order_and_returns_the_rule_on_its_answers():
    X, y = tabular_data()
    model = tabular_pipe(LogisticRegression(max_iter=1000)).fit(X, y)
    ex = fastcf.TabularExplainer(model, X)
    rows = X.iloc[np.flatnonzero(model.predict(X) == 0)[:3]]
    for i in range(len(rows)):
        row = rows.iloc[[i]]
        first = ex.explain(row, 1)
        alts = ex.enumerate(row, 1, k=4)
        _check(ex, row, 1, first, alts)
        # no answer's set of changed columns contains the set of a cheaper one
        sets = [set(a.changed) for a in alts]
        for j, s in enumerate(sets):
            assert not any(t <= s for t in sets[:j]), sets


def test_lawler_branches_on_the_set_of_a_dominated_answer_returned():
    """A node whose answer returned is dominated branches on that answer's set.

    Three features. The root's answer changes {0, 2} (cost 1); with 0 frozen the answer is {1}
    (cost 2). With 2 frozen the node's lean solve changes {0} (value 2 + 1e-8), while its answer
    solved in full changes {0, 1} at cost 2 (a tie with {1}): it contains {1}, dominated. The
    answer {0} alone (cost 2 + 1e-8, the optimum with 1 and 2 frozen) contains neither {0, 2}
    nor {1}: the brute force lists it third. Branching on the lean set {0} froze only 0 below
    the node (answers changing 0 were never looked at again): {0} was lost. Every answer that
    contains the dominated answer's set {0, 1} is dominated, so the scheme branches on it.
    """
    D = 3
    # lean value, lean set, set returned, cost returned, by the frozen set Z
    nodes = {
        (): (1.0, {0, 2}, {0, 2}, 1.0),
        (0,): (2.0, {1}, {1}, 2.0),
        (2,): (2.0 + 1e-8, {0}, {0, 1}, 2.0),
        (0, 2): (2.0, {1}, {1}, 2.0),
        (1, 2): (2.0 + 1e-8, {0}, {0}, 2.0 + 1e-8),
    }

    def solve_node(fmask):
        key = tuple(np.flatnonzero(fmask).tolist())
        return ("lean", key), nodes[key][0] if key in nodes else np.inf

    def mask(s):
        return np.isin(np.arange(D), sorted(s))

    out = lawler(
        solve_node, lambda sol: mask(nodes[sol[1]][1]), lambda fmask, sol: ("full", sol[1]),
        np.zeros(D, dtype=bool), 100, returned=lambda final: mask(nodes[final[1]][2]),
        cost=lambda final: nodes[final[1]][3],
    )  # fmt: skip
    assert [nodes[key][2] for _, key in out] == [{0, 2}, {1}, {0}]
