"""Per-row bounds: one box per query row of a batch (issue "Batches cannot carry per-row bounds").

A batch with bounds of shape (N, D) answers, row by row, exactly (bit for bit) what a single query
with that row's box answers; an (N, D) box equal on every row gives the bits of the shared (D,)
box.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from fastcf import LinearExplainer

FIELDS = ("x", "proba", "distance", "success", "status", "nit", "lam")
FORMS = [{"lam": 0.05}, {"proba": 0.8}, {"region": True}]


def _problem(loader, target, n):
    X, y = loader(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X, y)
    rows = np.flatnonzero(model.predict(X) != target)[:n]
    Xq = X[rows]
    rng = np.random.default_rng(7)
    s = X.std(axis=0)
    # a box of its own for each row (some wide, some tight), the source inside it
    lo = Xq - rng.uniform(0.05, 3.0, Xq.shape) * s
    hi = Xq + rng.uniform(0.05, 3.0, Xq.shape) * s
    return LinearExplainer(model), Xq, lo, hi


@pytest.fixture(scope="module", params=["binary", "softmax"])
def problem(request):
    if request.param == "binary":
        return (*_problem(load_breast_cancer, 1, 4), 1)
    return (*_problem(load_iris, 2, 4), 2)


def _field(res, name, i=None):
    v = getattr(res, name)
    if v is None:
        return None
    v = np.asarray(v)
    return v if i is None else v[i]


def _same(a, b):
    if a is None or b is None:
        return a is None and b is None
    return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)


def _options(kind, D):
    if kind == "frozen":
        return {"frozen": [0]}
    if kind == "weights":
        return {"weights": np.linspace(0.5, 2.0, D)}
    return {}


@pytest.mark.parametrize("form", FORMS, ids=lambda f: next(iter(f)))
@pytest.mark.parametrize("opt", ["plain", "frozen", "weights"])
def test_each_row_gets_the_answer_of_its_own_box(problem, form, opt):
    ex, Xq, lo, hi, target = problem
    options = _options(opt, Xq.shape[1])
    batch = ex.explain(Xq, target, bounds=(lo, hi), **form, **options)
    for i in range(Xq.shape[0]):
        one = ex.explain(Xq[i], target, bounds=(lo[i], hi[i]), **form, **options)
        for f in FIELDS:
            got = _field(batch, f, i)
            ref = None if getattr(one, f) is None else np.asarray(getattr(one, f))
            assert _same(got, ref), (f, i)
        assert batch.message[i] == one.message
        # the gradient norm of softmax problem (2) with a box is a diagnostic computed by BLAS
        # over the batch (a GEMM rounds by its shape): equal to rounding, not bit for bit
        if one.grad_norm is not None:
            assert batch.grad_norm[i] == pytest.approx(one.grad_norm, rel=1e-6, abs=1e-12)
        assert np.all(batch.x[i] >= lo[i]) and np.all(batch.x[i] <= hi[i])
    assert batch.success.any()


@pytest.mark.parametrize("form", FORMS, ids=lambda f: next(iter(f)))
def test_a_box_repeated_on_every_row_gives_the_bits_of_the_shared_box(problem, form):
    ex, Xq, lo, hi, target = problem
    lo1, hi1 = lo.min(axis=0), hi.max(axis=0)
    N = Xq.shape[0]
    shared = ex.explain(Xq, target, bounds=(lo1, hi1), **form)
    rows = ex.explain(Xq, target, bounds=(np.tile(lo1, (N, 1)), np.tile(hi1, (N, 1))), **form)
    for f in (*FIELDS, "grad_norm"):
        assert _same(_field(rows, f), _field(shared, f)), f
    # one part per row and the other shared (or a scalar)
    mixed = ex.explain(Xq, target, bounds=(np.tile(lo1, (N, 1)), hi1), **form)
    for f in (*FIELDS, "grad_norm"):
        assert _same(_field(mixed, f), _field(shared, f)), f


def test_a_single_query_takes_a_one_row_box(problem):
    ex, Xq, lo, hi, target = problem
    one = ex.explain(Xq[0], target, bounds=(lo[0], hi[0]), region=True)
    row = ex.explain(Xq[0], target, bounds=(lo[:1], hi[:1]), region=True)
    assert np.array_equal(one.x, row.x) and one.status == row.status
    p1 = ex.path(Xq[0], target, np.logspace(1, -2, 4), bounds=(lo[0], hi[0]))
    p2 = ex.path(Xq[0], target, np.logspace(1, -2, 4), bounds=(lo[:1], hi[:1]))
    assert np.array_equal(p1.X, p2.X)


@pytest.mark.parametrize("which", ["lo", "hi"])
def test_a_box_of_the_wrong_shape_names_its_part(problem, which):
    ex, Xq, lo, hi, target = problem
    N, D = Xq.shape
    bad = {"lo": (lo[:-1], hi), "hi": (lo, hi[:, :-1])}[which]
    with pytest.raises(ValueError, match=rf"bounds\[{which}\]"):
        ex.explain(Xq, target, bounds=bad, region=True)
    three = np.zeros((N, D, 1))
    bad3 = (three, hi) if which == "lo" else (lo, three)
    with pytest.raises(ValueError, match=rf"bounds\[{which}\]"):
        ex.explain(Xq, target, bounds=bad3, lam=0.1)


def test_a_source_row_outside_its_own_box_raises(problem):
    ex, Xq, lo, hi, target = problem
    lo2 = lo.copy()
    lo2[2, 1] = Xq[2, 1] + 1.0  # row 2 only: the others are inside their boxes
    hi2 = np.maximum(hi, lo2)
    with pytest.raises(ValueError, match=r"outside bounds at feature 1 \(row 2\)"):
        ex.explain(Xq, target, bounds=(lo2, hi2), proba=0.8)


# ---------------------------------------------------------------------------- fastcf.distributed
ROW_CHUNKS = (2, 0, 1, 3)  # uneven row blocks, one empty, one a single row


def _dask():
    pytest.importorskip("dask")
    pytest.importorskip("pandas")
    import dask.array as da
    import dask.dataframe as dd

    return da, dd


def _batch(kind):
    if kind == "binary":
        ex, Xq, lo, hi = _problem(load_breast_cancer, 1, 6)
        return ex, Xq, lo, hi, 1
    ex, Xq, lo, hi = _problem(load_iris, 2, 6)
    return ex, Xq, lo, hi, 2


@pytest.mark.parametrize("kind", ["binary", "softmax"])
@pytest.mark.parametrize("form", [{"region": True}, {"proba": 0.8}, {"lam": 0.05}], ids=str)
@pytest.mark.parametrize("as_dask", [False, True], ids=["numpy-box", "dask-box"])
def test_distributed_array_splits_the_boxes_with_the_rows(kind, form, as_dask):
    da, _dd = _dask()
    from fastcf import distributed as fdist

    ex, Xq, lo, hi, target = _batch(kind)
    ref = ex.explain(Xq, target, bounds=(lo, hi), **form)
    dX = da.from_array(Xq, chunks=(ROW_CHUNKS, Xq.shape[1]))
    box = (da.from_array(lo, chunks=(3, -1)), hi) if as_dask else (lo, hi)  # other chunks
    got = fdist.explain(ex, dX, target, client=False, bounds=box, **form)
    got = got.compute(scheduler="threads")
    for f in ("x", "success", "status", "distance", "nit", "proba", "message"):
        assert np.array_equal(getattr(got, f), np.asarray(getattr(ref, f))), f
    # a shared box still works, and a per-row box of the wrong shape raises before any work
    shared = fdist.explain(ex, dX, target, client=False, bounds=(lo.min(0), hi.max(0)), **form)
    ref2 = ex.explain(Xq, target, bounds=(lo.min(0), hi.max(0)), **form)
    assert np.array_equal(shared.compute(scheduler="threads").x, ref2.x)
    with pytest.raises(ValueError, match=r"bounds\[hi\]"):
        fdist.explain(ex, dX, target, client=False, bounds=(lo, hi[:-1]), **form)


@pytest.mark.parametrize("kind", ["binary", "softmax"])
@pytest.mark.parametrize("as_dask", [False, True], ids=["numpy-box", "dask-box"])
def test_distributed_frame_splits_the_boxes_with_the_partitions(kind, as_dask):
    da, dd = _dask()
    import dask
    import pandas as pd

    from fastcf import distributed as fdist

    ex, Xq, lo, hi, target = _batch(kind)
    ref = ex.explain(Xq, target, bounds=(lo, hi), region=True)
    df = pd.DataFrame(Xq, columns=[f"f{i}" for i in range(Xq.shape[1])])
    cuts = np.concatenate([[0], np.cumsum(ROW_CHUNKS)])
    parts = [dask.delayed(df.iloc[cuts[i] : cuts[i + 1]]) for i in range(len(ROW_CHUNKS))]
    ddf = dd.from_delayed(parts, meta=df.iloc[:0], verify_meta=False)
    box = (lo, da.from_array(hi, chunks=(4, -1))) if as_dask else (lo, hi)
    out = fdist.explain(ex, ddf, target, client=False, bounds=box, region=True)
    out = out.compute(scheduler="threads")
    assert np.array_equal(out.iloc[:, : Xq.shape[1]].to_numpy(), ref.x)
    assert np.array_equal(out["status"].to_numpy(), ref.status)
    assert np.array_equal(out["distance"].to_numpy(), ref.distance)


def test_a_box_holding_the_unconstrained_answer_is_answered_far_from_the_origin():
    # the projected Newton method of the box failed numerically (status 4) at x̄ ~ 2e5 whose
    # logits cancel; the unconstrained answer lies in the box, so it is the boxed one
    # (found by docs/scripts/soak_zoo.py: a multinomial pipeline, two features used)
    A = np.array([
        [-0.009253445681684605, -0.0030650996711833554],
        [-0.0005033243111956958, 0.00021444080505430654],
        [0.009756769992880302, 0.0028506588661290472],
    ])  # fmt: skip
    b = np.array([-2001.7372000173602, -109.2004369630162, 2110.9376369803767])
    x0 = np.array([-216764.92572759558, 912.658931918472])
    lo = np.array([-216879.66536625067, 813.3290415520114])
    hi = np.array([-216440.26939009727, 1344.6070431801554])
    ex = LinearExplainer.from_arrays(A, b)
    free = ex.explain(x0, 2, region=True)
    assert free.success and np.all((free.x >= lo) & (free.x <= hi))
    boxed = ex.explain(x0, 2, region=True, bounds=(lo, hi))
    assert boxed.success and int(boxed.status) == 0
    np.testing.assert_allclose(boxed.distance, free.distance, rtol=1e-9)
    # the same problem shifted to the origin, where the box's own solver answers
    shifted = LinearExplainer.from_arrays(A, b + A @ x0)
    ref = shifted.explain(np.zeros(2), 2, region=True, bounds=(lo - x0, hi - x0))
    np.testing.assert_allclose(boxed.distance, ref.distance, rtol=1e-9)
