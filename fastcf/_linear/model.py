"""The two linear model families as objects with one interface (paper 000, §3 and §4).

A :class:`BinaryModel` (one weight row w and an intercept c: ``p(classes[1]) = σ(w·x + c)``,
scikit-learn's convention; a two-class softmax is folded to ``w = a1 − a0``, ``c = b1 − b0``) and a
:class:`SoftmaxModel` (``p = softmax(A x + b)``, K ≥ 3) answer the same questions — the model's
logits, probabilities and predicted class, the rounding bound of a logit, whether an answer is
surely in its target class. They hold arrays and arithmetic only: the solvers of each query
form, and the fallback entries tried after them, are routed by :mod:`fastcf._linear.solvers`.
:func:`make_model` picks the family once.

Both keep the softmax form of the model (for binary models the rows ``[0, w]`` and intercepts
``[0, c]``), used by the K-space solvers and the D-dimensional reference methods, with its
transpose, its Gram matrix ``A Aᵀ``, its row norms and ``|b|`` (the λ-path's certificate), and the
rounding constants γ. :func:`softmax_energy` is the energy of problem (2) on the softmax form,

    E(x) = λ/2 ‖x − x̄‖²_W − log p_k(x),   p = softmax(A x + b),
    ∇E(x) = λ W (x − x̄) + Aᵀ (p − e_k)   (0 on frozen features),

with the log-sum-exp taken stably (−log p_k = max z + log Σ exp(z − max z) − z_k): the one
implementation in Python, shared by the reference methods (:mod:`fastcf._linear.reference`), the
boxed Newton method (:mod:`fastcf._linear.boxed`) and the benchmarks.

Rounding (Higham, *Accuracy and Stability of Numerical Algorithms*, §3.1): any evaluation of a
logit ``z_i = a_i·x + b_i`` in floating point (BLAS in any blocking order, scikit-learn's
``predict``, our row kernels) is within ``γ S_i`` of the exact one,
``S_i = Σ_j |a_ij x_j| + |b_i|``, ``γ = γ_{D+1} = (D+1)u / (1 − (D+1)u)``. A margin ``z_k − z_j``
computed in any of them that exceeds ``4γ (S_k + S_j)`` (twice the worst case of two
evaluations) holds in all of them (``rounding_need``, the criterion of
:func:`fastcf._kernels.softmax._certain_row`).
"""

from __future__ import annotations

import math

import numpy as np

from .._kernels import linalg
from .._kernels import logistic as _lk
from .._kernels import softmax as _sk
from .._kernels import verdict as _vk

__all__ = ["BinaryModel", "SoftmaxModel", "make_model", "softmax_energy"]


def make_model(A, b, columns=True):
    """Return the model object of logits ``A x + b``: binary for K ≤ 2 rows, else softmax.

    ``columns``: whether the model's own coefficient array is stored by columns (Fortran order,
    as scikit-learn's multinomial ``coef_``), which decides the BLAS call, and so the bits, of
    its logits ``X @ coef.T`` (:meth:`SoftmaxModel.check_logits`).
    """
    return BinaryModel(A, b) if A.shape[0] <= 2 else SoftmaxModel(A, b, columns)


def softmax_energy(A, b, x0, k, lam, x, wt=None, free=None, grad=True):
    """Return (E, ∇E, p) of problem (2) at ``x`` (see the module docstring), or E alone.

    Parameters
    ----------
    A : ndarray of shape (K, D)
    b : ndarray of shape (K,)
    x0 : ndarray of shape (D,)
        The source x̄.
    k : int
        The target class.
    lam : float
    x : ndarray of shape (D,)
    wt : ndarray of shape (D,), optional
        The diagonal of W (the identity by default).
    free : ndarray of bool, shape (D,), optional
        Features allowed to move: the gradient is 0 on the others (all free by default).
    grad : bool, default=True
        ``False``: return E alone (the line searches of the reference methods).

    Returns
    -------
    E : float
    g : ndarray of shape (D,)
    p : ndarray of shape (K,)
        The class probabilities at ``x``.

    Examples
    --------
    >>> import numpy as np
    >>> E, g, p = softmax_energy(np.eye(2), np.zeros(2), np.zeros(2), 1, 1.0, np.zeros(2))
    >>> bool(abs(E - np.log(2)) < 1e-15), g.tolist(), p.tolist()
    (True, [0.5, -0.5], [0.5, 0.5])
    """
    z = A @ x + b
    m = z.max()
    e = np.exp(z - m)
    s = e.sum()
    d = x - x0
    wd = d if wt is None else wt * d
    if not grad:
        # summed left to right, as the reference methods' line searches always have (their
        # answers keep their bits); with the gradient, the −log p_k term is summed first
        return 0.5 * lam * float(np.dot(wd, d)) + m + np.log(s) - z[k]
    p = e / s
    nll = m + np.log(s) - z[k]
    E = 0.5 * lam * float(np.dot(wd, d)) + nll
    pe = p.copy()
    pe[k] -= 1.0
    g = (lam * d if wt is None else lam * wt * d) + A.T @ pe
    if free is not None:
        g[~free] = 0.0
    return E, g, p


def _close_rows(A, G):
    """Tell whether two rows of ``A`` differ by less than 1e-4 of their norm, but not by 0.

    Where they do, the Gram matrix G = A Aᵀ knows their difference to ε·10⁸ relative at best,
    and the K-space solvers can be wrong about it (see :func:`.fallbacks.lam_shifted`).
    Screened by G (‖a_i − a_j‖² = G_ii + G_jj − 2G_ij, ~K² operations), confirmed by the
    explicit difference of the pairs the screen flags (whose G-value rounds to anything below
    1e-6 of the larger squared norm).
    """
    K = A.shape[0]
    d = np.diag(G)
    with np.errstate(all="ignore"):
        near = (d[:, None] + d[None, :] - 2 * G) <= 1e-6 * np.maximum(d[:, None], d[None, :])
    near &= np.triu(np.ones((K, K), dtype=bool), 1)
    rows_i, rows_j = np.nonzero(near)
    top = np.abs(A).max(axis=1)
    for s in range(0, rows_i.size, 1024):  # (pairs, D) temporaries of bounded size
        i, j = rows_i[s : s + 1024], rows_j[s : s + 1024]
        diff = np.abs(A[i] - A[j]).max(axis=1)
        if ((diff > 0.0) & (diff < 1e-4 * np.maximum(top[i], top[j]))).any():
            return True
    return False


class _LinearModel:
    """What both families share: the softmax-form arrays and the checks built on the logits."""

    def __init__(self, A, b, K):
        # A, b: the softmax form; K: the rows of the model as given (for the path's constant)
        self.A = A
        self.b = b
        self.AT = np.ascontiguousarray(A.T)
        self.row_norms = np.sqrt(np.einsum("ij,ij->i", A, A))  # path certificate
        self.abs_b = np.abs(b)
        # for the cheap upper bound of the rounding need (need_bound)
        self.max_row_norm = float(self.row_norms.max())
        self.max_abs_b = float(self.abs_b.max())
        G = A @ A.T
        self.G = 0.5 * (G + G.T)  # exactly symmetric (a no-op when BLAS made it so)
        D = A.shape[1]
        # γ_{D+1} = (D+1)u / (1 − (D+1)u): the relative rounding bound of a logit (Higham, §3.1)
        u = np.finfo(float).eps / 2
        self.gamma = float((D + 1) * u / (1 - (D + 1) * u))  # a Python float: no NumPy warnings
        # γ_{D+K+2}: the bound of lam_path's certificate (forming x̄ + V Aᵀ y, then A x + b)
        n = D + K + 2
        self.gamma_path = n * u / (1 - n * u)

    # ------------------------------------------------------------------ softmax-form rows
    def logits(self, X):
        """Return Z = X Aᵀ + b (row kernels: bit-identical per row whatever the batch)."""
        return _sk.logits_rows(X, self.A, self.b, _sk.row_mode(X.shape[0], *self.A.shape[::-1]))

    def expand(self, X, Y, m):
        """Return the counterfactuals X + (Y A) ∘ v from their K-space coordinates."""
        mode = _sk.row_mode(X.shape[0], *self.A.shape[::-1])
        return _sk.expand_rows(X, Y, self.A, m.v, m.unit_v, mode)

    def log_proba_target(self, X, tidx):
        """Return log p_target(x) per row, stably (the −log p term of problem (2))."""
        Z = self.logits(np.ascontiguousarray(X, dtype=np.float64))
        rows = np.arange(X.shape[0])
        zmax = Z.max(axis=1)
        lse = zmax + np.log(np.exp(Z - zmax[:, None]).sum(axis=1))
        return Z[rows, tidx] - lse

    # ------------------------------------------------------------------ verification
    def surely_in(self, Xr, tr):
        """Return (in_class, Z): rows whose class ``tr`` holds in every evaluation of the model.

        Z are the logits computed by BLAS one row at a time (:meth:`check_logits`); the margin
        of the target over the others must exceed :meth:`rounding_need` (an answer within
        rounding of the decision boundary is in one class or the other depending on who
        evaluates it).
        """
        Z = self.check_logits(Xr)
        with np.errstate(over="ignore", invalid="ignore"):
            tm = self.target_margin(Z, tr)
            # the cheap bound decides most rows (need ≤ bound); the exact need (a product with
            # |A|, an (N, D) temporary) only for the others: the same outcome
            sure = tm > self.need_bound(Xr)
            if sure.all():
                return sure, Z
            rest = np.flatnonzero(~sure)
            need = self.rounding_need(Xr[rest], tr[rest])
            sure[rest] = np.isfinite(need) & (tm[rest] > need)
            return sure, Z

    def need_bound(self, Xs):
        """Return an upper bound of :meth:`rounding_need` per row (cheap: one norm per row).

        By Cauchy–Schwarz S_i = Σ_j |a_ij x_j| + |b_i| ≤ ‖a_i‖₂ ‖x‖₂ + |b_i|, so the need
        4γ (S_k + max_{j≠k} S_j) ≤ 8γ (max_i ‖a_i‖₂ ‖x‖₂ + max_i |b_i|); the factor 1 + 8γ covers
        the rounding of the bound itself. Infinite or NaN where the norm overflows or ``Xs``
        holds a NaN: then the exact need decides. One kernel call
        (:func:`fastcf._kernels.linalg.need_bounds`), no NumPy warnings.
        """
        Xs = np.ascontiguousarray(Xs, dtype=np.float64)
        return linalg.need_bounds(Xs, self.gamma, self.max_row_norm, self.max_abs_b)

    def finite_need(self, Xs, tidx):
        """Return :meth:`rounding_need` of the rows, 0 where it is not finite (silently).

        The need a re-solve adds to its margin (or τ): a row whose need overflows (or holds a
        NaN) adds none.
        """
        with np.errstate(over="ignore", invalid="ignore"):
            need = self.rounding_need(Xs, tidx)
        return np.where(np.isfinite(need), need, 0.0)

    def need_of_norm(self, nx):
        """Return the one rounding-need bound ``8γ (max_i ‖a_i‖₂ · nx + max_i |b_i|)(1 + 8γ)``.

        ``nx`` (a float) bounds ‖x‖₂ of the point judged. The formula of :meth:`need_bound`
        (:func:`fastcf._kernels.linalg.need_of_norm`), for the ``max_changes`` search
        (``fastcf._linear.route``), which bounds ‖x‖₂ of the answers it has not formed.
        """
        return linalg.need_of_norm(float(nx), self.gamma, self.max_row_norm, self.max_abs_b)

    def clear_of_need(self, Xs, margins):
        """Return (clear, n_clear): rows whose margin exceeds 4 × :meth:`need_bound` at ``Xs``.

        The first test of ``verify.margin_rises`` in one kernel
        (:func:`fastcf._kernels.verdict.clear_of_need`, the same bound).
        """
        Xs = np.ascontiguousarray(Xs, dtype=np.float64)
        return _vk.clear_of_need(Xs, margins, self.gamma, self.max_row_norm, self.max_abs_b)

    def source_tests(self, X, tidx, proba):
        """Return (P0, meets, sure): x̄'s probabilities, p_target(x̄) ≥ τ, and the class test.

        ``sure`` has one entry per True of ``meets``: :meth:`in_target` of those rows. Each
        model answers with its own kernels (:meth:`BinaryModel.source_tests`,
        :meth:`SoftmaxModel.source_tests`).
        """
        raise NotImplementedError

    def in_target(self, X, tidx, proba=None):
        """Return which rows of ``X`` the model surely puts in ``tidx`` (and p ≥ ``proba``).

        The class: :meth:`surely_in`. ``proba``: p_target ≥ τ in that same row-by-row
        arithmetic (at p = τ another evaluation can differ by the rounding of the logits).
        """
        good, Z = self.surely_in(X, tidx)
        if proba is not None:
            P = self.proba_from_logits(Z)
            good &= P[np.arange(tidx.size), tidx] >= proba
        return good


class BinaryModel(_LinearModel):
    """Binary logistic model ``p(classes[1]) = σ(w·x + c)``; from one row, or two (w = a1 − a0).

    Its solvers (routed by :mod:`fastcf._linear.solvers`): the closed form of problem (2) and
    the projections of ``proba=`` / ``region=True`` (:mod:`fastcf._linear.binary`).
    """

    binary = True

    def __init__(self, A, b):
        if A.shape[0] == 2:  # two-class softmax == logistic with w = a1 − a0
            self.w = np.ascontiguousarray(A[1] - A[0])
            self.c = float(b[1] - b[0])
        else:
            self.w = np.ascontiguousarray(A[0])
            self.c = float(b[0])
        A2 = np.ascontiguousarray(np.vstack([np.zeros_like(self.w), self.w]))
        super().__init__(A2, np.array([0.0, self.c]), A.shape[0])
        self.abs_w = np.abs(self.w)  # the rounding need's weights
        self._thetas = {}  # proba τ -> θ of theta() (a few values; a dict write is atomic)

    def proba_as_region(self, proba):
        """Tell whether ``proba=τ`` is solved as ``region=True`` at margin logit τ (τ ≥ 1/2).

        p ≥ τ ≥ 1/2 is ζ ≥ logit τ ≥ 0, and the class is ζ > 0 beyond rounding: at τ = 1/2 (or
        within rounding of it) every answer sat on the decision boundary and failed the
        verification (all 569 breast-cancer rows), so the margin gets ``verify.region``'s raises.
        The one rule for the long path and the short ones (``fast``, ``manhattan``).
        """
        return proba is not None and proba >= 0.5

    def theta(self, proba):
        """Return θ = logit τ, rounded up until σ(θ) ≥ τ in floating point (cached per τ).

        Meeting ζ ≥ θ then really gives p_target ≥ τ.
        """
        theta = self._thetas.get(proba)
        if theta is None:
            theta = math.log(proba) - math.log1p(-proba)
            while self.proba_from_logits(np.array([theta]))[0, 1] < proba:
                theta = float(np.nextafter(theta, np.inf))
            if len(self._thetas) > 64:
                self._thetas.clear()
            self._thetas[proba] = theta
        return theta

    def model_logits(self, X):
        """Return the logits w·x + c, shape (N,), with BLAS (as scikit-learn)."""
        with np.errstate(over="ignore", invalid="ignore"):
            return X @ self.w + self.c

    def check_logits(self, X):
        """Return the logits by BLAS one row at a time (the bits of ``predict`` of a row alone).

        A batch GEMV rounds differently from a row's dot product. NumPy's matmul of a stack of
        (1, D) matrices calls the same BLAS routine for every element of the stack, so row n here
        equals ``X[n:n+1] @ w`` bit for bit. Used to verify answers, so that a query's verdict
        does not depend on its batch.
        """
        return (X[:, None, :] @ self.w)[:, 0] + self.c

    def proba_from_logits(self, Z):
        """Return the (N, 2) probabilities of logits ``Z`` of shape (N,)."""
        return _lk.binary_proba(np.ascontiguousarray(Z, dtype=np.float64).reshape(-1))

    def predict_index(self, Z):
        """Return the predicted class index (1 iff z > 0)."""
        return (np.asarray(Z).reshape(-1) > 0).astype(np.int64)

    def rows_proba_pred(self, Z):
        """Return (P, predicted index) of softmax-form logits ``Z = [0, w·x + c]`` (N, 2)."""
        P = self.proba_from_logits(Z[:, 1] - Z[:, 0])
        return P, (Z[:, 1] - Z[:, 0] > 0).astype(np.int64)

    def rounding_need(self, Xs, tidx):
        """Return the margin ``4γ (Σ_j |w_j x_j| + |c|)`` that no rounding of the logit exceeds.

        The other logit is 0 (see the module docstring); one kernel
        (:func:`fastcf._kernels.verdict.binary_needs`, the formula :meth:`surely_in` reads),
        row by row, so each row's bits do not depend on its batch.
        """
        Xs = np.ascontiguousarray(Xs, dtype=np.float64)
        return _vk.binary_needs(Xs, self.abs_w, abs(self.c), self.gamma)

    def _judge(self, X, tidx, proba, only_meets):
        # (P, meets, good, z): the verification's test in one kernel on the model's own logits
        X = np.ascontiguousarray(X, dtype=np.float64)
        wx = X[:, None, :] @ self.w  # check_logits' products; the kernel adds c (the same bits)
        tau = math.nan if proba is None else float(proba)
        z, P, meets, good = _vk.binary_judge(
            X, wx, self.c, tidx, tau, only_meets, self.abs_w, abs(self.c), self.gamma,
            self.max_row_norm, self.max_abs_b,
        )  # fmt: skip
        return P, meets, good, z

    def surely_in(self, Xr, tr):
        """Return (in_class, Z): see :meth:`_LinearModel.surely_in` (one kernel here)."""
        _P, _meets, good, z = self._judge(Xr, tr, None, False)
        return good, z

    def in_target(self, X, tidx, proba=None):
        """Return which rows the model surely puts in ``tidx`` (and p ≥ ``proba``).

        As :meth:`_LinearModel.in_target`, in one kernel
        (:func:`fastcf._kernels.verdict.binary_judge`).
        """
        return self._judge(X, tidx, proba, False)[2]

    def source_tests(self, X, tidx, proba):
        """Return (P0, meets, sure): see :meth:`_LinearModel.source_tests` (one kernel here)."""
        P0, meets, good, _z = self._judge(X, tidx, proba, True)
        return P0, meets, good[meets]

    def target_margin(self, Z, tidx):
        """Return the target's logit margin: z for class 1, −z for class 0."""
        return np.where(tidx == 1, Z, -Z)

    def metric_extras(self, v, free, default):
        """Return (V w, wᵀ V w, Σ_free w²): the metric's constants of the closed form."""
        vw = np.ascontiguousarray(v * self.w) if not default else self.w
        return vw, float(self.w @ vw), float(np.sum(self.w[free] ** 2))


class SoftmaxModel(_LinearModel):
    """Softmax model ``p = softmax(A x + b)`` with K ≥ 3 classes.

    Its solvers (routed by :mod:`fastcf._linear.solvers`): the K-space Newton method and its
    λ-search, λ-path and region dual (:mod:`fastcf._linear.softmax`); with ``bounds=``, the
    projected Newton method (:mod:`fastcf._linear.boxed`); then the fallback entries
    (:mod:`fastcf._linear.fallbacks`).
    """

    binary = False

    def proba_as_region(self, proba):
        """Tell whether ``proba=τ`` is solved as ``region=True``: never for a softmax model.

        See :meth:`BinaryModel.proba_as_region`.
        """
        return False

    def __init__(self, A, b, columns=True):
        super().__init__(A, b, A.shape[0])
        self.columns = bool(columns)
        # Aᵀ in the layout of the model's own coefficients' transpose: C order (D, K) where
        # they are stored by columns (recent scikit-learn's multinomial coef_), else the
        # (Fortran-order) view of A. BLAS makes a different call, with different bits, for each;
        # and the former is ~2.3× slower at (131 072, 16) (measured: 675 against 290 µs a row)
        self.CT = self.AT if self.columns else A.T
        self.abs_A = np.abs(A)  # the rounding need's weights (|A|ᵀ: a view, the fast layout)
        self.close_rows = _close_rows(A, self.G)
        # the features that move a logit difference (a column not constant over the classes):
        # with none of them free, problem (2) cannot move p (Manhattan lam=: "unreachable")
        self.moves_logits = np.any(A != A[:1], axis=0)

    def model_logits(self, X):
        """Return the logits X Aᵀ + b, shape (N, K), with BLAS (as scikit-learn)."""
        with np.errstate(over="ignore", invalid="ignore"):
            return X @ self.CT + self.b

    def check_logits(self, X):
        """Return the logits by BLAS one row at a time (the bits of ``predict`` of a row alone).

        A batch GEMM rounds differently from a row GEMV. NumPy's matmul of a stack of (1, D)
        matrices calls the same BLAS routine for every element of the stack, so row n here
        equals ``X[n:n+1] @ coef.T + b`` bit for bit, coef in the layout of the model's own
        coefficients (``make_model``'s ``columns``): scikit-learn's ``decision_function`` of the
        row for its estimators, ``X[n:n+1] @ A.T + b`` for ``from_arrays``' C-order A. Used to
        verify answers, so that a query's verdict does not depend on its batch.
        """
        Z = (X[:, None, :] @ self.CT)[:, 0, :]
        Z += self.b  # (in place: the same bits as Z + b, one array fewer)
        return Z

    def proba_from_logits(self, Z):
        """Return the stable softmax of the rows of ``Z``.

        The ufuncs themselves, in place: the bits of ``E = exp(Z − max Z); E / Σ E`` (what
        ``Z.max`` and ``E.sum`` call), without the methods' Python wrappers and two arrays.
        """
        E = np.subtract(Z, np.maximum.reduce(Z, axis=1, keepdims=True))
        np.exp(E, out=E)
        E /= np.add.reduce(E, axis=1, keepdims=True)
        return E

    def predict_index(self, Z):
        """Return the predicted class index (argmax; ties to the first class, as scikit-learn)."""
        return np.argmax(Z, axis=1)

    def rows_proba_pred(self, Z):
        """Return (P, predicted index) of logits ``Z`` (N, K)."""
        return self.proba_from_logits(Z), np.argmax(Z, axis=1)

    def source_tests(self, X, tidx, proba):
        """Return (P0, meets, sure): see :meth:`_LinearModel.source_tests`.

        A first kernel (:func:`fastcf._kernels.verdict.softmax_below`) finds the rows whose
        p_target is below τ beyond any rounding of the model's arithmetic (nearly every row of
        a ``proba=`` query): ``meets`` is False there, without the model's products, and their
        rows of P0 are NaN. The others: P0 by the model's own logits (BLAS one row at a time,
        :meth:`check_logits`; a row's bits do not depend on the rows beside it); ``sure`` (one
        per True of ``meets``) is :meth:`in_target` of those rows, on the same logits.
        """
        X = np.ascontiguousarray(X, dtype=np.float64)
        N = X.shape[0]
        with np.errstate(over="ignore", invalid="ignore"):  # (not below where not finite)
            Z = self.logits(X)
        below = _vk.softmax_below(
            Z, X, tidx, math.log(proba), self.gamma, self.max_row_norm, self.max_abs_b
        )
        P0 = np.empty((N, self.A.shape[0]))
        P0.fill(np.nan)
        meets = np.zeros(N, dtype=bool)
        if np.count_nonzero(below) == N:  # (a single query's usual case)
            return P0, meets, np.zeros(0, dtype=bool)
        rows = np.flatnonzero(~below)
        with np.errstate(over="ignore", invalid="ignore"):
            P0[rows] = self.proba_from_logits(self.check_logits(X[rows]))
        meets[rows] = P0[rows, tidx[rows]] >= proba
        sure = self.in_target(X[meets], tidx[meets], proba) if meets.any() else np.zeros(0, bool)
        return P0, meets, sure

    def rounding_need(self, Xs, tidx):
        """Return ``4γ (S_k + max_{j≠k} S_j)`` per row: no rounding of the logits exceeds it.

        See the module docstring; computed one row at a time (a stack of rows), so each row's
        bits do not depend on its batch.
        """
        Xa = np.abs(Xs)[:, None, :]
        S = (Xa @ self.abs_A.T)[:, 0, :] + self.abs_b
        rows = np.arange(Xs.shape[0])
        Sk = S[rows, tidx]
        S[rows, tidx] = -np.inf
        return 4 * self.gamma * (Sk + S.max(axis=1))

    def target_margin(self, Z, tidx):
        """Return ``z_k − max_{j≠k} z_j`` per row."""
        rows = np.arange(tidx.size)
        Zo = Z.copy()
        Zo[rows, tidx] = -np.inf
        return Z[rows, tidx] - Zo.max(axis=1)

    def metric_extras(self, v, free, default):
        """Return (None, None, None): the closed form's constants exist for binary models only."""
        return None, None, None
