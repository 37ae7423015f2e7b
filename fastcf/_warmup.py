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

__all__ = ["warmup", "warmup_processes", "FAMILIES"]

FAMILIES = ("logistic", "softmax", "lvq", "svm", "trees", "net", "gradcheck")
#: the families, costliest to compile first (wall seconds in a process of their own on an empty
#: cache, 2 cores, 2026-11-29: softmax 102, logistic 30, lvq 21, trees 18, svm 11): the order
#: :func:`warmup_processes` starts them in, so that the last to finish is a short one
_BY_COST = ("softmax", "logistic", "lvq", "trees", "svm", "net", "gradcheck")


def _logistic(metrics=("euclidean", "manhattan")):
    from .linear import LinearExplainer

    ex = LinearExplainer.from_arrays(np.array([[1.0, -2.0, 0.5]]), np.array([0.1]))
    x = np.array([-1.0, 1.0, 0.0])
    X = np.stack([x, 2 * x, x - 1])
    box = (np.full(3, -5.0), np.full(3, 5.0))
    for opts in ({}, {"bounds": box}, {"weights": np.array([1.0, 2.0, 3.0]), "frozen": [2]}):
        for form in ({"lam": 0.1}, {"proba": 0.8}, {"region": True}):
            for metric in metrics:
                ex.explain(x, 1, **form, **opts, metric=metric)
                ex.explain(X, 1, **form, **opts, metric=metric)
        if "manhattan" in metrics:
            ex.enumerate(x, 1, k=2, region=True, metric="manhattan", **opts)  # its Lawler kernel
    if "euclidean" in metrics:
        ex.path(x, 1, np.logspace(1, -2, 5))


def _softmax(metrics=("euclidean", "manhattan"), wide=True):
    from .linear import LinearExplainer

    rng = np.random.default_rng(0)
    ex = LinearExplainer.from_arrays(rng.normal(size=(3, 4)), rng.normal(size=3))
    x = rng.normal(size=4)
    X = rng.normal(size=(3, 4))
    box = (np.full(4, -10.0), np.full(4, 10.0))
    for opts in ({}, {"bounds": box}, {"weights": np.array([1.0, 2.0, 3.0, 4.0]), "frozen": [3]}):
        for form in ({"lam": 0.1}, {"proba": 0.8}, {"region": True}):
            for metric in metrics:
                ex.explain(x, 2, **form, **opts, metric=metric)
                ex.explain(X, 2, **form, **opts, metric=metric)
    if "euclidean" in metrics:
        ex.path(x, 2, np.logspace(1, -2, 5))
        ex.path(x, 2, np.logspace(1, -2, 5), bounds=box)
    if not wide:
        return
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


def _net():
    # a network's Manhattan incumbent solves its activation patterns' small programs by one
    # kernel (fastcf._kernels.pattern_lp); the rest of the family is NumPy and HiGHS
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    from .net import NetExplainer

    rng = np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, size=(60, 3))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp = MLPClassifier((6,), max_iter=50, random_state=0).fit(X, y)
    ex = NetExplainer(mlp).fit_data(X)
    t = 1 - int(mlp.predict(X[:1])[0])
    ex.explain(X[0], t, exact=False)
    ex.explain(X[0], t)


def _gradcheck():
    from .gradcheck import check_gradient

    check_gradient(lambda x: (float(x @ x), 2 * x), np.array([0.3, -0.2]))


_RUNNERS = {
    "logistic": _logistic,
    "softmax": _softmax,
    "lvq": _lvq,
    "svm": _svm,
    "trees": _trees,
    "net": _net,
    "gradcheck": _gradcheck,
}
#: a family's parts, for :func:`warmup_processes` (one process each): together, the family
_PARTS = {
    "softmax": {
        "softmax:manhattan": lambda: _softmax(("manhattan",), wide=False),
        "softmax:euclidean": lambda: _softmax(("euclidean",), wide=False),
        "softmax:wide": lambda: _softmax((), wide=True),
    },
    "logistic": {
        "logistic:manhattan": lambda: _logistic(("manhattan",)),
        "logistic:euclidean": lambda: _logistic(("euclidean",)),
    },
}
_RUNNERS.update({part: run for parts in _PARTS.values() for part, run in parts.items()})


def warmup(families=None, verbose: bool = False) -> dict:
    """Compile (or load from the cache) every kernel of the given families.

    Parameters
    ----------
    families : sequence of str, optional
        Some of ``"logistic"``, ``"softmax"``, ``"lvq"``, ``"svm"``, ``"trees"``, ``"net"``,
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
    unknown = sorted(set(families) - set(_RUNNERS))  # (a family's part too: _PARTS)
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


def warmup_processes(families=None, jobs=None, verbose=False) -> dict:
    """Fill Numba's cache with every kernel of ``families``, one process per family at a time.

    Numba compiles under one lock per process, so :func:`warmup` uses one core; here up to
    ``jobs`` processes (default: every core) each run :func:`warmup` for one family or one
    part of one (softmax's Manhattan, Euclidean and BLAS-mode queries; logistic's two
    metrics: ``python -m fastcf warmup --jobs 1 PART``), costliest first, into the same on-disk
    cache (``NUMBA_CACHE_DIR`` as this process sees it; Numba writes its cache files whole, by
    renaming, so processes that compile one shared kernel at once both leave a valid file).
    The kernels are in the cache afterwards, not in this process: a process that wants them
    loaded calls :func:`warmup` (which then loads them in seconds).

    Parameters
    ----------
    families : sequence of str, optional
        As :func:`warmup`; all by default.
    jobs : int, optional
        Processes at once (default ``os.cpu_count()``).
    verbose : bool, default=False
        Print each family's line as it finishes.

    Returns
    -------
    dict
        Wall seconds per family, in its own process.

    Raises
    ------
    RuntimeError
        If a family's process fails (its standard error is in the message).
    """
    import os
    import subprocess
    import sys

    families = FAMILIES if families is None else tuple(families)
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        raise ValueError(f"families must be among {FAMILIES}; got {unknown}")
    jobs = (os.cpu_count() or 1) if jobs is None else int(jobs)
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1; got {jobs}")
    todo = [p for f in _BY_COST if f in families for p in _PARTS.get(f, (f,))]
    running, times = {}, {}
    while todo or running:
        while todo and len(running) < jobs:
            fam = todo.pop(0)
            cmd = [sys.executable, "-m", "fastcf", "warmup", "--jobs", "1", fam]
            proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                env=dict(os.environ, FASTCF_PROGRESS="0"),
            )  # fmt: skip
            running[fam] = (proc, time.perf_counter())
        time.sleep(0.05)
        for fam, (proc, t0) in list(running.items()):
            if proc.poll() is None:
                continue
            out, err = proc.communicate()
            del running[fam]
            if proc.returncode != 0:
                for other, _ in running.values():
                    other.kill()
                raise RuntimeError(f"warmup of {fam!r} failed:\n{err[-3000:]}")
            times[fam] = time.perf_counter() - t0
            if verbose:
                print(f"  {fam:<18} {times[fam]:7.2f} s (its own process)", flush=True)
    return times
