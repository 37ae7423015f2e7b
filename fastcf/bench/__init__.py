"""``python -m fastcf bench``: fastcf and its baselines on the same problems, in one process.

Benchmark code lives here and in ``asv_bench/``, never in the API modules: :mod:`.common` holds
the timing helpers, :mod:`.linear`, :mod:`.lvq` and :mod:`.svm` the rows of each family (each
row times fastcf and its baseline on the same problem in the same run and reports the accuracy of
the answers: objective gap to the reference optimum, gradient norm, validity).
"""

from __future__ import annotations

import json
import platform
import time

from .common import row, timeit

__all__ = ["run", "row", "timeit"]


def _format(rows, title):
    out = [
        f"\n## {title}\n",
        "| benchmark | fastcf median [min–max] | baseline median | speed-up (baseline/fastcf) "
        "| accuracy / notes |",
        "|---|---|---|---|---|",
    ]

    def t(s):
        if s is None:
            return "–"
        return f"{s * 1e3:.3g} ms" if s >= 1e-3 else f"{s * 1e6:.3g} µs"

    for r in rows:
        fast = (
            f"{t(r['fastcf_s'])} [{t(r.get('fastcf_min'))}–{t(r.get('fastcf_max'))}]"
            if r.get("fastcf_min") is not None
            else t(r["fastcf_s"])
        )
        base = t(r.get("baseline_s"))
        ratio = r.get("ratio")
        ratio = "–" if ratio is None else f"{ratio:.3g}×"
        acc = r.get("accuracy") or r.get("accuracy_gap") or ""
        if isinstance(acc, float):
            acc = f"gap {acc:.1e}"
        note = " ".join(str(v) for v in (acc, r.get("note", "")) if v)
        out.append(f"| {r['name']} | {fast} | {base} | {ratio} | {note} |")
    return "\n".join(out)


def run(quick=False, only=None, json_path=None, markdown_path=None):
    """Run the benchmarks, print the tables; optionally write JSON and Markdown.

    Parameters
    ----------
    quick : bool
    only : {"linear", "lvq", "svm"} or None
    json_path, markdown_path : str or None

    Returns
    -------
    int
        Exit status (0).
    """
    t0 = time.perf_counter()
    sections = {}
    if only in (None, "linear"):
        from .linear import linear_rows

        sections["Logistic and softmax (paper 000)"] = linear_rows(quick)
    if only in (None, "lvq"):
        from .lvq import lvq_rows

        sections["LVQ counterfactuals (paper 001)"] = lvq_rows(quick=quick)
    if only in (None, "svm"):
        from .svm import svm_rows

        sections["SVM enumeration (EnumSV, paper 003)"] = svm_rows(quick=quick)
    header = (
        f"# fastcf bench{' --quick' if quick else ''}\n\nmachine: {platform.machine()}, "
        f"{platform.python_implementation()} {platform.python_version()}; "
        f"total {time.perf_counter() - t0:.0f} s. Medians of repeated calls, measured "
        "side by side in one process; speed-up = baseline median / fastcf median."
    )
    text = header + "".join(_format(rows, title) for title, rows in sections.items())
    print(text)
    if json_path:
        with open(json_path, "w") as fh:
            json.dump({"quick": quick, "sections": sections}, fh, indent=1, default=float)
    if markdown_path:
        with open(markdown_path, "w") as fh:
            fh.write(text + "\n")
    return 0
