"""The linear family's model side: the checked scores ``A x + b`` and what they predict.

:class:`LinearScores` is the part of :class:`fastcf.LinearExplainer` that holds the model: its
arrays (checked once), the family chosen once (:func:`fastcf._linear.model.make_model`), the check
of the fold against the fitted model on training rows, and scikit-learn's ``decision_function``,
``predict_proba`` and ``predict`` of those scores. The queries live in the explainer.
"""

from __future__ import annotations

import numpy as np

from .._base import BaseExplainer
from .._confirm import model_input
from .._validation import as_queries
from ..adapters import check_linear_model
from .dual import DualGap
from .metric import MetricCache
from .model import make_model

__all__ = ["LinearScores", "by_columns"]


def by_columns(coef, default):
    """Tell whether a (K, D) coefficient array is stored by columns (unit stride down a column).

    Its layout decides NumPy's BLAS call for ``X @ coef.T``, and so the bits of the model's own
    logits (``SoftmaxModel.check_logits``): by columns in recent scikit-learn's multinomial
    ``coef_`` (every solver), by rows with a padded stride in 1.6, by rows for a C-order array.
    ``default`` where ``coef`` is not a 2-D array with D > 1 (a list, a sparse matrix).
    """
    if not (isinstance(coef, np.ndarray) and coef.ndim == 2 and coef.shape[1] > 1):
        return default
    return coef.strides[0] == coef.itemsize


class LinearScores(BaseExplainer):
    """Scores ``A x + b`` of a linear classifier: the model side of ``LinearExplainer``."""

    _has_proba = True

    def _init_arrays(
        self, A, b, classes, names, probabilistic=True, *, source="model", columns=True
    ):
        A = np.ascontiguousarray(A, dtype=np.float64)
        b = np.ascontiguousarray(b, dtype=np.float64)
        if not (np.isfinite(A).all() and np.isfinite(b).all()):
            raise ValueError("the model's weights (A, b) contain NaN or infinite values")
        self.coef_ = A
        self.intercept_ = b
        self._set_classes(classes)
        self.n_features_in_ = A.shape[1]
        self.feature_names_in_ = names
        self.mad_ = None
        self.model = None  # the fitted model, when built from one (__init__)
        # BinaryModel or SoftmaxModel: the family, chosen once. ``columns``: the coefficients'
        # own layout (by_columns)
        self._model = make_model(A, b, columns)
        self._cache = MetricCache(self._model)
        self.probabilistic_ = bool(probabilistic)
        # answers carry proba only when the probabilities are those of the model
        # (the stage's package drops them otherwise; distributed reads it for its columns)
        self._has_proba = self.probabilistic_
        self._source = source  # the model's name, for the messages of _check_form

    def _check_rows(self, X):
        """Check the folded scores against the model on training rows (``fit_mad``)."""
        if self.model is not None:
            rows = X[:64]
            rows = rows.toarray() if hasattr(rows, "toarray") else rows
            check_linear_model(
                self.model, self.coef_, self.intercept_, self.probabilistic_, rows,
                terms=getattr(self, "_terms", None),
            )  # fmt: skip

    def _check_form(self, lam, proba, region):
        """Raise ``TypeError`` if the model cannot answer this form of query.

        A model whose scores are not probabilities (``probabilistic_`` is ``False``) answers
        only ``region=True``: ``lam=`` (problem (2), also the default and :meth:`path`) and
        ``proba=`` are defined by its probabilities.

        Parameters
        ----------
        lam : object or None
            The ``lam=`` (or ``lams=``) argument, ``None`` when not given.
        proba : object or None
            The ``proba=`` argument, ``None`` when not given.
        region : bool
            The ``region=`` argument.

        Raises
        ------
        TypeError
            If the explainer is not probabilistic and the query is not ``region=True`` alone.
        """
        if self.probabilistic_ or (lam is None and proba is None and region):
            return
        if proba is not None:
            asked = "proba="
        elif lam is not None:
            asked = "lam="
        else:
            asked = "problem (2) (lam=, the default, and path())"
        from ..adapters import not_probabilistic

        raise TypeError(not_probabilistic(self._source, f"{asked} was asked"))

    # ------------------------------------------------------------------ model evaluation
    def decision_function(self, X):
        """Logits ``A x + b``: shape (N,) for a binary model (as scikit-learn), else (N, K).

        Parameters
        ----------
        X : array_like of shape (N, D) or (D,)

        Returns
        -------
        ndarray
        """
        X, single, _ = as_queries(X, self.n_features_in_, name="X")
        out = self._model.model_logits(X)
        return out[0] if single else out

    def predict_proba(self, X):
        """Class probabilities in the order of ``classes_``.

        Parameters
        ----------
        X : array_like of shape (N, D) or (D,)

        Returns
        -------
        ndarray of shape (N, n_classes) or (n_classes,)

        Raises
        ------
        TypeError
            If the model's scores are not probabilities (``probabilistic_`` is ``False``).
        """
        if not self.probabilistic_:
            from ..adapters import not_probabilistic

            raise TypeError(not_probabilistic(self._source, "predict_proba was called"))
        X, single, _ = as_queries(X, self.n_features_in_, name="X")
        P = self._model.proba_from_logits(self._model.model_logits(X))
        return P[0] if single else P

    def predict(self, X):
        """Predicted class labels (scikit-learn's rule: argmax; ties to the first class).

        Parameters
        ----------
        X : array_like of shape (N, D) or (D,)

        Returns
        -------
        ndarray of shape (N,)
        """
        X, _, _ = as_queries(X, self.n_features_in_, name="X")
        return self.classes_[self._model.predict_index(self._model.model_logits(X))]

    #: fastcf's copy of the scores computes the model's own arithmetic (its rounding bound
    #: certifies an answer): False for a linear-kernel SVM, whose dual sum it does not
    #: (:mod:`fastcf._linear.dual`): the model's own ``predict`` judges those
    _copy_judges = True

    def _in_target(self, X, tidx, proba=None):
        if not self._copy_judges:  # (proba= is refused: an SVM has no probabilities here)
            return (
                np.asarray(self.model.predict(model_input(self.model, X)))
                == self.classes_[np.asarray(tidx, dtype=np.int64)]
            )
        return self._model.in_target(X, tidx, proba)

    def _policy(self, X, tidx, q):
        """Return the stage's re-aim policy of the query record ``q`` (None: the copy judges)."""
        if self._copy_judges or q.form != "region":
            return None
        return DualGap(self, X, tidx, q)
