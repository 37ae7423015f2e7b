"""The answers of :class:`fastcf.TabularExplainer`: one row, or a batch of rows.

A :class:`TabularCounterfactual` holds the answer as a one-row DataFrame with the model's
columns, dtypes and category labels; :attr:`TabularCounterfactual.changes` lists the changed
columns with their cost. A :class:`TabularBatch` holds N answers as one DataFrame and gives each
as a :class:`TabularCounterfactual` (``batch[i]``), with a :attr:`TabularBatch.summary`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["TabularCounterfactual", "TabularBatch"]


def _changes(x, x0, costs):
    import pandas as pd

    rows = []
    for j, name in enumerate(x.columns):
        a, b = x0.iloc[0, j], x.iloc[0, j]
        if costs[j] > 0 or not _same(a, b):
            rows.append((name, a, b, float(costs[j])))
    frame = pd.DataFrame(
        {
            "column": pd.Series([r[0] for r in rows], dtype=object),
            "before": pd.Series([_plain(r[1]) for r in rows], dtype=object),
            "after": pd.Series([_plain(r[2]) for r in rows], dtype=object),
            "cost": pd.Series([r[3] for r in rows], dtype=np.float64),
        }
    )
    return frame


def _same(a, b):
    try:
        return bool(a == b) or (a != a and b != b)
    except (TypeError, ValueError):
        return a is b


def _plain(v):
    return v.item() if hasattr(v, "item") else v


@dataclass(frozen=True, repr=False, eq=False)
class TabularCounterfactual:
    """The answer to one tabular recourse query.

    Attributes
    ----------
    x : pandas.DataFrame
        One row: the counterfactual, with the model's columns, dtypes and category labels.
    x0 : pandas.DataFrame
        One row: the query.
    target : object
        The class asked for.
    success : bool
        ``True`` only when the model's own ``predict`` on ``x`` gives ``target`` (and its
        ``predict_proba`` meets ``proba=`` when that was asked).
    distance : float
        The cost of the change (see :class:`fastcf.TabularExplainer`); ``inf`` without an answer.
    proba : ndarray or None
        Class probabilities at ``x`` (the model's ``predict_proba`` for ``proba=`` queries,
        else the sigmoid/softmax of its folded scores), ``None`` for a model without them.
    status : int
        0 for a certified optimum; 3 infeasible (no recourse under the constraints); 4 the
        answer failed the model's check at every margin tried; 6 the MILP solver failed.
    message : str
        The reason, with HiGHS's model status.
    costs : ndarray of shape (D,)
        The cost of each column's change.
    method : str
    info : dict
        ``highs_status``, ``objective``, ``mip_gap``, ``nodes``, ``margin`` (the margin of
        the accepted answer) and ``time`` (seconds in the solver).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from sklearn.compose import make_column_transformer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import OneHotEncoder, StandardScaler
    >>> from fastcf.tabular import TabularExplainer
    >>> X = pd.DataFrame({"income": [10.0, 20, 30, 40, 50, 60], "job": list("aabbcc")})
    >>> y = [0, 0, 0, 1, 1, 1]
    >>> pre = make_column_transformer((StandardScaler(), ["income"]), (OneHotEncoder(), ["job"]))
    >>> model = make_pipeline(pre, LogisticRegression()).fit(X, y)
    >>> res = TabularExplainer(model, X).explain(X.iloc[[0]], 1)
    >>> bool(res.success), int(model.predict(res.x)[0])
    (True, 1)
    >>> list(res.changes.columns)
    ['column', 'before', 'after', 'cost']
    """

    x: object
    x0: object
    target: object
    success: bool
    distance: float
    proba: np.ndarray | None
    status: int
    message: str
    costs: np.ndarray
    method: str = "milp"
    info: dict = field(default_factory=dict)

    @property
    def changes(self):
        """DataFrame of the changed columns: ``column, before, after, cost``."""
        return _changes(self.x, self.x0, self.costs)

    @property
    def changed(self) -> list:
        """Labels of the changed columns, as the DataFrame has them (not their ``str``)."""
        return list(self.changes["column"])

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
            f"TabularCounterfactual(success={self.success}, status={self.status}, "
            f"target={_plain(self.target)!r}, distance={self.distance:.6g},\n"
            f"  message={self.message!r},\n"
            f"  changes=[{moves}])"
        )


@dataclass(frozen=True, repr=False, eq=False)
class TabularBatch:
    """Answers to N tabular queries; ``batch[i]`` is a :class:`TabularCounterfactual`.

    Attributes
    ----------
    x, x0 : pandas.DataFrame
        N rows: the answers and the queries (the query's index).
    target : ndarray of shape (N,)
    success : ndarray of bool, shape (N,)
    distance : ndarray of shape (N,)
    proba : ndarray of shape (N, n_classes) or None
    status : ndarray of int, shape (N,)
    message : list of str
    costs : ndarray of shape (N, D)
    method : str
    info : list of dict
    """

    x: object
    x0: object
    target: np.ndarray
    success: np.ndarray
    distance: np.ndarray
    proba: np.ndarray | None
    status: np.ndarray
    message: list
    costs: np.ndarray
    method: str = "milp"
    info: list = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.message)

    def __getitem__(self, i) -> TabularCounterfactual:
        """Return answer ``i`` as a :class:`TabularCounterfactual`."""
        i = int(i)
        one = len(self) == 1 and i in (0, -1)  # a single query: its frames as they are
        return TabularCounterfactual(
            x=self.x if one else self.x.iloc[[i]],
            x0=self.x0 if one else self.x0.iloc[[i]],
            target=_plain(self.target[i]),
            success=bool(self.success[i]),
            distance=float(self.distance[i]),
            proba=None if self.proba is None else self.proba[i],
            status=int(self.status[i]),
            message=self.message[i],
            costs=self.costs[i],
            method=self.method,
            info=self.info[i],
        )

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

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
        """Return one row per query: ``target, success, status, distance, n_changed, changed``."""
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
        return f"TabularBatch(n={n}, success={ok}/{n}, median distance={med:.6g})"
