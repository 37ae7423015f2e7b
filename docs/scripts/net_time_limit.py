"""How far a network query runs past its ``time_limit=`` (issue 54, "Bounded latency").

The benchmark's networks (``asv_bench/benchmarks/bench_net.py``: (32, 32) and (64, 64), 12
features on [0, 1], MAD weights), 10 queries each asked for the other class, per metric and
limit: the median and max of (wall time − limit). The changelog's numbers of 2026-11-30 (load
~10) come from this script, run on the code before and after the change.

Run from the repository root::

    python docs/scripts/net_time_limit.py
"""

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "asv_bench", "benchmarks"))


def main():
    from bench_net import problem

    for name in ("mlp32x32", "mlp64x64"):
        _, ex, Q, T = problem(name, 10)
        ex.explain(Q[0], T[0], weights="mad")  # (kernels loaded)
        for metric in ("manhattan", "euclidean", "l0"):
            for limit in (0.005, 0.05):
                over = []
                for x, t in zip(Q, T, strict=True):
                    start = time.perf_counter()
                    ex.explain(x, t, metric=metric, time_limit=limit, weights="mad")
                    over.append(time.perf_counter() - start - limit)
                print(
                    f"{name} {metric} limit {limit}: overrun median "
                    f"{1e3 * np.median(over):.1f} ms, max {1e3 * max(over):.1f} ms"
                )


if __name__ == "__main__":
    main()
