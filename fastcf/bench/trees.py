"""Benchmark rows of the tree family: TreeExplainer against the plain interval program.

The baseline is the full interval program of the same query (one binary per threshold interval
and per leaf) on the same HiGHS, without fastcf's incumbent, reductions, branch and bound or
cutoff (``TreeExplainer._milp(..., plain=True)``, the baseline of
``asv_bench/benchmarks/bench_trees.py``). A small problem, so that the rows take seconds: a
random forest on rows of ``make_classification``, seeded queries each asked for the other
class, 1/MAD weights, Manhattan. Per query, in the same process, timed alternately query by
query (:func:`fastcf.bench.common.alternate`):

* ``exact`` — ``explain`` (the certified optimum);
* ``plain`` — the baseline, stopped at a time limit (``PLAIN_LIMIT`` seconds) so that it cannot
  hang; a stopped query counts at the time it took, so the speed-up is then a lower bound
  (printed "≥") and its answer is not compared;
* ``exact=False`` — the quick search alone, with its certified lower bound.

Each row's accuracy column says whether the exact and the plain distances agree where the plain
program finished, and how far the ``exact=False`` answers are above the optimum.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from .common import alternate, per_query, row

__all__ = ["tree_rows", "tree_problem", "plain_answer", "PLAIN_LIMIT"]

#: seconds the plain program may take per query before HiGHS stops it
PLAIN_LIMIT = 5.0

_BASELINE = "plain interval program (same HiGHS, no incumbent/reductions/cutoff)"


def tree_problem(n_rows=5000, n_trees=30, depth=4, n_queries=5, seed=0):
    """Return (model, explainer, queries, targets): a random forest and its seeded queries.

    Parameters
    ----------
    n_rows : int, default=5000
        Rows of ``make_classification`` (10 features, 6 informative, 5% label noise).
    n_trees, depth : int, default=30, 4
        The ``RandomForestClassifier``'s ``n_estimators`` and ``max_depth``.
    n_queries : int, default=5
        Training rows drawn with ``seed``, each asked for the class the model does not give it.
    seed : int, default=0

    Returns
    -------
    model : RandomForestClassifier
    ex : TreeExplainer
        With ``fit_mad`` on the rows (``weights="mad"``).
    Q : ndarray of shape (n_queries, 10)
    T : ndarray of shape (n_queries,)

    Examples
    --------
    >>> from fastcf.bench.trees import tree_problem
    >>> model, ex, Q, T = tree_problem(n_rows=300, n_trees=3, depth=2, n_queries=2)
    >>> Q.shape, bool((model.predict(Q) != T).all())
    ((2, 10), True)
    """
    from sklearn.datasets import make_classification
    from sklearn.ensemble import RandomForestClassifier

    from ..trees import TreeExplainer

    X, y = make_classification(
        n_samples=n_rows, n_features=10, n_informative=6, n_redundant=2, flip_y=0.05,
        class_sep=0.8, random_state=seed,
    )  # fmt: skip
    model = RandomForestClassifier(
        n_estimators=n_trees, max_depth=depth, random_state=seed, n_jobs=1
    ).fit(X, y)
    ex = TreeExplainer(model).fit_mad(X)
    rng = np.random.default_rng(seed + 1)
    Q = X[rng.choice(n_rows, n_queries, replace=False)]
    T = 1 - model.predict(Q)
    return model, ex, Q, T


def plain_answer(ex, x, target, time_limit=PLAIN_LIMIT):
    """Answer one query with the plain interval program (the baseline).

    Parameters
    ----------
    ex : TreeExplainer
        An explainer of an ensemble, with ``fit_mad`` called (1/MAD weights).
    x : ndarray of shape (D,)
    target : label
    time_limit : float, default=PLAIN_LIMIT
        Seconds before HiGHS stops the program.

    Returns
    -------
    distance : float
        The answer's distance (MAD-weighted Manhattan; inf without an answer).
    stopped : bool
        The program was stopped before it proved its answer optimal (status 1).

    Examples
    --------
    >>> from fastcf.bench.trees import plain_answer, tree_problem
    >>> model, ex, Q, T = tree_problem(n_rows=300, n_trees=3, depth=2, n_queries=1)
    >>> d, stopped = plain_answer(ex, Q[0], T[0])
    >>> bool(abs(d - ex.explain(Q[0], T[0], weights="mad").distance) <= 1e-9 * d), stopped
    (True, False)
    """
    X, _, names, tidx = ex._queries(x, target)
    q = ex._query(X, names, True, None, "manhattan", "mad", None, None, None)
    sol = ex._milp(X, tidx, q._replace(time_limit=time_limit), plain=True)
    return float(sol.distance[0]), bool(sol.status[0] != 0)


class _Last:
    """A callable that keeps what its last call returned (timed calls double as the answers)."""

    def __init__(self, fn):
        self.fn = fn
        self.value = None

    def __call__(self):
        self.value = self.fn()
        return self.value


def tree_rows(quick=False, n_queries=None, time_limit=PLAIN_LIMIT) -> list[dict]:
    """Time TreeExplainer's exact and quick answers against the plain interval program.

    Parameters
    ----------
    quick : bool, default=False
        3 queries and the plain program stopped at 3 s, instead of 5 queries and
        ``time_limit`` (a random forest of 30 trees of depth 4 on 5 000 rows either way).
    n_queries : int, optional
        Overrides the number of queries.
    time_limit : float, default=PLAIN_LIMIT
        Seconds of the plain program per query (3 with ``quick``).

    Returns
    -------
    list of dict
        Two rows of :func:`fastcf.bench.common.row` (``exact`` and ``exact=False``, each
        against the plain program's per-query times), plus ``baseline_stopped`` (how many plain
        programs hit the time limit: the speed-up is then a lower bound), ``n_agree`` (queries
        where the exact and the plain distances agree to 1e-9 relative, out of those whose
        plain program finished), ``d_exact``, ``d_plain``, ``d_quick`` (per query) and
        ``quick_valid`` (``exact=False`` answers the model confirms).

    Examples
    --------
    >>> from fastcf.bench.trees import tree_rows
    >>> rows = tree_rows(quick=True)  # doctest: +SKIP
    >>> rows[0]["n_agree"] == rows[0]["n_queries"] - rows[0]["baseline_stopped"]  # doctest: +SKIP
    True
    """
    n_trees, depth = 30, 4
    nq = (3 if quick else 5) if n_queries is None else n_queries
    time_limit = min(time_limit, 3.0) if quick else time_limit
    model, ex, Q, T = tree_problem(n_trees=n_trees, depth=depth, n_queries=nq)
    ex.explain(Q[0], T[0], weights="mad")  # kernels loaded, the program's HiGHS instance made
    exact = [_Last(partial(ex.explain, Q[i], T[i], weights="mad")) for i in range(nq)]
    plain = [_Last(partial(plain_answer, ex, Q[i], T[i], time_limit)) for i in range(nq)]
    fast, base = alternate([exact, plain], 3, [3, 1], warm="first")
    qcalls = [_Last(partial(ex.explain, Q[i], T[i], weights="mad", exact=False)) for i in range(nq)]
    quick_t = per_query(qcalls, 3)
    d_exact = np.array([f.value.distance for f in exact])
    d_plain = np.array([f.value[0] for f in plain])
    stopped = np.array([f.value[1] for f in plain])
    d_quick = np.array([f.value.distance for f in qcalls])
    valid = int(sum(bool(f.value.success) for f in qcalls))
    same = np.isclose(d_exact, d_plain, rtol=1e-9, atol=1e-12) & ~stopped
    n_agree = int(same.sum())
    gap = d_quick / np.where(d_exact > 0, d_exact, 1.0) - 1.0
    label = f"random forest {n_trees} trees depth {depth}, 5000 rows × 10"
    limit = f"plain stopped at {time_limit:g} s: {int(stopped.sum())}/{nq}"
    extra = {
        "baseline_stopped": int(stopped.sum()),
        "plain_limit_s": float(time_limit),
        "n_agree": n_agree,
        "d_exact": d_exact.tolist(),
        "d_plain": d_plain.tolist(),
        "d_quick": d_quick.tolist(),
        "quick_valid": valid,
    }
    rows = [
        row(
            f"trees exact, {label}",
            fast,
            base,
            _BASELINE,
            f"exact == plain distance on {n_agree}/{nq - int(stopped.sum())} finished",
            f"{limit}; 1/MAD Manhattan",
        ),
        row(
            f"trees exact=False, {label}",
            quick_t,
            base,
            _BASELINE,
            f"valid {valid}/{nq}, optimal {int((gap <= 1e-9).sum())}/{nq}, "
            f"max {100 * gap.max():.1f}% above the optimum",
            limit,
        ),
    ]
    for r in rows:
        r.update(extra)
    return rows
