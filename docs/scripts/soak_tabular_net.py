"""Soak of TabularExplainer on pipelines ending in a ReLU MLPClassifier (issue 55).

Not run in CI. Per seed: the tabular tests' DataFrame (integer ``n``, one-decimal ``d``,
one-hot ``job``, ordinal ``edu``; 160 rows), a network of one to three hidden layers of 2 to 6
neurons (ReLU, else identity), binary or 3 classes, ``job`` immutable at random; two rows asked
for every other class, with ``max_changes`` (None, 1, 2) and ``proba=0.75`` at random (3
classes: the tangent cuts of log-sum-exp).
Each answer is compared with the brute force over every grid combination scored by the
pipeline's own ``predict`` (``tests/reference.py``: ``tabular_model_brute_force``): a success
must be the target under ``predict`` (and ``predict_proba``) and cost the brute force's
optimum; a failure must have no answer in the brute force.

Usage: ``python docs/scripts/soak_tabular_net.py [N] [SEED]`` (default 100, 1000). Exit status
1 on any mismatch.
"""

import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests"))

from reference import tabular_model_brute_force  # noqa: E402
from test_tabular_net import W, _fit, _targets  # noqa: E402
from tree_models import tabular_cost, tabular_grids  # noqa: E402

import fastcf  # noqa: E402

HIDDEN = [(2,), (4,), (6,), (3, 2), (4, 3), (2, 2, 2)]


def one(seed):
    """Return (queries, successes, mismatches) of one random pipeline."""
    rng = np.random.default_rng(seed)
    classes = int(rng.choice([2, 3]))
    hidden = HIDDEN[rng.integers(len(HIDDEN))]
    act = "relu" if rng.random() < 0.85 else "identity"
    X, model = _fit(classes, hidden, act, seed=seed, n=160)
    imm = ["job"] if rng.random() < 0.3 else None
    tx = fastcf.TabularExplainer(model, X, weights=W, immutable=imm)
    queries = succ = bad = 0
    for i in rng.choice(X.shape[0], 2, replace=False):
        row = X.iloc[[int(i)]]
        for t in _targets(model, row):
            mc = [None, None, 1, 2][rng.integers(4)]
            proba = 0.75 if rng.random() < 0.3 else None
            res = tx.explain(row, t, max_changes=mc, proba=proba)
            grids = tabular_grids(X, row, fixed=imm or ())
            ref = tabular_model_brute_force(
                model, row, grids, tabular_cost(row), t, max_changes=mc, proba=proba
            )[0]
            queries += 1
            if res.success:
                succ += 1
                k = list(model.classes_).index(t)
                valid = model.predict(res.x)[0] == t and (
                    proba is None or model.predict_proba(res.x)[0, k] >= proba
                )
                ok = valid and abs(res.distance - ref) <= 1e-7 * max(1.0, ref)
            else:
                ok = not np.isfinite(ref)
            if not ok:
                bad += 1
                print(
                    f"MISMATCH seed {seed} {hidden} {act} classes {classes} row {i} target {t} "
                    f"max_changes {mc} proba {proba}: {res.success} {res.status} "
                    f"{res.distance} vs {ref} ({res.message})",
                    flush=True,
                )
    return queries, succ, bad


def main(n=100, seed=1000):
    t0 = time.time()
    total = np.zeros(3, dtype=int)
    for s in range(seed, seed + n):
        total += one(s)
    q, s, b = total
    print(f"{n} pipelines, {q} queries, {s} successes, {b} mismatches, {time.time() - t0:.0f} s")
    return 1 if b else 0


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    sys.exit(main(*args))
