"""What the peer comparisons share: ``tabular_peers.py`` (a logistic credit pipeline),
``trees_peers.py`` (the same pipeline ending in a tree model), fastcf against DiCE (and
actionable-recourse) on ``credit_data``, and ``net_peers.py`` (a PyTorch network, against DiCE).

Each script runs its methods in their own virtual environments (``--worker NAME``,
:func:`run_workers`); this module is imported by both sides, so it needs NumPy alone (pandas
frames are passed in).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
import warnings

NUMERIC = ["Seniority", "Time", "Age", "Expenses", "Income", "Assets", "Debt", "Amount", "Price"]
CATEGORICAL = ["Home", "Marital", "Records", "Job"]
IMMUTABLE = ["Age", "Marital", "Records"]


def plain(v):
    """Return a JSON-friendly Python scalar."""
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and v != v:
        return None
    return v


def records(frame, columns):
    return [{c: plain(frame[c].iloc[i]) for c in columns} for i in range(frame.shape[0])]


def bounds_of(X_train, row):
    """Return {numeric column: (lo, hi)}: the training range widened to hold the row."""
    lo, hi = X_train[NUMERIC].min(), X_train[NUMERIC].max()
    return {
        c: (float(min(lo[c], row[c].iloc[0])), float(max(hi[c], row[c].iloc[0]))) for c in NUMERIC
    }


def timed(call, n, convert=list):
    """Call ``call(i)`` for every query (after an untimed call(0)); record answers and times."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            call(0)
        except Exception:  # reported per query below
            pass
        queries = []
        for i in range(n):
            t = time.perf_counter()
            try:
                answers, error = call(i), None
            except Exception as exc:  # a peer's failure is a result
                answers, error = [], f"{type(exc).__name__}: {exc}"
            dt = time.perf_counter() - t
            answers = convert(answers) if error is None else []
            queries.append({"time": dt, "answers": answers, "error": error})
    return queries


def fmt_ms(s):
    ms = 1e3 * s
    return f"{ms:.0f} ms" if ms >= 100 else f"{ms:.1f} ms" if ms >= 1 else f"{ms:.2f} ms"


def rewrap(text, width=100):
    """Fill every bullet of the text's bullet lists to ``width`` (tables are left alone)."""
    import textwrap

    out = []
    for block in text.split("\n\n"):
        if not block.startswith("* "):
            out.append(block)
            continue
        items = ("\n" + block).split("\n* ")[1:]
        out.append(
            "\n".join(
                textwrap.fill(
                    " ".join(item.split()),
                    width,
                    initial_indent="* ",
                    subsequent_indent="  ",
                    break_long_words=False,
                    break_on_hyphens=False,
                )
                for item in items
            )
        )
    return "\n\n".join(out)


def versions(packages):
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for p in packages:
        try:
            out[p] = version(p)
        except PackageNotFoundError:
            out[p] = "not installed"
    return out


def run_workers(script, workers, pythons, tmp, args, run=True, only=None):
    """Run each worker of a peers script in its own process; return ``(docs, failed)``.

    Parameters
    ----------
    script : str
        The script's path: each worker is ``python script --worker NAME`` + ``args``.
    workers : dict
        ``{name: environment}``, in the order to run them.
    pythons : dict
        ``{environment: its Python}``.
    tmp : str
        The folder of the workers' answers, ``NAME.json`` each.
    args : list of str
        The worker's other arguments (``--rows N --tmp DIR`` and the script's own).
    run : bool
        False: judge the answers already in ``tmp`` (``--skip-run``).
    only : list of str, optional
        Run these workers only (the others' answers already in ``tmp`` are read).

    Returns
    -------
    docs : dict
        ``{name: its JSON}``, for every worker with an answers file.
    failed : dict
        ``{name: its exit code and last line of stderr}`` for the workers that crashed (a
        crashed peer is a result: the scripts report it in their notes).

    Raises
    ------
    SystemExit
        Where the fastcf worker left no answers.
    """
    docs, failed = {}, {}
    for name, env in workers.items():
        path = os.path.join(tmp, f"{name}.json")
        if run and (only is None or name in only):
            cmd = [pythons[env], script, "--worker", name, *args]
            print("running", " ".join(cmd), flush=True)
            if os.path.exists(path):
                os.remove(path)
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
                failed[name] = f"exit code {proc.returncode}: {tail}"
                print(proc.stderr[-3000:], file=sys.stderr)
                continue
        if os.path.exists(path):
            with open(path) as f:
                docs[name] = json.load(f)
    if "fastcf" not in docs:
        raise SystemExit("the fastcf worker failed: " + failed.get("fastcf", "no output"))
    return docs, failed
