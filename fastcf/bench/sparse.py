"""Benchmark rows of the few-change answers: Manhattan, ``max_changes=`` and ``enumerate``.

* binary ``metric="manhattan"`` (the fractional knapsack) against the Euclidean closed form on
  the same queries, at D = 784 and D = 131 072 (target: ≤ 2×);
* softmax ``metric="manhattan", region=True`` at (784, 10) against the same linear program
  rebuilt in cvxpy for every query (target: ≥ 100× faster);
* ``max_changes=`` and ``enumerate(k=5)`` on the breast-cancer pipeline (per query and per
  alternative). The comparison with DiCE needs DiCE's own environment:
  ``docs/scripts/dice_enumerate.py`` (table in ``docs/tables/dice_enumerate.md``).

Examples
--------
>>> from fastcf.bench.sparse import binary_problem
>>> ex, X, T = binary_problem(50, 4)
>>> X.shape, len(T)
((4, 50), 4)
"""

from __future__ import annotations

from functools import partial

import numpy as np

from .common import paired, per_query
from .common import row as _row

__all__ = ["sparse_rows", "binary_problem"]


def binary_problem(D, n, seed=0):
    """Return (explainer, X (n, D), targets): a random binary model, sources of the other class."""
    from ..linear import LinearExplainer

    rng = np.random.default_rng(seed)
    w = rng.standard_normal(D) / np.sqrt(D)
    ex = LinearExplainer.from_arrays(w[None], [0.0])
    X = rng.standard_normal((n, D))
    T = [int(ex.decision_function(x) <= 0) for x in X]
    return ex, X, T


def _binary_rows(D, n, rep):
    ex, X, T = binary_problem(D, n, seed=D)
    euc = [partial(ex.explain, X[i], T[i], region=True) for i in range(n)]
    man = [partial(ex.explain, X[i], T[i], region=True, metric="manhattan") for i in range(n)]
    tm, te = paired(man, euc, rep)
    ok = sum(bool(f().success) for f in man)
    rows = [
        _row(
            f"binary ({D}), one region=True query, Manhattan vs Euclidean, {n} queries",
            tm,
            te,
            "Euclidean closed form, same query",
            f"success {ok}/{n}",
            f"target ≤ 2×: {int(np.sum(tm / te <= 2))}/{n} within",
        )
    ]
    lo, hi = X - 1.0, X + 1.0  # a box that stops the best features: the knapsack walks
    manb = [
        partial(ex.explain, X[i], T[i], region=True, metric="manhattan", bounds=(lo[i], hi[i]))
        for i in range(n)
    ]
    tb = per_query(manb, rep)
    nch = [f().changed.size for f in manb]
    rows.append(
        _row(
            f"binary ({D}), Manhattan region=True with a box ±1, {n} queries",
            tb,
            note=f"changed features: median {np.median(nch):.0f}, max {max(nch)}",
        )
    )
    return rows


def _cvxpy_region_l1(A, b, x0, k, margin):
    """Solve the Manhattan region LP built in cvxpy from scratch (the per-query baseline)."""
    import cvxpy as cp

    x = cp.Variable(x0.shape[0])
    others = [j for j in range(A.shape[0]) if j != k]
    cons = [(A[k] - A[others]) @ x + (b[k] - b[others]) >= margin]
    prob = cp.Problem(cp.Minimize(cp.norm1(x - x0)), cons)
    prob.solve(solver=cp.HIGHS)
    return prob.value


def _softmax_rows(n, rep):
    from ..linear import LinearExplainer

    rng = np.random.default_rng(784)
    A = rng.standard_normal((10, 784)) / 28.0
    b = rng.standard_normal(10)
    ex = LinearExplainer.from_arrays(A, b)
    X = rng.standard_normal((n, 784))
    T = [int(np.argsort(A @ x + b)[-2]) for x in X]  # the runner-up class
    ours = [
        partial(ex.explain, X[i], T[i], region=True, metric="manhattan", margin=1e-6)
        for i in range(n)
    ]
    theirs = [partial(_cvxpy_region_l1, A, b, X[i], T[i], 1e-6) for i in range(n)]
    # each side in a block per query: HiGHS's worker threads spin after a solve, and on two
    # cores they slowed the fastcf call that followed each cvxpy call about 3× (600 µs against
    # 180 µs in a block, measured in one process)
    tf, tb = paired(ours, theirs, rep, 1, block=True)
    gaps = [abs(ours[i]().distance - theirs[i]()) / theirs[i]() for i in range(n)]
    nch = [ours[i]().changed.size for i in range(n)]
    return [
        _row(
            f"softmax (784, 10), Manhattan region=True, {n} queries",
            tf,
            tb,
            "cvxpy LP (HiGHS) rebuilt per query",
            f"max relative gap {max(gaps):.1e}",
            f"changed features: median {np.median(nch):.0f} (≤ K − 1 = 9)",
        )
    ]


def _cancer_rows(n, rep):
    from ..linear import LinearExplainer
    from .linear import fitted_model

    model, X, _ = fitted_model("cancer")
    ex = LinearExplainer(model).fit_mad(X)
    rows_ = np.flatnonzero(model.predict(X) == 0)[:n]
    box = dict(region=True, weights="mad", bounds=(X.min(0), X.max(0)))
    out = []
    enum = [partial(ex.enumerate, X[i], 1, k=5, metric="manhattan", **box) for i in rows_]
    t = per_query(enum, rep)
    n_alt = np.array([len(f()) for f in enum])
    out.append(
        _row(
            f"breast cancer (30): enumerate(k=5), Manhattan, MAD, box; {len(rows_)} queries",
            t,
            note=f"alternatives per query {n_alt.min()}–{n_alt.max()}; per alternative "
            f"{1e6 * np.median(t / np.maximum(n_alt, 1)):.0f} µs (DiCE: "
            "docs/tables/dice_enumerate.md)",
        )
    )
    for m in (2, 3):
        calls = [partial(ex.explain, X[i], 1, max_changes=m, **box) for i in rows_]
        t = per_query(calls, rep)
        nodes = [f().info["nodes"] for f in calls]
        ok = sum(bool(f().success) for f in calls)
        out.append(
            _row(
                f"breast cancer (30): Euclidean, MAD, box, max_changes={m}; {len(rows_)} queries",
                t,
                note=f"success {ok}/{len(rows_)} (the rest provably need more changes); "
                f"branch-and-bound nodes median {np.median(nodes):.0f}, max {max(nodes)}",
            )
        )
    return out


def sparse_rows(quick=False):
    """Return the benchmark rows of the few-change answers (see the module docstring).

    Parameters
    ----------
    quick : bool, default=False
        Fewer queries and repeats.

    Returns
    -------
    list of dict
    """
    rep = 5 if quick else 15
    n = 10 if quick else 50
    rows = []
    for D in (784, 131_072):
        rows += _binary_rows(D, n if D < 10_000 else max(10, n // 5), rep)
    rows += _softmax_rows(5 if quick else 20, 3)
    rows += _cancer_rows(10 if quick else 40, 3 if quick else 7)
    return rows
