"""fastcf.distributed on a 2-process LocalCluster: bit-for-bit equal to the single-process batch."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
distributed = pytest.importorskip("distributed")

import fastcf  # noqa: E402
from fastcf import LinearExplainer, LVQExplainer  # noqa: E402
from fastcf import distributed as fdist  # noqa: E402

FIELDS = ("x", "success", "status", "distance", "nit", "proba", "message")
# uneven row blocks, one of them empty and one a single row (the serial kernel path)
ROW_CHUNKS = (10, 0, 1, 19, 7)
N = sum(ROW_CHUNKS)
D = 5


@pytest.fixture(scope="module")
def client():
    # no warning filter: under filterwarnings=error any warning distributed raises while the
    # cluster starts, runs or stops fails the tests (none does with dashboard_address=None on
    # loopback)
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    )
    client = distributed.Client(cluster)
    # the workers must run this checkout of fastcf, not another installed copy
    where = client.run(lambda: __import__("fastcf").__file__)
    assert set(where.values()) == {fastcf.__file__}, where
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def rng_data():
    rng = np.random.default_rng(20261122)
    X = rng.normal(size=(N, D))
    return rng, X


def softmax_explainer(rng, K=4, names=None):
    return LinearExplainer.from_arrays(
        rng.normal(size=(K, D)), rng.normal(size=K), feature_names=names
    )


def binary_explainer(rng, names=None):
    return LinearExplainer.from_arrays(
        rng.normal(size=(1, D)), rng.normal(size=1), classes=["no", "yes"], feature_names=names
    )


def lvq_explainer(rng, names=None):
    P = rng.normal(size=(6, D))
    return LVQExplainer.from_arrays(P, ["a", "b", "c", "a", "b", "c"], feature_names=names)


def assert_bitwise(got, ref):
    for f in FIELDS:
        a, b = getattr(got, f), getattr(ref, f)
        if b is None:
            assert a is None, f
            continue
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, (f, a.shape, b.shape)
        assert np.array_equal(a, b), f


def frame_bitwise(out, ref, names, classes):
    assert list(out.columns[:D]) == list(names)
    np.testing.assert_array_equal(out.index.to_numpy(), np.arange(N))
    assert np.array_equal(out[list(names)].to_numpy(), ref.x)
    assert out["success"].dtype == bool and np.array_equal(out["success"].to_numpy(), ref.success)
    assert out["status"].dtype == np.int64 and np.array_equal(out["status"].to_numpy(), ref.status)
    assert np.array_equal(out["distance"].to_numpy(), ref.distance)
    assert np.array_equal(out["nit"].to_numpy(), ref.nit)
    assert out["message"].tolist() == list(ref.message)
    pcols = [f"proba_{c}" for c in classes]
    if ref.proba is None:
        assert not any(c.startswith("proba_") for c in out.columns)
    else:
        assert list(out.columns[D + 5 :]) == pcols
        assert np.array_equal(out[pcols].to_numpy(), ref.proba)


def uneven_frame(df, sizes=ROW_CHUNKS):
    """A dask DataFrame with the given partition sizes (including empty ones)."""
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    parts = [dask.delayed(df.iloc[bounds[i] : bounds[i + 1]]) for i in range(len(sizes))]
    return dd.from_delayed(parts, meta=df.iloc[:0], verify_meta=False)


# ---------------------------------------------------------------------------- dask arrays
@pytest.mark.parametrize(
    ("kind", "options"),
    [
        ("softmax", {"lam": 0.01}),
        ("softmax", {"proba": 0.8}),
        ("binary", {"lam": 0.05}),
        ("binary", {"region": True, "frozen": [0]}),
        ("lvq", {}),
        ("lvq", {"metric": "manhattan"}),
    ],
)
def test_array_matches_single_process_bit_for_bit(client, rng_data, kind, options):
    rng, X = rng_data
    ex = {"softmax": softmax_explainer, "binary": binary_explainer, "lvq": lvq_explainer}[kind](rng)
    classes = ex.classes_
    targets = classes[rng.integers(0, len(classes), N)]
    ref = ex.explain(X, targets, **options)
    dX = da.from_array(X, chunks=(ROW_CHUNKS, D))
    res = fdist.explain(ex, dX, targets, **options)
    assert isinstance(res.x, da.Array) and res.x.chunks == (ROW_CHUNKS, (D,))
    got = res.compute()
    assert_bitwise(got, ref)
    assert got.x.dtype == np.float64 and got.success.dtype == bool
    assert got.status.dtype == np.int64 and got.nit.dtype == np.int64
    np.testing.assert_array_equal(got.classes, classes)
    # the model puts the successful rows in their target class (not only equal to the batch)
    assert got.success.any()
    pred = ex.predict(got.x[got.success])
    assert np.array_equal(pred, targets[got.success])


def test_failed_rows_carry_their_message(rng_data):
    """A row that fails says why, on Dask as in the batch (array and DataFrame results)."""
    rng, X = rng_data
    ex = binary_explainer(rng)
    targets = np.array(["yes", "no"])[(ex.predict(X) == "yes").astype(int)]  # the other class
    options = {"region": True, "frozen": list(range(D))}  # nothing may move: every row fails
    ref = ex.explain(X, targets, **options)
    assert not ref.success.any()
    dX = da.from_array(X, chunks=(ROW_CHUNKS, D))
    got = fdist.explain(ex, dX, targets, client=False, **options).compute(scheduler="threads")
    assert got.message.dtype == object and got.message.tolist() == list(ref.message)
    assert all(isinstance(m, str) and m for m in got.message)
    out = fdist.explain_partition(ex, X, targets, **options)
    assert out["message"].dtype == object and out["message"].tolist() == list(ref.message)


def test_array_scalar_and_dask_targets(client, rng_data):
    rng, X = rng_data
    ex = softmax_explainer(rng)
    dX = da.from_array(X, chunks=(ROW_CHUNKS, D))
    ref = ex.explain(X, 2, lam=0.01)
    assert_bitwise(fdist.explain(ex, dX, 2, lam=0.01).compute(), ref)
    t = rng.integers(0, 4, N)
    ref = ex.explain(X, t, lam=0.01)
    dt = da.from_array(t, chunks=8)  # other chunks than the data: rechunked like the rows
    assert_bitwise(fdist.explain(ex, dX, dt, lam=0.01).compute(), ref)
    # fields computed separately, or persisted in the cluster first, give the same numbers
    res = fdist.explain(ex, dX, dt, lam=0.01)
    assert np.array_equal(res.distance.compute(), ref.distance)
    kept = res.persist()
    assert isinstance(kept.x, da.Array) and "dask arrays" in repr(kept)
    assert_bitwise(kept.compute(), ref)


def test_array_without_client_threaded_scheduler(rng_data):
    rng, X = rng_data
    ex = softmax_explainer(rng)
    t = rng.integers(0, 4, N)
    dX = da.from_array(X, chunks=(ROW_CHUNKS, D))
    res = fdist.explain(ex, dX, t, client=False, lam=0.01)
    assert_bitwise(res.compute(scheduler="threads"), ex.explain(X, t, lam=0.01))


def test_large_blocks_use_the_parallel_kernels_and_still_match(client):
    # LVQ switches to its parallel kernel at 4096 rows per call; blocks on both sides of it
    rng = np.random.default_rng(3)
    ex = lvq_explainer(rng)
    X = rng.normal(size=(6000, D))
    ref = ex.explain(X, "b")
    res = fdist.explain(ex, da.from_array(X, chunks=((4500, 1500), D)), "b")
    assert_bitwise(res.compute(), ref)


# ---------------------------------------------------------------------------- dask DataFrames
@pytest.mark.parametrize("kind", ["softmax", "binary", "lvq"])
@pytest.mark.parametrize("target_kind", ["column", "numpy", "scalar"])
def test_frame_matches_single_process_bit_for_bit(client, rng_data, kind, target_kind):
    rng, X = rng_data
    names = [f"f{i}" for i in range(D)]
    ex = {"softmax": softmax_explainer, "binary": binary_explainer, "lvq": lvq_explainer}[kind](
        rng, names=names
    )
    classes = ex.classes_
    labels = classes[rng.integers(0, len(classes), N)]
    df = pd.DataFrame(X, columns=names)
    df["label"] = labels
    ddf = uneven_frame(df)
    assert ddf.npartitions == len(ROW_CHUNKS)
    targets = {"column": ddf["label"], "numpy": labels, "scalar": classes[-1]}[target_kind]
    ref_targets = classes[-1] if target_kind == "scalar" else labels
    options = {"lam": 0.02} if kind != "lvq" else {}
    ref = ex.explain(df[names], ref_targets, **options)
    out = fdist.explain(ex, ddf[names], targets, **options)
    assert isinstance(out, dd.DataFrame) and out.npartitions == len(ROW_CHUNKS)
    frame_bitwise(out.compute(), ref, names, classes)


def test_frame_without_feature_names_uses_the_columns(client, rng_data):
    rng, X = rng_data
    ex = softmax_explainer(rng)  # no feature names
    df = pd.DataFrame(X, columns=list("abcde"))
    out = fdist.explain(ex, uneven_frame(df), 1, lam=0.01).compute()
    frame_bitwise(out, ex.explain(X, 1, lam=0.01), list("abcde"), ex.classes_)


def test_explain_partition_is_the_same_batch_function(rng_data):
    rng, X = rng_data
    names = [f"f{i}" for i in range(D)]
    ex = softmax_explainer(rng, names=names)
    df = pd.DataFrame(X, columns=names)
    out = fdist.explain_partition(ex, df, 3, lam=0.01)
    frame_bitwise(out, ex.explain(df, 3, lam=0.01), names, ex.classes_)
    empty = fdist.explain_partition(ex, df.iloc[:0], 3, lam=0.01)
    assert empty.shape == (0, D + 5 + 4) and list(empty.columns) == list(out.columns)
    assert empty.dtypes.equals(out.dtypes)


# ---------------------------------------------------------------------------- shipped once
def _count_pickles(monkeypatch, cls):
    calls = []
    original = cls.__getstate__

    def counting(self):
        calls.append(1)
        return original(self)

    monkeypatch.setattr(cls, "__getstate__", counting)
    return calls


@pytest.mark.parametrize("n_blocks", [3, 24])
def test_explainer_is_scattered_once_not_per_partition(client, monkeypatch, n_blocks):
    rng = np.random.default_rng(1)
    ex = softmax_explainer(rng)
    X = rng.normal(size=(n_blocks * 4, D))
    calls = _count_pickles(monkeypatch, LinearExplainer)
    res = fdist.explain(ex, da.from_array(X, chunks=(4, D)), 0, lam=0.01)
    at_scatter = len(calls)
    # one scatter with broadcast=True: at most one serialisation per worker, whatever n_blocks
    assert 1 <= at_scatter <= len(client.scheduler_info()["workers"])
    got = res.compute()
    assert len(calls) == at_scatter  # computing the blocks did not pickle it again
    assert np.array_equal(got.x, ex.explain(X, 0, lam=0.01).x)
    # the graph refers to the scattered data by one key; the explainer itself is not in it
    graph = dict(res.x.__dask_graph__())
    assert not any(v is ex for v in graph.values())


def test_without_client_the_explainer_is_one_graph_key(monkeypatch):
    rng = np.random.default_rng(2)
    ex = lvq_explainer(rng)
    X = rng.normal(size=(40, D))
    calls = _count_pickles(monkeypatch, LVQExplainer)
    res = fdist.explain(ex, da.from_array(X, chunks=(5, D)), "a", client=False)
    graph = dict(res.x.__dask_graph__())
    holders = [
        k
        for k, v in graph.items()
        if v is ex or getattr(v, "value", None) is ex or getattr(v, "args", ()) == (ex,)
    ]
    assert len(holders) == 1, holders
    key = holders[0]
    # every one of the 8 block tasks depends on that single key
    blocks = [k for k in graph if isinstance(k, tuple) and str(k[0]).startswith("fastcf-explain")]
    assert len(blocks) == 8
    assert all(key in graph[k].dependencies for k in blocks)
    got = res.compute(scheduler="sync")
    assert calls == []  # nothing was pickled (not even to build a key)
    assert_bitwise(got, ex.explain(X, "a"))


# ---------------------------------------------------------------------------- bad input
def _boom():
    raise AssertionError("work was scheduled before the input was checked")


def never_computed_array(shape, dtype=float, chunks=None):
    x = da.from_delayed(dask.delayed(_boom)(), shape=shape, dtype=dtype)
    return x if chunks is None else x.rechunk(chunks)


def never_computed_frame(columns, dtypes=None, npartitions=3):
    meta = pd.DataFrame({c: pd.Series(dtype=(dtypes or {}).get(c, float)) for c in columns})
    return dd.from_delayed(
        [dask.delayed(_boom)() for _ in range(npartitions)], meta=meta, verify_meta=False
    )


def test_bad_array_input_raises_before_any_work():
    rng = np.random.default_rng(0)
    ex = softmax_explainer(rng)
    good = never_computed_array((30, D), chunks=(10, D))
    with pytest.raises(ValueError, match=r"chunked by rows only .*rechunk\(\{1: -1\}\)"):
        fdist.explain(ex, never_computed_array((30, D), chunks=(10, 2)), 0)
    with pytest.raises(ValueError, match="targets must be one label or one label per query"):
        fdist.explain(ex, good, np.zeros(29, dtype=int))
    with pytest.raises(ValueError, match=r"one label per row of data \(30\)"):
        fdist.explain(ex, good, da.zeros(31, dtype=int, chunks=10))
    with pytest.raises(ValueError, match="is not a class of the model"):
        fdist.explain(ex, good, np.full(30, 7))
    with pytest.raises(ValueError, match="is not a class of the model"):
        fdist.explain(ex, good, 7)
    with pytest.raises(ValueError, match="has 4 features but the model expects 5"):
        fdist.explain(ex, never_computed_array((30, 4), chunks=(10, 4)), 0)
    with pytest.raises(ValueError, match="must be 2-D"):
        fdist.explain(ex, never_computed_array((30,), chunks=10), 0)
    with pytest.raises(TypeError, match="real numeric array"):
        fdist.explain(ex, never_computed_array((30, D), dtype=object, chunks=(10, D)), 0)
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        fdist.explain(ex, good[good[:, 0] > 0], 0)
    with pytest.raises(TypeError, match=r"keyword arguments of LinearExplainer\.explain"):
        fdist.explain(ex, good, 0, lamda=0.1)
    with pytest.raises(ValueError, match="lam must be a scalar"):
        fdist.explain(ex, good, 0, lam=np.full(30, 0.1))
    with pytest.raises(TypeError, match="data must be a dask.array.Array or a dask.dataframe"):
        fdist.explain(ex, np.zeros((30, D)), 0)
    with pytest.raises(TypeError, match="fastcf explainer"):
        fdist.explain(object(), good, 0)


def test_bad_frame_input_raises_before_any_work():
    rng = np.random.default_rng(0)
    names = [f"f{i}" for i in range(D)]
    ex = softmax_explainer(rng, names=names)
    with pytest.raises(ValueError, match=r"missing \['f4'\], unexpected \['g'\]"):
        fdist.explain(ex, never_computed_frame(names[:4] + ["g"]), 0)
    with pytest.raises(ValueError, match="the order must also match"):
        fdist.explain(ex, never_computed_frame(names[::-1]), 0)
    with pytest.raises(TypeError, match=r"non-numeric: \['f2 \("):
        fdist.explain(ex, never_computed_frame(names, {"f2": object}), 0)
    other = never_computed_frame(["label"], npartitions=4)["label"]
    with pytest.raises(ValueError, match="has 4 partitions but data has 3"):
        fdist.explain(ex, never_computed_frame(names), other)
    with pytest.raises(ValueError, match="is not a class of the model"):
        fdist.explain(ex, never_computed_frame(names), "z")
    with pytest.raises(TypeError, match="dask Series with the same partitions"):
        fdist.explain(ex, never_computed_frame(names), da.zeros(3, chunks=1))
    no_names = softmax_explainer(rng)
    with pytest.raises(ValueError, match="has 4 columns but the model expects 5"):
        fdist.explain(no_names, never_computed_frame(list("abcd")), 0)
    with pytest.raises(ValueError, match="clash with the result columns"):
        fdist.explain(no_names, never_computed_frame(["a", "b", "status", "d", "e"]), 0)


def test_frame_numpy_targets_of_wrong_length_raise_before_the_explain_work(rng_data):
    # numpy targets with a DataFrame need the partition lengths (one cheap pass), then the
    # length is checked before the explain work is scheduled
    rng, X = rng_data
    ex = softmax_explainer(rng)
    ddf = uneven_frame(pd.DataFrame(X, columns=list("abcde")))
    with pytest.raises(ValueError, match=rf"one label per query \({N}\); got shape \({N - 1},\)"):
        fdist.explain(ex, ddf, np.zeros(N - 1, dtype=int), client=False)


def test_misaligned_target_partitions_fail_at_compute_with_a_clear_message(rng_data):
    rng, X = rng_data
    ex = softmax_explainer(rng)
    df = pd.DataFrame(X, columns=list("abcde"))
    ddf = uneven_frame(df)
    # same number of partitions, other sizes: only visible when the partitions are computed
    t = uneven_frame(pd.DataFrame({"t": np.zeros(N, dtype=int)}), sizes=(1, 10, 0, 19, 7))["t"]
    out = fdist.explain(ex, ddf, t, client=False)
    with pytest.raises(
        ValueError,
        match=r"targets has \d+ labels in a partition of \d+ rows; targets must be aligned",
    ):
        out.compute(scheduler="sync")


def test_import_without_dask_keeps_working():
    code = textwrap.dedent(
        """
        import sys
        for name in ("dask", "distributed"):
            sys.modules[name] = None  # makes `import dask` raise ImportError
        import numpy as np
        import fastcf
        from fastcf import LinearExplainer, distributed
        ex = LinearExplainer.from_arrays(np.array([[1.0, 1.0]]), np.array([0.0]))
        assert ex.explain(np.array([-1.0, -1.0]), 1, region=True).success
        try:
            distributed.explain(ex, np.zeros((2, 2)), 1)
        except ImportError as exc:
            print(exc)
        """
    )
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(fastcf.__file__)))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert 'pip install "fastcf[dask]"' in out.stdout


def test_a_tabular_explainer_is_refused_with_the_reason():
    """A TabularExplainer is a BaseExplainer, but its answers are DataFrames: refused, named."""
    from sklearn.linear_model import LogisticRegression

    X = pd.DataFrame({"a": np.arange(20.0), "b": np.arange(20.0) % 3})
    tx = fastcf.TabularExplainer(LogisticRegression().fit(X, X.a > 9.5), X)
    data = dd.from_pandas(X, npartitions=2)
    with pytest.raises(TypeError, match="a TabularExplainer answers on DataFrames"):
        fdist.explain(tx, data, True)
