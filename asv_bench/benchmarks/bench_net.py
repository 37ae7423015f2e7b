"""NetExplainer on an Adult-sized table (issue 55, item 3).

The data: 4 000 rows of 12 features uniform on [0, 1] (inputs scaled as a credit model's would
be), labelled by a non-linear rule with noise (seed 0); the models: scikit-learn
``MLPClassifier`` with hidden layers (20,), (32, 32) and (64, 64) (ReLU, ``max_iter=200``,
``random_state=0``). The queries: the first ``N_QUERIES`` rows, each asked for the other class,
``weights="mad"``, Manhattan, the box of the training data (``fit_data``).

Per query, alternately in the same process (``fastcf.bench.common.alternate``):

* ``exact`` — ``explain``: the incumbent, the CROWN bounds over the box ∩ its L1 ball, the
  program over the unstable neurons with the incumbent handed to HiGHS, the pattern's LP;
* ``plain`` — the plain big-M program of the same query on the same HiGHS at a zero gap: every
  neuron's interval bounds over the box, no incumbent, HiGHS's default heuristics
  (``fastcf._net.answer.answer(..., plain=True)``), with a time limit of ``PLAIN_LIMIT``
  seconds (a query stopped there counts at the limit: its ratio is then a lower bound);
* ``incumbent`` — ``explain(exact=False)``: the valid answer alone, with its certified bound.

``python asv_bench/benchmarks/bench_net.py [n_queries] [model ...]`` prints the medians, the
95th percentiles and the ratios plain / exact, and checks that both find the same distance.
The plain program of the (64, 64) network reaches any practical limit on most queries
(``FASTCF_BENCH_NET_PLAIN_LIMIT=20 ... 8 mlp64x64``: 7 of 8 stopped at 20 s), so its ratios there
are lower bounds and its distances not the optimum.
"""

import os
import sys
import time
import warnings
from functools import partial

import numpy as np

from fastcf import NetExplainer
from fastcf.bench.common import alternate, per_query

MODELS = {"mlp20": (20,), "mlp32x32": (32, 32), "mlp64x64": (64, 64)}
N_QUERIES = int(os.environ.get("FASTCF_BENCH_NET_QUERIES", "10"))
PLAIN_LIMIT = float(os.environ.get("FASTCF_BENCH_NET_PLAIN_LIMIT", "60"))


def problem(name, n_queries=N_QUERIES):
    """Return (model, explainer, queries, targets) of one model of :data:`MODELS`."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    rng = np.random.default_rng(0)
    n, d = 4000, 12
    X = rng.uniform(0, 1, size=(n, d))
    s = 2 * X[:, 0] + np.sin(4 * X[:, 1]) - 3 * X[:, 2] * X[:, 3] + X[:, 4:].sum(1) / 8
    y = (s + 0.2 * rng.normal(size=n) > np.median(s)).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = MLPClassifier(MODELS[name], max_iter=200, random_state=0).fit(X, y)
    ex = NetExplainer(model).fit_data(X)
    Q = X[:n_queries]
    return model, ex, Q, 1 - model.predict(Q)


def plain(ex, x, target, time_limit=PLAIN_LIMIT):
    """Answer one query with the plain big-M program; returns its distance (inf: no answer)."""
    from fastcf._net import answer as _answer

    X, _, names, tidx = ex._queries(x, target)
    q = _answer.query(ex, X, names, True, None, 1e-6, "manhattan", "mad", None, None, None,
                      time_limit)  # fmt: skip
    sol = _answer.answer(ex, X, tidx, q, plain=True)
    return float(sol.distance[0]) if sol.success[0] else float("inf")


def measure(name, n_queries=N_QUERIES, repeat=1):
    """Time one model's queries; return per-query seconds and distances."""
    model, ex, Q, T = problem(name, n_queries)
    exact = [partial(ex.explain, Q[i], T[i], weights="mad") for i in range(len(Q))]
    base = [partial(plain, ex, Q[i], T[i]) for i in range(len(Q))]
    fast, slow = alternate([exact, base], repeat, warm="first")
    quick = [partial(ex.explain, Q[i], T[i], weights="mad", exact=False) for i in range(len(Q))]
    inc = [f() for f in quick]
    return {
        "exact": fast,
        "plain": slow,
        "incumbent": per_query(quick, 1),
        "inc_ratio": np.array([r.distance for r in inc]),
        "predict": per_query([partial(model.predict, Q[i : i + 1]) for i in range(len(Q))], 3),
        "d_exact": np.array([f().distance for f in exact]),
        "d_plain": np.array([f() for f in base]),
    }


class Networks:
    """Exact queries of ReLU networks, and the plain big-M program as the baseline."""

    params = [["mlp20", "mlp32x32", "mlp64x64"]]
    param_names = ["model"]
    timeout = 3600

    def setup(self, name):
        self.model, self.ex, self.Q, self.T = problem(name)
        self.ex.explain(self.Q[0], self.T[0], weights="mad")

    def time_exact_queries(self, name):
        for x, t in zip(self.Q, self.T, strict=True):
            self.ex.explain(x, t, weights="mad")

    def track_exact_median_s(self, name):
        calls = [
            partial(self.ex.explain, x, t, weights="mad")
            for x, t in zip(self.Q, self.T, strict=True)
        ]
        return float(np.median(per_query(calls, 1)))

    def track_ratio_plain_over_exact_median(self, name):
        calls = [
            partial(self.ex.explain, x, t, weights="mad")
            for x, t in zip(self.Q, self.T, strict=True)
        ]
        base = [partial(plain, self.ex, x, t) for x, t in zip(self.Q, self.T, strict=True)]
        fast, slow = alternate([calls, base], 1, warm="first")
        return float(np.median(slow / fast))

    track_exact_median_s.unit = "seconds"
    track_ratio_plain_over_exact_median.unit = "ratio"


def _report(name, n_queries):
    t0 = time.perf_counter()
    m = measure(name, n_queries)
    ratio = m["plain"] / m["exact"]
    same = np.isclose(m["d_exact"], m["d_plain"], rtol=1e-6, atol=1e-9)
    print(f"\n{name}: {n_queries} queries ({time.perf_counter() - t0:.0f} s)")
    for key in ("exact", "plain", "incumbent", "predict"):
        v = m[key] * 1e3
        print(f"  {key:8s} median {np.median(v):9.1f} ms  p95 {np.percentile(v, 95):9.1f} ms"
              f"  max {v.max():9.1f} ms")  # fmt: skip
    print(f"  plain / exact: median {np.median(ratio):.2f}, min {ratio.min():.2f}, "
          f"max {ratio.max():.2f}; same distance {int(same.sum())}/{same.size}")  # fmt: skip
    cost = m["inc_ratio"] / m["d_exact"]
    print(f"  incumbent cost / optimum: median {np.median(cost):.3f}, max {cost.max():.3f}")


if __name__ == "__main__":
    n_q = int(sys.argv[1]) if len(sys.argv) > 1 else N_QUERIES
    names = sys.argv[2:] or ["mlp20", "mlp32x32"]
    for nm in names:
        _report(nm, n_q)
