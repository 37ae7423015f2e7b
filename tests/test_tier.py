"""Tiered execution (fastcf._kernels._tier), opt-in: a kernel's first call runs as Python while
Numba compiles it in the background; later calls run the compiled code.

Off by default (a kernel compiles before its first call, as Numba does): these tests switch it
on explicitly (:func:`fastcf.set_tiered`, ``FASTCF_TIERED=1``). The tests in this process use
toy kernels compiled without the on-disk cache, so each starts uncompiled whatever ran before.
The end-to-end tests start fresh processes on an empty cache.
"""

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from fastcf._kernels import _tier, kernel

pytestmark = pytest.mark.needs_jit


@pytest.fixture
def tiered(monkeypatch):
    """Tiering on, and the cache known to be cold: a miss runs Python at once, never waits."""
    monkeypatch.setattr(_tier, "_cold", True)
    previous = _tier.set_tiered(True)
    try:
        yield
        assert _tier.wait_for_kernels(timeout=120)
    finally:
        _tier.set_tiered(previous)


def _counts():
    return _tier.stats()


def _fresh_total():
    """A new, uncompiled kernel (the sum of a 1-D array)."""

    @kernel(cache=False)
    def total(x):
        s = 0.0
        for v in x:
            s += v
        return s

    return total


def test_a_first_call_runs_as_python_and_later_calls_compiled(tiered):
    total = _fresh_total()
    x = np.arange(10.0)
    before = _counts()["interpreted"]
    assert total(x) == 45.0
    assert _counts()["interpreted"] == before + 1
    assert total.signatures == [] or len(total.signatures) == 1  # compiling in the background
    assert _tier.wait_for_kernels(timeout=120)
    assert len(total.signatures) == 1
    assert total(x) == 45.0
    assert _counts()["interpreted"] == before + 1  # the compiled code answered


def test_python_that_raises_restores_its_arrays_and_the_compiled_code_answers(tiered):
    # Python's float raises on 1/0; the compiled kernel (NumPy's error model) returns inf. The
    # Python run has already changed `out`: it is restored before the compiled code runs.
    @kernel(cache=False)
    def bump_and_divide(x, out):
        out[0] += 1.0
        a = float(x[0])
        return 1.0 / (a - a)

    out = np.array([5.0])
    raised = _counts()["raised"]
    assert bump_and_divide(np.ones(1), out) == np.inf
    assert _counts()["raised"] == raised + 1
    assert out[0] == 6.0  # once, by the compiled code


def test_a_large_call_waits_for_the_compiled_code(tiered):
    total = _fresh_total()
    x = np.ones(_tier.MAX_INTERPRETED + 1)
    before = _counts()["interpreted"]
    assert total(x) == x.size
    assert _counts()["interpreted"] == before
    assert len(total.signatures) == 1


class _Blocker:
    """A job for the background thread that holds it until released (``compile`` waits)."""

    class stats:  # noqa: N801 - mimics a dispatcher's ``stats``
        cache_misses: dict = {}

    def __init__(self):
        self.release = threading.Event()

    def compile(self, argtypes):
        self.release.wait(60)


def test_after_a_slow_python_run_later_calls_wait_for_the_compiled_code(tiered, monkeypatch):
    total = _fresh_total()
    blocker = _Blocker()
    _tier._submit(blocker, ("block",))  # the thread is busy until released
    monkeypatch.setattr(_tier, "_SLOW", 0.0)  # every Python run counts as slow
    waited = []
    real = _tier._compiled
    monkeypatch.setattr(
        _tier, "_compiled", lambda disp, job, args: waited.append(1) or real(disp, job, args)
    )
    x = np.arange(10.0)
    before = _counts()["interpreted"]
    assert total(x) == 45.0  # as Python: the thread cannot compile yet
    assert _counts()["interpreted"] == before + 1 and waited == []
    threading.Timer(0.5, blocker.release.set).start()
    assert total(x) == 45.0  # waits for the compiled code
    assert waited == [1] and _counts()["interpreted"] == before + 1
    assert len(total.signatures) == 1


@pytest.mark.parametrize("how", ["default", "environment", "set_tiered", "compile_first"])
def test_switched_off_a_first_call_compiles_before_it_runs(monkeypatch, how):
    @kernel(cache=False)
    def twice(x):
        return 2.0 * x[0]

    monkeypatch.setattr(_tier, "_setting", None)  # (restored after the test)
    before = _counts()["interpreted"]
    if how == "default":
        monkeypatch.delenv("FASTCF_TIERED", raising=False)
        assert not _tier.stats()["tiered"]
        assert twice(np.ones(1)) == 2.0
    elif how == "environment":
        monkeypatch.setenv("FASTCF_TIERED", "0")
        assert twice(np.ones(1)) == 2.0
    elif how == "set_tiered":
        monkeypatch.setenv("FASTCF_TIERED", "1")
        assert _tier.set_tiered(False) is None  # overrides the environment
        assert twice(np.ones(1)) == 2.0
    else:
        _tier.set_tiered(True)
        with _tier.compile_first():
            assert not _tier.stats()["tiered"]
            assert twice(np.ones(1)) == 2.0
    assert len(twice.signatures) == 1
    assert _counts()["interpreted"] == before


def test_the_switches(monkeypatch):
    monkeypatch.setattr(_tier, "_setting", None)
    for value, on in (("1", True), ("on", True), ("0", False), ("", False), ("off", False)):
        monkeypatch.setenv("FASTCF_TIERED", value)
        assert _tier.stats()["tiered"] is on, value
    monkeypatch.delenv("FASTCF_TIERED")
    assert _tier.stats()["tiered"] is False  # the default
    assert _tier.set_tiered(True) is None
    assert _tier.stats()["tiered"] is True
    with _tier.compile_first():
        assert _tier.stats()["tiered"] is False
    monkeypatch.setenv("FASTCF_TIERED", "1")
    assert _tier.set_tiered(False) is True
    assert _tier.stats()["tiered"] is False
    assert _tier.set_tiered(None) is False  # back to the environment variable
    assert _tier.stats()["tiered"] is True
    with pytest.raises(TypeError, match="set_tiered"):
        _tier.set_tiered("yes")


def test_the_worker_exits_when_idle_and_a_miss_starts_a_new_one(tiered, monkeypatch):
    monkeypatch.setattr(_tier, "_IDLE", 0.2)
    x = np.arange(10.0)
    total = _fresh_total()
    assert total(x) == 45.0  # as Python; the compilation goes to the worker
    worker = _tier._worker
    assert worker is not None and _tier.stats()["worker"]
    assert _tier.wait_for_kernels(timeout=120)
    worker.join(timeout=60)  # (a worker waiting with the old 5 s idle time exits after that)
    assert not worker.is_alive()
    assert not _tier.stats()["worker"]
    again = _fresh_total()
    before = _counts()["interpreted"]
    assert again(x) == 45.0
    assert _counts()["interpreted"] == before + 1
    assert _tier.wait_for_kernels(timeout=120)
    assert len(again.signatures) == 1
    assert again(x) == 45.0 and _counts()["interpreted"] == before + 1


def test_a_kernel_runs_the_python_of_the_kernels_it_calls(tiered):
    @kernel(cache=False)
    def square(v):
        return v * v

    @kernel(cache=False)
    def sum_squares(x):
        s = 0.0
        for v in x:
            s += square(v)
        return s

    before = _counts()["interpreted"]
    assert sum_squares(np.arange(4.0)) == 14.0
    # one Python call: the callee ran inside it as Python, not through its own dispatcher
    assert _counts()["interpreted"] == before + 1
    assert square.signatures == []


def test_threads_calling_an_uncompiled_kernel_all_get_its_answer(tiered):
    @kernel(cache=False)
    def cumulative(x, out):
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i]
            out[i] = s

    rng = np.random.default_rng(0)
    xs = [rng.normal(size=50) for _ in range(64)]
    outs = [np.empty(50) for _ in xs]

    def work(i):
        for j in range(i, len(xs), 4):
            cumulative(xs[j], outs[j])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x, out in zip(xs, outs, strict=True):
        # the same additions in the same order in both tiers: the same bits
        np.testing.assert_array_equal(out, np.cumsum(x))


_CHILD = r"""
import json, sys
import numpy as np
import fastcf
from fastcf._kernels import _tier

# a warm miss waits 2 s for the worker to load its kernel from the cache, then runs as Python;
# on a loaded machine (CI's two stages and more on 2 cores) a load took longer, and 40 calls of
# the warm run were interpreted. What this test checks is that the cache is filled and used, so
# the wait is long here; the time a warm start takes is the cold-start benchmarks' business
_tier._LOAD_WAIT = 60.0
rng = np.random.default_rng(0)
answers = []
queries = []
# two forms of the two families of kernels (a logistic one, a softmax one): every kernel of
# every form took 5 minutes of a 2-core CI to compile twice; the tier treats all alike
for K, form, metric in ((1, {"lam": 0.05}, "manhattan"), (4, {"proba": 0.8}, "euclidean")):
    A = rng.normal(size=(K, 12))
    ex = fastcf.LinearExplainer.from_arrays(A, rng.normal(size=K))
    X = rng.normal(size=(3, 12))
    k = int(A[0] @ X[0] < 0) if K == 1 else (int(np.argmax(A @ X[0])) + 1) % K
    queries.append(lambda ex=ex, X=X, k=k, form=form, metric=metric: (
        ex.explain(X[0], k, metric=metric, **form),
        ex.explain(X, k, metric=metric, **form)))
first = [q() for q in queries]
counts = _tier.stats()
assert fastcf.wait_for_kernels(timeout=600)
again = [q() for q in queries]
rows = []
for (a, ab), (b, bb) in zip(first, again):
    rows.append([bool(a.success), bool(b.success), int(a.status), int(b.status),
                 float(np.max(np.abs(a.x - b.x) / (1 + np.abs(b.x)))),
                 ab.success.tolist(), bb.success.tolist(),
                 float(np.max(np.abs(ab.x - bb.x) / (1 + np.abs(bb.x))))])
print(json.dumps({"first": counts, "after": _tier.stats(), "rows": rows}))
"""


def _child(cache, tiered="1"):
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD],
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ, NUMBA_CACHE_DIR=str(cache), FASTCF_TIERED=tiered),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_an_empty_cache_answers_as_python_then_compiled_and_a_warm_one_compiled(tmp_path):
    cold = _child(tmp_path)
    assert cold["first"]["interpreted"] > 0
    assert cold["first"]["raised"] == 0 and cold["after"]["failed"] == 0
    # after the wait, every query runs compiled code
    assert cold["after"]["interpreted"] == cold["first"]["interpreted"]
    for ok_py, ok_c, st_py, st_c, dx, batch_py, batch_c, dxb in cold["rows"]:
        assert (ok_py, st_py) == (ok_c, st_c)
        assert batch_py == batch_c
        # the same source; the reductions compiled with `reassoc` sum in another order
        assert dx <= 1e-13 and dxb <= 1e-13
    warm = _child(tmp_path)  # the cache the first process filled
    assert warm["first"]["interpreted"] == 0
    assert warm["after"]["interpreted"] == 0


def test_a_process_that_ends_while_kernels_compile_exits_cleanly(tmp_path):
    code = (
        "import numpy as np, fastcf\n"
        "ex = fastcf.LinearExplainer.from_arrays(np.eye(3), np.zeros(3))\n"
        "print(ex.explain(np.array([1.0, 0.0, 0.0]), 2, proba=0.8).success)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), FASTCF_TIERED="1"),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "True"
    assert "Traceback" not in proc.stderr


_HOOKS = r"""
import os, threading
hooks = []
register = os.register_at_fork
os.register_at_fork = lambda **kw: hooks.append(kw) or register(**kw)
import numpy as np
import fastcf
from fastcf._kernels import _tier, kernel


def ours():
    return [kw for kw in hooks if any("_tier" in getattr(f, "__qualname__", "") + getattr(
        f, "__module__", "") for f in kw.values())]


def fresh():
    @kernel(cache=False)
    def total(x):
        s = 0.0
        for v in x:
            s += v
        return s
    return total


def workers():
    return [t for t in threading.enumerate() if t.name == "fastcf-compile"]


x = np.arange(10.0)
ex = fastcf.LinearExplainer.from_arrays(np.array([[2.0, -1.0]]), np.array([0.5]))
assert ex.explain(np.array([-1.0, 1.0]), target=1, lam=0.1).success  # fastcf's own kernels
assert fresh()(x) == 45.0  # a miss, compiled before it runs
assert not ours() and not workers() and not _tier._fork_guarded, (ours(), workers())
assert _tier.stats()["interpreted"] == 0
pid = os.fork()  # nothing of fastcf's runs at a fork
if pid == 0:
    os._exit(0)
assert os.waitpid(pid, 0)[1] == 0
fastcf.set_tiered(True)
_tier._cold = True  # (the cache is not used: run as Python at once)
assert fresh()(x) == 45.0
assert _tier.stats()["interpreted"] == 1
assert len(ours()) == 1 and _tier._fork_guarded  # installed with the first worker
assert fastcf.wait_for_kernels(timeout=120)
pid = os.fork()  # the worker may be idle or gone: the child runs kernels as the parent does
if pid == 0:
    os._exit(0 if fresh()(x) == 45.0 else 3)
assert os.waitpid(pid, 0)[1] == 0
print("ok")
"""


@pytest.mark.skipif(not hasattr(os, "register_at_fork"), reason="os.register_at_fork")
def test_tiering_off_installs_no_fork_hook_and_starts_no_thread(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "FASTCF_TIERED"}  # the default
    proc = subprocess.run(
        [sys.executable, "-c", _HOOKS],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
        env=dict(env, NUMBA_CACHE_DIR=str(tmp_path)),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "ok"


_FORK = r"""
import multiprocessing as mp
import numpy as np
import fastcf

rng = np.random.default_rng(0)
A = rng.normal(size=(5, 30))
ex = fastcf.LinearExplainer.from_arrays(A, rng.normal(size=5))
X = rng.normal(size=(2000, 30))
assert ex.explain(X[0], 1, proba=0.8).success  # a kernel compiling in the background


def work(i):
    # too large for Python: waits for a compilation, which the child must do itself
    return int(ex.explain(X, 1, lam=0.1).success.sum())


if __name__ == "__main__":
    with mp.get_context("fork").Pool(2) as pool:
        print(pool.map(work, range(2)))
"""


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork start method")
def test_a_fork_during_a_background_compilation_does_not_hang_the_child(tmp_path):
    script = tmp_path / "fork_child.py"
    script.write_text(_FORK)
    proc = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
        env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), FASTCF_TIERED="1"),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "[2000, 2000]"


def test_the_public_tiered_names_are_deprecated():
    # issue 54: tiered execution does not give every family a first answer within 1.5 s (a
    # tree ensemble's took 34 s as Python), so its public names say it goes
    import fastcf

    with pytest.warns(FutureWarning, match="deprecated"):
        previous = fastcf.set_tiered(None)
    assert previous is None or isinstance(previous, bool)
    with pytest.warns(FutureWarning, match="python -m fastcf warmup"):
        with fastcf.compile_first():
            pass
    with pytest.warns(FutureWarning, match="deprecated"):
        assert fastcf.wait_for_kernels(timeout=5)


_ENV_DEPRECATED = r"""
import warnings
import numpy as np
from fastcf._kernels import _tier, kernel

@kernel(cache=False)
def total(x):
    s = 0.0
    for v in x:
        s += v
    return s

_tier._cold = True  # (run as Python at once)
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    assert total(np.arange(4.0)) == 6.0
    assert total(np.arange(5.0)) == 10.0
print(sum("deprecated" in str(w.message) for w in seen))
"""


def test_tiered_execution_by_the_environment_says_once_that_it_is_deprecated(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", _ENV_DEPRECATED],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
        env=dict(os.environ, FASTCF_TIERED="1", NUMBA_CACHE_DIR=str(tmp_path)),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "1"
