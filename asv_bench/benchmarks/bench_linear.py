"""Logistic and softmax counterfactuals (paper 000): φ, single queries, batches, λ-paths.

Every suite times fastcf and, where the issue states a target as a ratio, the baseline it is
measured against (NumPy's w @ x, the two products with A, the paper's Woodbury Newton, SciPy's
L-BFGS) in the same suite, so ``asv run`` reports both side by side; the ``track_ratio_*``
benchmarks measure the ratio inside one process (medians), which is what the targets are about.
Kernels are compiled in ``setup`` so that ``--quick`` never times the JIT.
"""

import time
import warnings

import numpy as np

from fastcf import LinearExplainer
from fastcf._kernels.roots import phi, phi_batch


def _median(fn, n=30):
    fn()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def _softmax(D, K, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((K, D)) * (3.0 / np.sqrt(D))
    b = rng.standard_normal(K)
    x = rng.standard_normal(D)
    return A, b, x


class Phi:
    """The scalar root φ(α, β), one call and a batch of 100 000."""

    def setup(self):
        rng = np.random.default_rng(0)
        self.alpha = 10.0 ** rng.uniform(-6, 6, 100_000)
        self.beta = rng.uniform(-50, 50, 100_000)
        phi(1.0, 0.5, 100)
        phi_batch(self.alpha[:10], self.beta[:10], 100)

    def time_phi_scalar(self):
        phi(3.7, -1.2, 100)

    def time_phi_batch_100k(self):
        phi_batch(self.alpha, self.beta, 100)

    def track_phi_max_iterations(self):
        return int(phi_batch(self.alpha, self.beta, 100)[2].max())


class LogisticSingle:
    """One query of a binary model: closed form vs NumPy's w @ x (target: ≤ 3× at D = 131 072)."""

    params = [784, 47_236, 131_072]
    param_names = ["D"]

    def setup(self, D):
        rng = np.random.default_rng(D)
        self.w = rng.standard_normal(D) * (3.0 / np.sqrt(D))
        self.x = rng.standard_normal(D)
        self.ex = LinearExplainer.from_arrays(self.w[None], [0.2])
        self.ex.explain(self.x, 1, lam=0.01)
        self.ex.explain(self.x, 1, proba=0.9)

    def time_explain_lam(self, D):
        self.ex.explain(self.x, 1, lam=0.01)

    def time_explain_proba(self, D):
        self.ex.explain(self.x, 1, proba=0.9)

    def time_numpy_dot(self, D):
        self.w @ self.x

    def track_ratio_explain_over_dot(self, D):
        return _median(lambda: self.ex.explain(self.x, 1, lam=0.01)) / _median(
            lambda: self.w @ self.x
        )

    track_ratio_explain_over_dot.unit = "ratio"


class LogisticBatch:
    """10 000 queries at D = 784 vs NumPy computing X @ w and writing an (N, D) output."""

    def setup(self):
        rng = np.random.default_rng(7)
        self.w = rng.standard_normal(784) * 0.1
        self.X = rng.standard_normal((10_000, 784))
        self.ex = LinearExplainer.from_arrays(self.w[None], [0.0])
        self.ex.explain(self.X[:4], 1, lam=0.01)

    def time_batch_lam(self):
        self.ex.explain(self.X, 1, lam=0.01)

    def time_numpy_baseline(self):
        z = self.X @ self.w
        out = np.empty_like(self.X)
        np.multiply(self.X, 1.0, out=out)
        return z, out

    def peakmem_batch_lam(self):
        self.ex.explain(self.X, 1, lam=0.01)

    def track_ratio_batch_over_numpy(self):
        return _median(lambda: self.ex.explain(self.X, 1, lam=0.01), 5) / _median(
            self.time_numpy_baseline, 5
        )

    track_ratio_batch_over_numpy.unit = "ratio"


class SoftmaxSingle:
    """One softmax query at the paper's shapes: reduced Newton vs its baselines."""

    params = [[(784, 10), (8192, 16), (47_236, 51), (131_072, 16)]]
    param_names = ["shape"]
    timeout = 600

    def setup(self, shape):
        D, K = shape
        self.A, self.b, self.x = _softmax(D, K)
        self.k = int(np.argmin(self.A @ self.x + self.b))
        self.ex = LinearExplainer.from_arrays(self.A, self.b)
        self.ex.explain(self.x, self.k, lam=0.01)
        self.y = np.ones(K)

    def time_reduced(self, shape):
        self.ex.explain(self.x, self.k, lam=0.01)

    def time_two_products_with_A(self, shape):
        self.A @ self.x
        self.A.T @ self.y

    def time_woodbury(self, shape):
        self.ex.explain(self.x, self.k, lam=0.01, method="woodbury")

    def time_path_100(self, shape):
        self.ex.path(self.x, self.k)

    def track_nit_reduced(self, shape):
        return self.ex.explain(self.x, self.k, lam=0.01).nit

    def track_nit_woodbury(self, shape):
        return self.ex.explain(self.x, self.k, lam=0.01, method="woodbury").nit

    def track_ratio_reduced_over_two_products(self, shape):
        return _median(lambda: self.ex.explain(self.x, self.k, lam=0.01)) / _median(
            lambda: self.time_two_products_with_A(shape)
        )

    def track_ratio_woodbury_over_reduced(self, shape):
        return _median(
            lambda: self.ex.explain(self.x, self.k, lam=0.01, method="woodbury"), 3
        ) / _median(lambda: self.ex.explain(self.x, self.k, lam=0.01))

    def track_ratio_lbfgs_over_reduced(self, shape):
        return _median(
            lambda: self.ex.explain(self.x, self.k, lam=0.01, method="lbfgs"), 1
        ) / _median(lambda: self.ex.explain(self.x, self.k, lam=0.01))

    def track_ratio_path_over_one_solve(self, shape):
        # (the target: ≤ 5; both medians over the same number of calls, back to back)
        return _median(lambda: self.ex.path(self.x, self.k), 30) / _median(
            lambda: self.ex.explain(self.x, self.k, lam=0.01), 30
        )

    def track_nit_path_100(self, shape):
        return int(self.ex.path(self.x, self.k).nit.sum())

    for _f in (
        track_ratio_reduced_over_two_products,
        track_ratio_woodbury_over_reduced,
        track_ratio_lbfgs_over_reduced,
        track_ratio_path_over_one_solve,
    ):
        _f.unit = "ratio"
    del _f


class DigitsBatch:
    """10 000 digits queries (D = 64, K = 10): throughput (target ≥ 100 000 per second)."""

    def setup(self):
        from sklearn.datasets import load_digits
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import LogisticRegression

        X, y = load_digits(return_X_y=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = LogisticRegression(max_iter=300).fit(X, y)
        self.ex = LinearExplainer(model)
        rng = np.random.default_rng(0)
        idx = rng.integers(0, len(X), 10_000)
        self.X = np.ascontiguousarray(X[idx])
        self.t = (model.predict(self.X) + 1) % 10
        self.ex.explain(self.X[:8], self.t[:8], lam=0.01)

    def time_batch_lam(self):
        self.ex.explain(self.X, self.t, lam=0.01)

    def time_batch_region(self):
        self.ex.explain(self.X, self.t, region=True)

    def track_queries_per_second(self):
        return 10_000 / _median(lambda: self.ex.explain(self.X, self.t, lam=0.01), 3)

    track_queries_per_second.unit = "queries/s"
