"""Benchmark rows of the LVQ family (paper 001): fastcf's paths against rebuilding cvxpy programs.

The baseline is what the paper's reference code does: build and solve one cvxpy program (in x)
per query and target prototype (:func:`rebuild_and_solve`). It is timed in the same process, on
the same problems, as fastcf's exact dual QP (``method="ldp"``), its parameterised programs
compiled once and re-solved with Clarabel (``method="cvxpy"``), and the same parameterised
programs re-solved through cvxpy's ``Problem.solve``; the penalty CCP for LGMLVQ has no baseline.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from .common import alternate, per_query, row, timeit

__all__ = ["lvq_rows", "problem_solve", "rebuild_and_solve"]


def rebuild_and_solve(ex, x0, target, *, metric="euclidean", margin=1e-6, solver="CLARABEL"):
    """Solve one query by building the x-space cvxpy programs from scratch (the baseline).

    One new program per target prototype, as the paper's reference code does; GLVQ/GMLVQ only.

    Parameters
    ----------
    ex : fastcf.lvq.LVQExplainer
        An explainer of a model with a shared metric.
    x0 : ndarray of shape (D,)
    target : label
        The target class, as in ``ex.classes_``.
    metric : {"euclidean", "manhattan"}, default="euclidean"
    margin : float, default=1e-6
        Margin ε of eq. 9b.
    solver : str, default="CLARABEL"
        cvxpy solver name.

    Returns
    -------
    float
        The best distance (inf when every program is infeasible).

    Examples
    --------
    >>> import numpy as np
    >>> from fastcf import LVQExplainer
    >>> from fastcf.bench.lvq import rebuild_and_solve
    >>> ex = LVQExplainer.from_arrays([[0.0, 0.0], [2.0, 0.0]], [0, 1])
    >>> round(rebuild_and_solve(ex, np.zeros(2), 1), 5)
    1.0
    """
    import cvxpy as cp

    geo = ex._geo
    if geo.kind == "local":
        raise ValueError("rebuild_and_solve needs a shared metric (GLVQ/GMLVQ)")
    tidx = int(np.flatnonzero(ex.classes_ == target)[0])
    best = np.inf
    for i in np.flatnonzero(geo.cls == tidx):
        x = cp.Variable(ex.n_features_in_)
        others = np.flatnonzero(geo.valid[i])
        obj = cp.sum_squares(x - x0) if metric == "euclidean" else cp.norm1(x - x0)
        prob = cp.Problem(cp.Minimize(obj), [geo.A[i, others] @ x <= geo.b[i, others] - margin])
        prob.solve(solver=solver)
        if prob.status in cp.settings.SOLUTION_PRESENT:
            v = float(prob.value)
            best = min(best, float(np.sqrt(max(v, 0.0))) if metric == "euclidean" else v)
    return best


def problem_solve(ex, X, targets, metric="euclidean"):
    """Explain with the parameterised cvxpy programs re-solved by ``Problem.solve`` (uncompiled).

    The same programs as ``ex.explain(..., method="cvxpy")``, without the compiled Clarabel
    re-solve: shows what compiling once saves.

    Parameters
    ----------
    ex : fastcf.lvq.LVQExplainer
        An explainer of a model with a shared metric.
    X : array-like of shape (N, D)
    targets : label or array-like of N labels
    metric : {"euclidean", "manhattan"}, default="euclidean"

    Returns
    -------
    ndarray of shape (N,)
        The distances (inf where infeasible).
    """
    from .._lvq.options import resolve_options
    from .._lvq.programs import solve_cvxpy
    from .._validation import resolve_targets

    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    tidx = resolve_targets(targets, ex.classes_, X.shape[0])
    opts = resolve_options(X, ex.n_features_in_, metric, None, None, None, None, 1e-6, None, None)
    sol = solve_cvxpy(ex._cache, ex._geo, X, tidx, metric, opts, None, compiled=False)
    return sol.distance


def _data():
    from sklearn.datasets import load_breast_cancer
    from sklearn.decomposition import PCA
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    return make_pipeline(StandardScaler(), PCA(5, random_state=0)).fit_transform(X), y


def _gap(d, base):
    return float(np.max(np.abs(d - base) / base))


def lvq_rows(quick=False) -> list[dict]:
    """Side-by-side timings of the LVQ counterfactual paths, measured in this process.

    Breast cancer, 5 PCA components, 3 prototypes per class: the exact dual QP vs building +
    solving the cvxpy program per query; the ``cp.Parameter`` programs (compiled once,
    re-solved with Clarabel) vs rebuilding; the same programs re-solved by cvxpy's
    ``Problem.solve`` vs rebuilding; penalty-CCP latency for LGMLVQ (no baseline). Each query (a
    row of the data set, the other class as target) is one call, timed alternately with the
    baseline on the same query; one more row gives the exact dual QP's time per counterfactual in
    a batch of all the queries.

    Parameters
    ----------
    quick : bool, default=False
        Fewer queries and repeats.

    Returns
    -------
    list of dict
        Rows of :func:`fastcf.bench.common.row`: seconds per counterfactual over the queries
        (median, p95) of fastcf and of the baseline, their ratios, and the largest relative
        distance gap to the baseline (``accuracy``).
    """
    from ..lvq import LVQExplainer
    from ..lvq_models import GLVQ, GMLVQ, LGMLVQ

    Z, y = _data()
    nq = 5 if quick else 30
    rep = 3 if quick else 7
    Q = Z[:nq]
    rows = []
    for Model in (GLVQ, GMLVQ):
        m = Model(prototypes_per_class=3, random_state=0, max_iter=200).fit(Z, y)
        ex = LVQExplainer(m)
        pred = m.predict(Q)
        tg = np.where(pred == m.classes_[0], m.classes_[1], m.classes_[0])
        base = np.array([rebuild_and_solve(ex, Q[k], tg[k]) for k in range(nq)])
        rebuild = [partial(rebuild_and_solve, ex, Q[k], tg[k]) for k in range(nq)]
        name = Model.__name__
        candidates = (
            ("ldp (exact dual QP)", lambda k, ex=ex, t=tg: ex.explain(Q[k], t[k], method="ldp")),
            ("cvxpy, compiled once", lambda k, ex=ex, t=tg: ex.explain(Q[k], t[k], method="cvxpy")),
            (
                "cp.Parameter + Problem.solve",
                lambda k, ex=ex, t=tg: problem_solve(ex, Q[k : k + 1], t[k : k + 1]),
            ),
        )
        fns = [[partial(call, k) for k in range(nq)] for _, call in candidates]
        *times, slow = alternate([*fns, rebuild], rep)
        for (label, call), fast in zip(candidates, times, strict=True):
            res = [call(k) for k in range(nq)]
            d = np.array([np.ravel(r.distance if hasattr(r, "distance") else r)[0] for r in res])
            rows.append(
                row(
                    f"lvq {name} {label} vs cvxpy rebuild",
                    fast,
                    slow,
                    "cvxpy rebuild",
                    _gap(d, base),
                )
            )
            if label.startswith("ldp"):
                t = timeit(lambda ex=ex, t=tg: ex.explain(Q, t, method="ldp"), rep)
                rows.append(
                    row(
                        f"lvq {name} ldp, batch of {nq} queries (per counterfactual) "
                        "vs cvxpy rebuild",
                        tuple(v / nq for v in t),
                        slow,
                        "cvxpy rebuild",
                        _gap(ex.explain(Q, tg, method="ldp").distance, base),
                        "one problem (the batch): median over repeated calls",
                    )
                )
    m = LGMLVQ(prototypes_per_class=3, random_state=0, max_iter=200).fit(Z, y)
    ex = LVQExplainer(m)
    pred = m.predict(Q)
    tg = np.where(pred == m.classes_[0], m.classes_[1], m.classes_[0])
    res = ex.explain(Q, tg, metric="manhattan")
    t = per_query(
        [partial(ex.explain, Q[k], tg[k], metric="manhattan") for k in range(nq)],
        1 if quick else 3,
    )
    rows.append(
        row(
            "lvq LGMLVQ penalty CCP latency (Manhattan)",
            t,
            note=f"{int(res.success.sum())}/{nq} classified as target, {res.nit.mean():.1f} rounds",
        )
    )
    return rows
