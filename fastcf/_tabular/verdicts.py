"""The pipeline's verdicts on a tabular tree program's candidates, for the final check.

The tree program asks the user's pipeline ``predict`` about each candidate answer of a row,
built as the result will hold it (:meth:`fastcf._tabular.treeprog.TreeProgram.confirm`). The
final check of the row (:func:`fastcf._tabular.solve.verify`) asks the same question of the
returned frame; when that input is the very same as one asked about while the row was solved
(one row; same type, shape, columns and dtypes; every number the same bytes, so −0.0 ≠ 0.0),
:meth:`Verdicts.seen` gives that verdict (and the probabilities asked with it, in the same pass
of the pipeline) instead of a second call of the pipeline.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from .._confirm import ask

__all__ = ["Verdicts"]


class Verdicts:
    """The last ``maxlen`` (input, ``predict``, ``predict_proba``) of the row being solved."""

    def __init__(self, maxlen=8):
        self._seen = deque(maxlen=maxlen)

    def clear(self):
        """Forget the verdicts (a new row)."""
        self._seen.clear()

    def ask(self, model, X):
        """Return ``(predict(X)[0], predict_proba(X)[0])`` of the one-row input ``X``; keep them.

        One pass of the pipeline for both (:func:`fastcf._confirm.ask`).
        """
        label, P = ask(model, X, proba=hasattr(model, "predict_proba"))
        out = (label[0], None if P is None else np.asarray(P, dtype=np.float64)[0].copy())
        self._seen.append((X, out))
        return out

    def seen(self, inp):
        """Return the kept ``(predict, predict_proba)`` of an input the same as ``inp``, or None."""
        for X, out in reversed(self._seen):
            if _same_input(X, inp):
                return out
        return None


def _same_input(a, b):
    """Return whether the model inputs ``a`` and ``b`` (DataFrames or arrays) are identical."""
    if type(a) is not type(b) or a.shape != b.shape:
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and _same_values(a.ravel(), b.ravel())
    if not a.columns.equals(b.columns):
        return False
    for (_, ca), (_, cb) in zip(a.items(), b.items(), strict=True):
        if ca.dtype != cb.dtype or not _same_values(ca.to_numpy(), cb.to_numpy()):
            return False
    return True


def _same_values(u, v):
    """Return whether two arrays hold the same cells (numbers: the same bytes, so -0.0 ≠ 0.0)."""
    if u.dtype != v.dtype:
        return False
    if u.dtype.kind in "biufcmM":
        return u.tobytes() == v.tobytes()
    for p, r in zip(u.tolist(), v.tolist(), strict=True):
        if type(p) is not type(r):
            return False
        if isinstance(p, float):
            if np.float64(p).tobytes() != np.float64(r).tobytes():
                return False
            continue
        try:
            if not bool(p == r):
                return False
        except (TypeError, ValueError):  # (pd.NA and such: not known equal)
            return False
    return True
