"""The explainer protocol: what every fastcf explainer shares, whatever its model family.

Every explainer (:class:`~fastcf.LinearExplainer`, :class:`~fastcf.LVQExplainer`, and those to
come) is a :class:`BaseExplainer`:

* the same fitted attributes: ``classes_``, ``n_features_in_``, ``feature_names_in_``, ``mad_``
  (set by :meth:`BaseExplainer.fit_mad`);
* the same option names in ``explain``: ``frozen``, ``weights``, ``bounds``, ``margin``,
  ``method``, ``tol``, ``max_iter``;
* one way of reading queries (:meth:`BaseExplainer._queries`), one verification step
  (:meth:`BaseExplainer._verify`: does the model's own arithmetic put each answer in its target
  class?) and one way of turning the solvers' :class:`~fastcf.results.Solution` into the public
  result (:meth:`BaseExplainer._package`, through :func:`fastcf.results.package`).

A family supplies ``_in_target(X, tidx, proba)``: which answers its model really classifies as
the target (and, where ``proba`` is given, with ``p_target >= proba``), in the model's own
arithmetic.
"""

from __future__ import annotations

import numpy as np

from ._status import BOUNDARY_MESSAGE, Status
from ._validation import (
    as_queries,
    class_index,
    median_absolute_deviation,
    resolve_targets,
)
from .results import Solution, package

__all__ = ["BaseExplainer"]


class BaseExplainer:
    """The attributes and steps every explainer shares (see the module docstring).

    Attributes
    ----------
    classes_ : ndarray
        The class labels, as the model knows them.
    n_features_in_ : int
    feature_names_in_ : ndarray of str or None
    mad_ : ndarray of shape (D,) or None
        Per-feature median absolute deviation, set by :meth:`fit_mad`.
    """

    classes_: np.ndarray
    n_features_in_: int
    feature_names_in_: np.ndarray | None = None
    mad_: np.ndarray | None = None
    #: whether the answers carry class probabilities (``Counterfactual.proba``)
    _has_proba = False
    #: whether queries may hold NaN (missing values the model routes itself)
    _allow_nan = False

    def _set_classes(self, classes):
        self.classes_ = np.asarray(classes)
        self._class_index = class_index(self.classes_)

    def fit_mad(self, X):
        """Store the per-feature median absolute deviation of ``X`` for ``weights="mad"``.

        Parameters
        ----------
        X : array_like or scipy.sparse of shape (N, D)
            Training data, in the raw input space. A sparse X (any format) gives the same MAD
            as its dense array, bit for bit: it is made dense first (the medians need every
            column's zeros), so it takes N·D·8 bytes of memory. An explainer that takes NaN in
            its queries (missing values: :class:`~fastcf.TreeExplainer`) takes them here too
            and leaves them out of each feature's medians.

        Returns
        -------
        self

        Examples
        --------
        >>> import numpy as np
        >>> from fastcf import LinearExplainer
        >>> ex = LinearExplainer.from_arrays(np.array([[1.0, 1.0]]), np.array([0.0]))
        >>> ex.fit_mad([[0.0, 0.0], [1.0, 4.0], [2.0, 8.0]]).mad_.tolist()
        [1.0, 4.0]
        """
        X, _, _ = as_queries(
            X, self.n_features_in_, self.feature_names_in_, name="X", allow_nan=self._allow_nan
        )
        self._check_rows(X)
        self.mad_ = median_absolute_deviation(X, allow_nan=self._allow_nan)
        return self

    def _check_rows(self, X):
        """Check the explainer's copy of the model against the model itself on training rows.

        A family built from a fitted model overrides it (see ``LinearExplainer``); arrays given
        directly have no model to check against.
        """

    # ------------------------------------------------------------------ shared steps
    def _queries(self, x, target):
        """Return (X, single, names, tidx): the queries as (N, D) float64 and target indices."""
        X, single, names = as_queries(
            x, self.n_features_in_, self.feature_names_in_, allow_nan=self._allow_nan
        )
        if X.shape[0] == 0:
            raise ValueError("x is empty: need at least one query row")
        tidx = resolve_targets(target, self.classes_, X.shape[0], index=self._class_index)
        return X, single, names, tidx

    def _in_target(self, X, tidx, proba=None):  # pragma: no cover - every family overrides it
        raise NotImplementedError

    def _verify(self, sol: Solution, tidx, proba=None) -> Solution:
        """Return ``sol`` with every success that the model does not confirm made a failure.

        The one verification step: each success that no rounding bound certified already
        (``sol.certified``) is rechecked by :meth:`_in_target`, the model's own arithmetic; a
        success that fails becomes status 4 (numerical failure: the answer lies within
        rounding of the decision boundary).
        """
        cert = sol.certified
        if cert is not None and np.count_nonzero(cert) == cert.shape[0]:
            return sol  # every row certified (a single query's usual case): nothing to check
        check = sol.success if cert is None else sol.success & ~cert
        n_check = np.count_nonzero(check)
        if n_check == 0:
            return sol
        if n_check == check.shape[0]:  # every row (a single query's usual case: no copies)
            good = self._in_target(sol.x, tidx, proba)
            if good.all():
                return sol
            bad = ~good
        else:
            rows = np.flatnonzero(check)
            good = self._in_target(sol.x[rows], tidx[rows], proba)
            if good.all():
                return sol
            bad = np.zeros(check.shape, dtype=bool)
            bad[rows[~good]] = True
        return sol._replace(
            success=sol.success & ~bad,
            status=np.where(bad, int(Status.NUMERIC), sol.status),
            message=[BOUNDARY_MESSAGE if b else m for b, m in zip(bad, sol.message, strict=True)],
            certified=None,
        )

    def _package(self, sol: Solution, X, tidx, names, single):
        """Return the public answer (:func:`fastcf.results.package`).

        An explainer whose model has no probabilities (``_has_proba`` false) reports none, even
        where its solvers computed the sigmoid/softmax of the scores on the way.
        """
        if sol.proba is not None and not self._has_proba:
            sol = sol._replace(proba=None)
        # one query: its label by a slice (a view), not a fancy index
        targets = self.classes_[tidx[0] : tidx[0] + 1] if single else self.classes_[tidx]
        return package(sol, X, targets, names, single)
