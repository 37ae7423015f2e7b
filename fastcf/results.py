"""Result objects returned by every explainer: one query, a batch of queries, a λ-path.

Status codes (``status``) are those of :mod:`fastcf._status`, one table for every explainer
(0 converged, 1 iteration limit, 2 unreachable, 3 infeasible, 4 numerical failure, 5 the optimum
of problem (2) is not in the target class, 6 external solver failure, 7 ``proba`` met below the
decision threshold, 8 degenerate SVM subset). ``success`` is ``True`` only when the returned
point is classified as the target by the model (and meets ``proba`` when that was asked).

Solvers hand their answers to the façades as a :class:`Solution` (arrays stacked over the N
queries); :func:`package` turns one into the public :class:`CounterfactualBatch`, or into a
:class:`Counterfactual` for a single query, through the same :func:`_item` that
``CounterfactualBatch.__getitem__`` uses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ._status import MESSAGES, message, messages

__all__ = [
    "Counterfactual",
    "CounterfactualBatch",
    "CounterfactualPath",
    "STATUS_MESSAGES",
    "Solution",
    "package",
    "mark_exact",
]

#: status code -> message (the table of :mod:`fastcf._status`; ``Status`` keys equal their ints)
STATUS_MESSAGES = MESSAGES


class Solution(NamedTuple):
    """What a solver returns to a façade: N answers, arrays stacked over the queries.

    Immutable: a later step (the verification, a re-solve of some rows) makes a new one with
    ``_replace``.
    """

    x: np.ndarray  # (N, D) the answers
    proba: np.ndarray | None  # (N, K) class probabilities at x, None without probabilities
    distance: np.ndarray  # (N,) in the metric that was minimised
    success: np.ndarray  # (N,) bool
    status: np.ndarray  # (N,) int64 codes of fastcf._status.Status
    nit: np.ndarray  # (N,) int
    method: str
    message: list  # N str
    lam: np.ndarray | None = None  # (N,) the λ of problem (2), where one applies
    grad_norm: np.ndarray | None = None  # (N,) ‖∇E‖ at x, where it applies
    certified: np.ndarray | None = None  # (N,) bool: successes a rounding bound already proved
    info: dict | None = None  # method-specific diagnostics

    @classmethod
    def of(cls, x, proba, distance, success, status, nit, method, lam=None, grad_norm=None,
           certified=None, info=None):  # fmt: skip
        """Return the Solution of these N answers with one message each (the fields' order).

        The messages are :func:`fastcf._status.messages`' ("<method>: converged" for a
        success, else the status's own).
        """
        msg = messages(status, success, method)
        return cls(x, proba, distance, success, status, nit, method, msg, lam, grad_norm,
                   certified, info)  # fmt: skip


def _to_sparse(x, x0, what):
    """Return ``x − x0`` or ``x`` (2-D) as a SciPy CSR array without explicit zeros."""
    from scipy import sparse

    if what == "delta":
        a = np.atleast_2d(np.where(np.isnan(x) & np.isnan(x0), 0.0, x - x0))  # NaN kept: no move
    elif what == "x":
        a = np.atleast_2d(x)
    else:
        raise ValueError(f"what must be 'delta' or 'x'; got {what!r}")
    return sparse.csr_array(a)  # keeps only the nonzero entries


def _item_info(info, i, n):
    """Return the diagnostics of query ``i``: per-query arrays (leading length ``n``) indexed."""
    if not info:
        return {}
    return {
        k: (v[i] if isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == n else v)
        for k, v in info.items()
    }


def _item(src, i, x0, target, names, info) -> Counterfactual:
    """Return answer ``i`` of ``src`` (a :class:`CounterfactualBatch` or a :class:`Solution`).

    The one batch → single function: ``CounterfactualBatch.__getitem__`` and every explainer's
    single-query answer (:func:`package`) go through it. ``x0``, ``target``: those of answer ``i``.
    """
    lam = None if src.lam is None else float(src.lam[i])
    return _counterfactual(
        x=src.x[i],
        x0=x0,
        target=target.item() if hasattr(target, "item") else target,
        proba=None if src.proba is None else src.proba[i],
        distance=float(src.distance[i]),
        success=bool(src.success[i]),
        status=int(src.status[i]),
        message=src.message[i],
        nit=int(src.nit[i]),
        method=src.method,
        lam=lam if lam is not None and math.isfinite(lam) else None,
        grad_norm=None if src.grad_norm is None else float(src.grad_norm[i]),
        feature_names=names,
        info=_item_info(info, i, src.x.shape[0]),
    )


def _counterfactual(**fields) -> Counterfactual:
    """Return the :class:`Counterfactual` of ``fields`` (every field, by name).

    The object ``Counterfactual(**fields)`` makes, without the frozen dataclass's ``__init__``,
    which sets each of the 14 fields through ``object.__setattr__`` (1.9 µs of a single query's
    ~30 µs; its dict at once: 0.3 µs). ``tests/test_linear_latency_paths.py`` checks that the two
    agree field for field.
    """
    out = object.__new__(Counterfactual)
    out.__dict__.update(fields)
    return out


def package(sol: Solution, X: np.ndarray, targets: np.ndarray, names, single: bool):
    """Return the public answer of a :class:`Solution`.

    Parameters
    ----------
    sol : Solution
    X : ndarray of shape (N, D)
        The queries.
    targets : ndarray of shape (N,)
        The target labels (as in ``classes_``).
    names : ndarray of str or None
        Feature names.
    single : bool
        The caller asked one query (``x`` of shape (D,)): return a :class:`Counterfactual`.
    """
    if single:
        return _item(sol, 0, X[0], targets[0], names, sol.info)
    return CounterfactualBatch(
        x=sol.x,
        x0=X,
        target=targets,
        proba=sol.proba,
        distance=sol.distance,
        success=sol.success,
        status=sol.status,
        message=sol.message,
        nit=np.asarray(sol.nit),
        method=sol.method,
        lam=sol.lam,
        grad_norm=sol.grad_norm,
        feature_names=names,
        info={} if sol.info is None else sol.info,
    )


def _short(a, n=4):
    a = np.asarray(a)
    if a.ndim == 0:
        return repr(a.item())
    flat = np.array2string(
        a.ravel()[:n], precision=4, separator=", ", suppress_small=False, floatmode="maxprec"
    )
    if a.size > n:
        flat = flat[:-1] + ", ...]"
    return f"{flat} (shape {a.shape})" if a.ndim > 1 or a.size > n else flat


@dataclass(frozen=True, repr=False, eq=False)
class Counterfactual:
    """The answer to one inverse-classification query.

    Every explainer returns it; :class:`fastcf.TabularExplainer`'s answers are its DataFrame
    form, :class:`fastcf.tabular.FrameCounterfactual` (``x``, ``x0`` one-row DataFrames).

    Attributes
    ----------
    x : ndarray of shape (D,)
        The counterfactual, in the model's input space.
    x0 : ndarray of shape (D,)
        The source instance.
    target : object
        The class label that was asked for.
    proba : ndarray of shape (K,) or None
        Class probabilities at ``x`` in the order of ``classes_`` (``None`` for models without
        probabilities).
    distance : float
        Distance from ``x0`` to ``x`` in the metric that was minimised.
    success : bool
        ``True`` when the model classifies ``x`` as ``target`` (and ``proba`` was met, if asked).
    status : int
        0 when converged; see :data:`STATUS_MESSAGES` for the other codes.
    message : str
        Human-readable reason for ``status``.
    nit : int
        Iterations of the solver that ran (0 for closed forms), summed over every solve of
        the query: a re-solve adds its own (``max_iter`` limits each solve).
    method : str
        The algorithm that produced ``x``.
    lam : float or None
        The λ of problem (2), where one applies.
    grad_norm : float or None
        Norm of the (projected) gradient of the objective at ``x``, where it applies.
    feature_names : ndarray of str or None
        Feature names, when the input carried them (pandas) or the model knows them.
    info : dict
        Extra, method-specific diagnostics (e.g. backtracking trials per iteration).

    Examples
    --------
    >>> import numpy as np
    >>> from fastcf import LinearExplainer
    >>> ex = LinearExplainer.from_arrays(np.array([[1.0, 1.0]]), np.array([0.0]))
    >>> res = ex.explain(np.array([-1.0, -1.0]), target=1, proba=0.9)
    >>> res.changed
    array([0, 1])
    >>> round(float(res.proba[1]), 12)
    0.9
    """

    x: np.ndarray
    x0: np.ndarray
    target: object
    proba: np.ndarray | None
    distance: float
    success: bool
    status: int
    message: str
    nit: int
    method: str
    lam: float | None = None
    grad_norm: float | None = None
    feature_names: np.ndarray | None = None
    info: dict = field(default_factory=dict)

    @property
    def delta(self) -> np.ndarray:
        """``x - x0``."""
        return self.x - self.x0

    def to_sparse(self, what="delta"):
        """Return the change (or the answer) as a sparse row, shape (1, D).

        A Manhattan answer moves few features (a binary model's: often one), and a text
        model's source row is mostly zeros: ``to_sparse()`` stores only the moves, and
        ``to_sparse("x")`` the answer's nonzero entries.

        Parameters
        ----------
        what : {"delta", "x"}, default="delta"
            ``x − x0`` or ``x``.

        Returns
        -------
        scipy.sparse.csr_array of shape (1, D)

        Examples
        --------
        >>> import numpy as np
        >>> from fastcf import LinearExplainer
        >>> ex = LinearExplainer.from_arrays(np.array([[1.0, -2.0, 0.5]]), np.array([0.0]))
        >>> res = ex.explain(np.array([-1.0, 0.0, 0.0]), 1, region=True, metric="manhattan")
        >>> d = res.to_sparse()
        >>> d.shape, d.nnz, d.indices.tolist()  # only the feature of best weight moved
        ((1, 3), 1, [1])
        """
        return _to_sparse(self.x, self.x0, what)

    def changed_mask(self, tol: float = 0.0) -> np.ndarray:
        """Boolean mask of the features with ``|x - x0| > tol``."""
        return np.abs(self.delta) > tol

    @property
    def changed_index(self) -> np.ndarray:
        """Indices of the features that moved (``|x - x0| > 0``)."""
        return np.flatnonzero(self.changed_mask())

    @property
    def changed(self) -> np.ndarray:
        """The features that moved: their names where known (``feature_names``), else indices.

        One rule for every family; :attr:`changed_index` always gives the indices.
        """
        idx = self.changed_index
        return idx if self.feature_names is None else np.asarray(self.feature_names)[idx]

    def to_frame(self):
        """Return a :class:`pandas.DataFrame`: feature, original, counterfactual, change.

        Raises
        ------
        ImportError
            If pandas is not installed.
        """
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("Counterfactual.to_frame() needs pandas: pip install pandas") from exc
        names = (
            self.feature_names
            if self.feature_names is not None
            else np.array([f"x{i}" for i in range(self.x.shape[0])])
        )
        return pd.DataFrame(
            {
                "feature": names,
                "original": self.x0,
                "counterfactual": self.x,
                "change": self.delta,
            }
        )

    def __repr__(self) -> str:
        lines = [
            f"Counterfactual(success={self.success}, status={self.status}, "
            f"method={self.method!r}, target={self.target!r},",
            f"  message={self.message!r},",
            f"  distance={self.distance:.6g}, nit={self.nit}, lam={self.lam!r}, "
            f"grad_norm={None if self.grad_norm is None else float(f'{self.grad_norm:.3g}')},",
            f"  proba={_short(self.proba) if self.proba is not None else None},",
            f"  changed={self.changed.size} of {self.x.shape[0]} features,",
            f"  x={_short(self.x)})",
        ]
        return "\n".join(lines)


@dataclass(frozen=True, repr=False, eq=False)
class CounterfactualBatch:
    """Answers to N queries, with the fields of :class:`Counterfactual` stacked over N.

    :class:`fastcf.TabularExplainer`'s batches are its DataFrame form,
    :class:`fastcf.tabular.FrameCounterfactualBatch` (``x``, ``x0`` N-row DataFrames).

    Attributes
    ----------
    x, x0 : ndarray of shape (N, D)
    target : ndarray of shape (N,)
    proba : ndarray of shape (N, K) or None
    distance : ndarray of shape (N,)
    success : ndarray of bool, shape (N,)
    status : ndarray of int, shape (N,)
    message : list of str
    nit : ndarray of int, shape (N,)
        As :attr:`Counterfactual.nit`, per row.
    method : str
    lam : ndarray of shape (N,) or None
    grad_norm : ndarray of shape (N,) or None
    feature_names : ndarray of str or None

    Examples
    --------
    >>> import numpy as np
    >>> from fastcf import LinearExplainer
    >>> ex = LinearExplainer.from_arrays(np.array([[1.0, 1.0]]), np.array([0.0]))
    >>> batch = ex.explain(np.array([[-1.0, -1.0], [-2.0, 0.0]]), target=1, region=True)
    >>> len(batch), bool(batch.success.all())
    (2, True)
    >>> batch[1].target
    1
    """

    x: np.ndarray
    x0: np.ndarray
    target: np.ndarray
    proba: np.ndarray | None
    distance: np.ndarray
    success: np.ndarray
    status: np.ndarray
    message: list
    nit: np.ndarray
    method: str
    lam: np.ndarray | None = None
    grad_norm: np.ndarray | None = None
    feature_names: np.ndarray | None = None
    info: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return self.x.shape[0]

    @property
    def delta(self) -> np.ndarray:
        """``x - x0``, shape (N, D)."""
        return self.x - self.x0

    def to_sparse(self, what="delta"):
        """Return the changes (or the answers) as a sparse matrix, shape (N, D).

        Parameters
        ----------
        what : {"delta", "x"}, default="delta"
            ``x − x0`` or ``x``.

        Returns
        -------
        scipy.sparse.csr_array of shape (N, D)
            Only the nonzero entries are stored (see :meth:`Counterfactual.to_sparse`).
        """
        return _to_sparse(self.x, self.x0, what)

    def __getitem__(self, i) -> Counterfactual:
        """Return query ``i`` as a :class:`Counterfactual`."""
        i = int(i)
        return _item(self, i, self.x0[i], self.target[i], self.feature_names, self.info)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def to_frame(self):
        """Return a :class:`pandas.DataFrame`, one row per query (success, status, ...)."""
        import pandas as pd

        data = {
            "target": self.target,
            "success": self.success,
            "status": self.status,
            "distance": self.distance,
            "nit": self.nit,
            "n_changed": (np.abs(self.delta) > 0).sum(axis=1),  # (a NaN kept NaN: unchanged)
        }
        if self.lam is not None:
            data["lam"] = self.lam
        return pd.DataFrame(data)

    def __repr__(self) -> str:
        n = len(self)
        return (
            f"CounterfactualBatch(n={n}, method={self.method!r}, "
            f"success={int(np.sum(self.success))}/{n}, "
            f"median distance={np.median(self.distance) if n else float('nan'):.6g}, "
            f"max nit={int(np.max(self.nit)) if n else 0})"
        )


def mark_exact(res, exact=True):
    """Return ``res`` (an answer, a batch or a list of them) with ``info["exact"]`` set.

    ``exact``: whether the family's answers are exact optima (to its solver's tolerance) when
    they succeed; a failed answer is not called exact.
    """
    if isinstance(res, list):
        for r in res:
            mark_exact(r, exact)
        return res
    if isinstance(res, Counterfactual):  # (one answer: no array work, a query costs ~30 µs)
        res.info["exact"] = bool(exact) and bool(res.success) and int(res.status) == 0
        return res
    ok = np.asarray(res.success, dtype=bool) & (np.asarray(res.status) == 0)
    if isinstance(res.info, list):  # (a tabular batch: one dict per row)
        for d, o in zip(res.info, ok, strict=True):
            d["exact"] = bool(exact and o)
    elif ok.ndim:
        res.info["exact"] = bool(exact) & ok
    else:
        res.info["exact"] = bool(exact and ok)
    return res


class CounterfactualPath:
    """Solutions of problem (2) along a sequence of λ values (warm-started).

    Attributes
    ----------
    lams : ndarray of shape (L,)
    X : ndarray of shape (L, D)
        The minimiser for each λ. Formed on first access (one matrix product): the solver works
        in the K-dimensional space, and a caller that only looks at ``proba`` and ``distance``
        never pays for the (L, D) array.
    x0 : ndarray of shape (D,)
    target : object
    proba : ndarray of shape (L, K)
    distance : ndarray of shape (L,)
    nit : ndarray of int, shape (L,)
        Iterations per λ, summed over its solves: on a model with nearly equal rows a λ
        whose answer is doubtful is solved again on the model less the target's row.
    success : ndarray of bool, shape (L,)
        Whether the model classifies the solution as the target.
    status : ndarray of int, shape (L,)
    grad_norm : ndarray of shape (L,)
    method : str

    Examples
    --------
    >>> import numpy as np
    >>> from fastcf import LinearExplainer
    >>> ex = LinearExplainer.from_arrays(np.array([[1.0, 1.0]]), np.array([0.0]))
    >>> path = ex.path(np.array([-1.0, -1.0]), target=1, lams=[10.0, 1.0, 0.1])
    >>> bool(np.all(np.diff(path.proba[:, 1]) > 0))
    True
    >>> path.X.shape
    (3, 2)
    """

    def __init__(
        self,
        lams,
        X,
        x0,
        target,
        proba,
        distance,
        nit,
        success,
        status,
        grad_norm,
        method,
        feature_names=None,
        info=None,
    ):
        self.lams = lams
        self._X = X  # an array, or a callable that makes it
        self.x0 = x0
        self.target = target
        self.proba = proba
        self.distance = distance
        self.nit = nit
        self.success = success
        self.status = status
        self.grad_norm = grad_norm
        self.method = method
        self.feature_names = feature_names
        self.info = {} if info is None else info

    @property
    def X(self) -> np.ndarray:
        """The minimisers, shape (L, D)."""
        if callable(self._X):
            self._X = self._X()
        return self._X

    def __len__(self) -> int:
        return self.lams.shape[0]

    def __getitem__(self, i) -> Counterfactual:
        """Return the solution at ``lams[i]`` as a :class:`Counterfactual`."""
        i = int(i)
        status = int(self.status[i])
        return Counterfactual(
            x=self.X[i],
            x0=self.x0,
            target=self.target,
            proba=self.proba[i],
            distance=float(self.distance[i]),
            success=bool(self.success[i]),
            status=status,
            message=message(status),
            nit=int(self.nit[i]),
            method=self.method,
            lam=float(self.lams[i]),
            grad_norm=float(self.grad_norm[i]),
            feature_names=self.feature_names,
        )

    def __repr__(self) -> str:
        L = len(self)
        return (
            f"CounterfactualPath(L={L}, method={self.method!r}, target={self.target!r}, "
            f"lam {self.lams[0]:.3g} -> {self.lams[-1]:.3g}, "
            f"total nit={int(np.sum(self.nit))}, success={int(np.sum(self.success))}/{L})"
        )
