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

import warnings
from typing import TYPE_CHECKING

import numpy as np

from fastcf._base import BaseExplainer, renamed_option
from fastcf._confirm import check_verify, confirm
from fastcf._kernels.lvq_cost import lvq_distances
from fastcf._linear.verify import replace_rows
from fastcf._lvq import ccp, exact, programs
from fastcf._lvq.model import check_read, geometry, omega_from_relevance, read_model
from fastcf._lvq.options import resolve_options, row_options
from fastcf._status import BOUNDARY_MESSAGE
from fastcf._validation import as_float_array, as_queries, check_int, check_scalar

if TYPE_CHECKING:  # imported on first use, see __getattr__ at the end
    from fastcf.lvq_models import GLVQ, GMLVQ, LGMLVQ

__all__ = ["GLVQ", "GMLVQ", "LGMLVQ", "LVQExplainer"]

_METHODS = ("auto", "ldp", "cvxpy", "ccp")
_MODE = {"euclidean": 0, "global": 1, "local": 2}


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
            return lvq_distances(X, self.prototypes_, self._geo.omegas, _MODE[self.kind])

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
        """Which rows of ``X`` are finite and won by a prototype of class ``tidx`` (eq. 5)."""
        finite = np.isfinite(X).all(axis=1)
        Xf = np.ascontiguousarray(np.where(finite[:, None], X, 0.0))
        # (squared distances beyond the doubles are inf: a warning where the kernel runs as
        # Python, on a cold start or without Numba's JIT)
        with np.errstate(over="ignore", invalid="ignore"):
            dist = lvq_distances(Xf, self.prototypes_, self._geo.omegas, _MODE[self.kind])
        return finite & (self._geo.cls[np.argmin(dist, axis=1)] == tidx)

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
        epsilon=None,
        verify="fold",
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
            ``"HIGHS"``). The old values ``"fast"`` and ``"cvxpy"`` are deprecated aliases of
            ``method="ldp"`` and ``method="cvxpy"``.
        max_iter : int, optional
            Iteration cap of the method that runs: NNLS steps per target prototype (``"ldp"``,
            default 100) or penalty-CCP rounds per target prototype (``"ccp"``, default 200).
        tol : float, default=1e-7
            The penalty CCP's stopping tolerance: it stops when the relative change of θ and
            the largest slack are both below ``tol`` (the other methods are exact).
        epsilon : float, optional
            Deprecated name of ``margin``.
        verify : {"fold", "model"}, default="fold"
            As in :meth:`fastcf.LinearExplainer.explain`: ``"model"`` also confirms each success
            with the fitted model's own ``predict`` (an explainer built from a model).

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
        margin = renamed_option(margin, 1e-6, epsilon, "epsilon", "margin", "LVQExplainer.explain")
        check_verify(verify, self.model)
        X, single, names, tidx = self._queries(x, target)
        missing = sorted(set(tidx.tolist()) - set(self._geo.cls.tolist()))
        if missing:
            raise ValueError(
                f"target={self.classes_[missing[0]]!r} has no prototype in the model, so no point "
                "can be classified as it"
            )
        opts = resolve_options(
            X,
            self.n_features_in_,
            metric,
            weights,
            frozen,
            bounds,
            constraints,
            margin,
            self.mad_,
            self.feature_names_in_,
        )
        method, solver = self._method(method, solver, metric)
        max_iter = check_int(max_iter, "max_iter", lo=1, allow_none=True)
        tol = check_scalar(tol, "tol", lo=0.0, lo_open=True)
        geo = self._geo
        if method == "ldp":
            nit = 100 if max_iter is None else max_iter

            def run(Xr, tr, o):
                return exact.solve_ldp(geo, Xr, tr, o, nit)

            sol = self._raise_margin(run(X, tidx, opts), X, tidx, opts, run)
        elif method == "cvxpy":

            def run(Xr, tr, o):
                return programs.solve_cvxpy(self._cache, geo, Xr, tr, metric, o, solver)

            sol = self._raise_margin(run(X, tidx, opts), X, tidx, opts, run)
        else:
            n_rounds = 200 if max_iter is None else max_iter
            sol = ccp.solve_ccp(self._cache, geo, X, tidx, metric, opts, solver, n_rounds, tol)
            sol = self._ccp_fallback(sol, X, tidx, opts, metric)
        sol = self._verify(sol, tidx)
        sol = self._margin_scale_message(sol, X, opts.margin)
        res = self._package(sol, X, tidx, names, single)
        return confirm(self.model, res, self.classes_) if verify == "model" else res

    def _margin_scale_message(self, sol, X, margin):
        """Say so where a refused answer's margin is out of scale with the query's distances.

        The margin is absolute, in squared distance. Where it exceeds every squared distance
        from x̄ to a prototype (data of scale 10⁻²⁰ and the default 1e-6), reaching it moves x
        so far that the rounding of the distances there exceeds it, and the verification's
        usual advice, a larger margin, is the wrong way: the message says to use one at the
        data's scale instead.
        """
        rows = [i for i, m in enumerate(sol.message) if m == BOUNDARY_MESSAGE]
        if not rows or margin == 0.0:
            return sol
        with np.errstate(over="ignore", invalid="ignore"):
            dmax = self.distances(X[rows]).max(axis=1)
        msgs = list(sol.message)
        for i, d in zip(rows, dmax, strict=True):
            if margin > d:
                msgs[i] = (
                    "numerical failure: the answer lies within rounding of the decision "
                    f"boundary; margin={margin:.3g} is in squared distance, and larger than "
                    f"every squared distance from the query to a prototype (at most {d:.3g}): "
                    "reaching it moves x so far that rounding exceeds it (use a margin= at the "
                    "data's scale)"
                )
        return sol._replace(message=msgs)

    def _rounding_need(self, X, tidx, X0=None, proto=None):
        """Return per row (a bound of how far rounding can move d_other − d_target, that margin).

        The squared distance d_j = ‖y‖², y = Ω_j (x − p_j), is evaluated to within
        e_j = γ (2 ‖y‖ ‖t‖ + d_j), t = |Ω_j| |x − p_j| and γ = (D + 2) ε: each y_r is within
        γ t_r (the subtraction, the product with Ω), which moves y_r² by 2|y_r| γ t_r (Cauchy–
        Schwarz over r), and the sum of squares adds γ d_j. (Squaring t instead, γ ‖t‖², was
        10⁷ times too large where x̄ ~ 10⁹ cancels to y ~ 500, and the raised margin exceeded
        the target cell's room: soak round T.) The margin between the answer's target
        prototype and the nearest other is within e_i + e_j; twice that again, as the answer is
        formed in another arithmetic (the QP's) than the one that judges it. With the queries
        ``X0`` (x̄): and the rounding of forming x = x̄ + δ, ε max(|x̄|, |x|) per coordinate,
        times the gradient of d_target − d_other (x̄ = −1 and a step of 1 + 5e-148 rounded to
        x = 0 exactly, on the wrong side of a boundary 5e-148 away; soak round T).
        """
        geo = self._geo
        D = X.shape[1]
        diff = np.abs(X[:, None, :] - geo.prototypes[None, :, :])  # (N, M, D)
        om = np.abs(geo.omegas)  # (1 or M, d, D)
        with np.errstate(over="ignore", invalid="ignore"):
            dt = np.einsum(
                "nmd,mrd->nmr", diff, np.broadcast_to(om, (diff.shape[1],) + om.shape[1:])
            )
            tnorm = np.sqrt(np.einsum("nmr,nmr->nm", dt, dt))
            d = lvq_distances(X, self.prototypes_, geo.omegas, _MODE[self.kind])
            gamma = (D + 2) * np.finfo(float).eps
            err = gamma * (2.0 * np.sqrt(np.maximum(d, 0.0)) * tnorm + d)
        mine = geo.cls[None, :] == tidx[:, None]
        i = np.argmin(np.where(mine, d, np.inf), axis=1)
        if proto is not None:
            # the target prototype the answer was solved for (not a copy of another class's
            # prototype that ties with it everywhere and never wins: soak round T)
            i = np.where(proto >= 0, proto, i)
        j = np.argmin(np.where(mine, np.inf, d), axis=1)
        rows = np.arange(X.shape[0])
        need = 2.0 * (err[rows, i] + err[rows, j])
        if X0 is not None:
            lam = geo.lams  # (1, D, D) shared, or (M, D, D)
            li = lam[i] if lam.shape[0] > 1 else np.broadcast_to(lam[0], (i.size, D, D))
            lj = lam[j] if lam.shape[0] > 1 else np.broadcast_to(lam[0], (j.size, D, D))
            with np.errstate(over="ignore", invalid="ignore"):
                g = np.einsum("nab,nb->na", li, X - geo.prototypes[i]) - np.einsum(
                    "nab,nb->na", lj, X - geo.prototypes[j]
                )
                scale = np.maximum(np.abs(X), np.abs(X0))
                need = need + 8.0 * np.finfo(float).eps * np.einsum("na,na->n", np.abs(g), scale)
        return need, d[rows, j] - d[rows, i]

    def _raise_margin(self, sol, X, tidx, opts, run):
        """Re-solve the successes that the verification would refuse, with a larger margin.

        The margin ε of eq. 9b is in units of squared distance, and at data of scale 10⁵ and
        beyond the default 1e-6 is below the rounding of the distances: the QP's answer sits on
        the boundary and the model's own arithmetic can put it in another class (10 of 20
        queries at 10⁵; Manhattan answers, at a vertex on the boundary, more). Those rows are
        solved again by ``run(X, tidx, opts)`` (the method's solver) with ε raised to twice the
        rounding need at the answer (:meth:`_rounding_need`), doubled on each further round
        (at most three), and past the solver's own shortfall. A row keeps its first answer
        where the re-solve fails. Every success is judged here as ``_verify`` would, and
        returned certified. (At data of scale 10⁻²⁰ the default ε is the problem: reaching it
        takes a move of ~10¹⁴, where rounding grows faster than any raise; those rows stay
        refused, said so.)
        """
        margins = np.full(X.shape[0], float(opts.margin))
        good = self._in_target(sol.x, tidx)  # the verification's own test (see the return)
        for _ in range(3):
            rows = np.flatnonzero(sol.success & ~good)
            if rows.size == 0:
                break
            with np.errstate(over="ignore", invalid="ignore"):
                proto = sol.info["prototype"][rows] if sol.info else None
                need, got = self._rounding_need(sol.x[rows], tidx[rows], X[rows], proto)
            for a, r in enumerate(rows):
                # (and a floor: at a prototype of the target class equal to one of another
                # class that wins their ties, margin 0 and a need of 0 at x̄ on them)
                eps = max(2.0 * need[a], 2.0 * margins[r], 4.0 * np.finfo(float).tiny)
                # and past the solver's own shortfall: Clarabel meets the constraints to ~1e-10
                # of the scaled program, which at data of scale 10⁵ is ~1 in squared distance
                short = margins[r] - got[a]
                if short > 0.0:
                    eps = max(eps, margins[r] + 4.0 * short)
                if not np.isfinite(eps):
                    continue
                margins[r] = eps
                ro = row_options(opts, r)._replace(margin=float(eps))
                sub = run(X[r : r + 1], tidx[r : r + 1], ro)
                if sub.success[0]:
                    sol = replace_rows(sol, np.array([r]), sub)
                    sol.info["prototype"][r] = sub.info["prototype"][0]
                    good[r] = self._in_target(sol.x[r : r + 1], tidx[r : r + 1])[0]
        # every success was judged here as ``_verify`` would: it need not judge them again
        return sol._replace(certified=sol.success & good)

    def _ccp_fallback(self, sol, X, tidx, opts, metric):
        """Answer with a target prototype where the verification would refuse the CCP's answer.

        The penalty CCP checks its iterate with the true distances, strictly; the verification
        with the model's own arithmetic (``predict``, ties to the first prototype). Where the
        two disagree (an iterate within rounding of a boundary: soak round T, local metrics at
        x̄ ~ 6·10⁵), the row takes the nearest target prototype, its frozen features kept, that
        meets the box and the user rows and that the model puts in the target class: status 1,
        as for the CCP's own fallback to its start point. Otherwise it stays refused.
        """
        good = self._in_target(sol.x, tidx)
        rows = np.flatnonzero(sol.success & ~good)
        if rows.size == 0:
            return sol
        geo = self._geo
        x_new, dist, status, msgs = (
            sol.x.copy(),
            sol.distance.copy(),
            sol.status.copy(),
            list(sol.message),
        )
        for r in rows:
            ro = row_options(opts, r)
            best, bd = None, np.inf
            for i in np.flatnonzero(geo.cls == tidx[r]):
                x = np.where(ro.free, geo.prototypes[i], X[r])
                if not ccp._meets_hard_constraints(x, ro.lo, ro.hi, ro.C, ro.c):
                    continue
                if not self._in_target(x[None], tidx[r : r + 1])[0]:
                    continue
                d = programs.theta(x - X[r], metric, ro.w)
                if d < bd:
                    best, bd = (i, x), d
            if best is not None:
                x_new[r], dist[r], status[r] = best[1], bd, 1
                sol.info["prototype"][r] = best[0]
                msgs[r] = (
                    "the penalty CCP's answer lies within rounding of the decision boundary; the "
                    f"answer is the target prototype p_{best[0]} (frozen features kept)"
                )
                good[r] = True
        return sol._replace(
            x=x_new, distance=dist, status=status, message=msgs, certified=sol.success & good
        )

    def _method(self, method, solver, metric):
        """Return (method, cvxpy solver name or None) after checking them against the model."""
        if solver in ("fast", "cvxpy"):  # the old meaning of solver=: the method
            if method != "auto":
                raise TypeError(
                    f"LVQExplainer.explain: give method= only (solver={solver!r} is its old form)"
                )
            method = "ldp" if solver == "fast" else ("ccp" if self.kind == "local" else "cvxpy")
            warnings.warn(
                f"LVQExplainer.explain: solver={solver!r} is deprecated and will be removed in "
                f"fastcf 0.3; use method={method!r} (solver= names the cvxpy solver only)",
                FutureWarning,
                stacklevel=3,
            )
            solver = None
        if solver is not None and str(solver).upper() not in programs.SOLVER_NAMES:
            raise ValueError(
                f"solver must be None or a cvxpy solver name {sorted(programs.SOLVER_NAMES)}; "
                f"got {solver!r}"
            )
        if method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}; got {method!r}")
        local = self.kind == "local"
        if method == "auto":
            if local:
                method = "ccp"
            else:
                method = "ldp" if metric == "euclidean" and solver is None else "cvxpy"
        if method == "ldp" and (local or metric != "euclidean" or solver is not None):
            raise ValueError(
                "method='ldp' needs a shared metric (GLVQ/GMLVQ), metric='euclidean' and no "
                f"cvxpy solver; this model is {self.kind!r}, metric={metric!r}, solver={solver!r}"
            )
        if method == "cvxpy" and local:
            raise ValueError(
                "method='cvxpy' solves the convex programs of a shared metric (GLVQ/GMLVQ); this "
                "model has one Ω per prototype (LGMLVQ): use method='ccp'"
            )
        if method == "ccp" and not local:
            raise ValueError(
                "method='ccp' is the penalty CCP for one Ω per prototype (LGMLVQ); this model's "
                f"metric is {self.kind!r}: use method='ldp' or 'cvxpy'"
            )
        return method, solver


def __getattr__(name):
    # the estimators need scikit-learn, whose import is most of a cold start: load them on use
    if name in ("GLVQ", "GMLVQ", "LGMLVQ"):
        from fastcf import lvq_models

        return getattr(lvq_models, name)
    raise AttributeError(f"module 'fastcf.lvq' has no attribute {name!r}")
