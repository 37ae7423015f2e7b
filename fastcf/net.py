"""Inverse classification for ReLU networks: the closest input a network puts in a class.

:class:`NetExplainer` reads a fitted scikit-learn ``MLPClassifier`` with ReLU (or identity)
hidden layers, or a PyTorch ``nn.Sequential`` of ``Linear`` and ``ReLU`` layers
(:mod:`fastcf._net.pytorch`), into float64 layers (:mod:`fastcf._net.model`) and answers each
query exactly over the neurons whose sign the query's box leaves open, the others fixed: the
own branch-and-bound of :mod:`fastcf._net.search` on HiGHS's linear programs (Manhattan),
HiGHS's mixed-integer program (:mod:`fastcf._net.program`: L0, ``max_changes``), the
branch-and-bound of :mod:`fastcf._net.euclid` on convex QPs (Euclidean); then the answer's
activation pattern is solved again, where the network is affine, so that the answer is a point
of the network and not of a relaxation. Every success is judged by the model's own
``predict`` (and ``predict_proba`` for ``proba=``; a PyTorch model's own forward pass, in its
own dtype); a refused one is solved again at a larger margin. A model that computes in float32
is aimed, from the first answer, beyond a proven bound of its rounding over the query's box.

The inputs live in a finite box: ``bounds=``, or the training data's range (:meth:`fit_data`),
in which each neuron's pre-activation is bounded (:mod:`fastcf._net.bounds`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _stage
from ._base import BaseExplainer
from ._confirm import ask, model_input
from ._net import answer as _answer
from ._net.model import read_network
from ._net.pytorch import is_torch, read_torch
from ._validation import as_queries

__all__ = ["NetExplainer"]


class _Run(NamedTuple):
    """One network query as the stage carries it (:meth:`NetExplainer._read`)."""

    q: object  # the NetQuery
    proba: float | None
    reaim: object  # the re-aim policy (:class:`fastcf._net.answer.RaiseMargin`)


class NetExplainer(BaseExplainer):
    """Exact counterfactuals of ReLU networks (scikit-learn ``MLPClassifier``, PyTorch).

    Parameters
    ----------
    model : MLPClassifier or torch.nn.Sequential
        A fitted ``MLPClassifier`` with ``activation="relu"`` or ``"identity"`` (alone or after
        a pipeline of affine steps), binary or multiclass; or a PyTorch ``nn.Sequential`` of
        ``Linear`` layers with ``ReLU`` between them, ending in a ``Linear`` layer of logits
        (one logit: binary, class 1 iff the logit is > 0; K logits: the first largest), on the
        CPU, in any floating dtype (PyTorch is imported only for such a model). It is read,
        never changed: a PyTorch model's own forward pass (under ``torch.no_grad()``, on rows
        cast to its dtype) judges every answer.
    classes : array_like, optional
        PyTorch models only: the labels of the classes (K, or 2 for one logit); 0 … K−1 by
        default. A scikit-learn model carries its own ``classes_``.

    Attributes
    ----------
    model : MLPClassifier
        The model given.
    classes_ : ndarray
    n_features_in_ : int
    feature_names_in_ : ndarray of str or None
    mad_ : ndarray or None
        Set by :meth:`fit_mad` or :meth:`fit_data` (for ``weights="mad"``).
    data_box_ : (lo, hi) or None
        The training data's range per feature, set by :meth:`fit_data`: the box of queries that
        give no ``bounds=`` (stretched to hold each query x̄).

    Raises
    ------
    TypeError
        ``model`` is not an ``MLPClassifier`` nor an ``nn.Sequential``, or a layer is not one of
        those above (named).
    ValueError
        It is not fitted, its hidden activation is ``tanh`` or ``logistic`` (not piecewise
        linear: no exact program), it is multilabel; a PyTorch model ends in ReLU, is on
        another device, has Dropout in training mode; ``classes`` does not fit it.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.neural_network import MLPClassifier
    >>> from fastcf import NetExplainer
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(300, 2)); y = (X[:, 0] * X[:, 1] > 0).astype(int)
    >>> mlp = MLPClassifier((8,), solver="lbfgs", max_iter=5000, random_state=0).fit(X, y)
    >>> ex = NetExplainer(mlp).fit_data(X)
    >>> x = np.array([0.5, -0.5])
    >>> res = ex.explain(x, 1 - mlp.predict(x[None])[0])
    >>> bool(res.success), res.method, bool(mlp.predict(res.x[None])[0] != mlp.predict(x[None])[0])
    (True, 'milp', True)

    PyTorch networks: :mod:`fastcf._net.pytorch` and the networks page.
    """

    _has_proba = True
    data_box_ = None
    _data = None  # the training rows (fit_data): the incumbents' candidates

    def __init__(self, model, classes=None):
        if is_torch(model):
            self._net, self._judge = read_torch(model, classes)
            names = None
        else:
            if classes is not None:
                raise ValueError(
                    "classes= names a PyTorch model's outputs; a scikit-learn model carries its "
                    "own classes_"
                )
            self._net, self._judge = read_network(model), model
            names = getattr(model, "feature_names_in_", None)
        self.model = model
        self._set_classes(self._judge.classes_)
        self.n_features_in_ = int(self._net.W[0].shape[1])
        self.feature_names_in_ = None if names is None else np.asarray(names, dtype=object)

    @property
    def _asked(self):
        return self._judge

    def fit_data(self, X):
        """Store the training data's range (the queries' default box) and its MAD.

        Parameters
        ----------
        X : array_like of shape (N, D)
            Training data (finite).

        Returns
        -------
        self
        """
        self.fit_mad(X)
        X, _, _ = as_queries(X, self.n_features_in_, self.feature_names_in_, name="X")
        if X.shape[0] == 0:
            raise ValueError("X must hold at least one row")
        self.data_box_ = (X.min(axis=0), X.max(axis=0))
        self._data = X.copy()
        return self

    def _in_target(self, X, tidx, proba=None):
        """Which rows of X the model's own ``predict`` puts in their target (and ``p >= τ``).

        Each row alone, as a user checks one answer: the network's matrix products round a
        row's logits by the rows beside it, and an answer on a tie (a logit exactly 0, which
        ``predict`` gives the first class) or at p = τ is decided by that rounding
        (``docs/scripts/soak_net.py``: seed 62, example 36, a batch's answer that the stacked
        rows put in the target and the row alone did not; before it, a batch's answer at
        p = τ). A row's check costs a forward pass of one row, small beside its program.
        """
        ok = np.zeros(X.shape[0], dtype=bool)
        for i in range(X.shape[0]):
            label, P = ask(self._judge, model_input(self._judge, X[i : i + 1]), proba is not None)
            ok[i] = np.asarray(label)[0] == self.classes_[tidx[i]]
            if proba is not None and ok[i]:
                ok[i] = float(np.asarray(P, dtype=np.float64)[0, tidx[i]]) >= proba
        return ok

    def explain(
        self,
        x,
        target,
        *,
        region=True,
        proba=None,
        margin=1e-6,
        metric="manhattan",
        weights=None,
        frozen=None,
        bounds=None,
        max_changes=None,
        exact=True,
        time_limit=None,
        n_jobs=None,
        verify="fold",
    ):
        """Find the closest input that the network classifies as ``target``.

        Parameters
        ----------
        x : array_like of shape (D,) or (N, D)
            The source instance(s); pandas Series/DataFrame keep their feature names.
        target : label or array_like of N labels
            Class label(s) as in ``classes_``.
        region : bool, default=True
            The answer is classified as the target: its logit exceeds every other by
            ``margin`` (binary: the one logit is ≥ ``margin``, or ≤ −``margin`` for the
            first class).
        proba : float, optional
            τ ∈ (0, 1): also ``predict_proba(x)[target] >= τ``. Binary: the logit beyond
            logit τ (exact); multiclass: tangent cuts of log-sum-exp until the answer meets τ
            (:mod:`fastcf._net.proba`; exact for a margin of 1e-6 on log(1/τ)).
        margin : float, default=1e-6
            The margin aimed at on the logits, beyond the logit the question asks (0; logit
            τ for ``proba=τ``); raised for the rows the model's own ``predict`` refuses (an
            answer on a tie). A float32 model's answers aim beyond its rounding as well.
        metric : {"manhattan", "l0", "euclidean"}, default="manhattan"
            ``Σ w_i |x_i − x̄_i|``, ``Σ w_i [x_i ≠ x̄_i]``, or ``sqrt(Σ (w_i (x_i − x̄_i))²)``
            (an own branch-and-bound over the activation patterns with convex quadratic
            relaxations: :mod:`fastcf._net.euclid`; not with ``max_changes``).
        weights : array_like of shape (D,) or "mad", optional
            Per-feature costs w (ones by default); ``"mad"``: 1/MAD from :meth:`fit_data`.
        frozen : sequence of int or str, optional
            Features that must not change (indices or feature names).
        bounds : (lo, hi), optional
            The box: scalars, arrays of shape (D,) or (N, D). Without it, the training data's
            range (:meth:`fit_data`); without either, a ValueError.
        max_changes : int, optional
            At most this many features change (exact: a binary variable per feature).
        exact : bool, default=True
            ``False``: the fast valid answer alone (Manhattan: the steepest single-feature
            moves from x̄; and the nearest training rows of the target from :meth:`fit_data`
            walked to the boundary; each solved in its activation pattern), with a certified
            lower bound on the distance in ``info["bound"]`` (CROWN's linear bound of the
            target's logits over the box ∩ the answer's ball, a knapsack; the program's linear
            relaxation where few neurons are unstable): status 0 when the bound proves it
            optimal (within a relative 1e-8), else 1. Without one (L0 without training rows,
            ``max_changes``) the exact program answers.
        time_limit : float, optional
            Seconds for each row, from its start (the first answer, then the bounds'
            tightening, the search, HiGHS's program, the ``proba=`` cuts): stopped with an
            answer, ``success=True``, status 1, ``info["gap"]`` its relative gap and
            ``info["bound"]`` a lower bound on the distance; without one, ``success=False``.
        n_jobs : int, optional
            Threads of a batch (as :meth:`fastcf.TreeExplainer.explain`).
        verify : {"fold", "model"}, default="fold"
            Both ask the model's own ``predict``; ``"model"`` asks once more after packaging.

        Returns
        -------
        Counterfactual or CounterfactualBatch
            ``info``: ``gap`` (0 when proven optimal), ``bound`` (a lower bound on the
            distance), ``nodes`` (branch-and-bound nodes), ``exact``.

        Raises
        ------
        ValueError
            An option out of its range (named), no finite box, ``metric="euclidean"`` with
            ``max_changes``.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.neural_network import MLPClassifier
        >>> X = np.random.default_rng(1).uniform(0, 1, size=(200, 3))
        >>> y = X.sum(axis=1) > 1.5
        >>> mlp = MLPClassifier((6,), solver="lbfgs", max_iter=5000, random_state=0).fit(X, y)
        >>> ex = NetExplainer(mlp)
        >>> res = ex.explain([0.2, 0.2, 0.2], True, bounds=(0, 1), max_changes=2)
        >>> bool(res.success), len(res.changed_index) <= 2, bool(res.info["gap"] == 0)
        (True, True, True)
        >>> bool(mlp.predict(res.x[None])[0])
        True
        """
        options = dict(
            region=region, proba=proba, margin=margin, metric=metric, weights=weights,
            frozen=frozen, bounds=bounds, max_changes=max_changes, time_limit=time_limit,
            exact=exact,
        )  # fmt: skip
        return _stage.run(self, x, target, options, verify=verify, exact=exact, n_jobs=n_jobs)

    def enumerate(self, x, target, k=5, *, max_nodes=1000, **options):
        """Several alternative counterfactuals of each query, cheapest first (Lawler's scheme).

        As :meth:`fastcf.TreeExplainer.enumerate`: up to ``k`` answers in increasing
        distance, none of whose changed features contains those of a cheaper one; each is the
        exact answer of the query with some more features frozen. ``max_nodes`` and
        ``time_limit`` (seconds for the whole enumeration of each query row) stop it as there.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.neural_network import MLPClassifier
        >>> X = np.random.default_rng(1).uniform(0, 1, size=(200, 3))
        >>> y = X.sum(axis=1) > 1.5
        >>> mlp = MLPClassifier((6,), solver="lbfgs", max_iter=5000, random_state=0).fit(X, y)
        >>> alts = NetExplainer(mlp).fit_data(X).enumerate([0.2, 0.2, 0.2], True, k=2)
        >>> len(alts), bool(alts[0].distance <= alts[1].distance)
        (2, True)
        """
        from ._alternatives import enumerate_answers

        return enumerate_answers(self, x, target, k, max_nodes, dict(options))

    # ------------------------------------------------------------------ the stage's steps
    def _read(self, X, tidx, names, options):
        """Return the query record of the stage: the checked query, its re-aim policy."""
        o = options
        q = _answer.query(self, X, names, o["region"], o["proba"], o["margin"], o["metric"],
                          o["weights"], o["frozen"], o["bounds"], o["max_changes"],
                          o["time_limit"], o["exact"])  # fmt: skip
        return _Run(q, q.proba, _answer.RaiseMargin(self, X, tidx, q))

    def _solve(self, X, tidx, run):
        """Route and solve (:func:`fastcf._net.answer.answer`); the stage judges."""
        return _answer.answer(self, X, tidx, run.q)

    def _finish(self, sol, X, tidx, run):
        """Report the model's own probabilities at the judged answers."""
        P = self._judge.predict_proba(model_input(self._judge, sol.x))
        P = np.asarray(P, dtype=np.float64)
        return sol._replace(proba=P)
