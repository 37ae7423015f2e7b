"""Soak of the network family (issue 55) through every public entry point.

Not run in CI. Random tiny ReLU networks (1–2 hidden layers, at most 8 hidden neurons, 2–4
features, 2–3 classes), scikit-learn ``MLPClassifier`` models with their weights replaced by
random ones of scale 10^U(−1, 1) (half of them) or each of its own magnitude 10^(−3…3), with a
zero row or two equal rows at times (the other half: big-M bounds of 1e7 and more), and
PyTorch ``nn.Sequential`` models in float64 and float32,
with random boxes, per-feature weights 10^U(−1, 1), and at random a frozen feature,
``max_changes``, ``metric="l0"``, ``metric="euclidean"`` (with a frozen feature or
``max_changes`` at times) or ``proba=``. Each example asks
every entry point:

* ``explain`` of the single query;
* ``explain`` of a batch (the query among two others);
* ``enumerate(k=3)``: its first answer (the cheapest), and its alternatives (each valid as a
  success must be, in increasing distance, none changing a superset of an earlier one's
  features: ``soak_stage.alternatives_problems``);
* the front door ``fastcf.counterfactual(model, x, t, bounds=..., ...)``.

Reference: ``reference.relu_net_brute_force`` (one linear program per activation pattern, and
per support for L0/``max_changes``; a QP for Euclidean; ``relu_net_proba_brute_force``, one
exponential-cone program per pattern, for a multiclass ``proba=``), at the margin fastcf
aims at (1e-6 on the logits; logit τ for ``proba=``; for a float32 model, the proven bound of
its rounding, ``Net.rounding``) and at margin 0 (fastcf's answer is never below that one's
cost).

Counted per entry point:

* false successes: ``success`` while the model's own ``predict`` (a PyTorch model's own
  forward pass in its dtype; ``predict_proba`` for ``proba=``) does not give the target, or
  the answer leaves the box, moves a frozen feature or changes more than ``max_changes``;
* false failures: ``success=False`` while the reference finds an answer at fastcf's margin
  that the model's own ``predict`` (and ``predict_proba`` for ``proba=``) takes as one (the
  reference's programs meet the margin to their solvers' tolerance only);
* suboptimal: a success whose distance exceeds the reference's by more than 1e-6 relative +
  1e-9; where the reference's cheaper point is itself refused by the model, or a valid answer
  lies below the margin-0 reference's optimum by as much (the reference missed it), the
  example is *unjudged* (counted apart and printed, not a failure of the soak);
* exceptions.

Usage: ``python docs/scripts/soak_net.py [--n N] [--seed SEED]`` (default n 300). Exit status
1 on any false success, false failure, suboptimal answer or exception.
"""

import argparse
import os
import sys
import time
import traceback
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests"))
from reference import relu_net_brute_force, relu_net_proba_brute_force  # noqa: E402
from soak_stage import alternatives_problems  # noqa: E402

import fastcf  # noqa: E402

ENTRIES = ("explain", "batch", "enumerate", "counterfactual")
KEYS = ("examples", "successes", "false successes", "false failures", "suboptimal", "exceptions",
        "unjudged")  # fmt: skip
BAD = ("false successes", "false failures", "suboptimal", "exceptions")


def _sizes(rng):
    D = int(rng.integers(2, 5))
    hidden = [int(rng.integers(2, 6))]
    if rng.random() < 0.4:
        hidden.append(int(rng.integers(2, 4)))
    K = int(rng.integers(2, 4))
    return D, hidden, K


def _wild(rng, shape):
    """Weights ±(1…10)·10^(−3…3), each its own (as ``tests/test_fuzz_net.py``); at random a
    zero row or a row equal to the next (degenerate networks: big-M bounds of 1e7 and more).
    """
    v = rng.choice([-1.0, 1.0], shape) * rng.uniform(1.0, 10.0, shape)
    v = v * 10.0 ** rng.integers(-3, 4, shape)
    if rng.random() < 0.5:
        r = int(rng.integers(shape[0]))
        v[r] = 0.0 if rng.random() < 0.5 else v[(r + 1) % shape[0]]
    return v


def sklearn_case(rng):
    """An MLPClassifier with random weights; returns (model, coefs, intercepts, binary, judge)."""
    from sklearn.neural_network import MLPClassifier

    D, hidden, K = _sizes(rng)
    X = rng.uniform(-1, 1, size=(4 * K, D))
    y = np.arange(4 * K) % K
    mlp = MLPClassifier(hidden, max_iter=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mlp.fit(X, y)
    if rng.random() < 0.5:
        scale = 10.0 ** rng.uniform(-1, 1)
        mlp.coefs_ = [scale * rng.normal(size=c.shape) for c in mlp.coefs_]
        mlp.intercepts_ = [scale * 0.5 * rng.normal(size=i.shape) for i in mlp.intercepts_]
    else:  # wild: each weight of its own magnitude, a zero row or two equal rows at times
        mlp.coefs_ = [_wild(rng, c.shape) for c in mlp.coefs_]
        mlp.intercepts_ = [_wild(rng, (i.shape[0], 1))[:, 0] for i in mlp.intercepts_]

    def judge(X, proba=False):
        return mlp.predict_proba(X) if proba else mlp.predict(X)

    return mlp, mlp.coefs_, mlp.intercepts_, K == 2, judge, np.float64


def torch_case(rng):
    """A PyTorch Sequential with random weights (float64 or float32)."""
    import torch

    D, hidden, K = _sizes(rng)
    dtype = torch.float32 if rng.random() < 0.5 else torch.float64
    sizes = [D, *hidden, 1 if K == 2 else K]
    scale = 10.0 ** rng.uniform(-1, 1)
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        lin = torch.nn.Linear(a, b, dtype=dtype)
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(scale * rng.normal(size=(b, a))))
            lin.bias.copy_(torch.from_numpy(scale * 0.5 * rng.normal(size=b)))
        layers.append(lin)
        if i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    lins = [m for m in layers if isinstance(m, torch.nn.Linear)]
    coefs = [m.weight.detach().double().numpy().T for m in lins]
    biases = [m.bias.detach().double().numpy() for m in lins]

    def judge(X, proba=False):
        with torch.no_grad():
            z = model(torch.as_tensor(np.atleast_2d(X)).to(dtype))
        if proba:
            if z.shape[1] == 1:
                return torch.sigmoid(torch.cat([-z, z], 1)).double().numpy()
            return torch.softmax(z, 1).double().numpy()
        z = z.numpy()
        return (z[:, 0] > 0).astype(int) if z.shape[1] == 1 else np.argmax(z, axis=1)

    return model, coefs, biases, K == 2, judge, dtype


def case(rng):
    kind = "torch" if rng.random() < 0.5 else "sklearn"
    model, coefs, biases, binary, judge, dtype = (torch_case if kind == "torch" else sklearn_case)(
        rng
    )
    D = coefs[0].shape[0]
    X = rng.uniform(-1, 1, size=(3, D))
    room = 10.0 ** rng.uniform(0.0, 0.5)  # (holds every x̄ in [-1, 1])
    lo, hi = -room * np.ones(D), room * np.ones(D)
    opts = {"weights": 10.0 ** rng.uniform(-1, 1, size=D), "bounds": (lo, hi)}
    u = rng.random()
    if u < 0.15:
        opts["frozen"] = [int(rng.integers(D))]
    elif u < 0.3:
        opts["max_changes"] = int(rng.integers(1, D))
    elif u < 0.4:
        opts["metric"] = "l0"
    elif u < 0.55:
        opts["metric"] = "euclidean"
        v = rng.random()
        if v < 0.3:
            opts["frozen"] = [int(rng.integers(D))]
        elif v < 0.5:  # (the reference: a QP per pattern and per set of changed features)
            opts["max_changes"] = int(rng.integers(1, D))
    elif u < 0.7 and binary:
        opts["proba"] = float(rng.uniform(0.55, 0.95))
    elif u < 0.8 and not binary:  # (the reference: one exponential-cone program per pattern)
        opts["proba"] = float(rng.uniform(0.3, 0.9))
    meta = dict(kind=kind, dtype=str(dtype), binary=binary, D=D, K=2 if binary else len(biases[-1]))
    return model, coefs, biases, binary, judge, X, opts, meta


def reference(ex, coefs, biases, binary, x0, t, opts):
    """(cost at fastcf's margin, cost at margin 0, the first's point) by the brute force."""
    lo, hi = opts["bounds"]
    lo, hi = lo.copy(), hi.copy()
    for f in opts.get("frozen", []):
        lo[f] = hi[f] = x0[f]
    w, metric = opts["weights"], opts.get("metric", "manhattan")
    mc = opts.get("max_changes")
    proba = opts.get("proba")
    theta = 0.0 if proba is None else float(np.log(proba) - np.log1p(-proba))
    # (over the box before the frozen features are pinned, as fastcf's floor)
    floor = ex._net.rounding(*opts["bounds"]) if ex._net.unit > 2.0**-53 else 0.0
    margin = max(theta, 0.0) + 1e-6 + floor  # (fastcf's aim: fastcf._net.answer.query)
    if proba is not None and not binary:  # softmax_t >= τ: 1e-6 inside, as fastcf's cuts
        args = dict(metric=metric)
        at, x = relu_net_proba_brute_force(coefs, biases, x0, t, proba, w, lo, hi, margin=margin,
                                           slack=margin - max(theta, 0.0), **args)  # fmt: skip
        zero, _ = relu_net_proba_brute_force(coefs, biases, x0, t, proba, w, lo, hi, **args)
        return at, zero, x
    args = dict(binary=binary, metric=metric, max_changes=mc)
    at, x = relu_net_brute_force(coefs, biases, x0, t, margin, w, lo, hi, **args)
    zero, _ = relu_net_brute_force(coefs, biases, x0, t, max(theta, 0.0), w, lo, hi, **args)
    return at, zero, x


class _Point:
    """A point judged as an answer is (``_invalid`` reads its ``x``)."""

    def __init__(self, x):
        self.x = x


def _invalid(res, x0, t, opts, judge, ex):
    """Why a success is not an answer ('' if it is)."""
    lo, hi = opts["bounds"]
    x = np.asarray(res.x, dtype=np.float64)
    bad = []
    k = int(judge(x[None])[0])
    if ex.classes_[k] != ex.classes_[t]:
        bad.append(f"model says {k}, target {t}")
    if "proba" in opts and judge(x[None], proba=True)[0, t] < opts["proba"]:
        bad.append("p < tau")
    if np.any(x < lo) or np.any(x > hi):
        bad.append("outside the box")
    for f in opts.get("frozen", []):
        if x[f] != x0[f]:
            bad.append(f"frozen {f} moved")
    if "max_changes" in opts and np.count_nonzero(x != x0) > opts["max_changes"]:
        bad.append("too many changes")
    return "; ".join(bad)


def _alternatives(c, out, x0, t, opts, judge, ex, meta):
    """Count what is wrong with an enumeration's alternatives; return its first answer."""
    bad, _ = alternatives_problems(
        out, lambda a: frozenset(np.flatnonzero(np.asarray(a.x) != x0)),
        lambda a: _invalid(a, x0, t, opts, judge, ex), rtol=1e-6,
    )  # fmt: skip
    for key, detail in bad:
        _report(c, "enumerate", key, meta, detail)
    return out[0] if out else None


def check(count, entry, res, x0, t, opts, judge, ref, meta, ex):
    c = count[entry]
    c["examples"] += 1
    at, zero, x_at = ref
    if res is None or not res.success:  # (enumerate: an empty list)
        # false where the reference's point is an answer as the model computes it (its
        # programs meet the margin to their solvers' tolerance: with weights of 1e3…1e4 a
        # point "1e-6 inside" can be on the boundary, p = 1/2, where the model says no)
        if x_at is not None and not _invalid(_Point(x_at), x0, t, opts, judge, ex):
            why = "no answer" if res is None else res.message
            _report(c, entry, "false failures", meta, f"{why}; ref {at}")
        return
    c["successes"] += 1
    why = _invalid(res, x0, t, opts, judge, ex)
    if why:
        _report(c, entry, "false successes", meta, why)
        return
    if res.distance == 0.0:  # x̄ itself, already in the target
        return
    tol = 1e-6
    if np.isfinite(at) and res.distance > at * (1 + tol) + 1e-9:
        if x_at is not None and _invalid(_Point(x_at), x0, t, opts, judge, ex):
            # the reference's cheaper point is no answer as the model computes it (its LP met
            # the margin to its tolerance: seed 40, example 141, logit exactly 0 on a tie the
            # model gives the other class): it proves nothing; counted apart, and printed
            _report(c, entry, "unjudged", meta, f"{res.distance} > ref {at}, refused by the model")
            return
        _report(c, entry, "suboptimal", meta, f"{res.distance} > ref {at}")
    elif res.distance < zero * (1 - tol) - 1e-9:
        # a valid answer (judged above by the model) below the reference's optimum at margin 0:
        # the reference missed it (seed 41, example 17: logits of 3·10⁶, HiGHS's LP 9 % above)
        _report(c, entry, "unjudged", meta, f"{res.distance} < margin-0 ref {zero}, valid")


def _report(c, entry, key, meta, detail):
    c[key] += 1
    if c[key] <= 5:
        print(f"[{entry}] {key}: {detail}\n    {meta}", flush=True)


def entries(ex, model, X, x0, target, tb, opts):
    """The entry points of one example, as calls."""
    return {
        "explain": lambda: ex.explain(x0, target, **opts),
        "batch": lambda: ex.explain(X, tb, **opts)[0],
        "enumerate": lambda: ex.enumerate(x0, target, k=3, **opts),
        "counterfactual": lambda: fastcf.counterfactual(model, x0, target, **opts),
    }


def run(n, seed):
    count = {e: dict.fromkeys(KEYS, 0) for e in ENTRIES}
    rng = np.random.default_rng(seed)
    for i in range(n):
        model, coefs, biases, binary, judge, X, opts, meta = case(rng)
        meta["example"] = i
        ex = fastcf.NetExplainer(model)
        labels = judge(X)
        x0 = X[0]
        K = meta["K"]
        t = int((labels[0] + 1 + rng.integers(K - 1)) % K)
        if "proba" in opts:
            t = 1 - int(labels[0])
        target = ex.classes_[t]
        try:
            ref = reference(ex, coefs, biases, binary, x0, t, opts)
        except Exception:
            print(f"reference failed on {meta}:\n{traceback.format_exc()}")
            continue
        tb = np.array([target, ex.classes_[(t + 1) % K], target], dtype=object)
        if ex.classes_.dtype != object:
            tb = tb.astype(ex.classes_.dtype)
        calls = entries(ex, model, X, x0, target, tb, opts)
        for entry, call in calls.items():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = call()
            except Exception:
                count[entry]["exceptions"] += 1
                if count[entry]["exceptions"] <= 5:
                    print(f"[{entry}] exception on {meta} {opts}:\n{traceback.format_exc()}")
                continue
            if entry == "enumerate":  # its alternatives; its first answer as explain's
                res = _alternatives(count[entry], res, x0, t, opts, judge, ex, meta)
            check(count, entry, res, x0, t, opts, judge, ref, meta, ex)
    return count


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    count = run(args.n, args.seed)
    print(f"\n--n {args.n} --seed {args.seed}: {time.perf_counter() - t0:.0f} s")
    for entry, c in count.items():
        print(f"{entry:15s} " + ", ".join(f"{k} {v}" for k, v in c.items()))
    return int(any(c[k] for c in count.values() for k in BAD))


if __name__ == "__main__":
    sys.exit(main())
