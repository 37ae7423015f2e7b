"""max_changes= (exact few-feature answers), enumerate() (alternatives) and unit-free weights.

Every fast answer is compared with an independent reference of tests/reference.py: cvxpy
(Clarabel) per support for the brute force, scipy.optimize.milp (HiGHS) for Manhattan
max_changes, and brute force over all 2^D restrictions for enumerate.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import (
    best_subset_brute_force,
    enumerate_brute_force,
    linear_cf_cvxpy,
    manhattan_max_changes_milp,
    top_m_free_exact,
)

from fastcf import LinearExplainer

FORMS = {"region": ("region", 0.1), "proba": ("proba", 0.8), "lam": ("lam", 0.2)}


def _kw(form, param):
    return {"region": True, "margin": param} if form == "region" else {form: param}


def _problem(seed, K, D):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((K, D))
    b = rng.standard_normal(K)
    x0 = rng.standard_normal(D)
    ex = LinearExplainer.from_arrays(A, b)
    z = ex.decision_function(x0)
    k = int(z < 0) if K == 1 else int(np.argmin(z))
    w = rng.uniform(0.5, 2.0, D)
    lo, hi = x0 - rng.uniform(0.5, 3.0, D), x0 + rng.uniform(0.5, 3.0, D)
    return ex, A, b, x0, k, w, lo, hi


def _solver(A, b, x0, k, form, param, metric, w, lo, hi, frozen):
    def solve(S):
        return linear_cf_cvxpy(
            A, b, x0, k, form, param, metric=metric, w=w, frozen=~S | frozen, lo=lo, hi=hi
        )

    return solve


@pytest.mark.parametrize("K", [1, 4])
@pytest.mark.parametrize("form", ["region", "proba", "lam"])
@pytest.mark.parametrize("boxed", [False, True])
def test_max_changes_euclidean_equals_brute_force(K, form, boxed):
    for seed in range(2):
        ex, A, b, x0, k, w, lo, hi = _problem(10 * seed + K, K, 7)
        frozen = np.zeros(7, dtype=bool)
        frozen[3] = True
        form_, param = FORMS[form]
        box = (lo, hi) if boxed else None
        for m in (1, 2, 3):
            res = ex.explain(
                x0, k, **_kw(form_, param), weights=w, frozen=[3], bounds=box, max_changes=m
            )
            solve = _solver(
                A,
                b,
                x0,
                k,
                form_,
                param,
                "euclidean",
                w,
                lo if boxed else None,
                hi if boxed else None,
                frozen,
            )
            val, xref, _ = best_subset_brute_force(solve, ~frozen, m)
            assert res.x[3] == x0[3]  # frozen: bit for bit
            assert np.count_nonzero(res.x != x0) <= m
            if boxed:
                assert np.all(res.x >= lo) and np.all(res.x <= hi)
            if not np.isfinite(val):
                assert not res.success and res.status == 3, res.message
                continue
            if form == "lam":
                d = res.distance
                got = 0.5 * param * d * d - np.log(res.proba[k])
                assert got == pytest.approx(val, rel=1e-7, abs=1e-9)
            else:
                assert res.success, res.message
                assert res.distance == pytest.approx(val, rel=1e-7)
                assert ex.predict(res.x)[0] == ex.classes_[k]
            assert res.info["proven"]


@pytest.mark.parametrize("K", [1, 4])
def test_max_changes_manhattan_equals_milp(K):
    for seed in range(3):
        ex, A, b, x0, k, w, lo, hi = _problem(100 + 10 * seed + K, K, 9)
        frozen = np.zeros(9, dtype=bool)
        frozen[[0, 5]] = True
        for m in (1, 2, 3):
            res = ex.explain(
                x0,
                k,
                region=True,
                margin=0.1,
                metric="manhattan",
                weights=w,
                bounds=(lo, hi),
                frozen=[0, 5],
                max_changes=m,
            )
            val, _ = manhattan_max_changes_milp(A, b, x0, k, 0.1, w, lo, hi, m, frozen=frozen)
            assert np.array_equal(res.x[[0, 5]], x0[[0, 5]])
            assert np.count_nonzero(res.x != x0) <= m
            assert np.all(res.x >= lo) and np.all(res.x <= hi)
            if not np.isfinite(val):
                assert not res.success and res.status == 3, res.message
                continue
            assert res.success, res.message
            assert ex.predict(res.x)[0] == ex.classes_[k]
            assert res.distance == pytest.approx(val, rel=1e-6)


def test_binary_euclidean_unboxed_uses_the_top_features():
    # no box: the m features of largest w_i²/W_i, with no search
    ex, A, b, x0, k, w, _, _ = _problem(7, 1, 12)
    res = ex.explain(x0, k, region=True, weights=w, max_changes=3)
    top = np.argsort(-(A[0] ** 2) / w**2)[:3]
    assert set(res.changed.tolist()) == set(top.tolist())
    assert res.info["nodes"] == 1
    solve = _solver(A, b, x0, k, "region", 1e-6, "euclidean", w, None, None, np.zeros(12, bool))
    val, _, _ = best_subset_brute_force(solve, np.ones(12, bool), 3)
    assert res.distance == pytest.approx(val, rel=1e-7)


def _changed(x0):
    return lambda x: np.abs(x - x0) > 1e-7 * (1 + np.abs(x0))


@pytest.mark.parametrize("K", [1, 3])
@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
@pytest.mark.parametrize("variant", ["plain", "boxed", "max_changes"])
def test_enumerate_equals_brute_force(K, metric, variant):
    D = 6
    ex, A, b, x0, k, w, lo, hi = _problem(300 + K, K, D)
    boxed = variant != "plain"
    mc = (4 if K == 1 else 2) if variant == "max_changes" else None
    box = (lo, hi) if boxed else None
    alts = ex.enumerate(
        x0, k, k=6, region=True, margin=0.1, metric=metric, weights=w, bounds=box, max_changes=mc
    )
    solve = _solver(
        A,
        b,
        x0,
        k,
        "region",
        0.1,
        metric,
        w,
        lo if boxed else None,
        hi if boxed else None,
        np.zeros(D, bool),
    )

    def in_target(x):
        return ex.predict(x)[0] == ex.classes_[k]

    ref = enumerate_brute_force(
        solve, np.ones(D, bool), 6, in_target=in_target, changed=_changed(x0), max_changes=mc
    )
    assert len(alts) == len(ref) >= 2
    for a, (val, S) in zip(alts, ref, strict=True):
        assert a.success and ex.predict(a.x)[0] == ex.classes_[k]
        assert a.distance == pytest.approx(val, rel=1e-6)
        assert set(a.changed.tolist()) == set(S)
    sets = [set(a.changed.tolist()) for a in alts]
    for i, s in enumerate(sets):  # no answer's set contains a cheaper answer's set
        assert not any(t <= s for t in sets[:i])
    assert all(np.diff([a.distance for a in alts]) >= 0)


_FIELDS = ("x", "x0", "proba", "distance", "success", "status", "message", "nit", "method")


@pytest.mark.parametrize(
    "opts",
    [
        {"region": True, "margin": 0.1},
        {"proba": 0.8},
        {"region": True, "boxed": True},
        {"proba": 0.9, "boxed": True, "frozen": [0, 5]},
        {"region": True, "boxed": True, "max_nodes": 4},
    ],
    ids=str,
)
def test_binary_manhattan_kernel_scheme_equals_the_python_scheme(opts, monkeypatch):
    """Lawler's scheme in one kernel (binary Manhattan) answers as the Python scheme, bitwise."""
    opts = dict(opts)
    boxed = opts.pop("boxed", False)
    calls = {"kernel": 0}
    from fastcf._linear import alternatives

    inner = alternatives.flipsets

    def counted(ex, *args):
        out = inner(ex, *args)
        calls["kernel"] += out is not None
        return out

    for seed in range(6):
        ex, A, b, x0, k, w, lo, hi = _problem(700 + seed, 1, 9)
        kw = dict(opts, metric="manhattan", weights=w, bounds=(lo, hi) if boxed else None)
        for kk in (1, 4, 12):
            monkeypatch.setattr(alternatives, "flipsets", counted)
            fast = ex.enumerate(x0, k, k=kk, **kw)
            monkeypatch.setattr(alternatives, "flipsets", lambda *a: None)
            slow = ex.enumerate(x0, k, k=kk, **kw)
            assert len(fast) == len(slow) >= 1
            for a, c in zip(fast, slow, strict=True):
                for f in _FIELDS:
                    u, v = getattr(a, f), getattr(c, f)
                    assert np.array_equal(u, v) if isinstance(u, np.ndarray) else u == v, f
                assert a.info == c.info
    assert calls["kernel"] == 18  # the kernel answered every query (a max_nodes stop said so)


def test_enumerate_is_lazy_and_first_is_explain():
    ex, A, b, x0, k, w, lo, hi = _problem(5, 3, 8)
    it = ex.enumerate(x0, k, k=None, region=True, weights=w)
    first = next(it)
    second = next(it)
    ref = ex.explain(x0, k, region=True, weights=w)
    np.testing.assert_array_equal(first.x, ref.x)
    assert second.distance >= first.distance
    assert len(ex.enumerate(x0, k, k=3, region=True, weights=w)) == 3


def test_unreachable_under_max_changes_is_a_failure_with_a_message():
    # moving the logit by 5 needs both features inside the box
    ex = LinearExplainer.from_arrays([[1.0, 1.0, 0.0]], [-5.0])
    res = ex.explain(np.zeros(3), 1, region=True, bounds=(-3.0, 3.0), max_changes=1)
    assert not res.success and res.status == 3
    assert "max_changes" in res.message
    ok = ex.explain(np.zeros(3), 1, region=True, bounds=(-3.0, 3.0), max_changes=2)
    assert ok.success and set(ok.changed.tolist()) == {0, 1}


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"max_changes": 0}, ValueError, "max_changes must be"),
        ({"max_changes": 1.5}, TypeError, "max_changes must be"),
        ({"max_changes": True}, TypeError, "max_changes must be"),
        ({"metric": "cosine"}, ValueError, "metric must be one of"),
        ({"metric": "manhattan", "method": "lbfgs"}, ValueError, "manhattan"),
    ],
)
def test_bad_options_name_the_argument(kwargs, exc, match):
    ex = LinearExplainer.from_arrays(np.eye(3, 4), np.zeros(3))
    with pytest.raises(exc, match=match):
        ex.explain(np.zeros(4), 1, **kwargs)


def test_enumerate_bad_k_and_batch():
    ex = LinearExplainer.from_arrays(np.eye(3, 4), np.zeros(3))
    with pytest.raises(ValueError, match="k must be"):
        ex.enumerate(np.zeros(4), 1, k=0)
    with pytest.raises(TypeError, match="k must be"):
        ex.enumerate(np.zeros(4), 1, k=2.5)
    # a batch: one enumeration per row (tests/test_enumerate_rows.py checks them)
    both = ex.enumerate(np.zeros((2, 4)), 1, k=2, region=True)
    assert len(both) == 2 and all(len(alts) == 2 for alts in both)
    with pytest.raises(ValueError, match="k must be"):
        ex.enumerate(np.zeros((2, 4)), 1, k=0)


@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
@pytest.mark.parametrize("form", [{"region": True}, {"proba": 0.8}, {"lam": 0.05}])
def test_mad_weights_are_unit_free(metric, form):
    """Rescaling a feature's unit (training data, model refit, query) changes no answer in
    MAD units."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    X = X[:, :8]
    scale = np.ones(8)
    scale[3] = 1e3  # "mean area" in thousandths
    out = []
    for s in (np.ones(8), scale):
        Xs = X * s
        model = make_pipeline(StandardScaler(), LogisticRegression(tol=1e-12, max_iter=10_000))
        model.fit(Xs, y)
        ex = LinearExplainer(model).fit_mad(Xs)
        rows = np.flatnonzero(model.predict(Xs) == 0)[:10]
        res = ex.explain(Xs[rows], 1, metric=metric, weights="mad", **form)
        out.append(((res.x - Xs[rows]) / ex.mad_, res.distance))
    (d1, dist1), (d2, dist2) = out
    np.testing.assert_allclose(dist2, dist1, rtol=1e-9)
    np.testing.assert_allclose(d2, d1, rtol=1e-9, atol=1e-9 * np.abs(d1).max())


def test_softmax_region_at_a_tie_keeps_max_changes_and_the_flipset_rule_regression():
    """margin=0 at a tie of the logits: the searches' nodes and the answers agree on the support.

    The rounding need of such answers (~1e-12) exceeds the margin, so the answer returned is
    solved with a raised margin; nodes solved without that raise moved other features (found by
    a fuzz soak: two changed features under max_changes=1, and one changed set twice in
    enumerate).
    """
    A = np.array([[0.0, 0.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
    ex = LinearExplainer.from_arrays(A, np.zeros(3))
    x = np.array([0.0, 0.0, 1000.0])  # every logit 1000: class 0 only by the tie rule
    res = ex.explain(x, 0, region=True, margin=0.0, max_changes=1)
    assert res.success and np.count_nonzero(res.x != x) == 1
    assert ex.predict(res.x[None])[0] == 0
    c = 0.83984375
    A = np.array([[0, c, c, 0, c], [-1, c, c, c, c], [c] * 5])
    ex = LinearExplainer.from_arrays(A, np.zeros(3))
    x = np.array([0.0, 0.0, 0.0, 0.75, 0.5])
    alts = ex.enumerate(x, 0, k=3, region=True, margin=0.0)
    sets = [frozenset(a.changed.tolist()) for a in alts]
    assert all(a.success for a in alts)
    for i, s in enumerate(sets):
        assert not any(prev <= s for prev in sets[:i]), sets


def test_softmax_region_enumerate_checks_the_rule_on_the_answers_returned_regression():
    """Soak of test_fuzz_linear_few_changes[softmax] (--hypothesis-seed=507, long profile).

    enumerate's node solve (lean: the LP with its own re-solve rounds) changed features {3, 4}
    at the root, while the answer returned (solved in full, as explain: verify.region keeps the
    first LP answer, its margin 1 far above the rounding need) changed {4} only. The scheme
    recorded {3, 4}, so the child with feature 3 frozen gave {4} again: the same answer twice.
    The brute force over all 2^5 restrictions (explain with each frozen set) has one answer.
    """
    a = -6.2961612084449655e001
    A = np.array([
        [a, a, a, 6.1001287344977451e000, -9.9999000000000009e001],
        [a, a, a, a, 1.0e002],
        [a, a, a, -6.9156510028991268e-215, -6.9478193522844909e-213],
        [a, a, a, 6.6504032887859751e001, a],
        [a, 4.6845734000941683e-033, -3.3486430598558080e001, -7.5527640354340562e001, a],
    ])  # fmt: skip
    b = np.array([-0.0772970920914506, 0.01620139382914247, -0.06182793207679679,
                  -0.00963830802444405, -0.03818661524272157])  # fmt: skip
    x = np.array([1.856023260701256e10, -5.488069416712807e-69, -1e11, 1e-289, 6.103515625e06])
    w = np.array([1.0, 6.4590877022444415, 9.507143390172715, 3.9906929114730856, 3.03327619481009])
    opts = dict(region=True, margin=1.0, weights=w, metric="manhattan", bounds=(x - np.inf, x + 1))
    ex = LinearExplainer.from_arrays(A, b)
    alts = ex.enumerate(x, 0, k=4, **opts)
    sets = [frozenset(np.flatnonzero(a.x != x).tolist()) for a in alts]
    assert all(a.success for a in alts)
    for i, s in enumerate(sets):
        assert not any(prev <= s for prev in sets[:i]), sets
    first = ex.explain(x, 0, **opts)
    assert alts[0].distance == first.distance and sets[0] == {4}
    assert not ex.explain(x, 0, frozen=[4], **opts).success  # {4} is the only answer
    assert len(alts) == 1


def test_softmax_region_enumerate_with_max_changes_at_large_logits_is_in_order():
    """Soak round M, seed 11542: moving feature i alone by δ lifts z_0 − z_2 by (a_0i + 1) δ
    and z_0 − z_1 by a_0i δ, so its cost is the larger of 6.375e6 / (a_0i + 1) and
    1.375e6 / a_0i: features 5, 2, 3 at 3.19e6, 5.5e6 and 1.1e7; the search returned 5, 3, 2.
    The cause: a node with feature 2 (or 3) alone free has a rank-1 dual, solved by
    ``region_singular``, which called it infeasible at moves of 10⁶ (its Lawson–Hanson
    denominator 1 / (1 + ‖v‖²) was unscaled), so the search reached feature 2 only late."""
    from fastcf import LinearExplainer

    A = np.array([[0.0, 0.0, 0.25, 0.125, 0.0, 1.0], [0.0] * 6, [-1.0] * 6])
    x = np.array([0.0, -1e6, -1e6, -1e6, -1e6, -1e6])
    ex = LinearExplainer.from_arrays(A, np.zeros(3))
    alts = ex.enumerate(x, 0, k=3, region=True, margin=0.0, max_changes=1)
    d = [a.distance for a in alts]
    assert all(d[i] <= d[i + 1] * (1 + 1e-9) for i in range(len(d) - 1))


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 7), m=st.integers(1, 7))
def test_top_m_free_is_the_exact_order_of_w2_over_w(seed, d, m):
    # the closed form of binary Euclidean max_changes keeps the features of largest w_i²/W_i:
    # compared exactly at every magnitude (the squares underflowed below 1e-154), ties to the
    # first feature
    from fastcf._linear.subsets import top_m_free

    rng = np.random.default_rng(seed)
    w = rng.normal(size=d) * 10.0 ** rng.integers(-300, 300, size=d)
    w[rng.random(d) < 0.2] = 0.0
    tie = rng.random(d) < 0.3  # equal weights (ties of the ratio with equal costs)
    w[tie] = w[0]
    cost = None if rng.random() < 0.3 else 10.0 ** rng.uniform(-150, 150, size=d)
    if cost is not None and rng.random() < 0.5:
        cost = np.where(rng.random(d) < 0.5, 2.0 * cost[0], cost)
        w = np.where(cost == 2.0 * cost[0], 2.0 * w[0], w)  # equal ratios, other numbers
    free = rng.random(d) < 0.8
    np.testing.assert_array_equal(top_m_free(w, cost, free, m), top_m_free_exact(w, cost, free, m))


def test_binary_max_changes_keeps_the_cheaper_of_two_tiny_weights():
    """Soak 2026-11-29 (``linear_few_changes`` softmax; pre-existing on c89b449): two classes,
    rows 0 and (5.9e-197, 5.9e-197), x̄ = 0 (a tie), ``region=True, margin=0``, costs (2, 1),
    ``max_changes=1``. The closed form compared w_i²/W_i, and w² underflowed to 0 for both
    features: the first, of cost 2, was kept free, an answer twice as far as moving the
    second; ``enumerate`` then listed 3.0e-111 before 1.5e-111."""
    A = np.array([[0.0, 0.0], [5.932485279312468e-197] * 2])
    ex = LinearExplainer.from_arrays(A, np.zeros(2))
    x, w = np.zeros(2), np.array([2.0, 1.0])
    kw = dict(region=True, margin=0.0, weights=w, max_changes=1)
    res = ex.explain(x, 0, **kw)
    alone = [ex.explain(x, 0, region=True, margin=0.0, weights=w, frozen=[1 - j]) for j in (0, 1)]
    assert res.success and all(a.success for a in alone)
    assert res.distance == min(a.distance for a in alone) == alone[1].distance
    d = [a.distance for a in ex.enumerate(x, 0, k=2, **kw)]
    assert d == sorted(d) and d[0] == res.distance


def test_max_changes_time_limit_holds_the_row():
    # time_limit bounds a max_changes row's branch-and-bound from the row's start (issue 54):
    # a limit already spent leaves it its root; the answer is valid and not called exact
    rng = np.random.default_rng(7)
    K, D = 3, 14
    A, b = rng.normal(size=(K, D)), rng.normal(size=K)
    ex = LinearExplainer.from_arrays(A, b)
    box = (np.full(D, -4.0), np.full(D, 4.0))
    more = 0
    for _ in range(4):
        x0 = rng.normal(size=D)
        t = (int(np.argmax(A @ x0 + b)) + 1) % K
        kw = dict(region=True, bounds=box, max_changes=3)
        full = ex.explain(x0, t, **kw)
        res = ex.explain(x0, t, **kw, time_limit=1e-9)
        assert res.info["nodes"] <= 2
        more += full.info["nodes"] > 2
        if res.success:
            assert np.count_nonzero(res.x != x0) <= 3
            assert int(np.argmax(A @ res.x + b)) == t
            assert res.distance >= full.distance * (1 - 1e-9)
            if res.info["nodes"] < full.info["nodes"]:
                assert res.status == 1 and "time_limit" in res.message
                assert not res.info["exact"]
        else:
            assert res.status == 1 and "time_limit" in res.message, res.message
    assert more  # (the limit cut a longer search)
