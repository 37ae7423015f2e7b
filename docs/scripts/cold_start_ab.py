"""First call on an empty kernel cache: this checkout against another one, runs alternated.

Each run is a fresh process with a new, empty ``NUMBA_CACHE_DIR`` and ``PYTHONPATH`` pointing at
one of the two checkouts (so both run in this environment, with the same Numba). The two
checkouts alternate run by run, so that a change in the machine's load falls on both. The time
is the CPU time of the process: the import of fastcf and the first ``explain`` (binary and
softmax rows: an explainer from arrays, D = 30, 5 classes for softmax); for LVQ only the
``explain`` (the GLVQ fit of the setup compiles the cost kernels and is not counted). Medians
over the repetitions, and every run's time.

Run from the repository root, with the other checkout made by ``git worktree add``::

    git worktree add /tmp/before <commit>
    python docs/scripts/cold_start_ab.py /tmp/before --reps 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import sys
import time

c0 = time.process_time()
import numpy as np

import fastcf
from fastcf import LinearExplainer

kind, form = sys.argv[1], eval("dict(" + sys.argv[2] + ")")
rng = np.random.default_rng(0)
if kind == "bin":
    w = rng.normal(size=(1, 30))
    ex = LinearExplainer.from_arrays(w, np.array([0.1]))
    x = rng.normal(size=30)
    k = int(w[0] @ x + 0.1 < 0)
    if form.pop("box", False):
        form["bounds"] = (x - 5, x + 5)
    call = lambda: ex.explain(x, k, **form)
elif kind == "sm":  # a softmax model with 5 classes
    A = rng.normal(size=(5, 30))
    ex = LinearExplainer.from_arrays(A, rng.normal(size=5))
    x = rng.normal(size=30)
    k = (int(np.argmax(A @ x)) + 1) % 5
    call = lambda: ex.explain(x, k, **form)
else:  # compile_times.py's LVQ scenario (its folder is argv[3])
    sys.path.insert(0, sys.argv[3])
    from compile_times import _setup_lvq

    call = _setup_lvq()
c1 = time.process_time()
call()
c2 = time.process_time()
print(fastcf.__file__, c2 - c1 + (c1 - c0 if kind != "lvq" else 0.0))
"""

SCENARIOS = [
    ("bin", "lam=0.01"),
    ("bin", "proba=0.8"),
    ("bin", "region=True"),
    ("bin", "region=True,box=True"),
    ("bin", "lam=0.01,box=True"),
    ("bin", "lam=0.01,metric='manhattan'"),
    ("bin", "proba=0.8,metric='manhattan'"),
    ("bin", "region=True,metric='manhattan'"),
    ("sm", "lam=0.01"),
    ("sm", "proba=0.8"),
    ("sm", "region=True"),
    ("lvq", ""),
]


def _run(root, scenario):
    env = dict(os.environ, NUMBA_CACHE_DIR=tempfile.mkdtemp(), PYTHONPATH=root)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, *scenario, os.path.dirname(os.path.abspath(__file__))],
        env=env,
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
        check=False,
    )
    if out.returncode:
        raise RuntimeError(f"{root} {scenario}: {out.stderr[-2000:]}")
    path, cpu = out.stdout.split()[-2:]
    if not path.startswith(root):  # the PYTHONPATH did not win over an installed fastcf
        raise RuntimeError(f"imported {path}, not the checkout {root}")
    return float(cpu)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", help="the other checkout (e.g. a git worktree)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--only", choices=("bin", "sm", "lvq"), help="only the scenarios of one model family"
    )
    args = parser.parse_args(argv)
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    roots = {"before": os.path.abspath(args.before), "after": here}
    scenarios = [sc for sc in SCENARIOS if args.only in (None, sc[0])]
    times = {sc: {"before": [], "after": []} for sc in scenarios}
    for _ in range(args.reps):
        for sc in scenarios:
            for tag, root in roots.items():
                times[sc][tag].append(_run(root, sc))
    print("| first call, empty cache (CPU s) | before | after | runs before | runs after |")
    print("| --- | --- | --- | --- | --- |")
    for sc, t in times.items():
        runs = [", ".join(f"{v:.1f}" for v in t[tag]) for tag in ("before", "after")]
        med = [statistics.median(t[tag]) for tag in ("before", "after")]
        name = f"{sc[0]} {sc[1] or 'explain'}"
        print(f"| {name} | {med[0]:.1f} | {med[1]:.1f} | {runs[0]} | {runs[1]} |")


if __name__ == "__main__":
    main()
