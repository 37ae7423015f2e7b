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
model's own preprocessor, which :func:`_columns` undoes) are read as sets of category values
(:mod:`fastcf._trees.categorical`): the explainer answers on the forest conditioned on the
categories, one combination of them after another. Categories must be numbers.

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


def _tree(predictor, k, n_scores, column):
    """Return ``(Tree, categorical)`` of one ``TreePredictor`` adding its leaf values to score k.

    ``column[j]``: the input column of the model's preprocessed column j (the categorical
    columns first where the model has a preprocessor). ``categorical``: ``(position, feature,
    left codes)`` of each categorical node (the codes of its ``raw_left_cat_bitsets`` row).
    """
    nodes = predictor.nodes
    leaf = nodes["is_leaf"].astype(bool)
    is_cat = nodes["is_categorical"].astype(bool) & ~leaf
    t = np.where(leaf | is_cat, np.nan, nodes["num_threshold"].astype(np.float64))
    value = np.zeros((leaf.size, n_scores))
    value[:, k] = nodes["value"]
    feature = np.where(leaf, -1, column[np.where(leaf, 0, nodes["feature_idx"])])
    out, pos = tree(
        feature=feature,
        threshold=t,
        boundary=t,  # NaN at a categorical node: its rule is a set (fastcf._trees.categorical)
        left=np.where(leaf, -1, nodes["left"].astype(np.int64)),
        right=np.where(leaf, -1, nodes["right"].astype(np.int64)),
        value=value,
        missing=np.where(leaf, -1, nodes["missing_go_to_left"].astype(np.int8)),
    )
    cats = []
    bits = getattr(predictor, "raw_left_cat_bitsets", None)
    for i in np.flatnonzero(is_cat):
        if pos[i] < 0:  # pragma: no cover - unreachable nodes are dropped
            continue
        row = np.asarray(bits[nodes["bitset_idx"][i]], dtype=np.uint32)
        codes = np.flatnonzero(np.unpackbits(row.view(np.uint8), bitorder="little"))
        cats.append((int(pos[i]), int(feature[i]), codes))
    return out, cats


def _columns(model, D):
    """Return (input column of each preprocessed column, {input column: category values})."""
    cat = getattr(model, "is_categorical_", None)
    if cat is None or not np.any(cat):
        return np.arange(D), {}
    cat = np.asarray(cat, dtype=bool)
    column = np.concatenate([np.flatnonzero(cat), np.flatnonzero(~cat)])
    encoder = model._preprocessor.named_transformers_["encoder"]
    values = {}
    for f, c in zip(np.flatnonzero(cat), encoder.categories_, strict=True):
        c = np.asarray(c)
        if c.dtype.kind not in "biuf":
            names = getattr(model, "feature_names_in_", None)
            label = repr(str(names[f])) if names is not None else str(f)
            raise ValueError(
                f"model: the categorical feature {label} of this HistGradientBoostingClassifier "
                f"has non-numeric categories ({c[:3].tolist()} ...); TreeExplainer takes numeric "
                "inputs: encode the categories as numbers before fitting"
            )
        c = np.asarray(c, dtype=np.float64)
        values[int(f)] = c[~np.isnan(c)]  # (NaN, a category of the encoder, is missing)
    return column, values


def parse(model) -> Forest:
    """Return the :class:`~fastcf._trees.forest.Forest` of a fitted HistGradientBoostingClassifier.

    Categorical features (``categorical_features``) are read as sets of categories
    (:mod:`fastcf._trees.categorical`).

    Raises
    ------
    ValueError
        Not fitted; non-numeric categories; a loss other than log-loss.
    """
    from sklearn.utils.validation import check_is_fitted

    from .categorical import Categories

    name = type(model).__name__
    check_is_fitted(
        model, msg=f"model: this {name} is not fitted yet; call fit(X, y) before explaining it"
    )
    if getattr(model, "loss", "log_loss") != "log_loss":  # pragma: no cover - sklearn's only
        raise ValueError(f"model: a {name} with loss={model.loss!r} is not supported")
    K = len(model.classes_)
    D = int(model.n_features_in_)
    S = int(model.n_trees_per_iteration_)
    column, values = _columns(model, D)
    base = np.asarray(model._baseline_prediction, dtype=np.float64).reshape(-1)
    parsed = [_tree(p, k, S, column) for stage in model._predictors for k, p in enumerate(stage)]
    trees = [t for t, _ in parsed]
    if not trees:  # pragma: no cover - a fitted model has at least one iteration
        raise ValueError(f"model: this {name} has no trees")
    if S == 1:
        forest = Forest(trees, base, 1.0, Sign(at_zero=0), Logistic(1.0), D, DOMAIN, RULE)
    else:
        forest = Forest(trees, base, 1.0, Argmax(K), Softmax(), D, DOMAIN, RULE)
    if values:

        def left_of(vals, codes):  # the bitset's codes index the categories
            m = np.zeros(vals.size, dtype=bool)
            m[codes[codes < vals.size]] = True
            return m

        per_tree = [cats for _, cats in parsed]
        forest.categories = Categories.of_trees(forest, values, per_tree, left_of)
    return forest


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
