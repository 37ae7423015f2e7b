"""Timing helpers shared by the benchmark rows and the asv suites.

Every number is a median over repeated calls (with the min–max range), and every speed claim is a
ratio against a baseline timed in the same run, on the same problem: the machine is shared and
noisy, so absolute times are context only.
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["timeit", "row"]


def timeit(fn, repeat, min_time=0.0):
    """Call ``fn`` ``repeat`` times (at least ``min_time`` seconds in all, 1000 calls at most).

    Returns
    -------
    median, min, max : float
        Seconds per call.
    """
    fn()  # warm-up: compiled kernels loaded, caches filled
    ts = []
    t_total = 0.0
    while len(ts) < repeat or (t_total < min_time and len(ts) < 1000):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        ts.append(dt)
        t_total += dt
    ts = np.asarray(ts)
    return float(np.median(ts)), float(ts.min()), float(ts.max())


def row(name, fast, base=None, baseline="", accuracy="", note=""):
    """Return one benchmark row: fastcf's timing, the baseline's and their ratio (a dict)."""
    med, lo, hi = fast
    row = {
        "name": name,
        "fastcf_s": med,
        "fastcf_min": lo,
        "fastcf_max": hi,
        "baseline": baseline,
        "accuracy": accuracy,
        "note": note,
    }
    if base is not None:
        row.update(
            baseline_s=base[0], baseline_min=base[1], baseline_max=base[2], ratio=base[0] / med
        )
    return row
