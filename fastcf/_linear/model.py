"""The two linear model families as objects with one interface (paper 000, §3 and §4).

A :class:`BinaryModel` (one weight row w and an intercept c: ``p(classes[1]) = σ(w·x + c)``,
scikit-learn's convention; a two-class softmax is folded to ``w = a1 − a0``, ``c = b1 − b0``) and a
:class:`SoftmaxModel` (``p = softmax(A x + b)``, K ≥ 3) answer the same questions — the model's
logits, probabilities and predicted class, the rounding bound of a logit, whether an answer is
surely in its target class — and carry their own solvers of problem (2) (``lam``), of ``proba=`` /
``region=True`` (``constrained``) and of the λ-path (``path``). :func:`make_model` picks the family
once, so the explainer (:class:`fastcf.LinearExplainer`) holds one model object and never asks
which family it has.

Both keep the softmax form of the model (for binary models the rows ``[0, w]`` and intercepts
``[0, c]``), used by the K-space solvers and the D-dimensional reference methods, with its
transpose, its Gram matrix ``A Aᵀ``, its row norms and ``|b|`` (the λ-path's certificate), and the
rounding constants γ.

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

from .._kernels import logistic as _lk
from .._kernels import softmax as _sk
from .._status import Status
from ..results import CounterfactualPath
from . import binary as _binary
from . import boxed as _boxed
from . import softmax as _softmax
from .metric import distances, make_metric
from .verify import replace_rows, take_rows

__all__ = ["BinaryModel", "SoftmaxModel", "make_model"]


def make_model(A, b, columns=True):
    """Return the model object of logits ``A x + b``: binary for K ≤ 2 rows, else softmax.

    ``columns``: whether the model's own coefficient array is stored by columns (Fortran order,
    as scikit-learn's multinomial ``coef_``), which decides the BLAS call, and so the bits, of
    its logits ``X @ coef.T`` (:meth:`SoftmaxModel.check_logits`).
    """
    return BinaryModel(A, b) if A.shape[0] <= 2 else SoftmaxModel(A, b, columns)


def _close_rows(A, G):
    """Tell whether two rows of ``A`` differ by less than 1e-4 of their norm, but not by 0.

    Where they do, the Gram matrix G = A Aᵀ knows their difference to ε·10⁸ relative at best,
    and the K-space solvers can be wrong about it (see :meth:`SoftmaxModel._lam_shifted`).
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
        # for the cheap upper bound of the rounding need (fast._need_bound)
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
        the rounding of the bound itself (as ``fastcf._linear.fast._need_bound``). Infinite or
        NaN where the norm overflows: then the exact need decides.
        """
        with np.errstate(over="ignore", invalid="ignore"):
            return self.need_of_norm(np.sqrt(np.einsum("ij,ij->i", Xs, Xs)))

    def need_of_norm(self, nx):
        """Return the one rounding-need bound ``8γ (max_i ‖a_i‖₂ · nx + max_i |b_i|)(1 + 8γ)``.

        ``nx`` (a float or an array) bounds ‖x‖₂ of the point judged. The one formula of the
        bound, for :meth:`need_bound`, the short paths (``fastcf._linear.fast``) and the
        ``max_changes`` search (``fastcf._linear.route``): the same operations in the same
        order, so the same bits, whether ``nx`` is a Python float or an array.
        """
        g = self.gamma
        return 8.0 * g * (self.max_row_norm * nx + self.max_abs_b) * (1 + 8 * g)

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

    Solvers: the closed form of problem (2) and the projections of ``proba=`` / ``region=True``
    (:mod:`fastcf._linear.binary`).
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

        The other logit is 0 (see the module docstring); computed one row at a time, so each
        row's bits do not depend on its batch.
        """
        Xa = np.abs(Xs)[:, None, :]
        return 4 * self.gamma * ((Xa @ self.abs_w)[:, 0] + abs(self.c))

    def target_margin(self, Z, tidx):
        """Return the target's logit margin: z for class 1, −z for class 0."""
        return np.where(tidx == 1, Z, -Z)

    def metric_extras(self, v, free, default):
        """Return (V w, wᵀ V w, Σ_free w²): the metric's constants of the closed form."""
        vw = np.ascontiguousarray(v * self.w) if not default else self.w
        return vw, float(self.w @ vw), float(np.sum(self.w[free] ** 2))

    def lam(self, X, tidx, m, bnd, lams, tol, max_iter):
        """Problem (2), exact: :func:`fastcf._linear.binary.lam_closed_form`."""
        return _binary.lam_closed_form(self, X, tidx, m, bnd, lams)

    def constrained(self, X, tidx, m, bnd, proba, margins, tol, max_iter):
        """``proba=`` / ``region=True``: :func:`fastcf._linear.binary.project`."""
        return _binary.project(self, X, tidx, m, bnd, proba, margins)

    def path(self, x0, k, target, lams, m, warm, tol, max_iter, names, w=None, bnd=None, xx=None):
        """Solve the λ-path: the closed form at every λ (:func:`fastcf._linear.binary.path`)."""
        return _binary.path(self, x0, k, target, lams, m, w, bnd, names)


class SoftmaxModel(_LinearModel):
    """Softmax model ``p = softmax(A x + b)`` with K ≥ 3 classes.

    Solvers: the K-space Newton method and its λ-search, λ-path and region dual
    (:mod:`fastcf._linear.softmax`); with ``bounds=``, the projected Newton method
    (:mod:`fastcf._linear.boxed`).
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
        return (X[:, None, :] @ self.CT)[:, 0, :] + self.b

    def proba_from_logits(self, Z):
        """Return the stable softmax of the rows of ``Z``."""
        m = Z.max(axis=1, keepdims=True)
        E = np.exp(Z - m)
        return E / E.sum(axis=1, keepdims=True)

    def predict_index(self, Z):
        """Return the predicted class index (argmax; ties to the first class, as scikit-learn)."""
        return np.argmax(Z, axis=1)

    def rows_proba_pred(self, Z):
        """Return (P, predicted index) of logits ``Z`` (N, K)."""
        return self.proba_from_logits(Z), np.argmax(Z, axis=1)

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

    def lam(self, X, tidx, m, bnd, lams, tol, max_iter):
        """Problem (2): the reduced Newton method, or the projected one with ``bounds``."""
        if bnd is not None:
            return _boxed.lam_boxed(self, X, tidx, m, bnd, lams, tol, max_iter)
        sol = _softmax.reduced_lam(self, X, tidx, lams, m, tol, max_iter)
        if self.close_rows:
            sol = self._lam_shifted(sol, X, tidx, m, lams, tol, max_iter)
        return sol

    def _lam_residual(self, x, X, tidx, m, lams, P):
        """Return the stationarity residual of problem (2) in input space, relative, per row.

        ∇E = λ W (x − x̄) + Σ_j p_j (a_j − a_k) on the free features, with p the answer's own
        probabilities and the rows' differences formed exactly, relative to the larger of its
        two terms (0 where both are 0).
        """
        free = m.v > 0
        wt = np.where(free, m.wt if not m.unit_wt else 1.0, 0.0)
        with np.errstate(all="ignore"):
            pull = lams[:, None] * wt * (x - X)
            push = np.empty_like(pull)
            for t in np.unique(tidx):  # one product per target, with its exact differences
                r = np.flatnonzero(tidx == t)
                push[r] = P[r] @ (self.A - self.A[t])
            push[:, ~free] = 0.0
            scale = np.maximum(np.abs(pull).max(axis=1), np.abs(push).max(axis=1))
            res = np.abs(pull + push).max(axis=1)
            return np.where(scale > 0.0, res / scale, np.where(res == 0.0, 0.0, np.inf))

    def _lam_shifted(self, sol, X, tidx, m, lams, tol, max_iter):
        """Re-solve ``lam=`` rows whose answer is not stationary in input space, shifted.

        For models with nearly equal rows (:func:`_close_rows`) only: K-space's G = A V Aᵀ of
        the rows themselves rounds their differences away, and it can stop where its own
        gradient is 0 and the input space's is not (rows equal to 1e-9 at x̄ ~ 10⁷: x̄ itself
        reported as converged, where the optimum is 5·10² away; round Q's strict xfail). Those
        rows are solved again on the model less their target's row (as :meth:`shifted_retry`),
        and the answer with the smaller input-space residual is kept. Taken uncertified: the
        explainer checks it in the model's own arithmetic.
        """
        if sol.proba is None:
            return sol
        lams = np.broadcast_to(np.asarray(lams, dtype=float), (X.shape[0],))
        res = self._lam_residual(sol.x, X, tidx, m, lams, sol.proba)
        rows = np.flatnonzero(~(res <= 1e-6))
        if rows.size == 0:
            return sol
        for t in np.unique(tidx[rows]):
            r = rows[tidx[rows] == t]
            pair = self._shifted(t, m)
            if pair is None:
                continue
            shifted, ms = pair
            sub = _softmax.reduced_lam(shifted, X[r], tidx[r], lams[r], ms, tol, max_iter)
            sub = sub._replace(certified=None)
            if sub.proba is None:
                continue
            with np.errstate(over="ignore", invalid="ignore"):
                # the answer's probabilities in the model's own arithmetic
                P = self.proba_from_logits(self.check_logits(sub.x))
            new = self._lam_residual(sub.x, X[r], tidx[r], m, lams[r], P)
            won = np.flatnonzero((new < res[r]) & np.isfinite(sub.x).all(axis=1))
            if won.size:
                sol = replace_rows(sol, r[won], take_rows(sub, won))
        return sol

    def constrained(self, X, tidx, m, bnd, proba, margins, tol, max_iter):
        """``proba=`` (``margins`` None) or ``region=True`` (``margins``: one per row).

        Without bounds, the K-space solvers, then :meth:`retry` for the rows they fail: K-space
        forms z̄ + G y, and where z̄ is large and the answer's logits are not, or G y cancels
        between nearly equal rows, its rounding is real. The model less the target's row
        (:meth:`shifted_retry`) forms the rows' differences exactly, and the input-space
        solvers (:meth:`input_space_retry`) do not form z̄ + G y at all (soak rounds N, O, Q).
        """
        if bnd is not None:
            return self._boxed(X, tidx, m, bnd, proba, margins)
        sol = _softmax.constrained(self, X, tidx, m, proba, margins, tol, max_iter)
        sol = self.retry(sol, X, tidx, m, proba, margins, tol, max_iter)
        if self.close_rows:
            sol = self._closer_shifted(sol, X, tidx, m, proba, margins, tol, max_iter)
        return sol

    def _closer_shifted(self, sol, X, tidx, m, proba, margins, tol, max_iter):
        """For models with close rows: each success against the shifted model's, the closer kept.

        K-space's G = A V Aᵀ holds the rows' differences only to ε·(‖a‖/‖a_i − a_j‖)², and
        its ``region=``/``proba=`` answers, feasible, can be that far from the optimum: 1.4e-4
        on wine with a common part 10⁶ times its rows (71 of 178 ``region=True`` rows). The
        model less the target's row (:meth:`_shifted`) holds them exactly. A row takes its
        answer where it succeeds, is in the class (and meets τ) in this model's arithmetic
        (:meth:`_unsure`) and is closer; every distance is then taken from the answers
        themselves, as K-space's √(yᵀGy) rounds with G too.
        """
        wt = None if m.unit_wt else m.wt
        rows = np.flatnonzero(sol.success)
        for t in np.unique(tidx[rows]):
            r = rows[tidx[rows] == t]
            out = self._shifted_solve(t, m, X, tidx, r, proba, margins, tol, max_iter)
            if out is None:
                continue
            sub, good = out
            with np.errstate(over="ignore", invalid="ignore"):
                closer = distances(sub.x - X[r], wt) < distances(sol.x[r] - X[r], wt)
            won = np.flatnonzero(good & closer)
            if won.size:
                sol = replace_rows(sol, r[won], take_rows(sub, won))
        with np.errstate(over="ignore", invalid="ignore"):
            dist = distances(sol.x - X, wt)
        return sol._replace(distance=np.where(np.isfinite(dist), dist, sol.distance))

    def retry(self, sol, X, tidx, m, proba, margins, tol, max_iter):
        """Re-solve the rows K-space failed: :meth:`shifted_retry`, then :meth:`input_space_retry`.

        Both judge the rows in the model's own arithmetic; a row keeps its K-space answer where
        neither succeeds.
        """
        rows = self._retry_rows(sol, tidx, proba)
        if rows.size == 0:
            return sol
        sol, rows = self.shifted_retry(sol, X, tidx, m, proba, margins, tol, max_iter, rows)
        return self.input_space_retry(sol, X, tidx, m, proba, margins, rows)

    def _retry_rows(self, sol, tidx, proba=None):
        """Return the rows K-space failed: numerical failure, iteration limit, unsure success."""
        st = sol.status
        redo = (st == Status.NUMERIC) | (st == Status.MAXITER)
        # and the successes the explainer's check would fail: within rounding of the class
        # boundary (a margin raised to its rounding need that the dual meets only to its
        # tolerance: a three-way tie with margin=0, soak round N)
        redo[self._unsure(sol, np.flatnonzero(st == Status.OK), tidx, proba)] = True
        return np.flatnonzero(redo)

    def _shifted(self, t, m):
        """Return (the model less row ``t``, the metric ``m`` on it), or None where not finite.

        A − 1 a_tᵀ, b − b_t: every margin z_t − z_j, hence every probability, unchanged, and
        its Gram matrix holds the rows' differences exactly (:meth:`shifted_retry`,
        :meth:`_lam_shifted`). Built per call, not kept: only failing rows need it, and at
        (131 072, 16) each would hold three (K, D) arrays of doubles, ~50 MB.
        """
        with np.errstate(over="ignore", invalid="ignore"):
            shifted = SoftmaxModel(self.A - self.A[t], self.b - self.b[t])
        if not (np.isfinite(shifted.A).all() and np.isfinite(shifted.b).all()):
            return None
        frozen = m.v == 0.0
        weights = None if m.unit_wt else np.where(frozen, 1.0, m.wt)
        return shifted, make_metric(shifted, frozen, weights)

    def shifted_retry(self, sol, X, tidx, m, proba, margins, tol, max_iter, rows):
        """Re-solve ``rows`` in K-space on the model less their target's row.

        Returns ``sol`` with the rows answered replaced, and the rows still failing.

        Subtracting the target's row and intercept from every row (A − 1 a_tᵀ, b − b_t) changes
        no margin z_t − z_j, hence no probability and no answer. But its Gram matrix holds the
        rows' differences, formed exactly where two rows are nearly equal, where G = A Aᵀ of the
        rows themselves had rounded them away: with rows −(1, 10⁻⁹) and −(1, 0) at x̄ ~ 10⁷
        K-space could not see the 10⁻⁹ (soak round Q, seed 311). One model per target among
        those rows. Its answers are certified for the shifted model's arithmetic only, so they
        are taken uncertified: the explainer checks them in the model's own.
        """
        left = np.ones(rows.size, dtype=bool)
        for t in np.unique(tidx[rows]):
            at = np.flatnonzero(tidx[rows] == t)
            r = rows[at]
            out = self._shifted_solve(t, m, X, tidx, r, proba, margins, tol, max_iter)
            if out is None:
                continue
            sub, good = out
            won = np.flatnonzero(good)
            if won.size:
                sol = replace_rows(sol, r[won], take_rows(sub, won))
                left[at[won]] = False
        return sol, rows[left]

    def _shifted_solve(self, t, m, X, tidx, r, proba, margins, tol, max_iter):
        """Solve rows ``r`` (target ``t``) on the shifted model; return (answers, good) or None.

        ``good``: the answers that succeed, are finite and that the verification would accept
        in this model's arithmetic (:meth:`_unsure`); ``proba=`` answers short of τ here are
        re-solved first (:meth:`_shifted_raise`). Taken uncertified. ``None`` where the shifted
        model is not finite.
        """
        pair = self._shifted(t, m)
        if pair is None:
            return None
        shifted, ms = pair
        mg = None if margins is None else margins[r]
        sub = _softmax.constrained(shifted, X[r], tidx[r], ms, proba, mg, tol, max_iter)
        sub = sub._replace(certified=None)
        if proba is not None:
            sub = self._shifted_raise(shifted, ms, sub, X[r], tidx[r], proba, tol, max_iter)
        good = sub.success & np.isfinite(sub.x).all(axis=1)
        good[self._unsure(sub, np.flatnonzero(good), tidx[r], proba)] = False
        return sub, good

    def _shifted_raise(self, shifted, ms, sub, X, tidx, proba, tol, max_iter):
        """Re-solve ``proba=`` answers of the shifted model that are short of τ in this one's.

        The shifted model meets τ in its own arithmetic, and this model's logits round
        differently: by ε·|z| where a common part makes them large (a part 10⁶ times the rows of
        wine: logits ~10⁷, p_target short of τ by 1e-11 on 97 of 178 rows, each then refused
        by the verification as within rounding of the boundary). Those answers that are in the
        class but short are solved again for log τ raised by twice their shortfall and at least
        twice this model's rounding need (the bound of how far the two arithmetics differ).
        """
        ok = np.flatnonzero(sub.success & np.isfinite(sub.x).all(axis=1))
        if ok.size == 0:
            return sub
        with np.errstate(over="ignore", invalid="ignore"):
            sure, Z = self.surely_in(sub.x[ok], tidx[ok])
            p = self.proba_from_logits(Z)[np.arange(ok.size), tidx[ok]]
        short = sure & (p < proba)
        if not short.any():
            return sub
        rows = ok[short]
        need = _softmax.finite_need(self, sub.x[rows], tidx[rows])
        up = _softmax.raise_log_tau(proba, p[short])
        up = _softmax.raise_at_least(proba, up, 2 * need + 8 * np.finfo(float).eps).max()
        tau = proba * math.exp(up)
        if not tau < 1.0:
            return sub
        again = _softmax.constrained(shifted, X[rows], tidx[rows], ms, tau, None, tol, max_iter)
        return replace_rows(sub, rows, again._replace(certified=None))

    def input_space_retry(self, sol, X, tidx, m, proba, margins, rows=None):
        """Re-solve in input space the rows of ``sol`` that K-space failed (or ``rows``).

        Those it ended in a numerical failure or at the iteration limit, and its successes that
        the explainer's verification would refuse (within rounding of the class boundary), are
        solved again by the solvers of ``bounds=`` with an unbounded box
        (:func:`fastcf._linear.boxed.constrained_boxed`: the region QP by Clarabel, the
        λ-search over projected Newton), on the model scaled by :meth:`_scaled`. A row takes
        that answer where it succeeds and the verification would accept it, or the proof that
        no free feature moves any margin (UNREACHABLE), or, for a row K-space failed, an optimum
        that another class wins (BELOW_DECISION); otherwise it keeps its K-space answer.
        """
        st = sol.status
        rows = self._retry_rows(sol, tidx, proba) if rows is None else rows
        if rows.size == 0:
            return sol
        D = X.shape[1]
        box = (np.full(D, -np.inf), np.full(D, np.inf))
        mg = None if margins is None else margins[rows]
        sub = self._boxed(X[rows], tidx[rows], m, box, proba, mg)
        good = sub.success & np.isfinite(sub.x).all(axis=1)
        good[self._unsure(sub, np.flatnonzero(good), tidx[rows], proba)] = False
        # and a proof that no free feature moves any margin (rows equal on the free features,
        # compared exactly), which says more than K-space's numerical failure; and for rows
        # K-space failed (not its unsure successes), the documented outcome of ``proba=τ`` whose
        # optimum another class wins (soak round Q: τ = 1/K with two zero rows, where the
        # K-space λ-search cancels at logits ~1.6·10⁶)
        good |= sub.status == Status.UNREACHABLE
        good |= (sub.status == Status.BELOW_DECISION) & (st[rows] != Status.OK)
        won = np.flatnonzero(good)
        if won.size == 0:
            return sol
        out = replace_rows(sol, rows[won], take_rows(sub, won))
        if won.size == sol.status.shape[0]:  # every row answered in input space
            out = out._replace(method=sub.method)
        return out

    def _boxed(self, X, tidx, m, bnd, proba, margins):
        """:func:`fastcf._linear.boxed.constrained_boxed` on the model scaled by :meth:`_scaled`.

        The box scales with the queries, and the answers (x, distance, λ) back: exact, by the
        power of 2. Its λ-search brackets λ over e^±80 (λ in units of 1/distance²): with
        coefficients of 1.2e-19 and a box [0, ∞), the answer 5.6·10¹⁸ away needs λ ~ 1e-38, and
        the unscaled search called the query infeasible (soak round S, seed 393).
        """
        model, Xs, e = self._scaled(X, bnd)
        if e == 0:
            return _boxed.constrained_boxed(self, X, tidx, m, bnd, proba, margins)
        box = (np.ldexp(bnd[0], e), np.ldexp(bnd[1], e))
        sub = _boxed.constrained_boxed(model, Xs, tidx, m, box, proba, margins)
        with np.errstate(over="ignore", under="ignore"):
            lam = None if sub.lam is None else np.ldexp(sub.lam, 2 * e)
            return sub._replace(x=np.ldexp(sub.x, -e), distance=np.ldexp(sub.distance, -e), lam=lam)

    def _scaled(self, X, bnd=None):
        """Return (model, X, e): the model with rows A / s and the queries s X, s = 2^e.

        Where the coefficients are tiny (max |a_ij| < 2⁻²⁰), the input-space solvers' gradient
        tolerances, absolute, are met at x̄ itself (coefficients of 2.2e-16: a soak found
        ``proba=`` stopping at its iteration limit), and their λ-search's bracket is too short
        (:meth:`_boxed`). Scaled so that max |s a_ij| lies in [1/2, 1), with s x (and the box
        ``bnd``, s lo and s hi): every product a_ij x_j, hence every logit, is the same double,
        and the answer scales back exactly. Unscaled (e = 0) where s x or the box would leave
        the doubles.
        """
        amax = float(np.abs(self.A).max())
        if not 0.0 < amax < 2.0**-20:
            return self, X, 0
        e = math.frexp(amax)[1]  # amax = f 2^e, f in [1/2, 1)
        with np.errstate(over="ignore", under="ignore"):
            Xs = np.ldexp(X, e)
            exact = np.array_equal(np.ldexp(Xs, -e), X) and np.isfinite(Xs).all()
            As = np.ldexp(self.A, -e)
            exact = exact and np.array_equal(np.ldexp(As, e), self.A)
            for v in () if bnd is None else bnd:
                vs = np.ldexp(v, e)
                exact = exact and np.array_equal(np.ldexp(vs, -e), v)
                exact = exact and np.array_equal(np.isfinite(vs), np.isfinite(v))
        if not exact:
            return self, X, 0
        return SoftmaxModel(As, self.b, self.columns), Xs, e

    def _unsure(self, sol, rows, tidx, proba=None):
        """Return the rows of ``rows`` that the explainer's verification would refuse.

        Those whose answer no certificate covers and that are not :meth:`surely_in` their class
        or, with ``proba``, whose p_target is below τ in that arithmetic (:meth:`in_target`).
        """
        if sol.certified is not None:
            rows = rows[~sol.certified[rows]]
        if rows.size == 0:
            return rows
        with np.errstate(over="ignore", invalid="ignore"):
            good = self.in_target(sol.x[rows], tidx[rows], proba)
        return rows[~good]

    def path(self, x0, k, target, lams, m, warm, tol, max_iter, names, w=None, bnd=None, xx=None):
        """Solve the λ-path: one kernel call, or projected Newton λ by λ with ``bounds``."""
        if bnd is not None:
            return _boxed.path_boxed(
                self, x0, k, target, lams, m, w, bnd, warm, tol, max_iter, names
            )
        pth = _softmax.reduced_path(self, x0, k, target, lams, m, warm, tol, max_iter, names, xx=xx)
        if self.close_rows:
            pth = self._path_shifted(pth, x0, k, target, lams, m, warm, tol, max_iter, names)
        return pth

    def _path_shifted(self, pth, x0, k, target, lams, m, warm, tol, max_iter, names):
        """Re-solve the λ of a path whose answer is not stationary in input space, shifted.

        :meth:`_lam_shifted` for a path (models with close rows only): the λ whose answer's
        relative input-space residual is above 1e-6 are solved again along the path of the
        model less the target's row, and each keeps the answer with the smaller residual. A
        replaced answer keeps its status only where the model's own arithmetic puts it surely in
        the target class (:meth:`surely_in`), as :func:`~fastcf._linear.softmax.reduced_path`
        judges its doubtful rows; otherwise it is a numerical failure. Every distance is taken
        from the answers themselves: K-space's √(yᵀGy) rounds with G too (1e-4 relative on a
        model with a common part 10⁶ times its rows).
        """
        X = pth.X.copy()
        L = lams.size
        with np.errstate(over="ignore", invalid="ignore"):
            P = self.proba_from_logits(self.check_logits(X))
        res = self._lam_residual(X, np.broadcast_to(x0, X.shape), np.full(L, k), m, lams, P)
        rows = np.flatnonzero(~(res <= 1e-6))
        proba, nit, status, gn = (a.copy() for a in (pth.proba, pth.nit, pth.status, pth.grad_norm))
        pair = None if rows.size == 0 else self._shifted(k, m)
        if pair is not None:
            shifted, ms = pair
            sub = _softmax.reduced_path(
                shifted, x0, k, target, lams[rows], ms, warm, tol, max_iter, names
            )
            XS = sub.X
            with np.errstate(over="ignore", invalid="ignore"):
                PS = self.proba_from_logits(self.check_logits(XS))
            X0 = np.broadcast_to(x0, XS.shape)
            new = self._lam_residual(XS, X0, np.full(rows.size, k), m, lams[rows], PS)
            won = np.flatnonzero((new < res[rows]) & np.isfinite(XS).all(axis=1))
            r = rows[won]
            X[r], proba[r], nit[r] = XS[won], sub.proba[won], nit[r] + sub.nit[won]
            status[r], gn[r] = sub.status[won], sub.grad_norm[won]
            ok = r[status[r] == Status.OK]
            if ok.size:
                with np.errstate(over="ignore", invalid="ignore"):
                    sure = self.surely_in(X[ok], np.full(ok.size, k))[0]
                status[ok[~sure]] = Status.NUMERIC
        return CounterfactualPath(
            lams=lams,
            X=X,
            x0=x0,
            target=target,
            proba=proba,
            distance=distances(X - x0, None if m.unit_wt else m.wt),
            nit=nit,
            success=status == Status.OK,
            status=status,
            grad_norm=gn,
            method=pth.method,
            feature_names=names,
        )
