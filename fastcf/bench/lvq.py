"""Benchmark rows of the LVQ family (paper 001): fastcf's paths against rebuilding cvxpy programs.

The baseline is what the paper's reference code does: build and solve one cvxpy program (in x)
per query and target prototype (:func:`rebuild_and_solve`). It is timed in the same process, on
the same problems, as fastcf's exact dual QP (``method="ldp"``), its parameterised programs
compiled once and re-solved with Clarabel (``method="cvxpy"``), and the same parameterised
programs re-solved through cvxpy's ``Problem.solve``; the penalty CCP for LGMLVQ has no baseline.
"""

from __future__ import annotations

import numpy as np

from .common import row, timeit

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
    ``Problem.solve`` vs rebuilding; penalty-CCP latency for LGMLVQ (no baseline).

    Parameters
    ----------
    quick : bool, default=False
        Fewer queries and repeats.

    Returns
    -------
    list of dict
        Rows of :func:`fastcf.bench.common.row`: seconds per counterfactual (median, min, max)
        of fastcf and of the baseline, their ratio, and the largest relative distance gap to
        the baseline (``accuracy``).
    """
    from ..lvq import LVQExplainer
    from ..lvq_models import GLVQ, GMLVQ, LGMLVQ

    Z, y = _data()
    nq = 5 if quick else 30
    rep = 3 if quick else 7
    Q = Z[:nq]

    def per_query(t):
        return tuple(v / nq for v in t)

    rows = []
    for Model in (GLVQ, GMLVQ):
        m = Model(prototypes_per_class=3, random_state=0, max_iter=200).fit(Z, y)
        ex = LVQExplainer(m)
        pred = m.predict(Q)
        tg = np.where(pred == m.classes_[0], m.classes_[1], m.classes_[0])
        base = np.array([rebuild_and_solve(ex, Q[k], tg[k]) for k in range(nq)])
        t_base = per_query(
            timeit(lambda ex=ex, t=tg: [rebuild_and_solve(ex, Q[k], t[k]) for k in range(nq)], rep)
        )
        name = Model.__name__
        for label, method in (("ldp (exact dual QP)", "ldp"), ("cvxpy, compiled once", "cvxpy")):
            d = ex.explain(Q, tg, method=method).distance
            t = per_query(timeit(lambda ex=ex, t=tg, mt=method: ex.explain(Q, t, method=mt), rep))
            rows.append(
                row(
                    f"lvq {name} {label} vs cvxpy rebuild",
                    t,
                    t_base,
                    "cvxpy rebuild",
                    _gap(d, base),
                )
            )
        d = problem_solve(ex, Q, tg)
        t = per_query(timeit(lambda ex=ex, t=tg: problem_solve(ex, Q, t), rep))
        rows.append(
            row(
                f"lvq {name} cp.Parameter + Problem.solve vs cvxpy rebuild",
                t,
                t_base,
                "cvxpy rebuild",
                _gap(d, base),
            )
        )
    m = LGMLVQ(prototypes_per_class=3, random_state=0, max_iter=200).fit(Z, y)
    ex = LVQExplainer(m)
    pred = m.predict(Q)
    tg = np.where(pred == m.classes_[0], m.classes_[1], m.classes_[0])
    res = ex.explain(Q, tg, metric="manhattan")
    t = per_query(timeit(lambda: ex.explain(Q, tg, metric="manhattan"), 1 if quick else 3))
    rows.append(
        row(
            "lvq LGMLVQ penalty CCP latency (Manhattan)",
            t,
            note=f"{int(res.success.sum())}/{nq} classified as target, {res.nit.mean():.1f} rounds",
        )
    )
    return rows
