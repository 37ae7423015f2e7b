"""Few-change answers: Manhattan (binary knapsack, softmax LP), max_changes=, enumerate().

``ManhattanBinary``: one ``region=True`` query, Manhattan over Euclidean on the same queries
(median and max of the per-query ratios; the issue's target ≤ 2×) at D = 784 and 131 072.
``Enumerate``/``MaxChanges``: the breast-cancer pipeline, MAD weights, the data range as a box.
Only public names are imported; ratios are measured inside one process.
"""

from functools import partial

import numpy as np

from fastcf import LinearExplainer
from fastcf.bench.common import alternate
from fastcf.bench.linear import fitted_model
from fastcf.bench.sparse import binary_problem


class ManhattanBinary:
    """One binary region=True query: Manhattan / Euclidean, per query."""

    params = [[784, 131072]]
    param_names = ["D"]
    timeout = 300

    def setup(self, D):
        ex, X, T = binary_problem(D, 10, seed=D)
        self.man = [
            partial(ex.explain, X[i], T[i], region=True, metric="manhattan") for i in range(10)
        ]
        self.euc = [partial(ex.explain, X[i], T[i], region=True) for i in range(10)]
        self.one = self.man[0]

    def time_manhattan_region(self, D):
        self.one()

    def track_ratio_median(self, D):
        tm, te = alternate([self.man, self.euc], 5)
        return float(np.median(tm / te))

    def track_ratio_max(self, D):
        tm, te = alternate([self.man, self.euc], 5)
        return float(np.max(tm / te))

    track_ratio_median.unit = "Manhattan / Euclidean"
    track_ratio_max.unit = "Manhattan / Euclidean"


class _Cancer:
    def setup(self, *args):
        model, X, _ = fitted_model("cancer")
        self.ex = LinearExplainer(model).fit_mad(X)
        self.x = X[np.flatnonzero(model.predict(X) == 0)[0]]
        self.box = dict(region=True, weights="mad", bounds=(X.min(0), X.max(0)))


class Enumerate(_Cancer):
    """enumerate(k=5) on breast cancer, Manhattan, MAD, box."""

    def time_enumerate_k5(self):
        self.ex.enumerate(self.x, 1, k=5, metric="manhattan", **self.box)


class MaxChanges(_Cancer):
    """max_changes=m on breast cancer, Euclidean, MAD, box (exact branch-and-bound)."""

    params = [[2, 3]]
    param_names = ["m"]

    def time_max_changes(self, m):
        self.ex.explain(self.x, 1, max_changes=m, **self.box)

    def track_nodes(self, m):
        return int(self.ex.explain(self.x, 1, max_changes=m, **self.box).info["nodes"])

    track_nodes.unit = "nodes"
