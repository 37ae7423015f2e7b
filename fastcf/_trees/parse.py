"""Which parser reads a fitted tree model, and the parsed copy checked against the model.

Each library has its own parser module (``parse`` and ``check``), picked by the model's
library: :mod:`.parse_xgboost`, :mod:`.parse_lightgbm`, :mod:`.parse_hist` (scikit-learn's
``HistGradientBoostingClassifier``) and :mod:`.parse_sklearn` (scikit-learn's other trees,
forests and gradient boosting; it refuses what it does not read). Used by
:class:`fastcf.TreeExplainer` and by the tabular tree fold (:mod:`fastcf._tabular.treefold`).
"""

from __future__ import annotations

__all__ = ["parse_model"]


def _parser(model):
    """Return the parser module of the model's library (``parse``, ``check``)."""
    root = getattr(model, "library", None) or type(model).__module__.split(".")[0]
    if root == "xgboost":
        from . import parse_xgboost as parser
    elif root == "lightgbm":
        from . import parse_lightgbm as parser
    elif type(model).__name__ == "HistGradientBoostingClassifier" and root == "sklearn":
        from . import parse_hist as parser
    else:
        from . import parse_sklearn as parser
    return parser


def parse_model(model):
    """Return the checked :class:`~fastcf._trees.forest.Forest` of a fitted tree classifier."""
    parser = _parser(model)
    forest = parser.parse(model)
    parser.check(forest, model)
    return forest
