"""Throughput of fastcf.distributed.explain on a local Dask cluster, against the single process.

Workload (issue 8): 1,000,000 rows, D = 64 features, K = 10 classes; a softmax
``LinearExplainer.from_arrays(A, b)`` with a seeded random model (A ~ N(0, 1/D), b ~ N(0, 1), so
the logits are O(1)), rows x ~ N(0, I), one random target class per row, problem (2) with
lam=0.01 (the reduced K-space Newton).

In ONE run the script measures
  * the single-process batch ``ex.explain(X, targets, lam=0.01)`` (the baseline), with Numba's
    default thread count (the number of cores) and with 1 thread,
  * ``fastcf.distributed.explain`` on a ``LocalCluster`` (processes, 1 thread per worker) with 1
    and with 2 workers, with Numba's default thread count in the workers and with
    NUMBA_NUM_THREADS=1 (one worker per core, no oversubscription),
  * the scheduler overhead: an empty ``map_blocks`` over the same partitioning.
All clusters are started first, then the configurations are timed in turn, round after round, so
that the load of this shared machine, which drifts during a run, hits all of them alike.

Timed: building the graph, scattering the explainer, solving every block and holding the results
(x, success, status, distance, nit, proba) in the workers' memory (``persist`` + ``wait``). Not
timed: moving the input rows into the cluster (done once, before) and fetching the 600 MB of
results back; they are fetched once per configuration, after the timings, and compared with the
baseline bit for bit.

``--trees`` (issue 54): the same measure for a ``TreeExplainer`` on a random forest of 100 trees
of depth 5 fitted on the Adult-sized table of ``asv_bench/benchmarks/bench_trees.py``
(``problem("rf100x5")``), ``--tree-rows`` rows (default 300) each asked for the other class,
``weights="mad"``, Manhattan, in ``--tree-partitions`` partitions (default 4). The baselines are
the single-process batch on the default batch threads and with ``n_jobs=1``. Each timed Dask run
ships the explainer anew (as a caller's ``explain`` does); the script also reports the first run
on each cluster (its workers cold: kernels loaded from Numba's cache, the tree program built).

Usage: PYTHONPATH=. python docs/scripts/dask_throughput.py [--repeats 3] [--trees]
       (writes docs/tables/dask_throughput.md, with --trees docs/tables/dask_throughput_trees.md)
"""

import argparse
import contextlib
import os
import pathlib
import pickle
import platform
import statistics
import sys
import time

import dask
import dask.array as da
import distributed
import numba
import numpy as np

import fastcf
from fastcf import LinearExplainer
from fastcf import distributed as fdist

N, D, K = 1_000_000, 64, 10
LAM = 0.01
ROWS_PER_PARTITION = 50_000
ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "tables" / "dask_throughput.md"
OUT_TREES = ROOT / "docs" / "tables" / "dask_throughput_trees.md"
FIELDS = ("x", "success", "status", "distance", "nit", "proba")
#: the options of every explain call (the tree workload sets its own, main)
OPTIONS = {"lam": LAM}


def make_problem(seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(K, D)) / np.sqrt(D)
    b = rng.normal(size=K)
    X = rng.normal(size=(N, D))
    targets = rng.integers(0, K, N)
    return LinearExplainer.from_arrays(A, b), X, targets


def make_tree_problem(rows):
    """Return (explainer, queries, targets) of the forest of issue 54 (``bench_trees.problem``)."""
    sys.path.insert(0, str(ROOT / "asv_bench" / "benchmarks"))
    from bench_trees import problem

    _, ex, Q, T = problem("rf100x5", rows)
    return ex, Q, T


def _empty_block(block):
    return np.empty((block.shape[0], 0))


def _warm(explainer_bytes, X, targets, options):
    # load the compiled kernels (Numba's on-disk cache) in a worker before timing
    ex = pickle.loads(explainer_bytes)
    ex.explain(X, targets, **options)
    ex.explain(X[:1], targets[:1], **options)
    return fastcf.__file__


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _scattered_rows(client, A, rows):
    """A dask array of A's row blocks, already held by the workers (not embedded in the graph)."""
    parts = [A[i : i + rows] for i in range(0, A.shape[0], rows)]
    futures = client.scatter(parts)
    blocks = [
        da.from_delayed(f, shape=p.shape, dtype=p.dtype)
        for f, p in zip(futures, parts, strict=True)
    ]
    return client.persist(da.concatenate(blocks, axis=0))


class ClusterRun:
    """One LocalCluster configuration, with the rows and targets already in its workers."""

    def __init__(self, stack, ex, X, targets, n_workers, numba_threads, rows, cold=False):
        # the workers are spawned processes: they read NUMBA_NUM_THREADS from the environment
        # they inherit (this process's Numba is already initialised and keeps its own count)
        saved = os.environ.get("NUMBA_NUM_THREADS")
        if numba_threads is not None:
            os.environ["NUMBA_NUM_THREADS"] = str(numba_threads)
        try:
            cluster = stack.enter_context(
                distributed.LocalCluster(
                    n_workers=n_workers,
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address=None,
                )
            )
        finally:
            if saved is None:
                os.environ.pop("NUMBA_NUM_THREADS", None)
            else:
                os.environ["NUMBA_NUM_THREADS"] = saved
        # several clients in one process: none is the default, each is passed explicitly
        self.client = stack.enter_context(distributed.Client(cluster, set_as_default=False))
        self.ex = ex
        self.dX = _scattered_rows(self.client, X, rows)
        self.dt = _scattered_rows(self.client, targets, rows)
        self._wait([self.dX, self.dt])
        self.partitions = self.dX.numblocks[0]
        # cold: the first run on the new workers (imports, kernels loaded, programs built)
        self.t_cold = timed(self.explain) if cold else None
        where = self.client.run(_warm, pickle.dumps(ex), X[:64], targets[:64], OPTIONS)
        assert set(where.values()) == {fastcf.__file__}, where
        threads = self.client.run(lambda: __import__("numba").get_num_threads())
        self.label = (
            f"Dask, {n_workers} worker{'s' if n_workers > 1 else ''} x 1 thread "
            f"(Numba threads per worker: {sorted(set(threads.values()))[0]})"
        )
        self.t_explain, self.t_empty = [], []
        self.empty_map()  # warm the scheduler path once

    def _wait(self, collections):
        with self.client.as_current():  # distributed.wait looks for the current client
            distributed.wait(distributed.futures_of(collections))

    def empty_map(self):
        e = self.dX.map_blocks(_empty_block, chunks=(self.dX.chunks[0], (0,)), dtype=float)
        self._wait(self.client.persist(e))

    def _fields(self):
        res = fdist.explain(self.ex, self.dX, self.dt, client=self.client, **OPTIONS)
        return [getattr(res, f) for f in FIELDS]

    def explain(self):
        self._wait(self.client.persist(self._fields()))

    def time_once(self):
        self.t_empty.append(timed(self.empty_map))
        self.t_explain.append(timed(self.explain))

    def bitwise_equal(self, ref):
        got = self.client.gather(self.client.compute(self._fields()))
        return all(np.array_equal(g, getattr(ref, f)) for g, f in zip(got, FIELDS, strict=True))


def main():
    global N, OPTIONS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--rows", type=int, default=1_000_000, help="rows (smaller: a smoke test only)"
    )
    parser.add_argument("--trees", action="store_true", help="the forest of issue 54 instead")
    parser.add_argument("--tree-rows", type=int, default=300)
    parser.add_argument("--tree-partitions", type=int, default=4)
    args = parser.parse_args()
    load0 = os.getloadavg()
    if args.trees:
        OPTIONS = {"weights": "mad"}
        ex, X, targets = make_tree_problem(args.tree_rows)
        N = X.shape[0]
        rows_per_partition = -(-N // args.tree_partitions)
    else:
        N = args.rows
        ex, X, targets = make_problem()
        rows_per_partition = ROWS_PER_PARTITION
    ex.explain(X[:64], targets[:64], **OPTIONS)  # compiled / cache loaded before timing
    ex.explain(X[:1], targets[:1], **OPTIONS)
    default_threads = numba.get_num_threads()
    refs = []

    def baseline(threads):
        if args.trees:  # the batch threads of this call (fastcf._threads)
            refs.append(ex.explain(X, targets, n_jobs=threads, **OPTIONS))
            return
        numba.set_num_threads(threads)
        try:
            refs.append(ex.explain(X, targets, **OPTIONS))
        finally:
            numba.set_num_threads(default_threads)

    base = {default_threads: [], 1: []}
    with contextlib.ExitStack() as stack:
        runs = [
            ClusterRun(stack, ex, X, targets, n, threads, rows_per_partition, cold=args.trees)
            for n, threads in ((1, None), (2, None), (1, 1), (2, 1))
        ]
        for r in range(args.repeats):
            for threads in base:
                base[threads].append(timed(lambda t=threads: baseline(t)))
                if len(refs) > 1:
                    refs.pop()  # keep the first batch only (memory)
            for run in runs:
                run.time_once()
            print(f"round {r + 1}: baseline {base}", [run.t_explain for run in runs], flush=True)
        ref = refs[0]
        same = [run.bitwise_equal(ref) for run in runs]
    load1 = os.getloadavg()
    threads_word = "batch threads, n_jobs" if args.trees else "Numba threads"
    rows = [
        {
            "label": f"single process, batch ex.explain ({threads_word}: {t})",
            "t": base[t],
            "overhead": None,
            "bitwise": None,
            "cold": None,
        }
        for t in base
    ] + [
        {
            "label": run.label,
            "t": run.t_explain,
            "overhead": statistics.median(run.t_empty) / run.partitions,
            "empty": statistics.median(run.t_empty),
            "bitwise": ok,
            "partitions": run.partitions,
            "cold": run.t_cold,
        }
        for run, ok in zip(runs, same, strict=True)
    ]
    base_t = statistics.median(base[default_threads])
    parts = -(-N // rows_per_partition)
    if args.trees:
        workload = (
            f"{N:,} rows of the Adult-sized table (D = {X.shape[1]}), a TreeExplainer on a "
            "RandomForestClassifier of 100 trees of depth 5 (bench_trees.problem('rf100x5')), "
            "each row asked for the other class, weights='mad', Manhattan"
        )
    else:
        workload = (
            f"{N:,} rows, D = {D}, K = {K}; softmax LinearExplainer.from_arrays (seeded random "
            f"model), lam = {LAM}, one random target per row"
        )
    lines = [
        "# fastcf.distributed throughput (docs/scripts/dask_throughput.py"
        + (" --trees)" if args.trees else ")"),
        "",
        f"{workload}; {rows_per_partition:,} rows per partition ({parts} partitions). Median of "
        f"{args.repeats} runs (all runs in brackets). Dask: graph + scatter + solve, results "
        "persisted in the workers' memory.",
        "",
        f"Machine: shared {os.cpu_count()}-core box (other jobs running: load average "
        f"{load0[0]:.1f} at the start, {load1[0]:.1f} at the end), {platform.python_version()}, "
        f"NumPy {np.__version__}, Numba {numba.__version__}, Dask {dask.__version__}, "
        f"distributed {distributed.__version__}.",
        "",
        "| configuration | time (s) | rows/s | vs single process | scheduler overhead per "
        "partition (empty map) | equal to the batch bit for bit |"
        + (" first run, workers cold (s) |" if args.trees else ""),
        "|---|---|---|---|---|---|" + ("---|" if args.trees else ""),
    ]
    for r in rows:
        t = statistics.median(r["t"])
        runs = ", ".join(f"{x:.2f}" for x in r["t"])
        over = (
            "–"
            if r["overhead"] is None
            else f"{1e3 * r['overhead']:.1f} ms ({r['empty']:.2f} s / {r['partitions']})"
        )
        same = "–" if r["bitwise"] is None else ("yes" if r["bitwise"] else "NO")
        cold = ""
        if args.trees:
            cold = " – |" if r["cold"] is None else f" {r['cold']:.2f} |"
        lines.append(
            f"| {r['label']} | {t:.2f} [{runs}] | {N / t:,.0f} | {base_t / t:.2f}x "
            f"| {over} | {same} |{cold}"
        )
    text = "\n".join(lines) + "\n"
    if args.trees and args.tree_rows >= 200 or not args.trees and N == 1_000_000:
        out = OUT_TREES if args.trees else OUT  # the issues' workloads; smoke tests only print
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
