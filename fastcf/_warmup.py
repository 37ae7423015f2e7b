"""``python -m fastcf warmup``: compile every kernel once and fill Numba's on-disk cache.

fastcf's kernels are compiled by Numba on their first call and cached on disk (``cache=True``,
next to the sources or under ``NUMBA_CACHE_DIR``). A process that starts with a filled cache loads
them in well under a second; one that starts with an empty cache (a new container, a serverless
function, the first call after ``pip install``) compiles them on their first call, which takes
seconds per family (fastcf's default; tiered execution, ``FASTCF_TIERED=1``, runs them as Python
meanwhile, with costs of its own: :mod:`fastcf._kernels._tier`). This module runs one tiny query
through every code path of every family (single and batch queries, each form, with and without
bounds; for trees, exact and ``exact=False`` ensemble queries), so that a container image can
run ``python -m fastcf warmup`` once at build time and every process started from it finds the
kernels compiled.

Only the public API is called: whatever kernels a query uses are the ones that get compiled.
:class:`~fastcf.TabularExplainer` has no family here because it runs no kernel of its own: a
linear pipeline's queries none at all (its programs are NumPy and HiGHS), a tree pipeline's
those of ``"trees"`` (``tests/test_packaging.py`` checks that nothing else compiles).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

__all__ = ["warmup", "FAMILIES"]

FAMILIES = ("logistic", "softmax", "lvq", "svm", "trees", "gradcheck")


def _logistic():
    from .linear import LinearExplainer

    ex = LinearExplainer.from_arrays(np.array([[1.0, -2.0, 0.5]]), np.array([0.1]))
    x = np.array([-1.0, 1.0, 0.0])
    X = np.stack([x, 2 * x, x - 1])
    box = (np.full(3, -5.0), np.full(3, 5.0))
    for opts in ({}, {"bounds": box}, {"weights": np.array([1.0, 2.0, 3.0]), "frozen": [2]}):
        for form in ({"lam": 0.1}, {"proba": 0.8}, {"region": True}):
            ex.explain(x, 1, **form, **opts)
            ex.explain(X, 1, **form, **opts)
            ex.explain(x, 1, **form, **opts, metric="manhattan")
            ex.explain(X, 1, **form, **opts, metric="manhattan")
        ex.enumerate(x, 1, k=2, region=True, metric="manhattan", **opts)  # its Lawler kernel
    ex.path(x, 1, np.logspace(1, -2, 5))


def _softmax():
    from .linear import LinearExplainer

    rng = np.random.default_rng(0)
    ex = LinearExplainer.from_arrays(rng.normal(size=(3, 4)), rng.normal(size=3))
    x = rng.normal(size=4)
    X = rng.normal(size=(3, 4))
    box = (np.full(4, -10.0), np.full(4, 10.0))
    for opts in ({}, {"bounds": box}, {"weights": np.array([1.0, 2.0, 3.0, 4.0]), "frozen": [3]}):
        for form in ({"lam": 0.1}, {"proba": 0.8}, {"region": True}):
            ex.explain(x, 2, **form, **opts)
            ex.explain(X, 2, **form, **opts)
            ex.explain(x, 2, **form, **opts, metric="manhattan")
            ex.explain(X, 2, **form, **opts, metric="manhattan")
    ex.path(x, 2, np.logspace(1, -2, 5))
    ex.path(x, 2, np.logspace(1, -2, 5), bounds=box)
    # one query large enough (D·K ≥ 2¹⁸) for the BLAS mode (rows.row_mode): its products run on
    # BLAS and its K-space parts on kernels of their own, compiled for such queries only
    D = 1 << 16
    wide = LinearExplainer.from_arrays(rng.normal(size=(4, D)) / 256.0, rng.normal(size=4))
    xw = rng.normal(size=D)
    for form in ({"lam": 0.1}, {"proba": 0.8}, {"region": True}):
        wide.explain(xw, 3, **form)
    wide.path(xw, 3, np.logspace(1, -2, 3))


def _lvq():
    from .lvq import LVQExplainer
    from .lvq_models import GLVQ, GMLVQ, LGMLVQ

    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0.0, 1.0, (10, 3)), rng.normal(3.0, 1.0, (10, 3))])
    y = np.repeat([0, 1], 10)
    for cls in (GLVQ, GMLVQ, LGMLVQ):
        ex = LVQExplainer(cls(max_iter=5, random_state=0).fit(X, y))
        for metric in ("euclidean", "manhattan"):
            ex.explain(X[0], 1, metric=metric)
            ex.explain(X[:2], 1, metric=metric)


def _svm():
    from .svm_enum import enumerate_svms

    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2))
    y = (X[:, 0] > 0).astype(int)
    for kernel in ("linear", "rbf"):
        enumerate_svms(X, y, k=3, kernel=kernel)


def _trees():
    # an ensemble's query runs the incumbent search (its single-move table,
    # fastcf._kernels.tree_moves, and its beam's rounds, tree_beam), the reductions
    # (fastcf._kernels.tree_reduce), the branch and bound's node loop and steps (tree_search,
    # tree_branch) and the leaf walk and sums (tree_walk);
    # exact and exact=False, with and without options, binary and multiclass (each has the same
    # argument types, so one specialisation per kernel; the queries check that nothing else
    # compiles)
    from sklearn.ensemble import RandomForestClassifier

    from .trees import TreeExplainer

    # (a forest this size has queries the reductions leave to the branch and bound: with 3
    # trees of depth 3 on 60 rows none reached it, and its loop compiled at a user's query)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3))
    for y in ((X[:, 0] + X[:, 1] > 0).astype(int), np.digitize(X[:, 0], [-0.5, 0.5])):
        rf = RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0).fit(X, y)
        ex = TreeExplainer(rf).fit_mad(X)
        t = (y[0] + 1) % (y.max() + 1)
        for opts in ({}, {"weights": "mad", "max_changes": 2, "bounds": (-3.0, 3.0)}):
            ex.explain(X[0], t, **opts)
            ex.explain(X[:2], t, **opts)
            ex.explain(X[0], t, exact=False, **opts)


def _gradcheck():
    from .gradcheck import check_gradient

    check_gradient(lambda x: (float(x @ x), 2 * x), np.array([0.3, -0.2]))


_RUNNERS = {
    "logistic": _logistic,
    "softmax": _softmax,
    "lvq": _lvq,
    "svm": _svm,
    "trees": _trees,
    "gradcheck": _gradcheck,
}


def warmup(families=None, verbose: bool = False) -> dict:
    """Compile (or load from the cache) every kernel of the given families.

    Parameters
    ----------
    families : sequence of str, optional
        Some of ``"logistic"``, ``"softmax"``, ``"lvq"``, ``"svm"``, ``"trees"``,
        ``"gradcheck"``; all by default.
    verbose : bool, default=False
        Print one line per family.

    Returns
    -------
    dict
        Seconds spent per family (compiling on an empty cache, loading on a filled one).

    Examples
    --------
    >>> from fastcf._warmup import warmup
    >>> sorted(warmup(["gradcheck"]))
    ['gradcheck']
    """
    families = FAMILIES if families is None else tuple(families)
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        raise ValueError(f"families must be among {FAMILIES}; got {unknown}")
    from ._kernels._tier import compile_first

    times = {}
    with warnings.catch_warnings(), compile_first():
        # tiny fits on toy data warn (convergence); that is not what is being warmed up
        warnings.simplefilter("ignore")
        for name in families:
            t0 = time.perf_counter()
            _RUNNERS[name]()
            times[name] = time.perf_counter() - t0
            if verbose:
                print(f"  {name:<10} {times[name]:7.2f} s", flush=True)
    return times
