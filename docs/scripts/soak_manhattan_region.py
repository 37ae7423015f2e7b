"""Soak of ``region=True, metric="manhattan"`` against HiGHS (issue 52, item 5).

Not run in CI. Generates random queries of softmax models (K in 2..6 classes, D in 1..6
features), many of them adversarial for a simplex: coefficients of 1e-14…1e-9 mixed with O(1)
ones, near-duplicate rows, zero rows and columns, the issue's own model with its tiny
coefficient resampled. With and without a box, with frozen features and unequal weights,
margins 0, 1e-6, 0.3 and 2. Each query goes through the public API
(``LinearExplainer.from_arrays(A, b).explain(x, t, region=True, metric="manhattan", ...)``, one
query at a time: the single-query path) and is compared with the same linear program solved by
HiGHS (:func:`scipy.optimize.linprog`, dual simplex), written here from scratch: variables in
cost units (c_i |δ_i|), each row divided by its largest coefficient, the right-hand sides
scaled to a largest of 1 (HiGHS's tolerances are absolute), primal feasibility 1e-10.

Counted:

* false successes: ``success`` but the model's own arithmetic (``x @ A.T + b``, and
  ``A @ x + b``) does not put the answer strictly above every other class, or the answer
  leaves the box or moves a frozen feature, or its distance is below HiGHS's optimum by more
  than 1e-9 relative;
* false failures: ``success=False`` while HiGHS finds the program feasible with the margin
  raised by 1e-9 (1 + margin + the largest |z̄_t − z̄_j|) (robustly feasible);
* borderline failures: ``success=False`` while HiGHS finds the margin itself feasible but not
  the raised one (listed, not counted as false);
* suboptimal answers: distance above HiGHS's by more than 1e-6 relative (listed);
* exceptions and warnings raised by fastcf.

Usage: ``python docs/scripts/soak_manhattan_region.py [N] [SEED]`` (default 10000, 0).
"""

import sys
import time
import warnings
from fractions import Fraction

import numpy as np
from scipy.optimize import linprog

import fastcf

MARGINS = (0.0, 1e-6, 0.3, 2.0)
FAMILIES = ("plain", "rounded", "tiny", "tiny_rows", "near_dup", "zero_rows", "issue")


def _tiny(rng, shape):
    """Entries of magnitude 10^U(−14, −9), random signs."""
    return rng.choice([-1.0, 1.0], shape) * 10.0 ** rng.uniform(-14, -9, shape)


def make_case(rng):
    """One random query: (family, A, b, x0, target, margin, weights, frozen, bounds)."""
    fam = FAMILIES[rng.integers(len(FAMILIES))]
    K = int(rng.integers(2, 7))
    D = int(rng.integers(1, 7))
    A = rng.normal(size=(K, D))
    b = rng.normal(size=K) * rng.choice([0.0, 1.0])
    if fam == "rounded":  # ties and zero entries
        A, b = np.round(A, 1), np.round(b, 1)
    elif fam == "tiny":  # tiny coefficients beside O(1) ones
        mask = rng.random((K, D)) < 0.4
        A[mask] = _tiny(rng, mask.sum())
    elif fam == "tiny_rows":  # whole rows (or their differences to another) tiny
        for j in range(K):
            if rng.random() < 0.4:
                A[j] = _tiny(rng, D) if rng.random() < 0.5 else A[0] + _tiny(rng, D)
    elif fam == "near_dup":  # rows equal up to 1e-14…1e-8
        for j in range(1, K):
            if rng.random() < 0.6:
                i = int(rng.integers(j))
                A[j] = A[i] + rng.normal(size=D) * 10.0 ** rng.uniform(-14, -8)
                b[j] = b[i] + rng.normal() * 10.0 ** rng.uniform(-14, -8) * rng.choice([0, 1])
    elif fam == "zero_rows":
        for j in range(K):
            if rng.random() < 0.35:
                A[j] = 0.0
        if D > 1 and rng.random() < 0.3:
            A[:, rng.integers(D)] = 0.0
    elif fam == "issue":  # the model: a class reached only through a tiny coefficient
        D = 2
        eps = 10.0 ** rng.uniform(-14, -9)
        A = np.array([[-1.0, 1.0], [0.0, 1.0], [eps, 0.0], [0.0, 0.0]])
        A = A * rng.uniform(0.5, 2.0, size=(4, 1))
        A = A[rng.permutation(4)]
        K = 4
        b = np.zeros(K)
    x0 = rng.normal(size=D) * rng.choice([0.0, 1.0, 10.0])
    target = int(rng.integers(K))
    if fam == "issue":
        target = int(np.flatnonzero(~A.any(axis=1))[0])  # the zero row
    margin = float(MARGINS[rng.integers(len(MARGINS))])
    weights = np.ones(D)
    if rng.random() < 0.5:
        weights = 10.0 ** rng.uniform(-2, 2, D)
    frozen = []
    if D > 1 and rng.random() < 0.3:
        frozen = [int(i) for i in np.flatnonzero(rng.random(D) < 0.3)][: D - 1]
    bounds = None
    if rng.random() < 0.5:
        rooms = np.array([0.0, 0.5, 2.0, 1e3, 1e9, np.inf])
        lo = x0 - rng.choice(rooms, D)
        hi = x0 + rng.choice(rooms, D)
        bounds = (lo, hi)
    return fam, A, b, x0, target, margin, weights, frozen, bounds


def _exact_gaps(A, b, x0, t, others):
    """z̄_t − z̄_j (j in ``others``) in exact rational arithmetic, rounded once.

    From NumPy's logits the gaps of near-duplicate rows (1e-10 apart) carry the rounding of
    logits of order 1: a relative error of 1e-6 in the right-hand side, in the reference.
    """
    xs = [Fraction(float(v)) for v in x0]
    zt = sum((Fraction(float(a)) * v for a, v in zip(A[t], xs, strict=True)), Fraction(b[t]))
    out = np.empty(len(others))
    for n, j in enumerate(others):
        zj = sum((Fraction(float(a)) * v for a, v in zip(A[j], xs, strict=True)), Fraction(b[j]))
        out[n] = float(zt - zj)
    return out


def reference(A, b, x0, t, margin, w, frozen, bounds):
    """The LP by HiGHS: (feasible, optimum, x); None where it does not answer."""
    K, D = A.shape
    free = np.ones(D, dtype=bool)
    free[frozen] = False
    idx = np.flatnonzero(free)
    others = np.array([j for j in range(K) if j != t])
    G = (A[t] - A[others])[:, idx] / w[idx]  # per unit of cost
    r = margin - _exact_gaps(A, b, x0, t, others)
    g = np.abs(G).max(axis=1, initial=0.0)
    if np.any((g == 0.0) & (r > 0.0)):
        return False, np.inf, None
    keep = g > 0.0
    G, r = G[keep] / g[keep, None], r[keep] / g[keep]
    sigma = float(np.max(r, initial=0.0))
    if sigma <= 0.0:
        return True, 0.0, x0.copy()
    if not np.isfinite(sigma):
        return None
    r = r / sigma
    if bounds is None:
        up = down = np.full(idx.size, np.inf)
    else:
        lo, hi = bounds
        up = (hi[idx] - x0[idx]) * w[idx] / sigma
        down = (x0[idx] - lo[idx]) * w[idx] / sigma
    n = idx.size
    res = linprog(
        np.ones(2 * n), A_ub=-np.hstack([G, -G]), b_ub=-r,
        bounds=np.column_stack([np.zeros(2 * n), np.concatenate([up, down])]),
        method="highs-ds",
        options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
    )  # fmt: skip
    if res.status == 2:
        return False, np.inf, None
    if res.status != 0:
        return None
    x = x0.copy()
    x[idx] += sigma * (res.x[:n] - res.x[n:]) / w[idx]
    return True, sigma * res.fun, x


def in_class(A, b, x, t):
    """Whether the model's own arithmetic (``x @ A.T + b`` and ``A @ x + b``) puts x in t."""
    for z in ((x[None] @ A.T + b)[0], A @ x + b):
        if not (np.isfinite(z).all() and z[t] > np.delete(z, t).max()):
            return False
    return True


def meets_exactly(A, b, x, t, margin):
    """Whether x meets z_t − z_j ≥ margin (1 − 1e-9) for every j ≠ t, in exact arithmetic."""
    others = np.array([j for j in range(A.shape[0]) if j != t])
    return bool(np.all(_exact_gaps(A, b, x, t, others) >= margin * (1 - 1e-9)))


def check(case, res):
    """The model's own verdict on fastcf's answer: a list of what is wrong with it."""
    _fam, A, b, x0, t, _margin, _w, frozen, bounds = case
    x = res.x
    bad = []
    for name, z in (("x@A.T+b", (x[None] @ A.T + b)[0]), ("A@x+b", A @ x + b)):
        if not (np.isfinite(z).all() and z[t] > np.delete(z, t).max()):
            bad.append(f"not the target by {name}")
    if frozen and not np.array_equal(x[frozen], x0[frozen]):
        bad.append("frozen moved")
    if bounds is not None and not (np.all(x >= bounds[0]) and np.all(x <= bounds[1])):
        bad.append("outside the box")
    return bad


def main(N=10000, seed=0):
    rng = np.random.default_rng(seed)
    counts = dict.fromkeys(
        ("run", "success", "ref_feasible", "ref_none", "false_success", "false_failure",
         "borderline_failure", "unverifiable_failure", "highs_beaten", "suboptimal",
         "answered_by_highs", "exception", "warning"), 0,
    )  # fmt: skip
    by_family = {f: [0, 0, 0] for f in FAMILIES}  # queries, false successes, false failures
    examples = []
    t_fastcf = t_ref = 0.0
    t0 = time.perf_counter()
    for q in range(N):
        case = make_case(rng)
        fam, A, b, x0, t, margin, w, frozen, bounds = case
        counts["run"] += 1
        tag = f"K={A.shape[0]} m={margin}"
        by_family[fam][0] += 1
        ex = fastcf.LinearExplainer.from_arrays(A, b)
        kw = dict(region=True, metric="manhattan", margin=margin, weights=w)
        if frozen:
            kw["frozen"] = frozen
        if bounds is not None:
            kw["bounds"] = bounds
        s = time.perf_counter()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                res = ex.explain(x0, t, **kw)
        except Exception as e:  # noqa: BLE001 (a soak counts them)
            counts["exception"] += 1
            examples.append((q, fam, tag, "exception", repr(e)))
            continue
        t_fastcf += time.perf_counter() - s
        if caught:
            counts["warning"] += 1
            examples.append((q, fam, tag, "warning", str(caught[0].message)[:120]))
        s = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = reference(A, b, x0, t, margin, w, frozen, bounds)
            others = np.array([j for j in range(A.shape[0]) if j != t])
            spread = float(np.max(np.abs(_exact_gaps(A, b, x0, t, others)), initial=0.0))
            raised = margin + 1e-9 * (1.0 + margin + spread)
            ref_up = None if res.success else reference(A, b, x0, t, raised, w, frozen, bounds)
        t_ref += time.perf_counter() - s
        counts["answered_by_highs"] += bool(np.any(res.info.get("highs", False)))
        if ref is None:
            counts["ref_none"] += 1
            continue
        feasible, opt, _xr = ref
        counts["ref_feasible"] += feasible
        if res.success:
            counts["success"] += 1
            bad = check(case, res)
            below = feasible and res.distance < opt * (1 - 1e-9) - 1e-300
            if below and not meets_exactly(A, b, res.x, t, margin):
                bad.append(f"distance {res.distance!r} below HiGHS's {opt!r}")
            elif below:  # a point of the class cheaper than HiGHS's optimum: HiGHS's error
                counts["highs_beaten"] += 1
                examples.append((q, fam, tag, "HiGHS beaten", f"{res.distance!r} vs {opt!r}"))
            if bad:
                counts["false_success"] += 1
                by_family[fam][1] += 1
                examples.append((q, fam, tag, "false success", "; ".join(bad)))
            elif feasible and res.distance > opt * (1 + 1e-6) + 1e-12:
                counts["suboptimal"] += 1
                examples.append((q, fam, tag, "suboptimal", f"{res.distance!r} vs {opt!r}"))
        elif ref_up is not None and ref_up[0] and not in_class(A, b, ref_up[2], t):
            # HiGHS's point is not in the class either in floating point (logits of 1e15)
            counts["unverifiable_failure"] += 1
            examples.append((q, fam, tag, "unverifiable failure", f"status {res.status}"))
        elif ref_up is not None and ref_up[0]:
            counts["false_failure"] += 1
            by_family[fam][2] += 1
            examples.append((q, fam, tag, "false failure", f"status {res.status}, HiGHS {opt!r}"))
        elif feasible:
            counts["borderline_failure"] += 1
            examples.append((q, fam, tag, "borderline failure", f"status {res.status}"))
    total = time.perf_counter() - t0
    print(f"seed {seed}: {counts['run']} queries in {total:.1f} s "
          f"(fastcf {t_fastcf:.1f} s, HiGHS reference {t_ref:.1f} s)")  # fmt: skip
    for k, v in counts.items():
        print(f"  {k:20s} {v}")
    print("  per family (queries, false successes, false failures):")
    for f, v in by_family.items():
        print(f"    {f:10s} {v}")
    # every false success and failure; the first 10 of each other kind
    shown = {}
    for e in examples:
        kind = e[3]
        shown[kind] = shown.get(kind, 0) + 1
        if kind in ("false success", "false failure", "exception") or shown[kind] <= 10:
            print("  ", *e)
    return counts


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    main(*args)
