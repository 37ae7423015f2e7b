"""The answers of :class:`fastcf.TabularExplainer`: the family's one result type, on DataFrames.

A tabular answer is a :class:`fastcf.Counterfactual` (one row) or a
:class:`fastcf.CounterfactualBatch` (several rows), as every family's is: its DataFrame form,
:class:`FrameCounterfactual` and :class:`FrameCounterfactualBatch`, holds ``x`` and ``x0`` as
DataFrames with the model's columns, dtypes and category labels, and adds the cost of each
column's change (``costs``), the table of changes (:attr:`FrameCounterfactual.changes`) and a
batch's :attr:`~FrameCounterfactualBatch.summary`. What the array form computes from numbers is
DataFrame-aware here: ``changed`` lists column labels, ``delta`` holds the numeric columns only
(a category has no difference), ``to_frame`` gives each column's cost.

``TabularCounterfactual`` and ``TabularBatch``, the names of these classes until issue 53, are
deprecated aliases for one release (reading them warns).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from ..results import Counterfactual, CounterfactualBatch

__all__ = ["FrameCounterfactual", "FrameCounterfactualBatch", "labels", "solver_nodes"]

#: deprecated name -> the class it now names (one release; see :func:`__getattr__`)
DEPRECATED = {
    "TabularCounterfactual": ("FrameCounterfactual", "fastcf.Counterfactual"),
    "TabularBatch": ("FrameCounterfactualBatch", "fastcf.CounterfactualBatch"),
}


def deprecated_alias(name, module):
    """Return the class a deprecated name stands for, with a :class:`DeprecationWarning`.

    ``module``: the module the name was read from (named in the message). The warning points
    at the caller of the module's ``__getattr__`` (``stacklevel=3``: past this function).
    """
    new, base = DEPRECATED[name]
    warnings.warn(
        f"{module}.{name} is deprecated and will be removed in the next release: "
        f"TabularExplainer answers are {base} like every family's (their DataFrame form is "
        f"fastcf.tabular.{new}); use {base} (or fastcf.tabular.{new})",
        DeprecationWarning,
        stacklevel=3,
    )
    return globals()[new]


def __getattr__(name):
    if name in DEPRECATED:
        return deprecated_alias(name, __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def labels(columns) -> np.ndarray:
    """Return the column labels as a 1-D object array (as the DataFrame has them)."""
    out = np.empty(len(columns), dtype=object)
    out[:] = list(columns)
    return out


def solver_nodes(infos) -> np.ndarray:
    """Return each row's ``nit``: the solver nodes of the program that gave its answer."""
    return np.array([int(i.get("nodes", 0)) for i in infos], dtype=np.int64)


def _is_number(dtype) -> bool:
    """Whether a column of ``dtype`` has differences (numbers; not bool, not categories)."""
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    return bool(is_numeric_dtype(dtype)) and not is_bool_dtype(dtype)


def _numbers(frame, j) -> np.ndarray:
    """Return column ``j`` of ``frame`` as float64 (missing cells NaN)."""
    import pandas as pd

    col = pd.to_numeric(frame.iloc[:, j], errors="coerce")
    return col.to_numpy(dtype=np.float64, na_value=np.nan)


def _delta(x, x0):
    """Return ``x − x0`` over the numeric columns of ``x``, a float64 DataFrame.

    A cell missing on both sides did not move (0); one missing on one side only is NaN.
    """
    import pandas as pd

    cols = [j for j, t in enumerate(x.dtypes) if _is_number(t)]
    d = np.empty((x.shape[0], len(cols)))
    with np.errstate(invalid="ignore"):
        for k, j in enumerate(cols):
            a, b = _numbers(x, j), _numbers(x0, j)
            d[:, k] = np.where(np.isnan(a) & np.isnan(b), 0.0, a - b)
    return pd.DataFrame(d, index=x.index, columns=x.columns[cols])


def _changed_mask(x, x0, costs, tol):
    """Return the columns of one-row ``x`` that differ from ``x0`` (or cost something).

    ``tol`` = 0: a column changed when its cost is positive or its value differs. ``tol`` > 0:
    a numeric column changed when it moved by more than ``tol`` (or was filled in, or emptied).
    """
    tol = float(tol)
    mask = np.zeros(x.shape[1], dtype=bool)
    for j in range(x.shape[1]):
        a, b = x0.iloc[0, j], x.iloc[0, j]
        if tol > 0 and _is_number(x.dtypes.iloc[j]):
            mask[j] = _far(a, b, tol)
        else:
            mask[j] = costs[j] > 0 or not _same(a, b)
    return mask


def _far(a, b, tol):
    a, b = float(a), float(b)
    if a != a or b != b:  # (a missing cell)
        return (a != a) != (b != b)
    return abs(b - a) > tol


def _changes(x, x0, costs, mask):
    import pandas as pd

    rows = []
    for j, name in enumerate(x.columns):
        if mask[j]:
            rows.append((name, x0.iloc[0, j], x.iloc[0, j], float(costs[j])))
    return pd.DataFrame(
        {
            "column": pd.Series([r[0] for r in rows], dtype=object),
            "before": pd.Series([_plain(r[1]) for r in rows], dtype=object),
            "after": pd.Series([_plain(r[2]) for r in rows], dtype=object),
            "cost": pd.Series([r[3] for r in rows], dtype=np.float64),
        }
    )


def _same(a, b):
    try:
        return bool(a == b) or (a != a and b != b)
    except (TypeError, ValueError):
        return a is b


def _plain(v):
    return v.item() if hasattr(v, "item") else v


def _no_sparse(kind):
    raise TypeError(
        f"{kind}.to_sparse() needs numeric rows: a tabular answer's columns have their own "
        "dtypes and category labels (x − x0 is not defined for a category); use .changes (every "
        "changed column), .changed (their labels) or .delta (the numeric columns' moves)"
    )


@dataclass(frozen=True, repr=False, eq=False)
class FrameCounterfactual(Counterfactual):
    """The answer to one tabular recourse query: a :class:`fastcf.Counterfactual` on DataFrames.

    It has every field of :class:`fastcf.Counterfactual` (``isinstance(res,
    fastcf.Counterfactual)`` holds), with ``x`` and ``x0`` one-row DataFrames, and the cost of
    each column's change (``costs``). What reads numbers is DataFrame-aware: :attr:`changed`
    lists column labels, :attr:`delta` holds the numeric columns only, :meth:`to_frame` gives
    each column's cost, :meth:`to_sparse` raises.

    Attributes
    ----------
    x : pandas.DataFrame
        One row: the counterfactual, with the model's columns, dtypes and category labels.
    x0 : pandas.DataFrame
        One row: the query.
    target : object
        The class asked for.
    proba : ndarray of shape (K,) or None
        Class probabilities at ``x`` (the model's ``predict_proba`` for ``proba=`` queries and
        tree models, else the sigmoid/softmax of its folded scores), ``None`` for a model
        without them.
    distance : float
        The cost of the change (see :class:`fastcf.TabularExplainer`); ``inf`` without an answer.
    success : bool
        ``True`` only when the model's own ``predict`` on ``x`` gives ``target`` (and its
        ``predict_proba`` meets ``proba=`` when that was asked).
    status : int
        0 for a certified optimum; 1 a tree program stopped by ``time_limit`` with an answer;
        3 infeasible (no recourse under the constraints); 4 the answer failed the model's check
        at every margin tried; 6 the MILP solver failed; 9 a row of a batch that cannot be read.
    message : str
        The reason, with HiGHS's model status.
    nit : int
        The solver nodes of the program that gave the answer (``info["nodes"]``: the
        branch-and-bound's or HiGHS's; 0 where the solver reports none).
    method : str
        ``"milp"``, with the solvers that answered (``"milp (branch-and-bound)"``).
    lam, grad_norm : None
        No λ and no gradient: the programs are solved exactly.
    feature_names : ndarray of object
        The columns, as the DataFrame labels them.
    info : dict
        ``solver``, ``nodes``, ``objective``, ``mip_gap`` (``highs_status`` for HiGHS),
        ``margin`` (the margin of the accepted answer), ``time`` (seconds in the solver) and
        ``exact``.
    costs : ndarray of shape (D,)
        The cost of each column's change.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import fastcf
    >>> from sklearn.compose import make_column_transformer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import OneHotEncoder, StandardScaler
    >>> X = pd.DataFrame({"income": [10.0, 20, 30, 40, 50, 60], "job": list("aabbcc")})
    >>> y = [0, 0, 0, 1, 1, 1]
    >>> pre = make_column_transformer((StandardScaler(), ["income"]), (OneHotEncoder(), ["job"]))
    >>> model = make_pipeline(pre, LogisticRegression()).fit(X, y)
    >>> res = fastcf.TabularExplainer(model, X).explain(X.iloc[[0]], 1)
    >>> isinstance(res, fastcf.Counterfactual), bool(res.success), int(model.predict(res.x)[0])
    (True, True, 1)
    >>> list(res.changes.columns)
    ['column', 'before', 'after', 'cost']
    >>> list(res.delta.columns)  # the numeric columns' moves (a category has none)
    ['income']
    """

    costs: np.ndarray = field(kw_only=True)

    @property
    def delta(self):
        """``x − x0`` of the numeric columns: a one-row float64 DataFrame.

        Categorical, ordinal (pandas ``Categorical``), label and bool columns have no
        difference and are left out (:attr:`changes` lists every changed column). A cell
        missing before and after is 0; one filled in (or emptied) is NaN.
        """
        return _delta(self.x, self.x0)

    def changed_mask(self, tol: float = 0.0) -> np.ndarray:
        """Boolean mask of the columns that changed, shape (D,).

        Parameters
        ----------
        tol : float, default=0.0
            0: a column changed when its value differs (or its change costs something). Above
            0: a numeric column changed when it moved by more than ``tol``; other columns when
            they differ.
        """
        return _changed_mask(self.x, self.x0, self.costs, tol)

    @property
    def changed_index(self) -> np.ndarray:
        """Positions of the columns that changed."""
        return np.flatnonzero(self.changed_mask())

    @property
    def changed(self) -> list:
        """Labels of the changed columns, as the DataFrame has them (not their ``str``)."""
        mask = self.changed_mask()
        return [name for name, m in zip(self.x.columns, mask, strict=True) if m]

    @property
    def changes(self):
        """DataFrame of the changed columns: ``column, before, after, cost``."""
        return _changes(self.x, self.x0, self.costs, self.changed_mask())

    def to_sparse(self, what="delta"):
        """Not for tabular answers: raises a :class:`TypeError` (see :attr:`changes`)."""
        _no_sparse("a tabular answer")

    def to_frame(self):
        """Return a DataFrame, one row per column: feature, original, counterfactual, cost.

        As :meth:`fastcf.Counterfactual.to_frame` lays out one answer (with every column,
        changed or not, and its cost instead of a numeric change: a category has none).

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from sklearn.linear_model import LogisticRegression
        >>> from fastcf import TabularExplainer
        >>> X = pd.DataFrame({"a": np.arange(20.0), "b": np.arange(20.0) % 3})
        >>> m = LogisticRegression().fit(X, X.a > 9.5)
        >>> res = TabularExplainer(m, X).explain(X.iloc[[0]], True)
        >>> list(res.to_frame().columns)
        ['feature', 'original', 'counterfactual', 'cost']
        """
        import pandas as pd

        return pd.DataFrame(
            {
                "feature": pd.Series(list(self.x.columns), dtype=object),
                "original": pd.Series([_plain(v) for v in self.x0.iloc[0]], dtype=object),
                "counterfactual": pd.Series([_plain(v) for v in self.x.iloc[0]], dtype=object),
                "cost": np.asarray(self.costs, dtype=np.float64),
            }
        )

    def __repr__(self) -> str:
        ch = self.changes
        moves = ", ".join(f"{r.column}: {r.before!r} -> {r.after!r}" for r in ch.itertuples())
        return (
            f"{type(self).__name__}(success={self.success}, status={self.status}, "
            f"target={_plain(self.target)!r}, distance={self.distance:.6g},\n"
            f"  message={self.message!r},\n"
            f"  changes=[{moves}])"
        )


@dataclass(frozen=True, repr=False, eq=False)
class FrameCounterfactualBatch(CounterfactualBatch):
    """Answers to N tabular queries: a :class:`fastcf.CounterfactualBatch` on DataFrames.

    ``isinstance(batch, fastcf.CounterfactualBatch)`` holds; ``batch[i]`` is a
    :class:`FrameCounterfactual`. ``x`` and ``x0`` are N-row DataFrames (the query's index),
    ``costs`` the cost of each column's change per row, and :attr:`summary` the batch at a
    glance.

    Attributes
    ----------
    x, x0 : pandas.DataFrame
        N rows: the answers and the queries (the query's index).
    target : ndarray of shape (N,)
    proba : ndarray of shape (N, K) or None
    distance : ndarray of shape (N,)
    success : ndarray of bool, shape (N,)
    status : ndarray of int, shape (N,)
    message : list of str
    nit : ndarray of int, shape (N,)
        As :attr:`FrameCounterfactual.nit`, per row.
    method : str
    lam, grad_norm : None
    feature_names : ndarray of object
        The columns, as the DataFrame labels them.
    info : list of dict
        One dict per row (as :attr:`FrameCounterfactual.info`).
    costs : ndarray of shape (N, D)

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import fastcf
    >>> from sklearn.linear_model import LogisticRegression
    >>> X = pd.DataFrame({"a": np.arange(20.0), "b": np.arange(20.0) % 3})
    >>> m = LogisticRegression().fit(X, X.a > 9.5)
    >>> batch = fastcf.TabularExplainer(m, X).explain(X.iloc[:3], True)
    >>> isinstance(batch, fastcf.CounterfactualBatch), len(batch), batch.x.shape
    (True, 3, (3, 2))
    >>> isinstance(batch[0], fastcf.Counterfactual), batch.summary["n_success"]
    (True, 3)
    """

    info: list = field(default_factory=list)
    costs: np.ndarray = field(kw_only=True)

    def __getitem__(self, i) -> FrameCounterfactual:
        """Return answer ``i`` as a :class:`FrameCounterfactual`."""
        i = int(i)
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"answer {i} of a batch of {n}")
        one = n == 1  # a single query: its frames as they are
        return FrameCounterfactual(
            x=self.x if one else self.x.iloc[[i]],
            x0=self.x0 if one else self.x0.iloc[[i]],
            target=_plain(self.target[i]),
            proba=None if self.proba is None else self.proba[i],
            distance=float(self.distance[i]),
            success=bool(self.success[i]),
            status=int(self.status[i]),
            message=self.message[i],
            nit=int(self.nit[i]),
            method=self.method,
            lam=None if self.lam is None else float(self.lam[i]),
            grad_norm=None if self.grad_norm is None else float(self.grad_norm[i]),
            feature_names=self.feature_names,
            info=self.info[i],
            costs=self.costs[i],
        )

    @property
    def delta(self):
        """``x − x0`` of the numeric columns: an N-row float64 DataFrame.

        As :attr:`FrameCounterfactual.delta` (categorical columns are left out).
        """
        return _delta(self.x, self.x0)

    def to_sparse(self, what="delta"):
        """Not for tabular answers: raises a :class:`TypeError` (see :attr:`summary`)."""
        _no_sparse("a tabular batch")

    @property
    def n_changed(self) -> np.ndarray:
        """The number of changed columns of each answer."""
        return (self.costs > 0).sum(axis=1)

    @property
    def summary(self) -> dict:
        """Share with recourse, cost distribution, changed columns and the most changed columns.

        Returns
        -------
        dict
            ``n``, ``n_success``, ``share_with_recourse``, ``cost`` (``median``, ``mean``,
            ``p90``, ``max`` over the successes), ``n_changed_mean``, ``changed_share`` (per
            column label: the share of successes that change it), ``status_counts``.
        """
        ok = np.asarray(self.success, dtype=bool)
        n = len(self)
        d = self.distance[ok]
        cost = (
            {
                "median": float(np.median(d)),
                "mean": float(np.mean(d)),
                "p90": float(np.quantile(d, 0.9)),
                "max": float(np.max(d)),
            }
            if d.size
            else {"median": np.nan, "mean": np.nan, "p90": np.nan, "max": np.nan}
        )
        share = (self.costs[ok] > 0).mean(axis=0) if ok.any() else np.zeros(self.costs.shape[1])
        changed = {c: float(s) for c, s in zip(self.x.columns, share, strict=True) if s > 0}
        values, counts = np.unique(self.status, return_counts=True)
        return {
            "n": n,
            "n_success": int(ok.sum()),
            "share_with_recourse": float(ok.mean()) if n else float("nan"),
            "cost": cost,
            "n_changed_mean": float(self.n_changed[ok].mean()) if ok.any() else float("nan"),
            "changed_share": dict(sorted(changed.items(), key=lambda kv: -kv[1])),
            "status_counts": {int(v): int(c) for v, c in zip(values, counts, strict=True)},
        }

    def to_frame(self):
        """Return one row per query: ``target, success, status, distance, n_changed, changed``.

        Indexed as ``x`` (the queries' index); ``changed`` joins the changed columns' labels.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from sklearn.linear_model import LogisticRegression
        >>> from fastcf import TabularExplainer
        >>> X = pd.DataFrame({"a": np.arange(20.0), "b": np.arange(20.0) % 3})
        >>> m = LogisticRegression().fit(X, X.a > 9.5)
        >>> frame = TabularExplainer(m, X).explain(X.iloc[:3], True).to_frame()
        >>> list(frame.columns)
        ['target', 'success', 'status', 'distance', 'n_changed', 'changed']
        """
        import pandas as pd

        names = np.asarray([str(c) for c in self.x.columns], dtype=object)
        return pd.DataFrame(
            {
                "target": self.target,
                "success": self.success,
                "status": self.status,
                "distance": self.distance,
                "n_changed": self.n_changed,
                "changed": [", ".join(names[r > 0]) for r in self.costs],
            },
            index=self.x.index,
        )

    def __repr__(self) -> str:
        n = len(self)
        ok = int(np.sum(self.success))
        med = np.median(self.distance[self.success]) if ok else float("nan")
        return f"{type(self).__name__}(n={n}, success={ok}/{n}, median distance={med:.6g})"
