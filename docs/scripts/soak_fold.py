"""Soak of the one fold and its one check (issue 53, item 2).

Not run in CI. The cases of ``tests/test_one_fold.py``'s fuzz, drawn from a seeded generator
instead of hypothesis: off-centre, badly scaled data (5 columns centred at ±10^U(-2, 6), of
spread 10^U(-3, 4)), a pipeline of 1 to 3 steps among StandardScaler (with and without the
mean), MinMaxScaler (two ranges), MaxAbsScaler, RobustScaler and PCA (with and without whiten),
ending in LogisticRegression, LinearSVC or SGDClassifier (hinge, log_loss); 2 or 3 classes.

Each case goes through both paths: ``fastcf.LinearExplainer(pipe).fit_mad(X)`` and
``fastcf.TabularExplainer(pipe, frame)`` (the same pipeline fitted on a DataFrame). Counted:

* false refusals: a path refuses the pipeline for any reason but a whitened component of (near)
  zero variance (the one refusal of supported steps; counted apart);
* wrong folds accepted: an accepted fold whose scores lie farther from the pipeline's exact
  scores (each step's arithmetic on the fitted parameters, in rational arithmetic:
  ``exact_scores``) than half the rule — what the rule's derivation claims of a right fold;
* rule broken by the model: the model's own ``decision_function`` farther than half the rule
  from the exact scores (the derivation's other half);
* perturbed folds accepted: a folded coefficient 1e-6 off (relative), accepted by the check;
* exceptions.

The largest ratios (error / allowance) are reported: how much room the rule leaves.

Usage: ``python docs/scripts/soak_fold.py [N] [SEED]`` (default 2000, 0). Exit status 1 if any
false refusal, wrong fold accepted, broken rule, perturbed fold accepted or exception is found.
"""

import os
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests"))
from test_one_fold import CLASSIFIERS, STEPS, build, judge, judge_tabular  # noqa: E402


def cases(n, seed):
    rng = np.random.default_rng(seed)
    names, clfs = sorted(STEPS), sorted(CLASSIFIERS)
    for _ in range(n):
        steps = [names[i] for i in rng.integers(0, len(names), rng.integers(1, 4))]
        yield (
            int(rng.integers(0, 2**16)),
            int(rng.choice([2, 3])),
            steps,
            clfs[rng.integers(0, len(clfs))],
        )


def main(n=2000, seed=0):
    keys = ("examples", "skipped fits", "zero-variance refusals", "false refusals",
            "wrong folds accepted", "rule broken by the model", "perturbed folds accepted",
            "exceptions")  # fmt: skip
    count = {path: dict.fromkeys(keys, 0) for path in ("array", "tabular")}
    worst = {path: {} for path in count}
    t0 = time.perf_counter()
    for i, case in enumerate(cases(n, seed)):
        built = build(*case)
        for path in count:
            count[path]["examples"] += 1
            if built is None:
                count[path]["skipped fits"] += 1
                continue
            X, y, pipe = built
            try:
                v = judge(X, pipe) if path == "array" else judge_tabular(X, y, case)
            except Exception:  # noqa: BLE001 - a soak counts what it finds
                count[path]["exceptions"] += 1
                print(f"[{path}] exception in case {case}:\n{traceback.format_exc()}")
                continue
            if not v["accepted"]:
                key = "zero-variance refusals" if v["legit"] else "false refusals"
                count[path][key] += 1
                if not v["legit"]:
                    print(f"[{path}] false refusal {case}: {v['refusal'][:300]}")
                continue
            for name in ("check", "model", "fold"):
                if name in v and v[name] > worst[path].get(name, (-1.0, None))[0]:
                    worst[path][name] = (v[name], case)
            if v["fold"] > 1.0:
                count[path]["wrong folds accepted"] += 1
                print(f"[{path}] fold beyond half the rule {case}: {v}")
            if v.get("model", 0.0) > 1.0:
                count[path]["rule broken by the model"] += 1
                print(f"[{path}] model beyond half the rule {case}: {v}")
            if not v["perturbed_refused"]:
                count[path]["perturbed folds accepted"] += 1
                print(f"[{path}] perturbed fold accepted {case}")
        if (i + 1) % 200 == 0:
            print(f"{i + 1} cases, {time.perf_counter() - t0:.0f} s", flush=True)
    print(f"\n{n} cases (seed {seed}) in {time.perf_counter() - t0:.0f} s")
    bad = 0
    for path, c in count.items():
        print(f"{path}: " + ", ".join(f"{k} {v}" for k, v in c.items()))
        for name, (ratio, case) in sorted(worst[path].items()):
            print(f"  largest {name} ratio {ratio:.3g} (case {case})")
        bad += sum(c[k] for k in keys[3:])
    return 1 if bad else 0


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    sys.exit(main(*args))
