"""Timing helpers shared by the benchmark rows.

A row reports a **distribution over the protocol's queries**, not one favourable query: each query
(a source, a target, a λ; or a row of a data set) is timed by the median of its repeated calls,
and the row gives the median (p50), the 95th and the 99th percentiles of those per-query times
(the tail a latency bound is about; with fewer than 100 queries p99 interpolates between the
two slowest). Where the
baseline is timed on the same queries (:func:`paired`: the two are called alternately, query by
query, in the same process), the row also gives the median, p95 and max of the per-query ratios
fastcf / baseline: the machine is shared and noisy, so absolute times are context only and a
ratio is only compared within one query.

Examples
--------
>>> from fastcf.bench.common import paired, row, summary
>>> s = summary([1.0, 2.0, 3.0, 4.0])
>>> s["median"], s["p50"], s["max"], s["n"]
(2.5, 2.5, 4.0, 4)
>>> round(s["p99"], 2)
3.97
>>> fast, base = paired([lambda: None] * 3, [lambda: sum(range(100))] * 3, repeat=3)
>>> r = row("demo", fast, base, "sum")
>>> r["n_queries"], r["fastcf_s"] == r["median"], sorted(k for k in r if k.startswith("over"))
(3, True, ['over_baseline_max', 'over_baseline_median', 'over_baseline_p95'])
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import numpy as np

__all__ = ["timeit", "per_query", "alternate", "paired", "one_thread", "summary", "row"]


def timeit(fn, repeat, min_time=0.0):
    """Call ``fn`` ``repeat`` times (at least ``min_time`` seconds in all, 1000 calls at most).

    One query, repeated: a row built from it has ``n_queries == 1`` (use :func:`per_query` or
    :func:`paired` for a distribution over queries).

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


def per_query(fns, repeat, min_time=0.0):
    """Time each query: the median of its ``repeat`` calls (after one warm-up call).

    Parameters
    ----------
    fns : sequence of callables
        One callable per query.
    repeat : int
    min_time : float, default=0.0
        Seconds per query at least (more calls for fast queries, 1000 at most).

    Returns
    -------
    ndarray of shape (len(fns),)
        Seconds per call of each query.
    """
    return np.array([timeit(fn, repeat, min_time)[0] for fn in fns])


def alternate(fn_lists, repeat, repeats=None, warm="each", clock=time.perf_counter, block=False):
    """Time several callables per query, alternately, query by query.

    For query ``i``, each list's ``i``-th callable is called once to warm up, then they are
    called in turn (first, second, …, first, …) until each has its number of timed calls, so a
    change of the machine's load hits every side of a per-query ratio alike.

    Parameters
    ----------
    fn_lists : sequence of sequences of callables, all of the same length (the queries)
    repeat : int
        Timed calls per query.
    repeats : sequence of int, optional
        Timed calls per query of each list (``repeat`` for all by default; fewer for slow
        baselines).
    warm : {"each", "first"}, default="each"
        Warm-up call for every query, or only for the first one (slow baselines).
    clock : callable, default=time.perf_counter
        ``time.thread_time`` under :func:`one_thread`: the CPU time of the calling thread, which
        the other processes of a loaded machine do not inflate.
    block : bool, default=False
        Per query, run each callable's calls in a block (a warm-up call, then its timed calls)
        instead of alternating call by call: for code on different thread pools (Numba's OpenMP
        threads, OpenBLAS's), whose idle threads spin after a call and slow the other pool's
        next call when they alternate.

    Returns
    -------
    list of ndarray of shape (n_queries,)
        Per-query medians (seconds per call), one array per list.
    """
    repeats = [repeat] * len(fn_lists) if repeats is None else list(repeats)
    n = len(fn_lists[0])
    if any(len(fns) != n for fns in fn_lists) or len(repeats) != len(fn_lists):
        raise ValueError("every list must hold one callable per query (and one repeat per list)")
    out = [np.empty(n) for _ in fn_lists]
    for i in range(n):
        fns = [fl[i] for fl in fn_lists]
        if warm == "each" or i == 0:
            for f in fns:
                f()
        ts = [[] for _ in fns]
        if block:
            for f, t, r in zip(fns, ts, repeats, strict=True):
                f()
                for _ in range(r):
                    t0 = clock()
                    f()
                    t.append(clock() - t0)
        while any(len(t) < r for t, r in zip(ts, repeats, strict=True)):
            for f, t, r in zip(fns, ts, repeats, strict=True):
                if len(t) < r:
                    t0 = clock()
                    f()
                    t.append(clock() - t0)
        for o, t in zip(out, ts, strict=True):
            o[i] = np.median(t)
    return out


def paired(fast_fns, base_fns, repeat, base_repeat=None, warm="each", block=False):
    """Time fastcf and its baseline on the same queries, alternately (see :func:`alternate`).

    Parameters
    ----------
    fast_fns, base_fns : sequences of callables of the same length
    repeat : int
        Timed calls of each fastcf query.
    base_repeat : int, optional
        Timed calls of each baseline query (``repeat`` by default).
    warm : {"each", "first"}, default="each"
    block : bool, default=False
        Per query, each side's calls in a block (see :func:`alternate`): for baselines whose
        solver leaves threads spinning after a call.

    Returns
    -------
    fast, base : ndarray of shape (n_queries,)
        Per-query medians, in seconds.
    """
    base_repeat = repeat if base_repeat is None else base_repeat
    fast, base = alternate([fast_fns, base_fns], repeat, [repeat, base_repeat], warm, block=block)
    return fast, base


@contextmanager
def one_thread():
    """Run BLAS (threadpoolctl) and Numba's parallel kernels on one thread inside the block.

    With one thread, ``time.thread_time`` measures all the work of a call, and a call is not
    slowed by threads waiting for each other on a loaded machine.
    """
    import numba
    from threadpoolctl import threadpool_limits

    n = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        with threadpool_limits(1):
            yield
    finally:
        numba.set_num_threads(n)


def summary(values):
    """Median (``median`` = ``p50``), 95th and 99th percentiles, min, max and count (a dict).

    Of per-query values; the percentiles NumPy's linear interpolation.
    """
    v = np.asarray(values, dtype=float).ravel()
    med = float(np.median(v))
    return {
        "median": med,
        "p50": med,
        "p95": float(np.percentile(v, 95)),
        "p99": float(np.percentile(v, 99)),
        "min": float(v.min()),
        "max": float(v.max()),
        "n": int(v.size),
    }


def _dist(t):
    """Summarise a timing: a ``(median, min, max)`` tuple (one query) or per-query times."""
    if isinstance(t, tuple):
        med, lo, hi = t
        return {"median": med, "p50": med, "p95": med, "p99": med, "min": lo, "max": hi, "n": 1}
    return summary(t)


def row(name, fast, base=None, baseline="", accuracy="", note=""):
    """Return one benchmark row (a dict): fastcf's timing, the baseline's and their ratios.

    Parameters
    ----------
    name : str
    fast, base : tuple or array_like
        Either per-query times (seconds, from :func:`per_query` or :func:`paired`) or the
        ``(median, min, max)`` of one query's repeated calls (:func:`timeit`).
    baseline, accuracy, note : str

    Returns
    -------
    dict
        ``n_queries``; ``median`` (= ``p50``), ``p95``, ``p99`` (= ``fastcf_s``, ``fastcf_p95``,
        ``fastcf_p99``): the median, 95th and 99th percentiles over the queries of fastcf's
        per-query times (one query: its median of repeated calls for all three),
        ``fastcf_min``/``fastcf_max`` their range (of the repeated calls when there is one
        query); the same ``baseline_*``
        and ``ratio`` = baseline median / fastcf median (the speed-up) when there is a baseline;
        and when the baseline was timed on the same queries, ``over_baseline_median``,
        ``over_baseline_p95`` and ``over_baseline_max``: the distribution of the per-query
        ratios fastcf / baseline (the cost; its p95 and max are the bad tail). With per-query
        times, also ``fastcf_per_query`` and ``baseline_per_query`` (lists, in query order).
    """
    f = _dist(fast)
    out = {
        "name": name,
        "n_queries": f["n"],
        "median": f["median"],
        "p50": f["median"],
        "p95": f["p95"],
        "p99": f["p99"],
        "fastcf_s": f["median"],
        "fastcf_p95": f["p95"],
        "fastcf_p99": f["p99"],
        "fastcf_min": f["min"],
        "fastcf_max": f["max"],
        "baseline": baseline,
        "accuracy": accuracy,
        "note": note,
    }
    if not isinstance(fast, tuple):
        out["fastcf_per_query"] = [float(v) for v in np.ravel(fast)]
    if base is not None:
        b = _dist(base)
        out.update(
            baseline_s=b["median"],
            baseline_p95=b["p95"],
            baseline_p99=b["p99"],
            baseline_min=b["min"],
            baseline_max=b["max"],
            ratio=b["median"] / f["median"],
        )
        if not isinstance(base, tuple):
            out["baseline_per_query"] = [float(v) for v in np.ravel(base)]
        if not isinstance(fast, tuple) and not isinstance(base, tuple) and f["n"] == b["n"]:
            r = summary(np.asarray(fast, dtype=float) / np.asarray(base, dtype=float))
            out.update(
                over_baseline_median=r["median"],
                over_baseline_p95=r["p95"],
                over_baseline_max=r["max"],
            )
    return out
