"""The values a numeric column takes: its resolution (a grid) or its levels (a finite set).

A person reads an answer in the units the data is recorded in: a debt-to-income ratio recorded
to one decimal moved from 27.2 to 27.199976 is no change at all, and a loan term of 36 or 60
months moved to 49 is no loan anyone offers. So every numeric column has

* a **resolution** r: the answer's value is a multiple of r (a grid anchored at 0), and a move
  is a whole number of steps. Inferred from the training values (:func:`infer_resolution`):
  1 for a column of integers, 10⁻ᵈ for values recorded to d ≤ 6 decimals, none (continuous)
  otherwise; ``resolution={column: r}`` overrides it (``None``: continuous);
* or **levels** (``levels={column: [36, 60]}``): the answer's value is one of them. Such a
  column becomes an ordinal block of the program (:func:`with_levels`): one indicator per level,
  its score the column's coefficient times the level, its cost the weight times the distance
  between levels (the Manhattan cost of the move).

The grid is decimal: its points are ``n · r`` for r as written (``0.1``, not the double nearest
to it), so that 272 steps of 0.1 are the double nearest to 27.2 — the value a person typed, not
``272 * 0.1 = 27.200000000000003``. :func:`steps` reads a value and its bounds in steps (exact
decimal arithmetic), :func:`value` maps steps back. Answers are exact optima on the grid: the
program's variables for a grid column are whole steps (integer variables), so a model that
needs a move finer than the grid gets the nearest grid point beyond it.
"""

from __future__ import annotations

import dataclasses
import math
from decimal import Decimal

import numpy as np

__all__ = [
    "infer_resolution",
    "grid_dtype",
    "decimal_of",
    "steps",
    "around",
    "step_bounds",
    "value",
    "with_levels",
    "resolve_levels",
    "infer_levels",
    "MAX_DECIMALS",
    "MAX_LEVELS",
]

#: the most decimals a recorded column may have (more: continuous)
MAX_DECIMALS = 6


def decimal_of(v, dtype=None):
    """Return ``v`` as the shortest decimal that reads back as it (in its dtype's precision).

    A ``float32`` column holds 27.2 as 27.200000762939453 in float64: its shortest float32
    representation, ``"27.2"``, is the value recorded.
    """
    dt = _numpy_dtype(dtype)
    if dt is not None and dt in (np.float32, np.float16):
        return Decimal(np.format_float_positional(dt.type(v), unique=True, trim="-"))
    return Decimal(repr(float(v)))


def _numpy_dtype(dtype):
    """Return the NumPy dtype of a column's dtype (a pandas extension's own), or None."""
    if dtype is None:
        return None
    try:
        return np.dtype(getattr(dtype, "numpy_dtype", dtype))
    except TypeError:
        return None


def grid_dtype(values, dtype=None):
    """Return the dtype in which a numeric column's values are read as decimals.

    The column's own, except for a float64 column of float32-rounded values (data that went
    through float32 on its way: 12.54 stored as 12.539999961853027): if every value is a float32
    and reads to at most :data:`MAX_DECIMALS` decimals as one but not as a double, it is read
    as float32 (12.54), so that its grid is the one it was recorded on.

    Examples
    --------
    >>> import numpy as np
    >>> v = np.array([12.54, 3.1, 0.25], dtype=np.float32).astype(np.float64)
    >>> grid_dtype(v, v.dtype)
    dtype('float32')
    >>> grid_dtype(np.array([12.54, 3.1]), np.dtype(np.float64))
    dtype('float64')
    """
    dt = _numpy_dtype(dtype)
    if dt is not None and dt != np.float64:
        return dtype
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0 or np.any(v.astype(np.float32).astype(np.float64) != v):
        return dtype
    if _decimals(v, dtype) <= MAX_DECIMALS or _decimals(v, np.float32) > MAX_DECIMALS:
        return dtype
    return np.dtype(np.float32)


def _decimals(v, dtype):
    """Return the most decimals of the values (as recorded in ``dtype``), or inf."""
    d = 0
    for x in np.unique(v):
        exp = decimal_of(x, dtype).as_tuple().exponent
        if not isinstance(exp, int):
            return math.inf
        d = max(d, -exp)
        if d > MAX_DECIMALS:
            return math.inf
    return d


def infer_resolution(values, dtype=None):
    """Return the resolution of a numeric column's training values (0.0: continuous).

    1.0 when every value is an integer; 10⁻ᵈ for the least d ≤ :data:`MAX_DECIMALS` such that
    every value has at most d decimals (as recorded: the shortest decimal of each value in its
    dtype's precision, or in float32 for float32-rounded doubles: :func:`grid_dtype`); 0.0
    otherwise. Missing values are ignored; a column without values is continuous.

    Examples
    --------
    >>> import numpy as np
    >>> infer_resolution(np.array([27.2, 31.0, 12.5]))
    0.1
    >>> infer_resolution(np.array([3.0, 7.0]))
    1.0
    >>> infer_resolution(np.random.default_rng(0).normal(size=50))
    0.0
    """
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return 0.0
    if np.all(v == np.round(v)) and np.all(np.abs(v) < 2**53):
        return 1.0
    d = _decimals(v, grid_dtype(v, dtype))
    if d > MAX_DECIMALS:
        return 0.0
    return float(Decimal(1).scaleb(-d))


def steps(x, r, dtype=None):
    """Return ``x / r`` in whole steps, or None when ``x`` is not on the grid of ``r``."""
    q = decimal_of(x, dtype) / Decimal(repr(float(r)))
    n = q.to_integral_value()
    return int(n) if n == q else None


def around(x, r, dtype=None):
    """Return (a, c): the grid points of ``r`` just below and above ``x``, or None on the grid.

    Examples
    --------
    >>> around(0.5406, 0.1)
    (0.5, 0.6)
    >>> around(0.5, 0.1) is None
    True
    """
    q = decimal_of(x, dtype) / Decimal(repr(float(r)))
    n = q.to_integral_value(rounding="ROUND_FLOOR")
    if n == q:
        return None
    return value(int(n), r), value(int(n) + 1, r)


def step_bounds(lo, hi, r, dtype=None):
    """Return (first, last): the steps of the grid points in ``[lo, hi]`` (±inf kept).

    ``dtype``: the dtype the column's values are read in (:func:`grid_dtype`), which its
    bounds are read in too: a float32-rounded training maximum 2.799999952316284 is the 2.8 its
    rows hold, not a bound below their grid point 2.8.
    """
    R = Decimal(repr(float(r)))

    def read(v):  # (a bound past float32's range is read as the double it is)
        return decimal_of(v, dtype if abs(v) < float(np.finfo(np.float32).max) else None)

    first = -math.inf if not math.isfinite(lo) else math.ceil(read(lo) / R)
    last = math.inf if not math.isfinite(hi) else math.floor(read(hi) / R)
    return first, last


def value(n, r):
    """Return the grid point of ``n`` steps of ``r``: the double nearest to the decimal n·r."""
    return float(Decimal(int(n)) * Decimal(repr(float(r))))


def with_levels(fold, X, levels):
    """Return ``fold`` with each numeric column of ``levels`` as an ordinal block of its levels.

    Parameters
    ----------
    fold : Fold
    X : pandas.DataFrame
        The training data (for the column names in messages).
    levels : dict
        Column position -> sorted, distinct float levels.

    The block's indicator k scores ``G[:, j] · level_k`` (the numeric column's coefficients j
    times the level), so the scores are those of the column at that level exactly; its labels
    and ranks are the levels (a move costs the weight times the distance between levels).
    """
    if not levels:
        return fold
    numeric = [int(c) for c in fold.numeric]
    n_num = len(numeric)
    Gn, Gi = fold.G[:, :n_num], fold.G[:, n_num:]
    blocks = {
        int(c): Gi[:, fold.cat_start[j] : fold.cat_start[j + 1]]
        for j, c in enumerate(fold.cat_cols)
    }
    kinds, labels, ranks = dict(fold.kinds), dict(fold.labels), dict(fold.ranks)
    for c, lv in levels.items():
        if c not in numeric:
            raise ValueError(
                f"levels[{X.columns[c]!r}]: the column is not a numeric input of the model"
            )
        j = numeric.index(c)
        blocks[c] = Gn[:, [j]] * lv[None, :]
        kinds[c] = "ordinal"
        labels[c] = np.asarray(lv, dtype=np.float64)
        ranks[c] = np.asarray(lv, dtype=np.float64)
    keep = [j for j, c in enumerate(numeric) if c not in levels]
    cat_cols = np.array(sorted(blocks), dtype=np.int64)
    sizes = [blocks[c].shape[1] for c in cat_cols]
    G = np.ascontiguousarray(np.hstack([Gn[:, keep]] + [blocks[c] for c in cat_cols]))
    return dataclasses.replace(
        fold,
        kinds=kinds,
        labels=labels,
        ranks=ranks,
        numeric=np.array([numeric[j] for j in keep], dtype=np.int64),
        cat_cols=cat_cols,
        cat_start=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        G=G,
    )


#: the most levels a column's training values may have for it to default to them
MAX_LEVELS = 12


def infer_levels(values, res):
    """Return the sorted distinct training values of a column that takes a few levels, or None.

    A numeric column defaults to its levels when its training values take at most
    :data:`MAX_LEVELS` distinct values, each seen 10 times on average, that leave gaps on its
    grid of resolution ``res`` (a loan term of 36 or 60 months, a duration in multiples of 6):
    answers then keep it at a value the data takes. A column whose values fill their grid (a
    count 0–5) keeps its grid; a continuous one (``res`` 0) with few values is levels.

    Examples
    --------
    >>> import numpy as np
    >>> infer_levels(np.repeat([36.0, 60.0], 50), 1.0)
    array([36., 60.])
    >>> infer_levels(np.repeat(np.arange(6.0), 20), 1.0) is None
    True
    """
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    u = np.unique(v)
    if not (2 <= u.size <= MAX_LEVELS and v.size >= 10 * u.size):
        return None
    if res > 0.0:
        span = steps(u[-1], res) - steps(u[0], res) if steps(u[0], res) is not None else None
        if span is None or steps(u[-1], res) is None or u.size >= span + 1:
            return None  # every grid point in the range is taken: the grid says it all
    return u


def resolve_levels(levels, X, resolve_names, numeric=(), resolution=None):
    """Return {column position: sorted distinct float levels}: the user's, and the inferred.

    ``levels``: the user's ``{column: values or None}`` (None: no levels for that column);
    ``numeric``: the positions of the model's numeric columns, each of which defaults to its
    training levels (:func:`infer_levels`, on its inferred resolution) unless the user
    gave it levels, None, or a resolution (``resolution``: the user's dict).
    """
    cols = list(X.columns)
    given = {}
    if levels is not None:
        if not isinstance(levels, dict):
            raise TypeError(
                f"levels must be a dict {{column: [values] or None}}; got {type(levels).__name__}"
            )
        given = dict(zip(resolve_names(list(levels), cols, "levels"), levels.values(), strict=True))
    fixed = set()
    if isinstance(resolution, dict):  # (another type: the schema's error says what is wrong)
        fixed = set(resolve_names(list(resolution), cols, "resolution"))
    out = {}
    for c in numeric:
        c = int(c)
        if c in given or c in fixed:
            continue
        import pandas as pd

        v = pd.to_numeric(X.iloc[:, c], errors="coerce").to_numpy(dtype=np.float64)
        lv = infer_levels(v, infer_resolution(v, X.dtypes.iloc[c]))
        if lv is not None:
            out[c] = lv
    for c, lv in given.items():
        if lv is None:
            continue
        try:
            arr = np.unique(np.asarray(list(lv), dtype=np.float64))
        except (TypeError, ValueError):
            raise ValueError(f"levels[{cols[c]!r}] must be a list of numbers; got {lv!r}") from None
        if arr.size < 1 or not np.isfinite(arr).all():
            raise ValueError(f"levels[{cols[c]!r}] must hold finite numbers; got {lv!r}")
        out[c] = arr
    return out
