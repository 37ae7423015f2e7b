"""First call on an empty kernel cache, per family: tiered execution against compiling first.

Each run is a new interpreter with a new, empty ``NUMBA_CACHE_DIR`` that imports fastcf, builds
an explainer (LVQ: fits a GLVQ on 60 points) and answers the family's first queries (the child
script of asv's ``bench_reliability.FirstCall``): with the opt-in tiered execution
(``FASTCF_TIERED=1``: the kernels run as Python while a background thread compiles them) and
with ``FASTCF_TIERED=0`` (the default, Numba's behaviour: each kernel compiles before its first
call). The
two alternate run by run, so that a change in the machine's load falls on both. Reported: the
wall time inside the child from before ``import fastcf`` to the last answer, medians over the
repetitions and every run.

Run from the repository root::

    python docs/scripts/first_call.py --reps 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "asv_bench"))
from benchmarks.bench_reliability import first_call_seconds  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    families = ["logistic", "softmax", "lvq", "svm", "trees"]
    parser.add_argument("--families", nargs="*", default=families)
    args = parser.parse_args()
    print("| first queries, empty cache (wall s, import included) | compile first | tiered |")
    print("| --- | --- | --- |")
    for family in args.families:
        runs = {"0": [], "1": []}
        for _ in range(args.reps):
            for tiered in ("0", "1"):
                runs[tiered].append(first_call_seconds(family, tiered))
        cells = [
            f"{statistics.median(runs[t]):.2f} ({', '.join(f'{v:.2f}' for v in runs[t])})"
            for t in ("0", "1")
        ]
        print(f"| {family} | {cells[0]} | {cells[1]} |", flush=True)


if __name__ == "__main__":
    main()
