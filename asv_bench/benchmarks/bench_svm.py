"""EnumSV benchmarks (paper 003): fastcf's warm-started solver against the same Lawler search
refitting scikit-learn's SVC on every subset.

Breast cancer (scikit-learn's copy of the UCI data), standardised, 80/20 split, linear kernel,
C chosen by 5-fold CV (§5.1). The kernels are compiled in ``setup`` so ``--quick`` does not time
the JIT.
"""

import time

import numpy as np

from fastcf.bench.svm import load_benchmark
from fastcf.svm_enum import SVMEnumerator, enumerate_svms

_DATA = {}


def _data(name):
    if name not in _DATA:
        _DATA[name] = load_benchmark(name)
    return _DATA[name]


def _warm_up():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    enumerate_svms(X, (X[:, 0] > 0).astype(int), k=3)


class TopK:
    """Total time of the top-k models (Fig. 2 of the paper), both solvers."""

    params = (["smo", "sklearn"], [10, 50])
    param_names = ["solver", "k"]
    timeout = 300

    def setup(self, solver, k):
        _warm_up()
        self.Xtr, _, self.ytr, _, self.C = _data("breast_cancer")

    def time_top_k(self, solver, k):
        SVMEnumerator(C=self.C, solver=solver).enumerate(self.Xtr, self.ytr, k=k)

    def track_solves(self, solver, k):
        it = SVMEnumerator(C=self.C, solver=solver).enumerate(self.Xtr, self.ytr)
        for _ in range(k):
            next(it)
        return it.n_solved

    track_solves.unit = "constrained SVMs solved"


class NextLatency:
    """Latency of one ``next()`` after the first model: what an interactive user waits for."""

    params = ["smo", "sklearn"]
    param_names = ["solver"]
    timeout = 300

    def setup(self, solver):
        _warm_up()
        Xtr, _, ytr, _, C = _data("breast_cancer")
        self.it = SVMEnumerator(C=C, solver=solver).enumerate(Xtr, ytr)
        next(self.it)
        self.args = (Xtr, ytr, C)

    def time_next(self, solver):
        next(self.it)

    def track_median_next_ms(self, solver):
        Xtr, ytr, C = self.args
        it = SVMEnumerator(C=C, solver=solver).enumerate(Xtr, ytr)
        next(it)
        lat = []
        for _ in range(30):
            t0 = time.perf_counter()
            next(it)
            lat.append(time.perf_counter() - t0)
        return 1e3 * float(np.median(lat))

    track_median_next_ms.unit = "ms"


class Ratio:
    """Speed-up of the top-50 search and agreement of the objective sequences, in one run."""

    timeout = 600

    def setup(self):
        _warm_up()
        self.Xtr, _, self.ytr, _, self.C = _data("breast_cancer")

    def _run(self, solver):
        t0 = time.perf_counter()
        models = SVMEnumerator(C=self.C, solver=solver).enumerate(self.Xtr, self.ytr, k=50)
        return time.perf_counter() - t0, np.array([m.objective for m in models])

    def track_speedup_vs_sklearn(self):
        t_fast, _ = self._run("smo")
        t_base, _ = self._run("sklearn")
        return t_base / t_fast

    track_speedup_vs_sklearn.unit = "x"

    def track_objective_rel_gap(self):
        _, f_fast = self._run("smo")
        _, f_base = self._run("sklearn")
        return float(np.max(np.abs(f_fast - f_base) / np.abs(f_base)))

    track_objective_rel_gap.unit = "relative"


class RowCache:
    """The on-demand row cache (for n too large for a dense kernel matrix) against dense rows."""

    params = [1.0, 0.1]
    param_names = ["cache_fraction"]

    def setup(self, cache_fraction):
        _warm_up()
        self.Xtr, _, self.ytr, _, self.C = _data("breast_cancer")
        n = self.Xtr.shape[0]
        self.cache_mb = 8.0 * n * max(2, int(cache_fraction * n)) / 2**20

    def time_top_10(self, cache_fraction):
        SVMEnumerator(C=self.C, cache_size=self.cache_mb).enumerate(self.Xtr, self.ytr, k=10)


class ColdStart:
    """Import and first call in a fresh interpreter (JIT cache warm on disk after the first)."""

    timeout = 300

    def time_import_and_first_model(self):
        import subprocess
        import sys

        code = (
            "import numpy as np; from fastcf import enumerate_svms; "
            "X = np.random.default_rng(0).normal(size=(40, 3)); "
            "enumerate_svms(X, (X[:, 0] > 0).astype(int), k=2)"
        )
        subprocess.run([sys.executable, "-c", code], check=True)
