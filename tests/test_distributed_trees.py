"""fastcf.distributed with a TreeExplainer: equal to ``explainer.explain`` on the same rows.

Local schedulers only (synchronous, and a process pool that pickles the explainer): no network.
"""

import pickle

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")

from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier  # noqa: E402

from fastcf import TreeExplainer  # noqa: E402
from fastcf import distributed as fdist  # noqa: E402

FIELDS = ("x", "success", "status", "distance", "nit", "proba", "message")
ROW_CHUNKS = (6, 0, 1, 9)  # uneven, one empty block, one single row
N = sum(ROW_CHUNKS)
D = 4


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(200, D))
    y = (X[:, 0] + X[:, 1] - 0.5 * X[:, 2] > 0).astype(int) + (X[:, 3] > 1.0)
    return X, y


@pytest.fixture(scope="module", params=["rf", "gb"])
def explainer(request, data):
    X, y = data
    if request.param == "rf":
        model = RandomForestClassifier(6, max_depth=3, random_state=0).fit(X, y)
    else:
        model = GradientBoostingClassifier(n_estimators=4, max_depth=2, random_state=0).fit(X, y)
    return model, TreeExplainer(model).fit_data(X)


def _same(got, ref):
    for f in FIELDS:
        a, b = np.asarray(getattr(got, f)), np.asarray(getattr(ref, f))
        assert a.shape == b.shape and np.array_equal(a, b), f


@pytest.mark.parametrize(
    "options",
    [{}, {"metric": "euclidean", "max_changes": 2}, {"plausible": True}, {"exact": False}],
    ids=["default", "euclid-max2", "plausible", "quick"],
)
def test_array_equals_explain(explainer, data, options):
    model, ex = explainer
    X, _ = data
    Q = X[:N]
    targets = model.classes_[(np.searchsorted(model.classes_, model.predict(Q)) + 1) % 3]
    ref = ex.explain(Q, targets, **options)
    res = fdist.explain(ex, da.from_array(Q, chunks=(ROW_CHUNKS, D)), targets, **options)
    with dask.config.set(scheduler="synchronous"):
        got = res.compute()
    _same(got, ref)
    assert got.success.any()
    assert np.array_equal(model.predict(got.x[got.success]), targets[got.success])


def test_frame_with_feature_names_equals_explain(data):
    X, y = data
    names = [f"f{i}" for i in range(D)]
    df = pd.DataFrame(X, columns=names)
    model = RandomForestClassifier(5, max_depth=3, random_state=1).fit(df, y)
    ex = TreeExplainer(model)
    Q = df.iloc[:N]
    ref = ex.explain(Q, 2, frozen=["f3"])
    ddf = dd.from_pandas(Q, npartitions=3)
    out = fdist.explain(ex, ddf, 2, frozen=["f3"]).compute(scheduler="synchronous")
    assert list(out.columns[:D]) == names
    assert np.array_equal(out[names].to_numpy(), ref.x)
    assert np.array_equal(out["success"].to_numpy(), ref.success)
    assert np.array_equal(out["distance"].to_numpy(), ref.distance)
    assert np.array_equal(out[[f"proba_{c}" for c in model.classes_]].to_numpy(), ref.proba)


def test_a_process_pool_pickles_the_explainer_and_agrees(explainer, data):
    # the workers get a pickled copy (after a query built its program): same answers
    model, ex = explainer
    X, _ = data
    Q = X[:N]
    ex.explain(Q[:1], model.classes_[0])
    copy = pickle.loads(pickle.dumps(ex))
    assert np.array_equal(copy.explain(Q, model.classes_[0]).x, ex.explain(Q, model.classes_[0]).x)
    res = fdist.explain(ex, da.from_array(Q, chunks=(ROW_CHUNKS, D)), model.classes_[0])
    got = res.compute(scheduler="processes", num_workers=2)
    _same(got, ex.explain(Q, model.classes_[0]))


def test_tree_options_are_checked_before_any_work(explainer, data):
    model, ex = explainer
    X, _ = data
    dX = da.from_array(X[:N], chunks=(ROW_CHUNKS, D))
    with pytest.raises(TypeError, match="options must be keyword arguments of TreeExplainer"):
        fdist.explain(ex, dX, 1, lam=0.1)
    with pytest.raises(ValueError, match="target"):
        fdist.explain(ex, dX, "nope")


def test_the_program_is_built_before_shipping(explainer, data):
    # shipped unbuilt, each copy (each worker, or each task of a process pool) would build it
    model, ex = explainer
    X, _ = data
    Q = X[:N]
    fresh = pickle.loads(pickle.dumps(ex))
    fresh._program = None  # as if it had never answered a query
    fresh._builds = type(ex._builds)(1)
    res = fdist.explain(fresh, da.from_array(Q, chunks=(ROW_CHUNKS, D)), model.classes_[1])
    assert fresh._program is not None
    graph = dict(res.x.__dask_graph__())
    shipped = [getattr(v, "value", v) for k, v in graph.items() if "fastcf-explainer-" in str(k)]
    assert len(shipped) == 1 and shipped[0] is fresh
    assert pickle.loads(pickle.dumps(fresh))._program is not None  # what a worker gets
    got = res.compute(scheduler="synchronous")
    _same(got, ex.explain(Q, model.classes_[1]))
