"""EnumSV (paper 003): exactness against brute force and scikit-learn, Proposition 1, the lazy
iterator, determinism, the row cache and bad input."""

import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from reference import (
    svm_brute_force_ref,
    svm_dual_objective_ref,
    svm_fit_subset_ref,
    svm_kernel_ref,
    svm_kkt_violation_ref,
)
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from fastcf import EnumeratedSVM, SVMEnumerator, enumerate_svms
from fastcf._status import Status, message
from fastcf.svm_enum import demographic_parity, hinge_loss


def _data(seed, n, d, noise=0.8, labels=(-1.0, 1.0)):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    pos = X[:, 0] + noise * rng.normal(size=n) > 0
    pos[0], pos[1] = True, False  # both classes
    return X, np.where(pos, labels[1], labels[0])


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    return X[:300], y[:300]


# --------------------------------------------------------------------------------------------
# exactness
# --------------------------------------------------------------------------------------------


@pytest.mark.needs_jit
@pytest.mark.parametrize(
    "seed, n, d, kernel, C",
    [
        (0, 8, 2, "rbf", 1.0),
        (1, 10, 3, "linear", 1.0),  # n > d + 1: singular Q, unique optimum in general position
        (2, 12, 2, "rbf", 10.0),
        (3, 11, 14, "linear", 0.5),  # n <= d: Q positive definite
        (14, 10, 2, "linear", 3.0),
        (5, 9, 3, "poly", 1.0),
    ],
)
def test_full_enumeration_equals_brute_force(seed, n, d, kernel, C):
    X, y = _data(seed, n, d)
    gamma = 1.0 / (d * X.var())  # what gamma="scale" means, computed on the whole data set
    ref = svm_brute_force_ref(X, y, C, kernel, gamma=gamma, coef0=1.0, support_tol=1e-10 * C)
    it = SVMEnumerator(C=C, kernel=kernel, coef0=1.0).enumerate(X, y)
    got = list(it)
    assert it.n_maxiter == 0
    f_got = np.array([m.objective for m in got])
    f_ref = np.array([f for f, _ in ref])
    # the same distinct supports ...
    supports = [tuple(m.support_.tolist()) for m in got]
    assert len(set(supports)) == len(supports)
    missing = {s for _, s in ref} - set(supports)
    extra = set(supports) - {s for _, s in ref}
    # (explicit messages: pytest's diff of two large sets takes minutes)
    assert not missing and not extra, f"missing {sorted(missing)[:5]}, extra {sorted(extra)[:5]}"
    # ... with the same objective values, in the same descending order
    assert f_got.shape == f_ref.shape
    np.testing.assert_allclose(f_got, f_ref, rtol=0, atol=1e-9)
    assert np.all(np.diff(f_got) <= 1e-12)
    ref_support = [s for _, s in ref]
    for r in range(len(got)):
        near = np.abs(f_ref - f_got[r]) < 1e-9  # exact ties may come in either order
        if near.sum() == 1:
            assert supports[r] == ref_support[r]
        else:
            assert supports[r] in {ref_support[i] for i in np.flatnonzero(near)}
    # each model is the SVM of its own subset: objective recomputed from α independently
    K = svm_kernel_ref(X, X, kernel, gamma, 1.0, 3)
    for m in got[:20]:
        assert svm_dual_objective_ref(K, y, m.alpha) == pytest.approx(m.objective, abs=1e-10)
        assert np.all(m.alpha[list(m.removed_)] == 0)
        subset = np.setdiff1d(np.arange(n), m.removed_)
        assert svm_kkt_violation_ref(K, y, C, subset, m.alpha) < 1e-8


@pytest.mark.needs_jit
@pytest.mark.parametrize("C", [0.1, 1.0])
def test_first_model_is_svc_on_full_data(cancer, C):
    X, y = cancer
    first = SVMEnumerator(C=C, tol=1e-8).enumerate(X, y, k=1)[0]
    svc = SVC(kernel="linear", C=C, tol=1e-10).fit(X, y)
    y_pm = np.where(y == 1, 1.0, -1.0)
    alpha = np.zeros(len(y))
    alpha[svc.support_] = np.abs(svc.dual_coef_[0])
    f_svc = svm_dual_objective_ref(X @ X.T, y_pm, alpha)
    assert first.rank == 1
    assert first.objective == pytest.approx(f_svc, rel=1e-8)
    # SVC lists its support vectors class by class; EnumeratedSVM sorts them
    np.testing.assert_array_equal(first.support_, np.sort(svc.support_))
    np.testing.assert_allclose(first.alpha, alpha, atol=1e-6 * C)
    order = np.argsort(svc.support_)
    np.testing.assert_allclose(first.dual_coef_, svc.dual_coef_[:, order], atol=1e-6 * C)
    np.testing.assert_allclose(first.intercept_, svc.intercept_, atol=1e-6)
    np.testing.assert_allclose(first.decision_function(X), svc.decision_function(X), atol=1e-5)
    np.testing.assert_array_equal(first.predict(X), svc.predict(X))
    np.testing.assert_array_equal(first.classes_, svc.classes_)
    np.testing.assert_array_equal(first.n_support_, svc.n_support_)


@pytest.mark.needs_jit
@pytest.mark.parametrize(
    "kernel, params",
    [
        ("rbf", {"gamma": "scale"}),
        ("rbf", {"gamma": 0.3}),
        ("poly", {"degree": 2, "coef0": 1.0, "gamma": "auto"}),
        ("sigmoid", {"gamma": 0.01, "coef0": 0.0}),
    ],
)
def test_kernels_first_model_matches_svc(kernel, params):
    X, y = _data(7, 60, 4, labels=("no", "yes"))
    en = SVMEnumerator(C=2.0, kernel=kernel, **params)
    first = en.enumerate(X, y, k=1)[0]
    svc = SVC(C=2.0, kernel=kernel, tol=1e-10, **params).fit(X, y)
    assert svc.classes_.tolist() == first.classes_.tolist() == ["no", "yes"]
    np.testing.assert_array_equal(first.support_, np.sort(svc.support_))
    np.testing.assert_allclose(first.decision_function(X), svc.decision_function(X), atol=1e-6)
    np.testing.assert_array_equal(first.predict(X), svc.predict(X))


@pytest.mark.needs_jit
def test_precomputed_kernel_gives_the_same_models():
    X, y = _data(8, 40, 3)
    K = svm_kernel_ref(X, X, "rbf", gamma=0.5)
    a = SVMEnumerator(C=1.0, kernel="rbf", gamma=0.5).enumerate(X, y, k=15)
    b = SVMEnumerator(C=1.0, kernel="precomputed").enumerate(K, y, k=15)
    assert [m.support_.tolist() for m in a] == [m.support_.tolist() for m in b]
    np.testing.assert_allclose([m.objective for m in a], [m.objective for m in b], rtol=1e-12)
    Xt = np.random.default_rng(0).normal(size=(5, 3))
    Kt = svm_kernel_ref(Xt, X, "rbf", gamma=0.5)
    np.testing.assert_allclose(a[3].decision_function(Xt), b[3].decision_function(Kt), atol=1e-10)
    assert b[0].support_vectors_.shape == (b[0].support_.size, 0)


def test_gamma_scale_follows_svc():
    X, y = _data(9, 30, 3)
    it = SVMEnumerator(kernel="rbf").enumerate(X * 3.0, y)
    assert it.gamma == pytest.approx(1.0 / (3 * (X * 3.0).var()))
    assert SVMEnumerator(kernel="rbf", gamma="auto").enumerate(X, y).gamma == pytest.approx(1 / 3)


@pytest.mark.needs_jit
def test_sklearn_solver_gives_the_same_enumeration():
    X, y = _data(10, 50, 3)
    fast = SVMEnumerator(C=1.0, kernel="rbf").enumerate(X, y, k=20)
    slow = SVMEnumerator(C=1.0, kernel="rbf", solver="sklearn").enumerate(X, y, k=20)
    assert [m.support_.tolist() for m in fast] == [m.support_.tolist() for m in slow]
    np.testing.assert_allclose([m.objective for m in fast], [m.objective for m in slow], rtol=1e-6)
    for a, b in zip(fast[:5], slow[:5], strict=True):
        np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-5)


@pytest.mark.needs_jit
def test_each_model_is_the_svm_of_its_subset():
    X, y = _data(11, 40, 2)
    K = svm_kernel_ref(X, X, "rbf", gamma=1.0)
    for m in enumerate_svms(X, y, k=12, C=1.0, kernel="rbf", gamma=1.0)[1:]:
        subset = np.setdiff1d(np.arange(len(y)), m.removed_)
        # optimal for its own subset, checked in float64 ...
        assert svm_kkt_violation_ref(K, y, 1.0, subset, m.alpha) < 1e-8
        # ... and the same as libsvm's fit, to libsvm's accuracy (it caches the kernel in
        # single precision, so its α carry errors of order 1e-7)
        alpha, b = svm_fit_subset_ref(X, y, subset, 1.0, "rbf", gamma=1.0)
        np.testing.assert_allclose(m.alpha, alpha, atol=1e-6)
        assert m.intercept_[0] == pytest.approx(b, abs=1e-6)


# --------------------------------------------------------------------------------------------
# Proposition 1 and determinism (Assumption 1)
# --------------------------------------------------------------------------------------------


@pytest.mark.needs_jit
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(6, 30),
    d=st.integers(1, 5),
    kernel=st.sampled_from(["linear", "rbf"]),
    C=st.sampled_from([0.1, 1.0, 10.0]),
    keep=st.floats(0.0, 1.0),
)
def test_proposition1_removing_non_support_indices_keeps_alpha(seed, n, d, kernel, C, keep):
    X, y = _data(seed, n, d)
    it = SVMEnumerator(C=C, kernel=kernel).enumerate(X, y)
    rng = np.random.default_rng(seed)
    full = it.solve(np.arange(n))
    # a random S' with supp(α*(S)) ⊆ S' ⊆ S
    others = np.setdiff1d(np.arange(n), full.support_)
    sub = np.union1d(full.support_, others[rng.random(others.size) < keep])
    # warm-started from α*(S): returned bit for bit (0 iterations)
    warm = it.solve(sub, warm_start=full.alpha)
    np.testing.assert_array_equal(warm.alpha, full.alpha)
    assert warm.n_iter_ == 0
    # solved from scratch: the same optimum and the same support
    cold = it.solve(sub)
    np.testing.assert_array_equal(cold.support_, full.support_)
    np.testing.assert_allclose(cold.alpha, full.alpha, rtol=0, atol=1e-9 * max(C, 1.0))
    assert cold.objective == pytest.approx(full.objective, rel=1e-12, abs=1e-12)


@pytest.mark.needs_jit
def test_enumeration_is_deterministic(cancer):
    X, y = cancer
    runs = [SVMEnumerator(C=0.5).enumerate(X, y, k=25) for _ in range(2)]
    for a, b in zip(*runs, strict=True):
        np.testing.assert_array_equal(a.alpha, b.alpha)  # bit-identical
        assert a.objective == b.objective
        assert a.intercept_[0] == b.intercept_[0]
        assert a.removed_ == b.removed_
    it = SVMEnumerator(C=0.5).enumerate(X, y)
    sub = np.arange(5, 300)
    np.testing.assert_array_equal(it.solve(sub).alpha, it.solve(sub).alpha)


@pytest.mark.needs_jit
def test_row_cache_gives_identical_results(cancer):
    X, y = cancer
    dense = SVMEnumerator(C=0.5).enumerate(X, y)
    tiny = SVMEnumerator(C=0.5, cache_size=8 * 300 * 6 / 2**20).enumerate(X, y)  # 6 rows
    assert tiny._problem.cache.rows.shape == (6, 300)
    for _ in range(8):
        a, b = next(dense), next(tiny)
        np.testing.assert_array_equal(a.alpha, b.alpha)
        assert a.objective == b.objective
    assert tiny._problem.cache.counters[3] > 0  # rows were evicted ...
    assert tiny.kernel_rows > dense.kernel_rows  # ... and recomputed on demand
    assert dense.kernel_rows <= 300


# --------------------------------------------------------------------------------------------
# the iterator
# --------------------------------------------------------------------------------------------


@pytest.mark.needs_jit
def test_iterator_is_lazy(cancer):
    X, y = cancer
    it = SVMEnumerator(C=0.5).enumerate(X, y)
    assert it.n_solved == 0
    first = next(it)
    assert it.n_solved == 1  # only the root
    second = next(it)
    # the root's children were solved at the second call, nothing else
    assert it.n_solved + it.n_degenerate == 1 + first.support_.size
    assert second.rank == 2 and second.objective <= first.objective
    assert len(set(first.removed_) | set(second.removed_)) == 1


@pytest.mark.needs_jit
def test_top_k_list_and_wrapper_agree(cancer):
    X, y = cancer
    top = SVMEnumerator(C=0.5).enumerate(X, y, k=10)
    again = enumerate_svms(X, y, k=10, C=0.5)
    assert [m.rank for m in top] == list(range(1, 11))
    assert all(isinstance(m, EnumeratedSVM) for m in top)
    assert [m.objective for m in top] == [m.objective for m in again]
    assert len({tuple(m.support_) for m in top}) == 10


def test_enumeration_ends_and_k_larger_than_the_model_count():
    X = np.array([[0.0], [1.0], [3.0], [4.0]])
    y = np.array([0, 0, 1, 1])
    models = enumerate_svms(X, y, k=100, C=10.0)
    assert 0 < len(models) < 100
    # every model has both classes among its support vectors
    assert all(set(m.n_support_.tolist()) != {0} and min(m.n_support_) > 0 for m in models)


def test_degenerate_children_are_skipped():
    X = np.array([[0.0, 0.0], [0.2, 0.1], [0.4, -0.1], [2.0, 0.0]])
    y = np.array([0, 0, 0, 1])  # removing the only positive leaves a single class
    it = SVMEnumerator(C=1.0).enumerate(X, y)
    models = list(it)
    assert it.n_degenerate >= 1
    assert all(3 in m.support_.tolist() for m in models)
    assert all(m.n_support_[1] == 1 for m in models)
    # a single-class subset solved directly is DEGENERATE: no model, with either solver
    assert it.solve([0, 1, 2]) is None
    sk = SVMEnumerator(C=1.0, solver="sklearn").enumerate(X, y)
    assert sk.solve([0, 1, 2]) is None
    assert message(Status.DEGENERATE).startswith("degenerate")


def test_iteration_limit_is_reported():
    X, y = _data(12, 60, 3, noise=2.0)
    with pytest.warns(ConvergenceWarning, match="iteration limit"):
        it = SVMEnumerator(C=10.0, max_iter=3).enumerate(X, y)
        first = next(it)
    assert first.status == Status.MAXITER
    assert first.message == message(Status.MAXITER) == "iteration limit reached"
    assert it.n_maxiter >= 1


def test_models_pickle_and_metrics():
    X, y = _data(13, 30, 2, labels=("a", "b"))
    m = enumerate_svms(X, y, k=2, C=1.0)[1]
    m2 = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(m2.predict(X), m.predict(X))
    d = m.decision_function(X)
    t = np.where(y == "b", 1.0, -1.0)
    assert m.hinge_loss(X, y) == pytest.approx(np.mean(np.maximum(0, 1 - t * d)))
    assert hinge_loss(m, X, y) == m.hinge_loss(X, y)
    s = (X[:, 1] > 0).astype(int)
    pred_b = m.predict(X) == "b"
    expected = abs(pred_b[s == 1].mean() - pred_b[s == 0].mean())
    assert m.demographic_parity(X, s) == pytest.approx(expected)
    assert "rank=2" in repr(m)


def test_demographic_parity_by_hand():
    assert demographic_parity([1, 1, 0, 0], [1, 1, 0, 0]) == 1.0
    assert demographic_parity([1, 0, 1, 0], [True, True, False, False]) == 0.0
    assert demographic_parity(["y", "n", "n", "n"], [1, 1, 0, 0], positive="y") == 0.5
    with pytest.raises(ValueError, match="both groups"):
        demographic_parity([1, 0], [1, 1])
    with pytest.raises(ValueError, match="binary"):
        demographic_parity([1, 0], [2, 0])


# --------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params, X, y, exc, match",
    [
        ({}, [[0.0], [1.0]], [1, 1], ValueError, "single class"),
        ({}, [[0.0], [1.0], [2.0]], [0, 1, 2], ValueError, "only binary SVMs are enumerated"),
        (
            {"C": 0.0},
            [[0.0], [1.0]],
            [0, 1],
            ValueError,
            "C must be a finite real number > 0; got 0.0",
        ),
        ({"C": -1.0}, [[0.0], [1.0]], [0, 1], ValueError, "C must be a finite real number > 0"),
        ({"C": np.nan}, [[0.0], [1.0]], [0, 1], ValueError, "C must be a finite real number"),
        (
            {"C": "1"},
            [[0.0], [1.0]],
            [0, 1],
            TypeError,
            "C must be a finite real number > 0; got str",
        ),
        ({}, [[0.0], [np.nan]], [0, 1], ValueError, "X contains 1 NaN"),
        ({}, [[0.0], [1.0]], [0.0, np.nan], ValueError, "y contains NaN"),
        ({}, [[0.0], [1.0], [2.0]], [0, 1], ValueError, "y has 2 labels but X has 3 rows"),
        ({}, [0.0, 1.0], [0, 1], ValueError, "X must be 2-D"),
        ({}, [["a"], ["b"]], [0, 1], TypeError, "X must be a real numeric array"),
        ({"kernel": "cubic"}, [[0.0], [1.0]], [0, 1], ValueError, "kernel must be one of"),
        ({"solver": "cvx"}, [[0.0], [1.0]], [0, 1], ValueError, "solver must be one of"),
        ({"tol": 0.0}, [[0.0], [1.0]], [0, 1], ValueError, "tol must be a finite real number > 0"),
        ({"gamma": "big"}, [[0.0], [1.0]], [0, 1], ValueError, "gamma must be 'scale', 'auto' or"),
        ({"gamma": 0.0}, [[0.0], [1.0]], [0, 1], ValueError, "gamma must be a finite real number"),
        ({"gamma": [1.0]}, [[0.0], [1.0]], [0, 1], TypeError, "gamma must be a finite real"),
        ({"degree": 2.5}, [[0.0], [1.0]], [0, 1], TypeError, "degree must be an integer >= 0"),
        ({"degree": -1}, [[0.0], [1.0]], [0, 1], ValueError, "degree must be an integer >= 0"),
        ({"coef0": np.inf}, [[0.0], [1.0]], [0, 1], ValueError, "coef0 must be a finite real"),
        (
            {"support_tol": -1.0},
            [[0.0], [1.0]],
            [0, 1],
            ValueError,
            "support_tol must be a finite real number >= 0 or None",
        ),
        (
            {"max_iter": 0},
            [[0.0], [1.0]],
            [0, 1],
            ValueError,
            "max_iter must be an integer >= 1 or None; got 0",
        ),
        ({"max_iter": True}, [[0.0], [1.0]], [0, 1], TypeError, "max_iter must be an integer"),
        (
            {"cache_size": 0},
            [[0.0], [1.0]],
            [0, 1],
            ValueError,
            "cache_size must be a finite real number > 0",
        ),
        ({"kernel": "precomputed"}, [[0.0, 1.0, 2.0]] * 2, [0, 1], ValueError, "square"),
    ],
)
def test_bad_input(params, X, y, exc, match):
    with pytest.raises(exc, match=match):
        SVMEnumerator(**params).enumerate(X, y)


@pytest.mark.parametrize("k, exc", [(0, ValueError), (-3, ValueError), (2.0, TypeError)])
def test_bad_k(k, exc):
    with pytest.raises(exc, match="k must be an integer >= 1 or None; got"):
        enumerate_svms([[0.0], [1.0]], [0, 1], k=k)


def test_bad_prediction_input():
    m = enumerate_svms([[0.0, 0.0], [1.0, 1.0]], [0, 1], k=1)[0]
    with pytest.raises(ValueError, match="X has 3 columns"):
        m.predict([[0.0, 1.0, 2.0]])
    with pytest.raises(ValueError, match="not in the model's classes_"):
        m.hinge_loss([[0.0, 0.0]], [5])


@pytest.mark.needs_jit
def test_bench_rows_structure_and_agreement():
    from fastcf.bench.svm import svm_rows

    rows = svm_rows(quick=True)
    assert len(rows) == 2
    for r in rows:
        assert {"name", "fastcf_s", "baseline_s", "ratio", "accuracy_gap", "baseline"} <= set(r)
        assert r["fastcf_min"] <= r["fastcf_s"] <= r["fastcf_max"]
        assert r["fastcf_s"] > 0 and r["baseline_s"] > 0
        assert r["ratio"] == pytest.approx(r["baseline_s"] / r["fastcf_s"])
        assert r["accuracy_gap"] < 1e-6  # same objective sequence as the sklearn search


def test_load_benchmark_refuses_an_unknown_data_set():
    from fastcf.bench.svm import load_benchmark

    with pytest.raises(ValueError, match="name must be one of"):
        load_benchmark("sonar")


def test_api_module_holds_the_api_only():
    import fastcf.svm_enum as api

    assert set(api.__all__) == {
        "SVMEnumerator",
        "SVMEnumeration",
        "EnumeratedSVM",
        "enumerate_svms",
        "hinge_loss",
        "demographic_parity",
    }
    assert all(getattr(api, name) is not None for name in api.__all__)
    assert not hasattr(api, "bench_rows") and not hasattr(api, "_load_benchmark")


_DIGEST = """
import hashlib, numpy as np
from fastcf import enumerate_svms
rng = np.random.default_rng(3)
X = rng.normal(size=(60, 4))
y = (X[:, 0] + 0.5 * rng.normal(size=60) > 0).astype(int)
h = hashlib.sha256()
for m in enumerate_svms(X, y, k=15, C=1.0, kernel="rbf"):
    h.update(m.alpha.tobytes())
    h.update(np.float64(m.objective).tobytes())
print(h.hexdigest())
"""


@pytest.mark.needs_jit
def test_enumeration_is_bit_identical_across_processes():
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    runs = [
        subprocess.run(
            [sys.executable, "-c", _DIGEST], capture_output=True, text=True, check=True, env=env
        ).stdout.strip()
        for _ in range(2)
    ]
    ns = {}
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(_DIGEST, ns)
    assert runs[0] == runs[1] == buf.getvalue().strip()


def test_constant_data_gamma_scale_does_not_explode():
    # found by the reliability soak: X.var() of six copies of 0.48 rounds to ~1e-34, γ became
    # ~1e33 and the enumeration raised RuntimeError; a variance at rounding level is 0 (γ = 1)
    X = np.full((6, 1), 0.48)
    y = np.array([0, 1, 0, 1, 0, 1])
    models = enumerate_svms(X, y, k=5, kernel="poly")
    assert len(models) == 5
    objs = [m.objective for m in models]
    assert all(np.isfinite(objs)) and objs == sorted(objs, reverse=True)


def test_support_of_a_huge_kernel_is_not_empty_regression():
    # found by the soak run: poly kernel, gamma="scale" on two nearly equal points gives
    # γ = 262144 and K ~ 1e14, so every α of the optimum is ~2.6e-11; the old absolute support
    # threshold 1e-10 · C called the support empty and enumerate returned nothing
    X = np.array([[-0.41796875], [-0.421875]])
    y = np.array([0, 1])
    top = SVMEnumerator(C=1.0, kernel="poly").enumerate(X, y, k=1)
    ref = SVC(C=1.0, kernel="poly", tol=1e-10).fit(X, y)
    assert len(top) == 1
    np.testing.assert_array_equal(top[0].support_, np.sort(ref.support_))
    # two points: α_1 = α_2 = 2 / (K11 + K22 − 2 K12), exactly (libsvm's own is 8e-6 off here)
    mp = pytest.importorskip("mpmath")
    with mp.workdps(50):
        g = mp.mpf(1 / X.var())
        k = [[(g * mp.mpf(a) * mp.mpf(b)) ** 3 for b in X[:, 0]] for a in X[:, 0]]
        exact = float(2 / (k[0][0] + k[1][1] - 2 * k[0][1]))
    np.testing.assert_allclose(top[0].alpha, [exact, exact], rtol=1e-12)


@pytest.mark.needs_jit
def test_rank_deficient_kernel_keeps_the_equality_constraint_regression():
    # found by the fuzz suite (RuntimeError: "EnumSV produced an objective larger than its
    # predecessor's"): the degree-3 polynomial kernel of 1-D data has rank 1, and with a
    # duplicated row the active-set step's KKT matrix was singular within rounding but passed
    # the pivot test; its step broke Σ y α = 0 by 0.54 and SMO then optimised the shifted
    # problem, whose optimum (176.90) exceeded the parent's (176.52). The step is now refused
    # unless it keeps the equality, and SMO finishes from the feasible point.
    x = [0.0013179539968995414, -0.006456159583742298, 0.005264833371975268, 0.008607113640939102]
    x += [-3.9848030313662796e-05, 0.00036002763235852607, 0.0013179539968995414]
    X = np.array(x)[:, None]
    y = np.array([0, 1, 0, 1, 0, 1, 0])
    C = 33.213752974720045
    it = SVMEnumerator(C=C, kernel="poly").enumerate(X, y)
    top = [next(it) for _ in range(4)]
    y_pm = np.where(y == 1, 1.0, -1.0)
    K = svm_kernel_ref(X, X, "poly", gamma=it.gamma)
    for m in top:
        subset = np.setdiff1d(np.arange(len(y)), m.removed_)
        assert abs(y_pm @ m.alpha) <= 1e-12 * C
        assert svm_kkt_violation_ref(K, y_pm, C, subset, m.alpha) < 1e-7
        assert m.objective == pytest.approx(svm_dual_objective_ref(K, y_pm, m.alpha), rel=1e-12)
    objectives = [m.objective for m in top]
    assert objectives == sorted(objectives, reverse=True)
    # (libsvm is no reference here: on this kernel it stops at its iteration limit)


def test_gamma_scale_that_overflows_is_a_clear_error():
    # found by the fuzz suite: a variance of 4e-309 made γ = inf and the enumeration returned
    # no model at all (SVC fails too, with "dual coefficients ... not finite")
    X = np.array([[1.3189831e-154], [0.0]])
    y = np.array([0, 1])
    with pytest.raises(ValueError, match="gamma='scale' .* overflows"):
        SVMEnumerator(kernel="rbf").enumerate(X, y)


@pytest.mark.needs_jit  # as pure Python, the SMO kernel warns on NumPy scalar overflow here
def test_gamma_scale_that_overflows_is_no_error_when_gamma_is_unused_or_given():
    X = np.array([[1.3189831e-154], [0.0]])
    y = np.array([0, 1])
    # a number works, and the linear kernel does not use γ
    assert len(SVMEnumerator(kernel="rbf", gamma=1.0).enumerate(X, y, k=1)) == 1
    assert len(SVMEnumerator(kernel="linear").enumerate(X, y, k=1)) == 1


def test_ordering_check_allows_for_the_rounding_of_huge_kernels_regression():
    # found by the fuzz suite: six equal points of alternating labels, poly kernel of 1e24.
    # f = Σα − ½αᵀQα is ~20 but its terms are ~1e26, so f carries rounding errors far above
    # 1e-12·|f|; the order check raised RuntimeError on 20.0 > 19.999998 although no exact
    # optimum was out of order. It now allows n·eps times the terms.
    X = np.full((6, 1), 1e4)
    y = np.arange(6) % 2
    top = SVMEnumerator(C=10.0, kernel="poly").enumerate(X, y, k=5)
    assert len(top) == 5
    assert all(np.isfinite(m.objective) for m in top)
