"""NetExplainer: exact counterfactuals of ReLU networks (scikit-learn MLPClassifier).

Exactness against the brute force over every activation pattern (one linear program each,
``reference.relu_net_brute_force``) on networks of at most 8 hidden neurons; validity by the
model's own ``predict``; the refusals.
"""

import dataclasses
import warnings

import numpy as np
import pytest
from net_models import mlp as fitted_mlp
from reference import relu_net_brute_force
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier

from fastcf import NetExplainer

_mlp = fitted_mlp  # (tests/net_models.py)


CASES = [((4,), 2, 2), ((6,), 3, 2), ((3, 3), 2, 3), ((8,), 2, 3), ((4, 2), 3, 2), ((5,), 4, 4)]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("hidden,D,K", CASES, ids=str)
def test_explain_equals_the_brute_force_over_every_pattern(hidden, D, K, seed):
    mlp, X = _mlp(hidden, D, K, seed)
    ex = NetExplainer(mlp)
    rng = np.random.default_rng(100 + seed)
    lo, hi = -np.ones(D) * 1.5, np.ones(D) * 1.5
    w = rng.uniform(0.5, 2.0, size=D)
    compared = 0  # answers compared with the reference (a feasible one, or infeasibility)
    for i in range(4):
        x0 = X[i]
        for t in range(len(mlp.classes_)):
            if mlp.predict(x0[None])[0] == t:
                continue
            res = ex.explain(x0, mlp.classes_[t], weights=w, bounds=(lo, hi))
            cost, _ = relu_net_brute_force(
                mlp.coefs_, mlp.intercepts_, x0, t, 1e-6, w, lo, hi, binary=K == 2
            )
            compared += 1
            if not np.isfinite(cost):
                assert not res.success and res.status == 3
                continue
            assert res.success, res.message
            assert mlp.predict(res.x[None])[0] == mlp.classes_[t]
            assert np.all(res.x >= lo) and np.all(res.x <= hi)
            assert res.distance == pytest.approx(float(w @ np.abs(res.x - x0)), rel=1e-12)
            assert res.distance == pytest.approx(cost, rel=1e-6, abs=1e-9)
            assert res.info["gap"] == 0.0
    assert compared > 0


@pytest.mark.parametrize("metric,max_changes", [("l0", None), ("manhattan", 1), ("l0", 2)])
@pytest.mark.parametrize("hidden,D,K", [((4,), 3, 2), ((3, 2), 3, 3)], ids=str)
def test_sparse_costs_equal_the_brute_force(hidden, D, K, metric, max_changes):
    mlp, X = _mlp(hidden, D, K, 7)
    ex = NetExplainer(mlp).fit_data(X)
    lo, hi = ex.data_box_
    w = np.array([1.0, 2.0, 0.5])
    for i in range(5):
        x0 = X[i]
        t = (int(np.flatnonzero(mlp.classes_ == mlp.predict(x0[None])[0])[0]) + 1) % K
        res = ex.explain(x0, mlp.classes_[t], weights=w, metric=metric, max_changes=max_changes)
        cost, _ = relu_net_brute_force(
            mlp.coefs_,
            mlp.intercepts_,
            x0,
            t,
            1e-6,
            w,
            np.minimum(lo, x0),
            np.maximum(hi, x0),
            binary=K == 2,
            metric=metric,
            max_changes=max_changes,
        )
        if not np.isfinite(cost):
            assert not res.success
            continue
        assert res.success and mlp.predict(res.x[None])[0] == mlp.classes_[t]
        changed = np.flatnonzero(res.x != x0)
        if max_changes is not None:
            assert changed.size <= max_changes
        assert res.distance == pytest.approx(cost, rel=1e-6, abs=1e-9)


def test_frozen_features_and_proba_of_a_binary_network():
    mlp, X = _mlp((6,), 3, 2, 3)
    ex = NetExplainer(mlp).fit_data(X)
    x0 = X[np.flatnonzero(mlp.predict(X) == 0)[0]]
    res = ex.explain(x0, 1, frozen=[1], proba=0.8)
    assert res.success
    assert res.x[1] == x0[1]
    assert mlp.predict_proba(res.x[None])[0, 1] >= 0.8
    assert res.proba[1] == mlp.predict_proba(res.x[None])[0, 1]
    lo, hi = ex.data_box_
    theta = np.log(0.8 / 0.2)
    cost, _ = relu_net_brute_force(
        mlp.coefs_,
        mlp.intercepts_,
        x0,
        1,
        theta,
        np.ones(3),
        np.minimum(lo, x0),
        np.maximum(hi, x0),
        binary=True,
    )  # (frozen: the reference's box pins it)
    lo2, hi2 = np.minimum(lo, x0), np.maximum(hi, x0)
    lo2[1] = hi2[1] = x0[1]
    cost, _ = relu_net_brute_force(
        mlp.coefs_, mlp.intercepts_, x0, 1, theta, np.ones(3), lo2, hi2, binary=True
    )
    assert res.distance == pytest.approx(cost, rel=1e-6)


def test_a_batch_answers_as_its_rows_and_enumerate_runs():
    mlp, X = _mlp((5,), 3, 3, 11)
    ex = NetExplainer(mlp).fit_data(X)
    targets = [(int(np.flatnonzero(mlp.classes_ == p)[0]) + 1) % 3 for p in mlp.predict(X[:4])]
    batch = ex.explain(X[:4], targets)
    for i in range(4):
        one = ex.explain(X[i], targets[i])
        assert bool(batch.success[i]) == bool(one.success)
        np.testing.assert_array_equal(batch.x[i], one.x)
    alts = ex.enumerate(X[0], targets[0], k=3)
    assert len(alts) >= 1
    assert all(mlp.predict(a.x[None])[0] == targets[0] for a in alts)
    assert all(a.distance <= b.distance for a, b in zip(alts[:-1], alts[1:], strict=True))


def test_time_limit_reports_a_bound_or_fails_honestly():
    mlp, X = _mlp((16, 16), 4, 2, 5, n=300)
    ex = NetExplainer(mlp).fit_data(X)
    x0 = X[0]
    t = 1 - mlp.predict(x0[None])[0]
    full = ex.explain(x0, t)
    quick = ex.explain(x0, t, time_limit=1e-4)
    if quick.success:
        assert mlp.predict(quick.x[None])[0] == t
        assert quick.status in (0, 1)
        assert quick.info["bound"] <= full.distance * (1 + 1e-9) + 1e-12
        assert quick.distance >= full.distance * (1 - 1e-9)
    else:
        assert quick.status == 1 and "time_limit" in quick.message


def test_refusals_name_what_is_wrong():
    mlp, X = _mlp((4,), 2, 2, 0)
    with pytest.raises(ValueError, match="activation='tanh'"):
        NetExplainer(_mlp((4,), 2, 2, 0, activation="tanh")[0])
    with pytest.raises(ValueError, match="not fitted"):
        NetExplainer(MLPClassifier())
    with pytest.raises(TypeError, match="MLPClassifier"):
        NetExplainer(object())
    ex = NetExplainer(mlp)
    with pytest.raises(ValueError, match="finite box"):
        ex.explain(X[0], 1)
    with pytest.raises(ValueError, match="max_changes"):
        ex.explain(X[0], 1, bounds=(-1, 1), metric="euclidean", max_changes=0)
    with pytest.raises(ValueError, match="3 features but the model expects 2"):
        ex.explain(np.zeros(3), 1, bounds=(-1, 1))
    with pytest.raises(ValueError, match="margin"):
        ex.explain(X[0], 1, bounds=(-1, 1), margin=-1.0)
    with pytest.raises(ValueError, match="proba"):
        ex.explain(X[0], 1, bounds=(-1, 1), proba=1.0)


def test_an_unreachable_target_in_the_box_is_infeasible():
    mlp, X = _mlp((4,), 2, 2, 1)
    ex = NetExplainer(mlp)
    x0 = X[0]
    t = 1 - mlp.predict(x0[None])[0]
    res = ex.explain(x0, t, bounds=(x0, x0))  # nothing may move
    assert not res.success and res.status == 3
    np.testing.assert_array_equal(res.x, x0)


def test_a_scaled_pipeline_is_answered_on_the_raw_features():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 3)) * [1.0, 100.0, 0.01] + [5.0, -300.0, 0.0]
    y = ((X[:, 0] - 5) * (X[:, 1] + 300) > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipe = make_pipeline(StandardScaler(), MLPClassifier((5,), max_iter=500, random_state=0))
        pipe.fit(X, y)
    ex = NetExplainer(pipe).fit_data(X)
    sc, mlp = pipe[0], pipe[-1]
    # the network on raw features, folded by hand: W (x − μ) / σ
    coefs = [mlp.coefs_[0] / sc.scale_[:, None]] + list(mlp.coefs_[1:])
    inter = [mlp.intercepts_[0] - (sc.mean_ / sc.scale_) @ mlp.coefs_[0]] + list(
        mlp.intercepts_[1:]
    )
    w = 1.0 / ex.mad_
    lo, hi = ex.data_box_
    for i in range(4):
        x0 = X[i]
        t = 1 - int(pipe.predict(x0[None])[0])
        res = ex.explain(x0, t, weights="mad")
        cost, _ = relu_net_brute_force(coefs, inter, x0, t, 1e-6, w, lo, hi, binary=True)
        assert res.success and pipe.predict(res.x[None])[0] == t
        assert res.distance == pytest.approx(cost, rel=1e-6)


def test_the_front_door_routes_a_network_and_takes_the_training_box():
    import fastcf

    mlp, X = _mlp((4,), 2, 2, 2)
    assert type(fastcf.explainer_for(mlp)).__name__ == "NetExplainer"
    x0 = X[0]
    t = 1 - int(mlp.predict(x0[None])[0])
    res = fastcf.counterfactual(mlp, x0, t, X_train=X, max_changes=1)
    assert res.success and mlp.predict(res.x[None])[0] == t
    assert np.count_nonzero(res.x != x0) <= 1
    with pytest.raises(ValueError, match="activation='tanh'"):
        fastcf.explainer_for(_mlp((4,), 2, 2, 0, activation="tanh")[0])


def test_exact_false_is_a_valid_answer_with_a_certified_bound():
    mlp, X = _mlp((8, 4), 3, 2, 6, n=300)
    ex = NetExplainer(mlp).fit_data(X)
    seen = 0
    for i in range(6):
        x0 = X[i]
        t = 1 - int(mlp.predict(x0[None])[0])
        best = ex.explain(x0, t)
        quick = ex.explain(x0, t, exact=False)
        assert quick.success and mlp.predict(quick.x[None])[0] == t
        assert quick.info["exact"] is False
        assert quick.info["bound"] <= best.distance * (1 + 1e-9) + 1e-12
        assert quick.distance >= best.distance * (1 - 1e-9)
        if quick.status == 0:
            assert quick.distance == pytest.approx(best.distance, rel=1e-9)
        else:
            assert quick.status == 1 and quick.info["gap"] > 0
        seen += 1
    assert seen == 6
    # without training rows (no fit_data): the greedy moves from x̄ (Manhattan); with L0, no
    # incumbent: the exact program answers
    t0 = 1 - int(mlp.predict(X[:1])[0])
    bare = NetExplainer(mlp).explain(X[0], t0, bounds=(-1, 1), exact=False)
    full = NetExplainer(mlp).explain(X[0], t0, bounds=(-1, 1))
    assert bare.success and mlp.predict(bare.x[None])[0] == t0
    assert bare.info["bound"] <= full.distance * (1 + 1e-9) <= bare.distance * (1 + 2e-9)
    l0 = NetExplainer(mlp).explain(X[0], t0, bounds=(-1, 1), exact=False, metric="l0")
    assert l0.success and l0.status == 0 and l0.message == "milp: optimal"


@pytest.mark.parametrize(
    "hidden,D,K,metric,activation",
    [((4,), 2, 2, "manhattan", "relu"), ((3, 3), 2, 3, "manhattan", "relu"),
     ((8,), 2, 3, "manhattan", "relu"), ((4, 2), 3, 2, "manhattan", "relu"),
     ((5,), 4, 4, "manhattan", "relu"), ((4,), 3, 2, "l0", "relu"),
     ((3, 2), 3, 3, "l0", "relu"), ((4,), 3, 3, "manhattan", "identity")],
    ids=str,
)  # fmt: skip
def test_exact_false_bounds_the_brute_force_optimum(hidden, D, K, metric, activation):
    """exact=False against the brute force over every pattern: a valid answer that costs at
    least the optimum, a reported bound at most the optimum, and status 0 only where that
    bound proves the answer (fastcf._net.answer.PROVEN)."""
    from fastcf._net.answer import PROVEN

    for seed in range(3):
        mlp, X = _mlp(hidden, D, K, seed, activation=activation)
        ex = NetExplainer(mlp).fit_data(X)
        lo, hi = ex.data_box_
        w = np.random.default_rng(seed).uniform(0.5, 2.0, size=D)
        for i in range(4):
            x0 = X[i]
            t = (int(np.flatnonzero(mlp.classes_ == mlp.predict(x0[None])[0])[0]) + 1) % K
            res = ex.explain(x0, mlp.classes_[t], weights=w, metric=metric, exact=False)
            opt, _ = relu_net_brute_force(
                mlp.coefs_, mlp.intercepts_, x0, t, 1e-6, w, np.minimum(lo, x0),
                np.maximum(hi, x0), binary=K == 2, metric=metric, relu=activation == "relu",
            )  # fmt: skip
            if not np.isfinite(opt):
                assert not res.success
                continue
            assert res.success, res.message
            assert mlp.predict(res.x[None])[0] == mlp.classes_[t]
            assert np.all(res.x >= np.minimum(lo, x0)) and np.all(res.x <= np.maximum(hi, x0))
            assert res.distance >= opt * (1 - 1e-9) - 1e-12
            bound = res.info["bound"]
            assert 0.0 <= bound <= opt * (1 + 1e-9) + 1e-12
            assert bound <= res.distance
            if res.status == 0:
                assert bound >= res.distance * (1 - PROVEN) - 1e-12
            else:
                assert res.status == 1 and res.info["gap"] > 0


def test_a_network_query_after_a_tree_program_in_the_same_process():
    """HiGHS's task scheduler is one per process, made by its first run: a network program that
    asked another thread count than a tree program solved before it failed ("the external
    solver failed"; the doctests of fastcf/bench/trees.py then fastcf/net.py)."""
    from fastcf.bench.trees import plain_answer, tree_problem

    model, tex, Q, T = tree_problem(n_rows=300, n_trees=3, depth=2, n_queries=1)
    plain_answer(tex, Q[0], T[0])  # the full tree program: HiGHS runs
    mlp, X = _mlp((4,), 2, 2, 0)
    res = NetExplainer(mlp).fit_data(X).explain(X[0], 1 - int(mlp.predict(X[:1])[0]))
    assert res.success and res.status == 0


@pytest.mark.parametrize("hidden,K,seed", [((8, 8), 2, 0), ((6, 6, 6), 2, 1), ((10, 6), 3, 2)])
def test_the_search_equals_highs_program_on_deeper_networks(hidden, K, seed):
    """The exact Manhattan search (bounds tightened by LPs, our own branching: fastcf/_net/search)
    against HiGHS's mixed-integer program over the box's interval bounds, on networks too large
    for the brute force; layers after the first are what the tightening changes."""
    from fastcf._net import answer as _answer

    mlp, X = _mlp(hidden, 3, K, seed, n=300)
    ex = NetExplainer(mlp).fit_data(X)
    w = np.random.default_rng(seed).uniform(0.5, 2.0, size=3)
    searched = 0
    for i in range(5):
        x0 = X[i]
        t = mlp.classes_[(int(mlp.predict(x0[None])[0]) + 1) % K]
        res = ex.explain(x0, t, weights=w)
        Xq, _, names, tidx = ex._queries(x0, t)
        q = _answer.query(ex, Xq, names, True, None, 1e-6, "manhattan", w, None, None, None,
                          None)  # fmt: skip
        ref = _answer.answer(ex, Xq, tidx, q, plain=True)
        assert res.success and ref.success[0], (res.message, ref.message)
        assert mlp.predict(res.x[None])[0] == t
        assert res.distance == pytest.approx(float(ref.distance[0]), rel=1e-6, abs=1e-9)
        searched += res.message.startswith("search")
    assert searched >= 1


def _set_weights(coefs, intercepts, classes):
    """An MLPClassifier (fitted once for its attributes) holding exactly these weights."""
    D, K = len(coefs[0]), len(classes)
    hidden = tuple(len(c[0]) for c in coefs[:-1])
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12 * K, D))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp = MLPClassifier(hidden, max_iter=2, random_state=0).fit(X, np.arange(12 * K) % K)
    mlp.coefs_ = [np.array(c) for c in coefs]
    mlp.intercepts_ = [np.array(b) for b in intercepts]
    return mlp


def _optimal_for_class_0(mlp, x0, w, lo, hi):
    """Assert that a binary network's Manhattan answer for class 0 is the brute force's optimum."""
    res = NetExplainer(mlp).explain(x0, 0, bounds=(lo, hi), weights=w)
    cost, xr = relu_net_brute_force(mlp.coefs_, mlp.intercepts_, x0, 0, 1e-6, w, lo, hi,
                                    binary=True)  # fmt: skip
    assert mlp.predict(xr[None])[0] == 0
    assert res.success and res.status == 0, res.message
    assert mlp.predict(res.x[None])[0] == 0
    assert np.all((res.x >= lo) & (res.x <= hi))
    assert res.distance <= cost * (1 + 1e-6) + 1e-9, (res.distance, cost)


# found by a soak of networks with weights of 10^±3 (now soak_net.py's wild weights; its first
# run, seed 3, examples 11 and 18): HiGHS's answer
# was no point of the network (a binary within its integrality tolerance of 0 let u·a ~ 0.7
# through an "off" ReLU whose big-M bound u was 1.8e7: x̄ itself at cost 0, its logit 716 short;
# or a point whose logit was 0 where the margin asked 1e-6), the judge refused it round after
# round, and a solvable query came back a numerical failure
_LEAKS = [
    (
        [[[0.0, 0.0], [210.47315696555015, 582.9410813632429],
          [0.006475978731831243, -74.29352599395791]],
         [[0.03528534558181797, 392.20741819553797], [-71.2159617273504, 9667.878027383309]],
         [[0.007745316076449554, 0.003115816027887121, 0.0393885486925884],
          [1015.4083039932896, -0.04180784967904156, -53.94859463554469]]],
        [[0.0, 0.03327564841817356], [-0.004382979419837172, 0.0],
         [-715.8723694932191, 0.25747359453511787, 0.6779632671595288]],
        [-1.270940574710242, -0.9433217129972782, -0.5475027845942875], 0, "manhattan",
        ([-1.9132972, -1.75891906, -1.05197794], [3.0157615, 3.03408536, 0.69898177]),
        [2.76275846, 5.68295766, 2.3229982],
    ),
    (
        [[[0.7436935508761575, -0.006500361501386939, 2451.664531926893, 0.0026757558925053935],
          [-313.0451467526571, 8011.400051337839, 7156.3606983183845, 55.27524625051755],
          [-313.0451467526571, 8011.400051337839, 7156.3606983183845, 55.27524625051755]],
         [[344.17935013878605], [-352.0778650510368], [0.009682388597927588],
          [-0.797821810911335]]],
        [[-72.26971432147207, 261.6656590687087, 0.3035137952839868, -72.26971432147207], [0.0]],
        [-0.00255776558892018, 1.674226156767499, -0.6397629391346471], 1, "l0",
        ([-1.00066483, -2.33875196, -1.94977291], [1.98485842, 4.35566648, 4.00408698]),
        [7.14800749, 1.23352496, 5.74224741],
    ),
]  # fmt: skip


@pytest.mark.parametrize("case", range(len(_LEAKS)))
def test_a_program_answer_off_the_network_is_repaired_regression(case):
    coefs, intercepts, x0, t, metric, (lo, hi), w = _LEAKS[case]
    K = len(intercepts[-1])
    mlp = _set_weights(coefs, intercepts, range(max(K, 2)))
    x0, lo, hi, w = (np.array(v) for v in (x0, lo, hi, w))
    res = NetExplainer(mlp).explain(x0, t, bounds=(lo, hi), weights=w, metric=metric)
    cost, xr = relu_net_brute_force(mlp.coefs_, mlp.intercepts_, x0, t, 1e-6, w, lo, hi,
                                    binary=K == 1, metric=metric)  # fmt: skip
    assert xr is not None and mlp.predict(xr[None])[0] == t  # solvable, as the model says
    assert res.success and res.status == 0, res.message
    assert mlp.predict(res.x[None])[0] == t
    assert np.all((res.x >= lo) & (res.x <= hi))
    assert res.distance <= cost * (1 + 1e-6) + 1e-9


def test_an_undecided_euclidean_relaxation_is_not_pruned_regression():
    # soak_net.py, seed 31, example 1018: Clarabel stopped at MaxIterations on a node of the
    # Euclidean branch-and-bound (weights 7267 and 644 meet), the node was pruned as if
    # infeasible, and an answer 2.2× the optimum was reported optimal
    coefs = [[[0.004229267423613124, 0.007663174440490596, -11.287705332575552],
              [-0.42957954949085286, 7267.470673331414, 87.8499237376779],
              [-3.7673038281008138, -0.04673146417383778, 0.4224888589039246]],
             [[-0.09936106798192045, -644.0908746832573, 0.008499406940474807],
              [-0.09936106798192045, -644.0908746832573, 0.008499406940474807],
              [372.6796587104417, 361.31299844579, 699.7933869246858]]]  # fmt: skip
    intercepts = [[6.144271440851085, 0.0, -153.71401276120827],
                  [-0.9551504765491963, 0.0, -89.03239189606884]]  # fmt: skip
    mlp = _set_weights(coefs, intercepts, range(3))
    x0 = np.array([0.5768328788548069, -0.9781314845441651, -0.8441204293425524])
    w = np.array([0.11031721, 1.62904528, 4.98879125])
    lo, hi = -2.48309864 * np.ones(3), 2.48309864 * np.ones(3)
    res = NetExplainer(mlp).explain(x0, 2, bounds=(lo, hi), weights=w, metric="euclidean")
    cost, xr = relu_net_brute_force(mlp.coefs_, mlp.intercepts_, x0, 2, 1e-6, w, lo, hi,
                                    binary=False, metric="euclidean")  # fmt: skip
    assert mlp.predict(xr[None])[0] == 2  # (the brute force's point: 1.774, the model agrees)
    assert res.success and mlp.predict(res.x[None])[0] == 2
    if res.status == 0:  # proven optimal: then it is the optimum
        assert res.distance <= cost * (1 + 1e-6) + 1e-9, (res.distance, cost)
    else:  # or honestly unproven
        assert "undecided" in res.message


def test_a_target_reached_only_on_a_tie_is_answered_regression():
    # soak_net.py, seed 32, example 1289: target 0 of a binary network is reached only where
    # every ReLU is off and the logit is exactly 0 (a tie, which the model gives to class 0).
    # The program's point at margin 1e-6 is no point of the network at that margin, but is the
    # model's answer on the tie: it is kept, not repaired into "infeasible"
    coefs = [[[-2.1091691365627314, -0.08385996638806914, -0.33157780818702326],
              [0.8016761880706871, -0.9802503429901241, -0.008840061019112134],
              [-0.008194867145840962, 586.3888333867901, -3636.7029876693823],
              [41.97884271784516, -0.668635126130546, -172.0881168134063]],
             [[-7138.6782283380735, -763.2645675511492, 0.26811385561928647],
              [0.7308602375436537, 3521.54487024611, 0.3844426539755499],
              [-22.825061324382908, -4.848757093723243, -322.7345095297772]],
             [[3460.0888167775715], [811.8394719051189], [0.012955091121041526]]]  # fmt: skip
    intercepts = [[-0.04424116962479967, 0.08335374952911209, 4016.571685334794],
                  [39.160634335393766, -790.4012310507319, -572.3153273939462], [0.0]]  # fmt: skip
    mlp = _set_weights(coefs, intercepts, range(2))
    x0 = np.array([-0.19030415828078606, 0.6288767986851085, 0.4886792513115148,
                   -0.7269609717447376])  # fmt: skip
    w = np.array([0.46701869, 2.56883037, 0.38878849, 9.27216113])
    lo, hi = -2.79260323 * np.ones(4), 2.79260323 * np.ones(4)
    res = NetExplainer(mlp).explain(x0, 0, bounds=(lo, hi), weights=w)
    # (the brute force's LP at margin 1e-6 stops on the tie, within its tolerance)
    cost, xr = relu_net_brute_force(mlp.coefs_, mlp.intercepts_, x0, 0, 1e-6, w, lo, hi,
                                    binary=True)  # fmt: skip
    assert mlp.predict(xr[None])[0] == 0  # (on the tie: the model's rule gives it class 0)
    assert res.success and res.status == 0, res.message
    assert mlp.predict(res.x[None])[0] == 0
    assert res.distance <= cost * (1 + 1e-6) + 1e-9


def test_highs_false_infeasible_is_looked_at_again_regression():
    # soak_net.py, seed 38, example 249: HiGHS (integrality tolerance 1e-6) took a relaxation
    # point whose binary was 1.25e-8 for an integer solution (1e-6 leaking through an "off"
    # ReLU of bound 1.8e4), rejected it, and ended "infeasible" on a program whose optimum
    # costs 0.584 (and the incumbent search had found nothing): the answer was "no point of
    # the box". An "infeasible" is now solved once more at a tolerance of 1e-9
    coefs = [[[36.027019390984485, 0.09109377104176222, 0.00831457854085365],
              [0.005709716383228767, -41.10107810305685, -9341.506294509856],
              [0.0, 0.0, 0.0]],
             [[-5324.134883071194, 576.6570983833457, 0.001035062099769541],
              [5664.544704177418, -0.09780300848454095, -0.5920170729626553],
              [4.463535669302649, 0.8118038943751413, 0.3169364652374225]]]  # fmt: skip
    intercepts = [
        [-0.005130969086374284, 0.0070694358208637335, 0.0070694358208637335],
        [-0.013836050768494678, -0.008277463861503253, -0.013836050768494678],
    ]
    mlp = _set_weights(coefs, intercepts, range(3))
    x0 = np.array([-0.7505081009653181, 0.30714986264572364, 0.7079086644963937])
    w = np.array([4.1197198, 1.90182506, 1.90851965])
    lo, hi = -1.90544529 * np.ones(3), 1.90544529 * np.ones(3)
    assert mlp.predict(x0[None])[0] != 0
    res = NetExplainer(mlp).explain(x0, 0, bounds=(lo, hi), weights=w)
    cost, xr = relu_net_brute_force(
        mlp.coefs_, mlp.intercepts_, x0, 0, 1e-6, w, lo, hi, binary=False
    )
    assert mlp.predict(xr[None])[0] == 0
    assert res.success and res.status == 0, res.message
    assert mlp.predict(res.x[None])[0] == 0
    assert np.all((res.x >= lo) & (res.x <= hi))
    assert res.distance <= cost * (1 + 1e-6) + 1e-9, (res.distance, cost)


def test_a_euclidean_tie_answer_keeps_its_off_neurons_off_in_the_model_regression():
    # soak_net.py, seed 41, example 186: target 0 equals class 2 wherever the second layer is
    # off (the same bias, and class 0 never above class 2 otherwise): reachable only on that
    # tie, which the model gives to the first class. The QP's point lay on the face of a
    # neuron that must be off (z ~ 0); the model's own sums left it on by a rounding, its
    # leak made class 2 win, and the answer ended a "numerical failure". The tie's answer is
    # now solved again with the off neurons beyond their rounding
    coefs = [[[-45.584746490962104, -0.09323882712948123],
              [-0.015133639292211553, 0.06798908066435537]],
             [[-6497.058742121734, 94.46895783728154],
              [0.037396375410422324, -493.210365407069]],
             [[-0.001008919636154027, -0.0027246155802175672, 0.7995848465186688],
              [-0.001008919636154027, -0.0027246155802175672, 0.7995848465186688]]]  # fmt: skip
    intercepts = [
        [-0.07666842518507379, 0.0],
        [0.0, -55.02716908359493],
        [33.58496528863455, -29.844396932047434, 33.58496528863455],
    ]
    mlp = _set_weights(coefs, intercepts, range(3))
    x0 = np.array([-0.5660353700951755, 0.1641635584463812])
    w = np.array([0.32345963, 1.50019456])
    lo, hi = -2.63971771 * np.ones(2), 2.63971771 * np.ones(2)
    assert mlp.predict(x0[None])[0] != 0
    res = NetExplainer(mlp).explain(x0, 0, bounds=(lo, hi), weights=w, metric="euclidean")
    assert res.success and res.status == 0, res.message
    assert mlp.predict(res.x[None])[0] == 0
    assert np.all((res.x >= lo) & (res.x <= hi))
    # the tie's optimum by the brute force (margin 0: on the tie), the answer ε above it
    with warnings.catch_warnings():  # (Clarabel calls its solution "inaccurate" here)
        warnings.simplefilter("ignore", UserWarning)
        cost, xr = relu_net_brute_force(
            mlp.coefs_, mlp.intercepts_, x0, 0, 0.0, w, lo, hi, binary=False, metric="euclidean"
        )
    assert cost <= res.distance <= cost * (1 + 1e-6) + 1e-9, (res.distance, cost)


def test_a_tie_cheaper_than_the_margin_answer_is_found_regression():
    # soak_net.py, seed 32, example 571: the cheapest point of target 0 lies where every ReLU
    # is off and the logit is exactly 0 (a tie, which the model gives to class 0): 5.415; the
    # program at margin 1e-6 misses it and answered 6.049, called optimal. The tie's program
    # is now solved too, below the margin answer's cost
    coefs = [[[0.08427009352879054, 4.676502599014082, 38.62707124107441],
              [0.0023861579870702396, -2.546768754668964, 8194.244557542159],
              [115.82401247734072, 8.329203342968555, -7.315284488969844],
              [-0.009064205978235965, -3755.521750501669, -0.996973492395333]],
             [[-0.08261704229283595], [0.0], [7053.687370430506]]]  # fmt: skip
    intercepts = [[0.006590679497667203, 110.9011122907361, 110.9011122907361], [0.0]]
    mlp = _set_weights(coefs, intercepts, range(2))
    x0 = np.array([0.32112846619883917, 0.8022915120216856, -0.7553964445156012,
                   -0.9116050901776729])  # fmt: skip
    w = np.array([0.50743283, 6.61881684, 0.84572101, 0.75778754])
    lo, hi = -2.4952238 * np.ones(4), 2.4952238 * np.ones(4)
    res = NetExplainer(mlp).explain(x0, 0, bounds=(lo, hi), weights=w, frozen=[3])
    lo[3] = hi[3] = x0[3]
    cost, xr = relu_net_brute_force(mlp.coefs_, mlp.intercepts_, x0, 0, 1e-6, w, lo, hi,
                                    binary=True)  # fmt: skip
    assert mlp.predict(xr[None])[0] == 0  # (on the tie: the model's rule gives it class 0)
    assert res.success and res.status == 0, res.message
    assert mlp.predict(res.x[None])[0] == 0
    assert np.all((res.x >= lo) & (res.x <= hi))
    assert res.distance <= cost * (1 + 1e-6) + 1e-9, (res.distance, cost)


# soak_net.py seed 62, example 36 (binary, wild weights): the optimum of row 0 lies on a tie
# (its logit exactly 0, which predict gives class 0, the target)
_TIE_BATCH = (
    [[[0.007307795413419743, 3399.652059293576, 0.09084087979973779, 156.22596219187102],
      [2.847637633593735, -97.32517000204025, 829.6256757722858, -214.78359956280838],
      [0.7318531958792986, -745.342764225235, 998.7704180274281, 0.42441492339718273],
      [45.055244711910625, 89.60884609717465, 1.5434867474860003, -0.04135947592005043]],
     [[0.007987554885192207], [31.864701942231033], [59.55371446530326], [540.2525126908918]]],
    [[-53.16318011205814, -0.08131414418115515, -90.92383005812965, 70.14179623476483], [0.0]],
    [[0.05157318909657982, 0.3317553230444008, 0.10638972587971529, 0.87703765809906],
     [-0.2680475656867203, 0.8686431140717237, -0.3371532969558195, 0.7472882458792309],
     [0.562075670633482, 0.0951678175247137, 0.46765413562247926, 0.6649515260701355]],
    [0.16721219, 3.59586147, 2.86280498, 0.14657107],
)  # fmt: skip
_TIE_X0 = ("-0x1.bd3b6ee0d02a4p-5", "0x1.53b7aadaff9b7p-2", "-0x1.7cb1ead0101fep-3",
           "0x1.c10b1475cab26p-1")  # fmt: skip


def _tie_batch():
    coefs, biases, X, w = _TIE_BATCH
    box = (np.full(4, -1.08620327), np.full(4, 1.08620327))
    return _set_weights(coefs, biases, range(2)), np.array(X), np.array(w), box


def test_a_batch_answer_is_judged_as_its_row_alone_regression():
    # the batch's answer for row 0 was judged with the three rows stacked, whose product
    # rounded its logit to 0, while the row alone (as a user checks it) has a logit above 0:
    # class 1, a false success
    mlp, X, w, box = _tie_batch()
    ex = NetExplainer(mlp)
    batch = ex.explain(X, np.array([0, 1, 0]), weights=w, bounds=box)
    one = ex.explain(X[0], 0, weights=w, bounds=box)
    assert one.success and mlp.predict(one.x[None])[0] == 0
    for i, t in enumerate([0, 1, 0]):
        r = batch[i]
        assert r.success, r.message
        assert mlp.predict(r.x[None])[0] == t  # the row alone, as a user checks it
    assert batch[0].distance == pytest.approx(one.distance, rel=1e-9)


def test_verify_model_asks_each_answer_alone_regression():
    # the answer the batch judge used to pass (row 0's bits as they were): the three rows
    # stacked put it in class 0, the row alone in class 1; verify="model" asked the stack
    from fastcf._confirm import confirm
    from fastcf.results import CounterfactualBatch

    mlp, X, w, box = _tie_batch()
    x0 = np.array([float.fromhex(h) for h in _TIE_X0])
    Xs = np.vstack([x0, X[1], X[2]])
    assert mlp.predict(Xs)[0] == 0 and mlp.predict(x0[None])[0] == 1  # the premise
    res = NetExplainer(mlp).explain(X, np.array([0, 1, 0]), weights=w, bounds=box)
    res = dataclasses.replace(res, x=Xs)
    assert isinstance(res, CounterfactualBatch)
    out = confirm(mlp, res, mlp.classes_)
    assert not out.success[0] and out.status[0] == 4


def test_a_program_point_off_its_pattern_is_not_called_optimal_regression():
    # soak_net.py seed 61, example 39 (three classes, wild weights, two equal rows, a frozen
    # feature): HiGHS's point (0.5748) leaked through its tolerance, the closest point of its
    # activation pattern cost 0.5810, and that was returned as "optimal"; the optimum, in
    # another pattern, is the brute force's 0.5755
    coefs = [
        [[-2171.1943644495736, -16.713342209460215, 6407.559744116725, -0.006436728570324071,
          90.89811092942688],
         [-1.282364235252599, -0.020089581498171107, 0.010094743972410853, -2596.9567549690673,
          -50.62870977631072],
         [-2171.1943644495736, -16.713342209460215, 6407.559744116725, -0.006436728570324071,
          90.89811092942688]],
        [[-44.03517416633953, -73.46952436976916, 0.06634863517984906],
         [0.007598072183751343, 0.00809476111814271, -5355.416435949665],
         [559.4432312110716, -29.68124637023273, 43.32708707451214], [0.0, 0.0, 0.0],
         [0.4297933941934452, 0.09353301406229945, -0.009757331723299656]],
    ]  # fmt: skip
    biases = [[-3.0188326889504964, -904.7231902739759, 0.006097238358345937, 0.0,
               -3.2127280012957526],
              [-8.936272436199971, 0.4467980961057711, 0.022848419371926765]]  # fmt: skip
    x0 = np.array([-0.4619476317174249, -0.49635566358570893, -0.3894343381026506])
    w = np.array([0.67599178, 0.12104939, 2.68685407])
    lo, hi = np.full(3, -2.20536567), np.full(3, 2.20536567)
    mlp = _set_weights(coefs, biases, range(3))
    res = NetExplainer(mlp).explain(x0, 0, weights=w, bounds=(lo, hi), frozen=[2])
    flo, fhi = lo.copy(), hi.copy()
    flo[2] = fhi[2] = x0[2]  # (the frozen feature)
    cost, xr = relu_net_brute_force(mlp.coefs_, mlp.intercepts_, x0, 0, 1e-6, w, flo, fhi,
                                    binary=False)  # fmt: skip
    assert xr is not None and mlp.predict(xr[None])[0] == 0
    assert res.success and mlp.predict(res.x[None])[0] == 0, res.message
    assert res.distance <= cost * (1 + 1e-6) + 1e-9, (res.distance, cost, res.message)
    alts = NetExplainer(mlp).enumerate(x0, 0, k=3, weights=w, bounds=(lo, hi), frozen=[2])
    d = [a.distance for a in alts]
    assert d == sorted(d) and d[0] == pytest.approx(res.distance, rel=1e-12)


def test_a_proba_cut_within_the_programs_tolerance_is_taken_further_inside_regression():
    # soak_net.py, seed 49, example 33 (three classes, logits of ~1e6): the answer of proba=τ
    # missed τ by 1.6e-6 on its logits and each tangent cut at it (1e-6 inside) lay within the
    # linear program's tolerance of it (its rows met to ~1e-12 of their terms): the same point
    # came back 40 times and the query was given up ("numerical failure") where the brute force
    # answers at 0.104. A cut the answer misses, or an answer that comes back unmoved, now
    # takes the next cuts further inside
    coefs = [[[9133.769807626164, 0.8118565063873465, -1625.9387460466628],
              [-4.56823136983957, -906.532981555697, -324.31873589991153]],
             [[-490.27560568375463, -209.71696428108032, 611.9619309658543],
              [-1.1062993030876351, 0.02899446823342391, -7335.679765392185],
              [275.19572819012063, -3.822225176445373, -0.05965565973804785]],
             [[-0.05425443371101779, 40.25698379686814, 6.990211288557564],
              [-0.05425443371101779, 40.25698379686814, 6.990211288557564],
              [9750.271887020273, -3287.5985581796904, 0.5733401275454478]]]  # fmt: skip
    intercepts = [
        [-0.15380926692564367, 0.06074360849375375, 0.06074360849375375],
        [-2.403575190960484, 3913.5937653960505, 1743.0959222489114],
        [-6.567122120218633, 0.939528587054547, -646.1601114021179],
    ]
    mlp = _set_weights(coefs, intercepts, range(3))
    x0 = np.array([-0.06385005507869557, 0.5115636363960943])
    w = np.array([1.7332678406613593, 0.20344444242756313])
    lo, hi = -1.5514897715867004 * np.ones(2), 1.5514897715867004 * np.ones(2)
    tau = 0.6398283616285965
    assert mlp.predict_proba(x0[None])[0, 1] < tau
    res = NetExplainer(mlp).explain(x0, 1, bounds=(lo, hi), weights=w, proba=tau)
    assert res.success and res.status == 0, res.message
    assert mlp.predict(res.x[None])[0] == 1
    assert mlp.predict_proba(res.x[None])[0, 1] >= tau
    assert np.all((res.x >= lo) & (res.x <= hi))
    # (the brute force: one exponential-cone program per pattern, as tests/test_net_proba.py)
    from reference import relu_net_proba_brute_force

    theta = np.log(tau) - np.log1p(-tau)
    cost, _ = relu_net_proba_brute_force(mlp.coefs_, mlp.intercepts_, x0, 1, tau, w, lo, hi,
                                         margin=theta + 1e-6, slack=1e-6)  # fmt: skip
    assert np.isfinite(cost)
    assert res.distance <= cost * (1 + 1e-6) + 1e-9, (res.distance, cost)


def test_highs_does_not_prune_a_cheaper_pattern_within_its_tolerance_regression():
    # soak_net.py, seed 39, example 233 (binary, weights up to 7 198, a logit slope of ~1e10
    # in one feature): HiGHS's zero gap still prunes every node whose bound is not its
    # mip_feasibility_tolerance (1e-6, absolute) below the incumbent's cost; the answer came in
    # a pattern 3.2e-7 dearer (on a cost of 0.0816: 3.9e-6 relative) than the brute force's and
    # was called optimal. The costs are now scaled (fastcf._net.program.COST_SCALE)
    coefs = [[[3.12609394236607, -0.009862260691927346, 0.007560563824452512],
              [-6352.109395623409, 599.8419280846894, 7197.85180978049],
              [-7.4739981617816555, 1653.283777168768, 40.55315228421147],
              [0.750771922346674, 706.0749072827505, -0.6942881474742462]],
             [[-6584.8923167843495, -0.7480646855698206],
              [-24.16952635209444, 0.00812818951054605],
              [-7.407615547949413, -435.0621219993192]],
             [[-5643.5224086722765], [-5643.5224086722765]]]  # fmt: skip
    intercepts = [[-32.95415272337695, 8.817667378750613, 0.0], [-0.6532620362092796, 0.0],
                  [0.19611615942319544]]  # fmt: skip
    mlp = _set_weights(coefs, intercepts, range(2))
    x0 = np.array([0.38345889360055874, 0.31337742192568085, 0.037401883755151966,
                   0.564937170986133])  # fmt: skip
    w = np.array([6.005580105488147, 0.2602102178242318, 1.811731206779277, 1.11511484854975])
    lo, hi = -1.3734480846692831 * np.ones(4), 1.3734480846692831 * np.ones(4)
    assert mlp.predict(x0[None])[0] != 0
    _optimal_for_class_0(mlp, x0, w, lo, hi)


def test_the_network_program_keeps_highs_default_feasibility_tolerance_regression():
    # soak_net.py, seed 39, example 49 (L0, three classes, logits of 3e7): with HiGHS's
    # mip_feasibility_tolerance lowered to 1e-9 (against the pruning of seed 39, example 233)
    # this program ended in a solver error ("the external solver failed") where the default
    # tolerance answers at 0.130; example 203 (below) was called "infeasible". The costs are
    # scaled instead (fastcf._net.program.COST_SCALE)
    coefs = [[[73.21469192635809, 1508.935847849886, 0.004224555002446852, 818.1955451380894,
               0.49248371385436296],
              [73.21469192635809, 1508.935847849886, 0.004224555002446852, 818.1955451380894,
               0.49248371385436296],
              [445.82158283065587, 0.009807656321017141, -1723.6939608079044, -968.686179796713,
               -589.5710113936086]],
             [[-1.6064705497972511, 0.0042957092261229545, 4143.040110146829],
              [-0.05042208863123834, 0.007280730746713416, -0.09409395288607005],
              [-9037.964884589133, -2381.194960741458, 84.54978770698703],
              [-8314.519426790834, 5.983206964726906, 455.0051807248202],
              [573.0376366448729, -1.099925684932346, 5158.816602625701]],
             [[-9408.62791815389, -0.009648667083512124, -0.46266899124969935],
              [-3022.75563640949, 0.08442070845659352, -800.8776440401767],
              [6.303145959721664, -0.07915346084792703, 0.07777787572120967]]]  # fmt: skip
    intercepts = [[-0.9749260033015084, 0.0, -452.51138341907176, -2.6883079209580596,
                   -3744.422841226342],
                  [0.7800673920123687, 9758.8819098362, -9.204315326769562],
                  [-0.07640708932683449, 68.4879933298628, 765.8239686799138]]  # fmt: skip
    mlp = _set_weights(coefs, intercepts, range(3))
    x0 = np.array([-0.35854464481347925, 0.6285472146108062, 0.019762955917361102])
    w = np.array([9.874162365051706, 0.19295459132587595, 0.13007484693331392])
    lo, hi = -2.5716374503692645 * np.ones(3), 2.5716374503692645 * np.ones(3)
    assert mlp.predict(x0[None])[0] != 0
    res = NetExplainer(mlp).explain(x0, 0, bounds=(lo, hi), weights=w, metric="l0")
    cost, xr = relu_net_brute_force(mlp.coefs_, mlp.intercepts_, x0, 0, 1e-6, w, lo, hi,
                                    binary=False, metric="l0")  # fmt: skip
    assert mlp.predict(xr[None])[0] == 0
    assert res.success and res.status == 0, res.message
    assert mlp.predict(res.x[None])[0] == 0
    assert np.all((res.x >= lo) & (res.x <= hi))
    assert res.distance <= cost * (1 + 1e-6) + 1e-9, (res.distance, cost)


def test_the_network_program_is_not_called_infeasible_by_a_strict_tolerance_regression():
    # soak_net.py, seed 39, example 203 (binary, weights up to 8 407): at a feasibility
    # tolerance of 1e-9 HiGHS called this program "infeasible"; its optimum costs 0.390
    coefs = [[[-8406.8718108911, -0.32457249179391384, 0.00843192685197237, -998.1618454112235],
              [-8406.8718108911, -0.32457249179391384, 0.00843192685197237, -998.1618454112235],
              [-913.0878110651885, -671.3832059604165, -1.5551521022450059,
               1222.4423120583872]],
             [[-8.741415472505235, 0.2194641446699612, 683.1905818695595],
              [-0.23790332145961557, -805.6637075550494, -0.05604192405102992],
              [0.0, 0.0, 0.0],
              [-0.08710069765575103, 0.979608817272167, 0.004162433849604474]],
             [[-0.007014857383093734], [-0.7952842571375115], [0.004723796955899161]]]  # fmt: skip
    intercepts = [[0.07303464391185122, -4.844522447182581, 0.013497094797613797,
                   -0.0024678129910443757],
                  [-4127.60601028002, -0.0809514460839109, 0.0021813755002476],
                  [0.006264928317087689]]  # fmt: skip
    mlp = _set_weights(coefs, intercepts, range(2))
    x0 = np.array([-0.9838076208159225, -0.5392441986239744, -0.1648674680780482])
    w = np.array([0.11460814081228665, 3.3115120325800467, 1.3052988703737258])
    lo, hi = -2.849231333692743 * np.ones(3), 2.849231333692743 * np.ones(3)
    assert mlp.predict(x0[None])[0] != 0
    _optimal_for_class_0(mlp, x0, w, lo, hi)


def test_a_reduced_accuracy_relaxation_does_not_prune_the_optimum_regression():
    # soak_net.py seed 72, example 32 (binary, Euclidean, two wild layers: relaxed outputs of
    # 1e7): Clarabel's "AlmostSolved" value of a node's relaxation, taken as its bound, pruned
    # the optimum's node, and a 1.4 % dearer answer (0.78877) was called optimal
    coefs = [
        [[-1559.9401800388503, 748.1977116044793, 195.83100856388052],
         [-58.467260440179416, 0.009960924016513717, 0.007215895572071718],
         [5699.805983413107, -306.1604133658765, 779.7151721636171],
         [0.003178965681465692, 3.3416206799667525, -352.315509460547]],
        [[5257.818200564222, 8540.694275460879, 0.020811649653938575],
         [5257.818200564222, 8540.694275460879, 0.020811649653938575],
         [-1.5599173309669454, 0.8331655861726287, 827.3072782692377]],
        [[555.0698815202264], [-878.5258172275176], [470.07224883295197]],
    ]  # fmt: skip
    biases = [[0.004228805117291272, -610.6089351230555, -610.6089351230555],
              [-563.4368159651249, 6918.269283902955, -0.4781108201525477], [0.0]]  # fmt: skip
    x0 = np.array([0.5120004153575077, 0.32590881185845677, 0.20000167897062893,
                   -0.30231296358587945])  # fmt: skip
    w = np.array([0.42121607, 1.62387005, 0.50973923, 1.92101982])
    lo, hi = np.full(4, -1.23384377), np.full(4, 1.23384377)
    mlp = _set_weights(coefs, biases, range(2))
    res = NetExplainer(mlp).explain(x0, 1, weights=w, bounds=(lo, hi), metric="euclidean")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (cvxpy: "Solution may be inaccurate")
        cost, xr = relu_net_brute_force(mlp.coefs_, mlp.intercepts_, x0, 1, 1e-6, w, lo, hi,
                                        binary=True, metric="euclidean")  # fmt: skip
    assert xr is not None  # (its LP meets the margin to its tolerance: the model may refuse it)
    assert res.success and mlp.predict(res.x[None])[0] == 1, res.message
    assert res.distance <= cost * (1 + 1e-6) + 1e-9, (res.distance, cost, res.message)


def test_a_pattern_leaking_under_every_changed_set_is_excluded_at_once_regression():
    # soak_net.py, seed 48, example 192 (max_changes=2, big-M bounds of 1.3e8): the program's
    # answers leaked through "off" ReLUs, and each repair excluded one assignment of the
    # pattern and of the changed features, so that the same empty pattern came back under 7
    # changed sets in turn; the 32 repairs ran out and the query ended "time_limit reached
    # before any answer was found" (no time_limit was given) where the optimum costs 1.148.
    # A repair now excludes the pattern under every changed set its linear program covers
    coefs = [[[83.10162532520027, 8422.25476236822, -382.01757151371856, 0.00930043361665995,
               226.5984302503082],
              [0.005917583462923524, -350.0096408566921, 869.6987946283201, 0.5954003176217015,
               0.7784568479454876],
              [0.005917583462923524, -350.0096408566921, 869.6987946283201, 0.5954003176217015,
               0.7784568479454876]],
             [[-0.715341419463748, 102.66360183094274], [63.24904777513905, -6531.82742904184],
              [-980.5973332739519, -78.81597169330313], [-0.8653301978035858, -0.1604216813826025],
              [0.0, 0.0]],
             [[46.86744552073583, 46.93201070208798, 7764.1258680623905],
              [-3020.498890842986, -3.106480705966982, -0.05437764503842538]]]  # fmt: skip
    intercepts = [[0.032934215998697065, 80.577098255642, 650.213618880476, 0.044692697483857007,
                   0.6736824373792197],
                  [-0.07883360311768155, -0.07883360311768155],
                  [967.3095653098206, 967.3095653098206, -6854.300429299347]]  # fmt: skip
    mlp = _set_weights(coefs, intercepts, range(3))
    x0 = np.array([-0.5653552897343079, 0.8401944890941795, 0.21906711808970214])
    w = np.array([1.4057950852794128, 0.22538526746607582, 6.022916293661737])
    lo, hi = -2.151352979360018 * np.ones(3), 2.151352979360018 * np.ones(3)
    res = NetExplainer(mlp).explain(x0, 1, bounds=(lo, hi), weights=w, max_changes=2)
    cost, xr = relu_net_brute_force(mlp.coefs_, mlp.intercepts_, x0, 1, 1e-6, w, lo, hi,
                                    binary=False, max_changes=2)  # fmt: skip
    assert mlp.predict(xr[None])[0] == 1  # (1.148, as the model says)
    assert res.success and res.status == 0, res.message
    assert mlp.predict(res.x[None])[0] == 1
    assert np.count_nonzero(res.x != x0) <= 2 and np.all((res.x >= lo) & (res.x <= hi))
    assert res.distance <= cost * (1 + 1e-6) + 1e-9, (res.distance, cost)


def test_a_euclidean_tie_cheaper_than_the_margin_answer_is_found_regression():
    # soak_net.py seed 73, example 198 (binary, Euclidean): the target's cheapest points lie on
    # a region of ties (every last-layer neuron the logit weighs off, the logit exactly 0, which
    # predict gives class 0, the target) at 0.1294; explain answered the margin's 5.645 as
    # optimal (the Euclidean tie was solved only where the margin had no answer)
    coefs = [
        [[87.11274302908623, 0.07803493730656064, -0.052538387199429576, -45.47603853096899],
         [0.0, 0.0, 0.0, 0.0],
         [-0.03927893736631496, -47.52226415213612, 54.66384387724237, 0.007041242902820816]],
        [[-8.721328884177753], [0.0], [77.70173023898634], [0.001468780354497254]],
    ]  # fmt: skip
    biases = [[-4.346141719981138, 0.2724775667737969, 0.2724775667737969, -7922.174492528717],
              [0.0]]  # fmt: skip
    x0 = np.array([-0.9184806026888233, -0.19319882711453062, 0.40081796054376806])
    w = np.array([5.82759713, 0.1731632, 0.3182015])
    box = (np.full(3, -2.5702118), np.full(3, 2.5702118))
    mlp = _set_weights(coefs, biases, range(2))
    ex = NetExplainer(mlp)
    res = ex.explain(x0, 0, weights=w, bounds=box, metric="euclidean")
    assert res.success and mlp.predict(res.x[None])[0] == 0, res.message
    assert res.distance < 0.13, (res.distance, res.message)
    alts = ex.enumerate(x0, 0, k=3, weights=w, bounds=box, metric="euclidean")
    d = [a.distance for a in alts]
    assert d == sorted(d) and d[0] == pytest.approx(res.distance, rel=1e-9)
    assert all(mlp.predict(a.x[None])[0] == 0 for a in alts)


def test_a_margin_programs_answer_on_a_tie_keeps_off_its_neurons_faces_regression():
    # soak_net.py seed 91, example 37 (binary, target 0 reached on a tie: every ReLU off, the
    # logit exactly 0). With feature 0 frozen the margin's program leaked onto the tie at
    # 0.2001 and its point was taken as the tie's (network_point's accept=), on the face of a
    # neuron (z = -3.6e-17) that the model's own sums left on: class 1, refused, and the
    # re-aim (no tie) answered 0.5382 — enumerate listed 0.1235, 0.5382, then 0.2001
    coefs = [[[-0.01920273531069001, 7.192033429950481], [76.05710716191076, 0.007954724645662587],
              [-0.01920273531069001, 7.192033429950481]],
             [[-96.891508622071], [4.8057186455183345]]]  # fmt: skip
    mlp = _set_weights(coefs, [[0.003729882330986929, 0.003729882330986929], [0.0]], range(2))
    x0 = np.array([0.6757874551163086, -0.25014402534911917, -0.45288725507545124])
    w = np.array([0.5536427278673618, 2.1425800303799436, 0.8965938014316088])
    lo, hi = -1.3159339072273812 * np.ones(3), 1.3159339072273812 * np.ones(3)
    ex = NetExplainer(mlp)
    res = ex.explain(x0, 0, bounds=(lo, hi), weights=w, frozen=[0])
    flo, fhi = lo.copy(), hi.copy()
    flo[0] = fhi[0] = x0[0]
    cost, xr = relu_net_brute_force(mlp.coefs_, mlp.intercepts_, x0, 0, 1e-6, w, flo, fhi,
                                    binary=True)  # fmt: skip
    assert res.success and res.status == 0, res.message
    assert mlp.predict(res.x[None])[0] == 0 and res.x[0] == x0[0]
    assert res.distance <= 0.2001 < cost, (res.distance, cost)  # (the brute force: the margin's)
    alts = ex.enumerate(x0, 0, k=3, bounds=(lo, hi), weights=w)
    d = [a.distance for a in alts]
    assert len(d) == 3 and d == sorted(d), d
    assert all(mlp.predict(a.x[None])[0] == 0 for a in alts)


def test_highs_restart_does_not_remove_the_optimum_regression():
    # soak_net.py seed 44, example 67 (three classes, max_changes=1, big-M bounds of 1.5e4):
    # with feature 1 frozen HiGHS 1.16's randomized rounding found 8.230 at the root, and the
    # presolve of its restart, cut off at that cost, removed the optimum 0.692: 8.230 called
    # optimal, and enumerate listed 0.390, 8.230, then 0.692
    coefs = [[[350.88288186742716, 0.5733566432949092, -410.83851124311775, 43.08349543928315],
              [-3012.471221538937, -0.005256874198633288, 0.02161133856540392,
               -105.79646038083406],
              [-3750.4124906422367, -0.9905673373880364, -0.0017298069713347543,
               -5891.092730930542]],
             [[-3592.293509072057, -0.002574123514202739, 0.08376187416270824],
              [-0.0057720916856275764, 430.1421383420463, 9989.956234919771],
              [24.73622332976, -5.414566894525175, -4.681821829668846],
              [0.3354355565518663, 20.7697053657426, -5.841815701344585]]]  # fmt: skip
    intercepts = [[-0.06183927471774433, 0.0, 0.0050200682767407015, -921.2368008154474],
                  [-6914.063134588141, -6.3362607500098935, -308.4140560890228]]  # fmt: skip
    mlp = _set_weights(coefs, intercepts, range(3))
    x0 = np.array([-0.7431239533697371, -0.2106317130596611, 0.9168149572510629])
    w = np.array([3.45775405004984, 0.2955074348708381, 0.65327987021302])
    lo, hi = -2.4116940263926483 * np.ones(3), 2.4116940263926483 * np.ones(3)
    ex = NetExplainer(mlp)
    res = ex.explain(x0, 2, bounds=(lo, hi), weights=w, max_changes=1, frozen=[1])
    flo, fhi = lo.copy(), hi.copy()
    flo[1] = fhi[1] = x0[1]
    cost, xr = relu_net_brute_force(mlp.coefs_, mlp.intercepts_, x0, 2, 1e-6, w, flo, fhi,
                                    binary=False, max_changes=1)  # fmt: skip
    assert mlp.predict(xr[None])[0] == 2  # (0.692, as the model says)
    assert res.success and res.status == 0, res.message
    assert mlp.predict(res.x[None])[0] == 2 and res.x[1] == x0[1]
    assert np.count_nonzero(res.x != x0) <= 1
    assert res.distance <= cost * (1 + 1e-6) + 1e-9, (res.distance, cost)
    alts = ex.enumerate(x0, 2, k=3, bounds=(lo, hi), weights=w, max_changes=1)
    d = [a.distance for a in alts]
    assert len(d) == 3 and d == sorted(d), d


def test_a_false_infeasibility_certificate_of_clarabel_is_looked_at_again_regression():
    # soak_net.py seed 95, example 292 (three classes, Euclidean, wild weights: neurons' outputs
    # up to 1.4e4): Clarabel called the root relaxation infeasible after one iteration (its
    # certificate, A'z of 4e-3 against b'z of -7.4, passed its 1e-8 tolerance on the
    # equilibrated rows), and the query ended "infeasible" where the optimum costs 1.005. An
    # "infeasible" of Clarabel is now looked at again with its certificate asked to 1e-12
    coefs = [[[6.7561471511394275, 9.78533275313583, -0.05941906871425084, 730.4113048143626],
              [0.0, 0.0, 0.0, 0.0],
              [-0.004139391029454939, -4678.70106257766, 0.031773499876531754, 846.0362479697021]],
             [[660.5133170462884, 526.6346165721646, -0.04125874709460537], [0.0, 0.0, 0.0],
              [-3.8965519233408488, -69.15598252675959, 82.15496736844337],
              [0.4455625119484401, 2.8846152416507667, -4.26878444807143]],
             [[2.3197785890407854, 0.415258754557991, -9045.164268155078],
              [319.64424109828343, -85.2143583401223, 2.707015147290557],
              [-610.8086152318009, -0.022090196944278506, 2.2637057279389965]]]  # fmt: skip
    intercepts = [[-5.258223580749855, -0.997102077012136, -9454.632336074093,
                   0.039937327483381496],
                  [7710.307625775288, -0.006042891870832836, 17.305479227844693],
                  [-0.003990348686395197, 7141.622974348727, 2.169168161795601]]  # fmt: skip
    mlp = _set_weights(coefs, intercepts, range(3))
    x0 = np.array([-0.3967315715708013, -0.7187457694311425, -0.4780969180096766])
    w = np.array([1.2000203392263007, 0.42504859556750274, 2.5729122230756905])
    lo, hi = np.full(3, -1.8143775297150182), np.full(3, 1.8143775297150182)
    assert mlp.predict(x0[None])[0] != 0
    res = NetExplainer(mlp).explain(x0, 0, bounds=(lo, hi), weights=w, metric="euclidean")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (cvxpy: "Solution may be inaccurate")
        cost, xr = relu_net_brute_force(mlp.coefs_, mlp.intercepts_, x0, 0, 1e-6, w, lo, hi,
                                        binary=False, metric="euclidean")  # fmt: skip
    assert mlp.predict(xr[None])[0] == 0  # (1.005, as the model says)
    assert res.success and res.status == 0, res.message
    assert mlp.predict(res.x[None])[0] == 0 and np.all((res.x >= lo) & (res.x <= hi))
    assert res.distance <= cost * (1 + 1e-6) + 1e-9, (res.distance, cost)


def test_a_tie_answer_off_its_face_by_the_inputs_rounding_is_kept_on_the_tie_regression():
    # soak_net.py seed 95, example 27 (three classes, wild weights): target 0 equals class 2
    # wherever the second layer's first neuron is off (the same bias), so it is reached only on
    # that tie, which the model gives to the first class. The tie's point lay on that neuron's
    # face, whose z moves by 4.7e7 per unit of feature 1: the program's point left it at
    # z = +7e-10 (half an ulp of the feature), beyond the rounding of its sums, so its pattern
    # had it on, the pattern solved again held no point on the tie, the leak made class 2 win,
    # and the query ended a "numerical failure" where 1.771 exists. The neurons within the
    # rounding of x itself of 0 are now taken off too
    coefs = [[[0.0, 0.0, 0.0], [0.06771636084062259, 4896.0454393333475, 0.004600625639705969],
              [-0.05115190069004355, -0.00930461854448018, -0.6101246062337351],
              [0.14618609668148205, -0.9324130622028828, -0.9661719725777907]],
             [[0.0, 0.0], [-9550.048022956362, -90.77859045983892],
              [0.006501065850464671, 0.8848928491372284]],
             [[0.04059198737193091, -5.3594674978671994, 86.30916418496892],
              [0.0, 0.0, 0.0]]]  # fmt: skip
    intercepts = [[-0.8839107343906414, 800.6638873887576, -3695.6949762874824],
                  [7.334584963975773, 0.0],
                  [0.8292378412176504, -8550.365343291258, 0.8292378412176504]]  # fmt: skip
    mlp = _set_weights(coefs, intercepts, range(3))
    x0 = np.array([0.8308255930689274, -0.46363567817185203, 0.43304928637817475,
                   -0.7475745410247836])  # fmt: skip
    w = np.array([3.848421170136825, 5.904372760660552, 9.842186378632814, 0.8459280071139921])
    lo, hi = np.full(4, -1.2255090095355243), np.full(4, 1.2255090095355243)
    assert mlp.predict(x0[None])[0] != 0
    ex = NetExplainer(mlp)
    res = ex.explain(x0, 0, bounds=(lo, hi), weights=w)
    assert res.success and res.status == 0, res.message
    assert mlp.predict(res.x[None])[0] == 0 and np.all((res.x >= lo) & (res.x <= hi))
    # the tie's optimum by the brute force (margin 0: on the tie), the answer ε above it
    cost, xr = relu_net_brute_force(mlp.coefs_, mlp.intercepts_, x0, 0, 0.0, w, lo, hi,
                                    binary=False)  # fmt: skip
    assert mlp.predict(xr[None])[0] == 0  # (1.771, as the model says)
    assert cost * (1 - 1e-9) <= res.distance <= cost * (1 + 1e-6) + 1e-9, (res.distance, cost)
    alts = ex.enumerate(x0, 0, k=3, bounds=(lo, hi), weights=w)
    assert alts and alts[0].distance == pytest.approx(res.distance, rel=1e-9)
    assert all(mlp.predict(a.x[None])[0] == 0 for a in alts)
