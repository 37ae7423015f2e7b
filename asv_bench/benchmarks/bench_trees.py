"""TreeExplainer on tree ensembles of an Adult-sized synthetic data set (issue 32, item 4).

The data: 30 000 rows, 14 columns shaped like the Adult census table — integer columns (an age,
a large "fnlwgt"-like count, an education number 1–16, hours 1–99), seven ordinal category codes
(3 to 9 levels) and three continuous columns — from ``make_classification`` (8 informative
columns, 5% label noise). The models: ``RandomForestClassifier`` with 100 trees of depth 5, 500
trees of depth 5 and 100 trees of depth 8; ``XGBClassifier`` and ``LGBMClassifier`` with 100
trees of depth 5 (``num_leaves=32``). The queries: 20 seeded rows, each asked for the other
class, ``weights="mad"`` (1/MAD of the training columns), Manhattan.

Per query, in the same process:

* ``exact`` — ``explain`` (incumbent, reductions, reduced-cost fixing, the pruned program);
* ``plain`` — the full interval program of the same query on the same HiGHS, without incumbent,
  reductions or cutoff (``TreeExplainer._milp(..., plain=True)``), the baseline; it runs with
  a time limit of ``PLAIN_LIMIT`` seconds per query (a query stopped there counts at the limit,
  so its ratio is a lower bound);
* ``incumbent`` — ``explain(exact=False)``: the quick search alone, with its certified bound;
* ``predict`` — the model's own ``predict`` of one row: every answer is confirmed by it, so it
  is the floor of a query.

Exact and plain are timed alternately query by query (``fastcf.bench.common.alternate``); the
rows report the median and 95th percentile over the queries and the per-query ratios
plain / exact. ``python asv_bench/benchmarks/bench_trees.py [n_queries]`` prints the table.
"""

import os
import sys
import time
from functools import partial

import numpy as np

from fastcf import TreeExplainer
from fastcf.bench.common import alternate, per_query

MODELS = {
    "rf100x5": ("rf", 100, 5),
    "rf500x5": ("rf", 500, 5),
    "rf100x8": ("rf", 100, 8),
    "xgb100x5": ("xgb", 100, 5),
    "lgbm100x5": ("lgbm", 100, 5),
}
N_QUERIES = int(os.environ.get("FASTCF_BENCH_TREE_QUERIES", "20"))
PLAIN_LIMIT = float(os.environ.get("FASTCF_BENCH_TREE_PLAIN_LIMIT", "120"))


def adult_like(n=30_000, seed=0):
    """Return (X, y): an Adult-sized synthetic table (see the module docstring)."""
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=n, n_features=14, n_informative=8, n_redundant=3, flip_y=0.05,
        class_sep=0.8, random_state=seed,
    )  # fmt: skip
    X[:, 0] = np.round(40 + 12 * X[:, 0])  # age
    X[:, 1] = np.round(190_000 + 100_000 * X[:, 1])  # a large count
    X[:, 2] = np.clip(np.round(10 + 2.5 * X[:, 2]), 1, 16)  # education number
    for j in range(3, 10):  # ordinal category codes, 3 to 9 levels
        q = np.quantile(X[:, j], np.linspace(0, 1, 3 + j)[1:-1])
        X[:, j] = np.searchsorted(q, X[:, j])
    X[:, 12] = np.round(np.clip(40 + 10 * X[:, 12], 1, 99))  # hours
    return X, y


def problem(name, n_queries=N_QUERIES):
    """Return (model, explainer, queries, targets) of one model of :data:`MODELS`."""
    kind, trees, depth = MODELS[name]
    X, y = adult_like()
    if kind == "xgb":
        from xgboost import XGBClassifier

        model = XGBClassifier(n_estimators=trees, max_depth=depth, random_state=0, n_jobs=1)
    elif kind == "lgbm":
        from lightgbm import LGBMClassifier

        model = LGBMClassifier(
            n_estimators=trees, max_depth=depth, num_leaves=2**depth, random_state=0,
            n_jobs=1, verbose=-1,
        )  # fmt: skip
    else:
        from sklearn.ensemble import RandomForestClassifier

        model = RandomForestClassifier(
            n_estimators=trees, max_depth=depth, random_state=0, n_jobs=1
        )
    model.fit(X, y)
    ex = TreeExplainer(model).fit_mad(X)
    rng = np.random.default_rng(1)
    Q = X[rng.choice(X.shape[0], n_queries, replace=False)]
    T = 1 - model.predict(Q)
    return model, ex, Q, T


def plain(ex, x, target, time_limit=PLAIN_LIMIT):
    """Answer one query with the full program (the baseline); returns the answer's distance."""
    X, _, names, tidx = ex._queries(x, target)
    q = ex._query(X, names, True, None, "manhattan", "mad", None, None, None)
    q = q._replace(time_limit=time_limit)
    return float(ex._milp(X, tidx, q, plain=True).distance[0])


def measure(name, n_queries=N_QUERIES, repeat=3):
    """Time one model's queries; return a dict of per-query arrays (seconds) and answers.

    (And ``problem``: the model, explainer, queries and targets of :func:`problem`.)
    """
    model, ex, Q, T = problem(name, n_queries)
    exact = [partial(ex.explain, Q[i], T[i], weights="mad") for i in range(len(Q))]
    base = [partial(plain, ex, Q[i], T[i]) for i in range(len(Q))]
    fast, slow = alternate([exact, base], repeat, [repeat, 1], warm="first")
    quick = per_query(
        [partial(ex.explain, Q[i], T[i], weights="mad", exact=False) for i in range(len(Q))],
        repeat,
    )
    floor = per_query([partial(model.predict, Q[i : i + 1]) for i in range(len(Q))], repeat)
    d_exact = np.array([f().distance for f in exact])
    d_plain = np.array([f() for f in base])
    inc = [ex.explain(Q[i], T[i], weights="mad", exact=False) for i in range(len(Q))]
    return {
        "exact": fast,
        "plain": slow,
        "incumbent": quick,
        "predict": floor,
        "d_exact": d_exact,
        "d_plain": d_plain,
        "d_incumbent": np.array([r.distance for r in inc]),
        "bound": np.array([r.info["bound"] for r in inc]),
        "valid": np.array([bool(r.success) for r in inc]),
        "problem": (model, ex, Q, T),
    }


def quick_against_exact(name, n_queries=N_QUERIES, repeat=3, model=None):
    """Compare ``exact=False`` with the exact answer query by query (issue 54's measure).

    Exact and ``exact=False`` are timed alternately query by query in one process
    (:func:`~fastcf.bench.common.alternate`), so a change of the machine's load hits both
    sides of each ratio alike. ``model``: the ``(model, explainer, queries, targets)`` of
    :func:`problem` (None: made here).

    Returns
    -------
    dict
        Per-query arrays: ``time`` (exact=False / exact), ``cost`` (its distance / the
        optimum; 1 where the optimum is 0), ``bound`` (its ``info["bound"]`` / the optimum),
        and ``exact`` and ``quick`` (seconds).
    """
    _, ex, Q, T = problem(name, n_queries) if model is None else model
    exact = [partial(ex.explain, Q[i], T[i], weights="mad") for i in range(len(Q))]
    quick = [partial(ex.explain, Q[i], T[i], weights="mad", exact=False) for i in range(len(Q))]
    t_exact, t_quick = alternate([exact, quick], repeat)
    best = np.array([float(f().distance) for f in exact])
    fast = [f() for f in quick]
    d = np.where(best > 0, best, 1.0)
    cost = np.array([float(r.distance) for r in fast]) / d
    cost[best == 0] = 1.0
    return {
        "time": t_quick / t_exact,
        "cost": cost,
        "bound": np.array([float(np.ravel(r.info["bound"])[0]) for r in fast]) / d,
        "exact": t_exact,
        "quick": t_quick,
    }


class Forests:
    """Exact and quick queries of tree ensembles, and the full program as the baseline."""

    params = [list(MODELS)]
    param_names = ["model"]
    timeout = 3600

    def setup(self, name):
        self.model, self.ex, self.Q, self.T = problem(name)
        self.ex.explain(self.Q[0], self.T[0], weights="mad")  # HiGHS instance made

    def time_exact_queries(self, name):
        for x, t in zip(self.Q, self.T, strict=True):
            self.ex.explain(x, t, weights="mad")

    def time_incumbent_queries(self, name):
        for x, t in zip(self.Q, self.T, strict=True):
            self.ex.explain(x, t, weights="mad", exact=False)

    def time_model_predict_one_row(self, name):
        """The floor of a query: every answer is confirmed by the model's own predict."""
        for i in range(len(self.Q)):
            self.model.predict(self.Q[i : i + 1])

    def track_exact_median_s(self, name):
        return float(np.median(self._exact_times()))

    def track_exact_p95_s(self, name):
        return float(np.percentile(self._exact_times(), 95))

    def track_ratio_plain_over_exact_median(self, name):
        base = [partial(plain, self.ex, x, t) for x, t in zip(self.Q, self.T, strict=True)]
        fast, slow = alternate([self._calls(), base], 1, warm="first")
        return float(np.median(slow / fast))

    def track_incumbent_gap_median(self, name):
        """Median of (incumbent distance / exact distance − 1) over the queries."""
        quick = [
            self.ex.explain(x, t, weights="mad", exact=False)
            for x, t in zip(self.Q, self.T, strict=True)
        ]
        best = [self.ex.explain(x, t, weights="mad") for x, t in zip(self.Q, self.T, strict=True)]
        gap = [
            a.distance / b.distance - 1 if b.distance > 0 else 0.0
            for a, b in zip(quick, best, strict=True)
        ]
        return float(np.median(gap))

    def _calls(self):
        return [
            partial(self.ex.explain, x, t, weights="mad")
            for x, t in zip(self.Q, self.T, strict=True)
        ]

    def _exact_times(self):
        return per_query(self._calls(), 3)

    track_exact_median_s.unit = "seconds"
    track_exact_p95_s.unit = "seconds"
    track_ratio_plain_over_exact_median.unit = "ratio"
    track_incumbent_gap_median.unit = "relative"


def _report(name, n_queries):
    t0 = time.perf_counter()
    m = measure(name, n_queries)
    ratio = m["plain"] / m["exact"]
    same = np.isclose(m["d_exact"], m["d_plain"], rtol=1e-9, atol=1e-12)
    print(f"\n{name}: {n_queries} queries ({time.perf_counter() - t0:.0f} s)")
    for key in ("exact", "plain", "incumbent", "predict"):
        med, p95 = np.median(m[key]) * 1e3, np.percentile(m[key], 95) * 1e3
        print(f"  {key:<10} median {med:9.1f} ms   p95 {p95:9.1f} ms")
    r50, r95 = np.median(ratio), np.percentile(ratio, 95)
    print(f"  plain/exact ratio: median {r50:.1f}x  p95 {r95:.1f}x  min {ratio.min():.1f}x")
    print(
        f"  exact == plain distance: {int(same.sum())}/{same.size}"
        f"  (plain stopped at {PLAIN_LIMIT:g} s: {int((m['plain'] >= PLAIN_LIMIT).sum())})"
    )
    d = np.where(m["d_exact"] > 0, m["d_exact"], 1.0)
    gap = m["d_incumbent"] / d - 1.0
    below = bool((m["bound"] <= m["d_exact"] * (1 + 1e-9)).all())
    print(
        f"  incumbent: valid {int(m['valid'].sum())}/{n_queries}, optimal "
        f"{int((gap <= 1e-9).sum())}/{n_queries}, gap median {np.median(gap):.3f} max "
        f"{gap.max():.3f}; bound <= exact: {below}, bound/exact median "
        f"{np.median(m['bound'] / d):.3f}"
    )
    r = quick_against_exact(name, n_queries, model=m["problem"])
    print(
        f"  exact=False / exact, alternated: time ratio median {np.median(r['time']):.3f}; cost "
        f"ratio median {np.median(r['cost']):.3f} max {r['cost'].max():.3f}; bound / optimum "
        f"median {np.median(r['bound']):.3f}"
    )
    return m


if __name__ == "__main__":  # pragma: no cover - the benchmark's printed table
    n = int(sys.argv[1]) if len(sys.argv) > 1 else N_QUERIES
    names = sys.argv[2].split(",") if len(sys.argv) > 2 else list(MODELS)
    for model_name in names:
        _report(model_name, n)
