"""The columns of a tabular model: kinds, training ranges, costs and actionability.

:class:`Schema` is built once per explainer from the training DataFrame and the :class:`Fold`
of the model. It holds, per column the model reads:

* numeric columns: integer or continuous, the training range (the default bounds), the range of
  values their dtype holds (a constraint of every answer: an ``int8`` column stays in
  −128..127), the cost of a unit change (``1 / MAD`` by default: the Manhattan distance in MAD
  units);
* categorical columns: the encoder's categories, which of them occur in the training data (the
  only ones an answer may move to), a cost of 1 per change;
* ordinal columns (an ``OrdinalEncoder``, or a ``OneHotEncoder`` of an ordered pandas
  categorical): the categories' ranks; a move of r ranks costs ``r / MAD`` of the training ranks.
  The ranks of an ordered pandas ``Categorical`` are its dtype's order, whatever codes the encoder
  gives (a default ``OrdinalEncoder`` codes the categories alphabetically); otherwise the
  encoder's codes;

and the user's actionability: immutable, increase-only and decrease-only columns. It also reads
query rows into program values (:meth:`Schema.read`) and writes answers back into DataFrames
with the original dtypes (:meth:`Schema.frame`).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .._validation import median_absolute_deviation
from .grid import grid_dtype, infer_resolution, steps, value

__all__ = ["Schema", "describe", "resolve_names", "dtype_range", "range_text"]


def resolve_names(names, columns, what):
    """Return the positions of the column ``names`` (a list of column labels), checked."""
    if names is None:
        return []
    if isinstance(names, str) or not hasattr(names, "__iter__"):
        names = [names]
    index = {str(c): i for i, c in enumerate(columns)}
    out = []
    for nm in names:
        i = index.get(str(nm))
        if i is None:
            raise ValueError(
                f"{what} names column {nm!r}, which the model does not read; its columns: "
                f"{[str(c) for c in columns]}"
            )
        out.append(i)
    return out


def _mad(values):
    v = values[~np.isnan(values)]
    if v.shape[0] < 2:
        return 1.0
    return float(median_absolute_deviation(v[:, None])[0])


def dtype_range(dt):
    """Return ``(lo, hi, integral)``: the values a numeric column of dtype ``dt`` can hold.

    Integers: their ``iinfo`` range (the largest float that does not overflow at the top);
    bool: 0..1; float16 and float32: ``±finfo.max``; anything else: unbounded.

    Examples
    --------
    >>> import numpy as np
    >>> dtype_range(np.dtype("int8")), dtype_range(np.dtype("bool"))
    ((-128.0, 127.0, True), (0.0, 1.0, True))
    """
    try:
        np_dt = np.dtype(getattr(dt, "numpy_dtype", dt))  # pandas' nullable dtypes too
    except TypeError:
        return -math.inf, math.inf, False
    if np_dt.kind == "b":
        return 0.0, 1.0, True
    if np_dt.kind in "iu":
        info = np.iinfo(np_dt)
        hi = float(info.max)
        if int(hi) > int(info.max):  # int64, uint64: 2**63 (2**64) would overflow
            hi = float(np.nextafter(hi, -math.inf))
        return float(info.min), hi, True
    if np_dt.kind == "f" and np_dt.itemsize < 8:
        top = float(np.finfo(np_dt).max)
        return -top, top, False
    return -math.inf, math.inf, False


def range_text(dt, lo, hi):
    """Return ``"int8 (-128..127)"``: a dtype and the range of its values, for messages."""
    if lo.is_integer() and hi.is_integer():
        return f"{dt} ({int(lo)}..{int(hi)})"
    return f"{dt} ({lo:g}..{hi:g})"


def _fits(v, dt):
    """Return whether the label ``v`` survives a write into a column of dtype ``dt``."""
    import pandas as pd

    if isinstance(dt, pd.CategoricalDtype):
        return any(_key(v) == _key(c) for c in dt.categories)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a lossy cast warns: the label does not fit
        try:
            out = pd.Series([v], dtype=object).astype(dt).iloc[0]
        except (TypeError, ValueError, OverflowError, Warning):
            return False
    return not _is_missing(out) and bool(_key(out) == _key(v))


def _integral(values):
    v = values[~np.isnan(values)]
    return bool(v.shape[0] > 0 and np.all(v == np.round(v)) and np.all(np.abs(v) < 2**53))


class Schema:
    """Column kinds, ranges, costs and actionability of one explainer (see the module doc).

    Parameters
    ----------
    X : pandas.DataFrame
        Training data, the model's columns in its order.
    fold : Fold
    immutable, increase_only, decrease_only : list of str
    integer, categorical : list of str or None
        None: inferred (integer: integer dtypes and all-integral float columns; categorical:
        the encoded columns). A column of an integer or bool dtype is integer in any case.
    weights : dict or None
        Column -> cost of a unit change (numeric), of a change (categorical), of a one-rank move
        (ordinal).
    resolution, levels : dict, optional
    on_grid : bool, default=False
        Read a float32-rounded double of a grid column as the grid point it records
        (12.539999961853027 as 12.54, :meth:`read`): the tree program places values among its
        grid points, where such a value has no place. The linear programs take the row's value
        as it is (their steps are read in float32: :func:`.grid.grid_dtype`).
    """

    def __init__(
        self, X, fold, immutable, increase_only, decrease_only, integer, categorical, weights,
        resolution=None, levels=(), on_grid=False,
    ):  # fmt: skip
        import pandas as pd

        self.on_grid = on_grid
        cols = list(X.columns)
        self.columns = cols
        self.dtypes = list(X.dtypes)
        D = len(cols)
        self.kind = [fold.kinds.get(c, "unused") for c in range(D)]
        self.fold = fold
        enc = [c for c in range(D) if self.kind[c] in ("categorical", "ordinal")]
        if categorical is not None:
            cat = set(resolve_names(categorical, cols, "categorical"))
            missing = [str(cols[c]) for c in enc if c not in cat]
            extra = [str(cols[c]) for c in cat if self.kind[c] == "numeric"]
            if missing or extra:
                raise ValueError(
                    "categorical must list the columns the model encodes (OneHotEncoder / "
                    f"OrdinalEncoder): {[str(cols[c]) for c in enc]}; "
                    + (f"missing {missing}" if missing else f"{extra} are scaled as numbers")
                )
        # ---- numeric columns
        num = fold.numeric
        vals = (
            np.column_stack(
                [
                    pd.to_numeric(X.iloc[:, c], errors="coerce").to_numpy(dtype=np.float64)
                    for c in num
                ]
            )
            if num.size
            else np.zeros((X.shape[0], 0))
        )
        if integer is None:
            is_int = np.array([_integral(vals[:, j]) for j in range(num.size)], dtype=bool)
        else:
            ints = set(resolve_names(integer, cols, "integer"))
            bad = [str(cols[c]) for c in ints if self.kind[c] != "numeric"]
            if bad:
                raise ValueError(f"integer names columns that are not numeric inputs: {bad}")
            is_int = np.array([c in ints for c in num], dtype=bool)
        # the dtype's range is a constraint of every answer, and its integers stay integers
        ranges = [dtype_range(self.dtypes[c]) for c in num]
        self.num_dlo = np.array([r[0] for r in ranges], dtype=np.float64)
        self.num_dhi = np.array([r[1] for r in ranges], dtype=np.float64)
        is_int = is_int | np.array([r[2] for r in ranges], dtype=bool)
        self.num_int = is_int
        self.levels = frozenset(levels)
        self.num_res = _resolutions(resolution, X, num, vals, is_int, ranges, self.levels)
        # the dtype each numeric column's decimals are read in (float32 for float32-rounded
        # doubles: grid.grid_dtype), for its grid steps
        self.num_read = [grid_dtype(vals[:, j], X.dtypes.iloc[c]) for j, c in enumerate(num)]
        with np.errstate(all="ignore"):
            lo = np.array(
                [
                    np.nanmin(vals[:, j]) if np.isfinite(vals[:, j]).any() else -np.inf
                    for j in range(num.size)
                ]
            )
            hi = np.array(
                [
                    np.nanmax(vals[:, j]) if np.isfinite(vals[:, j]).any() else np.inf
                    for j in range(num.size)
                ]
            )
        self.num_lo, self.num_hi = lo, hi
        self.num_mad = np.array([_mad(vals[:, j]) for j in range(num.size)])
        w_num = 1.0 / self.num_mad
        # ---- encoded columns: labels, which occur in training, ranks
        self.cat_cols = fold.cat_cols
        self.cat_start = fold.cat_start
        self.cat_index = []  # per block: label -> index
        seen = np.zeros(int(fold.cat_start[-1]), dtype=bool)
        writable = np.zeros(int(fold.cat_start[-1]), dtype=bool)  # labels the dtype can hold
        rank = np.zeros(int(fold.cat_start[-1]))
        w_cat = np.ones(len(fold.cat_cols))
        for j, c in enumerate(fold.cat_cols):
            labels = fold.labels[c]
            self.cat_index.append({_key(v): k for k, v in enumerate(labels)})
            present = {_key(v) for v in X.iloc[:, c].dropna().unique()}
            sl = slice(fold.cat_start[j], fold.cat_start[j + 1])
            # (every level the user gave is a value an answer may take)
            seen[sl] = [c in self.levels or _key(v) in present for v in labels]
            writable[sl] = [_fits(v, self.dtypes[c]) for v in labels]
            if self.kind[c] == "ordinal":
                r = _ranks(fold.ranks[c], labels, self.dtypes[c])
                rank[sl] = r
                codes = X.iloc[:, c].map(dict(zip(labels, r, strict=True))).to_numpy(dtype=float)
                w_cat[j] = 1.0 / _mad(codes)
        self.cat_seen = seen
        self.cat_writable = writable
        self.cat_rank = rank
        # ---- weights
        self.w_num, self.w_cat = w_num, w_cat
        if weights is not None:
            if not isinstance(weights, dict):
                raise TypeError(f"weights must be a dict {{column: cost}}; got {type(weights)}")
            for c, w in zip(
                resolve_names(list(weights), cols, "weights"), weights.values(), strict=True
            ):
                w = float(w)
                if not (math.isfinite(w) and w > 0):
                    raise ValueError(
                        f"weights[{cols[c]!r}] must be a finite number > 0 (use immutable= to "
                        f"keep a column fixed); got {w!r}"
                    )
                if self.kind[c] == "numeric":
                    self.w_num[np.searchsorted(num, c)] = w
                elif self.kind[c] != "unused":
                    self.w_cat[np.searchsorted(fold.cat_cols, c)] = w
        # ---- actionability
        imm = resolve_names(immutable, cols, "immutable")
        inc = resolve_names(increase_only, cols, "increase_only")
        dec = resolve_names(decrease_only, cols, "decrease_only")
        for a, b, na, nb in (
            (imm, inc, "immutable", "increase_only"),
            (imm, dec, "immutable", "decrease_only"),
            (inc, dec, "increase_only", "decrease_only"),
        ):
            both = sorted(set(a) & set(b))
            if both:
                raise ValueError(
                    f"column {cols[both[0]]!r} is both {na} and {nb}; give each column one "
                    "constraint"
                )
        for c in inc + dec:
            if self.kind[c] == "categorical":
                raise ValueError(
                    f"column {cols[c]!r} is categorical without an order, so increase_only / "
                    "decrease_only mean nothing for it; use an OrdinalEncoder or an ordered "
                    "pandas Categorical, or allowed= in explain"
                )
        self.frozen = np.zeros(D, dtype=bool)
        self.frozen[imm] = True
        self.direction = np.zeros(D, dtype=np.int64)
        self.direction[inc] = 1
        self.direction[dec] = -1
        self.immutable = [str(cols[c]) for c in imm]

    # ------------------------------------------------------------------ rows
    def read(self, row, r=0):
        """Return (x_num, k0) of one query row (a 1-D object array of the model's columns).

        ``r``: the row's label in messages (the DataFrame's index label). A missing cell (NaN,
        None, ``pd.NA``) reads as the value the model puts there, where every path of its
        column through the pipeline starts with a ``SimpleImputer`` (``fold.fill``); without
        one it is an error naming the column and the row.
        """
        r = _key(r)  # (a NumPy integer label as the int it is: "row 10", not "np.int64(10)")
        fill = self.fold.fill
        num = self.fold.numeric
        x = np.empty(num.size)
        for j, c in enumerate(num):
            v = row[c]
            # the imputer's value of a missing cell: what the model reads, but no value of the
            # user's, so neither bound to the column's grid nor integral (issue 52: a mean-
            # imputed 0.1-grid column was refused); fastcf._tabular.imputed answers such a row
            imputed = _is_missing(v) and c in fill
            if imputed:  # (None and pd.NA too: the imputer's float conversion reads them as NaN)
                v = fill[c]
            try:
                v = float(v)
            except (TypeError, ValueError):
                if _is_missing(v):  # pd.NA, None
                    v = math.nan
                else:
                    raise ValueError(
                        f"column {self.columns[c]!r} of row {r!r} must be a number; got {v!r}"
                    ) from None
            if not math.isfinite(v):
                raise ValueError(
                    f"column {self.columns[c]!r} of row {r!r} is missing ({row[c]!r}) and the "
                    "model has no imputer for it: fill it in first"
                    if math.isnan(v)
                    else f"column {self.columns[c]!r} of row {r!r} is {v!r}, not a finite number"
                )
            if not self.num_dlo[j] <= v <= self.num_dhi[j]:
                dt = range_text(self.dtypes[c], self.num_dlo[j], self.num_dhi[j])
                raise ValueError(
                    f"column {self.columns[c]!r} of row {r!r} holds {v!r}, which its training "
                    f"dtype {dt} cannot hold"
                )
            if self.num_int[j] and v != round(v) and not imputed:
                raise ValueError(
                    f"column {self.columns[c]!r} is integer (inferred from the training data, "
                    f"or given by integer=), but row {r!r} has {v!r}; pass integer= without it"
                )
            res = self.num_res[j]
            if res > 0.0 and res != 1.0 and not imputed:
                n = steps(v, res, self.num_read[j])
                if n is None:
                    raise ValueError(
                        f"column {self.columns[c]!r} of row {r!r} holds {v!r}, off its "
                        f"resolution {res:g} (inferred from the training data, or given by "
                        f"resolution=); resolution={{{self.columns[c]!r}: None}} makes the "
                        "column continuous"
                    )
                if self.on_grid and self.num_read[j] != self.dtypes[c]:
                    # a float32-rounded double (12.539999961853027) as the decimal it records
                    # (12.54): the programs count whole steps from grid points; an unchanged
                    # cell keeps the row's own bits in the answer (frame())
                    v = value(n, res)
            x[j] = v
        k0 = np.empty(len(self.cat_cols), dtype=np.int64)
        for j, c in enumerate(self.cat_cols):
            v = row[c]
            if _is_missing(v):
                if c not in fill:
                    raise ValueError(
                        f"column {self.columns[c]!r} of row {r!r} is missing and the model has "
                        "no imputer for it: fill it in first"
                    )
                if not _is_nan(v):
                    # scikit-learn's SimpleImputer (missing_values=NaN) matches NaN only: it
                    # passes None and pd.NA on to the encoder as they are
                    raise ValueError(
                        f"column {self.columns[c]!r} of row {r!r} holds {v!r}, which the "
                        "model's imputer does not fill (it fills NaN): use NaN for a missing "
                        "value"
                    )
                v = fill[c]
            k = self.cat_index[j].get(_key(v))
            if k is None and c in self.levels and _is_missing(row[c]):
                raise ValueError(
                    f"column {self.columns[c]!r} of row {r!r} is missing, and its imputer's "
                    f"value {v!r} is not one of the column's levels {list(self.fold.labels[c])} "
                    "(levels=): fill it in, or give the column no levels"
                )
            if k is None and c in self.levels:
                raise ValueError(
                    f"column {self.columns[c]!r} of row {r!r} holds {v!r}, not one of its levels "
                    f"{list(self.fold.labels[c])} (levels=)"
                )
            if k is None:
                raise ValueError(
                    f"column {self.columns[c]!r} of row {r!r} has the category {v!r}, unseen in "
                    f"training; known: {list(self.fold.labels[c])}"
                )
            k0[j] = k
        return x, k0

    def missing(self, row):
        """Return a boolean mask over the columns: the cells of ``row`` that are missing."""
        return np.array([_is_missing(row[c]) for c in range(len(self.columns))], dtype=bool)

    def frame(self, frame, XN, K, XN0, K0):
        """Return the answers as a DataFrame in the original dtypes.

        ``frame``: the query rows; ``XN``, ``K``: the answers' numeric values and category
        indices; ``XN0``, ``K0``: the queries'. Only the columns that change are rewritten.
        """
        out = frame.copy()
        for j, c in enumerate(self.fold.numeric):
            same = XN[:, j] == XN0[:, j]
            if same.all():
                continue
            dt = self.dtypes[c]
            v = XN[:, j]
            if dt.kind in "iu":
                v = np.round(v)
            elif dt.kind == "b":
                v = v != 0
            out.isetitem(int(c), _column(frame, c, v, same, dt))
        for j, c in enumerate(self.cat_cols):
            same = K[:, j] == K0[:, j]
            if same.all():
                continue
            labels = self.fold.labels[c]
            out.isetitem(int(c), _column(frame, c, labels[K[:, j]], same, self.dtypes[c]))
        return out


def _column(frame, c, values, same, dt):
    """Return column ``c`` of the answers: ``values`` in ``dt``, the query's cells where ``same``.

    A cell the answer leaves as it read it stays the query's cell: a missing one stays missing
    (it read as its imputed value), a row that could not be read comes back as it was given.
    Where such a cell is a value ``dt`` cannot hold (an unseen category of a categorical
    dtype), the column keeps the object dtype rather than lose it.

    Where every cell is an answer's, ``dt`` a NumPy dtype and the values exactly its own
    (:func:`_exact_cast`), the array itself (the same cells as the object Series cast to ``dt``
    below, in a tenth of the time: a single query builds its answer row twice).
    """
    import pandas as pd

    if not same.any():
        cast = _exact_cast(values, dt)
        if cast is not None:
            return cast
    orig = frame.iloc[:, c]
    new = pd.Series(values, index=orig.index, dtype=object)
    if same.any():
        new = new.where(~same, orig.astype(object))
    try:
        cast = new.astype(dt)
    except (TypeError, ValueError, OverflowError):
        return new
    if not np.array_equal(cast.isna().to_numpy(), new.isna().to_numpy()):
        return new  # (astype to a categorical dtype turns a label it lacks into NaN)
    return cast


def _exact_cast(values, dt):
    """Return ``values`` as an array of NumPy dtype ``dt`` if it holds them exactly, else None.

    Numbers (bool, integer, float kinds): finite values whose cast back compares equal (a float
    dtype rounds them, as the cast of the object Series would, to a finite value); object: the
    array as objects (category labels, as the encoder stores them). Anything else (pandas' own
    dtypes) is None.
    """
    if not isinstance(dt, np.dtype):
        return None
    values = np.asarray(values)
    if dt.kind == "O":
        return values.astype(object)
    if dt.kind not in "biuf" or values.dtype.kind not in "biuf":
        return None
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        cast = values.astype(dt)
    if dt.kind == "f" and not np.isfinite(cast).all():  # (past float16's range, say)
        return None
    if dt.kind != "f" and not np.array_equal(cast, values):
        return None
    return cast


def _ranks(codes, labels, dt):
    """Return the ranks of an ordinal column's labels: its dtype's order, else the codes.

    An ordered pandas ``Categorical`` declares its order: a label ranks by its position in
    ``dt.categories`` (a label outside them, which the column cannot hold, ranks last),
    whatever codes the encoder gave (a default ``OrdinalEncoder`` sorts alphabetically).
    """
    import pandas as pd

    if not (isinstance(dt, pd.CategoricalDtype) and dt.ordered):
        return codes
    pos = {_key(v): float(i) for i, v in enumerate(dt.categories)}
    return np.array([pos.get(_key(v), float(len(pos))) for v in labels])


def _key(v):
    """Return a hashable key of a category label (numpy scalars as Python ones)."""
    return v.item() if hasattr(v, "item") else v


def describe(s, X):
    """Return (kinds, resolution, mad, weights): the explainer's description of its columns."""
    fold = s.fold
    names = [str(c) for c in X.columns]
    kinds, res = {}, {}
    for c, name in enumerate(names):
        kind = s.kind[c]
        if c in s.levels:
            kind = "levels"
        elif kind == "numeric":
            j = int(np.searchsorted(fold.numeric, c))
            r = float(s.num_res[j])
            kind = "integer" if s.num_int[j] else "numeric" if r > 0.0 else "continuous"
            res[name] = None if r == 0.0 else r
        kinds[name] = kind
    mad = {names[c]: float(m) for c, m in zip(fold.numeric, s.num_mad, strict=True)}
    for c, name in enumerate(names):  # a numeric column the model does not read: its MAD too
        if name not in mad and kinds[name] == "unused":
            v = X.iloc[:, c]
            if getattr(v.dtype, "kind", "O") in "iubf":
                mad[name] = _mad(v.to_numpy(dtype=np.float64, na_value=np.nan))
    weights = {names[c]: float(w) for c, w in zip(fold.numeric, s.w_num, strict=True)}
    weights.update({names[c]: float(w) for c, w in zip(fold.cat_cols, s.w_cat, strict=True)})
    return kinds, res, mad, weights


def _resolutions(resolution, X, num, vals, is_int, ranges, levels):
    """Return each numeric column's resolution (0.0: continuous; see :mod:`.grid`)."""
    cols = list(X.columns)
    res = np.array(
        [1.0 if is_int[j] else infer_resolution(vals[:, j], X.dtypes.iloc[c])
         for j, c in enumerate(num)],
        dtype=np.float64,
    )  # fmt: skip
    if resolution is None:
        return res
    if not isinstance(resolution, dict):
        raise TypeError(
            f"resolution must be a dict {{column: step or None}}; got {type(resolution).__name__}"
        )
    for c, r in zip(resolve_names(list(resolution), cols, "resolution"), resolution.values(),
                    strict=True):  # fmt: skip
        if c in levels:
            raise ValueError(f"column {cols[c]!r} has levels=; give it no resolution")
        if c not in num:
            raise ValueError(f"resolution[{cols[c]!r}]: the column is not a numeric input")
        j = int(np.searchsorted(num, c))
        if r is None:
            if ranges[j][2]:
                raise ValueError(
                    f"column {cols[c]!r} has an integer dtype: it cannot be continuous"
                )
            res[j] = 0.0
            continue
        r = float(r)
        if not (math.isfinite(r) and r > 0.0):
            raise ValueError(f"resolution[{cols[c]!r}] must be a number > 0 or None; got {r!r}")
        if (ranges[j][2] or is_int[j]) and r != round(r):
            raise ValueError(
                f"column {cols[c]!r} is integer: its resolution must be a whole number; got {r!r}"
            )
        res[j] = r
    return res


def _is_nan(v):
    """Tell whether ``v`` is a float NaN (what ``SimpleImputer(missing_values=NaN)`` fills)."""
    return isinstance(v, float | np.floating) and v != v


def _is_missing(v):
    import pandas as pd

    if v is None or v is pd.NA or v is pd.NaT:
        return True
    try:
        return bool(v != v)  # NaN
    except (TypeError, ValueError):
        return False
