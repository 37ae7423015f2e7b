"""HistGradientBoosting's native categorical splits: sets of categories, not ``x <= b``.

A ``HistGradientBoostingClassifier`` fitted with ``categorical_features`` encodes each
categorical column with its own ``OrdinalEncoder`` (``categories_``: the sorted raw values seen
in training; a value it has not seen, or NaN, becomes NaN) and routes a row at a categorical node
by bitsets (``_predictor.pyx``, ``_predict_one_from_raw_data``): a NaN goes to the side
``missing_go_to_left`` names, a code in the node's ``raw_left_cat_bitsets`` row goes left, any
other known code right (an unknown one is treated as missing). So on the raw input value v of
feature f::

    v is category k of f (exactly)  →  left iff k is in the node's left set
    v is NaN or no category of f     →  the missing side

:class:`Categories` holds the category values of each categorical feature and the left set of
each categorical node, and routes rows (:meth:`Categories.route`, used by
:meth:`fastcf._trees.forest.Forest.leaves`). The answers keep every categorical feature as the
query has it: the forest is conditioned on its value (:func:`fastcf._trees.missing.condition`),
which leaves the threshold program over the numerical features. A query whose categorical
feature may change is refused (:func:`fastcf._trees.missing.check_query`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["Categories"]


class Categories:
    """The categorical features of a forest and the left set of each categorical node.

    Parameters
    ----------
    values : dict of int to ndarray
        The sorted raw category values of each categorical feature (its encoder's
        ``categories_``).
    nodes : ndarray of int
        The global ids of the categorical nodes.
    left : list of ndarray of bool
        For each of ``nodes``, which categories of its feature go left (by code).
    n_nodes, n_features : int
    """

    def __init__(self, values, nodes, left, n_nodes, n_features):
        self.values = {int(f): np.asarray(v, dtype=np.float64) for f, v in values.items()}
        self.is_cat = np.zeros(n_features, dtype=bool)
        self.is_cat[list(self.values)] = True
        self.row = np.full(n_nodes, -1, dtype=np.int64)
        self.row[np.asarray(nodes, dtype=np.int64)] = np.arange(len(nodes))
        width = max([1] + [v.size for v in self.values.values()])
        self.left = np.zeros((len(nodes), width), dtype=bool)
        for i, m in enumerate(left):
            self.left[i, : len(m)] = m

    def code(self, f, v):
        """Return the category code of each value v of feature f (−1: NaN or unseen)."""
        cats = self.values[int(f)]
        v = np.asarray(v, dtype=np.float64)
        k = np.clip(np.searchsorted(cats, v), 0, cats.size - 1)
        return np.where(cats[k] == v, k, -1)

    def route(self, node, feature, v, missing, go):
        """Return ``go`` with the categorical nodes' decisions.

        Left iff v's category is in the node's left set; a NaN or unseen value takes the
        missing side (``missing == 1``: left).
        """
        cat = self.row[node] >= 0
        if not cat.any():
            return go
        go = go.copy()
        for f in np.unique(feature[cat]):
            sel = cat & (feature == f)
            k = self.code(f, v[sel])
            inset = self.left[self.row[node[sel]], np.maximum(k, 0)]
            go[sel] = np.where(k >= 0, inset, missing[sel] == 1)
        return go

    def probe_values(self, f):
        """Return values to probe feature f with: its categories, an unseen one, a negative."""
        cats = self.values[int(f)]
        return np.concatenate([cats, [cats.max() + 1.0, -1.0, cats.min() + 0.5]])

    def known(self, f, v):
        """Tell whether the value v is a category of feature f."""
        return bool(self.code(f, v) >= 0)
