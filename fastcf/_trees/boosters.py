"""A bare XGBoost or LightGBM ``Booster``, read as its library's classifier reads it.

``xgboost.train`` and ``lightgbm.train`` return a ``Booster``: its ``predict`` gives
probabilities (or, for XGBoost's ``multi:softmax``, labels), and it has no ``classes_``.
:class:`BoosterClassifier` gives it the classifier's interface with the classifier's own rules,
so that the parsers (:mod:`.parse_xgboost`, :mod:`.parse_lightgbm`) read its trees and every
answer is confirmed by the Booster's own ``predict``:

* classes ``0 … K−1`` (the labels the Booster was trained on);
* XGBoost (as ``XGBClassifier``): ``binary:logistic`` predicts class 1 iff ``p > 0.5``,
  ``predict_proba`` is ``[1 − p, p]``; ``multi:softprob`` the argmax of the probabilities;
  ``multi:softmax`` the Booster's own labels, its probabilities the softmax of its margins;
* LightGBM (as ``LGBMClassifier``): ``predict_proba`` is ``[1 − p, p]`` for ``binary`` and
  ``cross_entropy`` (p the sigmoid of the raw score; labels in [0, 1], read as classes 0 and
  1), the Booster's rows for ``multiclass``; ``predict`` their argmax (a tie at 0.5 to class 0).
"""

from __future__ import annotations

import json

import numpy as np

__all__ = ["BoosterClassifier", "is_booster"]


def is_booster(model):
    """Tell whether ``model`` is a bare XGBoost or LightGBM ``Booster``."""
    root = type(model).__module__.split(".")[0]
    return type(model).__name__ == "Booster" and root in ("xgboost", "lightgbm")


class BoosterClassifier:
    """The classifier interface of a bare ``Booster`` (module docstring).

    Parameters
    ----------
    booster : xgboost.Booster or lightgbm.Booster

    Attributes
    ----------
    booster : Booster
        The Booster given.
    library : {"xgboost", "lightgbm"}
    classes_ : ndarray of int
    n_features_in_ : int
    objective : str
    """

    def __init__(self, booster):
        if not is_booster(booster):
            raise TypeError(f"booster must be an XGBoost or LightGBM Booster; got {booster!r}")
        self.booster = booster
        self.library = type(booster).__module__.split(".")[0]
        if self.library == "xgboost":
            cfg = json.loads(booster.save_config())["learner"]
            self.objective = cfg["objective"]["name"]
            k = int(cfg["learner_model_param"].get("num_class", "0"))
            self.n_features_in_ = int(booster.num_features())
        else:
            head = str(booster.dump_model(num_iteration=0).get("objective", "")).split()
            self.objective = head[0] if head else ""
            k = next((int(p.split(":")[1]) for p in head[1:] if p.startswith("num_class:")), 0)
            self.n_features_in_ = int(booster.num_feature())
        self.classes_ = np.arange(max(k, 2))

    # the hooks the parsers read: XGBClassifier.get_booster, LGBMClassifier._Booster
    def get_booster(self):
        """Return the XGBoost Booster (what ``XGBClassifier.get_booster`` returns)."""
        return self.booster

    @property
    def _Booster(self):  # noqa: N802 - LGBMClassifier's attribute name
        return self.booster

    def _raw(self, X, **kw):
        X = np.asarray(X, dtype=np.float64)
        if self.library == "xgboost":
            from xgboost import DMatrix

            return np.asarray(self.booster.predict(DMatrix(X, missing=np.nan), **kw))
        return np.asarray(self.booster.predict(X, **kw))

    def predict_proba(self, X):
        """Return the class probabilities, as the library's classifier computes them."""
        if self.library == "xgboost" and self.objective == "multi:softmax":
            from scipy.special import softmax

            return softmax(self._raw(X, output_margin=True), axis=1)
        p = self._raw(X)
        return np.column_stack([1 - p, p]) if p.ndim == 1 else p

    def predict(self, X, **kw):
        """Return the class labels, as the library's classifier predicts them.

        With the classifiers' own options of raw output (XGBoost's ``output_margin=True``,
        LightGBM's ``raw_score=True`` / ``pred_leaf=True``): the Booster's output, as theirs.
        """
        if any(kw.values()):
            return self._raw(X, **kw)
        if self.library == "xgboost":
            if self.objective == "multi:softmax":
                return self._raw(X).astype(np.int64)
            p = self._raw(X)
            return (p > 0.5).astype(np.int64) if p.ndim == 1 else np.argmax(p, axis=1)
        return np.argmax(self.predict_proba(X), axis=1)
