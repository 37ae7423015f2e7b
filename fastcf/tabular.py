"""Recourse on tabular data: DataFrames, ColumnTransformer pipelines, exact mixed-integer answers.

:class:`TabularExplainer` explains a fitted scikit-learn pipeline — a ``ColumnTransformer`` of
scalers, one-hot and ordinal encoders, imputers and pass-throughs, ending in a linear
classifier — on the raw columns of a DataFrame. Its answers are real rows: integer columns stay
integral, a categorical column takes exactly one of the categories seen in training, immutable
columns stay put, monotone columns move one way only.

The cost of a change is, by default, the Manhattan distance in MAD units over the numeric
columns, ``Σ_j |x_j − x̄_j| / MAD_j``, plus 1 for every changed categorical column, plus
``|rank − rank̄| / MAD_rank`` for an ordinal column (``weights={column: w}`` sets the cost of a
unit change, a change, a one-rank move). The answer minimises it exactly: the pipeline is folded
into affine scores of the raw columns and one-hot indicators (:mod:`fastcf._tabular.fold`), and
each query is one mixed-integer linear program (:mod:`fastcf._tabular.milp`): for a binary model
without ``max_changes`` a covering knapsack, solved by an exact branch-and-bound
(:mod:`fastcf._tabular.knapsack`, sub-millisecond); otherwise solved by HiGHS to a zero gap.
Every success is then checked by the user's own ``predict`` (and ``predict_proba`` for
``proba=``) on the answer DataFrame. A pipeline ending in a tree model is answered by the tree
program over the raw columns (:mod:`fastcf._tabular.treeprog`), one ending in a ReLU
``MLPClassifier`` by the same mixed-integer program with the network's neurons after the fold
of its first layer (:mod:`fastcf._tabular.netprog`). See ``docs/tabular.md``.

Its answers are every family's result type, :class:`fastcf.Counterfactual` (one row) and
:class:`fastcf.CounterfactualBatch` (several), in their DataFrame form
(:class:`FrameCounterfactual`, :class:`FrameCounterfactualBatch`). ``TabularCounterfactual`` and
``TabularBatch`` are deprecated aliases of those for one release.
"""

from __future__ import annotations

import numpy as np

from . import _stage
from ._tabular.alternatives import row_alternatives
from ._tabular.columns import Schema, describe, resolve_names
from ._tabular.fold import fold_model
from ._tabular.grid import resolve_levels, with_levels
from ._tabular.programs import program_for
from ._tabular.protocol import FrameExplainer, as_frame
from ._tabular.request import read_options, read_request
from ._tabular.results import (
    DEPRECATED,
    FrameCounterfactual,
    FrameCounterfactualBatch,
    deprecated_alias,
)
from ._tabular.solve import Rows, check_fold_on
from ._tabular.treefold import fold_trees, is_tree_pipeline
from ._validation import check_int
from .results import mark_exact

__all__ = ["TabularExplainer", "FrameCounterfactual", "FrameCounterfactualBatch"]


def __getattr__(name):
    # TabularCounterfactual, TabularBatch: deprecated aliases of the classes above (one release)
    if name in DEPRECATED:
        return deprecated_alias(name, __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class TabularExplainer(FrameExplainer):
    """Exact recourse for a linear or prototype classifier behind a tabular pipeline.

    Parameters
    ----------
    model : estimator
        A fitted ``Pipeline`` (or ``make_pipeline``) whose steps before the classifier are a
        ``ColumnTransformer`` (or single steps) of ``StandardScaler``, ``MinMaxScaler``,
        ``MaxAbsScaler``, ``RobustScaler``, ``OneHotEncoder`` (any ``drop=``,
        ``handle_unknown``, infrequent categories), ``OrdinalEncoder``, ``SimpleImputer``,
        ``FunctionTransformer()``, ``"passthrough"`` and ``"drop"`` (each may be a ``Pipeline``
        of these), ending in a classifier :class:`fastcf.LinearExplainer` accepts or in
        fastcf's ``GLVQ``/``GMLVQ`` (one program per prototype of the target: their regions
        are polyhedra), or in a tree model :class:`fastcf.TreeExplainer` takes (its splits
        pushed onto the raw columns: :mod:`fastcf._tabular.treefold`; ``margin`` is unused),
        or in an ``MLPClassifier`` with ReLU or identity hidden layers (its neurons in the
        program: :mod:`fastcf._tabular.netprog`; ``tanh`` and ``logistic`` are refused);
        or such a classifier alone. Anything else raises a ``TypeError`` naming the step.
    X_train : pandas.DataFrame
        The training data (raw columns): it gives the categories an answer may take, the
        default bounds (each numeric column's training range), the MAD of each column (the
        cost unit) and the integer columns.
    immutable : list of str, optional
        Columns that never change (a row whose value ``bounds``/``allowed`` exclude: status 3).
    increase_only, decrease_only : list of str, optional
        Columns that may only go up (down); for an ordinal column, up (down) its order: an
        ordered pandas ``Categorical``'s dtype order, whatever codes its encoder gives.
    integer : list of str, optional
        Integer columns (integral in every answer). ``None``: the numeric columns whose training
        values are all integral. Integer and bool dtypes are integer in any case.
    categorical : list of str, optional
        ``None``: the columns the model encodes. Given, it must list exactly those.
    resolution : dict, optional
        ``{column: r}``: the answer's value of a numeric column is a multiple of r, and a move
        a whole number of steps (``None``: continuous). By default inferred from the training
        values: 1 for integers, 10⁻ᵈ for values recorded to d ≤ 6 decimals (27.2 → 0.1),
        continuous otherwise (``resolution_`` shows it). Answers are exact optima on the grid.
        A query value off its column's grid is refused (naming the column).
    levels : dict, optional
        ``{column: [values]}``: the values a numeric column may take (a loan term of 36 or 60
        months); answers keep the column at one of them, at the cost of the distance moved.
        By default a numeric column whose training values take at most 12 values, with gaps
        on its grid, has those levels (``kinds_`` says ``"levels"``, ``levels_`` lists them);
        ``{column: None}`` gives it its grid instead (so does a ``resolution=`` for it).
    weights : dict, optional
        ``{column: w}``: the cost of a unit change of a numeric column (default ``1 / MAD``),
        of a change of a categorical column (default 1), of a one-rank move of an ordinal
        column (default ``1 / MAD`` of the ranks).

    Attributes
    ----------
    classes_ : ndarray
    n_features_in_ : int
        The number of the model's columns.
    feature_names_in_ : ndarray of str
        The model's columns, in its order (answers have them).
    probabilistic_ : bool
        Whether the model has probabilities (answers then carry ``proba``).
    kinds_ : dict
        Column -> ``"integer"``, ``"numeric"`` (on a decimal grid: ``resolution_``),
        ``"continuous"`` (no grid: an answer may move it by any amount), ``"levels"``,
        ``"categorical"``, ``"ordinal"`` or ``"unused"`` (a column the model drops).
    resolution_ : dict
        Numeric column -> its resolution (``None``: continuous; see ``resolution``).
    levels_ : dict
        Column -> the values it may take (see ``levels``).
    mad_ : dict
        Numeric column -> its MAD in the training data (the unused ones' too): keyed by column,
        where the array families hold an array (set at construction: there is no ``fit_mad``).
    weights_ : dict
        Column -> the cost unit in use.

    Notes
    -----
    The program of a query (see :mod:`fastcf._tabular.milp`) minimises the cost over the
    numeric changes (integer variables for integer columns) and one 0/1 indicator per category
    of each encoded column, subject to the target's region (a linear constraint on the folded
    scores, with a margin), the bounds and each column's dtype range, the immutable and monotone
    columns, the allowed categories and ``max_changes``. It is solved exactly — by a
    branch-and-bound on its greedy relaxation for a binary model without ``max_changes`` (a
    covering knapsack), by HiGHS to a zero gap otherwise: ``status == 0`` means the certified
    optimum. A success is returned only when the model's own ``predict`` on the answer DataFrame
    agrees; if rounding defeats the margin, the query is re-solved with a larger one. An
    unsolvable query returns ``success=False`` with the reason in ``message``.

    A :class:`~fastcf._base.BaseExplainer` (its judge: the pipeline's own ``predict``) whose
    ``explain`` passes through the one stage (:func:`fastcf._stage.run`) on DataFrames, its
    options read into :class:`fastcf._tabular.solve.Rows`; ``fit_mad`` raises a ``TypeError``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from sklearn.compose import make_column_transformer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import OneHotEncoder, StandardScaler
    >>> rng = np.random.default_rng(0)
    >>> X = pd.DataFrame({"income": rng.normal(50, 10, 200).round(),
    ...                   "age": rng.integers(20, 70, 200),
    ...                   "job": rng.choice(["a", "b", "c"], 200)})
    >>> y = (X.income + 10 * (X.job == "c") + rng.normal(0, 5, 200) > 55).astype(int)
    >>> pre = make_column_transformer((StandardScaler(), ["income", "age"]),
    ...                               (OneHotEncoder(), ["job"]))
    >>> model = make_pipeline(pre, LogisticRegression()).fit(X, y)
    >>> tx = TabularExplainer(model, X, immutable=["age"])
    >>> row = X[model.predict(X) == 0].iloc[[0]]
    >>> res = tx.explain(row, target=1)
    >>> bool(res.success), int(model.predict(res.x)[0]), bool(res.x.age.iloc[0] == row.age.iloc[0])
    (True, 1, True)
    >>> float(res.x.income.iloc[0]).is_integer()
    True
    """

    def __init__(
        self,
        model,
        X_train,
        *,
        immutable=None,
        increase_only=None,
        decrease_only=None,
        integer=None,
        categorical=None,
        weights=None,
        resolution=None,
        levels=None,
    ):
        X = as_frame(X_train, "X_train")
        names = getattr(model, "feature_names_in_", None)
        if names is not None:
            missing = [str(c) for c in names if c not in X.columns]
            if missing:
                raise ValueError(
                    f"X_train lacks the model's columns {missing}; pass the training DataFrame"
                )
            X = X[list(names)]
            self._frame_input = True
        else:
            n = getattr(model, "n_features_in_", X.shape[1])
            if X.shape[1] != n:
                raise ValueError(f"X_train has {X.shape[1]} columns; the model reads {n}")
            self._frame_input = False
        if X.shape[0] < 2:
            raise ValueError(f"X_train must have at least 2 rows; got {X.shape[0]}")
        self.model = model
        tree = is_tree_pipeline(model)  # a tree model: its splits on the raw columns
        fold, splits = fold_trees(model, X) if tree else (fold_model(model, X), None)
        lv = resolve_levels(levels, X, resolve_names, fold.numeric, resolution)
        fold = with_levels(fold, X, lv)
        self._schema = Schema(
            X, fold, immutable, increase_only, decrease_only, integer, categorical, weights,
            resolution, lv, on_grid=tree,
        )  # fmt: skip
        self._program = program_for(self._schema, fold, splits, model, X)
        self._set_classes(fold.classes)
        self.n_features_in_ = X.shape[1]
        self.feature_names_in_ = np.asarray([str(c) for c in X.columns], dtype=object)
        self.probabilistic_ = fold.probabilistic
        self._has_proba = bool(fold.probabilistic)  # (answers carry proba)
        self.kinds_, self.resolution_, self.mad_, self.weights_ = describe(self._schema, X)
        self.levels_ = {str(X.columns[c]): v.tolist() for c, v in sorted(lv.items())}
        check_fold_on(self, X)

    def __repr__(self) -> str:
        counts = {}
        for k in self.kinds_.values():
            counts[k] = counts.get(k, 0) + 1
        return (
            f"TabularExplainer({len(self.kinds_)} columns: {counts}, classes={list(self.classes_)})"
        )

    # ------------------------------------------------------------------ queries
    def explain(
        self,
        x,
        target,
        *,
        region=None,
        proba=None,
        margin=1e-6,
        bounds=None,
        allowed=None,
        transitions=None,
        max_changes=None,
        missing="impute",
        time_limit=None,
        n_jobs=None,
        plausible=False,
        metric="manhattan",
        frozen=None,
        exact=True,
        verify="fold",
    ):
        """Find the cheapest change of the row(s) that the model puts in ``target``.

        Parameters
        ----------
        x : pandas.DataFrame, Series or dict
            The query: one row (a Series, a dict, a one-row DataFrame) or several (a DataFrame,
            answered as a batch). It must hold the model's columns. A cell the model reads may
            be missing where the pipeline imputes its column (a ``SimpleImputer`` first on
            every path of the column): the row is explained as the model sees it. A missing
            number is NaN (None and ``pd.NA`` too: the imputer reads them as NaN); a missing
            label must be NaN: None or ``pd.NA`` in a column of labels is refused, since the
            imputer (``missing_values=NaN``) leaves them for the encoder as a label.
        target : label or sequence of labels
            The class asked for (one per row, or one for all).
        region : True, optional
            The default: the answer is classified as ``target`` (scores past the boundary by
            ``margin``).
        proba : float, optional
            τ ∈ (0, 1): ``p_target ≥ τ`` at the answer (classified as the target), by the
            model's ``predict_proba``. Binary models; with more classes, trees and ReLU networks
            (not a linear or prototype softmax model: not a linear condition).
        margin : float, default=1e-6
            Margin on the scores (logits), ≥ 0 (as in every family). Raised 100× and 10 000×
            (at least to 1e-6 and 1e-4) for a row whose answer the model's own ``predict`` does
            not put in the target (rounding).
        bounds : dict, optional
            ``{column: (lo, hi)}``. For a numeric column each side is a number (absolute),
            a string relative to the row (``"+500"``, ``"-10%"``, ``"+20%"``), ``None`` (the
            default: the training range, widened to hold the row) or ``±inf``; bounds outside
            the values of the column's dtype raise. For an ordinal column, two categories
            (``None`` for no bound). A row outside its bounds must move into them.
        allowed : dict, optional
            ``{column: [categories]}``: the categories an encoded column may take (by default
            those seen in training, plus the row's own). A row whose category is not listed
            must change it.
        transitions : dict, optional
            ``{column: {from_category: [to_categories]}}``: the moves an encoded column may
            make. A row whose category is ``a`` may keep it or move to a category of
            ``transitions[column][a]``; a category not listed as a key cannot be left. Applies
            on top of ``allowed``. Example: ``{"Home": {"rent": ["owner"], "parents": ["rent",
            "owner"]}}`` (an owner stays an owner).
        max_changes : int, optional
            At most this many columns change (original columns, not encoded features). Needs
            finite bounds on the numeric columns that may change (the default ones are).
        missing : {"impute", "keep"}, default="impute"
            A missing cell of an imputed column. ``"impute"``: it starts at the value the
            imputer puts there (what the model uses); the answer may fill it in, a change that
            costs its distance from that value, and where it does not the cell stays missing.
            The imputer's value (a mean) may lie off the column's grid: an answer that fills
            the cell puts a grid point there (exact: :mod:`fastcf._tabular.imputed`).
            ``"keep"``: it stays missing (the column is frozen for that row).
        time_limit : float, optional
            Seconds for the exact program of each row of a pipeline ending in a tree model or
            a network (as
            :meth:`fastcf.TreeExplainer.explain`'s; a row re-solved at a raised margin gets what
            its earlier solves left): a row stopped with an answer the model confirms has
            ``success=True``, status 1 (``MAXITER``), ``info["gap"]`` its relative gap and
            ``info["bound"]`` a lower bound on the cost; without one, ``success=False``. Linear
            and prototype programs, exact in milliseconds, accept it and never reach it.
        n_jobs : int, optional
            Accepted (:mod:`fastcf._options`), checked, and unused: a row's time is mostly
            Python (the pipeline's ``predict``), so a batch runs in the calling thread.
        plausible : bool, default=False
            ``True``, for a pipeline ending in a tree model: the answer lies in a region of the
            model (the rows that reach one given leaf in every tree: an interval per numeric
            column, a set of categories per encoded one) that holds a row of ``X_train``, with
            every other option (exact, by enumeration of those regions:
            :mod:`fastcf._tabular.plausible`). No such region in the target: ``success=False``,
            status 2; none within the options: status 3. Other models raise a ``ValueError``.
        metric : {"manhattan"}, default="manhattan"
            The cost: a numeric column's move times its weight, plus a changed category's
            weight (``weights=`` of the constructor); the word every family takes
            (:mod:`fastcf._options`), any other metric is refused.
        frozen : list of str, optional
            Columns held at the row's values for this query, on top of ``immutable``.
        exact : bool, default=True
            Accepted as every family takes it: the programs are exact either way, and
            ``info["exact"]`` says so for every success.
        verify : {"fold", "model"}, default="fold"
            Who confirms a success: either way the pipeline's own ``predict`` (and
            ``predict_proba`` for ``proba=``) on the answer DataFrame.

        Returns
        -------
        FrameCounterfactual or FrameCounterfactualBatch
            A :class:`fastcf.Counterfactual` (``x`` a one-row DataFrame) or, when ``x`` has
            several rows, a :class:`fastcf.CounterfactualBatch` (``x`` an N-row DataFrame). A
            row of a batch that cannot be read (a missing value the model does not impute, an
            unseen category, a value its dtype cannot hold) is returned unchanged with
            ``success=False``, status ``INVALID_INPUT`` and a message naming the column and the
            row's index label; the other rows are answered.

        Raises
        ------
        ValueError
            For one row that cannot be read (naming the column), unknown column names,
            contradictory options, ``proba=`` with a linear softmax model, or a metric other than
            ``"manhattan"``.

        Examples
        --------
        A time limit for a tree pipeline's program (here ample: status 0, the exact answer):

        >>> import numpy as np, pandas as pd
        >>> from sklearn.ensemble import RandomForestClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = pd.DataFrame({"a": rng.normal(size=200).round(2), "b": rng.normal(size=200)})
        >>> rf = RandomForestClassifier(10, max_depth=3, random_state=0).fit(X, X.a + X.b > 0)
        >>> tx = TabularExplainer(rf, X)
        >>> row = X[~rf.predict(X)].iloc[[0]]
        >>> res = tx.explain(row, True, time_limit=10.0)
        >>> bool(res.success), int(res.status), bool(rf.predict(res.x)[0])
        (True, 0, True)
        """
        options = {
            "region": region, "proba": proba, "margin": margin, "bounds": bounds,
            "allowed": allowed, "transitions": transitions, "max_changes": max_changes,
            "missing": missing, "time_limit": time_limit, "plausible": plausible,
            "metric": metric, "frozen": frozen, "exact": exact, "verify": verify,
        }  # fmt: skip
        # (the judge is the pipeline's own predict whatever verify says, and the programs are
        # exact: the stage's own verify and exact are its defaults)
        return _stage.run(self, x, target, options, n_jobs=n_jobs)

    def _read(self, frame, tidx, names, options):
        """Return the query record (:class:`~fastcf._tabular.solve.Rows`) of the read rows."""
        r = read_options(self, frame, False, tidx, options)
        return Rows(self, frame, tidx, r.form, options["bounds"], r.allow, r.frozen,
                    r.max_changes, r.keep, r.time_limit, r.plausible)  # fmt: skip

    def _solve(self, frame, tidx, q):
        """Return the first answers of the query record ``q`` (each row's program)."""
        return q.first()

    def enumerate(
        self,
        x,
        target,
        k=5,
        *,
        region=None,
        proba=None,
        margin=1e-6,
        bounds=None,
        allowed=None,
        transitions=None,
        max_changes=None,
        max_nodes=1000,
        missing="impute",
        time_limit=None,
        plausible=False,
        metric="manhattan",
        frozen=None,
        exact=True,
        verify="fold",
    ):
        """Up to ``k`` alternative answers for each row, cheapest first (flipsets).

        No answer's set of changed columns contains the set of a cheaper answer in the list
        (actionable-recourse's flipsets). Each answer is the exact optimum of the row with some
        columns frozen, found by Lawler's k-best scheme over sets of frozen columns
        (:mod:`fastcf._tabular.alternatives`); the first is :meth:`explain`'s.

        Parameters
        ----------
        x : pandas.DataFrame, Series or dict
            One row, or several (a DataFrame): one list (or iterator) per row.
        target : label or sequence of labels
        k : int or None, default=5
            The number of answers. ``None`` returns a lazy iterator over all of them, as
            :meth:`fastcf.LinearExplainer.enumerate` does.
        region, proba, margin, bounds, allowed, transitions, max_changes, missing, metric
            As in :meth:`explain`.
        frozen, exact, verify
            As in :meth:`explain`.
        time_limit, plausible
            As in :meth:`explain`; ``time_limit`` bounds each row's whole enumeration as
            ``max_nodes`` does (a tree or network program gets the time left and a stopped one
            keeps its answer, so the list may then not be in exact cost order).
        max_nodes : int, default=1000
            Programs solved before the enumeration stops: the answers found by then are
            returned, with ``info["enumeration_stopped"] = "max_nodes"`` (``"time_limit"``).

        Returns
        -------
        list of FrameCounterfactual, or an iterator of them when ``k`` is None
            Empty when the row has no answer (:meth:`explain`'s ``message`` says why). For
            several rows, a list of those, one per row (a row that cannot be read raises its
            ``ValueError`` here: an enumeration has no status to carry it).
        """
        k = None if k is None else check_int(k, "k", lo=1)
        max_nodes = check_int(max_nodes, "max_nodes", lo=1)
        r = read_request(
            self, x, target, region=region, proba=proba, margin=margin,
            max_changes=max_changes, allowed=allowed, transitions=transitions, missing=missing,
            time_limit=time_limit, plausible=plausible, metric=metric, frozen=frozen,
            exact=exact, verify=verify,
        )  # fmt: skip
        out = [
            row_alternatives(self, r.frame.iloc[[i]], r.tidx[i : i + 1], r.form, bounds, r.allow,
                             r.max_changes, max_nodes, k, r.keep, time_limit, r.plausible,
                             r.frozen)
            for i in range(r.frame.shape[0])
        ]  # fmt: skip
        if k is not None:
            mark_exact(out)
        return out[0] if r.single else out
