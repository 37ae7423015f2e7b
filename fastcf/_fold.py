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
against the model itself (:func:`check_scores`): the folded scores against the model's
``decision_function`` (and the folded probabilities against ``predict_proba``) on probe rows, and
refuses the model, naming its steps, where they differ by more than rounding.
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


def _name(step):
    return step if isinstance(step, str) else type(step).__name__


def _fitted(step, attr, where):
    if getattr(step, attr, None) is None and not hasattr(step, attr):
        from sklearn.exceptions import NotFittedError

        raise NotFittedError(f"{where}: {_name(step)} is not fitted; call fit first")


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
        raise TypeError(f"{where}: {_name(step)} was fitted on {n_fit} features; it gets {n}")


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
    name = _name(step)
    if isinstance(step, str):
        raise TypeError(f"{where}: unknown step {step!r}; supported: {AFFINE_STEPS}")
    _check_n(step, n, where)
    if name in ("StandardScaler", "RobustScaler"):
        # (f − center) / scale, each part only where the step's parameters use it
        _fitted(step, "n_features_in_", where)
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
        _fitted(step, "scale_", where)
        if step.clip:
            raise TypeError(
                f"{where}: MinMaxScaler(clip=True) is not affine; refit with clip=False"
            )
        return _diag(n, _vec(step.scale_, n, 1.0), offset=_vec(step.min_, n, 0.0))
    if name == "MaxAbsScaler":
        _fitted(step, "scale_", where)
        return _diag(n, _vec(step.scale_, n, 1.0), divide=True)
    if name in ("PCA", "TruncatedSVD"):
        _fitted(step, "components_", where)
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
        _fitted(step, "statistics_", where)
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
        where = f"pipeline step {name!r} ({_name(step)})"
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


def fold_scores(steps, A, b, n_in):
    """Return ``(A', b')``: scores ``A f + b`` of the last step's output as scores of raw input.

    Parameters
    ----------
    steps : list of (name, step)
        The preprocessing steps, first to last (:func:`pipeline_parts`).
    A : ndarray of shape (K, n_out)
    b : ndarray of shape (K,)
    n_in : int or None
        The number of raw input features (None: the first step's ``n_features_in_``).

    Raises
    ------
    TypeError
        If a step is not affine, or the features do not line up (the message names the step).
    """
    maps, n = _maps(steps, n_in)
    if n is not None and n != A.shape[1]:
        last = maps[-1][0] if maps else "the input"
        raise TypeError(f"the classifier reads {A.shape[1]} features; {last} makes {n}")
    for _, m in reversed(maps):
        A, b = m.fold(A, b)
    return np.ascontiguousarray(A, dtype=np.float64), np.ascontiguousarray(b, dtype=np.float64)


def term_scale(steps, A, b, n_in, X):
    """Return the size of the terms the pipeline adds up on rows ``X``, shape (n, K).

    The pipeline computes ``A (M_L (… (M_1 (x − c_1) + o_1) …) − c_L) + o_L) + b`` step by step,
    and each step rounds relative to the size of *its* terms, which a fold's cancellations can
    hide (a whitening PCA divides by √variance and its components cancel in ``A'``). So the
    scale is the same chain with every matrix, center and offset replaced by its absolute value,
    ``|A| |M_L| ⋯ |M_1| |x| + …``: it bounds the magnitude of every intermediate term, and the
    rounding of the model's arithmetic is a few units of roundoff times it.

    Parameters
    ----------
    steps : list of (name, step)
    A : ndarray of shape (K, n_out)
        The classifier's own coefficients (before folding).
    b : ndarray of shape (K,)
    n_in : int or None
    X : ndarray of shape (n, D)
        The raw rows.
    """
    maps, _ = _maps(steps, n_in)
    A, b = np.abs(A), np.abs(b)
    for _, m in reversed(maps):
        A, b = m.magnitude().fold(A, b)
    return np.abs(X) @ A.T + b


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
    name = _name(first) if first is not None else ""

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


def check_scores(
    model, A, b, R, *, probabilistic, steps=(), scale=None, factor=1.0, what="the folded model"
):
    """Check the scores ``A x + b`` against the model's own on rows ``R``; refuse where they differ.

    Parameters
    ----------
    model : estimator
        The fitted model the user gave (a classifier or a Pipeline ending in one).
    A, b : ndarray
        The folded scores (one row: ``classes[1]`` iff the score > 0).
    R : ndarray of shape (n, D) or DataFrame
        Probe rows in the model's input format.
    probabilistic : bool
        Whether ``predict_proba`` should be the sigmoid/softmax of the scores; checked too.
    steps : list of (name, step)
        The preprocessing steps, named in the message.
    scale : ndarray of shape (n, K), optional
        The size of the largest term of each score (rounding is judged relative to it);
        default ``|R| |A|ᵀ + |b|``.
    factor : float, default=1.0
        The scores are ``factor`` times the model's ``decision_function``.
    what : str
        What is checked, for the message.

    Raises
    ------
    TypeError
        If the scores (or probabilities) differ by more than rounding.
    """
    if R.shape[0] == 0:
        return
    X = R.to_numpy(dtype=np.float64) if hasattr(R, "to_numpy") else np.asarray(R, np.float64)
    if not hasattr(R, "columns") and getattr(model, "feature_names_in_", None) is not None:
        import pandas as pd  # a model fitted on a DataFrame warns on bare arrays

        R = pd.DataFrame(X, columns=list(model.feature_names_in_))
    s = X @ A.T + b
    if scale is None:
        scale = np.abs(X) @ np.abs(A).T + np.abs(b)
    eps = rounding_eps(steps, R)
    width = max(A.shape[1], 1)
    # rounding: the model and the fold sum the same terms in other orders and groupings (each
    # step rounds), so allow a few ulps of the largest term per feature, floored at 64
    tol = (64.0 + 4.0 * width) * eps * (scale + np.abs(s)) + np.finfo(np.float64).tiny
    names = ", ".join(_name(st) for _, st in steps) or "none"
    if hasattr(model, "decision_function"):
        d = np.asarray(model.decision_function(R), dtype=np.float64).reshape(X.shape[0], -1)
        d = d * factor
        if d.shape != s.shape:
            raise TypeError(
                f"{what}: the model's decision_function has shape {d.shape}; the fold gives "
                f"{s.shape}"
            )
        _refuse_where(
            np.abs(d - s) > tol, d, s, names,
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
        # p is a smooth function of the scores with slope ≤ 1/2: the scores' rounding bounds it
        ptol = tol.max(axis=1, keepdims=True) + 1e3 * eps
        _refuse_where(
            np.abs(p - q) > ptol, p, q, names,
            f"{what}: the model's predict_proba is not the sigmoid/softmax of its scores (p =",
        )  # fmt: skip


def _refuse_where(bad, got, want, names, head):
    """Raise the ``TypeError`` of a fold check at the first entry of ``bad``, if any."""
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise TypeError(
            f"{head} {got[i, j]:.17g} against {want[i, j]:.17g} on a probe row, beyond "
            f"rounding); one of its steps ({names}) does something the fold does not model; "
            "please report it"
        )
