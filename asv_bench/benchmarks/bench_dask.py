"""fastcf.distributed.explain vs the single-process batch, in one process (no cluster).

The ratio ``time_dask_sync`` / ``time_batch`` is the cost of the Dask layer itself (graph,
per-block calls, picking the fields) on the synchronous scheduler; ``time_dask_threads`` runs the
blocks on Dask's thread pool. Cluster throughput (1 and 2 worker processes, 1M rows) is measured by
``docs/scripts/dask_throughput.py``, which starts its own LocalClusters. Skipped without Dask.
"""

import numpy as np


class DaskExplain:
    params = ([10, 50],)
    param_names = ["partitions"]
    N, D, K = 100_000, 64, 10

    def setup(self, partitions):
        try:
            import dask.array as da
        except ImportError:
            raise NotImplementedError("dask is not installed") from None
        from fastcf import LinearExplainer
        from fastcf import distributed as fdist

        rng = np.random.default_rng(0)
        self.ex = LinearExplainer.from_arrays(
            rng.normal(size=(self.K, self.D)) / np.sqrt(self.D), rng.normal(size=self.K)
        )
        self.X = rng.normal(size=(self.N, self.D))
        self.t = rng.integers(0, self.K, self.N)
        rows = self.N // partitions
        self.dX = da.from_array(self.X, chunks=(rows, self.D))
        self.dt = da.from_array(self.t, chunks=(rows,))
        self.fdist = fdist
        self.ex.explain(self.X[:64], self.t[:64], lam=0.01)  # kernels loaded before timing
        self.ex.explain(self.X[:1], self.t[:1], lam=0.01)

    def time_batch(self, partitions):
        self.ex.explain(self.X, self.t, lam=0.01)

    def time_dask_sync(self, partitions):
        res = self.fdist.explain(self.ex, self.dX, self.dt, client=False, lam=0.01)
        res.compute(scheduler="sync")

    def time_dask_threads(self, partitions):
        res = self.fdist.explain(self.ex, self.dX, self.dt, client=False, lam=0.01)
        res.compute(scheduler="threads")
