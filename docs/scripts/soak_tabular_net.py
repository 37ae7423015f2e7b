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

``--wild``: the network's fitted weights replaced by wild ones, as ``soak_net.py``'s (each
weight ±(1…10)·10^(−3…3), each layer at random a zero row or two equal rows: big-M bounds of
1e7 and more, ties at an output bias of 0); the brute force and the judge are the pipeline's
own ``predict`` as before. Each mismatch is counted as a false success (a success the
pipeline does not put in the target, or at ``proba=``, below τ), a false failure (no answer
where the brute force has one) or a wrong cost (a success whose cost is not the optimum's).

Usage: ``python docs/scripts/soak_tabular_net.py [N] [SEED] [--wild]`` (default 100, 1000).
Exit status 1 on any mismatch.
"""

import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests"))
sys.path.insert(0, HERE)

from reference import tabular_model_brute_force  # noqa: E402
from soak_net import _wild  # noqa: E402
from test_tabular_net import W, _fit, _targets  # noqa: E402
from tree_models import tabular_cost, tabular_grids  # noqa: E402

import fastcf  # noqa: E402

HIDDEN = [(2,), (4,), (6,), (3, 2), (4, 3), (2, 2, 2)]


KEYS = ("queries", "successes", "false successes", "false failures", "wrong cost", "refused")


def one(seed, wild=False):
    """Return the counts (:data:`KEYS`) of one random pipeline."""
    rng = np.random.default_rng(seed)
    classes = int(rng.choice([2, 3]))
    hidden = HIDDEN[rng.integers(len(HIDDEN))]
    act = "relu" if rng.random() < 0.85 else "identity"
    X, model = _fit(classes, hidden, act, seed=seed, n=160)
    if wild:
        mlp = model[-1]
        mlp.coefs_ = [_wild(rng, c.shape) for c in mlp.coefs_]
        mlp.intercepts_ = [_wild(rng, (b.shape[0], 1))[:, 0] for b in mlp.intercepts_]
    imm = ["job"] if rng.random() < 0.3 else None
    count = dict.fromkeys(KEYS, 0)
    try:
        tx = fastcf.TabularExplainer(model, X, weights=W, immutable=imm)
    except ValueError as e:  # (the fold's check refuses a pipeline it cannot reproduce)
        print(f"refused: seed {seed} {hidden} {act} classes {classes}: {e}", flush=True)
        count["refused"] += 1
        return count
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
            count["queries"] += 1
            what = None
            if res.success:
                count["successes"] += 1
                k = list(model.classes_).index(t)
                valid = model.predict(res.x)[0] == t and (
                    proba is None or model.predict_proba(res.x)[0, k] >= proba
                )
                if not valid:
                    what = "false successes"
                elif abs(res.distance - ref) > 1e-7 * max(1.0, ref):
                    what = "wrong cost"
            elif np.isfinite(ref):
                what = "false failures"
            if what:
                count[what] += 1
                print(
                    f"MISMATCH ({what}) seed {seed} {hidden} {act} classes {classes} row {i} "
                    f"target {t} max_changes {mc} proba {proba}: {res.success} {res.status} "
                    f"{res.distance} vs {ref} ({res.message})",
                    flush=True,
                )
    return count


def main(n=100, seed=1000, wild=False):
    t0 = time.time()
    total = dict.fromkeys(KEYS, 0)
    for s in range(seed, seed + n):
        for key, v in one(s, wild).items():
            total[key] += v
    print(f"{n} pipelines{' (wild)' if wild else ''}, " + ", ".join(f"{v} {k}" for k, v in
          total.items()) + f", {time.time() - t0:.0f} s")  # fmt: skip
    return 1 if any(total[k] for k in KEYS[2:5]) else 0


if __name__ == "__main__":
    wild = "--wild" in sys.argv[1:]
    args = [int(a) for a in sys.argv[1:] if a != "--wild"]
    sys.exit(main(*args, wild=wild))
