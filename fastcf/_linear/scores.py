"""The linear family's model side: the checked scores ``A x + b`` and what they predict.

:class:`LinearScores` is the part of :class:`fastcf.LinearExplainer` that holds the model: its
arrays (checked once), the family chosen once (:func:`fastcf._linear.model.make_model`), the check
of the fold against the fitted model on training rows, and scikit-learn's ``decision_function``,
``predict_proba`` and ``predict`` of those scores. The queries live in the explainer.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from .._base import BaseExplainer
from .._confirm import model_input
from .._validation import as_queries
from ..adapters import check_linear_model
from .dual import TAU_FLOOR, DualGap, FoldGap
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

    #: the size of a pipeline's terms and the unit roundoff of its steps (``None``: a bare
    #: model, whose scores the copy computes bit for bit): set by ``LinearExplainer``
    _fold_terms = None
    _fold_eps = 0.0

    def _set_fold(self, terms, eps):
        """Record a pipeline's terms and precision: its ``proba=`` answers are judged by them."""
        from .._fold import tolerance

        self._fold_terms, self._fold_eps = terms, float(eps)
        self._fold_At = np.ascontiguousarray(terms.A.T, dtype=np.float64)
        width = max(terms.width, self.n_features_in_)
        # half the rule of tolerance() per unit of T (and its tiny), rounded up
        self._fold_half = 0.5 * float(tolerance(1.0, eps, terms.depth, width)) * (1 + 1e-12)

    def _in_target(self, X, tidx, proba=None, strict=False, fold=False):
        if not self._copy_judges:  # (proba= is refused: an SVM has no probabilities here)
            return (
                np.asarray(self.model.predict(model_input(self.model, X)))
                == self.classes_[np.asarray(tidx, dtype=np.int64)]
            )
        good = self._model.in_target(X, tidx, proba)
        if proba is None or not good.any() or not (strict or fold):
            return good
        # a pipeline: where p clears τ by less than the reach of the fold's tolerance, the
        # pipeline itself is asked (FoldGap re-aims what it refuses); ``strict``
        # (verify="model"): the model is asked about every answer, of the batch and alone
        rows = np.flatnonzero(good)
        Xr = np.asarray(X, dtype=np.float64)[rows]
        t = np.asarray(tidx, dtype=np.int64)[rows]
        if strict:
            near = np.ones(rows.size, dtype=bool)
        else:
            g = self._tau_slack(Xr)
            near = g > 0.0  # (an ordinary pipeline: none, the copy's verdict stands)
            if near.any():
                j = np.flatnonzero(near)
                p = self._model.proba_from_logits(self._model.check_logits(Xr[j]))
                near[j] = p[np.arange(j.size), t[j]] - float(proba) < g[j]
        if near.any():
            own = self._own_proba(Xr[near], t[near], strict)
            good[rows[near]] = own >= float(proba)
        return good

    def _own_proba(self, X, tidx, batch=False):
        """Return the model's own ``predict_proba`` of each row alone, at its target.

        One call per row: the bits a user's check of one answer gets (a batch call can round a
        row differently, by up to the fold's tolerance). ``batch``: the smaller of that and the
        row's ``p`` in one call of all the rows, where the model's ``predict`` of that call also
        puts the row in its target (else 0).
        """
        col = np.array([self._class_index[c] for c in self.classes_[tidx].tolist()], np.int64)
        out = np.empty(X.shape[0])
        for i in range(X.shape[0]):
            P = self.model.predict_proba(model_input(self.model, X[i : i + 1]))
            out[i] = float(np.asarray(P, dtype=np.float64)[0, col[i]])
        if batch and X.shape[0]:
            R = model_input(self.model, X)
            P = np.asarray(self.model.predict_proba(R), dtype=np.float64)
            out = np.minimum(out, P[np.arange(X.shape[0]), col])
            out[np.asarray(self.model.predict(R)) != self.classes_[tidx]] = 0.0
        return out

    def _tau_slack(self, X):
        """Return how far a pipeline's ``p`` may lie below the copy's, less :data:`TAU_FLOOR`.

        A bound (a worst case: at scores ~10¹² it can reach 10⁻², where the two differ by
        10⁻⁴): beyond it the copy's ``p`` decides; within it the pipeline is asked. The fold
        check proved the pipeline's scores within ``tolerance(T(x))`` of the copy's
        (:func:`fastcf._fold.tolerance`, the check's own rule); a probability moves by at most
        half the largest score's move (``|∂p_t/∂z| ≤ 2 p_t (1 − p_t) ≤ 1/2``). 0 where that is
        within the floor the docs allow any evaluation.
        """
        T = np.abs(X) @ self._fold_At
        T += self._fold_terms.b
        top = T.max(axis=1) if T.shape[1] > 1 else T[:, 0]
        g = top * self._fold_half - TAU_FLOOR
        return np.maximum(g, 0.0, out=g)

    def _tau_slack_row(self, x):
        """Return :meth:`_tau_slack` of one row ``x`` (D,), a float."""
        T = np.abs(x) @ self._fold_At
        b = self._fold_terms.b
        top = float((T + b).max()) if T.shape[0] > 1 else float(T[0]) + float(b[0])
        return top * self._fold_half - TAU_FLOOR

    def _review(self, sol, X, tidx, q, verify="fold"):
        """Return ``(sol, policy, judge)``: ``sol`` without the certificates that do not stand.

        A linear SVM's dual sum (``_copy_judges`` false): no certificate stands, the model
        judges, :class:`DualGap` re-aims ``region=True``. A pipeline's ``proba=``: where the
        fold's tolerance may reach past :data:`TAU_FLOOR` in ``p`` at an answer
        (:meth:`_tau_slack`: one product with the terms per answer), its certificate is
        withdrawn: the judge asks ``p`` to clear τ by that tolerance (else the pipeline),
        :class:`FoldGap` re-aims. ``proba=`` with ``verify="model"``: the model judges every
        answer (of the batch and alone), :class:`FoldGap` re-aims. Else the copy's
        certificates stand and the route re-aims by itself (``policy`` None). ``judge``: the
        stage's judge where it is not ``_in_target``.
        """
        if verify == "model" and q.form == "proba" and self._copy_judges:
            strict = partial(self._in_target, strict=True)
            return sol._replace(certified=None), FoldGap(self, X, tidx, q, True), strict
        if not self._copy_judges:
            policy = DualGap(self, X, tidx, q) if q.form == "region" else None
            return sol._replace(certified=None), policy, None
        if q.form != "proba" or self._fold_terms is None:
            return sol, None, None
        if sol.success.shape[0] == 1:  # (a single query: scalars, ~3 µs)
            if not sol.success[0] or self._tau_slack_row(sol.x[0]) <= 0.0:
                return sol, None, None
        far = sol.success.copy()
        if far.all():
            far = self._tau_slack(sol.x) > 0.0
        elif far.any():
            far[far] = self._tau_slack(sol.x[far]) > 0.0
        if not far.any():  # (an ordinary pipeline: the copy's verdicts stand)
            return sol, None, None
        if sol.certified is not None:
            sol = sol._replace(certified=sol.certified & ~far)
        return sol, FoldGap(self, X, tidx, q), partial(self._in_target, fold=True)

    def _judge_all(self, proba):
        """Return ``(trust, judge)`` of answers without a re-aim (``enumerate``'s).

        ``trust``: whether the copy's certificates stand; ``judge``: the ``in_target`` that
        judges the others (a pipeline's ``proba=``: with the fold's tolerance, as
        :meth:`_review`).
        """
        if proba is not None and self._fold_terms is not None and self._copy_judges:
            return False, partial(self._in_target, fold=True)
        return self._copy_judges, self._in_target
