"""Cold-start cost of fastcf's Numba kernels: compile time per kernel and first call per family.

Every measurement runs in its own subprocess with its own, empty ``NUMBA_CACHE_DIR`` (a cold
start: a fresh install, a new container), then once more in a second subprocess on the cache the
first one filled (a warm-cache cold start). Times are CPU seconds of the measuring process
(``time.process_time()``), not wall time, so that other work on the machine does not inflate them.

The compile time of each kernel is read from Numba's event API (``numba.core.event``, event
``numba:compile``): a listener notes the CPU time at the start and the end of each compilation of
a dispatcher for one signature; a kernel's *own* time is its total minus the compilations it
triggered (its callees, compiled while it is typed). Kernels inlined with ``inline="always"`` are
not compiled on their own: their cost is in their callers.

Run from the repository root::

    python docs/scripts/compile_times.py            # all tables (≈ 2–3 minutes of CPU)
    python docs/scripts/compile_times.py --markdown # the same, as the markdown of
                                                    # docs/tables/compile_times.md
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

# ---------------------------------------------------------------------------------------------
# The scenarios: the common single query of each family, on a fresh explainer.


def _setup_logistic():
    import numpy as np

    from fastcf import LinearExplainer

    rng = np.random.default_rng(0)
    ex = LinearExplainer.from_arrays(rng.normal(size=(1, 30)), np.array([0.1]))
    x = rng.normal(size=30)
    return lambda: ex.explain(x, 1, lam=0.1)


def _softmax(form):
    def setup():
        import numpy as np

        from fastcf import LinearExplainer

        rng = np.random.default_rng(0)
        A, b = rng.normal(size=(10, 784)), rng.normal(size=10)
        ex = LinearExplainer.from_arrays(A, b)
        x = rng.normal(size=784)
        k = int(np.argmin(A @ x + b))  # the least likely class: the target
        if form == "path":
            return lambda: ex.path(x, k)
        return lambda: ex.explain(x, k, **form)

    return setup


def _setup_lvq():
    import warnings

    import numpy as np

    from fastcf import LVQExplainer
    from fastcf.lvq_models import GLVQ

    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0.0, 1.0, (30, 4)), rng.normal(3.0, 1.0, (30, 4))])
    y = np.repeat([0, 1], 30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = GLVQ(random_state=0).fit(X, y)
    ex = LVQExplainer(model)
    return lambda: ex.explain(X[0], 1)


def _setup_svm():
    import numpy as np

    from fastcf import enumerate_svms

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=40) > 0).astype(int)
    return lambda: enumerate_svms(X, y, k=5)


def _setup_forest():
    import numpy as np
    from sklearn.ensemble import RandomForestClassifier

    from fastcf import TreeExplainer

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 8))
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    model = RandomForestClassifier(50, max_depth=5, random_state=0).fit(X, y)
    ex = TreeExplainer(model)
    k = 1 - int(model.predict(X[:1])[0])
    return lambda: ex.explain(X[0], k)


def _setup_tabular():
    import numpy as np
    import pandas as pd
    from sklearn.compose import make_column_transformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    from fastcf import TabularExplainer

    rng = np.random.default_rng(0)
    X = pd.DataFrame({
        "age": rng.integers(18, 80, 300), "income": rng.normal(50, 15, 300).round(1),
        "job": rng.choice(["a", "b", "c"], 300),
    })  # fmt: skip
    y = ((X.income > 50) ^ (X.job == "b")).astype(int)
    pre = make_column_transformer((OneHotEncoder(), ["job"]), remainder="passthrough")
    model = make_pipeline(pre, RandomForestClassifier(50, max_depth=5, random_state=0))
    model.fit(X, y)
    ex = TabularExplainer(model, X)
    row = X.iloc[[0]]
    k = 1 - int(model.predict(row)[0])
    return lambda: ex.explain(row, k)


SCENARIOS = {
    "logistic explain(x, 1, lam=0.1)": _setup_logistic,
    "softmax explain(x, k, lam=0.01)": _softmax({"lam": 0.01}),
    "softmax explain(x, k, region=True)": _softmax({"region": True}),
    "softmax explain(x, k, proba=0.9)": _softmax({"proba": 0.9}),
    "softmax path(x, k)": _softmax("path"),
    "softmax explain(x, k, metric='manhattan', lam=0.01)": _softmax(
        {"metric": "manhattan", "lam": 0.01}
    ),
    "softmax explain(x, k, metric='manhattan', proba=0.9)": _softmax(
        {"metric": "manhattan", "proba": 0.9}
    ),
    "LVQ (GLVQ) explain(x, t)": _setup_lvq,
    "SVM enumerate_svms(X, y, k=5)": _setup_svm,
    "random forest (50 trees) explain(x, t)": _setup_forest,
    "tabular pipeline (forest) explain(row, t)": _setup_tabular,
}
WARMUP = "warmup()"

# ---------------------------------------------------------------------------------------------
# The child: one measurement in this process.


def _child(name):
    t_start = time.process_time()
    w_start = time.perf_counter()
    from numba.core import event

    class Timer(event.Listener):
        """CPU time of each compilation, its own share without the compilations it triggered."""

        def __init__(self):
            self.stack = []
            self.records = []

        def on_start(self, ev):
            py = ev.data["dispatcher"].py_func
            self.stack.append([time.process_time(), 0.0, f"{py.__module__}.{py.__qualname__}"])

        def on_end(self, ev):
            t0, nested, _name = self.stack.pop()
            total = time.process_time() - t0
            if self.stack:
                self.stack[-1][1] += total
            disp = ev.data["dispatcher"]
            py = disp.py_func
            self.records.append(
                {
                    "kernel": f"{py.__module__}.{py.__qualname__}",
                    "sig": str(ev.data["args"]),
                    "own": total - nested,
                    "total": total,
                    "caller": self.stack[-1][2] if self.stack else None,
                }
            )

    timer = Timer()
    event.register("numba:compile", timer)
    import fastcf  # noqa: F401  (the import of the package and its kernels' modules)

    t_import = time.process_time()
    out = {"import": t_import - t_start}
    if name == WARMUP:
        from fastcf._warmup import warmup

        warmup()
        out["call"] = time.process_time() - t_import
        out["signatures"] = _signatures()
    else:
        call = SCENARIOS[name]()
        t_setup = time.process_time()
        out["setup"] = t_setup - t_import
        call()
        out["call"] = time.process_time() - t_setup
    out["wall"] = time.perf_counter() - w_start
    out["records"] = timer.records
    print(json.dumps(out))


def _signatures():
    """The number of specialisations of every dispatcher of fastcf._kernels."""
    import importlib
    import pkgutil

    from numba.core.registry import CPUDispatcher

    import fastcf._kernels as pkg

    found = {}
    names = [m.name for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")]
    for modname in [pkg.__name__, *names]:
        mod = importlib.import_module(modname)
        for attr, obj in vars(mod).items():
            if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == modname:
                found[f"{modname}.{attr}"] = [str(s) for s in obj.signatures]
    return found


# ---------------------------------------------------------------------------------------------
# The parent: cold and warm runs of every scenario, and the tables.


def _run(name, cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    proc = subprocess.run(
        [sys.executable, __file__, "--child", name],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{name}: {proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _short(kernel):
    return kernel.replace("fastcf._kernels.", "")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--markdown", action="store_true", help="print markdown tables")
    parser.add_argument("--top", type=int, default=0, help="rows of the kernel table (0: all)")
    parser.add_argument("--json", help="also write the raw measurements to this file")
    parser.add_argument("--from-json", help="print the tables of measurements saved by --json")
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child)
        return
    if args.from_json:
        with open(args.from_json) as fh:
            _print(json.load(fh), args.markdown, args.top)
        return
    results = {}
    for name in [*SCENARIOS, WARMUP]:
        with tempfile.TemporaryDirectory(prefix="fastcf-nbcache-") as cache:
            cold = _run(name, cache)
            warm = _run(name, cache)
        results[name] = {"cold": cold, "warm": warm}
        print(f"  measured {name}", file=sys.stderr, flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh)
    _print(results, args.markdown, args.top)


def _print(results, markdown, top):
    import platform

    import numba

    def table(header, rows):
        if markdown:
            print("| " + " | ".join(header) + " |")
            print("|" + "|".join(" --- " for _ in header) + "|")
            for r in rows:
                print("| " + " | ".join(str(c) for c in r) + " |")
        else:
            widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
            for r in [header, *rows]:
                print("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)))
        print()

    print(f"Numba {numba.__version__}, Python {platform.python_version()}; CPU seconds.\n")
    rows = []
    for name in SCENARIOS:
        cold, warm = results[name]["cold"], results[name]["warm"]
        ncomp = len(cold["records"])
        comp = sum(r["own"] for r in cold["records"])
        rows.append(
            [
                name,
                f"{cold['import']:.2f}",
                f"{cold['call']:.2f}",
                f"{comp:.2f}",
                ncomp,
                f"{warm['import'] + warm['setup'] + warm['call']:.2f}",
                f"{warm['call']:.3f}",
            ]
        )
    print("First call per family. Empty cache: the import, then the first call; compiling and")
    print("compilations count the whole process (for LVQ also the GLVQ fit of the setup). Warm")
    print("cache: a new process on the filled cache, import + explainer + first call.\n")
    table(
        [
            "query",
            "import (cold)",
            "first call (cold)",
            "of which compiling",
            "compilations",
            "warm cold start",
            "warm first call",
        ],
        rows,
    )
    w = results[WARMUP]
    print(
        f"`warmup()` on an empty cache: {w['cold']['call']:.1f} s of CPU, "
        f"{len(w['cold']['records'])} compilations; on the filled cache "
        f"{w['warm']['call']:.2f} s.\n"
    )
    # per kernel: own compile time summed over its specialisations (warm-up on an empty cache)
    per = {}
    for r in w["cold"]["records"]:
        e = per.setdefault(r["kernel"], [0.0, 0])
        e[0] += r["own"]
        e[1] += 1
    sigs = w["cold"]["signatures"]
    krows = sorted(per.items(), key=lambda kv: -kv[1][0])
    if top:
        krows = krows[:top]
    print("Compile time per kernel during `warmup()` (own time, without its callees; summed over")
    print("its specialisations).\n")
    table(
        ["kernel", "compile (s)", "compilations"],
        [[_short(k), f"{t:.2f}", n] for k, (t, n) in krows],
    )
    multi = sorted((k, v) for k, v in sigs.items() if len(v) > 1)
    print("Dispatchers with more than one specialisation after `warmup()`.\n")
    table(
        ["kernel", "signatures", "differing in"],
        [[_short(k), len(v), "<br>".join(v) if markdown else " | ".join(v)] for k, v in multi],
    )


if __name__ == "__main__":
    main()
