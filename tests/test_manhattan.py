"""Weighted-L1 ("Manhattan") counterfactuals of linear models (fastcf._linear.manhattan).

Every answer is checked against an independent reference (tests/reference.py: cvxpy LPs and
exponential-cone programs built from scratch, a full-sort knapsack) and against its optimality
conditions (KKT residual, duality gap).
"""

import warnings
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import (
    binary_knapsack_ref,
    linear_cf_cvxpy,
    manhattan_cvxpy,
    manhattan_energy,
    manhattan_kkt_residual,
    softmax_rows,
)

from fastcf import LinearExplainer
from fastcf._linear.manhattan import constrained_l1, lam_l1
from fastcf._linear.model import make_model
from fastcf._status import Status

RTOL = 1e-9  # objective against the references
OK_REF = ("optimal", "optimal_inaccurate")  # see manhattan_cvxpy: Clarabel at 1e−11


def solve_ref(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cvxpy: "Solution may be inaccurate"
        return manhattan_cvxpy(*args, **kw)


@cache
def dataset(name):
    """A standardised sklearn dataset and a logistic regression fitted on it: (X, A, b)."""
    from sklearn import datasets
    from sklearn.linear_model import LogisticRegression

    loader = {
        "breast_cancer": datasets.load_breast_cancer,
        "iris": datasets.load_iris,
        "wine": datasets.load_wine,
        "digits": datasets.load_digits,
    }[name]
    X, y = loader(return_X_y=True)
    X = (X - X.mean(axis=0)) / (X.std(axis=0) + 1e-12)
    clf = LogisticRegression(max_iter=5000).fit(X, y)
    return np.ascontiguousarray(X), clf.coef_.copy(), clf.intercept_.copy()


def data_box(X, x0):
    """The data's range, widened to contain x0."""
    return np.minimum(X.min(axis=0), x0), np.maximum(X.max(axis=0), x0)


def query(model, x0, k, cost, free, bnd, *, lam=None, tau=None, margin=None):
    X = np.ascontiguousarray(x0[None, :])
    tidx = np.array([k], dtype=np.int64)
    if lam is not None:
        return lam_l1(model, X, tidx, cost, free, bnd, np.array([lam]), 1e-10, 500)
    margins = None if margin is None else np.array([margin])
    return constrained_l1(model, X, tidx, cost, free, bnd, tau, margins, 1e-10, 500)


def assert_valid(model, sol, X, tidx, free, bnd, proba=None, margin=None):
    """Frozen bits kept, box respected, success ⇔ the model puts the answer in the target."""
    assert np.array_equal(sol.x[:, ~free], X[:, ~free])
    if bnd is not None:
        lo, hi = bnd
        assert np.all(sol.x >= lo) and np.all(sol.x <= hi)
    Zc = model.check_logits(sol.x)
    pred = model.predict_index(Zc)
    in_target = pred == tidx
    if proba is not None:
        in_target &= model.proba_from_logits(Zc)[np.arange(tidx.size), tidx] >= proba
    if margin is not None:  # met as computed by the row kernels; BLAS may differ by rounding
        in_target &= model.target_margin(Zc, tidx) >= margin - 1e-12 * (1 + margin)
    assert np.array_equal(sol.success, in_target)
    for n in np.flatnonzero(~sol.success):
        assert sol.status[n] != Status.OK
        assert sol.message[n]


# ------------------------------------------------------------------------ binary models
def binary_problem(seed, D, bounded):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=D)
    c = float(rng.normal())
    x0 = rng.normal(size=D)
    cost = rng.uniform(0.2, 3.0, D)
    free = rng.random(D) > 0.2
    bnd = (x0 - rng.uniform(0, 1.5, D), x0 + rng.uniform(0, 1.5, D)) if bounded else None
    k = 0 if w @ x0 + c > 0 else 1
    return w, c, x0, cost, free, bnd, k


@pytest.mark.parametrize("bounded", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_binary_region_and_proba_match_lp(seed, bounded):
    w, c, x0, cost, free, bnd, k = binary_problem(seed, 25, bounded)
    model = make_model(w[None], np.array([c]))
    for kw in ({"margin": 1e-6}, {"margin": 0.5}, {"tau": 0.8}):
        sol = query(model, x0, k, cost, free, bnd, **kw)
        status, _x, val = solve_ref(w[None], [c], x0, k, cost, free=free, bounds=bnd, **kw)
        if status == "infeasible":
            assert not sol.success[0] and sol.status[0] == Status.INFEASIBLE
            continue
        assert status in OK_REF
        assert sol.success[0], sol.message
        assert sol.distance[0] == pytest.approx(val, rel=RTOL, abs=1e-12)
        proba = kw.get("tau")
        assert_valid(model, sol, x0[None], np.array([k]), free, bnd, proba, kw.get("margin"))


@pytest.mark.parametrize("bounded", [False, True])
def test_binary_large_d_matches_full_sort(bounded):
    # D = 5000 with a tight box: many features run out of room (the lazy selection is redone)
    rng = np.random.default_rng(7)
    D = 5000
    w = rng.normal(size=D)
    x0 = rng.normal(size=D)
    cost = rng.uniform(0.5, 2.0, D)
    cost[:40] = cost[40:80]  # ties of price between different features
    w[:40] = w[40:80]
    free = rng.random(D) > 0.1
    bnd = (x0 - 0.01, x0 + 0.01) if bounded else None
    c = -float(w @ x0) - 3.0
    model = make_model(w[None], np.array([c]))
    sol = query(model, x0, 1, cost, free, bnd, margin=0.0)
    theta = 2.0 * np.finfo(float).eps * (np.abs(w * x0).sum() + abs(c))  # the kernel's raise
    x_ref, val = binary_knapsack_ref(w, c, x0, 1, theta, cost, free, bnd)
    assert sol.success[0]
    assert sol.distance[0] == pytest.approx(val, rel=1e-12)
    moved = np.flatnonzero(sol.x[0] != x0)
    assert np.array_equal(moved, np.flatnonzero(x_ref != x0))
    assert sol.info["n_moved"][0] == moved.size > (100 if bounded else 0)


def test_binary_ties_lowest_index():
    w = np.array([1.0, 2.0, -2.0, 4.0])
    cost = np.array([1.0, 2.0, 2.0, 4.0])  # every price c/|w| = 1
    model = make_model(w[None], np.array([-10.0]))
    x0 = np.zeros(4)
    sol = query(model, x0, 1, cost, np.ones(4, dtype=bool), None, margin=1.0)
    assert np.flatnonzero(sol.x[0] != x0).tolist() == [0]
    bnd = (np.full(4, -3.0), np.full(4, 3.0))  # 0 and 1 run out of room: then 2 (down)
    sol = query(model, x0, 1, cost, np.ones(4, dtype=bool), bnd, margin=1.0)
    assert sol.x[0].tolist()[:2] == [3.0, 3.0] and sol.x[0, 3] == 0.0
    assert sol.x[0, 2] == pytest.approx(-1.0, rel=1e-14)
    assert sol.distance[0] == pytest.approx(11.0, rel=1e-14)


@pytest.mark.parametrize("bounded", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_binary_lam_matches_conic_and_kkt(seed, bounded):
    w, c, x0, cost, free, bnd, k = binary_problem(seed, 20, bounded)
    model = make_model(w[None], np.array([c]))
    for lam in (1e-3, 0.05, 0.5, 5.0):
        sol = query(model, x0, k, cost, free, bnd, lam=lam)
        e = manhattan_energy(w[None], [c], x0, k, cost, lam, sol.x[0])
        status, _x, val = solve_ref(w[None], [c], x0, k, cost, free=free, bounds=bnd, lam=lam)
        assert status in OK_REF
        assert e <= val + RTOL * abs(val)
        assert sol.grad_norm[0] <= 1e-12 * (1 + lam * cost.max())
        res = manhattan_kkt_residual(w[None], [c], x0, sol.x[0], k, cost, lam, free, bnd)
        assert res <= 1e-12 * (1 + lam * cost.max())
        assert_valid(model, sol, x0[None], np.array([k]), free, bnd)


def test_binary_breast_cancer_batch_mixed_targets_per_row_bounds():
    X, A, b = dataset("breast_cancer")
    model = make_model(A, b)
    rng = np.random.default_rng(0)
    idx = rng.choice(len(X), 12, replace=False)
    Xq = X[idx]
    tidx = np.array([0, 1] * 6, dtype=np.int64)
    D = X.shape[1]
    cost = 1.0 / (X.std(axis=0) + 0.5)
    free = np.ones(D, dtype=bool)
    free[[0, 5, 7]] = False
    lo = np.minimum(X.min(axis=0), Xq) - rng.uniform(0, 1, (12, D))
    hi = np.maximum(X.max(axis=0), Xq) + rng.uniform(0, 1, (12, D))
    bnd = (lo, hi)
    margins = np.full(12, 1e-6)
    batch = constrained_l1(model, Xq, tidx, cost, free, bnd, None, margins, 1e-10, 100)
    for n in range(12):
        one = constrained_l1(
            model, Xq[n : n + 1], tidx[n : n + 1], cost, free, (lo[n], hi[n]), None,
            margins[:1], 1e-10, 100,
        )  # fmt: skip
        assert np.array_equal(one.x, batch.x[n : n + 1])  # the batch's bits are the row's
        status, _x, val = solve_ref(
            A, b, Xq[n], int(tidx[n]), cost, free=free, bounds=(lo[n], hi[n]), margin=1e-6
        )
        assert status == "optimal"
        assert batch.distance[n] == pytest.approx(val, rel=RTOL, abs=1e-12)
    assert_valid(model, batch, Xq, tidx, free, bnd, margin=1e-6)
    assert batch.success.all()


def test_binary_unreachable_and_infeasible():
    w = np.array([1.0, -2.0, 0.5])
    model = make_model(w[None], np.array([-5.0]))
    x0 = np.zeros(3)
    cost = np.ones(3)
    frozen = np.zeros(3, dtype=bool)
    for kw in ({"margin": 1e-6}, {"tau": 0.9}):
        sol = query(model, x0, 1, cost, frozen, None, **kw)
        assert not sol.success[0] and sol.status[0] == Status.UNREACHABLE
        assert "unreachable" in sol.message[0]
        assert np.array_equal(sol.x[0], x0)
    sol = query(model, x0, 1, cost, frozen, None, lam=0.1)
    assert not sol.success[0] and sol.status[0] == Status.UNREACHABLE
    bnd = (np.full(3, -1.0), np.full(3, 1.0))  # ζ ≤ 3.5 − 5 < 0 in the box
    sol = query(model, x0, 1, cost, np.ones(3, dtype=bool), bnd, margin=1e-6)
    assert not sol.success[0] and sol.status[0] == Status.INFEASIBLE
    assert sol.x[0].tolist() == [1.0, -1.0, 1.0]  # the best the box allows
    assert "infeasible" in sol.message[0]


@pytest.mark.parametrize("form", ["region", "proba", "lam"])
def test_binary_unit_free(form):
    w, c, x0, cost, free, bnd, k = binary_problem(3, 15, True)
    kw = {"region": {"margin": 0.3}, "proba": {"tau": 0.7}, "lam": {"lam": 0.05}}[form]
    scale = np.ones(15)
    scale[[2, 9]] = 1e3
    scale[4] = 1e-3
    model = make_model(w[None], np.array([c]))
    model_s = make_model((w / scale)[None], np.array([c]))  # the same model in scaled units
    bnd_s = (bnd[0] * scale, bnd[1] * scale)
    sol = query(model, x0, k, cost, free, bnd, **kw)
    sol_s = query(model_s, x0 * scale, k, cost / scale, free, bnd_s, **kw)
    np.testing.assert_allclose(sol_s.x[0], sol.x[0] * scale, rtol=1e-9, atol=0)
    assert sol_s.distance[0] == pytest.approx(sol.distance[0], rel=1e-9)


# ------------------------------------------------------------------------ softmax models
def softmax_problem(seed, K, D, bounded):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(K, D))
    b = rng.normal(size=K)
    x0 = rng.normal(size=D)
    cost = rng.uniform(0.3, 3.0, D)
    free = rng.random(D) > 0.2
    bnd = (x0 - rng.uniform(0, 1.5, D), x0 + rng.uniform(0, 1.5, D)) if bounded else None
    k = int(np.argmin(A @ x0 + b))
    return A, b, x0, cost, free, bnd, k


@pytest.mark.parametrize("name", ["iris", "wine", "digits"])
def test_softmax_datasets_all_forms(name):
    X, A, b = dataset(name)
    model = make_model(A, b)
    K, D = A.shape
    rng = np.random.default_rng(1)
    for trial in range(4):
        x0 = X[rng.integers(len(X))]
        k = int(rng.integers(K))
        cost = rng.uniform(0.5, 2.0, D) if trial % 2 else np.ones(D)
        free = rng.random(D) > 0.2
        bnd = data_box(X, x0) if trial >= 2 else None
        for kw in ({"margin": 1e-6}, {"tau": 0.7}):
            sol = query(model, x0, k, cost, free, bnd, **kw)
            status, _x, val = solve_ref(A, b, x0, k, cost, free=free, bounds=bnd, **kw)
            if "infeasible" in status:
                assert not sol.success[0]
                continue
            assert status in OK_REF
            assert sol.success[0], sol.message
            assert sol.distance[0] == pytest.approx(val, rel=RTOL, abs=1e-9)
            assert abs(sol.info["gap"][0]) <= 1e-10 * (1 + sol.distance[0])
            assert_valid(model, sol, x0[None], np.array([k]), free, bnd, kw.get("tau"))
            if "margin" in kw:
                assert sol.info["n_moved"][0] <= K - 1  # a basic optimum
        lam = 0.05
        sol = query(model, x0, k, cost, free, bnd, lam=lam)
        e = manhattan_energy(A, b, x0, k, cost, lam, sol.x[0])
        status, _x, val = solve_ref(A, b, x0, k, cost, free=free, bounds=bnd, lam=lam)
        assert status in OK_REF
        assert e <= val + RTOL * abs(val)
        assert sol.grad_norm[0] <= 1e-10
        assert manhattan_kkt_residual(A, b, x0, sol.x[0], k, cost, lam, free, bnd) <= 1e-10
        assert abs(sol.info["gap"][0]) <= 1e-10 * (1 + abs(e))


@pytest.mark.parametrize("bounded", [False, True])
@pytest.mark.parametrize("seed", range(5))
def test_softmax_random_all_forms(seed, bounded):
    A, b, x0, cost, free, bnd, k = softmax_problem(seed, 3 + seed, 12 + 3 * seed, bounded)
    model = make_model(A, b)
    for kw in ({"margin": 1e-6}, {"margin": 0.5}, {"tau": 0.5}, {"tau": 0.9}):
        sol = query(model, x0, k, cost, free, bnd, **kw)
        status, _x, val = solve_ref(A, b, x0, k, cost, free=free, bounds=bnd, **kw)
        if "infeasible" in status:
            assert not sol.success[0] and sol.status[0] == Status.INFEASIBLE
            continue
        assert status in OK_REF
        assert sol.success[0], sol.message
        assert sol.distance[0] == pytest.approx(val, rel=RTOL, abs=1e-9)
        assert_valid(model, sol, x0[None], np.array([k]), free, bnd, kw.get("tau"))
    for lam in (1e-3, 0.1, 1.0):
        sol = query(model, x0, k, cost, free, bnd, lam=lam)
        assert sol.status[0] in (Status.OK, Status.NOT_TARGET)
        e = manhattan_energy(A, b, x0, k, cost, lam, sol.x[0])
        status, _x, val = solve_ref(A, b, x0, k, cost, free=free, bounds=bnd, lam=lam)
        assert e <= val + RTOL * abs(val)
        assert manhattan_kkt_residual(A, b, x0, sol.x[0], k, cost, lam, free, bnd) <= 1e-10
        assert_valid(model, sol, x0[None], np.array([k]), free, bnd)


@pytest.mark.parallel
def test_softmax_batch_mixed_targets_per_row_bounds():
    X, A, b = dataset("wine")
    model = make_model(A, b)
    rng = np.random.default_rng(3)
    N, D = 9, X.shape[1]
    Xq = X[rng.choice(len(X), N, replace=False)]
    tidx = np.arange(N, dtype=np.int64) % 3
    cost = rng.uniform(0.5, 2.0, D)
    free = np.ones(D, dtype=bool)
    free[[1, 4]] = False
    lo = np.minimum(X.min(axis=0), Xq) - rng.uniform(0, 0.5, (N, D))
    hi = np.maximum(X.max(axis=0), Xq) + rng.uniform(0, 0.5, (N, D))
    cases = [
        ("region", lambda s: constrained_l1(model, *s, None, np.full(len(s[0]), 1e-6), 0, 100)),
        ("proba", lambda s: constrained_l1(model, *s, 0.8, None, 0, 500)),
        ("lam", lambda s: lam_l1(model, *s, np.full(len(s[0]), 0.05), 0, 500)),
    ]
    for form, run in cases:
        batch = run((Xq, tidx, cost, free, (lo, hi)))
        for n in range(N):
            one = run((Xq[n : n + 1], tidx[n : n + 1], cost, free, (lo[n], hi[n])))
            # a single query runs its row's kernels from Python (issue 54), a batch its serial
            # or chunk kernel: the same bits, answer and certificates (not the distance: BLAS
            # sums a row of one query and of a batch in different orders)
            for got, want in (
                (one.x, batch.x[n : n + 1]),
                (one.status, batch.status[n : n + 1]), (one.nit, batch.nit[n : n + 1]),
                (one.info["gap"], batch.info["gap"][n : n + 1]),
                (one.info["n_moved"], batch.info["n_moved"][n : n + 1]),
            ):  # fmt: skip
                assert np.array_equal(got, want, equal_nan=True), form
            if batch.grad_norm is not None:
                assert np.array_equal(one.grad_norm, batch.grad_norm[n : n + 1]), form
        proba = 0.8 if form == "proba" else None
        assert_valid(model, batch, Xq, tidx, free, (lo, hi), proba)
        if form != "lam":
            assert batch.success.all()


def test_softmax_unreachable_and_infeasible():
    A, b, x0, cost, free, bnd, k = softmax_problem(0, 4, 6, False)
    model = make_model(A, b)
    frozen = np.zeros(6, dtype=bool)
    for kw in ({"margin": 1e-6}, {"tau": 0.9}, {"lam": 0.1}):
        sol = query(model, x0, k, cost, frozen, None, **kw)
        assert not sol.success[0] and sol.status[0] == Status.UNREACHABLE, kw
        assert np.array_equal(sol.x[0], x0)
    tight = (x0 - 1e-3, x0 + 1e-3)
    for kw in ({"margin": 1e-6}, {"tau": 0.9}):
        sol = query(model, x0, k, cost, np.ones(6, dtype=bool), tight, **kw)
        assert not sol.success[0] and sol.status[0] == Status.INFEASIBLE, kw
        assert "infeasible" in sol.message[0]
    # the target is never the argmax: a_t is the mean of two rows and its intercept lower
    A2 = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 0.0]])
    b2 = np.array([0.0, 0.0, -1.0])
    sol = query(make_model(A2, b2), np.zeros(2), 2, np.ones(2), np.ones(2, dtype=bool), None,
                margin=1e-6)  # fmt: skip
    assert not sol.success[0] and sol.status[0] == Status.INFEASIBLE


@pytest.mark.parametrize("form", ["region", "proba", "lam"])
def test_softmax_unit_free(form):
    A, b, x0, cost, free, bnd, k = softmax_problem(4, 5, 14, True)
    kw = {"region": {"margin": 0.2}, "proba": {"tau": 0.6}, "lam": {"lam": 0.05}}[form]
    scale = np.ones(14)
    scale[[1, 6]] = 1e3
    scale[3] = 1e-3
    sol = query(make_model(A, b), x0, k, cost, free, bnd, **kw)
    bnd_s = (bnd[0] * scale, bnd[1] * scale)
    sol_s = query(make_model(A / scale, b), x0 * scale, k, cost / scale, free, bnd_s, **kw)
    np.testing.assert_allclose(sol_s.x[0], sol.x[0] * scale, rtol=1e-9, atol=0)
    assert sol_s.distance[0] == pytest.approx(sol.distance[0], rel=1e-9)


def test_softmax_region_margin_met_as_computed():
    # the answer sits on the margin: the row kernels' logits must still meet it
    X, A, b = dataset("digits")
    model = make_model(A, b)
    rng = np.random.default_rng(5)
    N = 20
    Xq = X[rng.choice(len(X), N, replace=False)]
    tidx = rng.integers(0, 10, N).astype(np.int64)
    D = X.shape[1]
    sol = constrained_l1(
        model, Xq, tidx, np.ones(D), np.ones(D, dtype=bool), None, None, np.full(N, 1e-6), 0, 100
    )
    assert sol.success.all()
    assert np.all(model.target_margin(model.logits(sol.x), tidx) >= 1e-6)
    assert np.all(sol.info["n_moved"] <= 9)


# ------------------------------------------------------------------------ hypothesis
@settings(max_examples=40)
@given(
    seed=st.integers(0, 2**32 - 1),
    K=st.integers(1, 5),
    D=st.integers(1, 8),
    bounded=st.booleans(),
    margin=st.sampled_from([0.0, 1e-6, 0.3, 2.0]),
)
def test_region_matches_linprog(seed, K, D, bounded, margin):
    from scipy.optimize import linprog

    rng = np.random.default_rng(seed)
    A = np.round(rng.normal(size=(K, D)), 1)  # rounded: ties and zero columns happen
    b = np.round(rng.normal(size=K), 1)
    x0 = np.round(rng.normal(size=D), 1)
    cost = rng.choice([0.5, 1.0, 2.0], D)
    free = rng.random(D) > 0.2
    bnd = (x0 - rng.choice([0.0, 0.5, 2.0], D), x0 + rng.choice([0.0, 0.5, 2.0], D))
    bnd = bnd if bounded else None
    As, bs = softmax_rows(A, b)
    k = int(rng.integers(As.shape[0]))
    model = make_model(A, b)
    sol = query(model, x0, k, cost, free, bnd, margin=margin)
    fr = np.flatnonzero(free)
    M = (As[k] - np.delete(As, k, axis=0))[:, fr]
    z0 = As @ x0 + bs
    r = margin - (z0[k] - np.delete(z0, k))
    lo, hi = bnd if bounded else (np.full(D, -np.inf), np.full(D, np.inf))
    ub = np.concatenate([hi[fr] - x0[fr], x0[fr] - lo[fr]])
    if fr.size == 0:  # nothing moves: x̄ is the answer or there is none
        assert np.array_equal(sol.x[0], x0)
        assert sol.success[0] or sol.status[0] in (Status.UNREACHABLE, Status.NUMERIC)
        return
    res = linprog(
        np.concatenate([cost[fr], cost[fr]]), A_ub=-np.hstack([M, -M]), b_ub=-r,
        bounds=list(zip(np.zeros(ub.size), ub, strict=True)), method="highs",
    )  # fmt: skip
    if res.status == 2:
        assert not sol.success[0]
        assert sol.status[0] in (Status.INFEASIBLE, Status.UNREACHABLE)
        return
    assert res.status == 0
    if sol.success[0]:
        assert sol.distance[0] == pytest.approx(res.fun, rel=1e-9, abs=1e-12)
    else:  # only a margin of 0 at a tie can fail the model's strict argmax
        assert margin == 0.0 and sol.status[0] == Status.NUMERIC
    assert_valid(model, sol, x0[None], np.array([k]), free, bnd)


@settings(max_examples=30)
@given(
    seed=st.integers(0, 2**32 - 1),
    D=st.integers(1, 30),
    bounded=st.booleans(),
    lam=st.floats(1e-4, 10.0),
)
def test_binary_lam_kkt(seed, D, bounded, lam):
    w, c, x0, cost, free, bnd, k = binary_problem(seed, D, bounded)
    model = make_model(w[None], np.array([c]))
    sol = query(model, x0, k, cost, free, bnd, lam=lam)
    res = manhattan_kkt_residual(w[None], [c], x0, sol.x[0], k, cost, lam, free, bnd)
    assert res <= 1e-12 * (1 + lam * cost.max())
    assert np.array_equal(sol.x[0][~free], x0[~free])


def _scale_1e4(second_row, third_row):
    from fastcf import LinearExplainer

    A = np.array([[1e4, 0.0], second_row, third_row])
    return LinearExplainer.from_arrays(A, np.array([1.0, 0.0, 0.0])), np.array([-0.5, 0.0])


@pytest.mark.parametrize("third", [-1e4, -1.1e4], ids=["tied", "untied"])
def test_softmax_proba_at_logits_of_scale_1e4_with_a_box_regression(third):
    """Soak finding (seventh session, older than it): with a box, a softmax Manhattan
    ``proba=`` query at logits of scale 1e4 returned the box's far corner, x = (0.5, 1) at cost
    2.0, as a success. There q_j(x̄) ≈ e⁻⁵⁰⁰⁰, and the dual active set's jump to a face's
    optimum, r_j = e^{lqs_j − lq_j} − 1, overflowed (0 · inf = NaN in the line search). The
    optimum: p_0 ≥ 1/2 ⟺ z_2 − z_0 ≤ log(1 − e⁻¹) (z_1 − z_0 = −1 is fixed); moving x1 alone
    costs (4999 − log(1 − e⁻¹)) / |a_21|, and with a tie (|a_21| = 10⁴) x0 does as well. The
    answer without a box is the reference."""
    ex, x = _scale_1e4([1e4, 0.0], [0.0, third])
    best = (4999.0 - np.log1p(-np.exp(-1.0))) / abs(third)
    for box in ((x, x + 1.0), (x - 1.0, x + 10.0)):
        res = ex.explain(x, 0, proba=0.5, metric="manhattan", bounds=box)
        assert res.success
        assert best * (1 - 1e-9) <= res.distance <= best * (1 + 1e-9)
        assert ex.predict_proba(res.x[None])[0, 0] >= 0.5


@pytest.mark.parametrize("case", ["tied, no box", "rows 1e4 and 0.9e4"])
def test_softmax_proba_at_logits_of_scale_1e4_reaches_the_optimum(case):
    """Regressions (soak round M). "tied, no box" returned an optimal point (cost
    (4999 − log(1 − e⁻¹)) / 10⁴) as a numerical failure: p_0 fell 1e-13 short of τ, and the
    re-solve raised log τ by 3e-15, less than an ulp of the move shifts log p at this scale (the
    same bits again); it now raises by twice the shortfall. With rows (10⁴, 0), (0.9·10⁴, 0),
    (0, −1.1·10⁴) the search stopped at the iteration limit: the face's primal Newton
    (``_face_opt``) gave up from a start e⁻⁵⁰⁰ away (an astronomical step that 30 halvings did
    not tame), and the dual's own steps grew the class by e¹⁵ per iteration; the Newton steps
    are now capped in margin space. Against cvxpy/Clarabel, with and without a box."""
    if case == "tied, no box":
        ex, x = _scale_1e4([1e4, 0.0], [0.0, -1e4])
        res = ex.explain(x, 0, proba=0.5, metric="manhattan")
        assert res.success
        assert res.distance <= (4999.0 - np.log1p(-np.exp(-1.0))) / 1e4 * (1 + 1e-9)
        return
    ex, x = _scale_1e4([0.9e4, 0.0], [0.0, -1.1e4])
    A, b = np.array([[1e4, 0.0], [0.9e4, 0.0], [0.0, -1.1e4]]), np.array([1.0, 0.0, 0.0])
    for lo, hi in ((None, None), (x - 1.0, x + 1.0)):
        res = ex.explain(
            x, 0, proba=0.5, metric="manhattan", bounds=None if lo is None else (lo, hi)
        )
        ref, _ = linear_cf_cvxpy(A, b, x, 0, "proba", 0.5, metric="manhattan", lo=lo, hi=hi)
        assert res.success, res.message
        assert ex.predict_proba(res.x[None])[0, 0] >= 0.5
        assert abs(res.distance - ref) <= 1e-9 * ref


def test_manhattan_region_source_at_the_margin_in_floating_point():
    """Regression (soak round M): z_0 − z_2 = 1 − 7.7e-121 at x̄ = (1, 0) rounds to exactly the
    margin 1.0. The Euclidean form returns x̄ itself; the Manhattan LP, with the margin raised
    by its rounding level, returned x0 = 1 + 4.4e-16 first and x̄ (its restriction to feature
    1) second, so ``enumerate``'s costs were not nondecreasing. x̄ meets the margin as the
    model computes it, so it is the answer of both metrics."""
    from fastcf import LinearExplainer

    A = np.array([[1.0, 7.71202323e-121], [0.0, 0.0], [7.71202323e-121, 7.71202323e-121]])
    ex = LinearExplainer.from_arrays(A, np.zeros(3))
    x = np.array([1.0, 0.0])
    alts = ex.enumerate(x, 0, k=2, region=True, margin=1.0, metric="manhattan")
    d = [a.distance for a in alts]
    assert all(d[i] <= d[i + 1] for i in range(len(d) - 1))
    for metric in ("manhattan", "euclidean"):
        res = ex.explain(x, 0, region=True, margin=1.0, metric=metric)
        assert res.success and np.array_equal(res.x, x), metric


@pytest.mark.parametrize("source", [-1e3, -1e4, -1e5, -1e6, -1e7])
def test_softmax_proba_at_logits_1e5_with_a_tied_competitor(source):
    """Soak round N: A = (0, 10, 10)ᵀ, x̄ = −10⁴ (logits 0, −10⁵, −10⁵), target 1, τ = 1/4.
    Classes 1 and 2 tie everywhere, so the answer is where p_1 = p_2 = 1/4, x = −log(2)/10 —
    which another class ties, a documented BELOW_DECISION outcome (the Euclidean form says so).
    From x̄ = −10⁴ the entropy dual ran out of iterations: the face's Newton (``_face_opt``)
    asked its gradient for 1e-14 of λc, below the rounding of margins that cancel from 10⁵, and
    at x̄ = −10⁷ a jump back to the face's optimum, which ``_restore`` had moved by an ulp,
    repeated itself. Both now stop at the rounding: the answer by hand, to the rounding of x̄'s
    logits."""
    from fastcf import LinearExplainer

    ex = LinearExplainer.from_arrays(np.array([[0.0], [10.0], [10.0]]), np.zeros(3))
    x = np.array([source])
    for tau, want in ((0.25, -np.log(2.0) / 10), (0.2, -np.log(3.0) / 10)):
        res = ex.explain(x, 1, proba=tau, metric="manhattan")
        assert res.status == 7, (tau, res.message)
        assert abs(res.x[0] - want) <= 1e-12 + 64 * np.finfo(float).eps * abs(source) * 10
        assert ex.predict_proba(res.x[None])[0, 1] >= tau


def test_softmax_proba_far_source_re_solves_past_its_rounding():
    """Soak round N: x̄ = 10⁵, target 3 of A = (0, 0, 0, −1)ᵀ, τ = 1/2: the answer −log 3 has
    p_3 = 1/2 to the last bit, and the re-solves raised log τ by 2e-16, less than the rounding
    of x̄ + δ at x̄ = 10⁵ (the same bits each time: a numerical failure). From the second
    re-solve the raise is at least twice the rounding of x̄'s logits."""
    from fastcf import LinearExplainer

    ex = LinearExplainer.from_arrays(np.array([[0.0], [0.0], [0.0], [-1.0]]), np.zeros(4))
    for s in (1e4, 1e5, 1e6):
        res = ex.explain(np.array([s]), 3, proba=0.5, metric="manhattan")
        assert res.success, (s, res.message)
        assert ex.predict_proba(res.x[None])[0, 3] >= 0.5
        assert abs(res.distance - (s + np.log(3.0))) <= 1e-9 * s


def test_softmax_region_margin_zero_at_a_tie_moves_past_the_lp_tolerance():
    """Soak round O: x̄ = 0 ties the target (z_0 = z_2 = 0) and another class has slack 1. The
    margin, raised by the rounding need to ~2e-15, is below the LP's relative tolerance (1e-12
    of the largest |rhs|, here 1), so the LP returned x̄ round after round: a numerical failure
    at the boundary. The re-solve now raises the margin above that tolerance."""
    ex = LinearExplainer.from_arrays(np.array([[0.0], [1.0], [1.0]]), np.array([0.0, -1.0, 0.0]))
    for X in (np.zeros(1), np.zeros((1, 1))):
        res = ex.explain(X, 0, region=True, margin=0.0, metric="manhattan")
        assert np.all(res.success)
        x = np.atleast_2d(res.x)[0, 0]
        assert -1e-11 < x < 0.0  # past the tie, by the LP's tolerance at most
        z = ex.coef_ @ np.atleast_2d(res.x)[0] + ex.intercept_
        assert z[0] > z[2] and z[0] > z[1]


def test_softmax_proba_singular_face_does_not_cycle():
    """Soak round P (seed 305): A = ((−1, 0, −1), (−1, −1, −1), (−1, −1, −1), (0, −1, −1)),
    x̄ = (100, 0, 0), target 0, τ = 1/2, Manhattan. Classes 1 and 2 sit at q ~ 1e-44, so making
    feature 1 tight beside feature 0 gave a face singular in q's weights; the entropy dual
    dropped feature 1, its line search put it back at α = 0, and so on to the iteration limit.
    The optimum is not unique: any x_0 = 100 − t, x_1 = t + (≥ 0 within rounding) for
    t ∈ [0, 100] costs 100 (x_1 − x_0 is the margin over class 3, x_1 the one over 1 and 2)."""
    from fastcf import LinearExplainer

    A = np.array([[-1.0, 0.0, -1.0], [-1.0, -1.0, -1.0], [-1.0, -1.0, -1.0], [0.0, -1.0, -1.0]])
    ex = LinearExplainer.from_arrays(A, np.zeros(4))
    x = np.array([100.0, 0.0, 0.0])
    res = ex.explain(x, 0, proba=0.5, metric="manhattan")
    assert res.success, res.message
    assert res.distance == pytest.approx(100.0, rel=1e-12)
    assert ex.predict_proba(res.x[None])[0, 0] >= 0.5
    assert int(ex.predict(res.x[None])[0]) == 0


@pytest.mark.parametrize("x0", [(1e5, 1e5), (10.0, 0.0), (1e3, -5.0)])
def test_softmax_proba_with_identical_columns(x0):
    """A = ((−1, −1), (0, 0), (−1, −1)), target 0, τ = 1/4: classes 0 and 2 tie everywhere, so
    the answer (x_0 + x_1 = log 2 at the least cost) is the documented BELOW_DECISION outcome
    (class 1 wins at p = (1/4, 1/2, 1/4)). Soak round P (seed 307; seed 309 at 9 208): the
    entropy dual made both identical columns tight, their face was singular, and dropping one
    and adding it back at α = 0 cycled to the iteration limit. Since round Q the face's primal
    Newton finds the optimum of such a face (it is not unique: any split of the move between the
    two columns), and the dual jumps there before it drops a feature."""
    from fastcf import LinearExplainer

    A = np.array([[-1.0, -1.0], [0.0, 0.0], [-1.0, -1.0]])
    ex = LinearExplainer.from_arrays(A, np.zeros(3))
    x0 = np.array(x0)
    res = ex.explain(x0, 0, proba=0.25, metric="manhattan")
    assert res.status == 7, res.message
    assert ex.predict_proba(res.x[None])[0, 0] >= 0.25
    assert res.x.sum() == pytest.approx(np.log(2.0), abs=1e-8)
    assert res.distance == pytest.approx(x0.sum() - np.log(2.0), rel=1e-12)


def test_log_step_of_no_step_is_zero():
    """Soak round P (seed 307): a line search stopped at a kink at α = 0 after a jump whose
    r_k overflowed (d_k ~ 2e5): log(1 + α r_k) came out as d_k + log(e^{−d_k}) = −inf, so log q_k
    became −inf and then NaN, and the dual ran to its iteration limit on NaNs (and, run as
    Python, math.log raised ValueError for α > 1)."""
    from fastcf._kernels.l1.entropy import _log_step

    assert _log_step(0.0, np.inf, 2e5) == 0.0
    assert _log_step(0.5, np.inf, 2e5) == pytest.approx(2e5 + np.log(0.5), rel=1e-15)
    assert np.isnan(_log_step(2.0, np.inf, -1.0))  # 2 − e < 0: NaN, compiled or not


# soak round Q, seed 321: rows of 974 beside 1e-177, two features frozen, weights
_Q321_A = np.array([
    [3.4943531602502986e-177, 974.7103537446327, -2.220446049250313e-13, -67.63896700737449],
    [-1.256017857312088e-24, -500.0, 49.16776586681615, -1.4355884465138475e-269],
    [954.2961586353331, 2.2250738585072014e-305, -1000.0, -1000.0],
    [3.704510798323086e-07, -539.7967543825193, 3.704510798323086e-07, 635.6046368912209],
])  # fmt: skip
_Q321_B = np.array([-0.5504529090580083, 1e-14, 2.1520634734959574e-42, -0.7305054328207916])
_Q321_X = np.array([100.0, -719.6748307322123, -1000.0, -195.28243720985628])
_Q321_W = np.array([0.6662981689834733, 0.5598466184922201, 1.3250857549832782, 1.4074632126942106])


@pytest.mark.parametrize("lam", [6.0, 16.9, 30.1498, 35.68])
def test_softmax_lam_dual_that_stalls_on_an_underflowed_class_restarts(lam):
    """Soak round Q (seed 321). At x̄ class 1's probability is e⁻⁹⁸⁰⁰⁰⁰ beside class 2's; the
    answer needs both free features (0 and 3) and puts class 1 at 0.98. The entropy dual moved
    class 1's log-probability by a bounded step per iteration, stalled at e⁻⁹⁸⁰⁰⁰⁰, and stopped
    on the face of feature 0 alone: at λ = 30.1498 it called x_0 = −1 973.8 "the optimum" with a
    duality gap of 4.2·10⁴ (and at λ = 16.9 ran to its iteration limit). The answer's own KKT
    conditions are now its certificate, and the dual restarts from the answer's probabilities
    where they fail. Checked: the KKT residual at the answer's own probabilities, and an energy
    no higher than the old answer's."""
    ex = LinearExplainer.from_arrays(_Q321_A, _Q321_B)
    free = np.array([True, False, False, True])
    res = ex.explain(_Q321_X, 0, lam=lam, frozen=[2, 1], weights=_Q321_W, metric="manhattan")
    assert res.status in (0, 5), res.message  # converged; 5: the optimum is not in class 0
    x = res.x
    kkt = manhattan_kkt_residual(_Q321_A, _Q321_B, _Q321_X, x, 0, _Q321_W, lam, free=free)
    assert kkt <= 1e-8 * lam * _Q321_W.max()
    old = _Q321_X.copy()
    old[0] = -1973.76109782  # the stalled dual's answer
    e_new = manhattan_energy(_Q321_A, _Q321_B, _Q321_X, 0, _Q321_W, lam, x)
    assert e_new <= manhattan_energy(_Q321_A, _Q321_B, _Q321_X, 0, _Q321_W, lam, old)
    assert res.info["gap"] <= 1e-9 * e_new


def test_softmax_proba_polish_accepts_a_residual_at_the_rounding_of_its_margins():
    """Soak round Q (seed 321, ``linear_few_changes`` at 3 320): ``proba=0.0614`` on the model
    above. Its answer moves features 0 and 3 by 1.6·10⁴ on rows of 10³, so the margins are
    formed to ~10⁻⁹ and the KKT residual of the right structure cannot go below ~10⁻⁷ of λc:
    the polish asked for 10⁻⁹, refused it at every λ, and the λ-search ran to the iteration
    limit. The answer: p_0 ≥ τ, and class 1 still wins (τ < 1/2: BELOW_DECISION, documented);
    both free features move, at the multiplier the KKT conditions of ``lam=`` give back."""
    ex = LinearExplainer.from_arrays(_Q321_A, _Q321_B)
    tau = 0.06140459958956353
    res = ex.explain(_Q321_X, 0, proba=tau, frozen=[2, 1], weights=_Q321_W, metric="manhattan")
    assert res.status == 7, res.message
    assert ex.predict_proba(res.x[None])[0, 0] >= tau
    assert np.array_equal(res.x[[1, 2]], _Q321_X[[1, 2]])
    assert (res.x[[0, 3]] < _Q321_X[[0, 3]]).all()
    free = np.array([True, False, False, True])
    lam = res.lam
    kkt = manhattan_kkt_residual(_Q321_A, _Q321_B, _Q321_X, res.x, 0, _Q321_W, lam, free=free)
    assert kkt <= 1e-6 * lam * _Q321_W.max()
    # the same point answers lam= at its multiplier
    same = ex.explain(_Q321_X, 0, lam=lam, frozen=[2, 1], weights=_Q321_W, metric="manhattan")
    np.testing.assert_allclose(same.x, res.x, rtol=1e-9)


@pytest.mark.parametrize("x0", [1e3, 1e6, 1e8])
def test_softmax_manhattan_with_identical_columns_at_large_logits(x0):
    """Soak round R (seed 337, ``linear_few_changes`` at 1 429): A = (0, −(3/8)(1, 0, 1),
    −(3/8)(1, 1, 1)), x̄ = (x0, 0, 0), target 1, τ = 1/2. Features 0 and 2 have the same column,
    so with s = x_0 + x_2 and u = x_1, p_1 ≥ 1/2 ⟺ e^{−3s/8}(1 − e^{−3u/8}) ≥ 1, and the least
    L1 move is u = 8 log 2 / 3 and s = −u (any split of s between x_0 and x_2 that moves both
    down): distance x0 + 16 log 2 / 3. At x0 = 10⁶ ``explain`` returned a point 2.8 dearer: the
    λ-search's check refused the right structure (the twin column's v_2 = v_0 = −λc to the
    rounding of margins of 3.75·10⁵, not to 1e-11), and its collapsed bracket returned the dual's
    unpolished answer; ``enumerate`` then listed that answer before a cheaper one. At x0 = 10⁸ the
    dual added the twin at α = 0, dropped it from the singular face, and added it again, to the
    iteration limit. The check now allows the rounding of v_i, and a feature whose column is a
    tight one's is not added to the face."""
    A = np.array([[0.0, 0.0, 0.0], [-0.375, 0.0, -0.375], [-0.375, -0.375, -0.375]])
    ex = LinearExplainer.from_arrays(A, np.zeros(3))
    x = np.array([x0, 0.0, 0.0])
    u = 8.0 * np.log(2.0) / 3.0
    res = ex.explain(x, 1, proba=0.5, metric="manhattan")
    assert res.success, res.message
    assert ex.predict_proba(res.x[None])[0, 1] >= 0.5
    assert res.distance == pytest.approx(x0 + 2.0 * u, rel=1e-12)
    assert res.x[1] == pytest.approx(u, rel=1e-8)
    assert res.x[0] <= x0 and res.x[2] <= 0.0
    alts = ex.enumerate(x, 1, k=2, proba=0.5, metric="manhattan")
    assert [a.distance for a in alts] == sorted(a.distance for a in alts)
    assert alts[0].distance == res.distance
    # lam= at the multiplier of the answer: the same structure, certified by its KKT conditions
    sol = ex.explain(x, 1, lam=res.lam, metric="manhattan")
    kkt = manhattan_kkt_residual(A, np.zeros(3), x, sol.x, 1, np.ones(3), res.lam)
    assert kkt <= 1e-8 * res.lam


def test_softmax_manhattan_region_never_reads_an_empty_box():
    """Soak round R (seed 350, ``linear_few_changes`` at 3 231): A = (0, (1, −1, −e), (1, −e, −e)),
    e = 2.3e-107, x̄ = −(1/2, 1/2, 1/2), target 0, ``region=True, margin=1``, only x_1 free. The
    LP's answer x_1 = 2.2·10¹⁰⁶ meets the margins, but its rounding need (the smallest margin
    against the largest competitor's scale, a known limitation) made ``verify.region`` raise the
    margin to 10⁹¹, 10¹⁸⁴, 10²⁷⁶ and then to an LP whose basic value was inf; forming x from it
    read ``hi[i]`` of the empty box of an unbounded query, which the compiled kernel does not
    bounds-check. x came back as those bits, (−1/2, 0, −1/2) with margins 1/2, and was called a
    success (``enumerate`` listed it third, cheaper than the second). It is a numerical failure
    now; run without JIT (CI's no-JIT stage) the old code raised IndexError."""
    e = 2.3072705780731462e-107
    A = np.array([[0.0, 0.0, 0.0], [1.0, -1.0, -e], [1.0, -e, -e]])
    ex = LinearExplainer.from_arrays(A, np.zeros(3))
    x = np.array([-0.5, -0.5, -0.5])
    # (the LP overflows on its way: silent compiled, a NumPy scalar warning where the kernels
    # run as Python under NUMBA_DISABLE_JIT=1)
    with np.errstate(over="ignore", invalid="ignore"):
        res = ex.explain(x, 0, region=True, margin=1.0, metric="manhattan", frozen=[0, 2])
        alts = ex.enumerate(x, 0, k=3, region=True, margin=1.0, metric="manhattan")
    if res.success:  # a success meets the margin it was asked for
        z = A @ res.x
        assert z[0] - max(z[1], z[2]) >= 1.0 - 1e-12
    else:
        assert res.status == 4
    d = [a.distance for a in alts]
    assert d == sorted(d) and d[0] == pytest.approx(1.0)
    for a in alts:
        z = A @ a.x
        assert z[0] - max(z[1], z[2]) >= 1.0 - 1e-12


def test_softmax_manhattan_face_optimum_with_classes_at_e_minus_27():
    """Soak round R (seed 356, ``linear_few_changes`` at 3 548): A = (¼e_0, e_0, 0, ¼e_1), b =
    (0, −100, 0, 0), x̄ = (100, 100, 100), target 3, τ = ½. At x̄, z = (25, 0, 0, 25): p_3 is a
    hair below ½, and lowering x_0 by δ = 8 e⁻²⁵ (e²⁵(1 − e^{−δ/4}) = 1 + e^{−δ}) reaches it,
    cheaper per unit than raising x_1. The entropy dual reached that face's optimum at its third
    step, but its test that no class wants to grow asked r_j ≤ 1e-8 of classes 1 and 2 at q ~
    e⁻²⁷, whose r_j the face system only knows to ±5e-6: it ran to the iteration limit (twice,
    with the restart). Classes the decrement cannot see are now asked for 1e-4."""
    A = np.array([[0.25, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.25, 0.0]])
    b = np.array([0.0, -100.0, 0.0, 0.0])
    ex = LinearExplainer.from_arrays(A, b)
    x = np.array([100.0, 100.0, 100.0])
    res = ex.explain(x, 3, proba=0.5, metric="manhattan")
    assert res.success, res.message
    assert ex.predict_proba(res.x[None])[0, 3] >= 0.5
    assert np.array_equal(res.x[1:], x[1:]) and res.x[0] < 100.0
    # δ is formed as 100 − δ: known to an ulp of 100 (1.4e-14), 1e-4 of δ
    assert res.distance == pytest.approx(8.0 * np.exp(-25.0), rel=1e-3)


def _region_lp_scaled(A, b, x0, k, cost, margin):
    """``region=True`` under the weighted L1 cost by SciPy's HiGHS, each row (a_k − a_j) scaled
    to a largest coefficient of 1 (no bounds, nothing frozen). Returns linprog's result."""
    from scipy.optimize import linprog

    M = A[k] - np.delete(A, k, axis=0)
    r = margin - ((A[k] @ x0 + b[k]) - (np.delete(A, k, axis=0) @ x0 + np.delete(b, k)))
    g = np.abs(M).max(axis=1)
    M, r = M / g[:, None], r / g
    return linprog(
        np.concatenate([cost, cost]), A_ub=-np.hstack([M, -M]), b_ub=-r, bounds=(0, None),
        method="highs",
    )  # fmt: skip


@pytest.mark.parametrize("margin", [0.0, 1e-6])
def test_a_tiny_model_row_is_not_called_infeasible(margin):
    """The dual simplex skips pivots below 1e-11 of a row's largest entry, so a target reached
    only through a coefficient of 6.8e-12 was reported infeasible (soak of
    test_fuzz_linear_few_changes[softmax]); HiGHS's second opinion finds the answer."""
    A = np.array([[-1.0, 1.0], [0.0, 1.0], [6.755e-12, 0.0], [0.0, 0.0]])
    ex = LinearExplainer.from_arrays(A, np.zeros(4))
    res = ex.explain(np.zeros(2), 3, region=True, metric="manhattan", margin=margin)
    assert res.success and res.status == 0
    z = A @ res.x  # class 3 (logit 0) strictly above every other, in plain arithmetic
    assert np.all(z[:3] < 0.0)
    # the reference: the same LP by HiGHS with each row divided by its largest coefficient
    # (unscaled, HiGHS too drops the 6.8e-12 and says infeasible: cvxpy's manhattan_cvxpy does)
    ref = _region_lp_scaled(A, np.zeros(4), np.zeros(2), 3, np.ones(2), margin)
    assert ref.status == 0
    assert ref.fun <= res.distance <= ref.fun * (1 + 1e-9) + 1e-200
    if margin > 0:  # x₁ ≤ −m/6.755e-12 and x₂ ≤ x₁ − m: the optimum is 2m/6.755e-12 + m
        assert res.distance == pytest.approx(2 * margin / 6.755e-12 + margin, rel=1e-9)
        assert np.all(-z[:3] >= margin * (1 - 1e-9))
    else:  # the margin raised to its floor: a tiny step, as the Euclidean answer's
        assert 0 < res.distance < 1e-200
    sol = constrained_l1(
        make_model(A, np.zeros(4)), np.zeros((1, 2)), np.array([3]), np.ones(2),
        np.ones(2, dtype=bool), None, None, np.array([1e-6]), 1e-10, 100,
    )  # fmt: skip
    assert sol.info["highs"][0] and sol.success[0]


def test_a_row_infeasible_indeed_stays_infeasible():
    """The second opinion agrees where the box leaves no point of the class."""
    A = np.array([[-1.0, 1.0], [0.0, 1.0], [6.755e-12, 0.0], [0.0, 0.0]])
    ex = LinearExplainer.from_arrays(A, np.zeros(4))
    res = ex.explain(np.zeros(2), 3, region=True, metric="manhattan", margin=1e-6,
                     bounds=(-1e3, 1e3))  # fmt: skip
    assert not res.success and res.status == Status.INFEASIBLE


def test_short_path_enumerate_and_long_path_agree_on_a_softmax_region():
    """A soak find: the one-query short path (and enumerate's answers) solved the softmax region
    LP with its own re-solves while the long path (verify.region) did not, so x̄ = 0 with
    frozen=[] (the long path) gave −2.9999999999999996 and without it (the short path)
    −3.000000000006: enumerate's first answer was not explain's. Now the same bits."""
    A = np.array([[-0.25], [0.0], [1.0]])
    ex = LinearExplainer.from_arrays(A, np.array([0.25, 0.0, 0.0]))
    kw = {"region": True, "margin": 1.0, "metric": "manhattan"}
    short = ex.explain(np.zeros(1), 0, **kw)
    long = ex.explain(np.zeros(1), 0, frozen=[], **kw)
    first = ex.enumerate(np.zeros(1), 0, k=1, **kw)[0]
    assert short.success and long.success and first.success
    assert np.array_equal(short.x, long.x) and np.array_equal(first.x, long.x)
    assert short.distance == long.distance == first.distance


def test_second_opinion_skips_a_row_that_does_not_scale():
    """A soak find: rows of 1e-310 against a right-hand side of order 1 overflowed in the
    scaling of the HiGHS program (a RuntimeWarning, an error under -W error); such a row is
    skipped (the kernel's verdict stands) and a row that scales is still answered."""
    from fastcf._linear.manhattan import second_opinion

    model = make_model(np.array([[0.0, 0.0], [1e-310, 0.0], [0.0, 1.0]]), np.array([1.0, 0, 0]))
    X = np.zeros((2, 2))
    Zbar = model.logits(X)
    Margins = np.zeros((2, 3))
    lo = hi = np.zeros((1, 0))
    found, Xs, gap = second_opinion(
        model, X, np.array([1, 2]), Margins, Zbar, np.ones(2), np.ones(2, dtype=bool), lo, hi,
        False, np.array([0, 1]),
    )  # fmt: skip
    assert not found[0] and np.array_equal(Xs[0], X[0])
    assert found[1] and Xs[1, 1] >= 1.0 - 1e-9 and np.isfinite(gap[1])


def test_second_opinion_meets_a_row_whose_rhs_is_below_highs_tolerance():
    """Soak find (docs/scripts/soak_manhattan_region.py): a margin of 1e-6 through a row of
    1.67 beside one through 1.6e-14 scaled to a right-hand side of 1e-14, below HiGHS's
    tolerance: its point tied with class 2, the margin was raised and raised again until the
    box ran out (a false "infeasible"). Each row is now asked past its right-hand side."""
    A = np.array([[1.5942251937549168e-14, 0.0], [0.0, 1.4080725577404301], [-1.6694540954727066,
                  1.6694540954727066], [0.0, 0.0]])  # fmt: skip
    bnd = (np.array([-1e9, -np.inf]), np.array([0.0, 2.0]))
    ex = LinearExplainer.from_arrays(A, np.zeros(4))
    res = ex.explain(np.zeros(2), 3, region=True, metric="manhattan", margin=1e-6, bounds=bnd)
    assert res.success and res.status == 0
    z = A @ res.x
    assert np.all(z[:3] <= -1e-6 * (1 - 1e-9)) and np.all(res.x >= bnd[0])
    # x₁ ≤ −1e-6/1.594e-14, x₂ ≤ x₁ − 1e-6/1.669: 2·1e-6/1.594e-14 + 1e-6/1.669
    want = 2e-6 / 1.5942251937549168e-14 + 1e-6 / 1.6694540954727066
    assert res.distance == pytest.approx(want, rel=1e-9)


def test_second_opinion_answer_stays_in_the_box():
    """Soak find: HiGHS's point x̄ + σ(u − v) at a bound rounded past it (−1000.0000000000001
    for lo = −1000) and was called a success; it is clipped into the box."""
    A = np.array([
        [-1.7729792558058905e-11, 3.7451731512067455e-13, 4.1052845544257154e-12,
         -3.3379547179919579e-11],
        [-5.7644779354840689e-11, 7.1178945392136018e-13, 7.0101223019217948e-12,
         -3.8808607630709536e-11],
        [5.8883627986566059e-02, 1.2745955041290555e00, 1.4848795486398438e00,
         2.2449588347791893e00],
        [-1.7653292807998810e-11, -7.9490375998585057e-10, -3.8339230220410935e-11,
         -3.3423485243716161e-11],
    ])  # fmt: skip
    w = np.array([3.4158355757626754e-02, 4.6929077663816632e-01, 1.1178692891063977e-02,
                  4.6320310606000859e01])  # fmt: skip
    bnd = (np.array([-np.inf, 0.0, -1e3, -1e9]), np.array([1e9, 1e9, 0.0, 2.0]))
    ex = LinearExplainer.from_arrays(A, np.zeros(4))
    res = ex.explain(np.zeros(4), 0, region=True, metric="manhattan", margin=1e-6,
                     weights=w, bounds=bnd)  # fmt: skip
    assert res.success and np.all(res.x >= bnd[0]) and np.all(res.x <= bnd[1])
    z = A @ res.x
    assert z[0] > z[1:].max()


def test_a_max_changes_node_whose_move_overflows_costs_inf_silently():
    """A node that may move only a feature whose rows are ~1e-299 needs a move of ~1e300: its
    distance overflowed in a matmul (a RuntimeWarning, an error here; found by a helper's fuzz
    beside the seed-507 soak). It is inf, silently, and the enumeration answers."""
    A = np.array([
        [2.5402107670525908e1, 9.759544059409086e1, 9.0210348971725331e-299,
         -8.9246562089406424e1, 1.5649955238009605e1, 6.5178690116568205e1],
        [2.9020035783537491e1, -1.9786395563637281e1, -1.0e2, 7.9206335156899414e1, -1.0e2,
         8.2025856002159216e1],
        [0.0] * 6,
        [5.2566414081247074e-299, 2.7713290373159793e1, 1.7118451635442721e1,
         4.9888639203484345e1, -2.6588599502591848e1, -2.5075579548128111e1],
    ])  # fmt: skip
    b = np.array([9.2873448600992123e-202, -3.1233684702519707e-2, -5.2777533219197585e-2,
                  6.8047125636222935e-2])  # fmt: skip
    x = np.array([249599.63713823384, 955618.8032992785, 561130.3803889996, -64339.11781895696,
                  -362504.0877629093, 0.0])  # fmt: skip
    w = np.array([2246.039034370335, 1370.5035377155568, 2990.1635792315524, 5865.588225356442,
                  7704.538828876163, 4486.531585648787])  # fmt: skip
    ex = LinearExplainer.from_arrays(A, b)
    alts = ex.enumerate(x, 2, k=4, region=True, margin=1.0, weights=w, metric="manhattan",
                        max_changes=1, bounds=(x - np.inf, x + 1.0))  # fmt: skip
    for a in alts:
        assert a.success and np.isfinite(a.distance) and a.changed_index.size <= 1
        assert ex.predict(a.x[None])[0] == 2
