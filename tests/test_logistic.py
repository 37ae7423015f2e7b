"""Binary logistic counterfactuals (paper 000, §4): closed form, projections, box constraints."""

import pickle

import numpy as np
import pytest
from reference import (
    box_kkt_residual,
    exact_logits,
    logistic_lam_brentq,
    minimize_box_lbfgsb,
    softmax_energy,
)
from scipy.special import expit, logit

import fastcf
from fastcf import LinearExplainer, check_gradient


def random_problem(rng, D=None):
    D = D or int(rng.integers(1, 60))
    w = rng.standard_normal(D) * 10.0 ** rng.uniform(-2, 1)
    c = rng.standard_normal() * 3
    x0 = rng.standard_normal(D) * 10.0 ** rng.uniform(-1, 1)
    return w, c, x0


def energy(w, c, x0, target, lam, wt=None):
    A2 = np.vstack([np.zeros_like(w), w])
    return softmax_energy(A2, np.array([0.0, c]), x0, target, lam, wt)


def test_closed_form_agrees_with_brentq_on_200_problems(rng):
    worst = 0.0
    for _ in range(200):
        w, c, x0 = random_problem(rng)
        ex = LinearExplainer.from_arrays(w[None], [c])
        target = int(rng.integers(0, 2))
        lam = 10.0 ** rng.uniform(-4, 2)
        use_w = rng.random() < 0.5
        wt = rng.uniform(0.1, 10, w.shape[0]) if use_w else None
        # wt is the metric W; weights= takes the cost of a unit change, √W
        res = ex.explain(x0, target, lam=lam, weights=None if wt is None else np.sqrt(wt))
        ref = logistic_lam_brentq(w, c, x0, 1 if target == 1 else -1, lam, wt=wt)
        scale = np.abs(x0).max() + np.abs(ref - x0).max()
        worst = max(worst, np.abs(res.x - ref).max() / scale)
        # gradient of E at x* at rounding level (relative to the size of its terms)
        E, g = energy(w, c, x0, target, lam, wt)(res.x)
        # rounding level of the two cancelling terms λW(x − x̄) and (1 − p)w, the latter through
        # the rounding of z = w·x + c
        wts = wt if use_w else 1.0
        gscale = (
            lam * np.abs(wts * res.x).max()
            + lam * np.abs(wts * x0).max()
            + np.abs(w).max() * (1 + np.abs(w * res.x).sum())
        )
        assert np.abs(g).max() <= 1e-14 * gscale
        assert res.grad_norm <= 1e-14 * gscale * np.sqrt(w.shape[0])
        assert res.nit <= 60 and res.status in (0, 5)
    assert worst <= 1e-12


def test_success_means_classified_as_target(rng):
    w, c, x0 = random_problem(rng, D=10)
    ex = LinearExplainer.from_arrays(w[None], [c])
    for lam in [1e-3, 1e-1, 1e1, 1e3]:
        for target in (0, 1):
            res = ex.explain(x0, target, lam=lam)
            assert res.success == (ex.predict(res.x)[0] == target)
            if not res.success:
                assert res.status == 5 and "decrease lam" in res.message


def test_proba_is_exact_projection(rng):
    for _ in range(100):
        w, c, x0 = random_problem(rng)
        ex = LinearExplainer.from_arrays(w[None], [c])
        target = int(rng.integers(0, 2))
        tau = float(rng.uniform(0.05, 0.999))
        res = ex.explain(x0, target, proba=tau)
        s = 1.0 if target == 1 else -1.0
        zeta0 = s * (w @ x0 + c)
        if expit(zeta0) >= tau:
            assert np.array_equal(res.x, x0) and res.distance == 0
        else:
            proj = x0 + (logit(tau) - zeta0) / (w @ w) * s * w
            np.testing.assert_allclose(res.x, proj, rtol=1e-12, atol=1e-12 * np.abs(x0).max())
            assert abs(res.proba[target] - tau) <= 1e-12
        assert res.proba[target] >= tau and ex.predict_proba(res.x)[target] >= tau
        if tau > 0.5 or ex.predict(res.x)[0] == target:
            assert res.success
        else:  # p_target = τ < 1/2: met, but not classified as the target
            assert not res.success and res.status == 7 and "larger proba" in res.message


def test_region_closest_point_with_margin(rng):
    for _ in range(50):
        w, c, x0 = random_problem(rng)
        ex = LinearExplainer.from_arrays(w[None], [c])
        target = int(rng.integers(0, 2))
        res = ex.explain(x0, target, region=True, margin=0.5)
        s = 1.0 if target == 1 else -1.0
        assert res.success and ex.predict(res.x)[0] == target
        assert s * (w @ res.x + c) >= 0.5 - 1e-12
        if s * (w @ x0 + c) < 0.5:  # moved: exactly onto the margin, along w
            assert s * (w @ res.x + c) == pytest.approx(0.5, abs=1e-9)
            d = res.x - x0
            assert abs(abs(d @ w) - np.linalg.norm(d) * np.linalg.norm(w)) <= 1e-9 * np.linalg.norm(
                d
            ) * np.linalg.norm(w)


def test_frozen_features_unchanged_bit_for_bit(rng):
    w, c, x0 = random_problem(rng, D=12)
    ex = LinearExplainer.from_arrays(w[None], [c])
    frozen = [0, 3, 7]
    for kw in [dict(lam=0.05), dict(proba=0.8), dict(region=True)]:
        res = ex.explain(x0, 1 - int(ex.predict(x0)[0]), frozen=frozen, **kw)
        assert np.array_equal(res.x[frozen], x0[frozen])
        assert res.success


def test_frozen_matches_reference(rng):
    w, c, x0 = random_problem(rng, D=15)
    frozen = np.zeros(15, bool)
    frozen[[1, 2, 9]] = True
    ex = LinearExplainer.from_arrays(w[None], [c])
    res = ex.explain(x0, 1, lam=0.1, frozen=np.flatnonzero(frozen))
    ref = logistic_lam_brentq(w, c, x0, 1, 0.1, frozen=frozen)
    np.testing.assert_allclose(res.x, ref, rtol=1e-12, atol=1e-12)


def test_weights_mad(rng):
    X = rng.standard_normal((200, 6)) * np.array([1, 10, 0.1, 5, 1, 1])
    X[:, 5] = 1.0  # a constant column: MAD = 0 must not divide by zero
    w = rng.standard_normal(6)
    ex = LinearExplainer.from_arrays(w[None], [0.0]).fit_mad(X)
    assert np.all(np.isfinite(ex.mad_)) and np.all(ex.mad_ > 0)
    res = ex.explain(X[0], 1, lam=0.1, weights="mad")
    ref = logistic_lam_brentq(w, 0.0, X[0], 1, 0.1, wt=1.0 / ex.mad_**2)  # metric W = w²
    np.testing.assert_allclose(res.x, ref, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="fit_mad"):
        LinearExplainer.from_arrays(w[None], [0.0]).explain(X[0], 1, weights="mad")


@pytest.mark.parametrize("lam", [1e-3, 0.1, 10.0])
def test_bounds_kkt_and_reference(rng, lam):
    for _ in range(30):
        w, c, x0 = random_problem(rng, D=int(rng.integers(2, 30)))
        D = w.shape[0]
        lo = x0 - rng.uniform(0, 1, D)
        hi = x0 + rng.uniform(0, 1, D)
        lo[rng.random(D) < 0.2] = -np.inf
        ex = LinearExplainer.from_arrays(w[None], [c])
        target = int(rng.integers(0, 2))
        res = ex.explain(x0, target, lam=lam, bounds=(lo, hi))
        assert np.all(res.x >= lo) and np.all(res.x <= hi)
        f = energy(w, c, x0, target, lam)
        E, g = f(res.x)
        assert box_kkt_residual(g, res.x, lo, hi) <= 1e-10 * (1 + np.abs(w).max())
        assert res.grad_norm <= 1e-9 * (1 + np.linalg.norm(w))
        ref = minimize_box_lbfgsb(f, x0, lo, hi)
        assert E <= f(ref)[0] + 1e-12 * (1 + abs(E))


def test_bounds_with_proba_and_infeasible(rng):
    w = np.array([1.0, 2.0, -1.0])
    ex = LinearExplainer.from_arrays(w[None], [0.0])
    x0 = np.array([-1.0, -1.0, 1.0])
    lo, hi = np.full(3, -2.0), np.full(3, 2.0)
    res = ex.explain(x0, 1, proba=0.9, bounds=(lo, hi))
    assert res.success and res.proba[1] == pytest.approx(0.9, abs=1e-12)
    assert np.all(res.x <= hi) and np.all(res.x >= lo)
    # τ beyond what the box allows: max logit at the box corner = 2 + 4 + 2 = 8
    res = ex.explain(x0, 1, proba=expit(8.5), bounds=(lo, hi))
    assert not res.success and res.status == 3 and "infeasible" in res.message
    np.testing.assert_array_equal(res.x, [2.0, 2.0, -2.0])


def test_zero_weight_on_free_features_is_unreachable():
    ex = LinearExplainer.from_arrays(np.array([[0.0, 0.0, 3.0]]), [-1.0])
    x0 = np.array([1.0, 1.0, 0.0])  # class 0
    for kw in [dict(lam=0.1), dict(proba=0.9), dict(region=True)]:
        res = ex.explain(x0, 1, frozen=[2], **kw)
        assert not res.success and res.status == 2
        assert "unreachable" in res.message
        assert np.array_equal(res.x, x0)


def test_batch_equals_single_and_mixed_targets(rng):
    w, c, _ = random_problem(rng, D=30)
    ex = LinearExplainer.from_arrays(w[None], [c], classes=["no", "yes"])
    X = rng.standard_normal((64, 30))
    targets = rng.choice(["no", "yes"], 64)
    lams = 10.0 ** rng.uniform(-3, 1, 64)
    for kw in [dict(lam=lams), dict(proba=0.7), dict(region=True)]:
        batch = ex.explain(X, targets, **kw)
        assert len(batch) == 64 and batch.x.shape == X.shape
        for i in range(0, 64, 7):
            one = ex.explain(X[i], targets[i], **({"lam": lams[i]} if "lam" in kw else kw))
            assert np.array_equal(one.x, batch.x[i])
            assert one.target == batch[i].target == targets[i]
            assert one.success == batch.success[i]


def test_path_is_monotone(rng):
    w, c, x0 = random_problem(rng, D=8)
    ex = LinearExplainer.from_arrays(w[None], [c])
    path = ex.path(x0, 1, np.logspace(2, -3, 40))
    assert path.X.shape == (40, 8) and path.proba.shape == (40, 2)
    assert np.all(np.diff(path.proba[:, 1]) >= 0) and np.all(np.diff(path.distance) >= 0)
    one = ex.explain(x0, 1, lam=path.lams[17])
    np.testing.assert_array_equal(one.x, path.X[17])


def test_taylor_test_of_energy(rng):
    w, c, x0 = random_problem(rng, D=9)
    f = energy(w, c, x0, 1, 0.3)
    assert check_gradient(f, x0 + 0.1).passed

    def wrong(x):
        E, g = f(x)
        return E, g * 1.001

    assert not check_gradient(wrong, x0 + 0.1).passed


def test_pickle_roundtrip(rng):
    w, c, x0 = random_problem(rng, D=5)
    ex = LinearExplainer.from_arrays(w[None], [c]).fit_mad(rng.standard_normal((20, 5)))
    ex2 = pickle.loads(pickle.dumps(ex))
    a = ex.explain(x0, 1, lam=0.1, weights="mad")
    b = ex2.explain(x0, 1, lam=0.1, weights="mad")
    assert np.array_equal(a.x, b.x)


def test_bad_input_messages(rng):
    ex = LinearExplainer.from_arrays(np.ones((1, 3)), [0.0])
    x = np.zeros(3)
    cases = [
        (dict(x=[0, np.nan, 0], target=1), ValueError, "x contains"),
        (dict(x=[0, np.inf, 0], target=1), ValueError, "x contains"),
        (dict(x=np.zeros(4), target=1), ValueError, "x has 4 features"),
        (dict(x=np.zeros((2, 2, 3)), target=1), ValueError, "x must be 1-D or 2-D"),
        (dict(x=x, target=7), ValueError, "target=7 is not a class"),
        (dict(x=x, target=1, lam=0.0), ValueError, "lam must be a finite real number > 0"),
        (dict(x=x, target=1, lam=-1.0), ValueError, "lam must be a finite real number > 0"),
        (dict(x=x, target=1, lam=np.nan), ValueError, "lam must be a finite real number > 0"),
        (
            dict(x=x, target=1, proba=1.0),
            ValueError,
            r"proba must be a finite real number in \(0, 1\)",
        ),
        (
            dict(x=x, target=1, proba=0.0),
            ValueError,
            r"proba must be a finite real number in \(0, 1\)",
        ),
        (dict(x=x, target=1, proba="0.5"), TypeError, "proba must be a finite real number"),
        (dict(x=x, target=1, lam=0.1, proba=0.5), ValueError, "only one of"),
        (dict(x=["a", "b", "c"], target=1), TypeError, "x must be a real numeric array"),
        (dict(x=np.zeros(3, complex), target=1), TypeError, "complex"),
        (dict(x=x, target=1, frozen=[5]), ValueError, "frozen index 5 is out of range"),
        (dict(x=x, target=1, weights=[1, 0, 1]), ValueError, "weights must be > 0"),
        (dict(x=x, target=1, bounds=(1.0, 0.0)), ValueError, "lo > hi"),
        (dict(x=x, target=1, bounds=(0.5, 1.0)), ValueError, "outside bounds"),
        (dict(x=x, target=1, method="newton"), ValueError, "method must be one of"),
        (dict(x=x, target=1, max_iter=1.5), TypeError, "max_iter must be an integer >= 1"),
        (dict(x=x, target=1, max_iter=True), TypeError, "max_iter must be an integer >= 1"),
        (dict(x=x, target=1, max_iter=0), ValueError, "max_iter must be an integer >= 1"),
        (dict(x=x, target=1, tol=-1.0), ValueError, "tol must be a finite real number > 0"),
        (dict(x=x, target=1, region=True, margin=-1.0), ValueError, "margin must be a finite"),
        (dict(x=x, target=1, region=True, margin=True), TypeError, "margin must be a finite"),
        (dict(x=np.zeros((0, 3)), target=1), ValueError, "empty"),
        (dict(x=np.zeros((2, 3)), target=[0, 1, 1]), ValueError, "one label per query"),
    ]
    for kwargs, exc, match in cases:
        with pytest.raises(exc, match=match):
            ex.explain(**kwargs)
    with pytest.raises(ValueError, match="b must have shape"):
        LinearExplainer.from_arrays(np.ones((1, 3)), [0.0, 1.0])
    with pytest.raises(ValueError, match="NaN"):
        LinearExplainer.from_arrays(np.array([[np.nan, 1.0]]), [0.0])
    with pytest.raises(ValueError, match="classes must have 2 labels"):
        LinearExplainer.from_arrays(np.ones((1, 3)), [0.0], classes=[1, 2, 3])


def test_int_float32_list_inputs_accepted():
    ex = LinearExplainer.from_arrays(np.array([[1.0, -1.0]]), [0.0])
    a = ex.explain([1, 2], 1, lam=0.5)
    b = ex.explain(np.array([1, 2], dtype=np.float32), 1, lam=0.5)
    assert np.array_equal(a.x, b.x) and a.x.dtype == np.float64


def test_two_row_softmax_is_the_same_logistic_model(rng):
    w, c, x0 = random_problem(rng, D=7)
    A2 = np.vstack([rng.standard_normal(7), np.zeros(7)])
    A2[1] = A2[0] + w
    ex1 = LinearExplainer.from_arrays(w[None], [c])
    ex2 = LinearExplainer.from_arrays(A2, [0.3, 0.3 + c])
    np.testing.assert_allclose(
        ex1.explain(x0, 1, lam=0.2).x, ex2.explain(x0, 1, lam=0.2).x, rtol=1e-12, atol=1e-12
    )


def test_counterfactual_fields_and_repr(rng):
    w, c, x0 = random_problem(rng, D=4)
    res = LinearExplainer.from_arrays(w[None], [c]).explain(x0, 1, lam=0.1)
    assert res.method == "closed form" and res.lam == 0.1
    np.testing.assert_array_equal(res.delta, res.x - res.x0)
    assert "Counterfactual(success=" in repr(res)
    assert res.distance == pytest.approx(np.linalg.norm(res.x - x0), rel=1e-13)
    assert fastcf.Counterfactual is type(res)


def test_certified_binary_successes_skip_the_recheck_and_hold_exactly(rng, monkeypatch):
    # the closed form returns the logit of its answer and Σ|w_i x_i| + |c|; a success whose
    # logit exceeds 4γ times that is positive in every evaluation and is not recomputed
    w = np.round(rng.standard_normal(40) * 64) / 64
    ex = LinearExplainer.from_arrays(w[None], [0.25])
    calls = []
    original = ex._model.check_logits
    monkeypatch.setattr(ex._model, "check_logits", lambda X: calls.append(len(X)) or original(X))
    X = rng.standard_normal((30, 40))
    targets = (X @ w + 0.25 <= 0).astype(int)  # the other class
    res = ex.explain(X, targets, lam=0.05)
    assert res.success.all() and calls == []
    for n in range(30):
        z = exact_logits(w[None], [0.25], res.x[n])[0]
        assert (z > 0) == (targets[n] == 1)
    # region= answers are certified the same way, by the cheap bound of that need (their
    # margin, 1e-6, is far above it here): none is recomputed, and each holds exactly
    reg = ex.explain(X[:3], 1 - targets[:3], region=True)
    assert reg.success.all() and calls == []
    for n in range(3):
        assert (exact_logits(w[None], [0.25], reg.x[n])[0] > 0) == (targets[n] == 0)
    # margin=0: the answers lie within rounding of the boundary, no bound certifies them, and
    # their logits are read in the model's arithmetic (verify.region raises their margin)
    reg0 = ex.explain(X[:3], 1 - targets[:3], region=True, margin=0.0)
    assert reg0.success.all() and len(calls) > 0
    for n in range(3):
        assert (exact_logits(w[None], [0.25], reg0.x[n])[0] > 0) == (targets[n] == 0)
