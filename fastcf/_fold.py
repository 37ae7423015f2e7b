"""The one fold of scikit-learn preprocessing steps into affine maps, and its check.

Every family that explains a fitted pipeline (``LinearExplainer``, ``TabularExplainer``) reads the
arithmetic of each preprocessing step here, and nowhere else: :func:`step_map` returns a step's
fitted transform on present values as an :class:`Affine` map ``out = M f + c`` (kept as a
per-feature scale, a selection or a dense matrix, so that a scaler of a 10⁵-feature model stays
O(D)). The callers compose those maps: :func:`fold_scores` into the scores ``A x + b`` of a linear
classifier, :mod:`fastcf._tabular.fold` into affine expressions over a tabular program's
variables.

Each step, as a map on present values:

* ``StandardScaler`` (``with_mean``, ``with_std``): ``(f − mean) / scale`` per feature;
* ``RobustScaler`` (``with_centering``, ``with_scaling``): ``(f − center) / scale``;
* ``MinMaxScaler(clip=False)``: ``f · scale + min``; ``MaxAbsScaler``: ``f / max_abs``;
* ``PCA`` (``whiten``, any ``n_components``): ``C (f − mean)``, the rows of C divided by
  ``√variance`` when whitened; ``TruncatedSVD``: ``C f``;
* feature selectors (``VarianceThreshold``, ``SelectKBest``, ``SelectFromModel``, ``RFE``, ...:
  any step with ``get_support``): the selected features;
* ``SimpleImputer`` (any strategy): the identity on present values, less the columns missing in
  every training row (scikit-learn drops them), its ``add_indicator`` columns 0;
* ``FunctionTransformer()`` (no ``func``), ``"passthrough"``, ``None``: the identity.

Every other step raises a ``TypeError`` that names it (a ``Normalizer``, ``PolynomialFeatures`` or
``QuantileTransformer`` is not affine). scikit-learn keeps statistics a step does not use (a
``StandardScaler(with_mean=False)`` still stores ``mean_``), so each map reads the step's
parameters, not only which attributes exist. ``tests/test_fold.py`` checks every map against the
step's own ``transform`` over the parameters that change its arithmetic.

A fold is only as good as this table, so an explainer built from a fitted model checks it once
against the model itself (:func:`check_scores`, the one check of every fold, LinearExplainer's and
TabularExplainer's): the folded scores against the model's ``decision_function`` (and the folded
probabilities against ``predict_proba``) on probe rows, and refuses the model, naming its steps,
where they differ by more than rounding. "Rounding" is one rule, :func:`tolerance`: a bound on
what the model's step-by-step arithmetic and the fold's can each round, in units of the size of
the terms the steps add up (:class:`Terms`, the chain ``|A| |M_L| ⋯ |M_1| |x| + …``, which the
fold computes beside the scores) and of the precision the model computes in
(:func:`rounding_eps`: float32 where its columns are).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "AFFINE_STEPS",
    "Affine",
    "step_map",
    "fold_scores",
    "probe_rows",
    "check_scores",
    "pipeline_parts",
    "rounding_eps",
    "term_scale",
    "Terms",
    "tolerance",
    "step_name",
    "check_fitted",
]

#: the steps :func:`step_map` folds, for messages and docs
AFFINE_STEPS = (
    "StandardScaler, RobustScaler, MinMaxScaler(clip=False), MaxAbsScaler, PCA, TruncatedSVD, "
    "feature selectors (VarianceThreshold, SelectKBest, SelectFromModel, ...), SimpleImputer, "
    "FunctionTransformer() (identity), 'passthrough'"
)

_NOT_AFFINE = {
    "Normalizer": "it divides each row by its own norm",
    "PolynomialFeatures": "it multiplies features together",
    "SplineTransformer": "it maps each feature through splines",
    "QuantileTransformer": "it maps each feature through its empirical quantiles",
    "PowerTransformer": "it applies a Yeo-Johnson/Box-Cox power to each feature",
    "KBinsDiscretizer": "it bins each feature",
    "Binarizer": "it thresholds each feature",
    "KernelPCA": "its components are kernel functions of the input",
    "Nystroem": "its features are kernel functions of the input",
    "RBFSampler": "its features are cosines of the input",
}


@dataclass(frozen=True)
class Affine:
    """A step's transform on present values: ``out = M (f − center) + offset``.

    Exactly one of the three forms of M is set:

    * ``scale`` of shape (n_in,): M is diagonal (``n_out = n_in``), M = diag(scale), or
      diag(1 / scale) with ``divide`` (a ``MaxAbsScaler`` divides);
    * ``select`` of shape (n_out,): output i is input ``select[i]``, or 0 where it is −1;
    * ``matrix`` of shape (n_out, n_in): a dense M.

    ``center`` (n_in,) and ``offset`` (n_out,) are None where zero. They are kept apart, as each
    step computes them, so that a fold rounds as the step's own arithmetic suggests (and as
    fastcf folded before this module: the same bits).

    Attributes
    ----------
    n_in : int
    n_out : int
    scale, select, matrix, center, offset : ndarray or None
    divide : bool
    """

    n_in: int
    n_out: int
    scale: np.ndarray | None = None
    select: np.ndarray | None = None
    matrix: np.ndarray | None = None
    center: np.ndarray | None = None
    offset: np.ndarray | None = None
    divide: bool = False

    def _mul(self, A):
        """Return ``A M`` for a (K, n_out) A."""
        if self.scale is not None:
            return A / self.scale if self.divide else A * self.scale
        if self.select is not None:
            A2 = np.zeros((A.shape[0], self.n_in))
            keep = self.select >= 0
            # np.add.at: a feature selected twice (not made by any step here) would add up
            np.add.at(A2.T, self.select[keep], A[:, keep].T)
            return A2
        return A @ self.matrix

    def fold(self, A, b):
        """Return ``(A', b')`` with ``A (M (f − center) + offset) + b = A' f + b'``."""
        A2 = self._mul(A)
        b2 = b
        if self.center is not None:
            b2 = b2 - A2 @ self.center
        if self.offset is not None:
            b2 = b2 + A @ self.offset
        return A2, b2

    def magnitude(self):
        """Return the map of absolute values, ``|M| (f + |center|) + |offset|``."""

        def absolute(v):
            return None if v is None else np.abs(v)

        return Affine(
            n_in=self.n_in,
            n_out=self.n_out,
            scale=absolute(self.scale),
            select=self.select,
            matrix=absolute(self.matrix),
            center=None if self.center is None else -np.abs(self.center),
            offset=absolute(self.offset),
            divide=self.divide,
        )

    @property
    def shift(self):
        """The constant of ``out = M f + shift``: ``offset − M center``, shape (n_out,)."""
        out = np.zeros(self.n_out) if self.offset is None else self.offset.copy()
        if self.center is None:
            return out
        if self.scale is not None:
            return out - (self.center / self.scale if self.divide else self.center * self.scale)
        return out - self.matrix @ self.center  # (a selection has no center)

    def apply(self, F):
        """Return the map applied to the rows of ``F`` (n, n_in), in float64 (for tests)."""
        F = np.asarray(F, dtype=np.float64)
        if self.center is not None:
            F = F - self.center
        if self.scale is not None:
            out = F / self.scale if self.divide else F * self.scale
        elif self.select is not None:
            out = np.zeros((F.shape[0], self.n_out))
            keep = self.select >= 0
            out[:, keep] = F[:, self.select[keep]]
        else:
            out = F @ self.matrix.T
        return out if self.offset is None else out + self.offset


def step_name(step):
    """Return a step's name for messages: its class name, or the string (``"passthrough"``)."""
    return step if isinstance(step, str) else type(step).__name__


def check_fitted(step, attr, where):
    """Raise ``NotFittedError`` naming ``where`` if ``step`` has no fitted attribute ``attr``.

    Parameters
    ----------
    step : estimator
    attr : str
        An attribute ``fit`` sets (``"scale_"``, ``"categories_"``, ...).
    where : str
        Where the step sits, for the message.

    Examples
    --------
    >>> from sklearn.preprocessing import StandardScaler
    >>> check_fitted(StandardScaler(), "scale_", "step 'sc'")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    sklearn.exceptions.NotFittedError: step 'sc': StandardScaler is not fitted; call fit first
    """
    if not hasattr(step, attr):
        from sklearn.exceptions import NotFittedError

        raise NotFittedError(f"{where}: {step_name(step)} is not fitted; call fit first")


def _vec(v, n, default):
    """Return ``v`` (None: ``default``) as a float64 vector of length n."""
    if v is None:
        return np.full(n, float(default))
    return np.broadcast_to(np.asarray(v, dtype=np.float64), (n,)).copy()


def _diag(n, scale, center=None, offset=None, divide=False):
    scale = np.asarray(scale, dtype=np.float64)
    return Affine(n_in=n, n_out=n, scale=scale, center=center, offset=offset, divide=divide)


def _select(n, select):
    select = np.asarray(select, dtype=np.int64)
    return Affine(n_in=n, n_out=select.shape[0], select=select)


def _check_n(step, n, where):
    n_fit = getattr(step, "n_features_in_", None)
    if n_fit is not None and n_fit != n:
        raise TypeError(f"{where}: {step_name(step)} was fitted on {n_fit} features; it gets {n}")


def step_map(step, n, where="pipeline step"):
    """Return the :class:`Affine` map of one fitted preprocessing step with ``n`` input features.

    Parameters
    ----------
    step : estimator, "passthrough" or None
        A fitted step of the table in the module docstring.
    n : int
        The number of features the step receives.
    where : str
        Where the step sits, for messages (``"pipeline step 'scale' (StandardScaler)"``).

    Returns
    -------
    Affine

    Raises
    ------
    TypeError
        If the step is not affine on present values (the message names it and says why).
    sklearn.exceptions.NotFittedError
        If the step is not fitted.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.preprocessing import StandardScaler
    >>> X = np.array([[100.0, 1.0], [102.0, 3.0]])
    >>> m = step_map(StandardScaler(with_mean=False).fit(X), 2)
    >>> np.allclose(m.apply(X), StandardScaler(with_mean=False).fit(X).transform(X))
    True
    """
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return _diag(n, np.ones(n))
    name = step_name(step)
    if isinstance(step, str):
        raise TypeError(f"{where}: unknown step {step!r}; supported: {AFFINE_STEPS}")
    _check_n(step, n, where)
    if name in ("StandardScaler", "RobustScaler"):
        # (f − center) / scale, each part only where the step's parameters use it
        check_fitted(step, "n_features_in_", where)
        if name == "StandardScaler":
            center = step.mean_ if step.with_mean else None
            scale = step.scale_ if step.with_std else None
        else:
            center = step.center_ if step.with_centering else None
            scale = step.scale_ if step.with_scaling else None
        # (the center subtracted only where the parameters say so: scikit-learn keeps mean_
        # when with_mean=False)
        center = None if center is None else _vec(center, n, 0.0)
        return _diag(n, 1.0 / _vec(scale, n, 1.0), center=center)
    if name == "MinMaxScaler":
        check_fitted(step, "scale_", where)
        if step.clip:
            raise TypeError(
                f"{where}: MinMaxScaler(clip=True) is not affine; refit with clip=False"
            )
        return _diag(n, _vec(step.scale_, n, 1.0), offset=_vec(step.min_, n, 0.0))
    if name == "MaxAbsScaler":
        check_fitted(step, "scale_", where)
        return _diag(n, _vec(step.scale_, n, 1.0), divide=True)
    if name in ("PCA", "TruncatedSVD"):
        check_fitted(step, "components_", where)
        C = np.array(step.components_, dtype=np.float64)
        center = None
        if name == "PCA":
            if step.whiten:
                scale = np.sqrt(np.asarray(step.explained_variance_, dtype=np.float64))
                # PCA.transform divides by √variance clipped below at ε: a component of
                # (near) zero variance multiplies the rounding of its projection by up to 1/ε,
                # so the pipeline's scores hold noise no fold (nor any exact method) reproduces
                if scale.size and not scale.min() > 2.0**-26 * scale.max():
                    raise TypeError(
                        f"{where}: PCA(whiten=True) has a component of (near) zero variance "
                        f"({scale.min() ** 2:.3g} against {scale.max() ** 2:.3g}): whitening "
                        "multiplies the rounding of its projection by up to 1/ε, so the "
                        "pipeline's scores are noise along it; fit PCA with n_components below "
                        "the data's rank (e.g. n_components=0.999999)"
                    )
                C /= scale[:, None]
            center = np.asarray(step.mean_, dtype=np.float64)
        return Affine(n_in=n, n_out=C.shape[0], matrix=C, center=center)
    if name == "SimpleImputer":
        check_fitted(step, "statistics_", where)
        stats = np.asarray(step.statistics_)
        keep = np.ones(n, dtype=bool)
        if stats.dtype.kind == "f" and not getattr(step, "keep_empty_features", False):
            keep = ~np.isnan(stats)  # columns missing in every training row are dropped
        select = list(np.flatnonzero(keep))
        if step.add_indicator and step.indicator_ is not None:
            # missing-value indicators: 0 on every row without a missing value
            select += [-1] * len(step.indicator_.features_)
        return _select(n, select)
    if name == "FunctionTransformer":
        if step.func is not None:
            raise TypeError(
                f"{where}: FunctionTransformer(func={step.func!r}) is not the identity; only "
                f"FunctionTransformer() is supported; supported steps: {AFFINE_STEPS}"
            )
        return _diag(n, np.ones(n))
    if callable(getattr(step, "get_support", None)):  # SelectorMixin
        try:
            support = np.asarray(step.get_support(indices=True), dtype=np.int64)
        except Exception as exc:  # an unfitted selector raises NotFittedError here
            from sklearn.exceptions import NotFittedError

            if isinstance(exc, NotFittedError):
                raise NotFittedError(f"{where}: {name} is not fitted; call fit first") from exc
            raise
        return _select(n, support)
    why = _NOT_AFFINE.get(name)
    why = f" ({why})" if why else ""
    raise TypeError(
        f"{where}: {name} is not an affine transform fastcf can fold{why}; supported steps: "
        f"{AFFINE_STEPS}"
    )


def pipeline_parts(model):
    """Return ``(steps, classifier)``: a Pipeline's (name, step) pairs before the last, and it.

    A bare estimator is ``([], model)``; nested Pipelines are flattened.

    Raises
    ------
    TypeError
        If the Pipeline is empty.
    """
    if type(model).__name__ != "Pipeline":
        return [], model
    if not model.steps:
        raise TypeError("empty Pipeline")
    steps = []
    for name, step in model.steps[:-1]:
        if type(step).__name__ == "Pipeline":
            inner, last = pipeline_parts(step)
            steps += [(f"{name} > {n}", s) for n, s in inner]
            steps.append((f"{name} > last", last))
        else:
            steps.append((name, step))
    inner, clf = pipeline_parts(model.steps[-1][1])
    return steps + inner, clf


def _maps(steps, n_in):
    """Return ``([(where, Affine), ...], n_out)``: the map of each step, first to last."""
    maps = []
    n = n_in
    for name, step in steps:
        where = f"pipeline step {name!r} ({step_name(step)})"
        if n is None:
            n = getattr(step, "n_features_in_", None)
            if n is None:
                if step is None or isinstance(step, str):
                    continue  # "passthrough" before anything tells the width
                raise TypeError(f"{where}: cannot tell how many features it receives")
        if type(step).__name__ == "ColumnTransformer":
            raise TypeError(
                f"{where}: a ColumnTransformer encodes DataFrame columns; explain this pipeline "
                "with fastcf.TabularExplainer(model, X_train), which folds encoders and per-column "
                "steps into an exact mixed-integer program"
            )
        m = step_map(step, n, where)
        maps.append((where, m))
        n = m.n_out
    return maps, n


@dataclass(frozen=True)
class Terms:
    """The size of the terms a model adds up on a row ``x``, ``T(x) = A |x| + b``, and its depth.

    The pipeline computes its scores step by step, ``a_k (M_L (⋯ (M_1 (x − c_1) + o_1) ⋯) − c_L)
    + o_L) + b_k``, and each step rounds relative to the size of *its* terms, which the fold's
    cancellations can hide (a whitening PCA divides by √variance and its components cancel in the
    folded A; a MinMaxScaler of data far from 0 adds an offset that cancels the scaled value). T
    is the same chain with every matrix, center and offset replaced by its absolute value,
    ``|a_k| |M_L| ⋯ |M_1| |x| + …``: it bounds the magnitude of every intermediate term of every
    step, and :func:`tolerance` allows a few units of roundoff of it per layer.

    Attributes
    ----------
    A : ndarray of shape (K, D)
        ``|A| |M_L| ⋯ |M_1|``, non-negative.
    b : ndarray of shape (K,)
        The chain's constant part, ``|b| + |A| (|o_L| + |M_L| |c_L|) + …``, non-negative.
    depth : int
        The layers of the model that round: each step with arithmetic (a selection only copies
        its input) and the classifier.
    width : int
        The longest sum a layer computes: at most the largest number of features in or out of
        any layer.
    """

    A: np.ndarray
    b: np.ndarray
    depth: int = 1
    width: int = 1

    @classmethod
    def of_classifier(cls, A, b):
        """Return the terms of a bare classifier's scores ``A f + b``: ``|A| |f| + |b|``."""
        A = np.abs(np.asarray(A, dtype=np.float64))
        return cls(A, np.abs(np.asarray(b, dtype=np.float64)), 1, max(A.shape[1], 1))

    def scale(self, X):
        """Return ``T`` on the rows of ``X`` (n, D), shape (n, K)."""
        return np.abs(np.asarray(X, dtype=np.float64)) @ self.A.T + self.b


def fold_scores(steps, A, b, n_in, terms=None):
    """Return ``(A', b', terms')``: scores ``A f + b`` of the last step's output, of raw input.

    Parameters
    ----------
    steps : list of (name, step)
        The preprocessing steps, first to last (:func:`pipeline_parts`).
    A : ndarray of shape (K, n_out)
    b : ndarray of shape (K,)
    n_in : int or None
        The number of raw input features (None: the first step's ``n_features_in_``).
    terms : Terms, optional
        The terms of ``A f + b`` (default :meth:`Terms.of_classifier`; a classifier that is
        itself folded, a OneVsRestClassifier of pipelines, passes its own).

    Returns
    -------
    A' : ndarray of shape (K, n_in)
    b' : ndarray of shape (K,)
    terms' : Terms
        The size of the terms the pipeline adds up (the same chain, in absolute values).

    Raises
    ------
    TypeError
        If a step is not affine, or the features do not line up (the message names the step).
    """
    maps, n = _maps(steps, n_in)
    if n is not None and n != A.shape[1]:
        last = maps[-1][0] if maps else "the input"
        raise TypeError(f"the classifier reads {A.shape[1]} features; {last} makes {n}")
    terms = Terms.of_classifier(A, b) if terms is None else terms
    At, bt, depth, width = terms.A, terms.b, terms.depth, terms.width
    for _, m in reversed(maps):
        A, b = m.fold(A, b)
        At, bt = m.magnitude().fold(At, bt)
        depth += m.select is None  # a selection copies: no rounding
        width = max(width, m.n_in, m.n_out)
    A = np.ascontiguousarray(A, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    return A, b, Terms(np.asarray(At, np.float64), np.asarray(bt, np.float64), depth, width)


def term_scale(steps, A, b, n_in, X):
    """Return the size of the terms the pipeline adds up on rows ``X``, shape (n, K).

    :class:`Terms` of the pipeline whose classifier has scores ``A f + b`` (its own
    coefficients, before folding), on the raw rows ``X`` (n, D).
    """
    return fold_scores(steps, np.atleast_2d(A), np.atleast_1d(b), n_in)[2].scale(X)


def probe_rows(steps, n, rows=None, k=64, seed=0):
    """Return probe rows of the raw input space, at the model's own scale.

    ``rows`` (training rows given by the user, the first ``k`` finite ones) are used as they
    are; else ``k`` rows drawn around the location and spread that the first preprocessing step
    recorded (a scaler's mean and scale, a MinMaxScaler's range, ...), or standard normal rows.
    """
    rng = np.random.default_rng(seed)
    if rows is not None:
        R = np.asarray(rows, dtype=np.float64)
        R = R[np.all(np.isfinite(R), axis=1)][:k]
        if R.shape[0]:
            return R
    loc, spread = np.zeros(n), np.ones(n)
    first = steps[0][1] if steps else None
    name = step_name(first) if first is not None else ""

    def _get(attr):
        v = getattr(first, attr, None)
        return None if v is None else np.broadcast_to(np.asarray(v, dtype=np.float64), (n,))

    if name == "StandardScaler":
        m, v = _get("mean_"), _get("var_")
        loc = m if m is not None else loc
        spread = np.sqrt(v) if v is not None else spread
    elif name == "RobustScaler":
        c, s = _get("center_"), _get("scale_")
        loc = c if c is not None else loc
        spread = s if s is not None else spread
    elif name == "MinMaxScaler":
        lo, hi = _get("data_min_"), _get("data_max_")
        loc, spread = (lo + hi) / 2, (hi - lo) / 2
    elif name == "MaxAbsScaler":
        spread = _get("max_abs_")
    elif name == "PCA":
        loc = _get("mean_")
        spread = np.full(n, np.sqrt(max(float(np.max(first.explained_variance_)), 0.0)))
    elif name == "SimpleImputer":
        s = np.asarray(first.statistics_)
        if s.dtype.kind == "f":
            loc = np.where(np.isfinite(s), s, 0.0)
            spread = np.maximum(np.abs(loc), 1.0)
    loc = np.where(np.isfinite(loc), loc, 0.0)
    spread = np.where(np.isfinite(spread) & (spread > 0), spread, 1.0)
    return loc + spread * rng.standard_normal((k, n))


def rounding_eps(steps, R):
    """Return the unit roundoff of the arithmetic the model does on rows ``R``.

    float32 where the rows carry float32 (or float16) columns, which scikit-learn's scalers keep
    in their own precision, or where the steps hand the classifier float32 features; else
    float64's.
    """
    eps = np.finfo(np.float64).eps
    dtypes = list(R.dtypes) if hasattr(R, "dtypes") else [np.asarray(R).dtype]
    for dt in dtypes:
        if getattr(dt, "kind", "") == "f" and np.finfo(dt).eps > eps:
            eps = float(np.finfo(dt).eps)
    out = R
    try:
        for _, step in steps:
            if step is None or isinstance(step, str):
                continue
            out = step.transform(out)
    except Exception:  # the check judges the steps; this only sets the tolerance
        return eps
    dt = getattr(out, "dtype", np.float64)
    if getattr(dt, "kind", "") == "f":
        eps = max(eps, float(np.finfo(dt).eps))
    return eps


def tolerance(T, eps, depth, width):
    """Return how far a fold's scores may lie from the model's own by rounding alone.

    ``(2·depth + 1) · (width + 2) · eps · T``, the one rule of every fold's check.

    Each layer of the model computes ``y = M (f − c) + o`` (the classifier: ``A f + b``) with
    sums of at most ``width`` products, so its computed ``y`` is off by at most
    ``γ_{width+2} (|M| (|f| + |c|) + |o|)``, with ``γ_k = k u / (1 − k u)`` and u the unit
    roundoff of its precision (Higham, *Accuracy and Stability of Numerical Algorithms*, §3.1:
    any order of summation, blocked BLAS and FMA included). Carried to the scores by the later
    layers' ``|M|``, each layer's error is at most ``γ_{width+2} T`` (T: :class:`Terms`, the
    chain of absolute values), so the model's scores are within ``depth · γ_{width+2} T`` of
    the exact ones. The fold composes the same maps (``depth − 1`` products, each rounding
    relative to the same chain) and evaluates ``A' x + b'`` once (``|A'| |x| + |b'| ≤ T``):
    within ``depth · γ_{width+2} T`` as well. The two differ by at most
    ``2 depth γ_{width+2} T ≈ depth (width + 2) eps T`` (eps = 2u); the rule allows twice that
    and one layer more (second-order terms, the product of a tabular level, a float64 input the
    steps round to float32). It is a bound, not an estimate: a fold the check refuses differs
    from the model by more than any rounding of these steps can make.

    Parameters
    ----------
    T : ndarray
        The size of the terms of each score (:meth:`Terms.scale`).
    eps : float
        Machine epsilon of the precision the model computes in (:func:`rounding_eps`).
    depth, width : int
        :attr:`Terms.depth`, :attr:`Terms.width`.

    Returns
    -------
    ndarray
        Shaped as ``T``.

    Examples
    --------
    >>> float(tolerance(1.0, 2.0**-52, depth=2, width=3)) / 2.0**-52
    25.0
    """
    rule = (2.0 * depth + 1.0) * (width + 2.0) * eps
    return rule * np.asarray(T, dtype=np.float64) + np.finfo(np.float64).tiny


def check_scores(
    model, R, s, T, *, depth, width, steps=(), names=None, probabilistic=False, factor=1.0,
    proto_class=None, what="the folded model",
):  # fmt: skip
    """Check a fold's scores against the model's own on rows ``R``; refuse beyond rounding.

    The one check of every fold: :func:`fastcf.adapters.check_linear_model` (LinearExplainer)
    and :func:`fastcf._tabular.fold.check_fold` (TabularExplainer, prototype models included)
    both call it, with the scores and the :class:`Terms` of their own fold; the tolerance is
    :func:`tolerance`'s, in the precision the model computes in (:func:`rounding_eps`).

    Parameters
    ----------
    model : estimator
        The fitted model the user gave (a classifier or a Pipeline ending in one).
    R : ndarray or DataFrame of shape (n, D)
        The rows, in the model's input format.
    s : ndarray of shape (n, K)
        The fold's scores on ``R`` (one column: ``classes[1]`` iff the score > 0). A prototype
        model: one column per prototype, ``−d_p(x)`` up to a term common to every prototype.
    T : ndarray of shape (n, K)
        The size of the terms of each score (of each prototype's distance).
    depth, width : int
        Of the fold (:class:`Terms`).
    steps : list of (name, step)
        The preprocessing steps (the precision the model computes in is theirs).
    names : str, optional
        The steps, for the message (default: the names of ``steps``).
    probabilistic : bool, default=False
        Whether ``predict_proba`` should be the sigmoid/softmax of the scores; checked too.
    factor : float, default=1.0
        The scores are ``factor`` times the model's ``decision_function``.
    proto_class : ndarray of int, optional
        A prototype model: the class of each column of ``s``. Its ``decision_function`` is
        ``d_0 − d_1`` (binary) or ``−d_c`` per class, ``d_c`` the distance to the class's nearest
        prototype.
    what : str
        What is checked, for the message.

    Raises
    ------
    TypeError
        If the scores (or probabilities) differ by more than rounding.
    """
    n = R.shape[0]
    if n == 0:
        return
    s = np.asarray(s, dtype=np.float64).reshape(n, -1)
    T = np.asarray(T, dtype=np.float64).reshape(n, -1)
    if names is None:
        names = ", ".join(step_name(st) for _, st in steps) or "none"
    eps = rounding_eps(steps, R)
    if hasattr(model, "decision_function"):
        d = np.asarray(model.decision_function(R), dtype=np.float64).reshape(n, -1) * factor
        if proto_class is not None:
            s, T = _class_scores(s, T, proto_class, d)
        if d.shape != s.shape:
            raise TypeError(
                f"{what}: the model's decision_function has shape {d.shape}; the fold gives "
                f"{s.shape}"
            )
        _refuse_where(
            np.abs(d - s) > tolerance(T, eps, depth, width), d, s, names,
            f"{what} does not reproduce the model's decision_function (score",
        )  # fmt: skip
    if probabilistic and hasattr(model, "predict_proba"):
        p = np.asarray(model.predict_proba(R), dtype=np.float64)
        if s.shape[1] == 1:
            z = s[:, 0]
            e = np.exp(-np.abs(z))  # σ(z) without overflow on either side
            q1 = np.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
            q = np.column_stack([1.0 - q1, q1])
        else:
            e = np.exp(s - s.max(axis=1, keepdims=True))
            q = e / e.sum(axis=1, keepdims=True)
        # p is a smooth function of the scores with slope ≤ 1/2: the scores' rounding bounds it,
        # and the exp and the normalisation round each probability by a few eps
        ptol = tolerance(T, eps, depth, width).max(axis=1, keepdims=True) + 1e3 * eps
        _refuse_where(
            np.abs(p - q) > ptol, p, q, names,
            f"{what}: the model's predict_proba is not the sigmoid/softmax of its scores (p =",
        )  # fmt: skip


def _class_scores(s, T, proto_class, d):
    """Return a prototype model's per-prototype scores as its ``decision_function``, and terms.

    The fold's best score per class is ``xᵀΛx − d_c`` (``xᵀΛx`` common to all classes): binary
    ``d_0 − d_1`` is ``best_1 − best_0``; multiclass ``−d_c`` is ``best_c − best_0 − d_0``, with
    the model's own ``d_0``. Each entry is then off by the rounding of two prototypes' distances
    (the model's and the fold's): at most twice the largest of the row's terms.
    """
    n_classes = int(np.max(proto_class)) + 1 if d.shape[1] == 1 else d.shape[1]
    best = np.column_stack([s[:, proto_class == c].max(axis=1) for c in range(n_classes)])
    s = best[:, 1:2] - best[:, :1] if d.shape[1] == 1 else best - best[:, :1] + d[:, :1]
    return s, np.broadcast_to(2.0 * T.max(axis=1, keepdims=True), s.shape)


def _refuse_where(bad, got, want, names, head):
    """Raise the ``TypeError`` of a fold check at the first entry of ``bad``, if any."""
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise TypeError(
            f"{head} {got[i, j]:.17g} against {want[i, j]:.17g} on a probe row, beyond "
            f"rounding); one of its steps ({names}) does something the fold does not model; "
            "please report it"
        )
