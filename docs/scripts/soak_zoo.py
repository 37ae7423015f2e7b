"""Soak of a pipeline zoo through the public API (issue 53): every supported step, every model.

Not run in CI. Each case, drawn from ``numpy.random.default_rng([seed, case])`` (so one case is
rerun alone with ``--case``), is:

* data: 200 rows of 4 or 5 columns, off-centre and badly scaled (column j centred at
  ±10^U(-2, 6), spread 10^U(-3, 4)); labels from a random linear rule of the standardised
  columns cut at its quantiles into 2 or 3 classes (every class present);
* a pipeline of 0 to 3 preprocessing steps, drawn one after the other (each fitted on the output
  of the ones before, to know its width) from every step :func:`fastcf._fold.step_map` folds:
  ``StandardScaler`` (``with_mean``, ``with_std``), ``RobustScaler`` (``with_centering``,
  ``with_scaling``, ``quantile_range``, ``unit_variance``), ``MinMaxScaler(clip=False)`` (three
  ``feature_range``), ``MaxAbsScaler``, ``PCA`` (``whiten``; ``n_components`` None, an int or
  0.999999; ``svd_solver`` auto/full), ``TruncatedSVD`` (randomized/arpack), the feature
  selectors ``VarianceThreshold``, ``SelectKBest``, ``SelectPercentile``, ``SelectFromModel``,
  ``RFE``, ``SimpleImputer`` (mean/median/most_frequent/constant, ``add_indicator``),
  ``FunctionTransformer()``, ``"passthrough"`` and a nested ``Pipeline`` of two scalers;
* with probability ``--unsupported`` (default 0.05), one step of those the catalog refuses
  (``Normalizer``, ``PolynomialFeatures``, ``SplineTransformer``, ``QuantileTransformer``,
  ``PowerTransformer``, ``KBinsDiscretizer``, ``Binarizer``, ``KernelPCA``, ``Nystroem``,
  ``RBFSampler``, ``MinMaxScaler(clip=True)``, ``FunctionTransformer(np.cbrt)``) inserted
  at a random place: it must be refused by design;
* a final model, uniformly among every linear classifier of ``fastcf._catalog.LINEAR_MODELS``
  (``LogisticRegression`` binary and multinomial with its solvers, ``LogisticRegressionCV``,
  ``SGDClassifier`` with each of its nine losses, ``LinearSVC`` (hinge, squared hinge,
  Crammer-Singer), ``RidgeClassifier``, ``RidgeClassifierCV``, ``Perceptron``,
  ``PassiveAggressiveClassifier``, ``LinearDiscriminantAnalysis`` (svd, lsqr, eigen, with
  shrinkage), ``SVC(kernel="linear")``, ``NuSVC(kernel="linear")``, ``OneVsRestClassifier`` of
  LogisticRegression / LinearSVC / linear SVC) and ``RandomForestClassifier(10, max_depth=4)``.

Two paths per case:

* array: the pipeline fitted on the array, ``ex = fastcf.explainer_for(pipe)``
  (``ex.fit_mad(X)`` when ``weights="mad"`` is drawn), three training rows explained one by one
  and as a batch, each with a random target other than the pipeline's prediction. Options:
  linear: ``region=True`` (or, for a probabilistic model, sometimes ``proba=``), ``metric``
  euclidean/manhattan, ``weights`` none/"mad"/random, sometimes ``bounds`` (the data's range,
  sometimes widened), sometimes one ``frozen`` feature, sometimes ``max_changes``; trees: the
  default metric, sometimes ``bounds``, ``frozen``, ``weights``; both: sometimes
  ``verify="model"``;
* tabular: the same (unfitted) steps and model fitted on a DataFrame of the same data, as a
  plain Pipeline or inside a ``ColumnTransformer`` over all columns, explained by
  ``fastcf.TabularExplainer(model, frame)`` (a ColumnTransformer or tree pipeline sometimes by
  ``fastcf.explainer_for(model, X_train=frame)``), the same three rows (DataFrame rows), single
  and batch, sometimes with ``bounds`` (a dict of the data's range), a ``frozen`` column,
  ``max_changes``, ``proba`` (binary probabilistic models).

Counted per final model and path:

* false successes: ``success=True`` but the user's model itself (``pipe.predict`` on the
  answer as the user passes it: an array row, a one-row DataFrame) is not the target, or the
  answer leaves the box, moves a frozen feature, changes more than ``max_changes``, or has
  ``predict_proba`` below ``proba``;
* proba short (fold): a success of the array path whose ``predict_proba`` is below ``proba``
  by at most 1e-9 relative, under the default ``verify="fold"`` (the answer is certified by the
  folded scores, which differ from the model's by rounding: documented; not a defect). With
  ``verify="model"``, and on the tabular path (checked by the model's ``predict_proba``), any
  shortfall is a false success;
* false refusals: building the explainer or explaining raises ``ValueError``/``TypeError``
  for a pipeline the catalog says is supported, except the refusals by design below;
* refusals by design (documented, counted apart, not defects), by message pattern:

  - ``PCA(whiten=True) has a component of (near) zero variance`` (both paths);
  - ``a multiclass SVC/NuSVC ... predicts by one-vs-one voting`` (3 classes);
  - ``a Pipeline ending in RandomForestClassifier: explain it with fastcf.TabularExplainer``
    (array path, tree model behind steps: the catalog sends it to the tabular path);
  - ``... mixes the columns ...`` (tabular path, tree model after PCA/TruncatedSVD: a split
    of a mixed feature is not a split of one column);
  - the unsupported steps: ``is not an affine transform fastcf can fold``, ``MinMaxScaler
    (clip=True) is not affine``, ``FunctionTransformer(func=...) is not the identity``;
* unsupported accepted: a pipeline with an unsupported step that an explainer took (the
  catalog says it refuses them);
* false failures: ``success=False`` (status UNREACHABLE, INFEASIBLE, NUMERIC, NOT_TARGET,
  SOLVER_FAILED or DEGENERATE) while a clear witness exists: a training row, with the frozen
  features set to the query's, inside the box (the tabular path: the training range, its
  default), that the model's own ``predict`` (and ``predict_proba`` for ``proba=``) puts in the
  target, the one deepest in it, whose score gap (target minus the best other class, the model's
  ``decision_function``) exceeds 1e-8 of the largest ``|decision_function|`` on the training
  rows and 1e-5 (ten times the default margin; trees: any witness). Not checked with
  ``max_changes``. A failure whose only witness is within that of the boundary (a model with
  scores ~1e17 rounds by more), or of another status, is counted under other failures (not a
  defect; its messages are listed);
* wrong messages: ``explainer_for`` refusing an ``SVC``/``NuSVC(kernel="linear")`` with the
  sentence "a kernel SVM other than kernel='linear' has no affine scores" (the refusal itself
  is then classified by ``LinearExplainer``'s own message);
* exceptions: any other exception (traceback printed).

Fits that scikit-learn itself refuses (a NuSVC of infeasible ``nu``, ...) are skipped and
counted. Usage: ``python docs/scripts/soak_zoo.py [--n N] [--seed SEED] [--case I]
[--minutes M] [--unsupported P]`` (default n 400, seed 0; ``--case I`` reruns case I alone and
prints every option in full; ``--minutes M`` stops after M minutes and summarises the cases run).
Exit status 1 on any false success, false refusal, unsupported accepted, false failure, wrong
message or exception.
"""

import argparse
import re
import sys
import time
import traceback
import warnings

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.decomposition import PCA, KernelPCA, TruncatedSVD
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.ensemble import RandomForestClassifier
from sklearn.feature_selection import (
    RFE,
    SelectFromModel,
    SelectKBest,
    SelectPercentile,
    VarianceThreshold,
    f_classif,
)
from sklearn.impute import SimpleImputer
from sklearn.kernel_approximation import Nystroem, RBFSampler
from sklearn.linear_model import (
    LogisticRegression,
    LogisticRegressionCV,
    PassiveAggressiveClassifier,
    Perceptron,
    RidgeClassifier,
    RidgeClassifierCV,
    SGDClassifier,
)
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (
    Binarizer,
    FunctionTransformer,
    KBinsDiscretizer,
    MaxAbsScaler,
    MinMaxScaler,
    Normalizer,
    PolynomialFeatures,
    PowerTransformer,
    QuantileTransformer,
    RobustScaler,
    SplineTransformer,
    StandardScaler,
)
from sklearn.svm import SVC, LinearSVC, NuSVC

import fastcf
from fastcf import Status

COLS = (
    "cases", "answers", "successes", "false successes", "false refusals", "by design",
    "unsupported accepted", "false failures", "other failures", "wrong messages", "exceptions",
    "skipped fits", "proba short (fold)",
)  # fmt: skip
BAD = (
    "false successes", "false refusals", "unsupported accepted", "false failures",
    "wrong messages", "exceptions",
)  # fmt: skip
FAILURES = {
    Status.UNREACHABLE,
    Status.INFEASIBLE,
    Status.NUMERIC,
    Status.NOT_TARGET,
    Status.SOLVER_FAILED,
    Status.DEGENERATE,
}
BY_DESIGN = (
    ("whitened zero-variance PCA", r"PCA\(whiten=True\) has a component of \(near\) zero variance"),
    ("multiclass SVC/NuSVC", r"a multiclass (SVC|NuSVC) .*one-vs-one voting"),
    ("tree pipeline on arrays", r"a Pipeline ending in \w+: explain it with fastcf\.Tabular"),
    ("tree after a mixing step", r"mixes the columns"),
    ("not affine", r"is not an affine transform fastcf can fold"),
    ("MinMaxScaler(clip=True)", r"MinMaxScaler\(clip=True\) is not affine"),
    ("FunctionTransformer(func)", r"FunctionTransformer\(func=.*\) is not the identity"),
)
UNSUPPORTED_PATTERNS = {"not affine", "MinMaxScaler(clip=True)", "FunctionTransformer(func)"}


# ------------------------------------------------------------------------------- the zoo
def _scaler(name, r):
    """A scaler of the given class name, with random options."""
    if name == "StandardScaler":
        return StandardScaler(with_mean=bool(r.random() < 0.8), with_std=bool(r.random() < 0.8))
    if name == "RobustScaler":
        return RobustScaler(
            with_centering=bool(r.random() < 0.8),
            with_scaling=bool(r.random() < 0.8),
            quantile_range=[(25.0, 75.0), (10.0, 90.0), (5.0, 95.0)][r.integers(3)],
            unit_variance=bool(r.random() < 0.3),
        )
    if name == "MinMaxScaler":
        return MinMaxScaler(feature_range=[(0, 1), (-1, 1), (-3, 7)][r.integers(3)])
    return MaxAbsScaler()


SCALERS = ("StandardScaler", "RobustScaler", "MinMaxScaler", "MaxAbsScaler")


def _supported(name, r, w, seed):
    """A supported step ``name`` for ``w`` input features (None if it needs more)."""
    if name in SCALERS:
        return _scaler(name, r)
    if name == "PCA":
        nc = [None, int(r.integers(1, w + 1)), 0.999999][r.integers(3)]
        solver = "full" if r.random() < 0.3 else "auto"
        return PCA(n_components=nc, whiten=bool(r.random() < 0.5), svd_solver=solver,
                   random_state=seed)  # fmt: skip
    if name == "TruncatedSVD":
        if w < 2:
            return None
        algo = "arpack" if r.random() < 0.3 else "randomized"
        return TruncatedSVD(int(r.integers(1, w)), algorithm=algo, random_state=seed)
    if name == "VarianceThreshold":
        return VarianceThreshold(0.0)
    if name == "SelectKBest":
        return SelectKBest(f_classif, k=int(r.integers(1, w + 1)))
    if name == "SelectPercentile":
        return SelectPercentile(f_classif, percentile=int(r.choice([30, 50, 80])))
    if name == "SelectFromModel":
        return SelectFromModel(LogisticRegression(max_iter=200), threshold="median")
    if name == "RFE":
        if w < 2:
            return None
        return RFE(RidgeClassifier(), n_features_to_select=int(r.integers(1, w)))
    if name == "SimpleImputer":
        strategy = ("mean", "median", "most_frequent", "constant")[r.integers(4)]
        return SimpleImputer(strategy=strategy, add_indicator=bool(r.random() < 0.3))
    if name == "FunctionTransformer":
        return FunctionTransformer()
    if name == "passthrough":
        return "passthrough"
    if name == "Pipeline":
        return make_pipeline(*(_scaler(SCALERS[r.integers(4)], r) for _ in range(2)))
    raise KeyError(name)


SUPPORTED = (
    "StandardScaler", "RobustScaler", "MinMaxScaler", "MaxAbsScaler", "PCA", "TruncatedSVD",
    "VarianceThreshold", "SelectKBest", "SelectPercentile", "SelectFromModel", "RFE",
    "SimpleImputer", "FunctionTransformer", "passthrough", "Pipeline",
)  # fmt: skip


def _unsupported(r, w, seed):
    """A step the catalog refuses (by design)."""
    makers = [
        lambda: Normalizer(),
        lambda: PolynomialFeatures(2),
        lambda: SplineTransformer(n_knots=4, degree=2),
        lambda: QuantileTransformer(n_quantiles=50),
        lambda: PowerTransformer(),
        lambda: KBinsDiscretizer(
            n_bins=3, encode="ordinal", quantile_method="averaged_inverted_cdf"
        ),
        lambda: Binarizer(threshold=0.0),
        lambda: KernelPCA(n_components=min(w, 3), kernel="rbf", random_state=seed),
        lambda: Nystroem(n_components=min(w, 3), random_state=seed),
        lambda: RBFSampler(n_components=3, random_state=seed),
        lambda: MinMaxScaler(clip=True),
        lambda: FunctionTransformer(np.cbrt),
    ]
    return makers[int(r.integers(len(makers)))]()


MODELS = (
    "LogisticRegression", "LogisticRegressionCV", "SGDClassifier", "LinearSVC",
    "RidgeClassifier", "RidgeClassifierCV", "Perceptron", "PassiveAggressiveClassifier",
    "LinearDiscriminantAnalysis", "SVC", "NuSVC", "OneVsRestClassifier",
    "RandomForestClassifier",
)  # fmt: skip
SGD_LOSSES = (
    "hinge", "log_loss", "modified_huber", "squared_hinge", "perceptron", "squared_error",
    "huber", "epsilon_insensitive", "squared_epsilon_insensitive",
)  # fmt: skip


def _model(name, r, K, seed):
    """Return (model, description) of the final model ``name``."""
    C = float(10.0 ** r.uniform(-2, 2))
    if name == "LogisticRegression":
        solvers = ["lbfgs", "newton-cg", "newton-cholesky", "sag", "saga"]
        if K == 2:
            solvers.append("liblinear")
        solver = solvers[r.integers(len(solvers))]
        return LogisticRegression(C=C, solver=solver, random_state=seed), f"solver={solver}"
    if name == "LogisticRegressionCV":
        return LogisticRegressionCV(Cs=3, cv=3), ""
    if name == "SGDClassifier":
        loss = SGD_LOSSES[r.integers(len(SGD_LOSSES))]
        return SGDClassifier(loss=loss, random_state=seed), f"loss={loss}"
    if name == "LinearSVC":
        loss = ("hinge", "squared_hinge")[r.integers(2)]
        mc = "crammer_singer" if r.random() < 0.25 else "ovr"
        return LinearSVC(C=C, loss=loss, multi_class=mc, random_state=seed), f"{loss} {mc}"
    if name == "RidgeClassifier":
        return RidgeClassifier(alpha=C), ""
    if name == "RidgeClassifierCV":
        return RidgeClassifierCV(), ""
    if name == "Perceptron":
        return Perceptron(random_state=seed), ""
    if name == "PassiveAggressiveClassifier":
        return PassiveAggressiveClassifier(C=C, random_state=seed), ""
    if name == "LinearDiscriminantAnalysis":
        solver = ("svd", "lsqr", "eigen")[r.integers(3)]
        shrink = "auto" if solver != "svd" and r.random() < 0.5 else None
        return LinearDiscriminantAnalysis(solver=solver, shrinkage=shrink), f"{solver} {shrink}"
    if name == "SVC":
        return SVC(kernel="linear", C=C, max_iter=20000), ""
    if name == "NuSVC":
        return NuSVC(kernel="linear", nu=float(r.choice([0.2, 0.4])), max_iter=20000), ""
    if name == "OneVsRestClassifier":
        inner = (
            LogisticRegression(C=C),
            LinearSVC(C=C, random_state=seed),
            SVC(kernel="linear", C=C, max_iter=20000),
        )[r.integers(3)]
        return OneVsRestClassifier(inner), type(inner).__name__
    if name == "RandomForestClassifier":
        return RandomForestClassifier(10, max_depth=4, random_state=seed), ""
    raise KeyError(name)


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


def make_case(seed, i, p_unsupported):
    """Return the case's data, unfitted steps and model, or a dict with 'skip'."""
    r = np.random.default_rng([seed, i])
    cseed = int(r.integers(2**31))
    n, D, K = 200, int(r.integers(4, 6)), int(r.choice([2, 3]))
    loc = r.choice([-1.0, 1.0], D) * 10.0 ** r.uniform(-2, 6, D)
    spread = 10.0 ** r.uniform(-3, 4, D)
    Z = r.standard_normal((n, D))
    X = loc + spread * Z
    s = Z @ r.standard_normal(D) + 0.3 * r.standard_normal(n)
    y = np.digitize(s, np.quantile(s, np.linspace(0, 1, K + 1)[1:-1]))
    case = {
        "r": r,
        "r2": np.random.default_rng([seed, i, 1]),
        "seed": cseed,
        "X": X,
        "y": y,
        "K": K,
        "D": D,
        "i": i,
    }
    n_steps = int(r.integers(0, 4))
    bad_at = int(r.integers(n_steps + 1)) if r.random() < p_unsupported else -1
    steps, names, cur = [], [], X
    for k in range(n_steps + (bad_at >= 0)):
        w = cur.shape[1]
        if k == bad_at:
            st = _unsupported(r, w, cseed)
        else:
            st = None
            while st is None:
                st = _supported(SUPPORTED[r.integers(len(SUPPORTED))], r, w, cseed)
        names.append(_describe(st))
        steps.append(st)
        if isinstance(st, str):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cur = clone(st).fit(cur, y).transform(cur)
        except Exception as exc:  # noqa: BLE001 - scikit-learn refuses the fit: no case
            case["skip"] = f"fit of {names[-1]}: {type(exc).__name__}: {exc}"
            return case
        if cur.shape[1] == 0:
            case["skip"] = f"{names[-1]} leaves no feature"
            return case
    name = MODELS[r.integers(len(MODELS))]
    model, how = _model(name, r, K, cseed)
    case.update(
        steps=steps, names=names, model_name=name, model=model, how=how,
        unsupported=bad_at >= 0,
    )  # fmt: skip
    return case


def _describe(step):
    if isinstance(step, str):
        return step
    if isinstance(step, Pipeline):
        return "Pipeline(" + ", ".join(_describe(s) for _, s in step.steps) + ")"
    default = type(step)().get_params() if not isinstance(step, (RFE, SelectFromModel)) else {}
    params = {
        k: v for k, v in step.get_params(deep=False).items()
        if k in default and not _same(default[k], v) and k != "random_state"
    }  # fmt: skip
    if isinstance(step, (RFE, SelectFromModel, SelectKBest, SelectPercentile)):
        params = {k: v for k, v in params.items() if k != "estimator"}
    args = ", ".join(f"{k}={v!r}" for k, v in params.items())
    return f"{type(step).__name__}({args})"


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return True
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return False


# ------------------------------------------------------------------------------- judging
def _by_design(msg):
    for kind, pattern in BY_DESIGN:
        if re.search(pattern, msg, flags=re.S):
            return kind
    return None


class Tally:
    def __init__(self, verbose):
        self.count = {}
        self.design = {}
        self.kinds = {}
        self.verbose = verbose

    def row(self, key):
        return self.count.setdefault(key, dict.fromkeys(COLS, 0))

    def add(self, key, col, detail=None, case=None, kind=None):
        """Count one ``col`` of ``key``; a defect's detail is printed (the first 5 of a kind)."""
        self.row(key)[col] += 1
        if detail is None:
            return
        n = 0
        if col in BAD or col in ("other failures", "proba short (fold)"):
            kind = re.sub(
                r"the folded model \(.*?\) does", "the folded model (...) does", kind or detail
            )
            kind = f"{key.split()[0]}: " + re.sub(r"-?\d[\d.e+-]*", "#", kind.split("\n")[0])[:120]
            seen = self.kinds.setdefault(col, {}).setdefault(kind, [0, []])
            seen[0] += 1
            n = seen[0]
            if case is not None and case["i"] not in seen[1] and len(seen[1]) < 12:
                seen[1].append(case["i"])
        if (col in BAD and n <= 5) or self.verbose:
            print(f"[{key}] {col}: {detail}\n    {case_text(case)}", flush=True)

    def refusal(self, key, exc, case, unsupported):
        msg = f"{type(exc).__name__}: {exc}"
        kind = _by_design(msg)
        if kind is not None and (kind not in UNSUPPORTED_PATTERNS or unsupported):
            self.add(key, "by design")
            self.design.setdefault(kind, [0, msg[:200]])[0] += 1
            return
        self.add(key, "false refusals", msg[:600], case, kind=msg)


def case_text(case):
    if case is None:
        return ""
    return (
        f"case --seed {case['seed0']} --case {case['i']}: D={case['D']} K={case['K']} "
        f"steps={case.get('names')} model={case.get('model_name')}({case.get('how')})"
    )


def _pred(model, Q):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.predict(Q)


def _proba(model, Q):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.predict_proba(Q)


def _class_index(model, t):
    return int(np.flatnonzero(np.asarray(model.classes_) == t)[0])


def array_violation(pipe, x, x0, t, opts):
    """Why an array answer is not one ('' if it is)."""
    if x.shape != x0.shape or not np.all(np.isfinite(x)):
        return f"answer shape {x.shape} or non-finite"
    p = _pred(pipe, x[None])[0]
    if p != t:
        return f"pipe.predict(answer) = {p!r} != target {t!r}"
    if "bounds" in opts:
        lo, hi = opts["bounds"]
        if not np.all((x >= lo) & (x <= hi)):
            return "outside the bounds"
    for f in opts.get("frozen", []):
        if x[f] != x0[f]:
            return f"frozen feature {f} moved ({x0[f]!r} -> {x[f]!r})"
    if "max_changes" in opts and np.count_nonzero(x != x0) > opts["max_changes"]:
        return f"{np.count_nonzero(x != x0)} changes > max_changes {opts['max_changes']}"
    if "proba" in opts:
        q = _proba(pipe, x[None])[0, _class_index(pipe, t)]
        if q < opts["proba"]:
            why = f"predict_proba(answer)[target] = {q!r} < proba {opts['proba']}"
            if opts.get("verify") != "model" and opts["proba"] - q <= 1e-9 * opts["proba"]:
                return ROUNDING + why + " (verify='fold')"
            return why
    return ""


ROUNDING = "~rounding: "


def array_witness(pipe, X, x0, t, opts):
    """A training row (frozen features set to x0's) in the box that pipe puts in t, or None."""
    if "max_changes" in opts:
        return None
    C = X.copy()
    for f in opts.get("frozen", []):
        C[:, f] = x0[f]
    keep = np.ones(C.shape[0], dtype=bool)
    if "bounds" in opts:
        lo, hi = opts["bounds"]
        keep &= np.all((C >= lo) & (C <= hi), axis=1)
    C = C[keep]
    if not C.shape[0]:
        return None
    ok = _pred(pipe, C) == t
    if "proba" in opts:
        ok &= _proba(pipe, C)[:, _class_index(pipe, t)] >= opts["proba"]
    return C[_strongest(pipe, C, ok, t)] if ok.any() else None


def frame_violation(model, x, x0, t, opts):
    """Why a DataFrame answer (one row) is not one ('' if it is)."""
    p = _pred(model, x)[0]
    if p != t:
        return f"model.predict(answer) = {p!r} != target {t!r}"
    row, row0 = x.iloc[0], x0.iloc[0]
    for c, (lo, hi) in opts.get("bounds", {}).items():
        if not lo <= row[c] <= hi:
            return f"column {c} = {row[c]!r} outside ({lo!r}, {hi!r})"
    for c in opts.get("frozen", []):
        if row[c] != row0[c]:
            return f"frozen column {c} moved ({row0[c]!r} -> {row[c]!r})"
    if "max_changes" in opts:
        n = int(sum(row[c] != row0[c] for c in x.columns))
        if n > opts["max_changes"]:
            return f"{n} changes > max_changes {opts['max_changes']}"
    if "proba" in opts:
        q = _proba(model, x)[0, _class_index(model, t)]
        if q < opts["proba"]:
            return f"predict_proba(answer)[target] = {q!r} < proba {opts['proba']}"
    return ""


def frame_witness(model, frame, x0, t, opts):
    """As :func:`array_witness`, on the DataFrame (the tabular default box: training range)."""
    if "max_changes" in opts:
        return None
    C = frame.copy()
    for c in opts.get("frozen", []):
        C[c] = x0.iloc[0][c]
    keep = np.ones(C.shape[0], dtype=bool)
    for c in C.columns:  # the default bounds: each column's training range
        lo, hi = opts.get("bounds", {}).get(c, (frame[c].min(), frame[c].max()))
        lo, hi = min(lo, x0.iloc[0][c]), max(hi, x0.iloc[0][c])
        keep &= ((C[c] >= lo) & (C[c] <= hi)).to_numpy()
    C = C[keep]
    if not C.shape[0]:
        return None
    ok = _pred(model, C) == t
    if "proba" in opts:
        ok &= _proba(model, C)[:, _class_index(model, t)] >= opts["proba"]
    return C.iloc[[_strongest(model, C, ok, t)]] if ok.any() else None


def _answers(fn, args, opts):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **opts)


def _gaps(model, C, t):
    """The model's score gap (target minus the best other) on the rows C, or None (trees)."""
    if not hasattr(model, "decision_function"):
        return None
    d = np.asarray(_dec(model, C), dtype=np.float64)
    k = _class_index(model, t)
    if d.ndim == 1 or d.shape[1] == 1:
        return d.ravel() * (1.0 if k == 1 else -1.0)
    return d[:, k] - np.delete(d, k, axis=1).max(axis=1)


def _strongest(model, C, ok, t):
    """Index of the row of C (among ``ok``) the model puts deepest in t (the first for trees)."""
    rows = np.flatnonzero(ok)
    g = _gaps(model, C.iloc[rows] if hasattr(C, "iloc") else C[rows], t)
    return int(rows[0] if g is None else rows[np.argmax(g)])


def _scale(model, X, w, t):
    """The witness's score gap against the size of the scores: (text, is it clear of rounding).

    A witness whose gap is at most 1e-8 of the largest score on the training rows may lie within
    the rounding of a model with huge scores, one within 1e-5 inside the default margin (1e-6)
    of the region: their failures are counted under other failures.
    """
    g = _gaps(model, w, t)
    if g is None:
        return "", True
    scale = float(np.abs(_dec(model, X)).max())
    text = f"; the witness's score gap {g[0]:.3g}, max |decision_function| on training {scale:.3g}"
    return text, bool(g[0] > max(1e-8 * scale, 1e-5))


def _dec(model, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.decision_function(X)


def _judge(tally, key, case, res, what, violation, witness, context=lambda w: ("", True)):
    """Count one answer: ``violation()`` says why a success is wrong, ``witness()`` finds one."""
    tally.add(key, "answers")
    if bool(res.success):
        tally.add(key, "successes")
        why = violation()
        if why.startswith(ROUNDING):
            tally.add(key, "proba short (fold)", f"{what}: {why}", case, kind=why)
        elif why:
            tally.add(key, "false successes", f"{what}: {why}", case, kind=why)
        return
    w = witness()
    if w is None:
        return
    status = Status(int(res.status))
    text, clear = context(w)
    col = "false failures" if status in FAILURES and clear else "other failures"
    msg = str(res.message)[:200]
    tally.add(
        key, col, f"{what}: status {status.name} ({msg!r}); witness {np.asarray(w)!r}{text}",
        case, kind=f"status {status.name}: {msg[:90]}",
    )  # fmt: skip


def _explain_all(tally, key, case, ex, queries, targets, opts, judge_one, batch_rows):
    """Explain each query alone and all as a batch; judge every answer."""
    runs = [(f"single row {k}", (queries[k], targets[k]), [k]) for k in range(len(targets))]
    runs.append(("batch", (batch_rows, np.asarray(targets)), list(range(len(targets)))))
    for what, args, ks in runs:
        try:
            out = _answers(ex.explain, args, opts)
        except (ValueError, TypeError) as exc:
            tally.refusal(key, exc, case, case["unsupported"])
            continue
        except Exception:  # noqa: BLE001 - a soak counts what it finds
            tally.add(key, "exceptions", f"explain {what}:\n{traceback.format_exc()}", case)
            continue
        answers = list(out) if what == "batch" else [out]
        if len(answers) != len(ks):
            tally.add(key, "exceptions", f"{what}: {len(answers)} answers for {len(ks)}", case)
            continue
        for k, res in zip(ks, answers, strict=True):
            judge_one(res, k, f"{what} (query {k}, opts {_opts_text(opts)})")


FULL_OPTS = False  # --case: print every option in full (a reproducer)


def _opts_text(opts):
    if FULL_OPTS:
        with np.printoptions(precision=17, linewidth=200):
            return repr(opts)
    out = {}
    for k, v in opts.items():
        if k == "bounds" and isinstance(v, tuple):
            out[k] = "box"
        elif k == "weights" and not isinstance(v, str):
            out[k] = "random"
        else:
            out[k] = v
    return out


# ------------------------------------------------------------------------------- paths
def run_array(tally, case):
    r, X, y = case["r"], case["X"], case["y"]
    key = f"{case['model_name']} [array]"
    tally.add(key, "cases")
    steps = [clone(s) if not isinstance(s, str) else s for s in case["steps"]]
    model = clone(case["model"])
    pipe = make_pipeline(*steps, model) if steps else model
    try:
        _fit(pipe, X, y)
    except Exception as exc:  # noqa: BLE001
        tally.add(key, "skipped fits", f"{type(exc).__name__}: {exc}", case)
        return None
    tree = case["model_name"] == "RandomForestClassifier"
    D = X.shape[1]
    opts = {}
    if not tree:
        opts["metric"] = ("euclidean", "manhattan")[r.integers(2)]
    u = r.random()
    if u < 0.3:
        opts["weights"] = "mad"
    elif u < 0.5:
        opts["weights"] = 10.0 ** r.uniform(-1, 1, D) / X.std(axis=0)
    if r.random() < 0.4:
        room = r.choice([0.0, 0.0, 0.5, 2.0], D) * X.std(axis=0)
        opts["bounds"] = (X.min(axis=0) - room, X.max(axis=0) + room)
    if r.random() < 0.3:
        opts["frozen"] = [int(r.integers(D))]
    if not tree and r.random() < 0.1:
        opts["max_changes"] = int(r.integers(1, D))
    idx = r.choice(X.shape[0], 3, replace=False)
    Q = X[idx]
    pred = _pred(pipe, Q)
    classes = list(pipe.classes_)
    targets = [classes[r.choice([j for j, c in enumerate(classes) if c != p])] for p in pred]
    proba_draw = r.random()
    tau = float(r.choice([0.6, 0.9, 0.99]))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ex = fastcf.explainer_for(pipe)
            if isinstance(opts.get("weights"), str):
                ex.fit_mad(X)
    except (ValueError, TypeError) as exc:
        if "a kernel SVM other than kernel='linear'" in str(exc):
            # every SVC/NuSVC here has kernel="linear": explainer_for's sentence is not the
            # reason; LinearExplainer's own refusal is (classified below)
            tally.add(
                key, "wrong messages", f"explainer_for: {str(exc)[:200]}", case,
                kind="explainer_for says 'a kernel SVM other than kernel=linear' of a linear SVC",
            )  # fmt: skip
            try:
                fastcf.LinearExplainer(pipe)
            except (ValueError, TypeError) as inner:
                exc = inner
        tally.refusal(key, exc, case, case["unsupported"])
        return pipe
    except Exception:  # noqa: BLE001
        tally.add(key, "exceptions", f"explainer_for:\n{traceback.format_exc()}", case)
        return pipe
    if case["unsupported"]:
        tally.add(key, "unsupported accepted", f"{type(ex).__name__} took it", case)
    if not tree and getattr(ex, "probabilistic_", False) and proba_draw < 0.2:
        opts["proba"] = tau
    elif not tree:
        opts["region"] = True  # (LinearExplainer's default problem is lam=0.01)
    if case["r2"].random() < 0.3:  # (a generator of its own: the first draws stay as they were)
        opts["verify"] = "model"

    def judge_one(res, k, what):
        x = np.asarray(res.x, dtype=np.float64)
        _judge(
            tally,
            key,
            case,
            res,
            what + f" row {idx[k]} target {targets[k]!r}",
            lambda: array_violation(pipe, x, Q[k], targets[k], opts),
            lambda: array_witness(pipe, X, Q[k], targets[k], opts),
            lambda w: _scale(pipe, X, np.atleast_2d(w), targets[k]),
        )

    _explain_all(tally, key, case, ex, Q, targets, opts, judge_one, Q)
    return pipe


def run_tabular(tally, case):
    r, X, y = case["r"], case["X"], case["y"]
    key = f"{case['model_name']} [tabular]"
    tally.add(key, "cases")
    cols = [f"c{j}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=cols)
    steps = [clone(s) if not isinstance(s, str) else s for s in case["steps"]]
    clf = clone(case["model"])
    wrap = r.random() < 0.4
    if wrap:
        inner = make_pipeline(*steps) if steps else "passthrough"
        model = make_pipeline(ColumnTransformer([("num", inner, cols)]), clf)
    else:
        model = make_pipeline(*steps, clf) if steps else clf
    case["tabular_form"] = "ColumnTransformer" if wrap else "Pipeline"
    try:
        _fit(model, frame, y)
    except Exception as exc:  # noqa: BLE001
        tally.add(key, "skipped fits", f"{type(exc).__name__}: {exc}", case)
        return
    tree = case["model_name"] == "RandomForestClassifier"
    # (explainer_for sends a bare tree model to TreeExplainer, whose options are the array ones)
    router = (wrap or (tree and steps)) and r.random() < 0.5
    draws = r.random(3), [cols[r.integers(len(cols))]], int(r.integers(1, len(cols)))
    in_box = r.random(len(cols)) < 0.6
    idx = r.choice(X.shape[0], 3, replace=False)
    rows = frame.iloc[idx]
    pred = _pred(model, rows)
    classes = list(model.classes_)
    targets = [classes[r.choice([j for j, c in enumerate(classes) if c != p])] for p in pred]
    proba_draw = r.random()
    tau = float(r.choice([0.6, 0.9, 0.99]))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if router:
                tx = fastcf.explainer_for(model, X_train=frame)
            else:
                tx = fastcf.TabularExplainer(model, frame)
    except (ValueError, TypeError) as exc:
        tally.refusal(key, exc, case, case["unsupported"])
        return
    except Exception:  # noqa: BLE001
        tally.add(key, "exceptions", f"TabularExplainer:\n{traceback.format_exc()}", case)
        return
    if case["unsupported"]:
        tally.add(key, "unsupported accepted", f"{type(tx).__name__} took it", case)
    used = [
        c for c in cols if tx.kinds_.get(c) != "unused"
    ]  # (bounds of an unused column: refused)
    opts = {}
    if draws[0][0] < 0.4:
        opts["bounds"] = {
            c: (float(frame[c].min()), float(frame[c].max()))
            for c, b in zip(cols, in_box, strict=True) if b and c in used
        }  # fmt: skip
    if draws[0][1] < 0.3:
        opts["frozen"] = draws[1]
    if draws[0][2] < 0.1:
        opts["max_changes"] = draws[2]
    if len(classes) == 2 and getattr(tx, "probabilistic_", False) and proba_draw < 0.2:
        opts["proba"] = tau

    def judge_one(res, k, what):
        x0 = rows.iloc[[k]]
        _judge(
            tally, key, case, res,
            what + f" row {idx[k]} target {targets[k]!r} ({case['tabular_form']})",
            lambda: frame_violation(model, res.x, x0, targets[k], opts),
            lambda: frame_witness(model, frame, x0, targets[k], opts),
            lambda w: _scale(model, frame, w, targets[k]),
        )  # fmt: skip

    queries = [rows.iloc[[k]] for k in range(3)]
    _explain_all(tally, key, case, tx, queries, targets, opts, judge_one, rows)


# ------------------------------------------------------------------------------- main
def summary(tally):
    keys = sorted(tally.count)
    total = {c: sum(tally.count[k][c] for k in keys) for c in COLS}
    short = {
        "false successes": "f.succ", "false refusals": "f.ref", "by design": "design",
        "unsupported accepted": "unsup.acc", "false failures": "f.fail",
        "other failures": "oth.fail", "wrong messages": "wrong.msg", "exceptions": "exc",
        "skipped fits": "skip", "proba short (fold)": "p.short",
    }  # fmt: skip
    heads = [short.get(c, c) for c in COLS]
    width = max(len(k) for k in keys + ["total"])
    print(f"{'model [path]':<{width}}  " + " ".join(f"{h:>9}" for h in heads))
    for k in keys + ["total"]:
        c = total if k == "total" else tally.count[k]
        print(f"{k:<{width}}  " + " ".join(f"{c[col]:>9}" for col in COLS))
    if tally.design:
        print("\nrefusals by design:")
        for kind, (n, msg) in sorted(tally.design.items()):
            print(f"  {kind}: {n}  e.g. {msg!r}")
    for col, kinds in sorted(tally.kinds.items()):
        print(f"\n{col}, by message (numbers as #):")
        for kind, (n, cases) in sorted(kinds.items(), key=lambda kv: -kv[1][0])[:20]:
            print(f"  {n:5d}  {kind}\n         cases {cases}")
    return sum(total[c] for c in BAD)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=400, help="cases (default 400)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--case", type=int, default=None, help="run this one case, verbosely")
    ap.add_argument("--minutes", type=float, default=None, help="stop after this wall time")
    ap.add_argument("--unsupported", type=float, default=0.05,
                    help="probability of an unsupported step in a case (default 0.05)")  # fmt: skip
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", FutureWarning)  # (PassiveAggressiveClassifier is deprecated)
    tally = Tally(verbose=args.case is not None)
    global FULL_OPTS
    FULL_OPTS = args.case is not None
    numbers = range(args.n) if args.case is None else [args.case]
    t0 = time.perf_counter()
    done = 0
    for done, i in enumerate(numbers, 1):
        if args.minutes is not None and time.perf_counter() - t0 > 60.0 * args.minutes:
            done -= 1
            print(f"time budget reached: {done} cases run", flush=True)
            break
        case = make_case(args.seed, i, args.unsupported)
        case["seed0"] = args.seed
        if args.case is not None:
            print(case_text(case), "| skip:", case.get("skip"))
        if "skip" in case:
            tally.add("(no model: step fit)", "skipped fits", case["skip"], case)
            continue
        try:
            run_array(tally, case)
            run_tabular(tally, case)
        except Exception:  # noqa: BLE001 - the soak's own bug or the case's: show it
            tally.add(f"{case['model_name']} [case]", "exceptions", traceback.format_exc(), case)
        if done % 200 == 0:
            secs = time.perf_counter() - t0
            print(f"{done} cases, {secs:.0f} s", flush=True)
    secs = time.perf_counter() - t0
    print(f"\n--n {args.n} --seed {args.seed}: {done} cases in {secs:.0f} s\n")
    bad = summary(tally)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
