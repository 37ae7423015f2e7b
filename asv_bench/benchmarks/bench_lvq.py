"""LVQ counterfactuals (paper 001): the exact Numba QP vs cvxpy, and the penalty CCP for LGMLVQ.

Every speed claim is a ratio measured in one run: ``time_fast`` vs ``time_cvxpy_rebuild`` (build
and solve the cvxpy program per query, what the paper's code does) vs ``time_cvxpy_parameter``
(programs built once with cp.Parameter and re-solved). Only public names are imported
(``fastcf.lvq``, ``fastcf.bench.lvq``). Kernels and programs are compiled/built in
``setup`` so that ``--quick`` does not time the JIT.
"""

import numpy as np

from fastcf.bench import lvq as bench

_DATA = {}


def _problem(dataset, model_name):
    key = (dataset, model_name)
    if key not in _DATA:
        from sklearn import datasets, pipeline
        from sklearn.decomposition import PCA
        from sklearn.preprocessing import StandardScaler

        from fastcf.lvq import GLVQ, GMLVQ, LGMLVQ, LVQExplainer

        if dataset == "breast_cancer":
            X, y = datasets.load_breast_cancer(return_X_y=True)
            nc = 5
        else:
            X, y = datasets.load_digits(return_X_y=True)
            nc = 10
        Z = pipeline.make_pipeline(StandardScaler(), PCA(nc, random_state=0)).fit_transform(X)
        cls = {"GLVQ": GLVQ, "GMLVQ": GMLVQ, "LGMLVQ": LGMLVQ}[model_name]
        m = cls(prototypes_per_class=3, random_state=0, max_iter=200).fit(Z, y)
        Q = Z[:20]
        pred = m.predict(Q)
        rng = np.random.default_rng(0)
        tg = np.array([rng.choice([c for c in m.classes_ if c != p]) for p in pred])
        _DATA[key] = (m, LVQExplainer(m), Q, tg)
    return _DATA[key]


class TimeGlobalMetric:
    """GLVQ / GMLVQ, Euclidean: one counterfactual (all target prototypes tried)."""

    params = (["breast_cancer", "digits"], ["GLVQ", "GMLVQ"])
    param_names = ["dataset", "model"]

    def setup(self, dataset, model):
        self.m, self.ex, self.Q, self.tg = _problem(dataset, model)
        self.x, self.t = self.Q[0], self.tg[0]
        self.ex.explain(self.x, self.t, method="ldp")  # compile
        self.ex.explain(self.x, self.t, method="cvxpy")  # build + compile the programs

    def time_fast(self, dataset, model):
        self.ex.explain(self.x, self.t, method="ldp")

    def time_cvxpy_parameter(self, dataset, model):
        self.ex.explain(self.x, self.t, method="cvxpy")

    def time_cvxpy_rebuild(self, dataset, model):
        bench.rebuild_and_solve(self.ex, self.x, self.t)

    def track_fast_vs_rebuild_distance_gap(self, dataset, model):
        d0 = bench.rebuild_and_solve(self.ex, self.x, self.t)
        return abs(self.ex.explain(self.x, self.t, method="ldp").distance - d0) / d0


class TimeBatch:
    """Batches of queries through the fast path (one Numba call)."""

    params = [1, 20, 200]
    param_names = ["n_queries"]

    def setup(self, n):
        self.m, self.ex, Q, tg = _problem("breast_cancer", "GMLVQ")
        reps = -(-n // len(Q))
        self.Q = np.tile(Q, (reps, 1))[:n]
        self.tg = np.tile(tg, reps)[:n]
        self.ex.explain(self.Q, self.tg)

    def time_fast_batch(self, n):
        self.ex.explain(self.Q, self.tg)

    def track_success_rate(self, n):
        return float(np.mean(self.ex.explain(self.Q, self.tg).success))


class TimeLGMLVQ:
    """Penalty convex-concave procedure for LGMLVQ (no baseline in this suite)."""

    params = (["breast_cancer", "digits"], ["euclidean", "manhattan"])
    param_names = ["dataset", "metric"]
    timeout = 300

    def setup(self, dataset, metric):
        self.m, self.ex, self.Q, self.tg = _problem(dataset, "LGMLVQ")
        self.ex.explain(self.Q[0], self.tg[0], metric=metric)

    def time_ccp(self, dataset, metric):
        self.ex.explain(self.Q[1], self.tg[1], metric=metric)

    def track_ccp_rounds(self, dataset, metric):
        return int(self.ex.explain(self.Q[1], self.tg[1], metric=metric).nit)


class ColdStart:
    """Import + first counterfactual in a fresh interpreter (on-disk Numba cache)."""

    timeout = 300

    def time_cold_start(self):
        import subprocess
        import sys

        code = (
            "import numpy as np; from fastcf.lvq import LVQExplainer;"
            "ex = LVQExplainer.from_arrays([[0.0, 0.0], [2.0, 0.0]], [0, 1]);"
            "ex.explain(np.zeros(2), 1)"
        )
        subprocess.run([sys.executable, "-c", code], check=True)
