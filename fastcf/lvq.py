"""Counterfactual explanations of LVQ models (Artelt & Hammer, paper 001).

Algorithm 1: the counterfactual of x̄ for a target class y is the closest point (in θ) that some
prototype p_i of class y wins, so for each such p_i we solve

    min_x θ(x, x̄)  s.t.  d(x, p_i) + ε ≤ d(x, p_j)  for every prototype p_j of another class  (9)

and keep the best i. With a metric shared by all prototypes (GLVQ: Λ = I, GMLVQ: Λ = ΩᵀΩ) each
constraint is linear and the program is convex: a QP for Euclidean θ, solved exactly by a dual
active-set method in Numba (``method="ldp"``, :mod:`fastcf._lvq.exact`) or by cvxpy
(``method="cvxpy"``, :mod:`fastcf._lvq.programs`), and an LP for weighted Manhattan θ (cvxpy).
With one Ω_k per prototype (LGMLVQ) the constraints are differences of convex quadratics, and the
program is solved approximately by the penalty convex–concave procedure (``method="ccp"``,
:mod:`fastcf._lvq.ccp`). The derivations, and the paper's typos, are in those modules and in
:mod:`fastcf._lvq.model`.

This module is the façade: :class:`LVQExplainer` reads the model and the options, dispatches to
one of the solvers, and verifies (with the model's own decision rule) and packages the answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from fastcf import _stage
from fastcf._base import BaseExplainer
from fastcf._kernels.lvq_cost import lvq_distances, lvq_in_target
from fastcf._lvq import route
from fastcf._lvq.certify import MODE, margin_scale_message
from fastcf._lvq.model import check_read, geometry, omega_from_relevance, read_model
from fastcf._lvq.options import resolve_method, resolve_options
from fastcf._lvq.sparse import solve_max_changes
from fastcf._lvq.vocabulary import check_max_changes, check_question
from fastcf._validation import as_float_array, as_queries, check_exact, check_int, check_scalar

if TYPE_CHECKING:  # imported on first use, see __getattr__ at the end
    from fastcf.lvq_models import GLVQ, GMLVQ, LGMLVQ

__all__ = ["GLVQ", "GMLVQ", "LGMLVQ", "LVQExplainer"]


class LVQExplainer(BaseExplainer):
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
    n_features_in_ : int
    feature_names_in_ : ndarray of str or None
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
    >>> bool(res.success), np.round(res.x, 6).tolist(), str(ex.predict(res.x)[0]), res.method
    (True, [1.0, 1.0], 'b', 'ldp (dual active set)')
    """

    def __init__(self, model, feature_names=None):
        P, labels, classes, om = read_model(model)
        if feature_names is None:
            feature_names = getattr(model, "feature_names_in_", None)
        self._setup(P, labels, classes, om, feature_names)
        check_read(model, self)  # the copy against the model itself, once (and on fit_mad's rows)
        self.model = model

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
            omega = omega_from_relevance(relevance, "relevance", P.shape[1])
        labels = np.asarray(labels)
        classes = np.unique(labels) if classes is None else np.asarray(classes)
        self._setup(prototypes, labels, classes, omega, feature_names)
        return self

    def _setup(self, P, labels, classes, om, feature_names):
        geo = geometry(P, labels, classes, om)
        D = geo.prototypes.shape[1]
        names = None if feature_names is None else np.asarray(feature_names, dtype=object)
        if names is not None and names.shape != (D,):
            raise ValueError(
                f"feature_names must hold {D} names, one per feature; got shape {names.shape}"
            )
        self._geo = geo
        self.prototypes_ = geo.prototypes
        self.prototype_labels_ = geo.labels
        self._set_classes(geo.classes)
        self.kind = geo.kind
        self.n_features_in_ = D
        self.feature_names_in_ = names
        self.mad_ = None
        self.model = None  # the fitted model, when built from one
        self._cache = {}  # cvxpy programs, per target prototype and option pattern

    def _check_rows(self, X):
        if self.model is not None:
            check_read(self.model, self, X[:64])

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_cache"] = {}  # cvxpy programs are rebuilt on demand
        return state

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
        with np.errstate(over="ignore", invalid="ignore"):  # (as compiled: inf, silently)
            return lvq_distances(X, self.prototypes_, self._geo.omegas, MODE[self.kind])

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

    def _in_target(self, X, tidx, proba=None):
        """Which rows of ``X`` are finite and won by a prototype of class ``tidx`` (eq. 5).

        :meth:`predict`'s rule on :meth:`distances`, in one kernel
        (:func:`~fastcf._kernels.lvq_cost.lvq_in_target`).
        """
        return lvq_in_target(
            np.ascontiguousarray(X, dtype=np.float64), self.prototypes_, self._geo.omegas,
            MODE[self.kind], self._geo.cls, np.ascontiguousarray(tidx, dtype=np.int64),
        )  # fmt: skip

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
        margin=1e-6,
        method="auto",
        solver=None,
        max_iter=None,
        tol=1e-7,
        verify="fold",
        region=True,
        max_changes=None,
        exact=True,
        time_limit=None,
        n_jobs=None,
        proba=None,
        lam=None,
    ):
        """Closest point that the model classifies as ``target`` (Algorithm 1).

        Parameters
        ----------
        x : array-like of shape (D,) or (N, D)
            One query or a batch.
        target : label or array-like of N labels
        metric : {"euclidean", "manhattan"}, default="euclidean"
            θ: ‖w ∘ (x − x̄)‖₂ (QP) or Σ_k w_k |x_k − x̄_k| (LP).
        weights : None, array-like of shape (D,) or "mad"
            Diagonal weights (``"mad"``: 1/MAD from :meth:`fit_mad`).
        frozen : indices or feature names, optional
            Features that must keep their value.
        bounds : (lo, hi), optional
            Per-feature box lo ≤ x ≤ hi, ±inf allowed (``None`` for one part: unbounded on that
            side). Each of lo and hi is a scalar, an array of shape (D,) (one box for every
            query) or an array of shape (N, D) (row n is the box of query n). Every source row
            must lie inside its box.
        constraints : list of (a, c), optional
            Extra linear constraints a·x ≤ c.
        margin : float, default=1e-6
            Margin ε of eq. 9b: d(x, p_i) + ε ≤ d(x, p_j).
        method : {"auto", "ldp", "cvxpy", "ccp"}, default="auto"
            ``"ldp"``: the exact dual active-set QP in Numba (GLVQ/GMLVQ, Euclidean only);
            ``"cvxpy"``: the convex programs (QP or LP) in cvxpy (GLVQ/GMLVQ); ``"ccp"``: the
            penalty convex–concave procedure (LGMLVQ). ``"auto"``: ``"ccp"`` for LGMLVQ,
            ``"ldp"`` for Euclidean GLVQ/GMLVQ unless ``solver`` names a cvxpy solver, else
            ``"cvxpy"``.
        solver : str, optional
            The cvxpy solver of ``"cvxpy"`` and ``"ccp"`` (e.g. ``"CLARABEL"``, the default, or
            ``"HIGHS"``).
        max_iter : int, optional
            Iteration cap of the method that runs: NNLS steps per target prototype (``"ldp"``,
            default 100) or penalty-CCP rounds per target prototype (``"ccp"``, default 200).
        tol : float, default=1e-7
            The penalty CCP's stopping tolerance: it stops when the relative change of θ and
            the largest slack are both below ``tol`` (the other methods are exact).
        verify : {"fold", "model"}, default="fold"
            As in :meth:`fastcf.LinearExplainer.explain`: ``"model"`` also confirms each success
            with the fitted model's own ``predict`` (an explainer built from a model).
        region : bool, default=True
            LVQ's one question, the closest point classified as the target, as every family
            words it; ``region=False``, ``proba=`` and ``lam=`` (questions of probabilistic
            models) are refused with a ``ValueError`` naming them.
        max_changes : int, optional
            At most this many features change, exactly (GLVQ/GMLVQ; refused for LGMLVQ):
            Manhattan with a finite box on the free features by one MILP per target prototype
            (HiGHS), otherwise by a branch-and-bound over frozen sets
            (:mod:`fastcf._lvq.sparse`). ``info["nodes"]``, ``info["proven"]``.
        exact : bool, default=True
            Accepted as by every family: GLVQ/GMLVQ programs are solved exactly either way.
            ``info["exact"]`` says whether an answer is a certified optimum: False for LGMLVQ
            (the penalty CCP is a local method) and for an answer stopped by a limit.
        time_limit : float, optional
            Seconds for each row, from its start: a row of ``max_changes`` (its MILPs, each
            given the time left, or its branch-and-bound over frozen sets; status 1 and
            ``info["proven"]`` False when it stops them) and LGMLVQ's penalty CCP (its rounds
            and its programs' builds: the best valid answer found, status 1, or
            ``success=False`` with status 1 and the reason when it has none). The exact
            GLVQ/GMLVQ programs take no limit (solved in milliseconds).
        n_jobs : int, optional
            Threads for a batch: None (the default) every core (Numba's thread count,
            ``NUMBA_NUM_THREADS``), ``k`` at most k, ``-1`` every core. The exact Euclidean
            path of GLVQ and GMLVQ (the dual QP kernel) runs a batch's rows on them, with the
            same bits on any number; the rows of the cvxpy programs (Manhattan, LGMLVQ,
            ``max_changes``) are solved one after another.
        proba, lam : None
            Refused (see ``region``).

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
        >>> bool(res.success), round(res.distance, 5), res.method
        (True, 1.0, 'cvxpy LP (CLARABEL)')
        >>> ex.explain([0.0, 0.0], 1, frozen=[0]).message
        'infeasible: the constraints leave no point classified as the target'
        """
        check_question(region, proba, lam)
        check_exact(exact, time_limit)
        options = dict(
            metric=metric, weights=weights, frozen=frozen, bounds=bounds,
            constraints=constraints, margin=margin, method=method, solver=solver,
            max_iter=max_iter, tol=tol, max_changes=max_changes, time_limit=time_limit,
        )  # fmt: skip
        return _stage.run(
            self, x, target, options, verify=verify, exact=self.kind != "local", n_jobs=n_jobs
        )

    # ------------------------------------------------------------------ the stage's steps
    def _read(self, X, tidx, names, o):
        """Return the query record of the stage (:mod:`fastcf._stage`): every option checked."""
        missing = sorted(set(tidx.tolist()) - set(self._geo.cls.tolist()))
        if missing:
            raise ValueError(
                f"target={self.classes_[missing[0]]!r} has no prototype in the model, so no point "
                "can be classified as it"
            )
        opts = resolve_options(
            X, self.n_features_in_, o["metric"], o["weights"], o["frozen"], o["bounds"],
            o["constraints"], o["margin"], self.mad_, self.feature_names_in_,
        )  # fmt: skip
        method, solver = resolve_method(self.kind, o["method"], o["solver"], o["metric"])
        return route.Query(
            opts, o["metric"], method, solver,
            check_int(o["max_iter"], "max_iter", lo=1, allow_none=True),
            check_scalar(o["tol"], "tol", lo=0.0, lo_open=True),
            check_max_changes(o["max_changes"], self.kind), o["time_limit"],
        )  # fmt: skip

    def _solve(self, X, tidx, q):
        """Route and solve (:func:`fastcf._lvq.route.solve`, judged and re-aimed there)."""
        if q.max_changes is None:
            return route.solve(self, X, tidx, q.opts, q)
        return solve_max_changes(
            self, X, tidx, q.opts, q.metric, q.max_changes, q.time_limit,
            lambda Xr, tr, o: route.solve(self, Xr, tr, o, q),
        )  # fmt: skip

    def _finish(self, sol, X, tidx, q):
        """Say so where a refused answer's margin is out of scale with the data."""
        return margin_scale_message(self, sol, X, q.opts.margin)

    def enumerate(self, x, target, k=5, *, max_nodes=1000, **options):
        """Several alternative counterfactuals of each query, cheapest first (Lawler's scheme).

        Up to ``k`` answers in increasing distance such that no answer's set of changed
        features contains the set of a cheaper answer in the list, as
        :meth:`fastcf.LinearExplainer.enumerate`: the first is :meth:`explain`'s, each other
        the answer of the query with some more features frozen (:func:`fastcf._lawler.lawler`).
        Euclidean answers move every feature the metric sees, so their alternatives differ
        by one frozen feature at a time; ``metric="manhattan"`` or ``max_changes=`` give
        few-feature alternatives. With local Ω's (LGMLVQ: the penalty CCP, not exact) a query
        with more features frozen can be answered below its parent's answer; that answer then
        comes after the dearer one, so the first answer stays :meth:`explain`'s.

        Parameters
        ----------
        x : array-like of shape (D,) or (N, D)
            One query, or N (one enumeration each).
        target : label or array-like of N labels
        k : int or None, default=5
            The number of answers; ``None`` returns a lazy iterator over all of them.
        max_nodes : int, default=1000
            Restricted queries solved (one :meth:`explain` each) before the enumeration stops
            (fewer than ``k`` answers are returned then, each with
            ``info["enumeration_stopped"] = "max_nodes"``).
        **options
            :meth:`explain`'s other options (``metric``, ``weights``, ``frozen``, ``bounds``,
            ``max_changes``, ``exact``, ...). ``time_limit``: seconds for the whole
            enumeration of each query row, from its start: each restricted query's
            :meth:`explain` gets the time the row has left, and none is solved past it; the
            answers found by then are returned (fewer than ``k``, each judged as always), with
            ``info["enumeration_stopped"] = "time_limit"``. None (the default): no limit.

        Returns
        -------
        list of Counterfactual, or an iterator of Counterfactual when ``k`` is None
            Empty when the query itself has no answer (:meth:`explain`'s ``message``
            says why). For N queries, a list of N of those.

        Examples
        --------
        >>> from fastcf import LVQExplainer
        >>> ex = LVQExplainer.from_arrays([[0.0, 0.0], [2.0, 1.0]], [0, 1])
        >>> alts = ex.enumerate([0.0, 0.0], 1, k=3, metric="manhattan")
        >>> [(a.changed.tolist(), round(a.distance, 4)) for a in alts]
        [([0], 1.25), ([1], 2.5)]
        """
        from ._alternatives import enumerate_answers

        check_question(options.get("region", True), options.get("proba"), options.get("lam"))
        check_exact(options.get("exact", True), options.get("time_limit"))
        return enumerate_answers(self, x, target, k, max_nodes, dict(options))


def __getattr__(name):
    # the estimators need scikit-learn, whose import is most of a cold start: load them on use
    if name in ("GLVQ", "GMLVQ", "LGMLVQ"):
        from fastcf import lvq_models

        return getattr(lvq_models, name)
    raise AttributeError(f"module 'fastcf.lvq' has no attribute {name!r}")
