"""Input validation shared by the explainers.

Every message names the argument, what was found and what is expected.
"""

from __future__ import annotations

import math
import numbers
import operator
import time
import warnings

import numpy as np

__all__ = [
    "deadline",
    "check_question",
    "check_metric",
    "check_max_changes",
    "check_time_limit",
    "time_left",
    "as_float_array",
    "as_queries",
    "check_scalar",
    "check_int",
    "check_scalar_positive",
    "check_probability",
    "class_index",
    "resolve_targets",
    "resolve_frozen",
    "resolve_weights",
    "resolve_bounds",
    "row_boxes",
    "median_absolute_deviation",
]


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"array of dtype {value.dtype} and shape {value.shape}"
    return f"{type(value).__name__} {value!r}"[:200]


def as_float_array(
    value, name: str, *, ndim=None, allow_nonfinite=False, allow_nan=False
) -> np.ndarray:
    """Convert ``value`` to a C-contiguous float64 array, rejecting non-numeric dtypes.

    Booleans and integers are converted; object, complex, string and datetime dtypes raise
    ``TypeError``; NaN or inf raise ``ValueError`` unless ``allow_nonfinite`` (``allow_nan``:
    NaN pass, inf still raise).
    """
    if hasattr(value, "to_numpy") and not isinstance(value, np.ndarray):
        value = value.to_numpy()
    try:
        arr = np.asarray(value)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} must be array-like of numbers; got {_describe(value)}") from exc
    if arr.dtype.kind not in "biuf":
        raise TypeError(
            f"{name} must be a real numeric array (float, int or bool); got dtype {arr.dtype}"
            + (" (complex values are not supported)" if arr.dtype.kind == "c" else "")
        )
    arr = np.asarray(arr, dtype=np.float64, order="C")
    if ndim is not None:
        ndims = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in ndims:
            expected = " or ".join(f"{d}-D" for d in ndims)
            raise ValueError(f"{name} must be {expected}; got an array of shape {arr.shape}")
    # a sum is one fast pass with no temporary; only if it is not finite (a NaN/inf, or finite
    # values overflowing) is the exact, slower check needed
    if not allow_nonfinite:
        with np.errstate(over="ignore", invalid="ignore"):  # inf - inf, 1e308 + 1e308
            total = np.sum(arr)
    if not allow_nonfinite and not np.isfinite(total) and not np.isfinite(arr).all():
        if allow_nan:
            bad = int(np.count_nonzero(np.isinf(arr)))
            if bad:
                raise ValueError(
                    f"{name} contains {bad} infinite value(s); all must be finite or NaN (missing)"
                )
            return arr
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name} contains {bad} NaN or infinite value(s); all must be finite")
    return arr


def _sparse_to_dense(x, name: str):
    """Return a scipy.sparse ``x`` (matrix or array, any format) as a dense ndarray, else None.

    The shape is kept: a 1-D sparse array (``csr_array[i]``) is one query, a 2-D one (also a
    ``csr_matrix`` row, shape (1, D)) a batch. scipy.sparse is only imported when a class of
    ``type(x)``'s MRO comes from it, so dense queries never pay for it. The import statement is
    what makes this thread-safe: looking the module up in ``sys.modules`` instead raced with
    another thread still importing it (a dask worker saw a partially initialised module).
    """
    if not any(c.__module__.startswith("scipy.sparse") for c in type(x).__mro__):
        return None
    import scipy.sparse as sp

    if not sp.issparse(x):
        return None
    what = f"a scipy.sparse {type(x).__name__} of dtype {x.dtype} and shape {x.shape}"
    if x.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a real numeric array (float, int or bool); got {what}")
    if x.ndim not in (1, 2):
        raise ValueError(f"{name} must be 1-D (one query) or 2-D (a batch); got {what}")
    return x.toarray()


def as_queries(x, n_features: int, feature_names=None, name: str = "x", allow_nan=False):
    """Validate one query (D,) or a batch (N, D); NaN (missing values) only if ``allow_nan``.

    ``x`` may be array-like (lists, NumPy arrays of any real dtype, pandas Series/DataFrame) or
    scipy.sparse (CSR, CSC, COO, ..., sparse matrices and sparse arrays): a sparse input is made
    dense, so the answers are dense arrays; a 2-D sparse input (a ``csr_matrix`` row too, shape
    (1, D)) is a batch, a 1-D sparse array (``csr_array[i]``) one query.

    Returns
    -------
    X : ndarray of shape (N, D), float64, C-contiguous
    single : bool
        Whether the input was one query.
    names : ndarray of str or None
        The feature names carried by a pandas input (checked against ``feature_names``), else
        ``feature_names``.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> X, single, names = as_queries(sp.csr_array([[0.0, 2.0, 0.0]]), 3)
    >>> X, single
    (array([[0., 2., 0.]]), False)
    """
    dense = _sparse_to_dense(x, name)
    if dense is not None:
        X = as_float_array(dense, name, ndim=(1, 2), allow_nan=allow_nan)
        single = X.ndim == 1
        if single:
            X = X[None, :]
        if X.shape[1] != n_features:
            raise ValueError(
                f"{name} has {X.shape[1]} features but the model expects {n_features} "
                f"(a scipy.sparse {type(x).__name__} of shape {x.shape})"
            )
        names = None if feature_names is None else np.asarray(feature_names, dtype=object)
        return X, single, names
    names = None
    if hasattr(x, "columns"):  # pandas DataFrame
        names = np.asarray([str(c) for c in x.columns], dtype=object)
    elif hasattr(x, "index") and hasattr(x, "to_numpy") and getattr(x, "ndim", 0) == 1:  # Series
        names = np.asarray([str(c) for c in x.index], dtype=object)
    if names is not None and feature_names is not None:
        expected = np.asarray(feature_names, dtype=object)
        if names.shape != expected.shape or not np.all(names == expected):
            missing = sorted(set(expected) - set(names))[:5]
            extra = sorted(set(names) - set(expected))[:5]
            raise ValueError(
                f"{name} has feature names that do not match the model's: missing {missing}, "
                f"unexpected {extra} (the order must also match)"
            )
    X = as_float_array(x, name, ndim=(1, 2), allow_nan=allow_nan)
    single = X.ndim == 1
    if single:
        X = X[None, :]
    if X.shape[1] != n_features:
        raise ValueError(f"{name} has {X.shape[1]} features but the model expects {n_features}")
    if names is None and feature_names is not None:
        names = np.asarray(feature_names, dtype=object)
    return X, single, names


def check_exact(exact, time_limit):
    """Check ``exact=`` and ``time_limit=`` as every family takes them; return them.

    ``exact`` a bool (``TypeError`` otherwise), ``time_limit`` None or a positive finite
    number of seconds (:func:`check_scalar`).

    Examples
    --------
    >>> check_exact(False, 2)
    (False, 2.0)
    """
    if not isinstance(exact, (bool, np.bool_)):
        raise TypeError(f"exact must be True or False; got {exact!r}")
    return bool(exact), check_time_limit(time_limit)


def check_time_limit(time_limit):
    """Return ``time_limit`` as None or a positive finite float of seconds (every family's)."""
    return check_scalar(time_limit, "time_limit", lo=0.0, lo_open=True, allow_none=True)


def check_question(region, proba, who):
    """Return ``proba`` checked, for a family that answers ``region=True`` or ``proba=τ``.

    ``who``: the family's name in the message (``"trees"``, ``"networks"``). ``region=False``
    with no ``proba=`` asks for no condition: a ``ValueError`` that says what is answered.

    Examples
    --------
    >>> check_question(False, 0.9, "trees")
    0.9
    """
    if proba is None and not region:
        raise ValueError(
            f"region=False asks for no condition: {who} answer region=True (classified as the "
            "target) or proba=τ (and p_target >= τ)"
        )
    return None if proba is None else check_probability(proba, "proba")


def check_metric(metric, metrics):
    """Return ``metric`` if it is one of ``metrics``; a ``ValueError`` naming them otherwise."""
    if not (isinstance(metric, str) and metric in metrics):
        raise ValueError(f"metric must be one of {tuple(metrics)}; got {metric!r}")
    return metric


def check_max_changes(max_changes):
    """Return ``max_changes`` as None or an int >= 1 (every family's reading of the option).

    Examples
    --------
    >>> check_max_changes(2), check_max_changes(None)
    (2, None)
    """
    return check_int(max_changes, "max_changes", lo=1, allow_none=True)


def deadline(time_limit, start=None):
    """Return the ``time.perf_counter()`` at which ``time_limit`` seconds from ``start`` end.

    ``start``: a ``time.perf_counter()`` (default: now); ``time_limit`` None: ``inf`` (no
    limit). The one reading of a query's ``time_limit=`` as a clock time, for every family.

    Examples
    --------
    >>> deadline(None)
    inf
    >>> deadline(2.0, start=10.0)
    12.0
    """
    if time_limit is None:
        return math.inf
    return (time.perf_counter() if start is None else start) + time_limit


def time_left(deadline):
    """Return the seconds left until ``deadline`` as a ``time_limit=`` (None when it is inf).

    The limit handed to one step of a call bounded by :func:`deadline` as a whole (a node of
    an enumeration, each given the time its call has left). A spent deadline gives the
    smallest positive limit, which every ``time_limit=`` accepts and which is spent at once.

    Examples
    --------
    >>> time_left(math.inf) is None
    True
    >>> time_left(0.0)
    5e-324
    """
    if deadline == math.inf:
        return None
    return max(deadline - time.perf_counter(), math.ulp(0.0))


def check_scalar(
    value, name: str, *, lo=None, hi=None, lo_open=False, hi_open=False, allow_none=False
):
    """Return ``value`` as a float after checking its type and range (one message form).

    The one helper for real scalar options (as scikit-learn's ``check_scalar``): a bool or a
    non-real raises ``TypeError``, a NaN, an infinity or a value out of ``[lo, hi]`` (``lo_open``
    / ``hi_open`` exclude an end) raises ``ValueError``; every message reads
    ``"<name> must be <what is expected>; got <what was found>"``.

    Examples
    --------
    >>> check_scalar(0.5, "proba", lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    0.5
    >>> check_scalar(0.0, "tol", lo=0.0, lo_open=True)
    Traceback (most recent call last):
    ...
    ValueError: tol must be a finite real number > 0; got 0.0
    """
    if value is None and allow_none:
        return None
    expect = _expectation("a finite real number", lo, hi, lo_open, hi_open, allow_none)
    if isinstance(value, (bool, np.bool_)) or not (
        isinstance(value, numbers.Real)
        or (isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf")
    ):
        raise TypeError(f"{name} must be {expect}; got {_describe(value)}")
    v = float(value)
    if not (
        np.isfinite(v)
        and (lo is None or (v > lo if lo_open else v >= lo))
        and (hi is None or (v < hi if hi_open else v <= hi))
    ):
        raise ValueError(f"{name} must be {expect}; got {v!r}")
    return v


def check_int(value, name: str, *, lo=None, hi=None, allow_none=False):
    """Return ``value`` as an int after checking its type and range (``lo <= value <= hi``).

    The integer sibling of :func:`check_scalar`, with the same message form.

    Examples
    --------
    >>> check_int(3, "max_iter", lo=1)
    3
    >>> check_int(1.5, "max_iter", lo=1)
    Traceback (most recent call last):
    ...
    TypeError: max_iter must be an integer >= 1; got float 1.5
    """
    if value is None and allow_none:
        return None
    expect = _expectation("an integer", lo, hi, False, False, allow_none)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be {expect}; got {_describe(value)}")
    v = operator.index(value)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise ValueError(f"{name} must be {expect}; got {v!r}")
    return v


def _expectation(what, lo, hi, lo_open, hi_open, allow_none):
    if lo is not None and hi is not None:
        what += f" in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
    elif lo is not None:
        what += f" {'>' if lo_open else '>='} {lo:g}"
    elif hi is not None:
        what += f" {'<' if hi_open else '<='} {hi:g}"
    return what + (" or None" if allow_none else "")


def check_scalar_positive(value, name: str, *, allow_array=False, n=None) -> np.ndarray | float:
    """Return ``value`` as a float > 0 (:func:`check_scalar`), or an (n,) array of them.

    With ``allow_array`` an array gives one value per query (``n`` of them), each finite and
    > 0, in the message form of :func:`check_scalar`.
    """
    if not allow_array or np.ndim(value) == 0:
        if np.ndim(value) != 0:
            raise ValueError(
                f"{name} must be a finite real number > 0; got an array of shape {np.shape(value)}"
            )
        return check_scalar(value, name, lo=0.0, lo_open=True)
    arr = as_float_array(value, name, ndim=1, allow_nonfinite=True)
    if n is not None and arr.shape[0] != n:
        raise ValueError(
            f"{name} must be a scalar or have one value per query ({n}); got {arr.shape[0]}"
        )
    if not (np.isfinite(arr).all() and (arr > 0).all()):
        raise ValueError(
            f"{name} must be finite real numbers > 0; got min {arr.min()!r}, max {arr.max()!r}"
        )
    return arr


def check_probability(value, name: str = "proba") -> float:
    """Return ``value`` as a float in the open interval (0, 1) (:func:`check_scalar`)."""
    return check_scalar(value, name, lo=0.0, hi=1.0, lo_open=True, hi_open=True)


def class_index(classes) -> dict:
    """Map each label of ``classes`` (as a Python scalar) to its index."""
    return {c.item() if hasattr(c, "item") else c: i for i, c in enumerate(np.asarray(classes))}


def resolve_targets(targets, classes: np.ndarray, n: int, name: str = "target", index=None):
    """Map target labels to indices into ``classes``: one label for all N queries, or N labels.

    ``index`` is :func:`class_index` of ``classes``, when the caller keeps it.
    """
    if index is None:
        index = class_index(classes)

    def lookup(t):
        key = t.item() if hasattr(t, "item") else t
        try:
            return index[key]
        except (KeyError, TypeError):
            raise ValueError(
                f"{name}={t!r} is not a class of the model; classes_ = "
                f"{np.asarray(classes).tolist()}"
            ) from None

    if np.isscalar(targets) or (isinstance(targets, np.ndarray) and targets.ndim == 0):
        return np.full(n, lookup(targets), dtype=np.int64)
    arr = np.asarray(targets, dtype=object)
    if arr.ndim == 0:  # None, or any other single object: looked up (and refused) as one label
        return np.full(n, lookup(targets), dtype=np.int64)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(
            f"{name} must be one label or one label per query ({n}); got shape {arr.shape}"
        )
    return np.fromiter((lookup(t) for t in arr), dtype=np.int64, count=n)


def resolve_frozen(frozen, n_features: int, feature_names=None) -> np.ndarray:
    """Return a boolean mask of frozen features from indices or feature names."""
    mask = np.zeros(n_features, dtype=bool)
    if frozen is None:
        return mask
    if isinstance(frozen, (str, numbers.Integral)):
        frozen = [frozen]
    frozen = list(frozen)
    if frozen and all(isinstance(f, (bool, np.bool_)) for f in frozen):
        if len(frozen) != n_features:
            raise ValueError(
                f"frozen as a boolean mask must have {n_features} entries, one per feature; "
                f"got {len(frozen)}"
            )
        return np.asarray(frozen, dtype=bool)
    names = None if feature_names is None else [str(f) for f in feature_names]
    for f in frozen:
        if isinstance(f, str):
            if names is None or f not in names:
                raise ValueError(
                    f"frozen names feature {f!r}, which the model does not know "
                    f"(feature names: {names[:10] if names else None})"
                )
            mask[names.index(f)] = True
        else:
            if isinstance(f, (bool, np.bool_)):
                raise TypeError(
                    "frozen mixes booleans with indices or names; give a boolean mask of all "
                    "features or a list of indices/names"
                )
            try:
                i = operator.index(f)
            except TypeError:
                raise TypeError(
                    f"frozen must hold feature indices or names; got {_describe(f)}"
                ) from None
            if not -n_features <= i < n_features:
                raise ValueError(f"frozen index {i} is out of range for {n_features} features")
            mask[i] = True
    return mask


def median_absolute_deviation(X: np.ndarray, allow_nan: bool = False) -> np.ndarray:
    """Per-feature median absolute deviation, with a guard for MAD = 0.

    A feature whose MAD is 0 (more than half of the values equal) would get an infinite weight
    ``1/MAD``; it falls back to the mean absolute deviation, then to 1. A spread so small that the
    square of its reciprocal (the Euclidean metric ``1/MAD²``) overflows, below ~7.5e-155, counts
    as 0 as well. ``allow_nan``: NaN (missing values) are left out of each column's medians.
    """
    X = as_float_array(X, "X", ndim=2, allow_nan=allow_nan)
    if X.shape[0] < 2:
        raise ValueError(f"X must have at least 2 rows to estimate the MAD; got {X.shape[0]}")
    if allow_nan and np.isnan(X).any():  # missing values left out, column by column
        with warnings.catch_warnings():  # (an all-NaN column: NaN, then the fallback 1)
            warnings.simplefilter("ignore", RuntimeWarning)
            med = np.nanmedian(X, axis=0)
            dev = np.abs(X - med)
            mad = np.nan_to_num(np.nanmedian(dev, axis=0))
            fallback = np.nan_to_num(np.nanmean(dev, axis=0))
    else:
        med = np.median(X, axis=0)
        dev = np.abs(X - med)
        mad = np.median(dev, axis=0)
        fallback = dev.mean(axis=0)
    # 1/MAD² must be finite (soak finding: MAD = 1.1e-309 overflowed 1/MAD itself)
    tiny = 1.0 / math.sqrt(np.finfo(float).max)
    mad = np.where(mad > tiny, mad, fallback)
    return np.where(mad > tiny, mad, 1.0)


def resolve_weights(weights, n_features: int, mad=None) -> np.ndarray | None:
    """Return the per-feature costs w (D,), all in [1e-150, 1e150], or None for unit costs.

    ``weights=w`` is the cost of a unit change of each feature: the Euclidean distance is
    ``‖w ∘ (x − x̄)‖₂`` (a diagonal metric w²), the Manhattan one ``Σ w_i |x_i − x̄_i|``.
    ``"mad"`` means ``w = 1 / MAD`` per feature, from an earlier ``fit_mad(X)``: the distance is
    then in MAD units whatever each feature's unit. The range keeps w² and 1/w² finite and
    normal.
    """
    if weights is None:
        return None
    if isinstance(weights, str):
        if weights != "mad":
            raise ValueError(
                f"weights must be an array of shape ({n_features},), None or 'mad'; got {weights!r}"
            )
        if mad is None:
            raise ValueError(
                "weights='mad' needs the MAD of the training data: call fit_mad(X_train) first"
            )
        return 1.0 / mad
    w = as_float_array(weights, "weights", ndim=(0, 1))
    if w.ndim == 0:
        w = np.full(n_features, float(w))
    if w.shape[0] != n_features:
        raise ValueError(f"weights must have shape ({n_features},); got {w.shape}")
    if not (w > 0).all():
        raise ValueError(
            f"weights must be > 0 (use frozen= to keep a feature fixed); got min {w.min()!r}"
        )
    if not ((w >= 1e-150) & (w <= 1e150)).all():
        raise ValueError(
            "weights must lie in [1e-150, 1e150] (their squares are the Euclidean metric); "
            f"got min {w.min()!r}, max {w.max()!r}"
        )
    return w


def resolve_bounds(bounds, n_features: int, X: np.ndarray, *, per_row: bool = False):
    """Return (lo, hi): float64 arrays, lo <= hi, with every source row inside them.

    Each of lo and hi may be a scalar, an array of shape (D,) (one box for every query), or, with
    ``per_row=True``, an array of shape (N, D): one box per query row of ``X`` (N, D). The two
    returned arrays have the same shape: (D,) when both parts are shared, else (N, D). ``None``
    (for the pair) returns ``None``; ``None`` for one part means unbounded on that side.
    """
    if bounds is None:
        return None
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise ValueError(
            f"bounds must be a pair (lo, hi) of scalars or arrays; got {_describe(bounds)}"
        )
    N = X.shape[0]
    shapes = f"({n_features},) or ({N}, {n_features})" if per_row else f"({n_features},)"
    out = []
    for part, label in zip(bounds, ("lo", "hi"), strict=True):
        if part is None:
            part = -np.inf if label == "lo" else np.inf
        a = as_float_array(
            part, f"bounds[{label}]", ndim=(0, 1, 2) if per_row else (0, 1), allow_nonfinite=True
        )
        if np.isnan(a).any():
            raise ValueError(f"bounds[{label}] contains NaN; use -inf/inf for no bound")
        if a.ndim == 0:
            a = np.full(n_features, float(a))
        if a.shape not in ((n_features,), (N, n_features)) or (a.ndim == 2 and not per_row):
            raise ValueError(f"bounds[{label}] must have shape {shapes}; got {a.shape}")
        out.append(a)
    lo, hi = out
    if lo.ndim != hi.ndim:  # one box per row on one side only
        # copies, not read-only broadcast views (a read-only array is a new Numba type)
        lo, hi = np.array(np.broadcast_to(lo, X.shape)), np.array(np.broadcast_to(hi, X.shape))
    lo, hi = np.ascontiguousarray(lo), np.ascontiguousarray(hi)
    if (lo > hi).any():
        where = np.argwhere(lo > hi)[0]
        at = f"feature {where[-1]}" + (f" (row {where[0]})" if lo.ndim == 2 else "")
        raise ValueError(
            f"bounds have lo > hi at {at}: lo={lo[tuple(where)]!r}, hi={hi[tuple(where)]!r}"
        )
    outside = (X < lo) | (X > hi)
    if outside.any():
        r, c = np.argwhere(outside)[0]
        b = (r, c) if lo.ndim == 2 else (c,)
        raise ValueError(
            f"the source x lies outside bounds at feature {c} (row {r}): x={X[r, c]!r}, "
            f"lo={lo[b]!r}, hi={hi[b]!r}; widen the bounds or move x inside them"
        )
    return lo, hi


def row_boxes(X, bnd, fmask, lo=-np.inf, hi=np.inf):
    """Return each query row's box (lo, hi), both of shape (N, D), frozen features pinned.

    The user's box ``bnd`` (:func:`resolve_bounds`, per row or shared; None: none) intersected
    with a family's own ``lo``/``hi`` (scalars, (D,) or (N, D): the range a model reads, the
    training data's), and each frozen feature (``fmask``) pinned at the row's value: the box
    of the tree and network families' programs.
    """
    lo = np.array(np.broadcast_to(lo, X.shape), dtype=np.float64)
    hi = np.array(np.broadcast_to(hi, X.shape), dtype=np.float64)
    if bnd is not None:
        np.maximum(lo, bnd[0], out=lo)
        np.minimum(hi, bnd[1], out=hi)
    lo[:, fmask] = X[:, fmask]
    hi[:, fmask] = X[:, fmask]
    return lo, hi
