"""Inverse classification for trees: the closest input a tree or an ensemble puts in a class.

:class:`TreeExplainer` parses a fitted model once, every split rewritten as *left iff x <= b* on
the float64 input from the library's own rule, checks the copy against the model on probe rows
placed on and next to every split value, and answers queries exactly. The parsers:

* :mod:`fastcf._trees.parse_sklearn` — scikit-learn's trees, forests and
  ``GradientBoostingClassifier``: ``float32(x) <= threshold`` (a float64 threshold);
* :mod:`fastcf._trees.parse_hist` — ``HistGradientBoostingClassifier``: ``x <= threshold`` in
  float64;
* :mod:`fastcf._trees.parse_xgboost` — ``XGBClassifier``: ``float32(x) < split_condition`` (a
  float32), margins added in float32;
* :mod:`fastcf._trees.parse_lightgbm` — ``LGBMClassifier``: ``x <= threshold`` in float64, with
  ``|x| <= 1e-35`` read as 0.

The answers:

* one tree — enumeration of the leaves of the target class, x̄ projected onto each leaf's box
  (:mod:`fastcf._trees.leaves`);
* an ensemble — a mixed-integer program over per-feature threshold intervals, solved by HiGHS
  (:mod:`fastcf._trees.milp`).

Every success is confirmed by the model's own ``predict`` (and ``predict_proba`` for ``proba=``).

A NaN in a query is a missing value the model routes itself: it stays missing in the answer and
the other features move, answered on the forest conditioned on the query's missing features
(:mod:`fastcf._trees.missing`). HistGradientBoosting's, LightGBM's and XGBoost's categorical
features are answered conditioned on their categories, over every combination of those a query
leaves free (:mod:`fastcf._trees.categorical`).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np

from . import _stage
from ._base import BaseExplainer
from ._confirm import ask, model_input
from ._trees import answer as _answer
from ._trees.boosters import BoosterClassifier, is_booster
from ._trees.leaves import leaf_table
from ._trees.missing import Patterns, program
from ._trees.parse import parse_model
from ._trees.staged import Builds
from ._validation import (
    as_queries,
)


class _Run(NamedTuple):
    """One tree query as the stage carries it (:meth:`TreeExplainer._read`)."""

    options: dict
    names: object
    proba: float | None
    in_target: object  # the judge, keeping the model's probabilities in ``memo``
    memo: dict
    reaim: object  # the re-aim policy (:class:`_Distrust`)


class _Distrust:
    """The tree family's re-aim policy: a refused row solved again without trusting the copy.

    The program prunes with the library's arithmetic (the parsed copy, checked against the
    model when the explainer was built) before the model confirms a candidate; where the model
    refuses the answer, the row is solved once more with every candidate confirmed by the
    model before it prunes (``trust=False``). One round.
    """

    def __init__(self, ex, X, tidx, names, options, memo):
        self.ex, self.X, self.tidx, self.names = ex, X, tidx, names
        self.options, self.memo = options, memo

    def aim(self, sol, rows, r):
        """Return ``rows`` on the first round (then nothing: the model judged every candidate)."""
        return rows if r == 0 else None

    def solve(self, rows):
        """Solve ``rows`` again, each candidate confirmed by the model before it prunes."""
        o = {**self.options, "trust": False}
        return _answer.answer(self.ex, self.X[rows], self.tidx[rows], self.names, o, self.memo)


__all__ = ["TreeExplainer"]


class TreeExplainer(BaseExplainer):
    """Exact counterfactuals of tree classifiers: scikit-learn, XGBoost and LightGBM.

    Parameters
    ----------
    model : fitted estimator
        scikit-learn's ``DecisionTreeClassifier`` / ``ExtraTreeClassifier``,
        ``RandomForestClassifier``, ``ExtraTreesClassifier``, ``GradientBoostingClassifier`` or
        ``HistGradientBoostingClassifier``; XGBoost's ``XGBClassifier`` (``gbtree``:
        ``binary:logistic``, ``multi:softprob``, ``multi:softmax``); LightGBM's
        ``LGBMClassifier`` (``binary``, ``cross_entropy``, ``multiclass``; ``gbdt``, ``dart``,
        ``goss``, ``rf``);
        a bare ``Booster`` of either (``xgboost.train``, ``lightgbm.train``), read as its
        classifier reads it (classes 0 … K−1; :mod:`fastcf._trees.boosters`).
        Binary or multiclass. Each library's own split rule and arithmetic are reproduced (the
        module docstrings of :mod:`fastcf._trees`), and its routing of missing values (NaN in a
        query: :meth:`explain`). HistGradientBoosting's native categorical features (numeric
        category values) are taken: an answer moves a category to another the model knows at
        the cost ``w_f`` (L0-style), or keeps it; XGBoost's and LightGBM's categorical splits
        are refused.

    Attributes
    ----------
    model : estimator
        The model given (a bare ``Booster`` inside its
        :class:`~fastcf._trees.boosters.BoosterClassifier`).
    classes_ : ndarray
    n_features_in_ : int
    feature_names_in_ : ndarray of str or None
        The model's, when it was fitted on a DataFrame.
    mad_ : ndarray or None
        Set by :meth:`fit_mad` or :meth:`fit_data` (for ``weights="mad"``).
    n_data_regions_ : int or None
        The number of the model's regions (leaf combinations) that hold a training row, set by
        :meth:`fit_data` (for ``plausible=True``).

    Raises
    ------
    TypeError
        ``model`` is not a supported tree classifier (a regressor, another library's model).
    ValueError
        ``model`` is not fitted, has several outputs, uses a configuration that is not
        supported (an XGBoost model fitted on pandas categories, HistGradientBoosting's
        non-numeric categories, XGBoost's dart/gblinear, LightGBM's linear trees, ...:
        the message names it), or fastcf's parsed copy disagrees with it (on rows placed on
        and next to every split value, and on rows with NaN where the model routes them).

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> from fastcf import TreeExplainer
    >>> X, y = make_classification(200, 4, random_state=0)
    >>> rf = RandomForestClassifier(n_estimators=10, max_depth=3, random_state=0).fit(X, y)
    >>> ex = TreeExplainer(rf)
    >>> target = 1 - rf.predict(X[:1])[0]
    >>> res = ex.explain(X[0], target)
    >>> bool(res.success), res.method, bool(rf.predict(res.x[None])[0] == target)
    (True, 'milp', True)
    """

    _has_proba = True
    n_data_regions_: int | None = None
    _regions = None  # the training regions (fastcf._trees.plausible.Regions), set by fit_data
    _allow_nan = True  # missing values the model routes (fastcf._trees.missing)

    def __init__(self, model):
        if is_booster(model):  # xgboost.train / lightgbm.train: read as their classifiers
            model = BoosterClassifier(model)
        forest = parse_model(model)
        self.model = model
        self._forest = forest
        self._set_classes(model.classes_)
        self.n_features_in_ = forest.n_features
        names = getattr(model, "feature_names_in_", None)
        self.feature_names_in_ = None if names is None else np.asarray(names, dtype=object)
        # (a model with categorical splits is answered conditioned on its categories)
        one = forest.n_trees == 1 and forest.categories is None
        self._table = leaf_table(forest) if one else None
        self._program = None  # built on the first ensemble query
        self._builds = Builds(1)  # its construction, where a time limit stopped it (answer.program)
        # the leaf tables and programs of the queries' NaN patterns (conditioned forests)
        self._patterns = Patterns(forest, {"leaves": leaf_table, "milp": program})

    def fit_mad(self, X):
        """Store the per-feature MAD of ``X`` (``weights="mad"``) and the categories it holds.

        As :meth:`fastcf.LinearExplainer.fit_mad` (``X``: the training data, NaN allowed;
        returns self); an XGBoost model's categorical features then offer the categories of
        ``X`` only (:meth:`fastcf._trees.categorical.Categories.offer_seen`).
        """
        super().fit_mad(X)
        if self._forest.categories is not None:
            rows, _, _ = as_queries(X, self.n_features_in_, self.feature_names_in_, name="X")
            self._forest.categories.offer_seen(rows)
        return self

    def fit_data(self, X):
        """Store what the training data gives the options: its MAD and the regions it lies in.

        :meth:`fit_mad` (for ``weights="mad"``) plus the model's regions that hold a training
        row — the boxes of the leaf combinations the rows reach, where the model is constant —
        with the class and probabilities the model gives each (its own ``predict`` /
        ``predict_proba`` on the rows), for ``plausible=True`` (:mod:`fastcf._trees.plausible`).

        Parameters
        ----------
        X : array_like of shape (N, D)
            Training data (within the range the library reads exactly). Rows with a missing
            value are left out of the regions (they lie in no numeric box); a model with
            categorical features gets the MAD only (``plausible=True`` refuses it).

        Returns
        -------
        self

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.tree import DecisionTreeClassifier
        >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> ex = TreeExplainer(DecisionTreeClassifier(random_state=0).fit(X, [0, 0, 0, 1]))
        >>> ex.fit_data(X).n_data_regions_  # the tree's 3 leaves: x0 <= .5; x1 <= .5; else
        3
        """
        from ._trees.plausible import fit_data

        self.fit_mad(X)
        X, _, _ = as_queries(X, self.n_features_in_, self.feature_names_in_, name="X")
        _answer.check_domain(self._forest, X, "X")
        self._regions = fit_data(self, X)  # (None: plausible=True refuses the model)
        self.n_data_regions_ = None if self._regions is None else int(self._regions.cls.size)
        return self

    def _in_target(self, X, tidx, proba=None, memo=None):
        """Which rows of X the model's own ``predict`` puts in their target (and ``p >= τ``).

        ``memo``: a dict that keeps the model's ``predict_proba`` of each row asked about (by
        the row's bytes), for :meth:`_probabilities` to report without asking again.
        """
        label, P = ask(self.model, model_input(self.model, X))
        P = np.asarray(P, dtype=np.float64)
        if memo is not None:
            for i in range(X.shape[0]):
                memo[X[i].tobytes()] = P[i].copy()
        ok = np.asarray(label) == self.classes_[tidx]
        if proba is not None:
            ok &= P[np.arange(X.shape[0]), tidx] >= proba
        return ok

    def _probabilities(self, X, memo):
        """Return the model's ``predict_proba`` of the rows X (those in ``memo``: not asked)."""
        P = np.empty((X.shape[0], self.classes_.size))
        miss = []
        for i in range(X.shape[0]):
            p = memo.get(X[i].tobytes())
            if p is None:
                miss.append(i)
            else:
                P[i] = p
        if miss:
            R = model_input(self.model, X[miss])
            # (the model's own predict_proba, through ask: a few rows of a gradient-boosting
            # model on one thread, fastcf._confirm)
            P[miss] = np.asarray(ask(self.model, R)[1], dtype=np.float64)
        return P

    def explain(
        self,
        x,
        target,
        *,
        region=True,
        proba=None,
        metric="manhattan",
        weights=None,
        frozen=None,
        bounds=None,
        max_changes=None,
        exact=True,
        method="auto",
        time_limit=None,
        n_jobs=None,
        plausible=False,
        verify="fold",
    ):
        """Find the closest input that the model classifies as ``target``.

        Parameters
        ----------
        x : array_like of shape (D,) or (N, D)
            The source instance(s); pandas Series/DataFrame keep their feature names. Values
            must be finite or NaN and within the range the library reads exactly (the float32
            range for scikit-learn's trees and XGBoost, which cast to float32). A NaN is a
            missing value, routed by the model's own rule (HistGradientBoosting's
            ``missing_go_to_left``, scikit-learn trees' and forests' ``missing_go_to_left``,
            XGBoost's ``default_left``, LightGBM's missing type and ``default_left``): it stays
            NaN in the answer, as a frozen feature (a counterfactual does not impute), the
            other features move, the distance ignores it and ``changed`` never lists it. A
            categorical feature (HistGradientBoosting, LightGBM, XGBoost) holds a category
            value, read as the library reads it (LightGBM and XGBoost: an integer cast; a value
            that is no category goes where the library sends it). An answer keeps it or moves
            it to a category the model knows (within ``bounds``), each change costing ``w_f``
            (``w_f²`` under the Euclidean root) and counting for ``max_changes``: the exact
            answer over every combination (:mod:`fastcf._trees.categorical`; ≤ 4096).
        target : label or array_like of N labels
            Class label(s) as in ``classes_``.
        region : bool, default=True
            The answer is classified as the target (the model's ``predict``; a tie between
            classes goes to the first, as ``np.argmax``). Trees need no margin: the answer is
            a representable input on the correct side of every split.
        proba : float, optional
            τ ∈ (0, 1): also ``predict_proba(x)[target] >= τ``.
        metric : {"manhattan", "euclidean", "l0"}, default="manhattan"
            ``Σ w_i |x_i − x̄_i|``, ``‖w ∘ (x − x̄)‖₂`` or ``Σ w_i [x_i ≠ x̄_i]`` (the number of
            changed features with unit weights).
        weights : array_like of shape (D,) or "mad", optional
            Per-feature costs w (ones by default); ``"mad"``: 1/MAD from :meth:`fit_mad`.
        frozen : sequence of int or str, optional
            Features that must not change (indices or feature names).
        bounds : (lo, hi), optional
            Per-feature box: scalars, arrays of shape (D,) or (N, D); ±inf allowed.
        max_changes : int, optional
            At most this many features change.
        exact : bool, default=True
            ``False``: the quick search alone (ensembles: greedy and beam searches of
            single-feature moves, no program), with a certified lower bound on the distance
            in ``info["bound"]``; status 0 when the bound proves the answer optimal, else 1 (a
            valid answer, not certified the closest). One tree is always answered exactly.
        method : {"auto", "leaves", "milp"}, default="auto"
            ``"leaves"``: the enumeration of one tree's leaves (the default for one tree);
            ``"milp"``: the mixed-integer program (the default for ensembles; also takes one
            tree).
        time_limit : float, optional
            Seconds for the mixed-integer program of each query. Stopped with an answer the
            model confirms: ``success=True``, status 1, ``info["gap"]`` its relative gap and
            ``info["bound"]`` a lower bound on the distance; without one: ``success=False``.
        n_jobs : int, optional
            Threads for an ensemble's batch: None (the default) every core (Numba's thread
            count, ``NUMBA_NUM_THREADS``), ``k`` at most k, ``-1`` every core. Each thread
            takes the next row not yet taken (rows of very different costs keep every core
            busy); the answers are those of one thread, bit for bit, but for a row stopped
            by ``time_limit`` (it depends on the clock).
        plausible : bool, default=False
            ``True``: the answer lies in a region of the model (the box of a combination of
            one leaf per tree, where the model is constant) that holds a training row given to
            :meth:`fit_data`: the closest point over those regions of the target, with every
            other option (exact, by enumeration of the regions: :mod:`fastcf._trees.plausible`;
            ``method``, ``exact`` and ``time_limit`` do not apply). ``success=False``, status
            2, when no such region is in the target (or meets ``proba``); status 3 when the
            options exclude every one.
        verify : {"fold", "model"}, default="fold"
            Who confirms a success: for a tree model both are the model's own ``predict``
            (and ``predict_proba`` for ``proba=``); ``"model"`` asks it once more after the
            answer is packaged, as :meth:`fastcf.LinearExplainer.explain` does.

        Returns
        -------
        Counterfactual or CounterfactualBatch
            A batch when ``x`` is 2-D (a failure's ``x`` is the query, NaN included). ``info``:
            ``gap`` (0 when proven optimal), ``bound``,
            ``nodes`` (branch-and-bound nodes); ``nit`` counts the programs solved (1 plus one
            per cut of a near-tie; 0 when the incumbent is proven optimal without one, and for
            the leaf enumeration). An ensemble's batch solves its rows on ``n_jobs`` threads.

        Raises
        ------
        ValueError
            An option out of its range (the message names it); a value of ``x`` outside the
            library's range or infinite; a NaN in ``x`` that the model cannot route (its own
            ``predict`` refuses NaN: ``GradientBoostingClassifier``): the message names the
            feature and the row; more than 4096 combinations of free categories in a query
            (freeze some).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.tree import DecisionTreeClassifier
        >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> tree = DecisionTreeClassifier(random_state=0).fit(X, [0, 0, 0, 1])
        >>> res = TreeExplainer(tree).explain([0.0, 0.0], target=1)
        >>> res.x.tolist(), res.method  # the first float64 past the float32 split, no epsilon
        ([0.5000000298023225, 0.5000000298023225], 'leaves')
        >>> tree.predict(res.x[None]).tolist(), tree.predict([[0.5000000298023224, 0.6]]).tolist()
        ([1], [0])

        ``plausible=True``: only regions that hold training data (:meth:`fit_data`):

        >>> from sklearn.ensemble import RandomForestClassifier
        >>> rng = np.random.default_rng(0)
        >>> Xt = rng.normal(size=(200, 3))
        >>> rf = RandomForestClassifier(10, max_depth=3, random_state=0).fit(Xt, Xt[:, 0] > 0)
        >>> ex = TreeExplainer(rf).fit_data(Xt)
        >>> res = ex.explain([-1.0, 0.0, 0.0], True, plausible=True)
        >>> bool(res.success), res.method, bool(rf.predict(res.x[None])[0])
        (True, 'plausible', True)
        >>> bool(res.distance >= ex.explain([-1.0, 0.0, 0.0], True).distance)
        True

        A missing value stays missing; the model routes it and the other features move:

        >>> from sklearn.ensemble import HistGradientBoostingClassifier
        >>> rng = np.random.default_rng(0)
        >>> Xt = rng.normal(size=(300, 2))
        >>> yt = (Xt[:, 0] + Xt[:, 1] > 0).astype(int)
        >>> Xt[::5, 0] = np.nan
        >>> gb = HistGradientBoostingClassifier(max_iter=10, random_state=0).fit(Xt, yt)
        >>> res = TreeExplainer(gb).explain([np.nan, -1.0], target=1)
        >>> bool(np.isnan(res.x[0])), res.changed.tolist(), gb.predict(res.x[None]).tolist()
        (True, [1], [1])
        """
        options = dict(
            region=region, proba=proba, metric=metric, weights=weights, frozen=frozen,
            bounds=bounds, max_changes=max_changes, exact=exact, method=method,
            time_limit=time_limit, plausible=plausible,
        )  # fmt: skip
        return _stage.run(self, x, target, options, verify=verify, exact=exact, n_jobs=n_jobs)

    def enumerate(self, x, target, k=5, *, max_nodes=1000, **options):
        """Several alternative counterfactuals of each query, cheapest first (Lawler's scheme).

        Up to ``k`` answers in increasing distance such that no answer's set of changed
        features contains the set of a cheaper answer in the list (actionable-recourse's
        flipsets), as :meth:`fastcf.LinearExplainer.enumerate`. The first answer is
        :meth:`explain`'s; each alternative is the exact answer of the query with some more
        features frozen (:mod:`fastcf._alternatives`).

        Parameters
        ----------
        x : array_like of shape (D,) or (N, D)
            One query, or N (one enumeration each).
        target : label or array_like of N labels
        k : int or None, default=5
            The number of answers; ``None`` returns a lazy iterator over all of them.
        max_nodes : int, default=1000
            Restricted queries solved (one :meth:`explain` each) before the enumeration stops
            (fewer than ``k`` answers are returned then, each with
            ``info["enumeration_stopped"] = "max_nodes"``).
        **options
            :meth:`explain`'s options (``region``, ``proba``, ``metric``, ``weights``,
            ``frozen``, ``bounds``, ``max_changes``, ``exact``, ``method``, ``time_limit``).
            ``time_limit`` bounds the whole enumeration of each query row, from its start:
            each restricted query's :meth:`explain` gets the time the row has left, none is
            solved past it, and the answers found by then are returned (fewer than ``k``),
            with ``info["enumeration_stopped"] = "time_limit"`` (one the limit stopped keeps
            its answer, status 1, so the list may then be out of exact cost order).

        Returns
        -------
        list of Counterfactual, or an iterator of Counterfactual when ``k`` is None
            Empty when the query itself has no answer (:meth:`explain`'s ``message``
            says why). For N queries, a list of N of those.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.tree import DecisionTreeClassifier
        >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> tree = DecisionTreeClassifier(random_state=0).fit(X, [0, 1, 1, 1])
        >>> alts = TreeExplainer(tree).enumerate([0.0, 0.0], 1, k=3)
        >>> [a.changed_index.tolist() for a in alts]
        [[0], [1]]
        """
        from ._alternatives import enumerate_answers

        return enumerate_answers(self, x, target, k, max_nodes, dict(options))

    # ------------------------------------------------------------------ the stage's steps
    def _read(self, X, tidx, names, options):
        """Return the query record of the stage (:mod:`fastcf._stage`): the options, a memo."""
        memo = {}  # the model's probabilities at the rows its predict confirmed while solving
        judge = partial(self._in_target, memo=memo)
        reaim = _Distrust(self, X, tidx, names, options, memo)
        return _Run(options, names, options["proba"], judge, memo, reaim)

    def _solve(self, X, tidx, q):
        """Route and solve (:func:`fastcf._trees.answer.answer`); the stage judges."""
        return _answer.answer(self, X, tidx, q.names, q.options, q.memo)

    def _finish(self, sol, X, tidx, q):
        """Report the model's own probabilities at the judged answers."""
        return sol._replace(proba=self._probabilities(sol.x, q.memo))

    def _query(self, X, names, region, proba, metric, weights, frozen, bounds, max_changes):
        """Check the options of a query and return its :class:`TreeQuery`."""
        return _answer.query(
            self, X, names, region, proba, metric, weights, frozen, bounds, max_changes
        )

    def _milp(self, X, tidx, q, exact=True, plain=False, missing=None, values=None):
        """Answer an ensemble (:func:`fastcf._trees.answer.ensemble`)."""
        return _answer.ensemble(self, X, tidx, q, exact, plain, missing, values)
