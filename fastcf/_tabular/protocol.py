"""The explainer protocol on DataFrames: what a tabular explainer does instead of the array steps.

:class:`FrameExplainer` is the :class:`~fastcf._base.BaseExplainer` of the tabular family
(:class:`fastcf.TabularExplainer`): its judge ``_in_target`` is the pipeline's own ``predict``
on a DataFrame of the raw columns, its queries (``_queries``) are DataFrame rows, and the
array step ``fit_mad`` raises a ``TypeError`` that names what to do instead.
"""

from __future__ import annotations

import numpy as np

from .._base import BaseExplainer
from .._validation import resolve_targets
from .options import read_rows

__all__ = ["FrameExplainer", "as_frame"]


def as_frame(X, name):
    """Return ``X`` if it is a DataFrame; else a ``TypeError`` naming ``name``."""
    import pandas as pd

    if isinstance(X, pd.DataFrame):
        return X
    raise TypeError(
        f"{name} must be a pandas DataFrame of the raw columns the model was fitted on; got "
        f"{type(X).__name__}"
    )


class FrameExplainer(BaseExplainer):
    """A :class:`~fastcf._base.BaseExplainer` whose queries and answers are DataFrames."""

    #: queries may hold missing cells (imputed by the pipeline, or kept: ``missing=``)
    _allow_nan = True
    #: answers on DataFrames (the Dask path of fastcf.distributed takes arrays only)
    _frames = True

    # ------------------------------------------------------------------ set-up
    def _model_input(self, frame):
        return frame if self._frame_input else frame.to_numpy()

    def _array_step(self, step, instead):
        raise TypeError(
            f"TabularExplainer does not take {step}: it works on DataFrames of the raw columns "
            f"({instead})"
        )

    def fit_mad(self, X):
        """Not for tabular models: the MAD comes from ``X_train`` at construction.

        Raises
        ------
        TypeError
            Always: ``mad_`` and ``weights_`` are set by ``TabularExplainer(model, X_train)``
            (build a new explainer for other training data; ``weights=`` sets the cost units).

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from sklearn.linear_model import LogisticRegression
        >>> X = pd.DataFrame({"a": np.arange(20.0), "b": np.arange(20.0) % 3})
        >>> from fastcf import TabularExplainer
        >>> tx = TabularExplainer(LogisticRegression().fit(X, X.a > 9.5), X)
        >>> sorted(tx.mad_)  # set by the constructor, per column
        ['a', 'b']
        >>> tx.fit_mad(X)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: TabularExplainer does not take fit_mad: ...
        """
        self._array_step(
            "fit_mad", "mad_ and weights_ come from X_train at construction: build "
            "TabularExplainer(model, X_train) for other data, or pass weights="
        )  # fmt: skip

    def _queries(self, x, target):
        """Return (frame, single, None, tidx): the query rows in the model's columns.

        ``x`` a DataFrame (rows), a Series or a dict (one row); ``tidx`` the target class
        indices, one per row. The stage's first step (:func:`fastcf._stage.run`), as
        :meth:`fastcf._base.BaseExplainer._queries` is for arrays.
        """
        frame, single = read_rows(self._schema, x)
        return frame, single, None, resolve_targets(target, self.classes_, frame.shape[0])

    def _frozen(self):
        """Return the columns every query holds: ``immutable`` ones and those the model ignores."""
        s = self._schema
        return s.frozen | np.array([k == "unused" for k in s.kind], dtype=bool)

    def _in_target(self, X, tidx, proba=None):
        """Return which rows of the DataFrame ``X`` the model's own ``predict`` puts in target.

        ``tidx``: target indices into ``classes_``; with ``proba``, ``predict_proba`` must also
        give the target at least ``proba``.
        """
        inp = self._model_input(as_frame(X, "X")[list(self._schema.columns)])
        tidx = np.asarray(tidx, dtype=np.int64)
        ok = np.asarray(self.model.predict(inp)) == self.classes_[tidx]
        if proba is not None:
            p = np.asarray(self.model.predict_proba(inp), dtype=np.float64)
            ok &= p[np.arange(tidx.size), tidx] >= proba
        return ok
