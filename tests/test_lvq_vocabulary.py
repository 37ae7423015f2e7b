"""LVQ takes the one vocabulary (issue 53, item 5): region=True, exact/time_limit, enumerate and
max_changes, each against a brute force over frozen sets with the cvxpy reference of paper 001."""

import itertools

import numpy as np
import pytest
from reference import best_subset_brute_force, enumerate_brute_force, lvq_counterfactual_reference
from sklearn.datasets import load_iris, make_classification

from fastcf.lvq import GLVQ, GMLVQ, LGMLVQ, LVQExplainer

RTOL, ATOL = 2e-6, 1e-6


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X, y


@pytest.fixture(scope="module")
def blobs():
    X, y = make_classification(
        n_samples=150, n_features=5, n_informative=4, n_redundant=0, n_classes=3,
        n_clusters_per_class=1, random_state=3,
    )  # fmt: skip
    return X, y


_FITTED = {}


def _model(cls, data, name, ppc=1):
    key = (cls.__name__, name, ppc)
    if key not in _FITTED:
        X, y = data
        _FITTED[key] = cls(prototypes_per_class=ppc, random_state=0, max_iter=200).fit(X, y)
    return _FITTED[key]


def _queries(model, X, n, seed=0):
    """n rows and, for each, a target other than its prediction."""
    rng = np.random.default_rng(seed)
    rows = rng.choice(X.shape[0], n, replace=False)
    pred = model.predict(X[rows])
    out = []
    for r, p in zip(rows, pred, strict=True):
        others = [c for c in model.classes_ if c != p]
        out.append((X[r], others[rng.integers(len(others))]))
    return out


def _reference(ex, x0, t, metric, weights=None, lo=None, hi=None):
    """solve(F_mask) -> (distance, x): the cvxpy reference with every feature outside F frozen."""
    omega = None if ex.kind == "euclidean" else ex._geo.omegas[0]

    def solve(F):
        return lvq_counterfactual_reference(
            ex.prototypes_, ex.prototype_labels_, x0, t, omega=omega, metric=metric,
            weights=weights, frozen=~F, lo=lo, hi=hi,
        )  # fmt: skip

    return solve


def _changed(x0):
    # the reference is an interior-point answer: its residue (~1e-10) is no change
    def changed(x):
        return np.abs(x - x0) > 1e-7 * (1.0 + np.abs(x0))

    return changed


def _confirmed(model, res):
    assert res.success
    assert model.predict(res.x[None])[0] == res.target


# ---------------------------------------------------------------------------- region=True
@pytest.mark.parametrize("cls", [GLVQ, GMLVQ, LGMLVQ])
@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
def test_region_true_is_the_default(iris, cls, metric):
    model = _model(cls, iris, "iris")
    ex = LVQExplainer(model)
    (x, t), = _queries(model, iris[0], 1, seed=1)  # fmt: skip
    a = ex.explain(x, t, metric=metric)
    b = ex.explain(x, t, metric=metric, region=True)
    # (the penalty CCP's rounds are not bit-reproducible from call to call: Clarabel)
    tol = 1e-7 if cls is LGMLVQ else 0.0
    np.testing.assert_allclose(a.x, b.x, rtol=tol, atol=tol)
    assert abs(a.distance - b.distance) <= tol and a.status == b.status
    _confirmed(model, b)
    batch = ex.explain(iris[0][:3], t, metric=metric, region=True)
    assert batch.x.shape == (3, 4)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"region": False}, "region=False"),
        ({"proba": 0.9}, "proba=0.9"),
        ({"lam": 0.1}, "lam=0.1"),
    ],
)
def test_other_questions_are_refused_by_name(iris, kw, match):
    ex = LVQExplainer(_model(GMLVQ, iris, "iris"))
    x = iris[0][0]
    with pytest.raises(ValueError, match=match) as err:
        ex.explain(x, 1, **kw)
    assert "only region=True" in str(err.value)
    with pytest.raises(ValueError, match=match):
        ex.enumerate(x, 1, k=2, **kw)
    with pytest.raises(ValueError, match=match):
        ex.enumerate(x, 1, k=None, **kw)  # refused at once, not at the first next()


def test_region_must_be_a_bool(iris):
    ex = LVQExplainer(_model(GLVQ, iris, "iris"))
    with pytest.raises(TypeError, match="region must be True or False"):
        ex.explain(iris[0][0], 1, region="yes")


# ---------------------------------------------------------------------------- exact, time_limit
@pytest.mark.parametrize("cls", [GLVQ, GMLVQ])
@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
def test_exact_and_time_limit_accepted_and_truthful(iris, cls, metric):
    model = _model(cls, iris, "iris")
    ex = LVQExplainer(model)
    (x, t), = _queries(model, iris[0], 1, seed=2)  # fmt: skip
    base = ex.explain(x, t, metric=metric)
    for kw in ({"exact": False}, {"time_limit": 5.0}, {"exact": False, "time_limit": 1}):
        res = ex.explain(x, t, metric=metric, **kw)
        assert np.array_equal(res.x, base.x)
        assert res.info["exact"] is True
        _confirmed(model, res)
    batch = ex.explain(iris[0][:4], t, metric=metric, exact=False, time_limit=2.0)
    assert np.array_equal(batch.info["exact"], batch.success & (batch.status == 0))
    alts = ex.enumerate(x, t, k=2, metric=metric, exact=False, time_limit=3.0)
    assert all(a.info["exact"] is True for a in alts)


def test_lgmlvq_is_not_called_exact(iris):
    model = _model(LGMLVQ, iris, "iris")
    ex = LVQExplainer(model)
    (x, t), = _queries(model, iris[0], 1, seed=3)  # fmt: skip
    for kw in ({}, {"exact": True}, {"exact": False, "time_limit": 10.0}):
        res = ex.explain(x, t, **kw)
        _confirmed(model, res)
        assert res.info["exact"] is False  # the penalty CCP is a local method


@pytest.mark.parametrize(
    "kw, err, match",
    [
        ({"exact": 1}, TypeError, "exact"),
        ({"exact": "yes"}, TypeError, "exact"),
        ({"time_limit": 0.0}, ValueError, "time_limit"),
        ({"time_limit": -1}, ValueError, "time_limit"),
        ({"time_limit": float("inf")}, ValueError, "time_limit"),
        ({"time_limit": float("nan")}, ValueError, "time_limit"),
        ({"time_limit": "1s"}, TypeError, "time_limit"),
        ({"max_changes": 0}, ValueError, "max_changes"),
        ({"max_changes": 1.5}, TypeError, "max_changes"),
    ],
)
def test_bad_vocabulary_values_are_named(iris, kw, err, match):
    ex = LVQExplainer(_model(GLVQ, iris, "iris"))
    with pytest.raises(err, match=match):
        ex.explain(iris[0][0], 1, **kw)


def test_lgmlvq_refuses_max_changes(iris):
    ex = LVQExplainer(_model(LGMLVQ, iris, "iris"))
    with pytest.raises(ValueError, match="max_changes is refused for LGMLVQ"):
        ex.explain(iris[0][0], 1, max_changes=1)


# ---------------------------------------------------------------------------- enumerate
@pytest.mark.parametrize("cls", [GLVQ, GMLVQ])
@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
def test_enumerate_matches_brute_force(iris, cls, metric):
    model = _model(cls, iris, "iris")
    ex = LVQExplainer(model)
    D = ex.n_features_in_
    for seed, (x, t) in enumerate(_queries(model, iris[0], 2, seed=4)):
        frozen = [seed] if seed else None  # one query with a frozen feature
        free = np.ones(D, dtype=bool)
        if frozen:
            free[frozen] = False
        alts = ex.enumerate(x, t, k=6, metric=metric, frozen=frozen)
        ref = enumerate_brute_force(
            _reference(ex, x, t, metric), free, 6,
            in_target=lambda z, t=t: ex.predict(z[None])[0] == t, changed=_changed(x),
        )  # fmt: skip
        assert len(alts) == len(ref)
        np.testing.assert_allclose(
            [a.distance for a in alts], [d for d, _ in ref], rtol=RTOL, atol=ATOL
        )
        sets = [frozenset(a.changed_index.tolist()) for a in alts]
        for i, S in enumerate(sets):
            _confirmed(model, alts[i])
            assert not any(T <= S for T in sets[:i])  # no answer contains a cheaper one's set
            if frozen:
                assert frozen[0] not in S
        assert np.all(np.diff([a.distance for a in alts]) >= -1e-9)


def test_enumerate_k_none_is_lazy_and_batches_are_lists(iris):
    model = _model(GMLVQ, iris, "iris")
    ex = LVQExplainer(model)
    (x, t), = _queries(model, iris[0], 1, seed=5)  # fmt: skip
    listed = ex.enumerate(x, t, k=3, metric="manhattan")
    it = ex.enumerate(x, t, k=None, metric="manhattan")
    assert not isinstance(it, list)
    lazy = list(itertools.islice(it, 3))
    assert [a.distance for a in lazy] == [a.distance for a in listed]
    assert listed[0].distance == ex.explain(x, t, metric="manhattan").distance
    batch = ex.enumerate(iris[0][:2], t, k=2)
    assert isinstance(batch, list) and len(batch) == 2 and all(isinstance(b, list) for b in batch)


# ---------------------------------------------------------------------------- max_changes
def _box(ex, X, x0, t, kind, rng):
    if kind is None:
        return None, None, None
    if kind == "data":
        lo, hi = X.min(axis=0) - 0.5, X.max(axis=0) + 0.5
    else:  # uneven, around the Euclidean answer: the best features' room is cut, so the
        # Manhattan answer moves several features and fewer changes cost more (or are none)
        r = np.abs(ex.explain(x0, t).delta).max()
        lo = x0 - r * rng.uniform(0.3, 4.0, x0.size)
        hi = x0 + r * rng.uniform(0.3, 4.0, x0.size)
    return (lo, hi), lo, hi


@pytest.mark.parametrize("cls", [GLVQ, GMLVQ])
@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
@pytest.mark.parametrize("box", [None, "data", "uneven"])
@pytest.mark.parametrize("name", ["iris", "blobs"])
def test_max_changes_matches_brute_force(iris, blobs, cls, metric, box, name):
    data = iris if name == "iris" else blobs
    model = _model(cls, data, name, ppc=2 if name == "iris" else 1)
    ex = LVQExplainer(model)
    X = data[0]
    D = X.shape[1]
    rng = np.random.default_rng(0)
    for x, t in _queries(model, X, 2, seed=6):
        bounds, lo, hi = _box(ex, X, x, t, box, rng)
        solve = _reference(ex, x, t, metric, lo=lo, hi=hi)
        for m in (1, 2, 3):
            res = ex.explain(x, t, metric=metric, bounds=bounds, max_changes=m)
            val, _, _ = best_subset_brute_force(solve, np.ones(D, dtype=bool), m)
            route = "milp" if metric == "manhattan" and box else "branch-and-bound"
            assert res.info["search"] == route and res.info["proven"]
            if not np.isfinite(val):
                assert not res.success and res.status == 3 and res.info["exact"] is False
                if ex.explain(x, t, metric=metric, bounds=bounds).success:
                    assert f"max_changes={m}" in res.message  # few changes is the reason
                continue
            _confirmed(model, res)
            assert res.info["exact"] is True and res.status == 0
            assert np.count_nonzero(res.delta) <= m
            np.testing.assert_allclose(res.distance, val, rtol=RTOL, atol=ATOL)
            if bounds is not None:
                assert np.all(res.x >= lo) and np.all(res.x <= hi)


@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
def test_max_changes_with_frozen_weights_margin(iris, metric):
    model = _model(GMLVQ, iris, "iris", ppc=2)
    ex = LVQExplainer(model)
    X = iris[0]
    w = np.array([1.0, 2.0, 0.5, 1.5])
    lo, hi = X.min(axis=0) - 0.5, X.max(axis=0) + 0.5
    for x, t in _queries(model, X, 2, seed=7):
        res = ex.explain(
            x, t, metric=metric, max_changes=2, frozen=[3], weights=w, bounds=(lo, hi),
            margin=1e-3,
        )  # fmt: skip
        free = np.array([True, True, True, False])
        omega = ex._geo.omegas[0]

        def solve(F, x=x, t=t, omega=omega):
            return lvq_counterfactual_reference(
                ex.prototypes_, ex.prototype_labels_, x, t, omega=omega, metric=metric,
                weights=w, frozen=~F, lo=lo, hi=hi, epsilon=1e-3,
            )  # fmt: skip

        val, _, _ = best_subset_brute_force(solve, free, 2)
        if not np.isfinite(val):
            assert not res.success
            continue
        _confirmed(model, res)
        assert res.delta[3] == 0.0 and np.count_nonzero(res.delta) <= 2
        np.testing.assert_allclose(res.distance, val, rtol=RTOL, atol=ATOL)
        d = ex.distances(res.x)[0]
        mine = ex.prototype_labels_ == t
        assert d[~mine].min() - d[mine].min() >= 1e-3 * (1 - 1e-6)  # the margin held


def test_max_changes_batch_equals_rows_and_enumerate(iris):
    model = _model(GLVQ, iris, "iris", ppc=2)
    ex = LVQExplainer(model)
    X = iris[0][[0, 60, 120]]
    t = np.array([1, 2, 0])
    batch = ex.explain(X, t, max_changes=1, metric="manhattan", bounds=(0.0, 10.0))
    for i in range(3):
        one = ex.explain(X[i], t[i], max_changes=1, metric="manhattan", bounds=(0.0, 10.0))
        assert np.array_equal(batch.x[i], one.x) and batch.distance[i] == one.distance
    alts = ex.enumerate(X[0], 1, k=3, max_changes=1)
    assert all(np.count_nonzero(a.delta) <= 1 for a in alts)
    assert alts[0].distance == ex.explain(X[0], 1, max_changes=1).distance
    for a in alts:
        _confirmed(model, a)


def test_max_changes_time_limit_is_truthful(blobs):
    model = _model(GMLVQ, blobs, "blobs")
    ex = LVQExplainer(model)
    X = blobs[0]
    lo, hi = X.min(axis=0) - 1, X.max(axis=0) + 1
    (x, t), = _queries(model, X, 1, seed=8)  # fmt: skip
    res = ex.explain(x, t, metric="manhattan", bounds=(lo, hi), max_changes=2, time_limit=1e-6)
    if res.status == 1:  # stopped: valid or no answer, never called exact
        assert res.info["exact"] is False and not res.info["proven"]
        if res.success:
            _confirmed(model, res)
    else:  # presolve finished first: the exact answer
        full = ex.explain(x, t, metric="manhattan", bounds=(lo, hi), max_changes=2)
        assert res.distance == full.distance and res.info["exact"] is True


@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
def test_max_changes_time_limit_holds_the_row(metric):
    # time_limit bounds a max_changes row from its start (issue 54): a limit already spent
    # leaves the branch-and-bound its root and the MILPs none; the answer, if any, is valid
    # and not called proven; without a limit the same rows need more nodes
    X, y = make_classification(
        n_samples=300, n_features=12, n_informative=8, n_redundant=0, n_classes=3,
        n_clusters_per_class=1, random_state=4,
    )  # fmt: skip
    model = GLVQ(prototypes_per_class=2, random_state=0, max_iter=200).fit(X, y)
    ex = LVQExplainer(model)
    lo, hi = X.min(axis=0) - 1.0, X.max(axis=0) + 1.0
    bounds = (lo, hi) if metric == "manhattan" else None
    more = 0
    for x, t in _queries(model, X, 4, seed=2):
        full = ex.explain(x, t, metric=metric, bounds=bounds, max_changes=3)
        res = ex.explain(x, t, metric=metric, bounds=bounds, max_changes=3, time_limit=1e-9)
        assert res.info["search"] == full.info["search"]
        if metric == "euclidean":
            assert res.info["nodes"] <= 2  # the root, and the first node stopped at once
            more += full.info["nodes"] > 2
        else:
            assert res.info["nodes"] == 0  # no prototype's MILP started past the limit
        assert not res.info["proven"]
        if res.success:
            _confirmed(model, res)
            assert res.status == 1 and np.count_nonzero(res.delta) <= 3
        else:
            assert res.status == 1 and "time_limit" in res.message, res.message
    if metric == "euclidean":
        assert more  # (the limit cut a longer search)
