"""Soak of XGBoost's native categorical features against a brute force (issue 52, item 1).

Not run in CI. Random small ``XGBClassifier`` models (1..4 trees of depth 1..3,
``enable_categorical=True``, ``tree_method="hist"``, ``max_cat_to_onehot`` 1 or the default)
on 2 or 3 features, one of them categorical with 2..6 categories coded 0..n-1 (floats, every
category seen in training). The labels depend on the category (a random set of categories, or
only the largest one, so that no split lists it: it goes left at every node) and on a numeric
feature; binary, sometimes 3 classes, a little label noise.

Each query (a training row, or one with its category set to each training category; every
target other than the model's own prediction; options drawn from ``{}``, ``metric="l0"``,
``metric="euclidean"``, ``max_changes=1``) goes through
``fastcf.TreeExplainer(m).fit_mad(X).explain`` (the training rows' categories offered) and is
compared with ``categories_brute_force`` of ``tests/reference.py`` over the categories SEEN
IN TRAINING (not fastcf's own list), every candidate judged by the model's own ``predict``.

Counted:

* false successes: ``success`` but ``m.predict(res.x)`` is not the target, or the distance is
  below the reference by more than 1e-9 relative + 1e-12;
* false failures: the reference is finite but ``success=False``;
* suboptimal answers: a success whose distance is above the reference by more than 1e-9
  relative + 1e-12 (a false failure of exactness, listed apart);
* answers that use a category not seen in training (reported: not an error by itself);
* exceptions raised by fastcf or the brute force.

Usage: ``python docs/scripts/soak_xgb_categories.py [N] [SEED]`` (default 10000, 0): N queries.
Exit status 1 if any false success, false failure, suboptimal answer or exception is found.
"""

import functools
import math
import os
import sys
import time
import traceback
import warnings

import numpy as np
import xgboost

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests"))
import reference  # noqa: E402
from reference import categories_brute_force, xgb_listed_max  # noqa: E402

import fastcf  # noqa: E402

OPTIONS = ({}, {"metric": "l0"}, {"metric": "euclidean"}, {"max_changes": 1})
RTOL, ATOL = 1e-9, 1e-12

# The brute force re-reads the model's dump and bisects every split's boundary for each
# category it pins: memoised here per model (same splits, same boundaries: a speed-up only).
_splits = reference.boosted_splits
_SPLIT_CACHE = {}


def _cached_splits(model):
    key = id(model)
    if key not in _SPLIT_CACHE:
        _SPLIT_CACHE.clear()
        _SPLIT_CACHE[key] = (model, _splits(model))
    return _SPLIT_CACHE[key][1]


reference.boosted_splits = _cached_splits
reference.bisect_boundary = functools.lru_cache(maxsize=100_000)(reference.bisect_boundary)


def make_model(rng):
    """A random small XGBoost model with one categorical feature: (model, X, f_cat, info)."""
    n = int(rng.integers(120, 300))
    D = int(rng.integers(2, 4))
    f = int(rng.integers(D))
    n_cats = int(rng.integers(2, 7))
    k = 3 if rng.random() < 0.25 else 2
    c = rng.integers(0, n_cats, n)
    c[:n_cats] = np.arange(n_cats)  # every category seen in training
    c = c.astype(np.float64)
    num = rng.normal(size=(n, D - 1))
    if rng.random() < 0.3:
        num = np.round(num, 1)
    X = np.empty((n, D))
    X[:, f] = c
    X[:, [j for j in range(D) if j != f]] = num
    t = rng.normal(scale=0.7)
    mode = rng.choice(["largest", "largest_or_num", "set"])
    if mode == "largest":
        s = (c == n_cats - 1).astype(int)
    elif mode == "largest_or_num":
        s = (c == n_cats - 1).astype(int) + (num[:, 0] > t)
    else:
        S = rng.random(n_cats) < 0.5
        S[rng.integers(n_cats)] = True
        s = S[c.astype(int)].astype(int) + (num[:, 0] > t)
    if k == 3 and D == 3 and rng.random() < 0.5:
        s = s + (num[:, 1] > 0)
    y = s % k
    flip = rng.random(n) < rng.choice([0.0, 0.03, 0.1])
    y[flip] = rng.integers(0, k, flip.sum())
    if len(np.unique(y)) < k:  # every class present
        y[:k] = np.arange(k)
    types = ["c" if j == f else "q" for j in range(D)]
    params = dict(
        n_estimators=int(rng.integers(1, 5)),
        max_depth=int(rng.integers(1, 4)),
        enable_categorical=True,
        feature_types=types,
        tree_method="hist",
        n_jobs=1,
        random_state=int(rng.integers(1 << 30)),
    )
    if rng.random() < 0.5:
        params["max_cat_to_onehot"] = 1
    m = xgboost.XGBClassifier(**params).fit(X, y)
    info = dict(n=n, D=D, f_cat=f, n_cats=n_cats, classes=k, mode=str(mode), params=params)
    return m, X, y, f, info


def queries(rng, m, X, f, cats):
    """The query rows of a model: a few training rows and each with every training category."""
    rows = []
    for i in rng.choice(X.shape[0], size=2, replace=False):
        rows.append(X[i].copy())
        for v in cats:
            if v != X[i, f]:
                r = X[i].copy()
                r[f] = v
                rows.append(r)
    out = []
    for x0 in rows:
        own = m.predict(x0[None])[0]
        for target in m.classes_[m.classes_ != own]:
            out.append((x0, int(target), dict(OPTIONS[rng.integers(len(OPTIONS))])))
    return out


def main():
    N = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    counts = dict(
        queries=0, models=0, feasible=0, success=0, moved_category=0, false_success=0,
        false_failure=0, suboptimal=0, unseen_category=0, unseen_strictly_better=0,
        exceptions=0, largest_unlisted_models=0, by_opts={},
    )  # fmt: skip
    failures = []
    unseen = []
    t_fastcf = t_ref = 0.0
    while counts["queries"] < N:
        m, X, y, f, info = make_model(rng)
        cats = np.unique(X[:, f])
        counts["models"] += 1
        unlisted = xgb_listed_max(m, f) < cats[-1]
        counts["largest_unlisted_models"] += int(unlisted)
        # (fit_mad: the categories the training rows hold are those offered; XGBoost's model
        # does not record them, and without it "one past the largest listed" stands for the
        # categories no split lists, which may be one the data never held)
        ex = fastcf.TreeExplainer(m).fit_mad(X)
        for x0, target, opts in queries(rng, m, X, f, cats):
            if counts["queries"] >= N:
                break
            counts["queries"] += 1
            key = str(opts) if opts else "{}"
            counts["by_opts"][key] = counts["by_opts"].get(key, 0) + 1
            case = dict(info=info, x0=x0.tolist(), target=target, opts=opts, seed=seed,
                        query=counts["queries"], listed_max=xgb_listed_max(m, f),
                        cats=cats.tolist())  # fmt: skip
            try:
                s = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = ex.explain(x0, target, **opts)
                t_fastcf += time.perf_counter() - s
                s = time.perf_counter()
                ref = categories_brute_force(m, x0, target, f, cats, **opts)
                t_ref += time.perf_counter() - s
            except Exception:  # noqa: BLE001
                counts["exceptions"] += 1
                failures.append(("exception", case, traceback.format_exc(), m))
                continue
            ok = bool(res.success)
            d = float(res.distance)
            case.update(success=ok, status=int(res.status), message=str(res.message),
                        x=np.asarray(res.x).tolist(), distance=d, ref=ref)  # fmt: skip
            counts["feasible"] += int(math.isfinite(ref))
            counts["success"] += int(ok)
            if ok:
                pred = m.predict(np.asarray(res.x)[None])[0]
                case["predict_x"] = int(pred)
                v = float(res.x[f])
                moved = not (v == x0[f])
                counts["moved_category"] += int(moved)
                if moved and v not in cats:
                    counts["unseen_category"] += 1
                    better = d < ref * (1 - RTOL) - ATOL
                    counts["unseen_strictly_better"] += int(better)
                    if len(unseen) < 5:
                        unseen.append(case)
                if pred != target or d < ref * (1 - RTOL) - ATOL:
                    counts["false_success"] += 1
                    failures.append(("false success", case, "", m))
                elif d > ref * (1 + RTOL) + ATOL:
                    counts["suboptimal"] += 1
                    failures.append(("suboptimal", case, "", m))
            elif math.isfinite(ref):
                counts["false_failure"] += 1
                failures.append(("false failure", case, "", m))
        if counts["models"] % 50 == 0:
            el = time.perf_counter() - t0
            print(
                f"  ... {counts['queries']} queries, {counts['models']} models, {el:.0f}s, "
                f"{len(failures)} failures",
                flush=True,
            )

    wall = time.perf_counter() - t0
    print(f"\nsoak_xgb_categories: N={N} seed={seed} xgboost {xgboost.__version__}")
    for k, v in counts.items():
        print(f"  {k:26s} {v}")
    print(f"  wall time {wall:.1f}s (fastcf {t_fastcf:.1f}s, brute force {t_ref:.1f}s)")
    for case in unseen:
        print(f"\nunseen category used (example): {case}")
    for kind, case, tb, m in failures[:10]:
        print(f"\n=== {kind}: {case}")
        if tb:
            print(tb)
        print("model dump:")
        for i, text in enumerate(m.get_booster().get_dump(dump_format="json")):
            print(f"  tree {i}: {' '.join(text.split())}")
    bad = (counts["false_success"] + counts["false_failure"] + counts["suboptimal"]
           + counts["exceptions"])  # fmt: skip
    print(f"\n{'FAIL' if bad else 'OK'}: {bad} problem(s)")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
