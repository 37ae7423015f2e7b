"""Soak of the one stage (read → route → solve → judge → package) through every public entry.

Not run in CI. Random problems through the public API of three families whose judge-and-re-aim
loop (``fastcf._stage.settle``) just changed: LVQ's re-aim of refused answers
(``fastcf._lvq.certify``), the tabular margin loop and the tree family's ``trust=False``
re-solve. Every public entry point of each: a single ``explain``, a batch ``explain`` and
``enumerate``. (The network family has its own soak, ``docs/scripts/soak_net.py``, which
judges its enumerations with :func:`alternatives_problems` from here.)

* ``LVQExplainer.from_arrays`` with random prototypes (1–2 a class, 2–3 classes, 2–4
  features), plain, a global Ω or local Ω's, data of scale 10^U(−3, 6), Euclidean or
  Manhattan, with and without a box, a frozen feature, ``max_changes`` (GLVQ/GMLVQ), the
  default margin or one at the data's scale. Each example runs a single ``explain``, a batch
  ``explain`` (the query among two others) and ``enumerate(k=3)``. Reference: the cvxpy
  program per target prototype (``reference.lvq_counterfactual_reference``, solved in units of
  the data's scale; with ``max_changes`` over every support by ``best_subset_brute_force``);
  for local Ω's (not convex: no exact reference) a target prototype inside the box is the
  witness of feasibility.
* ``TreeExplainer`` on small scikit-learn forests, extra trees and gradient boosting on random
  data, single, batch and ``enumerate(k=3)``, against ``reference.tree_cells_brute_force``
  (every cell of the threshold grid, judged by the model's own ``predict``).
* ``TabularExplainer`` on a ColumnTransformer pipeline (StandardScaler, OneHotEncoder,
  OrdinalEncoder) ending in LogisticRegression or a RandomForest, single, batch and
  ``enumerate(k=3)``, against ``reference.tabular_model_brute_force`` over a grid of every
  column's values.

An ``enumerate`` is judged on its first answer (the query's optimum, as ``explain``'s) and on
every alternative: each valid as a success must be, in increasing distance, and none whose
changed features contain those of a cheaper one.

Counted per entry point:

* false successes: ``success`` while the model's own rule (``ex.predict`` / ``model.predict``)
  does not put the answer in the target (or the answer leaves the box, moves a frozen feature,
  changes more than ``max_changes``);
* false failures: ``success=False`` with status 3 (INFEASIBLE) or 4 (NUMERIC) — or any status
  for the trees and tables — while the reference finds an answer that the model's own rule
  puts in the target. A status 4 whose message is the boundary message, where the reference's
  own answer is also within rounding of the boundary (its gap d_other − d_target at most 1e-8
  of its largest squared distance), is counted apart as an allowed numeric failure;
* suboptimal answers (exact methods): distance above the reference's by more than
  1e-6 relative + 1e-9 (LVQ; the grid brute force's by 1e-9 relative for trees and tables:
  its points are all feasible);
* exceptions.

Usage: ``python docs/scripts/soak_stage.py [--n N] [--seed SEED] [--only lvq,tree,tabular]``
(default n 300 examples per family, seed 0). Exit status 1 on any false success, false
failure, suboptimal answer or exception.
"""

import argparse
import os
import sys
import time
import traceback
import types
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests"))
from reference import (  # noqa: E402
    best_subset_brute_force,
    lvq_counterfactual_reference,
    tabular_model_brute_force,
    tree_cells_brute_force,
)
from tree_models import EDU, W, tabular_cost, tabular_data, tabular_pipe  # noqa: E402

import fastcf  # noqa: E402

KEYS = (
    "examples",
    "successes",
    "false successes",
    "false failures",
    "suboptimal",
    "allowed numeric",
    "exceptions",
    "alternatives",
)
BAD = ("false successes", "false failures", "suboptimal", "exceptions")
#: an empty enumeration, judged as the failure it is
_NO_ANSWER = types.SimpleNamespace(success=False, status=3, message="an empty enumeration",
                                   x=None, distance=np.inf)  # fmt: skip
ROOMS = np.array([0.0, 0.5, 2.0, np.inf])


def _answers(fn, args, opts, batch):
    """Call an entry point (warnings silenced) and return its answers as a list."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(*args, **opts)
    return list(out) if batch else [out]


def _counter():
    return dict.fromkeys(KEYS, 0)


def _report(count, entry, key, case, detail):
    count[entry][key] += 1
    if count[entry][key] <= 5:  # the first few of each kind, in full
        print(f"[{entry}] {key}: {detail}\n    case {case}", flush=True)


def alternatives_problems(out, changed, valid, ordered=True, rtol=1e-9):
    """Return what is wrong with an enumeration's list ``out``: (kind, detail) pairs.

    Its first answer is judged apart (against the reference, as ``explain``'s). Every success
    among the alternatives must be valid (``valid(res) -> ''``), their distances must not
    decrease by more than ``rtol`` relative (each answer is exact to its solver's tolerance:
    the soak's own tolerance for a suboptimal answer; ``ordered`` False: LGMLVQ's documented
    exception, not exact, a query with more features frozen can be answered below its
    parent), and no alternative's set of changed features (``changed(res)``: a frozenset) may
    contain an earlier one's.
    """
    good = [a for a in out if a.success]
    bad = []
    for a in good[1:]:
        if why := valid(a):
            bad.append(("false successes", f"alternative: {why}"))
    dist = [float(a.distance) for a in good]
    if ordered and any(b < a * (1 - rtol) for a, b in zip(dist, dist[1:], strict=False)):
        bad.append(("false successes", f"distances not increasing: {dist}"))
    sets = [changed(a) for a in good]
    for j in range(1, len(sets)):
        if any(sets[i] <= sets[j] for i in range(j)):
            bad.append(("false successes",
                        f"alternative {j} changes {sorted(sets[j])}, a superset of an earlier "
                        f"one's: {[sorted(c) for c in sets[:j]]}"))  # fmt: skip
    return bad, max(len(good) - 1, 0)


def _alternatives(count, entry, out, changed, valid, case, ordered=True, rtol=1e-9):
    """Count :func:`alternatives_problems` of an enumeration (and its alternatives)."""
    bad, n_alt = alternatives_problems(out, changed, valid, ordered, rtol)
    count[entry]["alternatives"] += n_alt
    for key, detail in bad:
        _report(count, entry, key, case, detail)


# ===================================================================================== LVQ
def lvq_case(rng):
    """One random LVQ problem: (explainer, queries (3, D), targets, options, meta)."""
    kind = ("plain", "global", "local")[rng.integers(3)]
    D = int(rng.integers(2, 5))
    K = int(rng.integers(2, 4))
    labels = np.concatenate([[c] * int(rng.integers(1, 3)) for c in range(K)])
    s = float(10.0 ** rng.uniform(-3, 6))
    c = rng.normal(size=D) * s * rng.choice([0.0, 1.0, 10.0])  # off-centre, sometimes
    P = c + rng.normal(size=(labels.size, D)) * s
    omega = None
    if kind == "global":
        omega = np.eye(D) + 0.5 * rng.normal(size=(D, D))
    elif kind == "local":
        omega = [np.eye(D) + 0.5 * rng.normal(size=(D, D)) for _ in labels]
    ex = fastcf.LVQExplainer.from_arrays(P, labels, omega=omega)
    X = c + rng.normal(size=(3, D)) * s * 1.5
    pred = ex.predict(X)
    tg = np.array([rng.choice([t for t in range(K) if t != p]) for p in pred])
    metric = ("euclidean", "manhattan")[rng.integers(2)]
    opts = {"metric": metric}
    if rng.random() < 0.3:
        opts["margin"] = 1e-6 * s * s  # at the data's scale
    if rng.random() < 0.5:  # one box for the three queries, holding all of them
        lo = X.min(axis=0) - s * rng.choice(ROOMS, D)
        hi = X.max(axis=0) + s * rng.choice(ROOMS, D)
        opts["bounds"] = (lo, hi)
    if rng.random() < 0.3:
        opts["frozen"] = [int(rng.integers(D))]
    if kind != "local" and rng.random() < 0.3:
        opts["max_changes"] = int(rng.integers(1, D))
    return ex, X, tg, opts, {"kind": kind, "D": D, "K": K, "scale": s, "P": P, "omega": omega}


def lvq_reference(ex, x0, t, opts, meta):
    """(distance, x) of the exact reference (inf, None when infeasible), in data units."""
    s, D = meta["scale"], meta["D"]
    om = meta["omega"]
    eps = opts.get("margin", 1e-6)
    lo, hi = opts.get("bounds", (None, None))
    frz = np.zeros(D, dtype=bool)
    frz[opts.get("frozen", [])] = True

    def solve(F):
        d, x = lvq_counterfactual_reference(
            meta["P"] / s, ex.prototype_labels_, x0 / s, t, omega=om,
            metric=opts["metric"], frozen=frz | ~F,
            lo=None if lo is None else lo / s, hi=None if hi is None else hi / s,
            epsilon=eps / (s * s),
        )  # fmt: skip
        return d * s, (None if x is None else x * s)

    if "max_changes" in opts:
        d, x, _ = best_subset_brute_force(solve, ~frz, opts["max_changes"])
        return d, x
    return solve(np.ones(D, dtype=bool))


def lvq_witness(ex, x0, t, opts, meta):
    """A target prototype inside the box and on the frozen values (LGMLVQ), or None."""
    lo, hi = opts.get("bounds", (None, None))
    for p in meta["P"][ex.prototype_labels_ == t]:
        if lo is not None and not np.all((p >= lo) & (p <= hi)):
            continue
        if any(p[f] != x0[f] for f in opts.get("frozen", [])):
            continue
        if "max_changes" in opts and np.count_nonzero(p != x0) > opts["max_changes"]:
            continue
        if ex.predict(p[None])[0] == t:
            return p
    return None


def _gap(ex, x, t):
    """d_other − d_target at x (the model's own distances), and the largest distance."""
    d = ex.distances(x[None])[0]
    lab = ex.prototype_labels_
    return float(d[lab != t].min() - d[lab == t].min()), float(d.max())


def lvq_valid(ex, x, x0, t, opts):
    """Why a success is not an answer ('' if it is)."""
    if not np.all(np.isfinite(x)):
        return "non-finite answer"
    if ex.predict(x[None])[0] != t:
        return f"ex.predict(x) = {ex.predict(x[None])[0]} != target {t}"
    if "bounds" in opts:
        lo, hi = opts["bounds"]
        if not np.all((x >= lo) & (x <= hi)):
            return "outside the box"
    for f in opts.get("frozen", []):
        if x[f] != x0[f]:
            return f"frozen feature {f} moved"
    if "max_changes" in opts and np.count_nonzero(x != x0) > opts["max_changes"]:
        return "more than max_changes features changed"
    return ""


def lvq_judge(count, entry, ex, res, x0, t, opts, meta, ref, case):
    """Count one answer of an LVQ entry point against the reference ``ref`` = (d, x)."""
    count[entry]["examples"] += 1
    d_ref, x_ref = ref
    exact = meta["kind"] != "local"
    if res.success:
        count[entry]["successes"] += 1
        why = lvq_valid(ex, res.x, x0, t, opts)
        if why:
            _report(count, entry, "false successes", case, why)
        elif exact and np.isfinite(d_ref) and res.distance > d_ref * (1 + 1e-6) + 1e-9:
            _report(count, entry, "suboptimal", case,
                    f"distance {res.distance!r} > reference {d_ref!r}")  # fmt: skip
        return
    if res.status not in (3, 4) or x_ref is None:
        return
    if ex.predict(x_ref[None])[0] != t:  # the reference's answer is not the target's
        return
    gap, dmax = _gap(ex, x_ref, t)
    if res.status == 4 and "boundary" in res.message and gap <= 1e-8 * dmax:
        count[entry]["allowed numeric"] += 1
        return
    _report(count, entry, "false failures", case,
            f"status {res.status} ({res.message!r}); reference distance {d_ref!r}, "
            f"gap {gap:.3g} of {dmax:.3g}")  # fmt: skip


def soak_lvq(n, seed, count):
    rng = np.random.default_rng(seed)
    for entry in ("LVQ explain", "LVQ batch", "LVQ enumerate"):
        count[entry] = _counter()
    t0 = time.perf_counter()
    for i in range(n):
        case = f"lvq seed={seed} i={i}"
        try:
            ex, X, tg, opts, meta = lvq_case(rng)
        except Exception:  # noqa: BLE001 - a soak counts what it finds
            print(f"case construction failed {case}\n{traceback.format_exc()}")
            continue
        case += f" kind={meta['kind']} D={meta['D']} K={meta['K']} scale={meta['scale']:.3g} "
        case += repr({k: v for k, v in opts.items() if k != "bounds"})
        case += " bounds" if "bounds" in opts else ""
        refs = []
        for k in range(3):
            if meta["kind"] == "local":
                w = lvq_witness(ex, X[k], tg[k], opts, meta)
                refs.append((np.inf, w))
            else:
                try:
                    refs.append(lvq_reference(ex, X[k], tg[k], opts, meta))
                except Exception:  # noqa: BLE001 - the reference's solver failed: no verdict
                    print(f"reference failed ({case} row={k}): {traceback.format_exc(0)}")
                    refs.append((np.inf, None))
        runs = (
            ("LVQ explain", ex.explain, (X[0], tg[0]), opts, False, 1),
            ("LVQ batch", ex.explain, (X, tg), opts, True, 3),
            ("LVQ enumerate", ex.enumerate, (X[0], tg[0], 3), opts, True, 1),
        )
        for entry, fn, args, kw, batch, rows in runs:
            try:
                out = _answers(fn, args, kw, batch)
            except Exception:  # noqa: BLE001
                _report(count, entry, "exceptions", case, traceback.format_exc())
                count[entry]["examples"] += rows
                continue
            if entry == "LVQ enumerate":
                array_alternatives(count, entry, out, ex.predict, X[0], tg[0], opts, case,
                                   ordered=meta["kind"] != "local", rtol=1e-6)  # fmt: skip
                if not out:  # an empty enumeration: no answer (judged by the first's failure)
                    count[entry]["examples"] += 1
                    continue
                lvq_judge(count, entry, ex, out[0], X[0], tg[0], opts, meta, refs[0], case)
                continue
            for k, res in enumerate(out):
                lvq_judge(
                    count, entry, ex, res, X[k], tg[k], opts, meta, refs[k], f"{case} row={k}"
                )
        if (i + 1) % 100 == 0:
            print(f"lvq: {i + 1} examples, {time.perf_counter() - t0:.0f} s", flush=True)
    return time.perf_counter() - t0


# ===================================================================================== trees
def tree_case(rng):
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        GradientBoostingClassifier,
        RandomForestClassifier,
    )

    kind = ("forest", "extra", "gb")[rng.integers(3)]
    D, K, N = int(rng.integers(2, 4)), int(rng.choice([2, 3])), 60
    X = np.round(rng.normal(size=(N, D)) * 2.0) / 2.0 * 10.0 ** rng.choice([0, -3, 4])
    s = X @ rng.normal(size=D) + 0.5 * rng.normal(size=N) * np.abs(X).mean()
    y = np.digitize(s, np.quantile(s, np.linspace(0, 1, K + 1)[1:-1]))
    n, depth, seed = int(rng.integers(1, 5)), int(rng.integers(1, 4)), int(rng.integers(2**16))
    make = {
        "forest": lambda: RandomForestClassifier(n, max_depth=depth, random_state=seed),
        "extra": lambda: ExtraTreesClassifier(n, max_depth=depth, random_state=seed),
        "gb": lambda: GradientBoostingClassifier(
            n_estimators=n, max_depth=depth, random_state=seed
        ),
    }[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make().fit(X, y)
    Q = X[rng.choice(N, 3, replace=False)].copy()
    if rng.random() < 0.5:  # a value half-way across a feature's range (often on a split)
        f = int(rng.integers(D))
        Q[0, f] = float(np.float32((X[:, f].min() + X[:, f].max()) / 2))
    classes = list(model.classes_)
    tg = np.array([classes[rng.integers(len(classes))] for _ in range(3)])
    opts = {"metric": ("manhattan", "euclidean", "l0")[rng.integers(3)]}
    if rng.random() < 0.5:
        opts["weights"] = rng.choice([0.5, 1.0, 3.0], D)
    if rng.random() < 0.5:
        span = np.abs(X).max() + 1.0
        opts["bounds"] = (Q.min(axis=0) - rng.uniform(0, 1, D) * span,
                          Q.max(axis=0) + rng.uniform(0, 1, D) * span)  # fmt: skip
    if rng.random() < 0.3:
        opts["frozen"] = [int(rng.integers(D))]
    if rng.random() < 0.3:
        opts["max_changes"] = int(rng.integers(1, D + 1))
    return kind, model, Q, tg, opts


def tree_reference(model, x0, t, opts):
    D = x0.shape[0]
    lo, hi = opts.get("bounds", (np.full(D, -np.inf), np.full(D, np.inf)))
    lo, hi = lo.copy(), hi.copy()
    for f in opts.get("frozen", []):
        lo[f] = hi[f] = x0[f]
    return tree_cells_brute_force(
        model, x0, t, metric=opts["metric"], w=opts.get("weights", np.ones(D)), lo=lo, hi=hi,
        max_changes=opts.get("max_changes"),
    )  # fmt: skip


def array_valid(predict, x, x0, t, opts):
    """Why a success ``x`` of an array query is not an answer ('' if it is)."""
    if not np.all(np.isfinite(x)):
        return "non-finite answer"
    if predict(x[None])[0] != t:
        return f"model.predict(x) = {predict(x[None])[0]} != target {t}"
    if "bounds" in opts and not np.all((x >= opts["bounds"][0]) & (x <= opts["bounds"][1])):
        return "outside the box"
    if any(x[f] != x0[f] for f in opts.get("frozen", [])):
        return "a frozen feature moved"
    if "max_changes" in opts and np.count_nonzero(x != x0) > opts["max_changes"]:
        return "more than max_changes features changed"
    return ""


def array_alternatives(count, entry, out, predict, x0, t, opts, case, ordered=True, rtol=1e-9):
    """:func:`_alternatives` of an array query's enumeration."""
    _alternatives(
        count, entry, out, lambda a: frozenset(np.flatnonzero(a.x != x0)),
        lambda a: array_valid(predict, a.x, x0, t, opts), case, ordered, rtol,
    )  # fmt: skip


def tree_judge(count, entry, model, res, x0, t, opts, ref, case):
    count[entry]["examples"] += 1
    d_ref, x_ref = ref
    if res.success:
        count[entry]["successes"] += 1
        why = array_valid(model.predict, res.x, x0, t, opts)
        if why:
            _report(count, entry, "false successes", case, why)
        elif np.isfinite(d_ref) and res.distance > d_ref * (1 + 1e-9) + 1e-12:
            _report(count, entry, "suboptimal", case,
                    f"distance {res.distance!r} > brute force {d_ref!r}")  # fmt: skip
        return
    if x_ref is not None:
        _report(count, entry, "false failures", case,
                f"status {res.status} ({res.message!r}); brute force {d_ref!r} "
                f"at {x_ref!r}")  # fmt: skip


def soak_trees(n, seed, count):
    rng = np.random.default_rng(seed + 1)
    for entry in ("Tree explain", "Tree batch", "Tree enumerate"):
        count[entry] = _counter()
    t0 = time.perf_counter()
    for i in range(n):
        kind, model, Q, tg, opts = tree_case(rng)
        case = f"tree seed={seed} i={i} kind={kind} D={Q.shape[1]} opts={opts!r}"
        ex = fastcf.TreeExplainer(model)
        refs = [tree_reference(model, Q[k], tg[k], opts) for k in range(3)]
        for entry, fn, args, batch, rows in (
            ("Tree explain", ex.explain, (Q[0], tg[0]), False, 1),
            ("Tree batch", ex.explain, (Q, tg), True, 3),
            ("Tree enumerate", ex.enumerate, (Q[0], tg[0], 3), True, 1),
        ):
            try:
                out = _answers(fn, args, opts, batch)
            except Exception:  # noqa: BLE001
                _report(count, entry, "exceptions", case, traceback.format_exc())
                count[entry]["examples"] += rows
                continue
            if entry == "Tree enumerate":
                array_alternatives(count, entry, out, model.predict, Q[0], tg[0], opts, case)
                out = out[:1] or [_NO_ANSWER]
            for k, res in enumerate(out):
                tree_judge(count, entry, model, res, Q[k], tg[k], opts, refs[k], f"{case} row={k}")
        if (i + 1) % 200 == 0:
            print(f"trees: {i + 1} examples, {time.perf_counter() - t0:.0f} s", flush=True)
    return time.perf_counter() - t0


# ===================================================================================== tables
_TABLES = {}


def _table(kind, seed, immutable):
    key = (kind, seed, immutable)
    if key not in _TABLES:
        from sklearn.ensemble import RandomForestClassifier
        from sklearn.linear_model import LogisticRegression

        X, y = tabular_data(240, seed, 2)
        clf = (
            LogisticRegression(C=float(10.0 ** (seed - 1)))
            if kind == "logistic"
            else RandomForestClassifier(5, max_depth=3, random_state=seed)
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = tabular_pipe(clf).fit(X, y)
        tx = fastcf.TabularExplainer(model, X, weights=W, immutable=list(immutable))
        _TABLES[key] = (X, model, tx)
    return _TABLES[key]


def table_case(rng):
    kind = ("logistic", "forest")[rng.integers(2)]
    immutable = ((), ("job",), ("n", "d"))[rng.integers(3)]
    X, model, tx = _table(kind, int(rng.integers(3)), immutable)
    rows = X.iloc[rng.choice(X.shape[0], 2, replace=False)]
    tg = rng.integers(0, 2, 2)
    opts = {}
    box = None
    if rng.random() < 0.5:  # a box holding both rows
        n_lo = int(rng.integers(0, rows.n.min() + 1))
        n_hi = int(rng.integers(rows.n.max(), 16))
        d_lo = int(rng.integers(0, round(rows.d.min() * 10) + 1))
        d_hi = int(rng.integers(round(rows.d.max() * 10), 41))
        opts["bounds"] = {"n": (n_lo, n_hi), "d": (d_lo / 10, d_hi / 10)}
        box = (n_lo, n_hi, d_lo, d_hi)
    if rng.random() < 0.3:
        opts["max_changes"] = int(rng.integers(1, 4))
    if rng.random() < 0.3:
        opts["proba"] = float(rng.choice([0.5, 0.6, 0.8]))
    return kind, immutable, X, model, tx, rows, tg, opts, box


def table_grid(X, row, immutable, box):
    r0 = row.iloc[0]
    n_lo, n_hi = int(min(X.n.min(), r0.n)), int(max(X.n.max(), r0.n))
    d_lo, d_hi = round(min(X.d.min(), r0.d) * 10), round(max(X.d.max(), r0.d) * 10)
    if box is not None:
        n_lo, n_hi, d_lo, d_hi = box
    g = {
        "n": list(range(n_lo, n_hi + 1)),
        "d": [k / 10 for k in range(d_lo, d_hi + 1)],
        "job": sorted(X.job.unique()),
        "edu": list(EDU),
    }
    for c in immutable:
        g[c] = [r0[c]]
    return g


def table_valid(model, x, row, t, opts):
    """Why a success ``x`` (a one-row DataFrame) of a tabular query is not an answer."""
    r0 = row.iloc[0]
    if model.predict(x)[0] != t:
        return f"model.predict(x) = {model.predict(x)[0]} != target {t}"
    if "proba" in opts and model.predict_proba(x)[0, t] < opts["proba"]:
        return "p_target below proba"
    if "max_changes" in opts and sum(x[c].iloc[0] != r0[c] for c in W) > opts["max_changes"]:
        return "more than max_changes columns changed"
    if "bounds" in opts and not all(
        lo <= x[c].iloc[0] <= hi for c, (lo, hi) in opts["bounds"].items()
    ):
        return "outside the box"
    return ""


def table_alternatives(count, entry, out, model, row, t, opts, case):
    """:func:`_alternatives` of a tabular query's enumeration (``row``: a one-row DataFrame)."""
    r0 = row.iloc[0]
    _alternatives(
        count, entry, out, lambda a: frozenset(c for c in W if a.x[c].iloc[0] != r0[c]),
        lambda a: table_valid(model, a.x, row, t, opts), case,
    )  # fmt: skip


def table_judge(count, entry, kind, model, res, row, t, opts, ref, case):
    count[entry]["examples"] += 1
    best, _ = ref
    if res.success:
        count[entry]["successes"] += 1
        why = table_valid(model, res.x, row, t, opts)
        if why:
            _report(count, entry, "false successes", case, why)
        elif np.isfinite(best) and res.distance > best * (1 + 1e-9) + 1e-12:
            _report(count, entry, "suboptimal", case,
                    f"distance {res.distance!r} > grid brute force {best!r}")  # fmt: skip
        return
    if np.isfinite(best):
        _report(count, entry, "false failures", case,
                f"status {res.status} ({res.message!r}); grid brute force {best!r}")  # fmt: skip


def soak_tables(n, seed, count):
    rng = np.random.default_rng(seed + 2)
    for entry in ("Tabular explain", "Tabular batch", "Tabular enumerate"):
        count[entry] = _counter()
    t0 = time.perf_counter()
    for i in range(n):
        kind, immutable, X, model, tx, rows, tg, opts, box = table_case(rng)
        case = f"tabular seed={seed} i={i} kind={kind} immutable={immutable} opts={opts!r}"
        refs = []
        for k in range(2):
            row = rows.iloc[[k]]
            g = table_grid(X, row, immutable, box)
            refs.append(tabular_model_brute_force(
                model, row, g, tabular_cost(row), int(tg[k]), proba=opts.get("proba"),
                max_changes=opts.get("max_changes"),
            ))  # fmt: skip
        row0 = rows.iloc[[0]]
        for entry, fn, args, batch, nrows in (
            ("Tabular explain", tx.explain, (row0, int(tg[0])), False, 1),
            ("Tabular batch", tx.explain, (rows, tg), True, 2),
            ("Tabular enumerate", tx.enumerate, (row0, int(tg[0]), 3), True, 1),
        ):
            try:
                out = _answers(fn, args, opts, batch)
            except Exception:  # noqa: BLE001
                _report(count, entry, "exceptions", case, traceback.format_exc())
                count[entry]["examples"] += nrows
                continue
            if entry == "Tabular enumerate":
                table_alternatives(count, entry, out, model, row0, int(tg[0]), opts, case)
                out = out[:1] or [_NO_ANSWER]
            for k, res in enumerate(out):
                table_judge(count, entry, kind, model, res, rows.iloc[[k]], int(tg[k]), opts,
                            refs[k], f"{case} row={k}")  # fmt: skip
        if (i + 1) % 200 == 0:
            print(f"tables: {i + 1} examples, {time.perf_counter() - t0:.0f} s", flush=True)
    return time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="examples per family (default 300)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default="lvq,tree,tabular", help="families, comma-separated")
    args = ap.parse_args(argv)
    only = set(args.only.split(","))
    count, secs = {}, {}
    for name, soak in (("lvq", soak_lvq), ("tree", soak_trees), ("tabular", soak_tables)):
        if name in only:
            secs[name] = soak(args.n, args.seed, count)
    print(f"\n--n {args.n} --seed {args.seed}: " +
          ", ".join(f"{k} {v:.0f} s" for k, v in secs.items()))  # fmt: skip
    bad = 0
    for entry, c in count.items():
        print(f"{entry}: " + ", ".join(f"{k} {v}" for k, v in c.items()))
        bad += sum(c[k] for k in BAD)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
