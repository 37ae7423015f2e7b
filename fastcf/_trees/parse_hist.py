"""scikit-learn's ``HistGradientBoostingClassifier`` as a :class:`~fastcf._trees.forest.Forest`.

The split rule (``sklearn/ensemble/_hist_gradient_boosting/_predictor.pyx``,
``_predict_one_from_raw_data``): the input is validated as float64 (``X_DTYPE``, inf allowed)
and a row goes left at a numerical node iff ``x <= num_threshold``, both float64 (a NaN goes to
the side ``missing_go_to_left`` names, read into :attr:`Tree.missing
<fastcf._trees.forest.Tree>`; a node fitted without missing values sends them to the child with
more samples). So the boundary is the threshold itself: ``left iff x <= b`` with ``b =
num_threshold`` (which may be +inf: every number goes left); the domain is the finite float64
line, and a NaN of a query is answered by :mod:`fastcf._trees.missing`.

Categorical splits (bitsets over ordinal codes, with the categorical columns moved first by the
model's own preprocessor) are not supported: a model fitted with categorical features is refused
with their names.

Aggregation (``gradient_boosting.py``, ``_raw_predict``): the raw scores start as zeros plus
``_baseline_prediction`` (one value per tree of an iteration), and each iteration adds its
trees' leaf values (learning rate already applied by the grower), one tree per class for K > 2.
Binary: ``predict`` gives class 1 iff ``raw > 0`` — strictly: "np.argmax([0.5, 0.5]) is 0, not
1. Therefore '> 0' not '>= 0'" (:class:`~fastcf._trees.forest.Sign` with ``at_zero=0``),
``predict_proba`` is ``[1 − expit(raw), expit(raw)]``; multiclass: the first argmax of the raw
scores, ``predict_proba`` their softmax.

The check compares every tree's own leaf value (``TreePredictor.predict``) with the parsed
copy's, then the raw scores (``decision_function``), probabilities and classes, on probe rows.
"""

from __future__ import annotations

import numpy as np

from .agree import probe, tree, verify
from .forest import Argmax, Forest, Logistic, Sign, Softmax

__all__ = ["parse", "check", "RULE", "DOMAIN"]

RULE = "x <= threshold (float64)"
_F64_MAX = float(np.finfo(np.float64).max)
DOMAIN = (-_F64_MAX, _F64_MAX)


def _tree(predictor, k, n_scores):
    """Return the Tree of one ``TreePredictor`` adding its leaf values to score k."""
    nodes = predictor.nodes
    leaf = nodes["is_leaf"].astype(bool)
    if nodes["is_categorical"][~leaf].any():  # pragma: no cover - refused before (parse)
        raise ValueError("model: categorical splits are not supported")
    t = np.where(leaf, np.nan, nodes["num_threshold"].astype(np.float64))
    value = np.zeros((leaf.size, n_scores))
    value[:, k] = nodes["value"]
    out, _ = tree(
        feature=np.where(leaf, -1, nodes["feature_idx"]),
        threshold=t,
        boundary=t,
        left=np.where(leaf, -1, nodes["left"].astype(np.int64)),
        right=np.where(leaf, -1, nodes["right"].astype(np.int64)),
        value=value,
        missing=np.where(leaf, -1, nodes["missing_go_to_left"].astype(np.int8)),
    )
    return out


def parse(model) -> Forest:
    """Return the :class:`~fastcf._trees.forest.Forest` of a fitted HistGradientBoostingClassifier.

    Raises
    ------
    ValueError
        Not fitted; categorical features; a loss other than log-loss.
    """
    from sklearn.utils.validation import check_is_fitted

    name = type(model).__name__
    check_is_fitted(
        model, msg=f"model: this {name} is not fitted yet; call fit(X, y) before explaining it"
    )
    cat = getattr(model, "is_categorical_", None)
    if cat is not None and np.any(cat):
        names = getattr(model, "feature_names_in_", None)
        idx = np.flatnonzero(cat)
        which = [str(names[i]) if names is not None else str(i) for i in idx]
        raise ValueError(
            f"model: this {name} has categorical features ({', '.join(which)}); categorical "
            "splits (bitsets over category codes) are not supported: fit it with "
            "categorical_features=None on numerically encoded columns"
        )
    if getattr(model, "loss", "log_loss") != "log_loss":  # pragma: no cover - sklearn's only
        raise ValueError(f"model: a {name} with loss={model.loss!r} is not supported")
    K = len(model.classes_)
    D = int(model.n_features_in_)
    S = int(model.n_trees_per_iteration_)
    base = np.asarray(model._baseline_prediction, dtype=np.float64).reshape(-1)
    trees = [_tree(p, k, S) for stage in model._predictors for k, p in enumerate(stage)]
    if not trees:  # pragma: no cover - a fitted model has at least one iteration
        raise ValueError(f"model: this {name} has no trees")
    if S == 1:
        return Forest(trees, base, 1.0, Sign(at_zero=0), Logistic(1.0), D, DOMAIN, RULE)
    return Forest(trees, base, 1.0, Argmax(K), Softmax(), D, DOMAIN, RULE)


def check(forest: Forest, model, n_probe: int = 512, seed: int = 0):
    """Check the parsed model against the model itself on probe rows; raise if they disagree.

    Each tree's leaf value at every row (the model's own ``TreePredictor.predict``) must equal
    the parsed tree's; the raw scores its ``decision_function`` within the rounding bound; the
    probabilities its ``predict_proba``; the classes its ``predict`` away from ties.
    """
    from .._confirm import model_input

    name = type(model).__name__
    P = probe(forest, n_probe, seed)
    R = model_input(model, P)
    lv = forest.leaves(P)
    try:
        X = model._preprocess_X(R, reset=False)
        kb, fmap = model._bin_mapper.make_known_categories_bitsets()
        own = np.column_stack(
            [p.predict(X, kb, fmap, 1) for stage in model._predictors for p in stage]
        )
    except (AttributeError, TypeError):  # pragma: no cover - scikit-learn internals moved
        own = None
    if own is not None:
        mine = forest.value[lv].sum(axis=2)  # each tree's one nonzero score (zeros add exactly)
        if own.shape != mine.shape or not np.array_equal(own, mine):
            raise ValueError(
                f"model: fastcf's copy of this {name} routes probe rows to other leaves than "
                f"the model itself (split rule {forest.rule}); the model is not supported"
            )
    verify(
        forest,
        name,
        P,
        classes=model.classes_,
        predict=np.asarray(model.predict(R)),
        scores=np.asarray(model.decision_function(R), dtype=np.float64).reshape(P.shape[0], -1),
        proba=np.asarray(model.predict_proba(R), dtype=np.float64),
    )
