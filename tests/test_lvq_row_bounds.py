"""One box per query row in ``LVQExplainer.explain`` (bounds lo/hi of shape (N, D)).

A row of a batch with per-row bounds must give exactly (bit for bit) the answer of the single
query with that row's box, for every method (ldp, cvxpy, ccp), both metrics, with frozen
features; a box repeated on every row must give the bits of the shared (D,) box.
"""

import numpy as np
import pytest

from fastcf import LVQExplainer

D = 4
LABELS = [0, 1, 2, 0, 1, 2]


def _explainers():
    """Small generated models: GLVQ (Λ = I), GMLVQ (one Ω), LGMLVQ (one Ω per prototype)."""
    rng = np.random.default_rng(11)
    P = rng.normal(size=(6, D)) * 2.0
    om = np.eye(D) + 0.3 * rng.normal(size=(D, D))
    oms = [np.eye(D) + 0.3 * rng.normal(size=(D, D)) for _ in range(6)]
    return {
        "glvq": lambda: LVQExplainer.from_arrays(P, LABELS),
        "gmlvq": lambda: LVQExplainer.from_arrays(P, LABELS, omega=om),
        "lgmlvq": lambda: LVQExplainer.from_arrays(P, LABELS, omega=oms),
    }


_MAKE = _explainers()


def _queries(ex, n=3, seed=5):
    """n queries, a target other than the prediction, and one box per row (some sides inf)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    pred = np.searchsorted(ex.classes_, ex.predict(X))
    tg = ex.classes_[(pred + 1 + rng.integers(0, 2, n)) % 3]
    lo = X - rng.uniform(0.5, 3.0, (n, D))
    hi = X + rng.uniform(0.5, 3.0, (n, D))
    # different finite patterns per row: the cvxpy programs are cached per pattern
    lo[0, 2] = -np.inf
    hi[1, 0] = np.inf
    hi[2, 3] = np.inf
    return X, tg, lo, hi


# (model, method, metric, max_iter): every method and metric that supports per-row boxes
CASES = [
    ("glvq", "ldp", "euclidean", None),
    ("gmlvq", "ldp", "euclidean", None),
    ("glvq", "cvxpy", "euclidean", None),
    ("gmlvq", "cvxpy", "manhattan", None),
    ("gmlvq", "cvxpy", "euclidean", None),
    ("lgmlvq", "ccp", "euclidean", 25),
    ("lgmlvq", "ccp", "manhattan", 25),
]


def _assert_same_bits(batch, n, single):
    np.testing.assert_array_equal(batch.x[n], single.x)
    np.testing.assert_array_equal(batch.distance[n], single.distance)
    assert batch.status[n] == single.status
    assert batch.success[n] == single.success
    assert batch.message[n] == single.message


@pytest.mark.needs_jit
@pytest.mark.parametrize("frozen", [None, [1]])
@pytest.mark.parametrize(("model", "method", "metric", "max_iter"), CASES)
def test_row_box_matches_single_query(model, method, metric, max_iter, frozen):
    ex = _MAKE[model]()
    X, tg, lo, hi = _queries(ex)
    kw = {"metric": metric, "method": method, "max_iter": max_iter, "frozen": frozen}
    batch = ex.explain(X, tg, bounds=(lo, hi), **kw)
    assert batch.success.any()
    one = _MAKE[model]()  # a fresh explainer: the answer must not depend on the program cache
    for n in range(X.shape[0]):
        single = one.explain(X[n], tg[n], bounds=(lo[n], hi[n]), **kw)
        _assert_same_bits(batch, n, single)
        slack = 1e-9 * (1.0 + np.abs(batch.x[n]))  # the solvers meet the box to rounding
        assert np.all(batch.x[n] >= lo[n] - slack) and np.all(batch.x[n] <= hi[n] + slack)
        if frozen is not None:
            assert batch.x[n, 1] == X[n, 1]


@pytest.mark.needs_jit
@pytest.mark.parametrize(("model", "method", "metric", "max_iter"), CASES)
def test_repeated_box_matches_shared_box(model, method, metric, max_iter):
    ex = _MAKE[model]()
    X, tg, _, _ = _queries(ex)
    lo, hi = X.min(axis=0) - 1.5, X.max(axis=0) + 1.0
    lo[3] = -np.inf
    kw = {"metric": metric, "method": method, "max_iter": max_iter, "frozen": [2]}
    shared = ex.explain(X, tg, bounds=(lo, hi), **kw)
    rows = _MAKE[model]().explain(X, tg, bounds=(np.tile(lo, (3, 1)), np.tile(hi, (3, 1))), **kw)
    assert shared.success.any()
    for field in ("x", "distance", "status", "success"):
        np.testing.assert_array_equal(getattr(rows, field), getattr(shared, field))
    assert list(rows.message) == list(shared.message)


@pytest.mark.needs_jit
def test_one_sided_row_bounds_and_scalars():
    ex = _MAKE["gmlvq"]()
    X, tg, lo, hi = _queries(ex)
    for bounds, row in (
        ((lo, None), lambda n: (lo[n], None)),
        ((None, hi), lambda n: (None, hi[n])),
        ((lo, 10.0), lambda n: (lo[n], 10.0)),
    ):
        batch = ex.explain(X, tg, bounds=bounds)
        for n in range(X.shape[0]):
            _assert_same_bits(batch, n, ex.explain(X[n], tg[n], bounds=row(n)))


@pytest.mark.needs_jit
def test_row_bounds_parallel_kernel_matches_serial():
    from fastcf._kernels.lvq_qp import Metric, Settings, UserRows, lvq_fast_batch

    ex = _MAKE["glvq"]()
    rng = np.random.default_rng(7)
    X = rng.normal(size=(40, D))
    tg = rng.integers(0, 3, 40).astype(np.int64)
    lo = X - rng.uniform(0.2, 2.0, X.shape)
    hi = X + rng.uniform(0.2, 2.0, X.shape)
    w, free = np.ones(D), np.ones(D, dtype=bool)
    rest = (UserRows(np.zeros((0, D)), np.zeros(0)), Settings(1e-6, 100))
    args = (X, tg, ex._geo.tables, Metric(w, free, lo, hi), *rest)
    serial = lvq_fast_batch(*args, False)
    for a, b in zip(serial, lvq_fast_batch(*args, True), strict=True):
        np.testing.assert_array_equal(a, b)
    for n in (0, 17, 39):  # row n of the batch is the (1, D) box of that query alone
        box = Metric(w, free, lo[n : n + 1], hi[n : n + 1])
        one = (X[n : n + 1], tg[n : n + 1], ex._geo.tables, box, *rest)
        for a, b in zip(serial, lvq_fast_batch(*one, False), strict=True):
            np.testing.assert_array_equal(a[n], b[0])


@pytest.mark.parametrize("method", ["ldp", "cvxpy"])
@pytest.mark.parametrize(
    ("part", "shape"),
    [("lo", (4, D)), ("lo", (3, D + 1)), ("hi", (2, D)), ("hi", (3, D, 1)), ("hi", (D + 1,))],
)
def test_wrong_shapes_raise(method, part, shape):
    ex = _MAKE["glvq"]()
    X, tg, lo, hi = _queries(ex)
    bad = np.zeros(shape)
    bounds = (bad, hi) if part == "lo" else (lo, bad)
    with pytest.raises(ValueError, match=rf"bounds\[{part}\]"):
        ex.explain(X, tg, bounds=bounds, method=method)


def test_single_query_rejects_two_boxes():
    ex = _MAKE["glvq"]()
    X, tg, lo, hi = _queries(ex)
    with pytest.raises(ValueError, match=r"bounds\[lo\] must have shape"):
        ex.explain(X[0], tg[0], bounds=(lo[:2], hi[0]))


@pytest.mark.parametrize("model", ["glvq", "lgmlvq"])
def test_source_outside_its_own_box_raises(model):
    ex = _MAKE[model]()
    X, tg, lo, hi = _queries(ex)
    # row 1 outside its own box (the other rows are inside theirs)
    lo[1, 0] = X[1, 0] + 0.1
    hi[1, 0] = X[1, 0] + 0.5
    with pytest.raises(ValueError, match=r"outside bounds at feature 0 \(row 1\)"):
        ex.explain(X, tg, bounds=(lo, hi))
    lo[1, 0], hi[1, 0] = 1.0, -1.0  # lo > hi on one row
    with pytest.raises(ValueError, match=r"lo > hi at feature 0 \(row 1\)"):
        ex.explain(X, tg, bounds=(lo, hi))
