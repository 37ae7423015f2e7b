"""Large softmax queries against the products with A under three settings of OpenBLAS's threads.

fastcf's large query makes its products with A by NumPy's BLAS, as the baseline does (until
2026-11-24 it ran its column chunks on Numba's (OpenMP) threads). After a threaded call OpenBLAS
keeps its threads spinning for a while (its thread timeout), and on a machine with few cores a
parallel region of another pool started then waited for them; this script measured that, and
now shows that the settings no longer matter. It runs the worst-case protocol of
``python -m fastcf bench --only worst`` at (131 072, 16) — ``lam=``, ``region=True`` and
``proba=0.9`` on 50 seeded problems, each query against the two products ``A @ x`` and
``Aᵀ @ y``, with the default threads, each side's calls in a block per query — in a new
interpreter per setting, because OpenBLAS reads its environment when it loads:

* the defaults;
* ``OPENBLAS_THREAD_TIMEOUT=4``: OpenBLAS's threads sleep after 2⁴ cycles instead of spinning;
* ``OPENBLAS_NUM_THREADS=1``: one BLAS thread.

Reported per setting and form: the median, p95 and max over the problems of the per-query
ratio query / products, the products' median time, and a hash of the answers (x and their
probabilities), which tells whether the setting changed any bit. The settings run in turn, once
each (``--reps`` repeats the round).

Run from the repository root::

    python docs/scripts/blas_threads.py --reps 2
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys

SETTINGS = {
    "default": {},
    "OPENBLAS_THREAD_TIMEOUT=4": {"OPENBLAS_THREAD_TIMEOUT": "4"},
    "OPENBLAS_NUM_THREADS=1": {"OPENBLAS_NUM_THREADS": "1"},
}


def child(n: int, D: int, K: int) -> dict:
    """Run the protocol in this process; return the ratios and the answers' hash."""
    from functools import partial

    import numpy as np

    import fastcf
    from fastcf.bench.common import alternate, summary
    from fastcf.bench.linear import _softmax_model, problems

    A, b = _softmax_model(D, K)
    ex = fastcf.LinearExplainer.from_arrays(A, b)
    X, T, L = problems(A, b, n)
    y = np.ones(K)

    def base(x):
        return A @ x, A.T @ y

    forms = {
        "lam": [partial(ex.explain, X[i], T[i], lam=L[i]) for i in range(n)],
        "region": [partial(ex.explain, X[i], T[i], region=True) for i in range(n)],
        "proba": [partial(ex.explain, X[i], T[i], proba=0.9) for i in range(n)],
    }
    fn_lists = [*forms.values(), [partial(base, X[i]) for i in range(n)]]
    times = alternate(fn_lists, 10, block=True)
    tb = times[-1]
    h = hashlib.sha256()
    for fns in forms.values():
        for f in fns:
            r = f()
            h.update(r.x.tobytes())
            h.update(np.asarray(r.proba).tobytes())
    out = {"products_median_us": float(np.median(tb)) * 1e6, "hash": h.hexdigest()[:16]}
    for name, tf in zip(forms, times[:-1], strict=True):
        s = summary(tf / tb)
        out[name] = {"median": s["median"], "p95": s["p95"], "max": s["max"]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--shape", type=int, nargs=2, default=(131072, 16), metavar=("D", "K"))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    D, K = args.shape
    if args.child:
        print(json.dumps(child(args.n, D, K)))
        return
    print(f"# (D, K) = ({D}, {K}), {args.n} problems; per-query ratio query / products\n")
    print("| setting | products (µs) | lam= median · p95 · max | region=True | proba=0.9 | hash |")
    print("|---|---|---|---|---|---|")
    for _ in range(args.reps):
        for label, extra in SETTINGS.items():
            env = dict(os.environ, FASTCF_TIERED="0", **extra)
            cmd = [
                sys.executable,
                __file__,
                "--child",
                "--n",
                str(args.n),
                "--shape",
                str(D),
                str(K),
            ]
            res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            r = json.loads(res.stdout.strip().splitlines()[-1])
            cells = [
                " · ".join(f"{r[f][s]:.2f}" for s in ("median", "p95", "max"))
                for f in ("lam", "region", "proba")
            ]
            print(f"| {label} | {r['products_median_us']:.0f} | " + " | ".join(cells), end="")
            print(f" | {r['hash']} |", flush=True)


if __name__ == "__main__":
    main()
