"""EnumSV: the top-k SVM models with distinct support-vector sets (paper 003).

For a data set (x_i, y_i), i = 1..n, a kernel k and C > 0, every index subset S ⊆ [n] gives a
constrained SVM, the dual maximised with α_i = 0 for i ∉ S (the SVM trained on S)::

    f(α) = Σ α_i − ½ Σ_ij α_i α_j y_i y_j k(x_i, x_j),   0 ≤ α ≤ C,  Σ y_i α_i = 0.

EnumSV (Algorithm 1, Lawler's scheme) lists the distinct optima α*(S) — distinct by their support
{i : α_i > support_tol} — in descending order of f. A max-heap holds triples (α, S, F); the best
is popped and output unless its support was output before, then branched on every
i ∈ supp(α) − F into the child S − {i}, with i added to F for the later siblings (so no subset is
searched twice). Proposition 1 (removing indices outside the support leaves α unchanged) is what
makes branching on the support alone enough.

Each child is solved warm-started from its parent's α (see :mod:`fastcf._kernels.smo`): the
removed index's mass is moved to the other α's so that the start stays feasible, an exact
active-set step re-solves the KKT system on the free set, and SMO (libsvm's second-order working
set selection) finishes whatever the active-set step could not, to the KKT tolerance ``tol``.

Degenerate children
-------------------
A subset that holds a single class admits only α = 0, which is not an SVM (no decision
boundary); such a child — and its whole subtree, whose subsets hold at most that one class — is
skipped. A subset with both classes always has a non-zero optimum, so an empty support only
appears through a degenerate child. The skipped children are counted in
``SVMEnumeration.n_degenerate``.

Uniqueness
----------
Assumption 1 of the paper asks the solver to be deterministic. Here the same warm start and the
same subset always give bit-identical α, and the enumeration is a deterministic function of its
input. When the dual has a unique optimum (e.g. a strictly positive definite kernel matrix, or
data in general position) the support of α*(S) is a property of S and the enumeration is exact;
when it has many optima (ties, duplicated points) the support found can depend on the warm
start, as it would for any solver.
"""

from __future__ import annotations

import heapq
import numbers
import time
import warnings

import numpy as np

from fastcf._kernels import STATUS_MAXITER
from fastcf._validation import as_float_array

__all__ = [
    "SVMEnumerator",
    "SVMEnumeration",
    "EnumeratedSVM",
    "enumerate_svms",
    "hinge_loss",
    "demographic_parity",
    "bench_rows",
]

_KINDS = {"linear": 0, "poly": 1, "rbf": 2, "sigmoid": 3, "precomputed": 4}
_SOLVERS = ("smo", "sklearn")
_STATUS_TEXT = {0: "converged", 1: "iteration limit reached", 8: "degenerate (single class)"}


def _smo():
    # imported on first use so that ``import fastcf.svm_enum`` does not compile kernels
    from fastcf._kernels import smo

    return smo


# ---------------------------------------------------------------------------------------------
# the models
# ---------------------------------------------------------------------------------------------


class _KernelSpec:
    """The training data and kernel shared by every model of one enumeration."""

    def __init__(self, X, kind, gamma, coef0, degree, n_features_in):
        self.X = X
        self.kind = kind
        self.gamma = gamma
        self.coef0 = coef0
        self.degree = degree
        self.n_features_in = n_features_in


class EnumeratedSVM:
    """One model of the enumeration: a binary SVM trained on a subset of the data.

    Follows :class:`sklearn.svm.SVC`'s conventions: ``decision_function(X) > 0`` means
    ``classes_[1]``, ``dual_coef_[0] = y_i α_i`` over the support vectors with y_i = +1 for
    ``classes_[1]`` and −1 for ``classes_[0]``.

    Attributes
    ----------
    rank : int
        1-based position in the enumeration (0 for a model solved outside of it).
    objective : float
        The dual objective f(α) = Σα − ½ αᵀQα (larger is better).
    alpha : ndarray of shape (n,)
        The Lagrange multipliers over the whole training set (zero outside the subset).
    support_ : ndarray of int
        Sorted indices of the support vectors, {i : α_i > support_tol}.
    support_vectors_ : ndarray of shape (n_SV, n_features)
        The support vectors (shape (n_SV, 0) for a precomputed kernel, as in scikit-learn).
    dual_coef_ : ndarray of shape (1, n_SV)
        ``y_i α_i`` over the support vectors.
    intercept_ : ndarray of shape (1,)
        b, as libsvm computes it: the mean of −y_i G_i over the free support vectors
        (0 < α_i < C), or the midpoint of the feasible interval when none is free.
    classes_ : ndarray of shape (2,)
        The two class labels, sorted.
    n_support_ : ndarray of shape (2,)
        Number of support vectors of each class.
    removed_ : tuple of int
        The indices removed on the search path: the model was trained on [n] minus these.
    n_iter_ : int
        Solver iterations for this model (SMO iterations plus active-set pivots).
    status : int
        0 = converged, 1 = iteration limit reached.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcf import enumerate_svms
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0], [4.0, 0.0]])
    >>> best = enumerate_svms(X, ["a", "a", "b", "b"], k=1, C=10.0)[0]
    >>> best.support_
    array([1, 2])
    >>> best.predict([[0.5, 1.0], [3.5, -1.0]]).tolist()
    ['a', 'b']
    """

    def __init__(
        self,
        *,
        rank,
        objective,
        alpha,
        support,
        y_pm,
        intercept,
        classes,
        spec,
        removed,
        n_iter,
        status,
    ):
        self.rank = int(rank)
        self.objective = float(objective)
        self.alpha = alpha
        self.support_ = support
        self.dual_coef_ = (y_pm[support] * alpha[support])[None, :]
        self.intercept_ = np.array([float(intercept)])
        self.classes_ = classes
        self.n_support_ = np.array(
            [int(np.sum(y_pm[support] < 0)), int(np.sum(y_pm[support] > 0))], dtype=np.int32
        )
        self._spec = spec
        if spec.kind == _KINDS["precomputed"]:
            self.support_vectors_ = np.empty((support.size, 0))
        else:
            self.support_vectors_ = spec.X[support]
        self.removed_ = tuple(int(i) for i in removed)
        self.n_iter_ = int(n_iter)
        self.status = int(status)

    def decision_function(self, X) -> np.ndarray:
        """Signed distance-like score, > 0 for ``classes_[1]``.

        Parameters
        ----------
        X : array-like of shape (m, n_features)
            For a precomputed kernel: the kernel values between the queries and the *whole*
            training set, shape (m, n), as :class:`sklearn.svm.SVC` expects.

        Returns
        -------
        ndarray of shape (m,)
        """
        spec = self._spec
        X = as_float_array(X, "X", ndim=2)
        if X.shape[1] != spec.n_features_in:
            what = "training samples" if spec.kind == _KINDS["precomputed"] else "features"
            raise ValueError(
                f"X has {X.shape[1]} columns but the model was trained with "
                f"{spec.n_features_in} {what}"
            )
        if spec.kind == _KINDS["precomputed"]:
            Kx = np.ascontiguousarray(X[:, self.support_])
        else:
            Kx = _smo().kernel_block(
                X,
                np.ascontiguousarray(self.support_vectors_),
                spec.kind,
                spec.gamma,
                spec.coef0,
                spec.degree,
            )
        return Kx @ self.dual_coef_[0] + self.intercept_[0]

    def predict(self, X) -> np.ndarray:
        """Class labels: ``classes_[1]`` where the decision function is > 0, else ``classes_[0]``.

        Parameters
        ----------
        X : array-like of shape (m, n_features)

        Returns
        -------
        ndarray of shape (m,)
        """
        return self.classes_[(self.decision_function(X) > 0).astype(np.intp)]

    def hinge_loss(self, X, y) -> float:
        """Mean hinge loss ``max(0, 1 − y f(x))`` on (X, y), y in ``classes_`` (paper §5.1)."""
        return hinge_loss(self, X, y)

    def demographic_parity(self, X, sensitive, positive=None) -> float:
        """Demographic parity of the predictions on X (§5.2); see :func:`demographic_parity`."""
        return demographic_parity(
            self.predict(X), sensitive, positive=self.classes_[1] if positive is None else positive
        )

    def __repr__(self) -> str:
        return (
            f"EnumeratedSVM(rank={self.rank}, objective={self.objective:.10g}, "
            f"n_support={self.support_.size}, removed={len(self.removed_)}, "
            f"status={self.status})"
        )


def hinge_loss(model, X, y) -> float:
    """Mean hinge loss ``mean(max(0, 1 − t · model.decision_function(X)))``, t = ±1.

    Parameters
    ----------
    model : EnumeratedSVM or any fitted binary classifier with ``decision_function`` and
        ``classes_`` (t = +1 for ``classes_[1]``).
    X : array-like of shape (m, n_features)
    y : array-like of shape (m,)
        Labels from ``model.classes_``.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from fastcf import enumerate_svms
    >>> from fastcf.svm_enum import hinge_loss
    >>> X = np.array([[0.0], [1.0], [3.0], [4.0]])
    >>> m = enumerate_svms(X, [0, 0, 1, 1], k=1, C=10.0)[0]
    >>> round(hinge_loss(m, X, [0, 0, 1, 1]), 12)
    0.0
    """
    y = np.asarray(y)
    classes = np.asarray(model.classes_)
    unknown = ~np.isin(y, classes)
    if unknown.any():
        raise ValueError(
            f"y holds labels {np.unique(y[unknown]).tolist()[:5]} that are not in the model's "
            f"classes_ {classes.tolist()}"
        )
    t = np.where(y == classes[1], 1.0, -1.0)
    d = np.asarray(model.decision_function(X), dtype=float)
    if d.shape != t.shape:
        raise ValueError(f"y has {t.shape[0]} labels but X has {d.shape[0]} rows")
    return float(np.mean(np.maximum(0.0, 1.0 - t * d)))


def demographic_parity(y_pred, sensitive, positive=1) -> float:
    """Demographic parity |P(ŷ = positive | s = 1) − P(ŷ = positive | s = 0)| (Calders et al.).

    Parameters
    ----------
    y_pred : array-like of shape (m,)
        Predicted labels.
    sensitive : array-like of shape (m,)
        The binary sensitive attribute (0/1 or bool); both groups must be present.
    positive : label, default 1
        The favourable (or, in the paper's COMPAS example, the predicted-risk) label.

    Returns
    -------
    float
        0 means the prediction is independent of the attribute; larger is more unequal.

    Examples
    --------
    >>> from fastcf.svm_enum import demographic_parity
    >>> demographic_parity([1, 1, 0, 0], [1, 1, 0, 0])
    1.0
    >>> demographic_parity([1, 0, 1, 0], [1, 1, 0, 0])
    0.0
    """
    y_pred = np.asarray(y_pred)
    s = np.asarray(sensitive)
    if s.shape != y_pred.shape:
        raise ValueError(
            f"sensitive must have one value per prediction ({y_pred.shape}); got {s.shape}"
        )
    values = np.unique(s)
    if not np.all(np.isin(values, [0, 1])):
        raise ValueError(f"sensitive must be binary (0/1 or bool); got values {values[:5]}")
    s = s.astype(bool)
    if s.all() or not s.any():
        raise ValueError("sensitive must contain both groups (0 and 1)")
    pos = y_pred == positive
    return float(abs(pos[s].mean() - pos[~s].mean()))


# ---------------------------------------------------------------------------------------------
# the enumeration
# ---------------------------------------------------------------------------------------------


class _Node:
    """A heap entry: the optimum of one constrained problem."""

    __slots__ = ("f", "idx", "val", "b", "removed", "F", "n_iter", "status")

    def __init__(self, f, idx, val, b, removed, F, n_iter, status):
        self.f = f
        self.idx = idx  # support, sorted (int64)
        self.val = val  # α on the support
        self.b = b
        self.removed = removed  # tuple: S = [n] minus these
        self.F = F  # tuple: indices that may no longer be removed
        self.n_iter = n_iter
        self.status = status


class SVMEnumeration:
    """The lazy iterator returned by :meth:`SVMEnumerator.enumerate`.

    Each ``next()`` pays only for the model it returns: the children of the previous model are
    solved at the next call, then the heap is popped until a new support appears.

    Attributes
    ----------
    n_solved : int
        Constrained problems solved so far (the root and every child).
    n_popped : int
        Heap entries popped (models output plus duplicates).
    n_duplicates : int
        Popped entries whose support had already been output.
    n_degenerate : int
        Children skipped because their subset held a single class.
    n_iter_max : int
        The largest iteration count of any solve.
    n_maxiter : int
        Solves that stopped at the iteration limit.
    kernel_rows : int
        Rows of the kernel matrix computed so far (SMO solver).
    gamma : float
        The kernel's γ as used (``"scale"`` and ``"auto"`` resolved on the whole data set).

    Examples
    --------
    >>> import numpy as np
    >>> from fastcf import SVMEnumerator
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20, 2))
    >>> y = (X[:, 0] > 0).astype(int)
    >>> it = SVMEnumerator(C=1.0).enumerate(X, y)
    >>> it.n_solved
    0
    >>> first = next(it)
    >>> first.rank, it.n_solved
    (1, 1)
    """

    def __init__(self, params, X, y_pm, classes, kind, gamma):
        self._p = params
        self._X = X
        self._y = y_pm
        self.classes_ = classes
        self._kind = kind
        self.gamma = gamma
        n = X.shape[0]
        self._n = n
        self._spec = _KernelSpec(
            X, kind, gamma, params["coef0"], float(params["degree"]), X.shape[1]
        )
        self._C = params["C"]
        self._tol = params["tol"]
        self._stol = params["support_tol"]
        self._max_iter = params["max_iter"]
        self._sklearn = params["solver"] == "sklearn"
        # descending-order check: a child's exact optimum never exceeds its parent's, so a
        # computed increase can only come from the solver's tolerance. At a point whose maximal
        # KKT violation is below tol, the duality gap is at most Σ_i C·tol = n·C·tol; rounding of
        # f itself adds a few ulps of |f|.
        self._slack = n * self._C * self._tol
        self._heap = []
        self._seq = 0
        self._seen = set()
        self._pending = None
        self._started = False
        self._last_f = np.inf
        self._rank = 0
        self.n_solved = 0
        self.n_popped = 0
        self.n_duplicates = 0
        self.n_degenerate = 0
        self.n_iter_max = 0
        self.n_maxiter = 0
        self.time_solving = 0.0
        self._smo_state = None
        if not self._sklearn:
            smo = _smo()
            self._QD = smo.kernel_diag(X, kind, gamma, self._spec.coef0, self._spec.degree)
            self._cache = smo.make_cache(n, params["cache_rows"])

    # -- bookkeeping --------------------------------------------------------------------------
    @property
    def kernel_rows(self) -> int:
        """Kernel rows computed so far (0 for the scikit-learn solver)."""
        return 0 if self._sklearn else int(self._cache[4][2])

    def __iter__(self):
        return self

    def __repr__(self) -> str:
        return (
            f"SVMEnumeration(output={self._rank}, solved={self.n_solved}, "
            f"heap={len(self._heap)}, duplicates={self.n_duplicates}, "
            f"degenerate={self.n_degenerate})"
        )

    def _note(self, status, n_iter):
        self.n_solved += 1
        self.n_iter_max = max(self.n_iter_max, int(n_iter))
        if status == STATUS_MAXITER:
            self.n_maxiter += 1
            warnings.warn(
                f"the SVM solver stopped at its iteration limit ({self._max_iter}) before the "
                f"KKT tolerance {self._tol:g}; increase max_iter or tol",
                _convergence_warning(),
                stacklevel=3,
            )

    def _support_threshold(self, alpha):
        """``support_tol``, or by default 1e-10 · max α of this solution.

        Relative, not 1e-10 · C: with a huge kernel (poly with γ = "scale" on nearly equal
        points, K ~ 1e14) every α of the optimum is ~1e-11 ≪ C and an absolute threshold would
        call the support empty (found by the soak run).
        """
        if self._stol is not None:
            return self._stol
        return 1e-10 * float(alpha.max(initial=0.0))

    def _push(self, alpha, b, f, removed, F, n_iter, status):
        idx = np.flatnonzero(alpha > self._support_threshold(alpha))
        if idx.size == 0:
            self.n_degenerate += 1
            return
        node = _Node(
            float(f), idx, alpha[idx].copy(), float(b), removed, F, int(n_iter), int(status)
        )
        heapq.heappush(self._heap, (-node.f, self._seq, node))
        self._seq += 1

    # -- solving ------------------------------------------------------------------------------
    def _active_mask(self, removed):
        active = np.ones(self._n, dtype=np.bool_)
        if removed:
            active[list(removed)] = False
        return active

    def _problem(self):
        """Return the arguments every SMO call shares: data, labels, C, kernel, row cache."""
        s = self._spec
        return (
            self._QD,
            self._X,
            self._y,
            self._C,
            s.kind,
            s.gamma,
            s.coef0,
            s.degree,
            *self._cache,
        )

    def _solve_smo(self, active, alpha0):
        smo = _smo()
        alpha = alpha0.copy()
        status, n_iter, f, b = smo.solve(
            alpha, active, *self._problem(), self._tol, self._max_iter, True
        )
        return alpha, int(status), int(n_iter), float(f), float(b)

    def _solve_sklearn(self, active):
        from sklearn.svm import SVC

        smo = _smo()
        sub = np.flatnonzero(active)
        y_sub = self._y[sub]
        alpha = np.zeros(self._n)
        if np.all(y_sub > 0) or np.all(y_sub < 0):
            return alpha, smo.STATUS_DEGENERATE, 0, 0.0, 0.0
        s = self._spec
        kernel = [k for k, v in _KINDS.items() if v == s.kind][0]
        svc = SVC(
            kernel=kernel,
            C=self._C,
            tol=self._tol,
            gamma=s.gamma,
            coef0=s.coef0,
            degree=int(self._p["degree"]),
            max_iter=-1 if self._max_iter is None else self._max_iter,
            cache_size=self._p["cache_size"],
        )
        if s.kind == _KINDS["precomputed"]:
            svc.fit(self._X[np.ix_(sub, sub)], y_sub)
        else:
            svc.fit(self._X[sub], y_sub)
        # classes_ of the fit are [-1, +1], so dual_coef_ = y_i α_i exactly as here
        alpha[sub[svc.support_]] = np.abs(svc.dual_coef_[0])
        sv = sub[svc.support_]
        if s.kind == _KINDS["precomputed"]:
            K = self._X[np.ix_(sv, sv)]
        else:
            Xs = np.ascontiguousarray(self._X[sv])
            K = smo.kernel_block(Xs, Xs, s.kind, s.gamma, s.coef0, s.degree)
        v = self._y[sv] * alpha[sv]
        f = float(alpha[sv].sum() - 0.5 * v @ K @ v)
        status = 0 if svc.fit_status_ == 0 else STATUS_MAXITER
        return alpha, status, int(svc.n_iter_[0]), f, float(svc.intercept_[0])

    def solve(self, subset, warm_start=None):
        """Solve the SVM restricted to ``subset`` (α_i = 0 outside it), outside the enumeration.

        Parameters
        ----------
        subset : array-like of int or bool mask
            Indices of the training points allowed to be support vectors.
        warm_start : ndarray of shape (n,), optional
            A feasible α to start from (0 ≤ α ≤ C, Σ y_i α_i = 0, zero outside ``subset``);
            the default, α = 0, makes the result a function of ``subset`` alone.

        Returns
        -------
        EnumeratedSVM or None
            ``rank`` is 0; ``None`` when the subset holds a single class.
        """
        mask = np.zeros(self._n, dtype=np.bool_)
        sub = np.asarray(subset)
        if sub.dtype == bool:
            if sub.shape != (self._n,):
                raise ValueError(f"subset as a mask must have shape ({self._n},); got {sub.shape}")
            mask[:] = sub
        else:
            if sub.size and (
                sub.dtype.kind not in "iu" or sub.min() < -self._n or sub.max() >= self._n
            ):
                raise ValueError(f"subset must hold indices in [0, {self._n}); got {sub[:5]}")
            mask[sub.astype(np.intp)] = True
        if self._sklearn:
            alpha, status, n_iter, f, b = self._solve_sklearn(mask)
        else:
            a0 = (
                np.zeros(self._n)
                if warm_start is None
                else as_float_array(warm_start, "warm_start", ndim=1).copy()
            )
            if a0.shape[0] != self._n:
                raise ValueError(f"warm_start must have shape ({self._n},); got {a0.shape}")
            if (
                np.any(a0[~mask] != 0)
                or np.any(a0 < 0)
                or np.any(a0 > self._C)
                or abs(a0 @ self._y) > 1e-9 * max(1.0, a0.sum())
            ):
                raise ValueError(
                    "warm_start must be feasible: 0 <= α <= C, Σ y_i α_i = 0 and "
                    "α_i = 0 outside subset"
                )
            alpha, status, n_iter, f, b = self._solve_smo(mask, a0)
        if status == _smo().STATUS_DEGENERATE:
            return None
        support = np.flatnonzero(alpha > self._support_threshold(alpha))
        return EnumeratedSVM(
            rank=0,
            objective=f,
            alpha=alpha,
            support=support,
            y_pm=self._y,
            intercept=b,
            classes=self.classes_,
            spec=self._spec,
            removed=tuple(np.flatnonzero(~mask)),
            n_iter=n_iter,
            status=status,
        )

    def _solve_root(self):
        t0 = time.perf_counter()
        active = np.ones(self._n, dtype=np.bool_)
        if self._sklearn:
            alpha, status, n_iter, f, b = self._solve_sklearn(active)
        else:
            alpha, status, n_iter, f, b = self._solve_smo(active, np.zeros(self._n))
        self.time_solving += time.perf_counter() - t0
        self._note(status, n_iter)
        self._push(alpha, b, f, (), (), n_iter, status)

    def _branch(self, node):
        Fset = set(node.F)
        branch = np.array([i for i in node.idx.tolist() if i not in Fset], dtype=np.int64)
        if branch.size == 0:
            return
        active = self._active_mask(node.removed)
        t0 = time.perf_counter()
        if self._sklearn:
            results = []
            for r in branch.tolist():
                child = active.copy()
                child[r] = False
                results.append(self._solve_sklearn(child))
        else:
            smo = _smo()
            alpha_p = np.zeros(self._n)
            alpha_p[node.idx] = node.val
            alphas, status, n_iter, fs, bs = smo.solve_children(
                alpha_p, active, branch, *self._problem(), self._tol, self._max_iter, True
            )
            results = [
                (alphas[c], int(status[c]), int(n_iter[c]), float(fs[c]), float(bs[c]))
                for c in range(branch.size)
            ]
        self.time_solving += time.perf_counter() - t0
        degenerate = _smo().STATUS_DEGENERATE
        F = node.F
        for r, (alpha, status, n_iter, f, b) in zip(branch.tolist(), results, strict=True):
            if status == degenerate:
                self.n_degenerate += 1
            else:
                self._note(status, n_iter)
                self._push(alpha, b, f, node.removed + (r,), F, n_iter, status)
            F = F + (r,)  # later siblings keep r

    def __next__(self) -> EnumeratedSVM:
        if not self._started:
            self._started = True
            self._solve_root()
        if self._pending is not None:
            node, self._pending = self._pending, None
            self._branch(node)
        while self._heap:
            _, _, node = heapq.heappop(self._heap)
            self.n_popped += 1
            key = node.idx.tobytes()
            if key in self._seen:
                self.n_duplicates += 1
                self._branch(node)
                continue
            self._seen.add(key)
            # a solve stopped at max_iter (status 1, warned) gives an approximate objective, so
            # the order is only approximate then: no error for what was already reported
            if self.n_maxiter == 0 and node.f > self._last_f + self._slack + 1e-12 * abs(
                self._last_f
            ):
                raise RuntimeError(
                    f"EnumSV produced an objective larger than its predecessor's "
                    f"({node.f!r} > {self._last_f!r}) beyond the solver tolerance; "
                    "this is a bug, please report it"
                )
            self._last_f = min(self._last_f, node.f)
            self._pending = node
            self._rank += 1
            alpha = np.zeros(self._n)
            alpha[node.idx] = node.val
            return EnumeratedSVM(
                rank=self._rank,
                objective=node.f,
                alpha=alpha,
                support=node.idx.copy(),
                y_pm=self._y,
                intercept=node.b,
                classes=self.classes_,
                spec=self._spec,
                removed=node.removed,
                n_iter=node.n_iter,
                status=node.status,
            )
        raise StopIteration


def _convergence_warning():
    from sklearn.exceptions import ConvergenceWarning

    return ConvergenceWarning


# ---------------------------------------------------------------------------------------------
# the public entry points
# ---------------------------------------------------------------------------------------------


def _check_real(value, name, *, positive=True, allow_zero=False):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__} {value!r}")
    v = float(value)
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite; got {v!r}")
    if positive and (v < 0 or (v == 0 and not allow_zero)):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}; got {v!r}")
    return v


class SVMEnumerator:
    """Enumerate binary SVMs with distinct support-vector sets, best dual objective first.

    Implements EnumSV (Algorithm 1 of *Enumeration of Distinct Support Vectors for Interactive
    Decision Making*): the r-th model is the SVM trained on some subset of the data whose
    support differs from those of models 1..r−1, with the r-th largest dual objective among all
    such models. Parameters follow :class:`sklearn.svm.SVC`.

    Parameters
    ----------
    C : float, default 1.0
        Regularisation (box constraint 0 ≤ α ≤ C), > 0.
    kernel : {"linear", "rbf", "poly", "sigmoid", "precomputed"}, default "linear"
    gamma : {"scale", "auto"} or float, default "scale"
        As in SVC: "scale" = 1 / (n_features · X.var()), "auto" = 1 / n_features, computed once
        on the whole data set and kept for every subset.
    degree : int, default 3
        Degree of the "poly" kernel (γ⟨x, x'⟩ + coef0)^degree.
    coef0 : float, default 0.0
        Independent term of the "poly" and "sigmoid" kernels.
    tol : float, default 1e-8
        KKT tolerance of every solve: the maximal violating pair gap m(α) − M(α) < tol.
    support_tol : float or None, default None
        Support = {i : α_i > support_tol}; None means 1e-10 · max α of each solution (relative,
        so that the tiny α's of a huge kernel still form a support). The solver returns exact
        zeros for the α's at the lower bound, so this only guards against round-off.
    solver : {"smo", "sklearn"}, default "smo"
        "smo": fastcf's Numba solver, warm-started from the parent model. "sklearn": refit
        ``sklearn.svm.SVC`` from scratch on every subset (the cross-check and speed baseline).
    max_iter : int or None, default None
        Iteration limit per solve; None means max(10⁷, 100 n) as libsvm. A solve that stops at
        the limit is kept (its ``status`` is 1) and a ``ConvergenceWarning`` is issued.
    cache_size : float, default 1024
        Megabytes for the kernel rows. When the n × n matrix fits, it is kept whole (computed
        lazily, once per data set); otherwise rows are computed on demand and the least recently
        used ones evicted.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcf import SVMEnumerator
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(30, 2))
    >>> y = np.where(X[:, 0] + 0.3 * rng.normal(size=30) > 0, "yes", "no")
    >>> top = SVMEnumerator(C=1.0).enumerate(X, y, k=5)
    >>> [m.rank for m in top]
    [1, 2, 3, 4, 5]
    >>> bool(all(a.objective >= b.objective for a, b in zip(top, top[1:])))
    True
    >>> len({tuple(m.support_) for m in top})
    5
    """

    def __init__(
        self,
        C=1.0,
        kernel="linear",
        gamma="scale",
        degree=3,
        coef0=0.0,
        tol=1e-8,
        support_tol=None,
        solver="smo",
        max_iter=None,
        cache_size=1024.0,
    ):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.tol = tol
        self.support_tol = support_tol
        self.solver = solver
        self.max_iter = max_iter
        self.cache_size = cache_size

    def get_params(self, deep=True):
        """Parameters as a dict (scikit-learn convention)."""
        return {
            k: getattr(self, k)
            for k in (
                "C",
                "kernel",
                "gamma",
                "degree",
                "coef0",
                "tol",
                "support_tol",
                "solver",
                "max_iter",
                "cache_size",
            )
        }

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"SVMEnumerator({args})"

    def _validate(self, X, y):
        C = _check_real(self.C, "C")
        if not isinstance(self.kernel, str) or self.kernel not in _KINDS:
            raise ValueError(f"kernel must be one of {sorted(_KINDS)}; got {self.kernel!r}")
        kind = _KINDS[self.kernel]
        tol = _check_real(self.tol, "tol")
        stol = (
            None
            if self.support_tol is None
            else _check_real(self.support_tol, "support_tol", allow_zero=True)
        )
        if self.solver not in _SOLVERS:
            raise ValueError(f"solver must be one of {_SOLVERS}; got {self.solver!r}")
        if isinstance(self.degree, (bool, np.bool_)) or not isinstance(
            self.degree, numbers.Integral
        ):
            raise TypeError(f"degree must be an int; got {self.degree!r}")
        if self.degree < 0:
            raise ValueError(f"degree must be >= 0; got {self.degree}")
        coef0 = _check_real(self.coef0, "coef0", positive=False)
        cache_size = _check_real(self.cache_size, "cache_size")
        X = as_float_array(X, "X", ndim=2)
        n = X.shape[0]
        if n < 2 or X.shape[1] < 1:
            raise ValueError(
                f"X must have at least 2 rows and 1 feature (column); got shape {X.shape}"
            )
        if kind == _KINDS["precomputed"] and X.shape[0] != X.shape[1]:
            raise ValueError(
                f"X must be a square Gram matrix for kernel='precomputed'; got shape {X.shape}"
            )
        if hasattr(y, "to_numpy"):
            y = y.to_numpy()
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D (one label per row of X); got shape {y.shape}")
        if y.shape[0] != n:
            raise ValueError(f"y has {y.shape[0]} labels but X has {n} rows")
        if y.dtype.kind == "f" and np.isnan(y).any():
            raise ValueError("y contains NaN; every row needs a label")
        if y.dtype.kind == "O" and any(v is None for v in y):
            raise ValueError("y contains None; every row needs a label")
        classes = np.unique(y)
        if classes.size < 2:
            raise ValueError(f"y has a single class ({classes.tolist()}); an SVM needs two classes")
        if classes.size > 2:
            raise ValueError(
                f"y has {classes.size} classes ({classes.tolist()[:10]}); only binary SVMs are "
                "enumerated — reduce the problem to two classes (e.g. one-vs-rest)"
            )
        y_pm = np.where(y == classes[1], 1.0, -1.0)
        if self.max_iter is None:
            max_iter = max(10_000_000, 100 * n)
        else:
            if isinstance(self.max_iter, (bool, np.bool_)) or not isinstance(
                self.max_iter, numbers.Integral
            ):
                raise TypeError(f"max_iter must be an int or None; got {self.max_iter!r}")
            if self.max_iter <= 0:
                raise ValueError(f"max_iter must be > 0; got {self.max_iter}")
            max_iter = int(self.max_iter)
        if kind == _KINDS["precomputed"]:
            gamma = 0.0
        elif isinstance(self.gamma, str):
            if self.gamma == "scale":
                var = X.var()
                # a variance at the rounding level of X (constant data: 6 × 0.48 gives ~1e-34)
                # is 0; SVC then uses γ = 1, and so do we (SVC itself would take γ ~ 1e33 and
                # kernel entries ~1e97 in that case)
                tiny = 16 * np.finfo(float).eps * float(np.mean(X * X))
                gamma = 1.0 / (X.shape[1] * var) if var > tiny else 1.0
            elif self.gamma == "auto":
                gamma = 1.0 / X.shape[1]
            else:
                raise ValueError(
                    f"gamma must be 'scale', 'auto' or a float > 0; got {self.gamma!r}"
                )
        else:
            gamma = _check_real(self.gamma, "gamma")
        params = {
            "C": C,
            "tol": tol,
            "support_tol": stol,
            "solver": self.solver,
            "degree": int(self.degree),
            "coef0": coef0,
            "max_iter": max_iter,
            "cache_size": cache_size,
            "cache_rows": int(cache_size * 2**20 // (8 * max(n, 1))),
        }
        return params, X, y_pm, classes, kind, float(gamma)

    def enumerate(self, X, y, k=None):
        """Enumerate the models of (X, y), best dual objective first.

        Parameters
        ----------
        X : array-like of shape (n, n_features), or (n, n) for ``kernel="precomputed"``
        y : array-like of shape (n,)
            Two class labels.
        k : int or None, default None
            None: return a lazy iterator (each ``next()`` computes one more model; it ends when
            every distinct model has been listed). An int > 0: return the list of the top k
            (fewer if there are fewer distinct models).

        Returns
        -------
        SVMEnumeration or list of EnumeratedSVM

        Raises
        ------
        ValueError, TypeError
            Bad parameters or data (the message names the argument).
        """
        if k is not None:
            if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
                raise TypeError(f"k must be a positive int or None; got {k!r}")
            if k <= 0:
                raise ValueError(f"k must be a positive int or None; got {k}")
        it = SVMEnumeration(*self._validate(X, y))
        if k is None:
            return it
        out = []
        for model in it:
            out.append(model)
            if len(out) == k:
                break
        return out


def enumerate_svms(X, y, k=50, **svm_params):
    """Return the top-``k`` SVMs of (X, y) with distinct supports (one-shot EnumSV).

    Parameters
    ----------
    X : array-like of shape (n, n_features)
    y : array-like of shape (n,)
    k : int, default 50
    **svm_params
        Parameters of :class:`SVMEnumerator` (C, kernel, gamma, degree, coef0, tol, ...).

    Returns
    -------
    list of EnumeratedSVM

    Examples
    --------
    >>> import numpy as np
    >>> from fastcf import enumerate_svms
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> models = enumerate_svms(X, [0, 0, 1, 1], k=3, C=10.0)
    >>> [m.support_.tolist() for m in models]
    [[1, 2], [0, 2], [1, 3]]
    """
    return SVMEnumerator(**svm_params).enumerate(X, y, k=k)


# ---------------------------------------------------------------------------------------------
# side-by-side benchmark (for ``python -m fastcf bench``)
# ---------------------------------------------------------------------------------------------


def _load_benchmark(name="breast_cancer", seed=0):
    """(X_train, X_test, y_train, y_test, C): standardised 80/20 split, C by 5-fold CV (§5.1)."""
    from sklearn.datasets import load_breast_cancer, load_digits
    from sklearn.model_selection import GridSearchCV, train_test_split
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    if name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
    elif name == "digits_3v8":
        X, y = load_digits(return_X_y=True)
        keep = (y == 3) | (y == 8)
        X, y = X[keep], (y[keep] == 8).astype(int)
    else:
        raise ValueError(f"unknown benchmark data set {name!r}")
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=seed, stratify=y)
    sc = StandardScaler().fit(Xtr)
    Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
    grid = {"C": [0.001, 0.01, 0.1, 1.0, 10.0, 100.0]}
    C = GridSearchCV(SVC(kernel="linear"), grid, cv=5).fit(Xtr, ytr).best_params_["C"]
    return Xtr, Xte, ytr, yte, float(C)


def bench_rows(quick: bool = False) -> list[dict]:
    """Time EnumSV with fastcf's solver against the same search refitting scikit-learn's SVC.

    Breast cancer (scikit-learn's copy of the UCI data), standardised, 80/20 split, linear
    kernel, C by 5-fold CV (§5.1); without ``quick`` also digits "3 vs 8". Both searches run in
    this process, one after the other, with the same ``tol`` (1e-8).

    Parameters
    ----------
    quick : bool, default False
        Breast cancer only, top-10 and one repetition, instead of both data sets, top-50 and
        three repetitions.

    Returns
    -------
    list of dict
        One row per measurement, with keys ``name``, ``fastcf_s`` and ``baseline_s`` (median
        seconds), ``ratio`` (baseline / fastcf), ``accuracy_gap`` (the largest relative
        difference between the two objective sequences) and ``baseline``.

    Examples
    --------
    >>> rows = bench_rows(quick=True)  # doctest: +SKIP
    >>> sorted(rows[0])  # doctest: +SKIP
    ['accuracy_gap', 'baseline', 'baseline_s', 'fastcf_s', 'name', 'ratio']
    """
    k = 10 if quick else 50
    reps = 1 if quick else 3
    rng = np.random.default_rng(0)
    Xw = rng.normal(size=(40, 3))
    enumerate_svms(Xw, (Xw[:, 0] > 0).astype(int), k=2)  # compile outside the timings
    baseline = "same EnumSV search refitting sklearn.svm.SVC"
    rows = []
    for name in ("breast_cancer",) if quick else ("breast_cancer", "digits_3v8"):
        Xtr, _, ytr, _, C = _load_benchmark(name)

        def run(solver, Xtr=Xtr, ytr=ytr, C=C):
            times, lat, objs = [], [], None
            for _ in range(reps):
                t0 = time.perf_counter()
                it = SVMEnumerator(C=C, kernel="linear", solver=solver).enumerate(Xtr, ytr)
                models, stamps = [], []
                for _ in range(k):
                    models.append(next(it))
                    stamps.append(time.perf_counter())
                times.append(stamps[-1] - t0)
                lat.append(float(np.median(np.diff(stamps))))
                objs = np.array([m.objective for m in models])
            return float(np.median(times)), float(np.median(lat)), objs

        fast_t, fast_lat, fast_obj = run("smo")
        base_t, base_lat, base_obj = run("sklearn")
        gap = float(np.max(np.abs(fast_obj - base_obj) / np.abs(base_obj)))
        label = name.replace("_", " ")
        rows += [
            {
                "name": f"svm_enum top-{k} {label} (linear, C={C:g})",
                "fastcf_s": fast_t,
                "baseline_s": base_t,
                "ratio": base_t / fast_t,
                "accuracy_gap": gap,
                "baseline": baseline,
            },
            {
                "name": f"svm_enum {label}: median next() latency after the first",
                "fastcf_s": fast_lat,
                "baseline_s": base_lat,
                "ratio": base_lat / fast_lat,
                "accuracy_gap": gap,
                "baseline": baseline,
            },
        ]
    return rows
