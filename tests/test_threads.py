"""``n_jobs=``: every family's batches on the batch threads (issue 54, item 2).

The tree family answers a batch row by row, each row a program of milliseconds: the rows are
taken by the batch threads (:func:`fastcf._threads.each`), and every answer must be the bits
of the serial batch. A tabular batch stays in the calling thread (its rows are mostly Python),
but one explainer may be called from several threads at once. The linear and LVQ batches run
their kernels on the same threads (``tests/test_reliability.py::test_batch_threads_give_the_
same_bits_whatever_their_number``). Speed is measured by
``asv_bench/benchmarks/bench_threads.py``, not here.
"""

import io
import pickle
import threading
import time

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import fastcf
from fastcf import _threads
from fastcf._progress import Tally


def _threads_used(ex, fn):
    """Run ``fn()`` recording which threads asked the explainer's judge; return both."""
    seen = set()
    own = ex._in_target

    def spy(*a, **k):
        seen.add(threading.get_ident())
        return own(*a, **k)

    ex._in_target = spy
    try:
        return fn(), seen
    finally:
        del ex._in_target


def _same(a, b):
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.distance, b.distance)
    np.testing.assert_array_equal(a.success, b.success)
    np.testing.assert_array_equal(a.status, b.status)
    assert list(a.message) == list(b.message)


@pytest.fixture(scope="module")
def forest():
    X, y = make_classification(n_samples=600, n_features=6, n_informative=4, random_state=3)
    rf = RandomForestClassifier(n_estimators=20, max_depth=4, random_state=0).fit(X, y)
    return X, rf


def test_a_forest_batch_on_threads_is_the_serial_batch(forest):
    X, rf = forest
    ex = fastcf.TreeExplainer(rf)
    Q = X[:24]
    t = 1 - rf.predict(Q)
    for opts in ({}, {"metric": "euclidean"}, {"proba": 0.7}, {"max_changes": 2}):
        ref, one = _threads_used(ex, lambda o=opts: ex.explain(Q, t, n_jobs=1, **o))
        assert len(one) == 1
        for n in (2, 3):
            res, used = _threads_used(ex, lambda o=opts, n=n: ex.explain(Q, t, n_jobs=n, **o))
            _same(res, ref)
            assert len(used) > 1, opts  # (the rows did run on more than one thread)
        assert ref.success.all(), opts


@pytest.mark.parametrize("library", ["xgboost", "lightgbm", "hist"])
def test_a_booster_batch_on_threads_is_the_serial_batch(library):
    """The judge calls each library's own predict from the batch threads at once."""
    X, y = make_classification(n_samples=800, n_features=6, n_informative=4, random_state=5)
    if library == "xgboost":
        model = pytest.importorskip("xgboost").XGBClassifier(
            n_estimators=30, max_depth=3, random_state=0
        )
    elif library == "lightgbm":
        model = pytest.importorskip("lightgbm").LGBMClassifier(
            n_estimators=30, max_depth=3, num_leaves=8, random_state=0, verbose=-1
        )
    else:
        model = HistGradientBoostingClassifier(max_iter=30, max_depth=3, random_state=0)
    model.fit(X, y)
    ex = fastcf.TreeExplainer(model)
    Q = X[:30]
    t = 1 - model.predict(Q)
    for opts in ({}, {"proba": 0.8}):
        ref = ex.explain(Q, t, n_jobs=1, **opts)
        res = ex.explain(Q, t, n_jobs=2, **opts)
        _same(res, ref)
        assert ref.success.all()
        assert (model.predict(res.x) == t).all()


def test_missing_value_patterns_are_built_once_when_threads_ask_at_once():
    """A NaN row is answered by the forest conditioned on its pattern (``_trees.missing``):
    the threads share the cache of those programs."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    y = (X[:, 0] + X[:, 1] - X[:, 2] > 0).astype(int)
    X[::4, 0] = np.nan
    X[1::5, 2] = np.nan
    gb = HistGradientBoostingClassifier(max_iter=15, max_depth=3, random_state=0).fit(X, y)
    ex = fastcf.TreeExplainer(gb)
    Q = X[:30]
    t = 1 - gb.predict(Q)
    ref = ex.explain(Q, t, n_jobs=1)
    fresh = fastcf.TreeExplainer(gb)  # (an empty cache: every pattern built under threads)
    res = fresh.explain(Q, t, n_jobs=2)
    _same(res, ref)
    assert np.isnan(res.x[np.isnan(Q)]).all()
    # the cache of patterns and its lock survive a pickle (the Dask path ships explainers)
    back = pickle.loads(pickle.dumps(fresh))
    _same(back.explain(Q, t, n_jobs=2), ref)


def _frame():
    X, y = make_classification(n_samples=500, n_features=5, n_informative=3, random_state=1)
    df = pd.DataFrame(X.round(3), columns=list("abcde"))
    df["g"] = np.where(X[:, 0] + X[:, 4] > 0, "u", np.where(X[:, 1] > 0, "v", "w"))
    return df, y


@pytest.mark.parametrize("kind", ["forest", "logistic"])
def test_one_tabular_explainer_shared_by_threads_gives_the_serial_answers(kind):
    """A service's threads calling one explainer at once (a tabular batch itself runs in the
    calling thread: its rows are mostly Python): the tree program's caches and its verdicts
    on the row being solved are safe to share."""
    df, y = _frame()
    last = (
        RandomForestClassifier(15, max_depth=4, random_state=0)
        if kind == "forest"
        else LogisticRegression(max_iter=1000)
    )
    enc = ColumnTransformer([("g", OneHotEncoder(), ["g"]), ("n", StandardScaler(), list("abcde"))])
    pipe = make_pipeline(enc, last).fit(df, y)
    tx = fastcf.TabularExplainer(pipe, df, immutable=["e"])
    rows = df.iloc[:16]
    t = 1 - pipe.predict(rows)
    ref = [tx.explain(rows.iloc[[i]], t[i]) for i in range(16)]
    assert all(r.success for r in ref)
    fresh = fastcf.TabularExplainer(pipe, df, immutable=["e"])  # (empty caches)
    got = [None] * 16

    def ask(i):
        got[i] = fresh.explain(rows.iloc[[i]], t[i])

    threads = [threading.Thread(target=lambda k=k: [ask(i) for i in range(k, 16, 4)])
               for k in range(4)]  # fmt: skip
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for a, b in zip(got, ref, strict=True):
        pd.testing.assert_frame_equal(a.x, b.x)
        assert a.distance == b.distance and a.status == b.status
    batch = fresh.explain(rows, t, n_jobs=2)
    pd.testing.assert_frame_equal(batch.x, pd.concat([r.x for r in ref]))
    back = pickle.loads(pickle.dumps(fresh))  # (the program's lock and thread state re-made)
    pd.testing.assert_frame_equal(back.explain(rows, t, n_jobs=2).x, batch.x)


def test_n_jobs_is_a_word_of_every_family_and_checked_by_name(forest):
    X, rf = forest
    lin = fastcf.LinearExplainer(LogisticRegression().fit(X, rf.predict(X)))
    lvq = fastcf.LVQExplainer.from_arrays([[0.0] * 6, [1.0] * 6], [0, 1])
    trees = fastcf.TreeExplainer(rf)
    for ex in (lin, lvq, trees):
        ok = ex.explain(X[:3], 1, n_jobs=-1)
        assert ok.x.shape == (3, 6)
        with pytest.raises(ValueError, match="n_jobs"):
            ex.explain(X[:3], 1, n_jobs=0)
        with pytest.raises(TypeError, match="n_jobs"):
            ex.explain(X[:3], 1, n_jobs=2.0)
    # the front door passes it on
    res = fastcf.counterfactual(rf, X[:4], 1, n_jobs=2)
    _same(res, trees.explain(X[:4], 1))


def test_an_enclosing_limit_holds_where_a_call_leaves_n_jobs_unset():
    with _threads.limit(1):
        with _threads.limit(None):
            assert _threads.jobs(10_000, 1) == 1
        with _threads.limit(2):
            assert _threads.jobs(10_000, 1) == 2
    assert _threads.each(lambda i: i + 1, 4) == [1, 2, 3, 4]


def test_each_raises_a_rows_error_after_the_others_finish():
    done = np.zeros(40, dtype=np.int64)

    def row(i):
        if i == 7:
            raise RuntimeError("row 7 failed")
        done[i] += 1
        return i

    with _threads.limit(2), pytest.raises(RuntimeError, match="row 7 failed"):
        _threads.each(row, 40)
    assert done.max() == 1  # (no row twice)
    # no row starts after the failure: the other thread stops too (a Ctrl-C of a long batch)
    slow = np.zeros(40, dtype=np.int64)

    def late(i):
        if i == 0:
            raise KeyboardInterrupt
        time.sleep(0.002)
        slow[i] += 1

    with _threads.limit(2), pytest.raises(KeyboardInterrupt):
        _threads.each(late, 40)
    assert slow.sum() < 39  # (the other thread had 39 rows of 2 ms to run otherwise)


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_the_progress_line_counts_rows_ticked_from_several_threads():
    term = _Terminal()
    tally = Tally(4000, "demo", delay=0.0, every=0.0, stream=term)
    threads = [
        threading.Thread(target=lambda: [tally.tick() for _ in range(1000)]) for _ in range(4)
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert tally.done == 4000
    assert "demo: 4000/4000 rows" in term.getvalue()
    tally.close()
    assert term.getvalue().endswith("\r")


def test_the_gil_is_released_where_the_time_goes():
    """The rule of ``fastcf._kernels._RELEASE_GIL``: a batch's chunk kernels (which the batch
    threads run at once) and the kernels of milliseconds release the GIL; the microsecond
    kernels of a single query keep it (a release per call made two threads sharing an
    explainer hand the GIL over at each call)."""
    from fastcf._kernels import logistic, tree_search, verdict

    if not hasattr(verdict.binary_judge, "targetoptions"):
        pytest.skip("NUMBA_DISABLE_JIT=1: no compiled kernels")
    assert tree_search.search.targetoptions["nogil"] is True
    assert verdict.binary_judge.targetoptions["nogil"] is False
    assert logistic._project.serial.targetoptions["nogil"] is False
    assert logistic._project.parallel.targetoptions["nogil"] is True
