"""The explainer protocol: what every fastcf explainer shares, whatever its model family.

Every explainer (:class:`~fastcf.LinearExplainer`, :class:`~fastcf.LVQExplainer`, and those to
come) is a :class:`BaseExplainer`:

* the same fitted attributes: ``classes_``, ``n_features_in_``, ``feature_names_in_``, ``mad_``
  (set by :meth:`BaseExplainer.fit_mad`);
* the same option names in ``explain``: ``frozen``, ``weights``, ``bounds``, ``margin``,
  ``method``, ``tol``, ``max_iter``;
* one way of reading queries (:meth:`BaseExplainer._queries`), and the one stage every query
  passes through (:mod:`fastcf._stage`: read → route → solve → judge → package).

A family supplies its steps of the stage: ``_read`` (its query record), ``_solve`` (its route)
and ``_in_target(X, tidx, proba)``: which answers its model really classifies as the target
(and, where ``proba`` is given, with ``p_target >= proba``), in the model's own arithmetic.
"""

from __future__ import annotations

import numpy as np

from ._validation import (
    as_queries,
    class_index,
    median_absolute_deviation,
    resolve_targets,
)

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

    @property
    def _asked(self):
        """The object whose ``predict``/``predict_proba`` are the model's own verdicts.

        The model itself, but where it has no such methods (a PyTorch network: its adapter,
        :class:`fastcf._net.pytorch.TorchJudge`).
        """
        return self.model

    def _in_target(self, X, tidx, proba=None):  # pragma: no cover - every family overrides it
        raise NotImplementedError
