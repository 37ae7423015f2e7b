"""Counterfactual explanations of LVQ models (Artelt & Hammer, paper 001).

Algorithm 1: the counterfactual of x̄ for a target class y is the closest point (in θ) that some
prototype p_i of class y wins, so for each such p_i we solve

    min_x θ(x, x̄)  s.t.  d(x, p_i) + ε ≤ d(x, p_j)  for every prototype p_j of another class  (9)

and keep the best i. With a metric shared by all prototypes (GLVQ: Λ = I, GMLVQ: Λ = ΩᵀΩ) the
quadratic terms cancel and each constraint is linear:

    2 (Λ(p_j − p_i))ᵀ x ≤ p_jᵀΛp_j − p_iᵀΛp_i − ε

(the paper's eq. 12–13 write the same half-scaled, q_ij = Λ(p_j − p_i),
r_ij = ½(p_iᵀΛp_i − p_jᵀΛp_j), but then add ε to the *halved* inequality, i.e. a margin of 2ε in d;
we keep eq. 9b's margin ε on d).
Euclidean θ → a QP (eq. 11), solved here without cvxpy by the exact least-distance-program solver of
:mod:`fastcf._kernels.lvq_qp` (or by cvxpy on request); weighted Manhattan θ → an LP (eq. 10/21).

With one Ω_k per prototype (LGMLVQ) the constraints are differences of convex quadratics
(eq. 14, 24–27, 36–38) and the program is a non-convex QCQP, solved approximately by the penalty
convex–concave procedure of Park & Boyd (§6.4): starting from p_i ("Suggest"), the concave part
−g_j is replaced by its linearisation at the current point, slack variables s_j ≥ 0 enter the
linearised constraints, their sum is penalised with τ, and τ ← min(μτ, τ_max) after every step.
Since g_j is convex its linearisation under-estimates it, so an iterate with zero slack is feasible
for the true constraints, and from the feasible start the objective never increases.

Typos in the paper, for the record: eq. 9b reads d(x', p_i) + ε ≤ d(x', p_i) (the right-hand
side must be p_j); eq. 24 has p_jᵀΩ_i p_j where p_jᵀΩ_j p_j is meant (eq. 27 has it right);
eq. 29/32 print p_i − p_i for p_j − p_i; eq. 18/21 write β > 0 for β ≥ 0; eq. 28 writes x for x'.
"""

from __future__ import annotations

import numbers
import time
import warnings
from typing import TYPE_CHECKING

import numpy as np

from fastcf._kernels.lvq_cost import lvq_distances
from fastcf._kernels.lvq_qp import lvq_fast_batch
from fastcf._validation import (
    as_float_array,
    as_queries,
    check_scalar_positive,
    median_absolute_deviation,
    resolve_bounds,
    resolve_frozen,
    resolve_targets,
    resolve_weights,
)
from fastcf.results import STATUS_MESSAGES, Counterfactual, CounterfactualBatch

if TYPE_CHECKING:  # imported on first use, see __getattr__ at the end
    from fastcf.lvq_models import GLVQ, GMLVQ, LGMLVQ

__all__ = ["GLVQ", "GMLVQ", "LGMLVQ", "LVQExplainer", "bench_rows"]

_PARALLEL_MIN_BATCH = 4096  # queries; below this the serial kernel wins (thread start-up)
_SOLVER_NAMES = {"CLARABEL", "OSQP", "SCS", "HIGHS", "SCIPY", "ECOS", "GUROBI", "MOSEK", "CPLEX"}


def _check_omega(om, name, D):
    om = as_float_array(om, name, ndim=2)
    if om.shape[1] != D or om.shape[0] < 1:
        raise ValueError(
            f"{name} must have shape (d, {D}) with d >= 1 (distance ‖Ω(x − p)‖²); got {om.shape}"
        )
    if not np.any(om):
        raise ValueError(f"{name} is all zeros: every distance would be 0")
    return om


def _omega_from_relevance(lam, name, D):
    lam = as_float_array(lam, name, ndim=2)
    if lam.shape != (D, D):
        raise ValueError(f"{name} must be a ({D}, {D}) relevance matrix Λ; got {lam.shape}")
    if not np.allclose(lam, lam.T, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(lam).max())):
        raise ValueError(f"{name} must be symmetric (Λ = ΩᵀΩ); it is not")
    ev, V = np.linalg.eigh(lam)
    if ev.min() < -1e-10 * max(1.0, ev.max()):
        raise ValueError(
            f"{name} must be positive semi-definite (Λ = ΩᵀΩ); its smallest eigenvalue is "
            f"{ev.min():.3g}"
        )
    ev = np.clip(ev, 0.0, None)
    return np.ascontiguousarray(np.sqrt(ev)[:, None] * V.T)


def _read_model(model):
    """Return (prototypes (M, D), labels (M,), classes, omegas None | (1|M, d, D))."""
    if hasattr(model, "prototypes_") and hasattr(model, "prototype_labels_"):  # fastcf
        P = model.prototypes_
        labels = np.asarray(model.prototype_labels_)
        classes = np.asarray(model.classes_)
        om = getattr(model, "omegas_", None)
        if om is None and getattr(model, "omega_", None) is not None:
            om = model.omega_
        return P, labels, classes, om
    if hasattr(model, "prototypes_") and hasattr(model, "prototypes_labels_"):  # sklvq
        P = model.prototypes_
        classes = np.asarray(model.classes_)
        idx = np.asarray(model.prototypes_labels_)
        if idx.dtype.kind not in "iu" or idx.min() < 0 or idx.max() >= classes.size:
            raise ValueError(
                f"prototypes_labels_ of an sklvq model must be indices into classes_; got {idx!r}"
            )
        labels = classes[idx]
        om = getattr(model, "omega_", None)
        if om is not None:
            om = np.asarray(om)
            if om.ndim == 3:
                loc = getattr(model, "localization", None)
                if loc == "class" or (loc is None and om.shape[0] == classes.size != P.shape[0]):
                    om = [om[i] for i in idx]
        return P, labels, classes, om
    if hasattr(model, "w_") and hasattr(model, "c_w_"):  # sklearn-lvq
        P = model.w_
        labels = np.asarray(model.c_w_)
        classes = np.asarray(getattr(model, "classes_", np.unique(labels)))
        om = None
        if hasattr(model, "omegas_"):
            oms = list(model.omegas_)
            if getattr(model, "classwise", False):
                if len(oms) != classes.size:
                    raise ValueError(
                        f"a classwise LgmlvqModel must have one omega per class ({classes.size}); "
                        f"got {len(oms)}"
                    )
                pos = {c.item() if hasattr(c, "item") else c: k for k, c in enumerate(classes)}
                oms = [oms[pos[lab.item() if hasattr(lab, "item") else lab]] for lab in labels]
            om = oms
        elif hasattr(model, "omega_"):
            om = model.omega_
        return P, labels, classes, om
    raise TypeError(
        "LVQExplainer needs a fitted fastcf.lvq model (prototypes_, prototype_labels_), an "
        "sklearn-lvq model (w_, c_w_) or an sklvq model (prototypes_, prototypes_labels_); got "
        f"{type(model).__name__}. Use LVQExplainer.from_arrays(prototypes, labels, omega) "
        "otherwise."
    )


class LVQExplainer:
    """Counterfactual explanations of prototype classifiers (GLVQ, GMLVQ, LGMLVQ).

    Parameters
    ----------
    model : fitted model
        A :mod:`fastcf.lvq` model, or an sklearn-lvq (``GlvqModel``, ``GmlvqModel``,
        ``LgmlvqModel``) or sklvq (``GLVQ``, ``GMLVQ``, ``LGMLVQ``) model, read by its attributes.
    feature_names : sequence of str, optional
        Defaults to the model's ``feature_names_in_`` (set when it was fitted on a DataFrame).

    Attributes
    ----------
    prototypes_ : ndarray of shape (M, D)
    prototype_labels_ : ndarray of shape (M,)
    classes_ : ndarray
    kind : {"euclidean", "global", "local"}
        Distance of the model: plain squared Euclidean, one shared Ω, or one Ω per prototype.
    mad_ : ndarray or None
        Per-feature median absolute deviation set by :meth:`fit_mad`.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcf import LVQExplainer
    >>> ex = LVQExplainer.from_arrays([[0.0, 0.0], [2.0, 0.0]], ["a", "b"])
    >>> res = ex.explain([0.5, 1.0], target="b")
    >>> bool(res.success), np.round(res.x, 6).tolist(), str(ex.predict(res.x)[0])
    (True, [1.0, 1.0], 'b')
    """

    def __init__(self, model, feature_names=None):
        P, labels, classes, om = _read_model(model)
        if feature_names is None:
            feature_names = getattr(model, "feature_names_in_", None)
        self._setup(P, labels, classes, om, feature_names)

    @classmethod
    def from_arrays(
        cls, prototypes, labels, omega=None, *, relevance=None, classes=None, feature_names=None
    ):
        """Build an explainer from plain arrays.

        Parameters
        ----------
        prototypes : array-like of shape (M, D)
        labels : array-like of shape (M,)
            Class label of each prototype.
        omega : None, array-like of shape (d, D), or sequence of M arrays (d_k, D)
            None: squared Euclidean distance; one matrix: d(x, p) = ‖Ω(x − p)‖² for all
            prototypes; a list: one Ω_k per prototype (localised).
        relevance : array-like of shape (D, D), optional
            Alternatively Λ = ΩᵀΩ (symmetric positive semi-definite) for a global metric.
        classes : array-like, optional
            All classes of the model (defaults to the sorted unique labels).
        feature_names : sequence of str, optional

        Returns
        -------
        LVQExplainer

        Examples
        --------
        >>> from fastcf import LVQExplainer
        >>> ex = LVQExplainer.from_arrays([[0.0, 0.0], [1.0, 1.0]], [0, 1], omega=[[1.0, 0.0]])
        >>> ex.kind
        'global'
        """
        self = cls.__new__(cls)
        if relevance is not None:
            if omega is not None:
                raise ValueError("give either omega or relevance, not both")
            P = as_float_array(prototypes, "prototypes", ndim=2)
            omega = _omega_from_relevance(relevance, "relevance", P.shape[1])
        labels = np.asarray(labels)
        self._setup(
            prototypes,
            labels,
            np.unique(labels) if classes is None else np.asarray(classes),
            omega,
            feature_names,
        )
        return self

    # ------------------------------------------------------------------ set-up
    def _setup(self, P, labels, classes, om, feature_names):
        P = as_float_array(P, "prototypes", ndim=2)
        M, D = P.shape
        if M < 2:
            raise ValueError(f"prototypes must hold at least 2 prototypes; got {M}")
        if D < 1:
            raise ValueError(f"prototypes must have at least one feature; got shape {P.shape}")
        labels = np.asarray(labels)
        if labels.ndim != 1 or labels.shape[0] != M:
            raise ValueError(
                f"labels must have shape ({M},), one per prototype; got {labels.shape}"
            )
        classes = np.asarray(classes)
        pos = {c.item() if hasattr(c, "item") else c: k for k, c in enumerate(classes)}
        if classes.ndim != 1 or len(pos) != classes.shape[0]:
            raise ValueError(f"classes must be a 1-D array of distinct labels; got {classes!r}")
        try:
            cls_idx = np.array(
                [pos[lab.item() if hasattr(lab, "item") else lab] for lab in labels], dtype=np.int64
            )
        except KeyError as exc:
            raise ValueError(
                f"labels holds {exc.args[0]!r}, which is not in classes {classes.tolist()}"
            ) from None
        if np.unique(cls_idx).size < 2:
            raise ValueError("labels must hold at least 2 different classes")
        # metric
        if isinstance(om, (list, tuple)):
            try:  # a nested list may be one (d, D) matrix
                arr = np.asarray(om, dtype=np.float64)
            except (ValueError, TypeError):  # ragged: one Ω_k per prototype with different d_k
                arr = None
            if arr is not None and arr.ndim == 2:
                om = arr
        if om is None:
            kind, omegas = "euclidean", np.eye(D)[None]
        elif isinstance(om, (list, tuple)) or (isinstance(om, np.ndarray) and om.ndim == 3):
            oms = list(om)
            if len(oms) != M:
                raise ValueError(
                    f"omega must be one (d, D) matrix or one per prototype ({M}); got {len(oms)}"
                )
            oms = [_check_omega(o, f"omega[{k}]", D) for k, o in enumerate(oms)]
            lams = [o.T @ o for o in oms]
            if all(np.array_equal(lams[0], L) for L in lams[1:]):
                kind, omegas = "global", oms[0][None]
            else:
                d = max(o.shape[0] for o in oms)
                omegas = np.zeros((M, d, D))
                for k, o in enumerate(oms):
                    omegas[k, : o.shape[0]] = o
                kind = "local"
        else:
            kind, omegas = "global", _check_omega(om, "omega", D)[None]
        self.prototypes_ = np.ascontiguousarray(P)
        self.prototype_labels_ = labels
        self.classes_ = classes
        self.kind = kind
        self._cls = cls_idx
        self._omegas = np.ascontiguousarray(omegas)
        self._lams = np.einsum("kri,krj->kij", omegas, omegas)
        self.n_features_in_ = D
        self.feature_names = (
            None if feature_names is None else np.asarray(feature_names, dtype=object)
        )
        if self.feature_names is not None and self.feature_names.shape != (D,):
            raise ValueError(
                f"feature_names must hold {D} names, one per feature; "
                f"got shape {self.feature_names.shape}"
            )
        self.mad_ = None
        self._cache = {}
        self._direct = True  # compiled Clarabel re-solve (False: cvxpy's Problem.solve per query)
        # linear constraints of eq. 12-13 for a shared metric: A[i, j]·x ≤ b[i, j] ⇔ d_i ≤ d_j
        Lam = self._lams[0]
        LP = P @ Lam
        pLp = np.einsum("kd,kd->k", LP, P)
        self._A = np.ascontiguousarray(2.0 * (LP[None, :, :] - LP[:, None, :]))
        self._b = np.ascontiguousarray(pLp[None, :] - pLp[:, None])
        self._valid = np.ascontiguousarray(cls_idx[None, :] != cls_idx[:, None])

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_cache"] = {}  # cvxpy problems are rebuilt on demand
        return state

    def fit_mad(self, X):
        """Store the per-feature median absolute deviation of ``X`` for ``weights="mad"``.

        Features with MAD = 0 fall back to the mean absolute deviation, then to 1.

        Parameters
        ----------
        X : array-like of shape (n_samples, D)

        Returns
        -------
        self

        Examples
        --------
        >>> import numpy as np
        >>> from fastcf import LVQExplainer
        >>> ex = LVQExplainer.from_arrays([[0.0, 0.0], [2.0, 0.0]], [0, 1])
        >>> ex.fit_mad(np.array([[0.0, 1.0], [1.0, 1.0], [2.0, 1.0]])).mad_.tolist()
        [1.0, 1.0]
        """
        X = as_float_array(X, "X", ndim=2)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features but the model expects {self.n_features_in_}"
            )
        self.mad_ = median_absolute_deviation(X)
        return self

    # ------------------------------------------------------------------ the model's decision rule
    def distances(self, X):
        """Squared distances (N, M) of the rows of ``X`` to every prototype, in the model's metric.

        Parameters
        ----------
        X : array-like of shape (N, D) or (D,)

        Returns
        -------
        ndarray of shape (N, M)

        Examples
        --------
        >>> from fastcf import LVQExplainer
        >>> LVQExplainer.from_arrays([[0.0], [2.0]], [0, 1]).distances([[1.0]]).tolist()
        [[1.0, 1.0]]
        """
        X, _, _ = as_queries(X, self.n_features_in_, name="X")
        mode = {"euclidean": 0, "global": 1, "local": 2}[self.kind]
        return lvq_distances(X, self.prototypes_, self._omegas, mode)

    def predict(self, X):
        """Label of the nearest prototype (the LVQ decision rule, eq. 5).

        Parameters
        ----------
        X : array-like of shape (N, D) or (D,)

        Returns
        -------
        ndarray of shape (N,)

        Examples
        --------
        >>> from fastcf import LVQExplainer
        >>> LVQExplainer.from_arrays([[0.0], [2.0]], ["a", "b"]).predict([[0.4], [1.9]]).tolist()
        ['a', 'b']
        """
        return self.prototype_labels_[np.argmin(self.distances(X), axis=1)]

    # ------------------------------------------------------------------ options
    def _parse_constraints(self, constraints):
        D = self.n_features_in_
        if constraints is None:
            return np.zeros((0, D)), np.zeros(0)
        if not isinstance(constraints, (list, tuple)):
            raise TypeError(
                "constraints must be a list of pairs (a, c) meaning a·x ≤ c; got "
                f"{type(constraints).__name__}"
            )
        rows, rhs = [], []
        for k, item in enumerate(constraints):
            if not isinstance(item, (list, tuple)) or len(item) != 2:
                raise ValueError(
                    f"constraints[{k}] must be a pair (a, c) meaning a·x ≤ c; got {item!r}"
                )
            a = as_float_array(item[0], f"constraints[{k}][0]", ndim=1)
            if a.shape[0] != D:
                raise ValueError(f"constraints[{k}][0] must have shape ({D},); got {a.shape}")
            c = np.asarray(item[1])
            if c.ndim != 0 or c.dtype.kind not in "biuf" or not np.isfinite(c):
                raise ValueError(
                    f"constraints[{k}][1] must be a finite real number; got {item[1]!r}"
                )
            rows.append(a)
            rhs.append(float(c))
        return np.array(rows).reshape(-1, D), np.array(rhs)

    def _options(self, X, metric, weights, frozen, bounds, constraints, epsilon):
        D = self.n_features_in_
        if metric not in ("euclidean", "manhattan"):
            raise ValueError(f"metric must be 'euclidean' or 'manhattan'; got {metric!r}")
        w = resolve_weights(weights, D, self.mad_)
        w = np.ones(D) if w is None else w
        free = ~resolve_frozen(frozen, D, self.feature_names)
        if isinstance(bounds, (tuple, list)) and len(bounds) == 2:
            # broadcast scalars here: _validation.as_float_array turns 0-d input into shape (1,)
            bounds = tuple(
                np.full(D, (-np.inf, np.inf)[k] if v is None else float(v))
                if v is None or np.ndim(v) == 0
                else v
                for k, v in enumerate(bounds)
            )
        bb = resolve_bounds(bounds, D, X)
        lo, hi = (np.full(D, -np.inf), np.full(D, np.inf)) if bb is None else bb
        C, c = self._parse_constraints(constraints)
        if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):
            raise TypeError(f"epsilon must be a real number >= 0; got {epsilon!r}")
        if not (np.isfinite(epsilon) and epsilon >= 0):
            raise ValueError(f"epsilon must be finite and >= 0; got {epsilon!r}")
        return w, free, lo, hi, C, c, float(epsilon)

    # ------------------------------------------------------------------ explain
    def explain(
        self,
        x,
        target,
        *,
        metric="euclidean",
        weights=None,
        frozen=None,
        bounds=None,
        constraints=None,
        epsilon=1e-6,
        solver=None,
        max_iter=None,
        tol=1e-7,
    ):
        """Closest point that the model classifies as ``target`` (Algorithm 1).

        Parameters
        ----------
        x : array-like of shape (D,) or (N, D)
            One query or a batch.
        target : label or array-like of N labels
        metric : {"euclidean", "manhattan"}, default="euclidean"
            θ: ‖W^{1/2}(x − x̄)‖₂ (QP) or Σ_k w_k |x_k − x̄_k| (LP).
        weights : None, array-like of shape (D,) or "mad"
            Diagonal weights (``"mad"``: 1/MAD from :meth:`fit_mad`).
        frozen : indices or feature names, optional
            Features that must keep their value.
        bounds : (lo, hi), optional
            Per-feature box, scalars or arrays, ±inf allowed.
        constraints : list of (a, c), optional
            Extra linear constraints a·x ≤ c.
        epsilon : float, default=1e-6
            Margin of eq. 9b: d(x, p_i) + ε ≤ d(x, p_j).
        solver : None, "fast", "cvxpy" or a cvxpy solver name
            None picks the exact Numba QP for Euclidean GLVQ/GMLVQ and cvxpy (Clarabel)
            otherwise; "cvxpy" or a solver name (e.g. "CLARABEL", "HIGHS") forces the cvxpy
            program.
        max_iter : int, optional
            Iteration cap of the solver that runs (NNLS steps, or penalty-CCP rounds for LGMLVQ,
            default 100 and 200).
        tol : float, default=1e-7
            Penalty CCP: stop when the objective change (relative) and the largest slack are
            both below ``tol``.

        Returns
        -------
        Counterfactual or CounterfactualBatch
            ``success`` is True only when the model classifies ``x`` as ``target``.

        Examples
        --------
        >>> import numpy as np
        >>> from fastcf import LVQExplainer
        >>> ex = LVQExplainer.from_arrays([[0.0, 0.0], [2.0, 0.0]], [0, 1])
        >>> res = ex.explain([0.0, 0.0], 1, metric="manhattan", bounds=(-1.0, 1.5))
        >>> bool(res.success), round(res.distance, 5)
        (True, 1.0)
        >>> ex.explain([0.0, 0.0], 1, frozen=[0]).message
        'infeasible: the constraints leave no point classified as the target'
        """
        X, single, names = as_queries(x, self.n_features_in_, self.feature_names)
        N = X.shape[0]
        if N == 0:
            raise ValueError("x is empty: need at least one query row")
        tgt = resolve_targets(target, self.classes_, N)
        missing = sorted(set(tgt.tolist()) - set(self._cls.tolist()))
        if missing:
            raise ValueError(
                f"target={self.classes_[missing[0]]!r} has no prototype in the model, so no point "
                "can be classified as it"
            )
        w, free, lo, hi, C, c, eps = self._options(
            X, metric, weights, frozen, bounds, constraints, epsilon
        )
        if solver is not None and not (
            solver in ("fast", "cvxpy") or str(solver).upper() in _SOLVER_NAMES
        ):
            raise ValueError(
                f"solver must be None, 'fast', 'cvxpy' or a cvxpy solver name; got {solver!r}"
            )
        if max_iter is not None and (
            isinstance(max_iter, (bool, np.bool_))
            or not (isinstance(max_iter, numbers.Integral) and max_iter >= 1)
        ):
            raise ValueError(f"max_iter must be an int >= 1; got {max_iter!r}")
        tol = check_scalar_positive(tol, "tol")
        fast_ok = self.kind != "local" and metric == "euclidean"
        if solver == "fast" and not fast_ok:
            raise ValueError(
                "solver='fast' needs a shared metric (GLVQ/GMLVQ) and metric='euclidean'; "
                f"this model is {self.kind!r} and metric={metric!r}"
            )
        opts = (w, free, lo, hi, C, c, eps)
        if fast_ok and solver in (None, "fast"):
            out = self._explain_fast(X, tgt, opts, 100 if max_iter is None else max_iter)
            method = "lvq-ldp"
        elif self.kind != "local":
            out = self._explain_cvxpy(X, tgt, metric, opts, solver)
            method = f"lvq-{'qp' if metric == 'euclidean' else 'lp'}-cvxpy"
        else:
            out = self._explain_ccp(
                X, tgt, metric, opts, solver, 200 if max_iter is None else max_iter, tol
            )
            method = "lvq-penalty-ccp"
        Xcf, dist, proto, nit, status, messages, info = out
        # verification with the model's decision rule
        pred_idx = self._cls[np.argmin(self.distances(Xcf), axis=1)]
        ok_status = (status == 0) | (status == 1)
        wrong = ok_status & ((pred_idx != tgt) | ~np.isfinite(Xcf).all(axis=1))
        status = np.where(wrong, 4, status)
        success = ok_status & ~wrong
        messages = [
            (
                "numerical failure: the solution is not classified as the target (increase epsilon)"
                if wrong[k]
                else messages[k]
            )
            for k in range(N)
        ]
        info["prototype"] = proto
        targets = self.classes_[tgt]
        batch = CounterfactualBatch(
            x=Xcf,
            x0=X,
            target=targets,
            proba=None,
            distance=dist,
            success=success,
            status=status,
            message=messages,
            nit=nit,
            method=method,
            feature_names=names,
            info=info,
        )
        if single:
            b0 = batch[0]
            return Counterfactual(
                x=b0.x,
                x0=b0.x0,
                target=b0.target,
                proba=None,
                distance=b0.distance,
                success=b0.success,
                status=b0.status,
                message=b0.message,
                nit=b0.nit,
                method=method,
                feature_names=names,
                info={
                    k: (v[0] if isinstance(v, np.ndarray) and v.shape[:1] == (N,) else v)
                    for k, v in info.items()
                },
            )
        return batch

    # ------------------------------------------------------------------ fast exact path
    def _explain_fast(self, X, tgt, opts, max_iter):
        w, free, lo, hi, C, c, eps = opts
        Xcf, dist, best, nit, status = lvq_fast_batch(
            X,
            tgt,
            self._A,
            self._b,
            self._valid,
            self._cls,
            np.sqrt(w),
            free,
            lo,
            hi,
            np.ascontiguousarray(C),
            np.ascontiguousarray(c),
            eps,
            int(max_iter),
            X.shape[0] >= _PARALLEL_MIN_BATCH,
        )
        messages = [STATUS_MESSAGES[int(s)] for s in status]
        return Xcf, dist, best, nit, status, messages, {}

    # ------------------------------------------------------------------ cvxpy programs
    def _program(self, i, metric, w, free, lo, hi, C, ccp=False):
        """Return the cvxpy program for target prototype i, built once and cached (cp.Parameter)."""
        key = (
            i,
            metric,
            free.tobytes(),
            np.isfinite(lo).tobytes(),
            np.isfinite(hi).tobytes(),
            C.tobytes(),
            w.tobytes(),
            ccp,
        )
        prog = self._cache.get(key)
        if prog is not None:
            return prog
        import cvxpy as cp

        D = self.n_features_in_
        z = cp.Variable(D)  # x = x̄ + z
        # the weights are constants of the program (part of the cache key): as parameters they
        # would make cvxpy rebuild the objective matrix at every solve; per query only vectors
        # change
        if metric == "euclidean":
            # ½‖W^{1/2} z‖² (eq. 11, shifted by x̄)
            obj = 0.5 * cp.sum_squares(cp.multiply(np.sqrt(w), z))
        else:
            obj = w @ cp.abs(z)  # eq. 10/21: the epigraph variables β are cvxpy's job
        cons, par = [], {}
        others = np.flatnonzero(self._valid[i])
        if not ccp:
            G = np.vstack([self._A[i, others], C])
            # unit-norm rows: same feasible set, and the solver's absolute tolerances then mean
            # distances in input units (GMLVQ's trace-normalised Λ makes raw rows tiny)
            nrm = np.linalg.norm(G, axis=1)
            nrm = np.where(nrm > 0, nrm, 1.0)
            h = cp.Parameter(G.shape[0])
            cons.append((G / nrm[:, None]) @ z <= h)
            par["h"] = h
            par["row_norm"] = nrm
        else:
            if C.shape[0]:
                hu = cp.Parameter(C.shape[0])
                cons.append(C @ z <= hu)
                par["hu"] = hu
            m = others.size
            s = cp.Variable(m, nonneg=True)
            R = cp.Parameter((m, D))
            kappa = cp.Parameter(m)
            off = cp.Parameter(self._omegas.shape[1])
            tau = cp.Parameter(nonneg=True)
            fi = cp.sum_squares(self._omegas[i] @ z + off)  # d(x, p_i), convex
            # f(x) − ĝ_j(x; x_k) ≤ s_j  with ĝ_j the linearisation of d(x, p_j) (eq. 36–42)
            cons.append(fi - kappa - R @ z <= s)
            obj = obj + tau * cp.sum(s)
            par.update(R=R, kappa=kappa, off=off, tau=tau, s=s)
        fix = np.flatnonzero(~free)
        if fix.size:
            cons.append(z[fix] == 0)
        lo_idx = np.flatnonzero(np.isfinite(lo) & free)
        hi_idx = np.flatnonzero(np.isfinite(hi) & free)
        if lo_idx.size:
            par["lo"] = cp.Parameter(lo_idx.size)
            cons.append(z[lo_idx] >= par["lo"])
        if hi_idx.size:
            par["hi"] = cp.Parameter(hi_idx.size)
            cons.append(z[hi_idx] <= par["hi"])
        prob = cp.Problem(cp.Minimize(obj), cons)
        prog = {
            "prob": prob,
            "z": z,
            "par": par,
            "others": others,
            "lo_idx": lo_idx,
            "hi_idx": hi_idx,
        }
        self._cache[key] = prog
        return prog

    @staticmethod
    def _solve(prob, solver):
        """Solve, turning solver failures and warnings into (status, message)."""
        import cvxpy as cp

        name = None if solver in (None, "cvxpy") else str(solver).upper()
        if name is None:
            name = "CLARABEL"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                if name == "CLARABEL":  # tighter than the defaults (1e-8): exact to ~1e-10
                    prob.solve(solver=name, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
                else:
                    prob.solve(solver=name)
            except cp.error.SolverError as exc:
                return 6, f"the external solver failed: {name}: {exc}"
        note = "; ".join(str(w.message) for w in caught)
        st = prob.status
        if st in cp.settings.SOLUTION_PRESENT:
            msg = STATUS_MESSAGES[0] + (f" ({name} status {st})" if st != cp.OPTIMAL else "")
            return 0, msg + (f"; solver warnings: {note}" if note else "")
        if st in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
            return 3, STATUS_MESSAGES[3]
        return 6, f"the external solver failed: {name} status {st}" + (f"; {note}" if note else "")

    @staticmethod
    def _compile(prog):
        """Compile a parameterised program once for Clarabel, as cvxpylayers does.

        cvxpy's ``Problem.solve`` re-applies the parameters through its sparse tensors at every
        call (about 0.5 ms here, ten times Clarabel's own solve). Our parameters enter only the
        constraint vector b of the compiled cone program, affinely, so we read that affine map
        once from cvxpy's own ``apply_parameters`` (one probe per parameter entry), check that the
        objective and the matrix A do not move, and then each query costs one mat-vec and one
        Clarabel call through cvxpy's solver interface.
        """
        import cvxpy as cp

        prob, par = prog["prob"], prog["par"]
        names = [k for k in ("h", "lo", "hi") if k in par]

        notes = []

        def solver_data():
            # warnings of the compilation are recorded and reported in every result's message
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out = prob.get_problem_data(cp.CLARABEL)
            notes.extend(str(w.message) for w in caught if str(w.message) not in notes)
            return out

        sizes = [par[k].size for k in names]
        n = int(sum(sizes))
        saved = {k: par[k].value for k in names}  # the current query's values, restored below
        for k in names:
            par[k].value = np.zeros(par[k].size)
        data, chain, _ = solver_data()
        pp = data[cp.settings.PARAM_PROB]
        b0 = np.asarray(data["b"], dtype=np.float64).copy()
        Mb = np.zeros((b0.shape[0], n))
        col = 0
        for k, size in zip(names, sizes, strict=True):
            for e in range(size):
                v = np.zeros(size)
                v[e] = 1.0
                par[k].value = v
                d2 = solver_data()[0]
                same = (
                    np.array_equal(d2["c"], data["c"])
                    and (d2["A"] != data["A"]).nnz == 0
                    and ("P" not in data or (d2["P"] != data["P"]).nnz == 0)
                )
                if not same:
                    return None  # a parameter moved more than b: keep Problem.solve
                Mb[:, col] = d2["b"] - b0
                col += 1
            par[k].value = np.zeros(size)
        for k in names:
            par[k].value = saved[k]
        zcol = pp.var_id_to_col[prog["z"].id]
        return {
            "data": data,
            "solver": chain.solver,
            "names": names,
            "b0": b0,
            "Mb": Mb,
            "zcol": zcol,
            "note": "; cvxpy warnings: " + "; ".join(notes) if notes else "",
        }

    def _solve_compiled(self, prog, D):
        comp = prog.get("compiled", False)
        if comp is False:
            comp = prog["compiled"] = self._compile(prog)
        if comp is None:
            return None
        pvec = np.concatenate([np.atleast_1d(prog["par"][k].value) for k in comp["names"]])
        data = dict(comp["data"])
        data["b"] = comp["b0"] + comp["Mb"] @ pvec
        try:
            sol = comp["solver"].solve_via_data(
                data, False, False, {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}
            )
        except Exception as exc:  # noqa: BLE001 - any solver failure becomes status 6
            return 6, f"the external solver failed: CLARABEL: {exc}", None
        st = str(sol.status)
        if st in ("Solved", "AlmostSolved"):
            z = np.asarray(sol.x[comp["zcol"] : comp["zcol"] + D], dtype=np.float64)
            note = "" if st == "Solved" else " (CLARABEL status AlmostSolved)"
            return 0, STATUS_MESSAGES[0] + note + comp["note"], z
        if st in ("PrimalInfeasible", "AlmostPrimalInfeasible"):
            return 3, STATUS_MESSAGES[3], None
        return 6, f"the external solver failed: CLARABEL status {st}", None

    def _set_common(self, prog, x0, metric, w, lo, hi):
        par = prog["par"]
        if "lo" in par:
            par["lo"].value = (lo - x0)[prog["lo_idx"]]
        if "hi" in par:
            par["hi"].value = (hi - x0)[prog["hi_idx"]]

    def _theta(self, z, metric, w):
        if metric == "euclidean":
            return float(np.sqrt(np.sum(w * z * z)))
        return float(np.sum(w * np.abs(z)))

    def _explain_cvxpy(self, X, tgt, metric, opts, solver):
        w, free, lo, hi, C, c, eps = opts
        N, D = X.shape
        Xcf = X.copy()
        dist = np.full(N, np.inf)
        proto = np.full(N, -1, dtype=np.int64)
        status = np.full(N, 3, dtype=np.int64)
        messages = [STATUS_MESSAGES[3]] * N
        for a in range(N):  # one solver call per query and target prototype
            x0 = X[a]
            fail = None
            for i in np.flatnonzero(self._cls == tgt[a]):
                prog = self._program(i, metric, w, free, lo, hi, C)
                others = prog["others"]
                G_b = np.concatenate([self._b[i, others] - eps, c])
                G = np.vstack([self._A[i, others], C])
                prog["par"]["h"].value = (G_b - G @ x0) / prog["par"]["row_norm"]
                self._set_common(prog, x0, metric, w, lo, hi)
                out = None
                if self._direct and solver in (None, "cvxpy", "CLARABEL", "clarabel"):
                    out = self._solve_compiled(prog, D)
                if out is None:
                    st, msg = self._solve(prog["prob"], solver)
                    z = None if st != 0 else np.asarray(prog["z"].value, dtype=np.float64)
                else:
                    st, msg, z = out
                if st != 0:
                    if st != 3:
                        fail = (st, msg)
                    continue
                z[~free] = 0.0
                dd = self._theta(z, metric, w)
                if dd < dist[a]:
                    dist[a], Xcf[a], proto[a], status[a], messages[a] = dd, x0 + z, i, 0, msg
            if proto[a] < 0 and fail is not None:
                status[a], messages[a] = fail
        return Xcf, dist, proto, np.zeros(N, dtype=np.int64), status, messages, {}

    # ------------------------------------------------------------------ LGMLVQ: penalty CCP
    def _explain_ccp(
        self, X, tgt, metric, opts, solver, max_iter, tol, tau0=1.0, mu=2.0, tau_max=1e6
    ):
        w, free, lo, hi, C, c, eps = opts
        N, D = X.shape
        P, Om, Lams = self.prototypes_, self._omegas, self._lams
        Xcf = X.copy()
        dist = np.full(N, np.inf)
        proto = np.full(N, -1, dtype=np.int64)
        nit = np.zeros(N, dtype=np.int64)
        status = np.full(N, 3, dtype=np.int64)
        messages = [STATUS_MESSAGES[3]] * N
        fallback = np.full(N, np.inf)
        for a in range(N):
            x0 = X[a]
            fail = None
            for i in np.flatnonzero(self._cls == tgt[a]):
                # fallback of the Suggest step: p_i itself, when it meets the hard constraints
                zf = P[i] - x0
                if (
                    np.all(zf[~free] == 0)
                    and np.all(P[i] >= lo)
                    and np.all(P[i] <= hi)
                    and np.all(C @ P[i] <= c)
                ):
                    fallback[a] = min(fallback[a], self._theta(zf, metric, w))
                prog = self._program(i, metric, w, free, lo, hi, C, ccp=True)
                par, others = prog["par"], prog["others"]
                self._set_common(prog, x0, metric, w, lo, hi)
                par["off"].value = Om[i] @ (x0 - P[i])
                if "hu" in par:
                    par["hu"].value = c - C @ x0
                # Suggest: start at the target prototype (feasible for eq. 9b when ε is small)
                zk = P[i] - x0
                zk[~free] = 0.0
                tau = tau0
                prev = np.inf
                st_i, msg_i, it = 1, STATUS_MESSAGES[1], 0
                for it in range(1, max_iter + 1):
                    xk = x0 + zk
                    diff = xk[None, :] - P[others]  # (m, D)
                    Ld = np.einsum("mij,mj->mi", Lams[others], diff)  # Λ_j (x_k − p_j)
                    g = np.einsum("mi,mi->m", diff, Ld)  # d(x_k, p_j)
                    R = 2.0 * Ld  # ∇g_j(x_k)
                    # ĝ_j(x) = g_j(x_k) + R_j·(z − z_k);  constraint: f_i(z) + ε − ĝ_j(z) ≤ s_j
                    par["R"].value = R
                    par["kappa"].value = g - R @ zk - eps
                    par["tau"].value = tau
                    st, msg = self._solve(prog["prob"], solver)
                    if st != 0:
                        st_i, msg_i = st, msg
                        break
                    znew = np.asarray(prog["z"].value, dtype=np.float64)
                    znew[~free] = 0.0
                    smax = float(np.max(par["s"].value, initial=0.0))
                    obj = self._theta(znew, metric, w)
                    change = abs(prev - obj)
                    zk, prev = znew, obj
                    if change <= tol * max(1.0, obj) and smax <= tol:
                        st_i, msg_i = 0, STATUS_MESSAGES[0] + f" (penalty CCP, {it} rounds)"
                        break
                    tau = min(mu * tau, tau_max)
                nit[a] += it
                if st_i not in (0, 1):
                    if st_i != 3:
                        fail = (st_i, msg_i)
                    continue
                x = x0 + zk
                dd = self._theta(zk, metric, w)
                # the true (non-linearised) constraints must hold, with the solver's accuracy
                di = (x - P[i]) @ Lams[i] @ (x - P[i])
                dj = np.einsum("mi,mij,mj->m", x - P[others], Lams[others], x - P[others])
                if np.any(di >= dj):
                    st_i, msg_i = 4, "numerical failure: the penalty CCP iterate is infeasible"
                    fail = (st_i, msg_i)
                    continue
                if dd < dist[a]:
                    dist[a], Xcf[a], proto[a], status[a], messages[a] = dd, x, i, st_i, msg_i
            if proto[a] < 0 and fail is not None:
                status[a], messages[a] = fail
        return Xcf, dist, proto, nit, status, messages, {"fallback_distance": fallback}


# ---------------------------------------------------------------------- baselines and benchmarks
def _rebuild_and_solve(ex, x0, target_idx, metric="euclidean", eps=1e-6, solver="CLARABEL"):
    """Solve one query by building the x-space cvxpy programs from scratch (benchmark baseline).

    This is what the paper's reference code does: one new program per query and target prototype.
    Returns the best distance.
    """
    import cvxpy as cp

    best = np.inf
    for i in np.flatnonzero(ex._cls == target_idx):
        x = cp.Variable(ex.n_features_in_)
        others = np.flatnonzero(ex._valid[i])
        obj = cp.sum_squares(x - x0) if metric == "euclidean" else cp.norm1(x - x0)
        prob = cp.Problem(cp.Minimize(obj), [ex._A[i, others] @ x <= ex._b[i, others] - eps])
        prob.solve(solver=solver)
        if prob.status in cp.settings.SOLUTION_PRESENT:
            v = float(prob.value)
            best = min(best, np.sqrt(max(v, 0.0)) if metric == "euclidean" else v)
    return best


def _median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def bench_rows(quick: bool = True) -> list[dict]:
    """Side-by-side timings of the LVQ counterfactual paths, measured in this process.

    Rows (breast cancer, 5 PCA components, 3 prototypes per class): the fast exact QP vs building
    + solving the cvxpy program per query; the ``cp.Parameter`` path (compiled once, re-solved
    with Clarabel) vs rebuilding; the same parameterised programs re-solved by cvxpy's
    ``Problem.solve``; penalty-CCP latency for LGMLVQ (no baseline).

    Parameters
    ----------
    quick : bool, default=True
        Fewer queries and repeats.

    Returns
    -------
    list of dict
        Keys ``name``, ``fastcf_s`` (median seconds per counterfactual), ``baseline_s``,
        ``ratio`` (baseline / fastcf), ``accuracy_gap`` (largest relative difference of the
        distances; None where no baseline).

    Examples
    --------
    >>> from fastcf.lvq import bench_rows
    >>> rows = bench_rows(quick=True)  # doctest: +SKIP
    """
    from sklearn.datasets import load_breast_cancer
    from sklearn.decomposition import PCA
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from fastcf.lvq_models import GLVQ, GMLVQ, LGMLVQ

    X, y = load_breast_cancer(return_X_y=True)
    Z = make_pipeline(StandardScaler(), PCA(5, random_state=0)).fit_transform(X)
    nq = 5 if quick else 30
    rep = 3 if quick else 7
    rows = []
    for Model in (GLVQ, GMLVQ):
        m = Model(prototypes_per_class=3, random_state=0, max_iter=200).fit(Z, y)
        ex = LVQExplainer(m)
        pred = m.predict(Z[:nq])
        tgt_lab = np.where(pred == m.classes_[0], m.classes_[1], m.classes_[0])
        tgt_idx = np.searchsorted(m.classes_, tgt_lab)
        ex.explain(Z[:2], tgt_lab[:2])  # compile
        ex.explain(Z[:2], tgt_lab[:2], solver="cvxpy")  # build the programs
        fast = ex.explain(Z[:nq], tgt_lab)
        par = ex.explain(Z[:nq], tgt_lab, solver="cvxpy")
        base = np.array([_rebuild_and_solve(ex, Z[k], tgt_idx[k]) for k in range(nq)])
        t_fast = _median_time(lambda ex=ex, t=tgt_lab: ex.explain(Z[:nq], t), rep) / nq
        t_par = (
            _median_time(lambda ex=ex, t=tgt_lab: ex.explain(Z[:nq], t, solver="cvxpy"), rep) / nq
        )
        t_base = (
            _median_time(
                lambda ex=ex, t=tgt_idx: [_rebuild_and_solve(ex, Z[k], t[k]) for k in range(nq)],
                rep,
            )
            / nq
        )
        ex_slow = LVQExplainer(m)
        ex_slow._direct = False  # the same parameterised programs, re-solved by Problem.solve
        slow = ex_slow.explain(Z[:nq], tgt_lab, solver="cvxpy")
        t_slow = (
            _median_time(lambda ex=ex_slow, t=tgt_lab: ex.explain(Z[:nq], t, solver="cvxpy"), rep)
            / nq
        )
        gap_s = float(np.max(np.abs(slow.distance - base) / base))
        gap_f = float(np.max(np.abs(fast.distance - base) / base))
        gap_p = float(np.max(np.abs(par.distance - base) / base))
        rows.append(
            {
                "name": f"lvq {Model.__name__} fast QP vs cvxpy rebuild",
                "fastcf_s": t_fast,
                "baseline_s": t_base,
                "ratio": t_base / t_fast,
                "accuracy_gap": gap_f,
            }
        )
        rows.append(
            {
                "name": f"lvq {Model.__name__} cp.Parameter (compiled once) vs cvxpy rebuild",
                "fastcf_s": t_par,
                "baseline_s": t_base,
                "ratio": t_base / t_par,
                "accuracy_gap": gap_p,
            }
        )
        rows.append(
            {
                "name": f"lvq {Model.__name__} cp.Parameter + Problem.solve vs cvxpy rebuild",
                "fastcf_s": t_slow,
                "baseline_s": t_base,
                "ratio": t_base / t_slow,
                "accuracy_gap": gap_s,
            }
        )
    m = LGMLVQ(prototypes_per_class=3, random_state=0, max_iter=200).fit(Z, y)
    ex = LVQExplainer(m)
    pred = m.predict(Z[:nq])
    tgt_lab = np.where(pred == m.classes_[0], m.classes_[1], m.classes_[0])
    ex.explain(Z[:1], tgt_lab[:1], metric="manhattan")
    t_ccp = _median_time(lambda: ex.explain(Z[:nq], tgt_lab, metric="manhattan"), 1 if quick else 3)
    rows.append(
        {
            "name": "lvq LGMLVQ penalty CCP latency",
            "fastcf_s": t_ccp / nq,
            "baseline_s": None,
            "ratio": None,
            "accuracy_gap": None,
        }
    )
    return rows


def __getattr__(name):
    # the estimators need scikit-learn, whose import is most of a cold start: load them on use
    if name in ("GLVQ", "GMLVQ", "LGMLVQ"):
        from fastcf import lvq_models

        return getattr(lvq_models, name)
    raise AttributeError(f"module 'fastcf.lvq' has no attribute {name!r}")
