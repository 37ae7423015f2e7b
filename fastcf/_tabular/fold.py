"""A fitted preprocessing pipeline and linear classifier -> affine scores of raw tabular columns.

:func:`fold_model` walks the fitted scikit-learn objects (``Pipeline``, ``ColumnTransformer`` and
the transformers below) symbolically. Every feature that flows between steps is either a *raw*
column (not yet touched: the column of the DataFrame itself) or an *affine expression* over the
variables of the mixed-integer program:

* a numeric column c is one variable ``x_c`` (its raw value);
* a categorical or ordinal column c is one 0/1 indicator ``δ_{c,k}`` per category k it can take
  (``Σ_k δ_{c,k} = 1``).

Numeric steps are affine per feature; an encoder maps its raw columns to expressions over their
indicators. At the end the classifier's scores ``A f + b`` (from
:func:`fastcf.adapters.linear_model_arrays`, or one per prototype of fastcf's ``GLVQ`` and
``GMLVQ``: see :func:`_prototype_scores`) become ``G v + g`` over the variable vector v.

==============================================  ============================================
step                                            on its features
==============================================  ============================================
StandardScaler, MinMaxScaler(clip=False),       ``(f - offset) / scale`` per feature
MaxAbsScaler, RobustScaler
OneHotEncoder (any ``drop=``, ``handle_unknown``,  ``Σ_k δ_{c,k} e_k``: each category's encoded
infrequent groups), OrdinalEncoder              vector, read by transforming one probe row per
                                                category (so ``drop`` and infrequent groups are
                                                the encoder's own)
SimpleImputer, FunctionTransformer() (no func),  identity (the query must not be missing;
``"passthrough"``, ``None``                      ``add_indicator`` columns are then 0)
``"drop"``                                       no feature
PCA (after the encoders)                         a dense affine map
ColumnTransformer (any column order, overlaps,   each transformer on its columns, outputs at the
remainder), Pipeline                             ColumnTransformer's ``output_indices_``
==============================================  ============================================

Anything else raises a ``TypeError`` that names the step. A final ``MLPClassifier`` (ReLU or
identity hidden layers) is folded like a linear classifier up to its first layer: ``G v + g``
are then its first hidden layer's pre-activations and ``Fold.net`` its layers
(:mod:`fastcf._tabular.netprog` writes the rest of the network into the program). An encoder
must receive raw columns (an imputer before it is fine); a column both encoded and used as a
number is refused. The fold is checked once against the model's own ``decision_function`` on
training rows (:func:`check_fold`; a network's by
:meth:`~fastcf._tabular.netprog.NetProgram.check`), so a step whose arithmetic is not what this
module assumes is refused rather than explained wrongly. The check is the one of every fold
(:func:`fastcf._fold.check_scores`, with its one rounding rule :func:`fastcf._fold.tolerance`):
beside each expression the walk keeps the size of the terms the steps add up to compute it
(:class:`FoldTerms`), so the rounding allowed is that of the steps' own arithmetic.

:class:`Raw`, :class:`Walk` and :func:`apply_step` are shared with the tree fold
(:mod:`fastcf._tabular.treefold`), which walks the same steps for the columns' kinds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._fold import (
    AFFINE_STEPS,
    Terms,
    check_fitted,
    check_scores,
    pipeline_parts,
    step_map,
    step_name,
)
from ..adapters import linear_model_fold, score_factor

__all__ = [
    "Fold",
    "FoldTerms",
    "fold_model",
    "check_fold",
    "SUPPORTED_STEPS",
    "Raw",
    "Walk",
    "apply_step",
]

SUPPORTED_STEPS = (
    f"{AFFINE_STEPS}, OneHotEncoder, OrdinalEncoder, 'drop', ColumnTransformer and Pipeline of "
    "these"
)

_ENCODERS = ("OneHotEncoder", "OrdinalEncoder")


_NO_FILL = object()  # a raw column that no imputer has filled on its way


class Raw:
    """A raw column of the input DataFrame, untouched so far (but perhaps imputed).

    ``fill``: the value a ``SimpleImputer`` on the way puts in a missing cell (the column is
    otherwise as it was), or ``_NO_FILL``.
    """

    __slots__ = ("col", "fill")

    def __init__(self, col, fill=_NO_FILL):
        self.col = col
        self.fill = fill


class _Lin:
    """An affine expression ``const + Σ coef[key] · var[key]`` over the program's variables.

    Keys: ``("num", c)`` for numeric column c, ``("cat", c, k)`` for category k of column c.

    Beside it, the size of the terms the steps add up to compute it (:class:`FoldTerms`):
    ``mconst + Σ mag[key] · |var[key]|``, the same chain in absolute values (an encoder's 0/1
    or code is exact: its own size), and ``depth``, the steps that rounded it.
    """

    __slots__ = ("coef", "const", "mag", "mconst", "depth")

    def __init__(self, coef, const, mag=None, mconst=None, depth=0):
        self.coef = coef
        self.const = float(const)
        self.mag = {k: abs(v) for k, v in coef.items()} if mag is None else mag
        self.mconst = abs(self.const) if mconst is None else float(mconst)
        self.depth = depth

    def scaled(self, s, t, t_size):
        """Return ``s · self + t``; ``t_size``: the size of the terms that make up ``t``."""
        a = abs(s)
        return _Lin(
            {k: s * v for k, v in self.coef.items()},
            s * self.const + t,
            {k: a * v for k, v in self.mag.items()},
            a * self.mconst + t_size,
            self.depth + 1,
        )


@dataclass(frozen=True)
class FoldTerms:
    """The size of the terms a tabular model adds up, as a map of its program's variables.

    The tabular side of :class:`fastcf._fold.Terms`: each feature the classifier reads is
    ``F_i(v) = Σ_j E[i, j] |v_j| + c[i]``, the chain of the steps' absolute values (a numeric
    column's value ``|x_c|``, a category's indicator 0 or 1: an encoder's output is exact), in
    the variables' layout of the fold (``numeric``, ``cat_cols``, ``cat_start``, kept as they
    were folded: :func:`fastcf._tabular.grid.with_levels` later turns a numeric column into an
    ordinal block, read back here). A linear classifier's scores have terms
    ``|A| F + |b|``. A prototype model computes the distance ``‖Ω (f − w_p)‖²`` of the features
    f (``Ω`` = I for GLVQ): its own rounding is relative to ``‖|Ω| a_p‖²`` with
    ``a_p = |f| + |w_p|``, and it carries the steps' rounding of f (relative to F) by its
    gradient ``2 Λ (f − w_p)``: so its terms are ``2 (|Ω| a_p)ᵀ (|Ω| F) + ‖|Ω| a_p‖²``, which
    also bound the fold's (``2 |Λ w_p|ᵀ F + |w_p|ᵀ |Λ| |w_p|``). f is the features' value, from
    the fold's own expressions (``Ef``, ``cf``).

    Attributes
    ----------
    numeric, cat_cols, cat_start : ndarray of int
        The variables' layout when folded.
    E : ndarray of shape (n_features, n_vars)
    c : ndarray of shape (n_features,)
    A, b : ndarray or None
        ``|A|``, ``|b|`` of a linear classifier.
    omega, protos : ndarray or None
        ``|Ω|`` (None: the identity) and ``|W|`` of a prototype model.
    depth, width : int
        The layers that round (steps and the classifier) and the longest sum of one.
    Ef, cf : ndarray or None
        A prototype model: the features ``f = Ef v + cf`` (signed), shaped as ``E`` and ``c``.
    """

    numeric: np.ndarray
    cat_cols: np.ndarray
    cat_start: np.ndarray
    E: np.ndarray
    c: np.ndarray
    A: np.ndarray | None
    b: np.ndarray | None
    omega: np.ndarray | None
    protos: np.ndarray | None
    depth: int
    width: int
    Ef: np.ndarray | None = None
    cf: np.ndarray | None = None

    def variables(self, fold, V):
        """Return the rows ``V`` of ``fold``'s variables in this layout (the values, signed)."""
        V = np.asarray(V, dtype=np.float64)
        same = np.array_equal(fold.numeric, self.numeric) and np.array_equal(
            fold.cat_cols, self.cat_cols
        )
        if same and np.array_equal(fold.cat_start, self.cat_start):
            return V
        n_now, n_num = fold.numeric.size, self.numeric.size
        block = {int(c): j for j, c in enumerate(fold.cat_cols)}
        now = {int(c): j for j, c in enumerate(fold.numeric)}

        def cols(c):
            j = block[int(c)]
            return slice(n_now + fold.cat_start[j], n_now + fold.cat_start[j + 1])

        U = np.zeros((V.shape[0], n_num + int(self.cat_start[-1])))
        for j, c in enumerate(self.numeric):
            # a numeric column given levels= is an ordinal block: its value, the level it picks
            x = V[:, now[int(c)]] if int(c) in now else V[:, cols(c)] @ fold.labels[int(c)]
            U[:, j] = x
        for j, c in enumerate(self.cat_cols):
            U[:, n_num + self.cat_start[j] : n_num + self.cat_start[j + 1]] = V[:, cols(c)]
        return U

    def scale(self, fold, V):
        """Return the size of the terms of each score on the rows ``V``, shape (n, K).

        A prototype model: of each prototype's distance, shape (n, P).
        """
        U = self.variables(fold, V)
        F = np.abs(U) @ self.E.T + self.c
        if self.protos is None:
            return F @ self.A.T + self.b
        f = np.abs(U @ self.Ef.T + self.cf)
        a = f[:, None, :] + self.protos[None, :, :]  # a_p = |f| + |w_p|: (n, P, n_features)
        if self.omega is not None:
            a, F = a @ self.omega.T, F @ self.omega.T
        return 2.0 * np.einsum("npr,nr->np", a, F) + np.einsum("npr,npr->np", a, a)


@dataclass
class Fold:
    """The model as affine scores over raw columns.

    Attributes
    ----------
    kinds : dict
        Column position -> ``"numeric"``, ``"categorical"`` or ``"ordinal"`` for the columns the
        model reads (a column it drops is absent).
    labels : dict
        Column position -> ndarray of its category labels (encoded columns), in encoder order.
    ranks : dict
        Column position -> ndarray of float ranks (ordinal columns: the encoder's code).
    numeric : ndarray of int
        Positions of the numeric columns, in column order (the first variables).
    cat_cols : ndarray of int
        Positions of the encoded columns, in column order.
    cat_start : ndarray of int
        Offset of each encoded column's indicators in the indicator block (one more entry: the end).
    G : ndarray of shape (K, n_numeric + n_indicators)
        Scores ``G v + g``; K = 1 for a binary model (``classes[1]`` iff the score > 0).
    g : ndarray of shape (K,)
    classes : ndarray
    probabilistic : bool
        Whether ``predict_proba`` is the sigmoid/softmax of the scores.
    proto_class : ndarray of int or None
        For a prototype model (fastcf's ``GLVQ``, ``GMLVQ``): the class index of each score row.
        Row p is then ``−d_p(x) + xᵀΛx`` (the distance to prototype p up to a term common to
        every prototype), and the model predicts the class of the largest score.
    fill : dict
        Column position -> the value the model puts in a missing cell of that column: the
        statistic of the ``SimpleImputer`` (missing values NaN/None, no ``add_indicator``) that
        every path of the column through the steps passes before any other step. A column
        absent here cannot be missing in a query row.
    terms : FoldTerms or None
        The size of the terms the model adds up (the scale of its rounding, for
        :func:`check_fold`); None for a fold without scores (a tree model's).
    net : Net or None
        For a pipeline ending in an ``MLPClassifier`` (ReLU or identity hidden layers): its
        layers (:class:`fastcf._net.model.Net`). ``G v + g`` are then not class scores but the
        pre-activations of its first hidden layer, over the program's variables (the steps
        folded into ``W₁ f + b₁``); the layers after the first are ``net.W[1:]``.
    """

    kinds: dict
    labels: dict
    ranks: dict
    numeric: np.ndarray
    cat_cols: np.ndarray
    cat_start: np.ndarray
    G: np.ndarray
    g: np.ndarray
    classes: np.ndarray
    probabilistic: bool
    steps: list = field(default_factory=list)
    proto_class: np.ndarray | None = None
    fill: dict = field(default_factory=dict)
    terms: FoldTerms | None = None
    net: object = None  # a network (MLPClassifier): its layers; G, g are its first layer's


class Walk:
    """The state of one fold: column kinds and labels, found while walking the steps."""

    def __init__(self, X, ordered):
        self.X = X  # the training DataFrame (model columns)
        self.ordered = ordered  # column position -> ordered pandas categories, or None
        self.kinds = {}
        self.labels = {}
        self.ranks = {}
        self.steps = []
        self.fills = {}  # column position -> the fill of each path that reads it
        self.width = X.shape[1]  # the longest sum of a step so far (FoldTerms.width)

    def consume(self, f):
        """Record how a path that reads raw column ``f`` fills its missing cells."""
        self.fills.setdefault(f.col, []).append(f.fill)

    def fill(self):
        """Return {column: fill} of the columns every path of which one imputer fills alike."""
        out = {}
        for c, fills in self.fills.items():
            first = fills[0]
            if first is _NO_FILL or any(f is _NO_FILL for f in fills):
                continue
            if all(_same(f, first) for f in fills):
                out[c] = first
        return out

    def mark(self, col, kind, where):
        old = self.kinds.get(col)
        if old is not None and (old == "numeric") != (kind == "numeric"):
            raise TypeError(
                f"column {self.X.columns[col]!r} is used both as a number and as a category "
                f"({where}); encode it one way only"
            )
        self.kinds[col] = kind if old is None else old

    def numeric(self, f, where):
        """Return feature ``f`` as an affine expression (a raw column becomes numeric)."""
        if isinstance(f, _Lin):
            return f
        self.consume(f)
        dtype = self.X.dtypes.iloc[f.col]
        if not _is_numeric_dtype(dtype):
            raise TypeError(
                f"column {self.X.columns[f.col]!r} (dtype {dtype}) reaches {where} without an "
                "encoder; encode it with OneHotEncoder or OrdinalEncoder"
            )
        self.mark(f.col, "numeric", where)
        return _Lin({("num", f.col): 1.0}, 0.0)


def _is_numeric_dtype(dtype):
    import pandas as pd

    return pd.api.types.is_numeric_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype)


def apply_step(step, feats, walk, where):
    """Return the features that ``step`` makes of ``feats`` (a list of Raw / _Lin)."""
    name = step_name(step)
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return feats
    if isinstance(step, str) and step == "drop":
        return []
    if isinstance(step, str):
        raise TypeError(f"{where}: unknown step {step!r}; supported: {SUPPORTED_STEPS}")
    walk.steps.append(name)
    if name == "Pipeline":
        for sub_name, sub in step.steps:
            feats = apply_step(sub, feats, walk, f"{where} > step {sub_name!r} ({step_name(sub)})")
        return feats
    if name == "ColumnTransformer":
        return _column_transformer(step, feats, walk, where)
    if name in _ENCODERS:
        return _encoder(step, name, feats, walk, where)
    return _affine(step, feats, walk, where)


def _affine(step, feats, walk, where):
    """Return the features of an affine step (:func:`fastcf._fold.step_map`: the one fold)."""
    try:
        m = step_map(step, len(feats), where)
    except TypeError as exc:
        raise TypeError(str(exc).replace(AFFINE_STEPS, SUPPORTED_STEPS)) from None
    if m.select is not None:  # raw columns pass a selection as they are (an imputer, an encoder)
        fills = _imputer_fills(step, len(feats))
        return [
            (Raw(feats[j].col, fills[j]) if fills is not None and isinstance(feats[j], Raw)
             and feats[j].fill is _NO_FILL else feats[j]) if j >= 0 else _Lin({}, 0.0)
            for j in m.select
        ]  # fmt: skip
    identity = m.center is None and m.offset is None and not m.divide
    if m.scale is not None and identity and (m.scale == 1.0).all():
        return feats  # the identity (FunctionTransformer()): raw columns stay raw
    lins = [walk.numeric(f, where) for f in feats]
    shift = m.shift
    # the size of the terms of the shift: |offset| + |M| |center| (the step's own arithmetic)
    shift_size = m.magnitude().shift
    walk.width = max(walk.width, m.n_in, m.n_out)
    if m.scale is not None:
        s = 1.0 / m.scale if m.divide else m.scale
        return [
            f.scaled(si, ti, ui) for f, si, ti, ui in zip(lins, s, shift, shift_size, strict=True)
        ]
    out = []
    for row, c, u in zip(m.matrix, shift, shift_size, strict=True):
        coef, const, mag, mconst, depth = {}, float(c), {}, float(u), 0
        for c_i, f in zip(row, lins, strict=True):
            if c_i == 0.0:
                continue
            const += c_i * f.const
            for key, v in f.coef.items():
                coef[key] = coef.get(key, 0.0) + c_i * v
            a = abs(c_i)
            mconst += a * f.mconst
            for key, v in f.mag.items():
                mag[key] = mag.get(key, 0.0) + a * v
            depth = max(depth, f.depth)
        out.append(_Lin(coef, const, mag, mconst, depth + 1))
    return out


def _imputer_fills(step, n):
    """Return the fill of each input column of a ``SimpleImputer`` step, or None.

    None for any other step, and for an imputer whose missing marker is not NaN/None (a
    sentinel such as -1 is a value the query may hold) or that adds indicator columns (a
    missing cell then changes a feature the fold holds at 0).
    """
    if step_name(step) != "SimpleImputer" or getattr(step, "add_indicator", False):
        return None
    if not _missing(step.missing_values):
        return None
    stats = np.asarray(step.statistics_, dtype=object)
    if stats.shape[0] != n:
        return None
    return [_key(v) for v in stats]


def _key(v):
    return v.item() if hasattr(v, "item") else v


def _same(a, b):
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b


def _column_transformer(ct, feats, walk, where):
    check_fitted(ct, "transformers_", where)
    index = getattr(ct, "_transformer_to_input_indices", None)
    if index is None:  # pragma: no cover - scikit-learn < 1.1
        raise TypeError(f"{where}: this scikit-learn's ColumnTransformer is too old (< 1.2)")
    if ct.n_features_in_ != len(feats):
        raise TypeError(
            f"{where}: ColumnTransformer expects {ct.n_features_in_} columns; it gets {len(feats)}"
        )
    slices = ct.output_indices_
    n_out = max((s.stop for s in slices.values()), default=0)
    out = [None] * n_out
    for tname, trans, _ in ct.transformers_:
        sl = slices.get(tname, slice(0, 0))
        if sl.stop == sl.start:
            continue
        sub = [feats[i] for i in index[tname]]
        res = apply_step(trans, sub, walk, f"{where} > transformer {tname!r} ({step_name(trans)})")
        if len(res) != sl.stop - sl.start:
            raise TypeError(
                f"{where} > transformer {tname!r}: {step_name(trans)} makes {sl.stop - sl.start} "
                f"features, the fold {len(res)}; this step is not supported"
            )
        out[sl] = res
    return out


def _probe_frame(step, values_per_col):
    """Return the probe input of an encoder: one column per input, in its fitted format."""
    n = max(len(v) for v in values_per_col)
    cols = [np.asarray(list(v) + [v[0]] * (n - len(v)), dtype=object) for v in values_per_col]
    names = getattr(step, "feature_names_in_", None)
    if names is not None:
        import pandas as pd

        return pd.DataFrame({str(nm): c for nm, c in zip(names, cols, strict=True)})
    return np.column_stack(cols)


def _encoder(step, name, feats, walk, where):
    """Return the expressions of an encoder's outputs over its columns' indicators."""
    check_fitted(step, "categories_", where)
    cols = []
    for f in feats:
        if not isinstance(f, Raw):
            raise TypeError(
                f"{where}: {name} must receive raw columns (an imputer before it is fine), not "
                "the output of a numeric step"
            )
        cols.append(f.col)
        walk.consume(f)
    cats = []
    for c, cat in zip(cols, step.categories_, strict=True):
        keep = [v for v in cat if not _missing(v)]
        if not keep:
            raise TypeError(f"{where}: {name} has no category for column {walk.X.columns[c]!r}")
        cats.append(keep)
    # probe rows: row 0 has every column at its first category; then one row per (column,
    # category) with that column changed. Encoders are separable per column, so the encoded
    # vector of a row is base + Σ_c (enc(c at k) − base).
    base_vals = [[cat[0]] for cat in cats]
    rows = [base_vals]
    for j, cat in enumerate(cats):
        for k in range(1, len(cat)):
            vals = [[cat[k]] if i == j else bv for i, bv in enumerate(base_vals)]
            rows.append(vals)
    columns = [[r[i][0] for r in rows] for i in range(len(cats))]
    probe = _probe_frame(step, [np.asarray(cv, dtype=object) for cv in columns])
    if probe.shape[0] != len(rows):
        probe = probe[: len(rows)]
    enc = step.transform(probe)
    enc = np.asarray(enc.toarray() if hasattr(enc, "toarray") else enc, dtype=np.float64)
    base = enc[0]
    coefs = [dict() for _ in range(enc.shape[1])]
    r = 1
    for j, (c, cat) in enumerate(zip(cols, cats, strict=True)):
        codes = np.zeros(len(cat))
        for k in range(1, len(cat)):
            diff = enc[r] - base
            for i in np.flatnonzero(diff):
                coefs[i][("cat", c, k)] = float(diff[i])
            if name == "OrdinalEncoder":
                codes[k] = enc[r, j]  # one output per input column, in order
            r += 1
        if name == "OrdinalEncoder":
            codes[0] = base[j]
            kind, rank = "ordinal", codes
        elif walk.ordered.get(c) is not None:
            order = {v: i for i, v in enumerate(walk.ordered[c])}
            kind, rank = "ordinal", np.array([float(order.get(v, np.nan)) for v in cat])
        else:
            kind, rank = "categorical", None
        walk.mark(c, kind, where)
        _set_labels(walk, c, np.asarray(cat, dtype=object), rank, where)
    return [_Lin(coef, b0) for coef, b0 in zip(coefs, base, strict=True)]


def _set_labels(walk, c, labels, rank, where):
    old = walk.labels.get(c)
    if old is not None and (len(old) != len(labels) or any(old != labels)):
        raise TypeError(
            f"column {walk.X.columns[c]!r} is encoded twice with different categories ({where})"
        )
    walk.labels[c] = labels
    if rank is not None:
        walk.ranks[c] = np.asarray(rank, dtype=np.float64)


def _missing(v):
    try:
        return v is None or bool(np.isnan(v))
    except TypeError:
        return False


def fold_model(model, X):
    """Return the :class:`Fold` of a fitted model on the training DataFrame ``X``.

    Parameters
    ----------
    model : estimator
        A fitted ``Pipeline`` whose steps before the classifier are supported steps (see the
        module docstring), or a bare linear classifier.
    X : pandas.DataFrame
        The training data, with the model's input columns in the model's order.

    Returns
    -------
    Fold

    Raises
    ------
    TypeError
        If a step or the classifier is not supported (the message names it).
    """
    import pandas as pd

    if type(model).__name__ == "Pipeline":
        if not model.steps:
            raise TypeError("empty Pipeline")
        pre = model.steps[:-1]
        clf_name, clf = model.steps[-1]
    else:
        pre, clf_name, clf = [], "classifier", model
    proto_class = omega = terms = net = None
    if _is_lvq(clf):
        A, b, classes, proto_class, omega = _prototype_scores(clf, clf_name)
        probabilistic = False
    elif type(clf).__name__ == "MLPClassifier":
        net = _network(clf, clf_name)
        A, b, classes, probabilistic = net.W[0], net.b[0], np.asarray(clf.classes_), True
        terms = Terms.of_classifier(A, b)  # (its first layer's terms)
    else:
        try:
            A, b, classes, probabilistic, terms = linear_model_fold(clf)
        except TypeError as exc:
            raise TypeError(
                f"the classifier {clf_name!r} ({step_name(clf)}) is not supported: {exc}"
            ) from exc
    ordered = {}
    for i, dt in enumerate(X.dtypes):
        if isinstance(dt, pd.CategoricalDtype) and dt.ordered:
            ordered[i] = list(dt.categories)
    walk = Walk(X, ordered)
    feats = [Raw(i) for i in range(X.shape[1])]
    for name, step in pre:
        feats = apply_step(step, feats, walk, f"pipeline step {name!r} ({step_name(step)})")
    feats = [walk.numeric(f, f"the classifier {clf_name!r}") for f in feats]
    if len(feats) != A.shape[1]:
        raise TypeError(
            f"the classifier {clf_name!r} reads {A.shape[1]} features; the fold of the steps "
            f"before it makes {len(feats)}"
        )
    numeric = np.array(sorted(c for c, k in walk.kinds.items() if k == "numeric"), dtype=np.int64)
    cat_cols = np.array(sorted(c for c, k in walk.kinds.items() if k != "numeric"), dtype=np.int64)
    sizes = [len(walk.labels[c]) for c in cat_cols]
    cat_start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n_num = numeric.shape[0]
    pos = {("num", int(c)): i for i, c in enumerate(numeric)}
    for j, c in enumerate(cat_cols):
        for k in range(sizes[j]):
            pos[("cat", int(c), k)] = n_num + int(cat_start[j]) + k
    E = np.zeros((len(feats), n_num + int(cat_start[-1])))
    const = np.zeros(len(feats))
    E_size, c_size = np.zeros_like(E), np.zeros(len(feats))  # FoldTerms: the sizes of the terms
    for i, f in enumerate(feats):
        const[i] = f.const
        c_size[i] = f.mconst
        for key, v in f.coef.items():
            E[i, pos[key]] += v
        for key, v in f.mag.items():
            E_size[i, pos[key]] += v
    G = np.ascontiguousarray(A @ E)
    g = np.ascontiguousarray(A @ const + b)
    depth = max((f.depth for f in feats), default=0)
    width = max(walk.width, E.shape[0], E.shape[1], 1)
    if terms is not None:  # a linear classifier (perhaps itself folded): its own terms
        depth, width = depth + terms.depth, max(width, terms.width)
        scales = (terms.A, terms.b, None, None)
    else:  # a prototype model: Ω (f − w_p), then its squared norm
        depth, width = depth + 2, max(width, 0 if omega is None else omega.shape[0])
        absolute = None if omega is None else np.abs(omega)
        scales = (None, None, absolute, np.abs(np.asarray(clf.prototypes_, dtype=np.float64)))
    fold_terms = FoldTerms(
        numeric, cat_cols, cat_start, E_size, c_size, *scales, depth, width,
        *((E, const) if proto_class is not None else ()),
    )  # fmt: skip
    return Fold(
        kinds=walk.kinds,
        labels=walk.labels,
        ranks=walk.ranks,
        numeric=numeric,
        cat_cols=cat_cols,
        cat_start=cat_start,
        G=G,
        g=g,
        classes=np.asarray(classes),
        probabilistic=bool(probabilistic),
        steps=walk.steps,
        proto_class=proto_class,
        fill=walk.fill(),
        terms=fold_terms,
        net=net,
    )


def _network(clf, clf_name):
    """Return the :class:`~fastcf._net.model.Net` of an ``MLPClassifier`` (its own layers).

    Its first layer is folded with the steps before it like a linear classifier's scores.

    Raises
    ------
    TypeError
        Its hidden activation is not ReLU or the identity (``tanh`` and ``logistic`` are smooth:
        no exact program), it is multilabel, not fitted, or its weights are not finite.
    """
    from .._net.model import read_network

    try:
        return read_network(clf)
    except (TypeError, ValueError) as exc:
        text = str(exc).replace("NetExplainer", "TabularExplainer")
        raise TypeError(
            f"the classifier {clf_name!r} ({step_name(clf)}) is not supported: {text}"
        ) from exc


def _is_lvq(clf):
    return type(clf).__name__ in ("GLVQ", "GMLVQ", "LGMLVQ") and type(clf).__module__.startswith(
        "fastcf"
    )


def _prototype_scores(clf, clf_name):
    """Return ``(A, b, classes, proto_class, omega)``: the prototype scores of a GLVQ/GMLVQ.

    ``d_p(x) = (x − w_p)ᵀΛ(x − w_p) = xᵀΛx − (2Λw_p)ᵀx + w_pᵀΛw_p`` with Λ = ΩᵀΩ (the identity
    for GLVQ): the nearest prototype has the largest ``s_p = (2Λw_p)ᵀx − w_pᵀΛw_p``, an affine
    function of x, since ``xᵀΛx`` is common to every prototype.
    """
    where = f"the classifier {clf_name!r} ({step_name(clf)})"
    check_fitted(clf, "prototypes_", where)
    if type(clf).__name__ == "LGMLVQ":
        raise TypeError(
            f"{where} is not supported: its local matrices make the class boundaries quadratic, "
            "not linear; explain it with fastcf.lvq.LVQExplainer (continuous features)"
        )
    W = np.asarray(clf.prototypes_, dtype=np.float64)
    omega = None  # (GLVQ: Ω = I)
    if type(clf).__name__ == "GMLVQ":
        omega = np.asarray(clf.omega_, dtype=np.float64)
        LW = (W @ omega.T) @ omega  # rows Λ w_p
    else:
        LW = W
    A = 2.0 * LW
    b = -np.einsum("pd,pd->p", W, LW)
    classes = np.asarray(clf.classes_)
    proto_class = np.searchsorted(classes, np.asarray(clf.prototype_labels_)).astype(np.int64)
    return A, b, classes, proto_class, omega


def check_fold(fold, model, X, V):
    """Check the folded scores against the model's ``decision_function`` on rows ``X``.

    The one check of every fold (:func:`fastcf._fold.check_scores`): the scores ``V Gᵀ + g``
    against ``decision_function`` (a prototype model: the best score of each class), and the
    probabilities against ``predict_proba`` where the fold says they are the sigmoid/softmax of
    the scores, within :func:`fastcf._fold.tolerance` of the size of the terms the model adds up
    (``fold.terms``) in the precision it computes in (float32 where its columns are).

    Parameters
    ----------
    fold : Fold
    model : estimator
    X : DataFrame or ndarray
        Training rows in the model's input format, none missing.
    V : ndarray of shape (n, n_vars)
        The same rows as program variables.

    Raises
    ------
    TypeError
        If the scores differ by more than rounding: some step is not what the fold assumes.
    """
    if X.shape[0] == 0:
        return
    V = np.asarray(V, dtype=np.float64)
    if fold.terms is not None:
        T, depth, width = fold.terms.scale(fold, V), fold.terms.depth, fold.terms.width
    else:  # (a Fold made by hand: the size of its own terms)
        T, depth, width = np.abs(V) @ np.abs(fold.G.T) + np.abs(fold.g), 1, V.shape[1]
    steps, clf = pipeline_parts(model)
    check_scores(
        model,
        X,
        V @ fold.G.T + fold.g,
        T,
        depth=depth,
        width=max(width, V.shape[1]),
        steps=steps,
        names=", ".join(fold.steps) or "none",
        probabilistic=fold.probabilistic,
        factor=score_factor(clf),
        proto_class=fold.proto_class,
        what="the folded pipeline",
    )
