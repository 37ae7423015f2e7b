"""EnumSV's search: Lawler's scheme over index subsets (Algorithm 1 of paper 003).

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
skipped (the kernels report it as ``Status.DEGENERATE``). A subset with both classes always has a
non-zero optimum, so an empty support only appears through a degenerate child. The skipped
children are counted in ``SVMEnumeration.n_degenerate``.

Uniqueness
----------
Assumption 1 of the paper asks the solver to be deterministic. Here the same warm start and the
same subset always give bit-identical α, and the enumeration is a deterministic function of its
input. When the dual has a unique optimum (e.g. a strictly positive definite kernel matrix, or
data in general position) the support of α*(S) is a property of S and the enumeration is exact;
when it has many optima (ties, duplicated points) the support found can depend on the warm
start, as it would for any solver.

Descending order
----------------
A child's exact optimum never exceeds its parent's, so a computed increase can only come from the
solver's tolerance. At a point whose maximal KKT violation is below ``tol`` the duality gap is at
most Σ_i C·tol = n·C·tol. Rounding of f itself adds at most about n·eps times its terms,
Σα + ½|α|ᵀ|Q||α| ≤ Σα + ½(Σ α_i √Q_ii)² (Q is positive semidefinite), which can dwarf |f|. A larger
increase between successive outputs is a bug and raises ``RuntimeError``.
"""

from __future__ import annotations

import heapq
import time
import warnings
from typing import NamedTuple

import numpy as np

from fastcf._status import Status, message
from fastcf._validation import as_float_array

from .model import PRECOMPUTED, EnumeratedSVM, KernelSpec, smo_kernels

#: the branch of a root solve: no index removed (see ``smo.solve_children``)
_ROOT = np.array([-1], dtype=np.int64)

__all__ = ["SVMEnumeration"]


class _Node:
    """A heap entry: the optimum of one constrained problem."""

    __slots__ = ("f", "err", "idx", "val", "b", "removed", "F", "n_iter", "status")

    def __init__(self, f, err, idx, val, b, removed, F, n_iter, status):
        self.f = f
        self.err = err  # bound on the rounding error of f (module docstring, "Descending order")
        self.idx = idx  # support, sorted (int64)
        self.val = val  # α on the support
        self.b = b
        self.removed = removed  # tuple: S = [n] minus these
        self.F = F  # tuple: indices that may no longer be removed
        self.n_iter = n_iter
        self.status = status


class _Problem(NamedTuple):
    """The arguments every SMO kernel call shares, in the order of ``smo.solve``'s signature.

    They are fixed for the whole enumeration and made once, with it: the diagonal of Q, C, Q's
    :class:`fastcf._kernels.smo.QSpec` (the data, the ±1 labels, ``KernelSpec.params``) and its
    row cache (:func:`fastcf._kernels.smo.make_cache`).
    """

    QD: np.ndarray
    C: float
    q: tuple  # smo.QSpec
    cache: tuple  # smo.RowCache


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
    time_solving : float
        Seconds spent in the solver so far.

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

    def __init__(
        self, spec: KernelSpec, y_pm, classes, *, C, tol, support_tol, max_iter, solver, cache_size
    ):
        # the arguments are validated by SVMEnumerator.enumerate (fastcf.svm_enum)
        self._spec = spec
        self._y = y_pm
        self.classes_ = classes
        self.gamma = spec.gamma
        n = spec.X.shape[0]
        self._n = n
        self._C = C
        self._tol = tol
        self._stol = support_tol
        self._max_iter = max_iter
        self._cache_size = cache_size
        self._sklearn = solver == "sklearn"
        self._slack = n * C * tol  # the duality-gap bound (module docstring, "Descending order")
        self._heap = []
        self._seq = 0
        self._seen = set()
        self._pending = None
        self._started = False
        self._last_f = np.inf
        self._last_err = 0.0
        self._rank = 0
        self.n_solved = 0
        self.n_popped = 0
        self.n_duplicates = 0
        self.n_degenerate = 0
        self.n_iter_max = 0
        self.n_maxiter = 0
        self.time_solving = 0.0
        if not self._sklearn:
            smo = smo_kernels()
            cache = smo.make_cache(n, int(cache_size * 2**20 // (8 * max(n, 1))))
            QD = smo.kernel_diag(spec.X, *spec.params)
            self._problem = _Problem(QD, C, smo.QSpec(spec.X, y_pm, *spec.params), cache)
            self._stop = (tol, max_iter, True)  # tol, max_iter, use_active_set
        else:
            QD = smo_kernels().kernel_diag(spec.X, *spec.params)
        self._sqrt_qd = np.sqrt(np.maximum(QD, 0.0))

    # -- bookkeeping --------------------------------------------------------------------------
    @property
    def kernel_rows(self) -> int:
        """Kernel rows computed so far (0 for the scikit-learn solver)."""
        return 0 if self._sklearn else int(self._problem.cache.counters[2])

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
        if status == Status.MAXITER:
            self.n_maxiter += 1
            warnings.warn(
                f"{message(Status.MAXITER)}: the SVM solver stopped at max_iter="
                f"{self._max_iter} before the KKT tolerance {self._tol:g}; increase max_iter "
                "or tol",
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
        val = alpha[idx].copy()
        # f = Σα − ½ αᵀQα rounds relative to its terms, not to |f|: with |Q_ij| ≤ √(Q_ii Q_jj)
        # (Q is PSD), ½|α|ᵀ|Q||α| ≤ ½ (Σ α_i √Q_ii)²; the fuzz suite's six equal points of
        # opposite labels and a poly kernel of 1e24 have f = 20 but terms of 1e26
        mass = float(val.sum())
        spread = float(val @ self._sqrt_qd[idx])
        err = 4.0 * self._n * np.finfo(float).eps * (mass + 0.5 * spread * spread)
        node = _Node(float(f), err, idx, val, float(b), removed, F, int(n_iter), int(status))
        heapq.heappush(self._heap, (-node.f, self._seq, node))
        self._seq += 1

    def _model(self, rank, alpha, support, f, b, removed, n_iter, status):
        return EnumeratedSVM(
            rank=rank,
            objective=f,
            alpha=alpha,
            support=support,
            y_pm=self._y,
            intercept=b,
            classes=self.classes_,
            spec=self._spec,
            removed=removed,
            n_iter=n_iter,
            status=status,
        )

    # -- solving ------------------------------------------------------------------------------
    def _solve_smo(self, active, alpha0):
        # solve_children with the branch [-1], the parent itself: one kernel compiled for the
        # root and the children (solve inlined into it), not two
        alphas, status, n_iter, f, b = smo_kernels().solve_children(
            np.ascontiguousarray(alpha0, dtype=np.float64),
            np.ascontiguousarray(active, dtype=np.bool_),
            _ROOT,
            *self._problem,
            *self._stop,
        )
        return alphas[0], int(status[0]), int(n_iter[0]), float(f[0]), float(b[0])

    def _solve_sklearn(self, active):
        """Refit :class:`sklearn.svm.SVC` from scratch on the subset (baseline, cross-check)."""
        from sklearn.svm import SVC

        spec = self._spec
        sub = np.flatnonzero(active)
        y_sub = self._y[sub]
        alpha = np.zeros(self._n)
        if np.all(y_sub > 0) or np.all(y_sub < 0):
            return alpha, Status.DEGENERATE, 0, 0.0, 0.0
        svc = SVC(
            kernel=spec.name,
            C=self._C,
            tol=self._tol,
            gamma=spec.gamma,
            coef0=spec.coef0,
            degree=int(spec.degree),
            max_iter=self._max_iter,
            cache_size=self._cache_size,
        )
        if spec.kind == PRECOMPUTED:
            svc.fit(spec.X[np.ix_(sub, sub)], y_sub)
        else:
            svc.fit(spec.X[sub], y_sub)
        # classes_ of the fit are [-1, +1], so dual_coef_ = y_i α_i exactly as here
        alpha[sub[svc.support_]] = np.abs(svc.dual_coef_[0])
        sv = sub[svc.support_]
        if spec.kind == PRECOMPUTED:
            K = spec.X[np.ix_(sv, sv)]
        else:
            Xs = np.ascontiguousarray(spec.X[sv])
            K = smo_kernels().kernel_block(Xs, Xs, *spec.params)
        v = self._y[sv] * alpha[sv]
        f = float(alpha[sv].sum() - 0.5 * v @ K @ v)
        status = Status.OK if svc.fit_status_ == 0 else Status.MAXITER
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
        if status == Status.DEGENERATE:
            return None
        support = np.flatnonzero(alpha > self._support_threshold(alpha))
        removed = tuple(np.flatnonzero(~mask))
        return self._model(0, alpha, support, f, b, removed, n_iter, status)

    # -- Lawler's scheme ----------------------------------------------------------------------
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
        """Solve the children S − {i}, i ∈ supp(α) − F, and push them (Lawler's partition)."""
        Fset = set(node.F)
        branch = np.array([i for i in node.idx.tolist() if i not in Fset], dtype=np.int64)
        if branch.size == 0:
            return
        active = np.ones(self._n, dtype=np.bool_)
        if node.removed:
            active[list(node.removed)] = False
        t0 = time.perf_counter()
        if self._sklearn:
            results = []
            for r in branch.tolist():
                child = active.copy()
                child[r] = False
                results.append(self._solve_sklearn(child))
        else:
            alpha_p = np.zeros(self._n)
            alpha_p[node.idx] = node.val
            alphas, status, n_iter, fs, bs = smo_kernels().solve_children(
                alpha_p, active, branch, *self._problem, *self._stop
            )
            results = [
                (alphas[c], int(status[c]), int(n_iter[c]), float(fs[c]), float(bs[c]))
                for c in range(branch.size)
            ]
        self.time_solving += time.perf_counter() - t0
        F = node.F
        for r, (alpha, status, n_iter, f, b) in zip(branch.tolist(), results, strict=True):
            if status == Status.DEGENERATE:
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
            # a solve stopped at max_iter (status MAXITER, warned) gives an approximate
            # objective, so the order is only approximate then: no error for what was reported
            if self.n_maxiter == 0 and node.f > self._last_f + self._slack + node.err + (
                self._last_err
            ):
                raise RuntimeError(
                    f"EnumSV produced an objective larger than its predecessor's "
                    f"({node.f!r} > {self._last_f!r}) beyond the solver tolerance; "
                    "this is a bug, please report it"
                )
            if node.f < self._last_f:
                self._last_f, self._last_err = node.f, node.err
            self._pending = node
            self._rank += 1
            alpha = np.zeros(self._n)
            alpha[node.idx] = node.val
            return self._model(
                self._rank,
                alpha,
                node.idx.copy(),
                node.f,
                node.b,
                node.removed,
                node.n_iter,
                node.status,
            )
        raise StopIteration


def _convergence_warning():
    from sklearn.exceptions import ConvergenceWarning

    return ConvergenceWarning
