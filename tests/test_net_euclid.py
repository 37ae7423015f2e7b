"""NetExplainer with metric="euclidean": the own branch-and-bound over activation patterns.

Exactness against the brute force over every activation pattern with one convex QP each
(``reference.relu_net_brute_force(metric="euclidean")``: cvxpy/Clarabel at tight tolerances,
in d = x − x̄): the answer costs no more than the reference's at fastcf's margin (1e-6) and no
less than the reference's at margin 0 (1e-6 relative). Validity by the model's own ``predict``.
"""

import numpy as np
import pytest
from net_models import mlp as fitted_mlp
from reference import relu_net_brute_force

from fastcf import NetExplainer


def _between(res, mlp, x0, t, w, lo, hi, frozen=(), max_changes=None):
    """Assert the answer against the references at margin 1e-6 and 0; return whether compared.

    ``max_changes``: at most that many features changed (the reference tries every set).
    """
    lo, hi = lo.copy(), hi.copy()
    for f in frozen:
        lo[f] = hi[f] = x0[f]
    args = dict(binary=len(mlp.classes_) == 2, metric="euclidean", relu=mlp.activation == "relu",
                max_changes=max_changes)  # fmt: skip
    top, _ = relu_net_brute_force(mlp.coefs_, mlp.intercepts_, x0, t, 1e-6, w, lo, hi, **args)
    if not np.isfinite(top):
        assert not res.success and res.status == 3, res.message
        return False
    assert res.success, res.message
    assert mlp.predict(res.x[None])[0] == mlp.classes_[t]
    assert np.all(res.x >= lo) and np.all(res.x <= hi)
    if max_changes is not None:
        assert np.count_nonzero(res.x != x0) <= max_changes
    assert res.distance == pytest.approx(np.sqrt(np.sum((w * (res.x - x0)) ** 2)), rel=1e-12)
    assert res.distance <= top * (1 + 1e-6) + 1e-12
    low, _ = relu_net_brute_force(mlp.coefs_, mlp.intercepts_, x0, t, 0.0, w, lo, hi, **args)
    assert res.distance >= low * (1 - 1e-6) - 1e-12
    assert res.info["gap"] == 0 and res.status == 0
    return True


def _ask_every_target(hidden, D, K, seed, rows, max_changes=None):
    """Ask the first ``rows`` rows of a fitted net for every other class (box ±1.5, random
    weights), each answer checked by :func:`_between`; return how many were compared."""
    mlp, X = fitted_mlp(hidden, D, K, seed)
    ex = NetExplainer(mlp)
    rng = np.random.default_rng(100 + seed)
    lo, hi = -np.ones(D) * 1.5, np.ones(D) * 1.5
    w = rng.uniform(0.5, 2.0, size=D)
    answered = 0
    for x0 in X[:rows]:
        for t in range(len(mlp.classes_)):
            if mlp.predict(x0[None])[0] == t:
                continue
            res = ex.explain(x0, mlp.classes_[t], weights=w, bounds=(lo, hi),
                             metric="euclidean", max_changes=max_changes)  # fmt: skip
            answered += _between(res, mlp, x0, t, w, lo, hi, max_changes=max_changes)
    return answered


# (the reference solves a QP per activation pattern with cvxpy: at most 6 hidden neurons)
CASES = [((4,), 2, 2), ((6,), 3, 2), ((3, 3), 2, 3), ((5,), 2, 3), ((4, 2), 3, 2), ((4,), 4, 4)]


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("hidden,D,K", CASES, ids=str)
def test_euclidean_equals_the_brute_force_over_every_pattern(hidden, D, K, seed):
    _ask_every_target(hidden, D, K, seed, 2)


@pytest.mark.parametrize("seed", range(3))
def test_euclidean_with_frozen_features_and_training_rows(seed):
    mlp, X = fitted_mlp((5, 3), 3, 2, seed)
    ex = NetExplainer(mlp).fit_data(X)
    lo, hi = X.min(axis=0), X.max(axis=0)
    w = np.array([1.0, 0.3, 3.0])
    answered = 0
    for x0 in X[:4]:
        t = 1 - int(mlp.predict(x0[None])[0])
        res = ex.explain(x0, t, weights=w, frozen=[1], metric="euclidean")
        answered += _between(res, mlp, x0, t, w, lo, hi, frozen=[1])
        if res.success:
            assert res.x[1] == x0[1]
    assert answered


def test_identity_hidden_layers():
    mlp, X = fitted_mlp((4, 3), 3, 3, 0, activation="identity")
    ex = NetExplainer(mlp)
    lo, hi = -np.ones(3) * 2, np.ones(3) * 2
    w = np.array([1.0, 2.0, 0.5])
    for x0 in X[:3]:
        t = (int(mlp.predict(x0[None])[0]) + 1) % 3
        res = ex.explain(x0, t, weights=w, bounds=(lo, hi), metric="euclidean")
        _between(res, mlp, x0, t, w, lo, hi)


def test_exact_false_gives_a_valid_answer_with_a_certified_bound():
    mlp, X = fitted_mlp((8, 8), 4, 2, 1)
    ex = NetExplainer(mlp).fit_data(X)
    Q = X[:10]
    T = 1 - mlp.predict(Q)
    fast = ex.explain(Q, T, metric="euclidean", exact=False)
    full = ex.explain(Q, T, metric="euclidean")
    assert fast.success.all() and full.success.all()
    assert (mlp.predict(fast.x) == T).all()
    assert np.all(fast.distance >= full.distance * (1 - 1e-6))
    assert np.all(fast.info["bound"] <= full.distance * (1 + 1e-6))
    assert set(fast.status.tolist()) <= {0, 1}
    assert np.all(fast.info["gap"][fast.status == 0] == 0)


def test_time_limit_and_enumerate():
    mlp, X = fitted_mlp((16, 16), 4, 3, 2)
    ex = NetExplainer(mlp).fit_data(X)
    x0 = X[0]
    t = mlp.classes_[(int(mlp.predict(x0[None])[0]) + 1) % 3]
    res = ex.explain(x0, t, metric="euclidean", time_limit=1e-6)
    if res.success:  # the first answer, not proven optimal
        assert res.status == 1 and res.info["bound"] <= res.distance
        assert mlp.predict(res.x[None])[0] == t
    else:
        assert "time_limit" in res.message
    alts = ex.enumerate(x0, t, k=3, metric="euclidean")
    assert alts and all(mlp.predict(a.x[None])[0] == t for a in alts)
    assert all(a.distance <= b.distance * (1 + 1e-9) for a, b in zip(alts, alts[1:], strict=False))


# (hidden, D, K, seed, rows asked, max_changes asked, short search): the reference solves a QP
# per activation pattern and per set of changed features, with cvxpy (seconds per query)
SPARSE = [((4,), 3, 2, 0, 3, (1, 2), True), ((5,), 4, 2, 1, 2, (1, 2), False),
          ((3, 3), 3, 3, 0, 1, (1,), False), ((4, 2), 3, 2, 4, 1, (1, 2), True)]  # fmt: skip


@pytest.mark.parametrize("hidden,D,K,seed,n,ms,short", SPARSE, ids=str)
def test_euclidean_with_max_changes_equals_the_brute_force(
    hidden, D, K, seed, n, ms, short, monkeypatch
):
    # a support variable per feature in the branch-and-bound: against one QP per activation
    # pattern and per set of at most m changed features; not short: the full search at once
    from fastcf._net import euclid

    if not short:
        monkeypatch.setattr(euclid, "_SHORT", 0)
    assert sum(_ask_every_target(hidden, D, K, seed, n, max_changes=m) for m in ms)


def test_euclidean_max_changes_exact_false_is_valid_and_bounded():
    mlp, X = fitted_mlp((6, 4), 4, 2, 1)
    ex = NetExplainer(mlp).fit_data(X)
    Q = X[:6]
    T = 1 - mlp.predict(Q)
    fast = ex.explain(Q, T, metric="euclidean", max_changes=2, exact=False)
    full = ex.explain(Q, T, metric="euclidean", max_changes=2)
    assert (fast.success == full.success).all() and full.success.any()
    ok = full.success
    assert (mlp.predict(fast.x[ok]) == T[ok]).all()
    assert np.all(np.count_nonzero(fast.x[ok] != Q[ok], axis=1) <= 2)
    assert np.all(fast.distance[ok] >= full.distance[ok] * (1 - 1e-6))
    assert np.all(fast.info["bound"][ok] <= full.distance[ok] * (1 + 1e-6))


# (seeds whose fitted network predicts more than one class on its rows: tiny ones often collapse)
FULL = [((3, 3), 2, 3, 0), ((3, 3), 2, 3, 5), ((4, 2), 3, 2, 0), ((4, 2), 3, 2, 4),
        ((3, 2, 2), 2, 2, 2), ((3, 2, 2), 2, 2, 4)]  # fmt: skip


@pytest.mark.parametrize("hidden,D,K,seed", FULL, ids=str)
def test_the_full_search_over_the_balls_bounds_equals_the_brute_force(
    hidden, D, K, seed, monkeypatch
):
    # no short search: every query takes the full search, its neurons' bounds tightened over
    # the ball by conic programs (tighten_ball) and restarted as the radius shrinks
    from fastcf._net import euclid

    monkeypatch.setattr(euclid, "_SHORT", 0)
    called = []
    ball = euclid.tighten_ball
    monkeypatch.setattr(euclid, "tighten_ball", lambda *a: called.append(1) or ball(*a))
    assert _ask_every_target(hidden, D, K, seed, 4) and called


@pytest.mark.parametrize("seed", range(4))
def test_tightened_bounds_hold_every_point_of_the_ball_in_the_target(seed):
    # sampled points of the box ∩ the ball that meet the target: each layer's pre-activations
    # lie within the tightened bounds, which lie within the ones they tightened
    from fastcf._net.bounds import linear_bounds
    from fastcf._net.euclid import tighten_ball, tighten_layers
    from fastcf._net.model import read_network
    from fastcf._net.program import output_rows

    mlp, X = fitted_mlp((6, 5), 3, 3, seed)
    net = read_network(mlp)
    rng = np.random.default_rng(seed)
    x0, t = X[0], (int(mlp.predict(X[:1])[0]) + 1) % 3
    lo, hi = -np.ones(3), np.ones(3)
    w = rng.uniform(0.5, 2.0, size=3)
    radius = 1.2
    G, g = output_rows(net, t, 1e-6)
    budget = np.sqrt(3) * radius
    ls0, us0 = linear_bounds(net.W, net.b, x0, w, lo, hi, budget, radius)
    ls1, us1 = tighten_layers(net, x0, lo, hi, w, G, g, ls0, us0, budget)
    ls2, us2 = tighten_ball(net, x0, lo, hi, w, G, g, ls1, us1, radius)
    P = rng.uniform(lo, hi, size=(200_000, 3))
    P = P[np.sqrt(np.sum((w * (P - x0)) ** 2, axis=1)) <= radius]
    P = P[net.meets(P, G, g)]
    assert P.shape[0] > 100
    for z, a, b, a0, b0 in zip(net.hidden(P), ls2, us2, ls0, us0, strict=True):
        assert np.all(a >= a0) and np.all(b <= b0)
        assert np.all(z >= a) and np.all(z <= b)
    assert sum(int(((a < 0) & (b > 0)).sum()) for a, b in zip(ls2, us2, strict=True)) <= sum(
        int(((a < 0) & (b > 0)).sum()) for a, b in zip(ls0, us0, strict=True)
    )
