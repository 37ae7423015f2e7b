"""Benchmark rows of the SVM enumeration (EnumSV, paper 003) and the data of its experiments.

fastcf's warm-started solver is timed against the same Lawler search refitting scikit-learn's SVC
on every subset.

Both searches run in this process, one after the other, on the same data and with the same KKT
tolerance (1e-8); the rows report the accuracy of the answers as the largest relative difference
between the two objective sequences.
"""

from __future__ import annotations

import time

import numpy as np

from .common import row, timeit

__all__ = ["svm_rows", "load_benchmark"]

_BASELINE = "same EnumSV search refitting sklearn.svm.SVC"


def load_benchmark(name="breast_cancer", seed=0):
    """Load a data set of the paper's §5.1 experiments, split and standardised, with its C.

    Parameters
    ----------
    name : {"breast_cancer", "digits_3v8"}, default "breast_cancer"
        Breast cancer (scikit-learn's copy of the UCI data) or digits "3 vs 8" (scikit-learn's
        copy of the UCI optical digits restricted to two classes, 8 is the positive one).
    seed : int, default 0
        Seed of the stratified 80/20 split.

    Returns
    -------
    X_train, X_test : ndarray
        Standardised with the training set's mean and deviation.
    y_train, y_test : ndarray
    C : float
        The linear SVC's C chosen by 5-fold cross-validation over {10⁻³, …, 10²}.

    Examples
    --------
    >>> from fastcf.bench.svm import load_benchmark
    >>> Xtr, Xte, ytr, yte, C = load_benchmark()  # doctest: +SKIP
    >>> Xtr.shape, Xte.shape, C  # doctest: +SKIP
    ((455, 30), (114, 30), 1.0)
    """
    from sklearn.datasets import load_breast_cancer, load_digits
    from sklearn.model_selection import GridSearchCV, train_test_split
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    if name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
    elif name == "digits_3v8":
        X, y = load_digits(return_X_y=True)
        keep = (y == 3) | (y == 8)
        X, y = X[keep], (y[keep] == 8).astype(int)
    else:
        raise ValueError(f"name must be one of ['breast_cancer', 'digits_3v8']; got {name!r}")
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=seed, stratify=y)
    sc = StandardScaler().fit(Xtr)
    Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
    grid = {"C": [0.001, 0.01, 0.1, 1.0, 10.0, 100.0]}
    C = GridSearchCV(SVC(kernel="linear"), grid, cv=5).fit(Xtr, ytr).best_params_["C"]
    return Xtr, Xte, ytr, yte, float(C)


def _each_call(fn, n):
    """Time ``n`` calls of ``fn`` one by one (calls that cannot be repeated, such as next())."""
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return np.array(ts)


def svm_rows(quick=False) -> list[dict]:
    """Time EnumSV with fastcf's solver against the same search refitting scikit-learn's SVC.

    Per data set (breast cancer; without ``quick`` also digits "3 vs 8", see
    :func:`load_benchmark`), linear kernel, two rows: the time to the top-k models, and the
    latency of one ``next()`` after the first model (what an interactive user waits for): each of
    the k − 2 calls after a warm-up one is a query, and the row gives their median and p95, and
    those of the per-call ratios to the same call of the scikit-learn search.

    Parameters
    ----------
    quick : bool, default False
        Breast cancer only, top-10 and one repetition, instead of both data sets, top-50 and
        three repetitions.

    Returns
    -------
    list of dict
        The rows of :func:`fastcf.bench.common.row` (``fastcf_s`` = ``median``, ``p95``,
        ``baseline_s`` and ``ratio`` = baseline / fastcf, with min and max), plus
        ``accuracy_gap``: the largest relative difference between the two objective sequences.

    Examples
    --------
    >>> from fastcf.bench.svm import svm_rows
    >>> rows = svm_rows(quick=True)  # doctest: +SKIP
    >>> rows[0]["ratio"] > 1  # doctest: +SKIP
    True
    """
    from ..svm_enum import SVMEnumerator, enumerate_svms

    k = 10 if quick else 50
    reps = 1 if quick else 3
    rng = np.random.default_rng(0)
    Xw = rng.normal(size=(40, 3))
    enumerate_svms(Xw, (Xw[:, 0] > 0).astype(int), k=2)  # compile outside the timings
    rows = []
    for name in ("breast_cancer",) if quick else ("breast_cancer", "digits_3v8"):
        Xtr, _, ytr, _, C = load_benchmark(name)
        timings = {}
        objectives = {}
        for solver in ("smo", "sklearn"):
            en = SVMEnumerator(C=C, kernel="linear", solver=solver)
            objectives[solver] = np.array([m.objective for m in en.enumerate(Xtr, ytr, k=k)])
            top_k = timeit(lambda en=en, X=Xtr, y=ytr: en.enumerate(X, y, k=k), reps)
            it = en.enumerate(Xtr, ytr)
            next(it)  # the first model (the root) is not a next() after the first
            next(it)  # warm-up
            timings[solver] = top_k, _each_call(lambda it=it: next(it), k - 2)
        fast, base = objectives["smo"], objectives["sklearn"]
        gap = float(np.max(np.abs(fast - base) / np.abs(base)))
        label = name.replace("_", " ")
        accuracy = f"objective gap {gap:.1e}"
        names = (
            f"svm_enum top-{k} {label} (linear, C={C:g})",
            f"svm_enum {label}: next() latency after the first, over {k - 2} calls",
        )
        notes = (
            "one problem (the search): median over repeated runs",
            "each next() is one query, timed once (the i-th model of both searches)",
        )
        for i, title in enumerate(names):
            r = row(title, timings["smo"][i], timings["sklearn"][i], _BASELINE, accuracy, notes[i])
            r["accuracy_gap"] = gap
            rows.append(r)
    return rows
