"""EnumSV: the top-k SVM models with distinct support-vector sets (paper 003), public API.

:class:`SVMEnumerator` (scikit-learn-style parameters, validated by
:meth:`~SVMEnumerator.enumerate`) and :func:`enumerate_svms` start an enumeration; the models are
:class:`EnumeratedSVM`'s, scored by the §5 metrics :func:`hinge_loss` and
:func:`demographic_parity`.

Where the algorithm lives:

* :mod:`fastcf._svm.lawler` — Algorithm 1 (Lawler's scheme over index subsets: the heap, the
  partition of a popped model into its children, duplicates, degenerate children, Proposition 1,
  the descending-order check) in :class:`SVMEnumeration`, the lazy iterator;
* :mod:`fastcf._svm.model` — :class:`EnumeratedSVM`, the shared kernel spec and the metrics;
* :mod:`fastcf._kernels.smo` — the Numba kernels: kernel rows and their cache, the warm start
  that removes one index, the exact active-set step and SMO (libsvm's second-order working set
  selection);
* :mod:`fastcf.bench.svm` — the side-by-side benchmark against refitting scikit-learn's SVC.
"""

from __future__ import annotations

import numpy as np

from fastcf._svm.lawler import SVMEnumeration
from fastcf._svm.model import KINDS, EnumeratedSVM, KernelSpec, demographic_parity, hinge_loss
from fastcf._validation import as_float_array, check_int, check_scalar

__all__ = [
    "SVMEnumerator",
    "SVMEnumeration",
    "EnumeratedSVM",
    "enumerate_svms",
    "hinge_loss",
    "demographic_parity",
]

_SOLVERS = ("smo", "sklearn")
_PARAMS = (
    "C",
    "kernel",
    "gamma",
    "degree",
    "coef0",
    "tol",
    "support_tol",
    "solver",
    "max_iter",
    "cache_size",
)


class SVMEnumerator:
    """Enumerate binary SVMs with distinct support-vector sets, best dual objective first.

    Implements EnumSV (Algorithm 1 of *Enumeration of Distinct Support Vectors for Interactive
    Decision Making*): the r-th model is the SVM trained on some subset of the data whose
    support differs from those of models 1..r−1, with the r-th largest dual objective among all
    such models. Parameters follow :class:`sklearn.svm.SVC`.

    Parameters
    ----------
    C : float, default 1.0
        Regularisation (box constraint 0 ≤ α ≤ C), > 0.
    kernel : {"linear", "rbf", "poly", "sigmoid", "precomputed"}, default "linear"
    gamma : {"scale", "auto"} or float, default "scale"
        As in SVC: "scale" = 1 / (n_features · X.var()), "auto" = 1 / n_features, computed once
        on the whole data set and kept for every subset.
    degree : int, default 3
        Degree of the "poly" kernel (γ⟨x, x'⟩ + coef0)^degree.
    coef0 : float, default 0.0
        Independent term of the "poly" and "sigmoid" kernels.
    tol : float, default 1e-8
        KKT tolerance of every solve: the maximal violating pair gap m(α) − M(α) < tol.
    support_tol : float or None, default None
        Support = {i : α_i > support_tol}; None means 1e-10 · max α of each solution (relative,
        so that the tiny α's of a huge kernel still form a support). The solver returns exact
        zeros for the α's at the lower bound, so this only guards against round-off.
    solver : {"smo", "sklearn"}, default "smo"
        "smo": fastcf's Numba solver, warm-started from the parent model. "sklearn": refit
        ``sklearn.svm.SVC`` from scratch on every subset (the cross-check and speed baseline).
    max_iter : int or None, default None
        Iteration limit per solve; None means max(10⁷, 100 n) as libsvm. A solve that stops at
        the limit is kept (its ``status`` is 1) and a ``ConvergenceWarning`` is issued.
    cache_size : float, default 1024
        Megabytes for the kernel rows. When the n × n matrix fits, it is kept whole (computed
        lazily, once per data set); otherwise rows are computed on demand and the least recently
        used ones evicted.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcf import SVMEnumerator
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(30, 2))
    >>> y = np.where(X[:, 0] + 0.3 * rng.normal(size=30) > 0, "yes", "no")
    >>> top = SVMEnumerator(C=1.0).enumerate(X, y, k=5)
    >>> [m.rank for m in top]
    [1, 2, 3, 4, 5]
    >>> bool(all(a.objective >= b.objective for a, b in zip(top, top[1:])))
    True
    >>> len({tuple(m.support_) for m in top})
    5
    """

    def __init__(
        self,
        C=1.0,
        kernel="linear",
        gamma="scale",
        degree=3,
        coef0=0.0,
        tol=1e-8,
        support_tol=None,
        solver="smo",
        max_iter=None,
        cache_size=1024.0,
    ):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.tol = tol
        self.support_tol = support_tol
        self.solver = solver
        self.max_iter = max_iter
        self.cache_size = cache_size

    def get_params(self, deep=True):
        """Return the parameters as a dict (scikit-learn convention).

        Parameters
        ----------
        deep : bool, default True
            Ignored (no nested estimators).

        Returns
        -------
        dict
        """
        return {k: getattr(self, k) for k in _PARAMS}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"SVMEnumerator({args})"

    def _validate(self, X, y):
        """Check the parameters and the data; return the arguments of :class:`SVMEnumeration`."""
        C = check_scalar(self.C, "C", lo=0.0, lo_open=True)
        if not isinstance(self.kernel, str) or self.kernel not in KINDS:
            raise ValueError(f"kernel must be one of {sorted(KINDS)}; got {self.kernel!r}")
        kind = KINDS[self.kernel]
        tol = check_scalar(self.tol, "tol", lo=0.0, lo_open=True)
        support_tol = check_scalar(self.support_tol, "support_tol", lo=0.0, allow_none=True)
        if self.solver not in _SOLVERS:
            raise ValueError(f"solver must be one of {_SOLVERS}; got {self.solver!r}")
        degree = check_int(self.degree, "degree", lo=0)
        coef0 = check_scalar(self.coef0, "coef0")
        cache_size = check_scalar(self.cache_size, "cache_size", lo=0.0, lo_open=True)
        max_iter = check_int(self.max_iter, "max_iter", lo=1, allow_none=True)
        X = as_float_array(X, "X", ndim=2)
        n = X.shape[0]
        if n < 2 or X.shape[1] < 1:
            raise ValueError(
                f"X must have at least 2 rows and 1 feature (column); got shape {X.shape}"
            )
        if kind == KINDS["precomputed"] and X.shape[0] != X.shape[1]:
            raise ValueError(
                f"X must be a square Gram matrix for kernel='precomputed'; got shape {X.shape}"
            )
        y_pm, classes = _binary_labels(y, n)
        spec = KernelSpec(X, kind, _gamma(self.gamma, X, kind), coef0, float(degree), X.shape[1])
        return (
            spec,
            y_pm,
            classes,
            {
                "C": C,
                "tol": tol,
                "support_tol": support_tol,
                "max_iter": max(10_000_000, 100 * n) if max_iter is None else max_iter,
                "solver": self.solver,
                "cache_size": cache_size,
            },
        )

    def enumerate(self, X, y, k=None):
        """Enumerate the models of (X, y), best dual objective first.

        Parameters
        ----------
        X : array-like of shape (n, n_features), or (n, n) for ``kernel="precomputed"``
        y : array-like of shape (n,)
            Two class labels.
        k : int or None, default None
            None: return a lazy iterator (each ``next()`` computes one more model; it ends when
            every distinct model has been listed). An int > 0: return the list of the top k
            (fewer if there are fewer distinct models).

        Returns
        -------
        SVMEnumeration or list of EnumeratedSVM

        Raises
        ------
        ValueError, TypeError
            Bad parameters or data (the message names the argument).
        """
        k = check_int(k, "k", lo=1, allow_none=True)
        spec, y_pm, classes, options = self._validate(X, y)
        it = SVMEnumeration(spec, y_pm, classes, **options)
        if k is None:
            return it
        out = []
        for model in it:
            out.append(model)
            if len(out) == k:
                break
        return out


def _binary_labels(y, n):
    """Return (y_pm, classes): ±1 labels (+1 for ``classes[1]``) and the two sorted classes."""
    if hasattr(y, "to_numpy"):
        y = y.to_numpy()
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D (one label per row of X); got shape {y.shape}")
    if y.shape[0] != n:
        raise ValueError(f"y has {y.shape[0]} labels but X has {n} rows")
    if y.dtype.kind == "f" and np.isnan(y).any():
        raise ValueError("y contains NaN; every row needs a label")
    if y.dtype.kind == "O" and any(v is None for v in y):
        raise ValueError("y contains None; every row needs a label")
    classes = np.unique(y)
    if classes.size < 2:
        raise ValueError(f"y has a single class ({classes.tolist()}); an SVM needs two classes")
    if classes.size > 2:
        raise ValueError(
            f"y has {classes.size} classes ({classes.tolist()[:10]}); only binary SVMs are "
            "enumerated — reduce the problem to two classes (e.g. one-vs-rest)"
        )
    return np.where(y == classes[1], 1.0, -1.0), classes


def _gamma(gamma, X, kind) -> float:
    """Resolve ``gamma`` once on the whole data set, as SVC does ("scale", "auto" or a float)."""
    if kind == KINDS["precomputed"]:
        return 0.0
    if isinstance(gamma, str):
        if gamma == "scale":
            var = X.var()
            # a variance at the rounding level of X (constant data: 6 × 0.48 gives ~1e-34) is
            # 0; SVC then uses γ = 1, and so do we (SVC itself would take γ ~ 1e33 and kernel
            # entries ~1e97 in that case)
            tiny = 16 * np.finfo(float).eps * float(np.mean(X * X))
            if not var > tiny:
                return 1.0
            with np.errstate(over="ignore"):
                g = float(1.0 / (X.shape[1] * var))
            if not np.isfinite(g) and kind != KINDS["linear"]:
                # (found by the fuzz suite: X = [[1.3e-154], [0]]; SVC raises "dual
                # coefficients ... not finite" there)
                raise ValueError(
                    f"gamma='scale' is 1 / (n_features * X.var()) = 1 / {X.shape[1] * var:.3g}, "
                    "which overflows float64; rescale X or pass gamma as a number"
                )
            return g if np.isfinite(g) else 1.0  # (the linear kernel does not use γ)
        if gamma == "auto":
            return float(1.0 / X.shape[1])
        raise ValueError(
            f"gamma must be 'scale', 'auto' or a finite real number > 0; got {gamma!r}"
        )
    return check_scalar(gamma, "gamma", lo=0.0, lo_open=True)


def enumerate_svms(X, y, k=50, **svm_params):
    """Return the top-``k`` SVMs of (X, y) with distinct supports (one-shot EnumSV).

    Parameters
    ----------
    X : array-like of shape (n, n_features)
    y : array-like of shape (n,)
    k : int, default 50
    **svm_params
        Parameters of :class:`SVMEnumerator` (C, kernel, gamma, degree, coef0, tol, ...).

    Returns
    -------
    list of EnumeratedSVM

    Examples
    --------
    >>> import numpy as np
    >>> from fastcf import enumerate_svms
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> models = enumerate_svms(X, [0, 0, 1, 1], k=3, C=10.0)
    >>> [m.support_.tolist() for m in models]
    [[1, 2], [0, 2], [1, 3]]
    """
    return SVMEnumerator(**svm_params).enumerate(X, y, k=k)
