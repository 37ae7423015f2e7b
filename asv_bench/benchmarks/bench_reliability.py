"""Reliability benchmarks: cold start in a fresh process, and peak memory of a large batch.

``time_import_and_first_call`` runs ``import fastcf`` and one query in a new interpreter with a
warm Numba cache (``setup`` warms it): what a service pays at start-up. Target: < 1 s.

``ColdStartFamily`` does the same per family (logistic, softmax, lvq, svm, trees, gradcheck) through
``python -m fastcf warmup <family>`` (import + the family's first queries), in a new interpreter
whose ``NUMBA_CACHE_DIR`` is a fresh temporary directory: ``track_empty_cache`` starts with it
empty (every kernel the family uses is compiled: a new container, the first call after ``pip
install``), ``track_warm_cache`` with it filled by one earlier run (what a container whose image
ran ``python -m fastcf warmup`` pays). Both return the wall time of the subprocess, in seconds.

``FirstCall`` is what a user meets: a new interpreter on an empty cache runs ``import fastcf``,
builds an explainer (for LVQ: fits a GLVQ on 60 points; for trees: a random forest of 20 trees
on 200 points) and answers its first query, with the
opt-in tiered execution switched on (``FASTCF_TIERED=1``: the kernels run as Python while a
background thread compiles them; by default they compile before their first call).
``track_first_call`` is the in-process wall time from before the import to the first answer.
Target: <= 3 s per family.

``peakmem_batch`` explains 100 000 queries at D = 784 (a binary LinearExplainer, ``lam=``). asv's
``peakmem_`` is the whole process's maximum RSS, which includes the (N, D) input built in
``setup``; ``track_peak_over_output`` isolates the call: the peak of the memory allocated during
``explain`` (tracemalloc, which sees Numba's allocations) divided by the size of the output
``x``. Target: <= 1.5.
"""

import os
import subprocess
import sys
import tempfile
import time
import tracemalloc

import numpy as np

_COLD = """
import numpy as np
import fastcf
ex = fastcf.LinearExplainer.from_arrays(np.array([[1.0, -2.0, 0.5]]), np.array([0.1]))
ex.explain(np.zeros(3), 1, lam=0.1)
"""


def _run_fresh():
    subprocess.run([sys.executable, "-c", _COLD], check=True, env=dict(os.environ))


class ColdStart:
    """Import + first query in a fresh interpreter, warm on-disk cache."""

    timeout = 300
    number = 1
    repeat = 5

    def setup(self):
        _run_fresh()  # compiles and caches the kernels once

    def time_import_and_first_call(self):
        _run_fresh()


def _warmup_in_fresh_process(family, cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "fastcf", "warmup", family],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - t0


class ColdStartFamily:
    """Import + first queries of one family in a fresh interpreter: empty vs filled Numba cache."""

    params = [["logistic", "softmax", "lvq", "svm", "trees", "gradcheck"]]
    param_names = ["family"]
    timeout = 1200

    def track_empty_cache(self, family):
        with tempfile.TemporaryDirectory(prefix="fastcf-asv-empty-") as empty:
            return _warmup_in_fresh_process(family, empty)

    def track_warm_cache(self, family):
        with tempfile.TemporaryDirectory(prefix="fastcf-asv-warm-") as cache:
            _warmup_in_fresh_process(family, cache)  # fills the cache (not timed)
            return _warmup_in_fresh_process(family, cache)

    track_empty_cache.unit = "s"
    track_warm_cache.unit = "s"


_FIRST = r"""
import sys, time
t0 = time.perf_counter()
import warnings
import numpy as np
import fastcf
family = sys.argv[1]
rng = np.random.default_rng(0)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    if family in ("logistic", "softmax"):
        K = 1 if family == "logistic" else 5
        A = rng.normal(size=(K, 30))
        ex = fastcf.LinearExplainer.from_arrays(A, rng.normal(size=K))
        x = rng.normal(size=30)
        k = int(A[0] @ x < 0) if K == 1 else (int(np.argmax(A @ x)) + 1) % K
        for form in ({"proba": 0.8}, {"lam": 0.01}, {"region": True}):
            assert ex.explain(x, k, **form).success
    elif family == "lvq":
        from fastcf.lvq_models import GLVQ
        X = np.vstack([rng.normal(0.0, 1.0, (30, 4)), rng.normal(3.0, 1.0, (30, 4))])
        model = GLVQ(random_state=0).fit(X, np.repeat([0, 1], 30))
        assert fastcf.LVQExplainer(model).explain(X[0], 1).success
    elif family == "trees":
        from sklearn.ensemble import RandomForestClassifier
        X = rng.normal(size=(200, 5))
        y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
        model = RandomForestClassifier(20, max_depth=4, random_state=0).fit(X, y)
        ex = fastcf.TreeExplainer(model)
        k = 1 - int(model.predict(X[:1])[0])
        assert ex.explain(X[0], k).success and ex.explain(X[0], k, exact=False).success
    else:
        X = rng.normal(size=(40, 2))
        y = (X[:, 0] + 0.3 * rng.normal(size=40) > 0).astype(int)
        assert len(fastcf.enumerate_svms(X, y, k=5)) == 5
print(time.perf_counter() - t0)
"""


def first_call_seconds(family, tiered="1"):
    """Run ``_FIRST`` for ``family`` in a new interpreter on an empty cache; its seconds."""
    with tempfile.TemporaryDirectory(prefix="fastcf-first-") as empty:
        env = dict(os.environ, NUMBA_CACHE_DIR=empty, FASTCF_TIERED=tiered)
        out = subprocess.run(
            [sys.executable, "-c", _FIRST, family],
            check=True,
            env=env,
            capture_output=True,
            text=True,
        )
    return float(out.stdout.strip().splitlines()[-1])


class FirstCall:
    """Import, explainer and first queries of one family in a new interpreter, empty cache."""

    params = [["logistic", "softmax", "lvq", "svm", "trees"]]
    param_names = ["family"]
    timeout = 300

    def track_first_call(self, family):
        return first_call_seconds(family)

    track_first_call.unit = "s"


def _batch_problem(N=100_000, D=784):
    from fastcf import LinearExplainer

    rng = np.random.default_rng(0)
    ex = LinearExplainer.from_arrays(rng.normal(size=(1, D)) / np.sqrt(D), np.array([0.1]))
    X = rng.normal(size=(N, D))
    ex.explain(X[:8], 1, lam=0.1)  # load the kernels
    return ex, X


class BatchMemory:
    """100 000 queries at D = 784, binary logistic, lam mode."""

    timeout = 600
    number = 1
    repeat = 1

    def setup(self):
        self.ex, self.X = _batch_problem()

    def peakmem_batch(self):
        self.ex.explain(self.X, 1, lam=0.1)

    def track_peak_over_output(self):
        tracemalloc.start()
        try:
            res = self.ex.explain(self.X, 1, lam=0.1)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        return peak / res.x.nbytes

    track_peak_over_output.unit = "x output size"
