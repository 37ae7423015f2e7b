"""Scale-out on Dask: explain a data set partition by partition on an existing cluster.

fastcf does not build a cluster of its own. :func:`explain` maps an explainer's batch path
(``explainer.explain(X_block, targets_block, **options)``: one Numba call per block for the
linear and LVQ families, one exact program per row for :class:`~fastcf.TreeExplainer`) over the
blocks of a :class:`dask.array.Array` or the partitions of a :class:`dask.dataframe.DataFrame`
and returns lazy results. The explainer is shipped to the workers once: scattered with
``broadcast=True`` when a :class:`distributed.Client` is active, else held by a single graph key
that every block depends on. A tree ensemble's program is built before it is shipped
(:func:`_built`), so that no worker builds it again.

Dask is an optional dependency (``pip install "fastcf[dask]"``); it is imported only when a
function of this module is called, so ``import fastcf`` works without it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, fields

import numpy as np

from ._dask_checks import (
    RESULT_COLUMNS,
    _check_explainer,
    _check_labels,
    _check_options,
    _feature_names,
    _is_scalar_target,
    _output_columns,
    _row_box,
)
from ._validation import _describe

__all__ = ["explain", "explain_partition", "DaskCounterfactuals", "RESULT_COLUMNS"]

_FIELDS = ("x", "success", "status", "distance", "nit", "proba", "message")


def _import_dask():
    try:
        import dask
        import dask.array as da
        import dask.dataframe as dd
    except ImportError as exc:
        raise ImportError(
            'fastcf.distributed needs Dask: pip install "fastcf[dask]" '
            '(or pip install "dask[array,dataframe,distributed]")'
        ) from exc
    return dask, da, dd


# ---------------------------------------------------------------------------- block functions
def _run_block(explainer, X, targets, options, has_proba):
    """Explain one block; return the CounterfactualBatch fields that leave the worker."""
    n = X.shape[0]
    K = len(explainer.classes_)
    if np.ndim(targets) == 1 and len(targets) != n:
        raise ValueError(
            f"targets has {len(targets)} labels in a partition of {n} rows; targets must be "
            "aligned with the rows of data (same partitioning)"
        )
    if n == 0:  # an empty partition: the explainers reject N = 0, nothing to solve
        empty = [np.empty((0, X.shape[1]))] + [
            np.empty(0, dtype=t) for t in (bool, int, float, int)
        ]
        return (*empty, np.empty((0, K)) if has_proba else None, np.empty(0, dtype=object))
    batch = explainer.explain(X, targets, **options)
    proba = batch.proba
    if has_proba and (proba is None or proba.shape != (n, K)):
        raise RuntimeError(
            f"{type(explainer).__name__}.explain returned proba of shape "
            f"{None if proba is None else proba.shape}; expected ({n}, {K})"
        )
    return (
        batch.x,
        np.asarray(batch.success, dtype=bool),
        np.asarray(batch.status, dtype=np.int64),
        np.asarray(batch.distance, dtype=np.float64),
        np.asarray(batch.nit, dtype=np.int64),
        proba if has_proba else None,
        _messages(batch.message, n),
    )


def _messages(message, n):
    """Return the per-row messages as an (n,) object array of str."""
    out = np.empty(n, dtype=object)
    out[:] = [message] * n if isinstance(message, str) else list(message)
    return out


def _with_box(options, lo, hi):
    """Return ``options`` with the per-row parts of ``bounds`` (``lo``/``hi`` not None) set."""
    if lo is None and hi is None:
        return options
    rows = [p.to_numpy() if hasattr(p, "to_numpy") else p for p in (lo, hi)]
    box = tuple(s if r is None else r for s, r in zip(options["bounds"], rows, strict=True))
    return {**options, "bounds": box}


def _array_block(X, targets, explainer, options, has_proba, lo=None, hi=None):
    # one task per block returns the tuple of fields; _field tasks pick them out without copies
    return _run_block(explainer, X, targets, _with_box(options, lo, hi), has_proba)


def _field(fields_of_block, i):
    out = fields_of_block[i]
    return out if out.ndim == 2 else out[:, None]  # a view; 1-D fields are sliced [:, 0] after


def _frame_block(
    part, targets, explainer, options, has_proba, columns, proba_columns, lo=None, hi=None
):
    import pandas as pd

    if isinstance(targets, pd.Series):
        targets = targets.to_numpy()
    options = _with_box(options, lo, hi)
    x, success, status, distance, nit, proba, message = _run_block(
        explainer, part, targets, options, has_proba
    )
    out = pd.DataFrame(x, index=part.index, columns=columns)
    # (message: object, as the meta says, also where pandas would infer its string dtype)
    message = pd.Series(message, index=part.index, dtype=object)
    fields = (success, status, distance, nit, message)
    for name, values in zip(RESULT_COLUMNS, fields, strict=True):
        out[name] = values
    if has_proba:
        for k, name in enumerate(proba_columns):
            out[name] = proba[:, k]
    return out


def explain_partition(explainer, X, targets, **options):
    """Explain one in-memory partition; the function that :func:`explain` maps over blocks.

    It is the same batch path as ``explainer.explain(X, targets, **options)``, plus the
    handling of an empty partition (returned empty, where the explainers raise). Use it with any
    engine that hands out pandas or NumPy partitions, e.g. Spark's ``mapInPandas``
    (see ``docs/dask.md``).

    Parameters
    ----------
    explainer : LinearExplainer, LVQExplainer or TreeExplainer
    X : ndarray of shape (n, D) or pandas.DataFrame
        The rows of one partition (a DataFrame is checked against the explainer's feature names).
    targets : label or array-like of n labels
    **options
        Keyword arguments of ``explainer.explain`` (``lam=``, ``proba=``, ``frozen=``, ...).

    Returns
    -------
    pandas.DataFrame
        The counterfactual feature columns, then ``success``, ``status``, ``distance``, ``nit``,
        ``message`` (why a row failed, or how it was solved) and, for models with
        probabilities, one ``proba_<class>`` column per class; same index as ``X`` when it is a
        DataFrame.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcf import LinearExplainer
    >>> ex = LinearExplainer.from_arrays([[1.0, -1.0]], [0.0], feature_names=["a", "b"])
    >>> out = explain_partition(ex, np.array([[-1.0, 1.0], [-2.0, 0.0]]), 1, region=True)
    >>> list(out.columns)
    ['a', 'b', 'success', 'status', 'distance', 'nit', 'message', 'proba_0', 'proba_1']
    >>> bool(out["success"].all())
    True
    """
    import pandas as pd

    _check_options(explainer, options)
    has_proba = explainer._has_proba
    columns, proba_columns = _output_columns(explainer, getattr(X, "columns", None))
    if not isinstance(X, pd.DataFrame):
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (n, D); got {_describe(X)}")
        X = pd.DataFrame(X, columns=_feature_names(explainer))
    return _frame_block(X, targets, explainer, options, has_proba, columns, proba_columns)


# ---------------------------------------------------------------------------- result type
@dataclass(frozen=True, repr=False, eq=False)
class DaskCounterfactuals:
    """Lazy per-row results of :func:`explain` on a Dask array (N rows, D features, K classes).

    Every field is a :class:`dask.array.Array` with the row chunks of the input (NumPy arrays
    after :meth:`compute`). All fields come from one map over the blocks: computing several of
    them together (``res.compute()`` or ``dask.compute(res.x, res.success)``) solves each block
    once.

    Attributes
    ----------
    x : array of shape (N, D), float64
        The counterfactuals.
    success : array of shape (N,), bool
    status : array of shape (N,), int64
        Status codes of :mod:`fastcf.results`.
    distance : array of shape (N,), float64
    nit : array of shape (N,), int64
    proba : array of shape (N, K), float64, or None
        Class probabilities at ``x`` (``None`` for models without probabilities, e.g. LVQ).
    message : array of shape (N,), object (str)
        Each row's message: why it failed (``success`` False), or how it was solved.
    classes : ndarray of shape (K,)
        The class labels, in the order of the ``proba`` columns.
    """

    x: object
    success: object
    status: object
    distance: object
    nit: object
    proba: object
    message: object
    classes: np.ndarray

    def _apply(self, func, kwargs):
        # every array field at once (one pass over the blocks); proba may be None
        names = [f.name for f in fields(self) if f.name != "classes"]
        arrays = {n: getattr(self, n) for n in names if getattr(self, n) is not None}
        values = dict(zip(arrays, func(*arrays.values(), **kwargs), strict=True))
        return DaskCounterfactuals(**{n: values.get(n) for n in names}, classes=self.classes)

    def compute(self, **kwargs) -> DaskCounterfactuals:
        """Compute all fields in one pass; return the same object holding NumPy arrays.

        Parameters
        ----------
        **kwargs
            Passed to :func:`dask.compute` (e.g. ``scheduler=``).
        """
        import dask

        return self._apply(dask.compute, kwargs)

    def persist(self, **kwargs) -> DaskCounterfactuals:
        """Persist all fields (in cluster memory with a distributed Client); return a new object."""
        import dask

        return self._apply(dask.persist, kwargs)

    def __repr__(self) -> str:
        shape = getattr(self.x, "shape", None)
        kind = type(self.x).__module__.split(".")[0]
        return (
            f"DaskCounterfactuals(shape={shape}, {kind} arrays, "
            f"proba={'None' if self.proba is None else 'yes'}, classes={self.classes.tolist()})"
        )


def _built(explainer, options):
    """Build a tree ensemble's program here, once, before the explainer is shipped.

    A :class:`~fastcf.TreeExplainer` builds its program on its first ensemble query
    (:func:`fastcf._trees.answer.program`) and keeps it. Shipped unbuilt, every copy of it
    would build its own: each worker, once per call of :func:`explain` (a scattered copy), or
    each partition (a process pool unpickles the graph's key once per task); and each copy's
    first row would spend its ``time_limit`` on that construction, unlike the rows of the
    batch on an explainer that has answered before. Built here, the copies carry the program
    (the pickle is larger: 2.0 instead of 1.0 MB for 100 trees of depth 5) and every row is
    solved as in the local batch. A single tree (its leaf table), a model with categorical
    splits (each row's own conditioned program) and ``plausible=`` (the training regions) do
    not use it: nothing is built for them.

    Parameters
    ----------
    explainer : LinearExplainer, LVQExplainer or TreeExplainer
        Only a TreeExplainer is touched (its program cached on it, as a query would).
    options : dict
        The keyword arguments of ``explainer.explain`` of this call.
    """
    from .trees import TreeExplainer

    if not isinstance(explainer, TreeExplainer) or explainer._table is not None:
        return
    if explainer._forest.categories is not None or options.get("plausible", False) is not False:
        return
    from ._trees.answer import program

    program(explainer)


def _ship(explainer, options, client, dask):
    """One graph-level handle on the explainer: a scattered Future or one Delayed key."""
    _built(explainer, options)  # (after every check of the input: nothing is built for an error)
    if client is None:
        try:
            from distributed import default_client

            client = default_client()
        except (ImportError, ValueError):  # distributed not installed, or no active Client
            pass
    if client is not None and client is not False:
        # hash=False: no tokenize, which would pickle the explainer once more just for a key
        return client.scatter(explainer, broadcast=True, hash=False)
    # an explicit name avoids tokenizing (pickling) the explainer; every block depends on this key
    return dask.delayed(explainer, name=f"fastcf-explainer-{uuid.uuid4().hex}", pure=False)


# ---------------------------------------------------------------------------- public entry point
def explain(explainer, data, targets, *, client=None, **options):
    """Explain every row of a Dask array or DataFrame, lazily, block by block.

    Each block (array) or partition (DataFrame) goes through ``explainer.explain(block,
    targets_block, **options)``, the explainer's vectorised batch path, so the results equal the
    single-process batch bit for bit. Bad input raises here, before any work is scheduled.

    Parameters
    ----------
    explainer : LinearExplainer, LVQExplainer or TreeExplainer
        A fitted explainer (it pickles; it is sent to the workers once). A TreeExplainer
        solves a block's rows one after another: blocks of a few hundred rows spread it best.
    data : dask.array.Array of shape (N, D) or dask.dataframe.DataFrame
        The queries. An array must be chunked by rows only (one chunk along the columns) with
        known chunk sizes; a DataFrame must have the explainer's feature names as its columns,
        in order (any D numeric columns when the explainer has no feature names).
    targets : label, or array-like / pandas Series / dask array or Series of N labels
        One class label for every row, or one per row. NumPy / pandas targets are checked
        (length and labels) here; with a DataFrame their length is checked against the
        partition lengths, which are computed for that (one cheap pass over the partitions). A
        dask array must have N rows (it is rechunked like ``data``); a dask Series must have the
        partitioning of ``data`` (e.g. a column of the same frame).
    client : distributed.Client, False or None, default=None
        Where to scatter the explainer. ``None``: the active Client if there is one, else the
        explainer is one key of the task graph; ``False``: never scatter. A scattered
        explainer lives on that client's cluster: compute the results with the same client.
    **options
        Keyword arguments of ``explainer.explain``: ``lam=`` (a scalar here), ``proba=``,
        ``region=``, ``frozen=``, ``weights=``, ``bounds=``, ``method=``, ``metric=``, ...
        ``bounds=(lo, hi)``: each part a scalar or a (D,) array (one box for every row), or an
        (N, D) NumPy or dask array, one box per row of ``data``: it is split with the row
        blocks (array) or partitions (DataFrame) of ``data``.

    Returns
    -------
    DaskCounterfactuals or dask.dataframe.DataFrame
        For an array: a :class:`DaskCounterfactuals` of lazy arrays ``x`` (N, D), ``success``,
        ``status``, ``distance``, ``nit``, ``message`` (N,) and ``proba`` (N, K) or ``None``.
        For a DataFrame: a lazy DataFrame with the input's index and partitions, holding the
        counterfactual feature columns, then ``success`` (bool), ``status`` (int64),
        ``distance`` (float64), ``nit`` (int64), ``message`` (object: str) and one
        ``proba_<class>`` column per class for models with probabilities.

    Raises
    ------
    ValueError
        An array chunked along the columns or with unknown chunk sizes, the wrong number of
        features, columns that do not match the feature names, targets of the wrong length or
        with unknown labels, a per-row ``lam``.
    TypeError
        Non-numeric data or columns, options that ``explainer.explain`` does not take.
    ImportError
        If Dask is not installed.

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da  # doctest: +SKIP
    >>> from distributed import Client  # doctest: +SKIP
    >>> from fastcf import LinearExplainer, distributed
    >>> client = Client(n_workers=2, threads_per_worker=1)  # doctest: +SKIP
    >>> rng = np.random.default_rng(0)
    >>> ex = LinearExplainer.from_arrays(rng.normal(size=(10, 64)), rng.normal(size=10))
    >>> X = da.random.default_rng(1).normal(size=(10**6, 64), chunks=(50_000, 64))  # doctest: +SKIP
    >>> res = distributed.explain(ex, X, targets=3, lam=0.01)  # doctest: +SKIP
    >>> out = res.compute()  # doctest: +SKIP
    >>> out.x.shape, out.success.mean()  # doctest: +SKIP
    """
    dask, da, dd = _import_dask()
    _check_explainer(explainer)
    _check_options(explainer, options)
    has_proba = explainer._has_proba
    if isinstance(data, dd.DataFrame):
        return _explain_frame(explainer, data, targets, client, options, has_proba, dask, da, dd)
    if isinstance(data, da.Array):
        return _explain_array(explainer, data, targets, client, options, has_proba, dask, da, dd)
    raise TypeError(
        "data must be a dask.array.Array or a dask.dataframe.DataFrame; got "
        f"{type(data).__module__}.{type(data).__name__} (for in-memory data call "
        "explainer.explain directly, or wrap it with dask.array.from_array)"
    )


def _explain_array(explainer, data, targets, client, options, has_proba, dask, da, dd):
    D = explainer.n_features_in_
    if data.ndim != 2:
        raise ValueError(f"data must be 2-D (N, D); got a dask array of shape {data.shape}")
    if data.dtype.kind not in "biuf":
        raise TypeError(
            f"data must be a real numeric array (float, int or bool); got dtype {data.dtype}"
        )
    if any(isinstance(c, float) and np.isnan(c) for c in data.chunks[0]):
        raise ValueError(
            "data has unknown chunk sizes along the rows; call data.compute_chunk_sizes() first"
        )
    if data.shape[1] != D:
        raise ValueError(f"data has {data.shape[1]} features but the model expects {D}")
    if len(data.chunks[1]) != 1:
        raise ValueError(
            f"data must be chunked by rows only (one chunk along the {D} columns); got column "
            f"chunks {data.chunks[1]}; use data.rechunk({{1: -1}})"
        )
    N = data.shape[0]
    row_chunks = data.chunks[0]
    if _is_scalar_target(targets):
        _check_labels(targets, explainer, 1)
        target_arg, target_index = targets, None
    elif isinstance(targets, da.Array):
        if targets.ndim != 1 or targets.shape[0] != N:
            raise ValueError(
                f"targets must be one label or one label per row of data ({N}); got a dask "
                f"array of shape {targets.shape}"
            )
        target_arg, target_index = targets.rechunk((row_chunks,)), "i"
    elif isinstance(targets, (dd.Series, dd.DataFrame)):
        raise TypeError(
            "targets for a dask array must be a label, a NumPy/pandas array or a dask array; got a "
            "dask Series (use targets.to_dask_array(lengths=True))"
        )
    else:
        t = targets.to_numpy() if hasattr(targets, "to_numpy") else np.asarray(targets)
        _check_labels(t, explainer, N)
        target_arg, target_index = da.from_array(t, chunks=(row_chunks,)), "i"
    options, lo, hi = _row_box(options, N, D)
    box_args = []  # one box per row: chunked like data, each block gets its rows
    for p in (lo, hi):
        p = p if p is None or isinstance(p, da.Array) else da.from_array(np.asarray(p))
        box_args += [None, None] if p is None else [p.rechunk(data.chunks), "ij"]
    handle = _ship(explainer, options, client, dask)
    K = len(explainer.classes_)
    # an internal collection whose blocks are tuples of result arrays (never computed alone)
    blocks = da.blockwise(
        _array_block,
        "ij",
        data,
        "ij",
        target_arg,
        target_index,
        handle,
        None,
        options,
        None,
        has_proba,
        None,
        *box_args,
        dtype=object,
        meta=np.empty((0, 0), dtype=object),
        concatenate=True,
        name=f"fastcf-explain-{uuid.uuid4().hex}",
    )

    def pick(i, dtype, width=None):
        out = blocks.map_blocks(
            _field,
            i,
            chunks=(row_chunks, (1 if width is None else width,)),
            dtype=dtype,
            meta=np.empty((0, 0), dtype=dtype),
            name=f"fastcf-{_FIELDS[i]}-{uuid.uuid4().hex}",
        )
        return out if width is not None else out[:, 0]

    return DaskCounterfactuals(
        x=pick(0, np.float64, D),
        success=pick(1, bool),
        status=pick(2, np.int64),
        distance=pick(3, np.float64),
        nit=pick(4, np.int64),
        proba=pick(5, np.float64, K) if has_proba else None,
        message=pick(6, object),
        classes=np.asarray(explainer.classes_),
    )


def _explain_frame(explainer, data, targets, client, options, has_proba, dask, da, dd):
    import pandas as pd

    D = explainer.n_features_in_
    columns = [str(c) for c in data.columns]
    names = _feature_names(explainer)
    if names is not None:
        if columns != names:
            missing = [n for n in names if n not in columns][:5]
            extra = [c for c in columns if c not in names][:5]
            raise ValueError(
                f"data has columns that do not match the model's feature names: missing "
                f"{missing}, unexpected {extra} (the order must also match; select "
                "data[feature_names])"
            )
    elif len(columns) != D:
        raise ValueError(f"data has {len(columns)} columns but the model expects {D} features")
    bad = [
        f"{c} ({t})"
        for c, t in data.dtypes.items()
        if not (isinstance(t, np.dtype) and t.kind in "biuf")
    ]
    if bad:
        raise TypeError(
            "data must have real numeric NumPy columns (float, int or bool); non-numeric: "
            f"{bad[:5]} (convert them, e.g. data.astype('float64'))"
        )
    out_columns, proba_columns = _output_columns(explainer, data.columns)
    lens = None  # the partition lengths (a cheap pass), when labels or boxes must be split
    if _is_scalar_target(targets):
        _check_labels(targets, explainer, 1)
        target_arg = targets
    elif isinstance(targets, dd.Series):
        if targets.npartitions != data.npartitions:
            raise ValueError(
                f"targets (a dask Series) has {targets.npartitions} partitions but data has "
                f"{data.npartitions}; targets must be aligned with the rows of data (e.g. a "
                "column of the same frame)"
            )
        if (
            targets.known_divisions
            and data.known_divisions
            and tuple(targets.divisions) != tuple(data.divisions)
        ):
            raise ValueError(
                "targets (a dask Series) has divisions that differ from data's; targets must "
                "be aligned with the rows of data (e.g. a column of the same frame)"
            )
        target_arg = targets
    elif isinstance(targets, (dd.DataFrame, da.Array)):
        raise TypeError(
            "targets for a dask DataFrame must be a label, a NumPy/pandas array or a dask Series "
            f"with the same partitions; got {type(targets).__name__}"
        )
    else:
        t = targets.to_numpy() if hasattr(targets, "to_numpy") else np.asarray(targets)
        if t.ndim != 1:
            raise ValueError(
                f"targets must be one label or one label per row of data; got shape {t.shape}"
            )
        lens = np.asarray(data.map_partitions(len).compute(), dtype=np.int64)
        _check_labels(t, explainer, int(lens.sum()))
        target_arg = _by_partition(t, lens, pd.Series, pd.Series(t[:0]), dask, dd)
    box_args = []
    if any(p is not None for p in _row_box(options, None, D)[1:]):  # one box per row
        lens = (
            np.asarray(data.map_partitions(len).compute(), dtype=np.int64) if lens is None else lens
        )
        options, lo, hi = _row_box(options, int(lens.sum()), D)
        meta = pd.DataFrame(np.empty((0, D)))
        box_args = [
            p if p is None else _by_partition(p, lens, pd.DataFrame, meta, dask, dd)
            for p in (lo, hi)
        ]
    handle = _ship(explainer, options, client, dask)
    dtypes = dict.fromkeys(out_columns, np.float64)
    dtypes.update(success=bool, status=np.int64, distance=np.float64, nit=np.int64)
    dtypes.update(message=object)
    dtypes.update(dict.fromkeys(proba_columns, np.float64))
    meta = pd.DataFrame({c: pd.Series(dtype=t) for c, t in dtypes.items()}, index=data._meta.index)
    return data.map_partitions(
        _frame_block,
        target_arg,
        handle,
        options,
        has_proba,
        out_columns,
        proba_columns,
        *box_args,
        meta=meta,
        align_dataframes=False,
        enforce_metadata=False,
    )


def _by_partition(a, lengths, make, meta, dask, dd):
    """Return the rows of ``a`` (NumPy or dask) as a dask collection with partitions of lengths."""
    if hasattr(a, "rechunk"):  # a dask array
        blocks = a.rechunk((tuple(int(n) for n in lengths), -1)).to_delayed().ravel()
    else:
        blocks = np.split(np.asarray(a), np.cumsum(lengths)[:-1])
    parts = [dask.delayed(make)(b) for b in blocks]
    return dd.from_delayed(parts, meta=meta, verify_meta=False)
