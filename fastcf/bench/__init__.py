"""``python -m fastcf bench``: fastcf and its baselines on the same problems, in one process.

Benchmark code lives here and in ``asv_bench/``, never in the API modules: :mod:`.common` holds
the timing helpers, :mod:`.linear`, :mod:`.lvq`, :mod:`.svm` and :mod:`.trees` the rows of each
family (each
row times fastcf and its baseline on the same problems in the same run and reports the accuracy
of the answers: objective gap to the reference optimum, gradient norm, validity). Every row is a
distribution over its queries: the p50 (median), p95 and p99 of the per-query times, and the
p50, p95 and max of the per-query ratios to the baseline where the baseline is timed on the
same queries.

``python -m fastcf bench --only worst`` (or ``python -m fastcf.bench --only worst``) runs the
worst-case protocol alone: :func:`fastcf.bench.linear.worst_rows`.
"""

from __future__ import annotations

import json
import os
import platform
import time

from .common import row, timeit

__all__ = ["run", "row", "timeit", "ONLY"]


#: The choices of ``--only``: one family, or the worst-case protocol alone.
ONLY = ("linear", "lvq", "svm", "trees", "worst", "sparse")

_WORST = "Worst case over the problems: every query form vs the products with A (paper 000)"


def _t(s):
    if s is None:
        return "–"
    if s >= 1.0:
        return f"{s:.3g} s"
    return f"{s * 1e3:.3g} ms" if s >= 1e-3 else f"{s * 1e6:.3g} µs"


def _format(rows, title):
    out = [
        f"\n\n## {title}\n",
        "| benchmark | n | fastcf p50 · p95 · p99 | baseline p50 · p95 · p99 "
        "| speed-up (baseline/fastcf) | fastcf/baseline per query: p50 · p95 · max "
        "| accuracy / notes |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        n = r.get("n_queries", 1)
        fast = f"{_t(r['median'])} · {_t(r['p95'])} · {_t(r.get('p99', r['p95']))}"
        base = (
            "–"
            if r.get("baseline_s") is None
            else f"{_t(r['baseline_s'])} · {_t(r['baseline_p95'])} · "
            f"{_t(r.get('baseline_p99', r['baseline_p95']))}"
        )
        # a baseline stopped at a time limit on some query took longer than its time: the
        # speed-up is then a lower bound and the per-query ratios fastcf / baseline upper bounds
        ge, le = ("≥ ", "≤ ") if r.get("baseline_stopped") else ("", "")
        ratio = r.get("ratio")
        ratio = "–" if ratio is None else f"{ge}{ratio:.3g}×"
        per = (
            "–"
            if r.get("over_baseline_median") is None
            else f"{le}{r['over_baseline_median']:.3g} · {r['over_baseline_p95']:.3g} · "
            f"{r['over_baseline_max']:.3g}"
        )
        acc = r.get("accuracy") or r.get("accuracy_gap") or ""
        if isinstance(acc, float):
            acc = f"gap {acc:.1e}"
        note = "; ".join(str(v) for v in (acc, r.get("note", "")) if v)
        out.append(f"| {r['name']} | {n} | {fast} | {base} | {ratio} | {per} | {note} |")
    return "\n".join(out)


def _load():
    try:
        return os.getloadavg()[0]
    except OSError:  # pragma: no cover - not on every platform
        return float("nan")


def run(quick=False, only=None, json_path=None, markdown_path=None):
    """Run the benchmarks, print the tables; optionally write JSON and Markdown.

    Every row has ``n_queries``, ``median`` (= ``p50``), ``p95`` and ``p99`` (seconds per
    query over the queries; see :func:`fastcf.bench.common.row`).

    Parameters
    ----------
    quick : bool
    only : {"linear", "lvq", "svm", "trees", "worst", "sparse"} or None
        One family (``"linear"`` includes the worst-case protocol and the few-change rows), or
        the worst-case protocol alone, or the few-change rows (Manhattan, ``max_changes``,
        ``enumerate``) alone.
    json_path, markdown_path : str or None

    Returns
    -------
    int
        Exit status (0).
    """
    if only is not None and only not in ONLY:
        raise ValueError(f"only must be one of {list(ONLY)} or None; got {only!r}")
    from .._kernels._tier import compile_first

    # compiled code only: a first call compiles before it runs, never runs as Python meanwhile
    with compile_first():
        return _run(quick, only, json_path, markdown_path)


def _run(quick, only, json_path, markdown_path):
    t0 = time.perf_counter()
    load0 = _load()
    sections = {}
    if only in (None, "linear"):
        from .linear import linear_rows

        sections["Logistic and softmax (paper 000)"] = linear_rows(quick)
    if only in (None, "linear", "worst"):
        from .linear import worst_rows

        sections[_WORST] = worst_rows(quick)
    if only in (None, "linear", "sparse"):
        from .sparse import sparse_rows

        sections["Few changes: Manhattan, max_changes, enumerate"] = sparse_rows(quick)
    if only in (None, "lvq"):
        from .lvq import lvq_rows

        sections["LVQ counterfactuals (paper 001)"] = lvq_rows(quick=quick)
    if only in (None, "svm"):
        from .svm import svm_rows

        sections["SVM enumeration (EnumSV, paper 003)"] = svm_rows(quick=quick)
    if only in (None, "trees"):
        from .trees import tree_rows

        sections["Trees and tree ensembles (TreeExplainer)"] = tree_rows(quick=quick)
    header = (
        f"# fastcf bench{' --quick' if quick else ''}{f' --only {only}' if only else ''}\n\n"
        f"machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"{platform.python_implementation()} {platform.python_version()}; load average "
        f"{load0:.1f} at the start, {_load():.1f} at the end; total "
        f"{time.perf_counter() - t0:.0f} s.\n\n"
        "Each row is a distribution over its n queries (sources × targets × λ, or a data set's "
        "rows): a query's time is the median of its repeated calls, and the row gives the "
        "median (p50), the 95th (p95) and the 99th percentile (p99) of those per-query times "
        "(with fewer than 100 queries, p99 lies between the two slowest). fastcf and the "
        "baseline are measured side by side in one process; speed-up = baseline median / "
        "fastcf median; where the baseline is timed on the same queries (alternately), the "
        "per-query ratio fastcf / baseline is given by its p50, p95 and max."
    )
    text = header + "".join(_format(rows, title) for title, rows in sections.items())
    print(text)
    if json_path:
        with open(json_path, "w") as fh:
            json.dump(
                {
                    "quick": quick,
                    "only": only,
                    "load_average": [load0, _load()],
                    "sections": sections,
                },
                fh,
                indent=1,
                default=float,
            )
    if markdown_path:
        with open(markdown_path, "w") as fh:
            fh.write(text + "\n")
    return 0
