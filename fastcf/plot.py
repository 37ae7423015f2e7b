"""Plots of counterfactuals, λ-paths and SVM enumerations (matplotlib, optional).

matplotlib is imported inside each function, so ``import fastcf.plot`` works without it; calling a
function without matplotlib raises an :class:`ImportError` that says how to install it
(``pip install fastcf[plot]``). Every function draws on the Axes it is given (or on a new figure)
and returns the Axes; none calls ``plt.show()``.

Examples
--------
>>> import matplotlib
>>> matplotlib.use("Agg")
>>> import numpy as np

from ._validation import check_int
>>> import fastcf
>>> from fastcf.plot import plot_changes
>>> ex = fastcf.LinearExplainer.from_arrays(np.array([[1.0, -2.0, 0.0]]), np.array([0.0]))
>>> res = ex.explain(np.array([-1.0, 1.0, 0.5]), target=1, proba=0.9)
>>> ax = plot_changes(res)
>>> len(ax.patches)  # one bar per feature that moved
2
"""

from __future__ import annotations

import numpy as np

from ._validation import check_int

__all__ = ["plot_changes", "plot_enumeration", "plot_image", "plot_path", "plot_recourse"]


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "fastcf.plot needs matplotlib: pip install fastcf[plot] (or pip install matplotlib)"
        ) from exc
    return plt


def _axes(axes, n, figsize):
    """Return ``n`` Axes: the ones given, or those of a new figure with ``n`` panels."""
    if axes is None:
        plt = _pyplot()
        _fig, axs = plt.subplots(1, n, figsize=figsize, layout="constrained", squeeze=False)
        return list(axs[0])
    axs = list(np.atleast_1d(np.asarray(axes, dtype=object)).ravel())
    if len(axs) != n:
        raise ValueError(f"axes must hold {n} Axes; got {len(axs)}")
    return axs


def _target_index(target, n_classes, classes, target_index):
    if target_index is not None:
        i = int(target_index)
        if not 0 <= i < n_classes:
            raise ValueError(f"target_index must be in [0, {n_classes}); got {target_index!r}")
        return i
    if classes is not None:
        classes = np.asarray(getattr(classes, "classes_", classes))
        hits = np.flatnonzero(classes == target)
        if hits.size != 1:
            raise ValueError(
                f"the path's target {target!r} is not one of classes {classes.tolist()}"
            )
        return int(hits[0])
    if isinstance(target, (int, np.integer)) and not isinstance(target, bool):
        if 0 <= int(target) < n_classes:
            return int(target)
    raise ValueError(
        f"cannot tell which probability column belongs to target {target!r}: pass "
        "classes=explainer.classes_ (or the explainer itself) or target_index="
    )


def plot_path(path, *, classes=None, target_index=None, axes=None):
    """Plot a λ-path: p_target and distance against λ, and distance against p_target.

    Parameters
    ----------
    path : CounterfactualPath
        The result of :meth:`fastcf.LinearExplainer.path`.
    classes : array_like or explainer, optional
        The class labels in the order of the columns of ``path.proba`` (an object with a
        ``classes_`` attribute, such as the explainer, also works). Needed when the labels are
        not ``0, ..., K - 1``.
    target_index : int, optional
        The column of ``path.proba`` that holds p_target (instead of ``classes``).
    axes : sequence of 3 Axes, optional
        Where to draw; a new figure with three panels by default.

    Returns
    -------
    list of 3 matplotlib Axes
        p_target against λ, distance against λ, distance against p_target. λ axes are
        logarithmic; a dashed vertical line marks the largest λ whose solution the model
        classifies as the target (if any).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> import fastcf
    >>> from fastcf.plot import plot_path
    >>> ex = fastcf.LinearExplainer.from_arrays(np.eye(3, 5), np.zeros(3), classes=["a", "b", "c"])
    >>> path = ex.path(np.zeros(5), target="c", lams=np.logspace(2, -2, 20))
    >>> axes = plot_path(path, classes=ex)
    >>> x, p = axes[0].lines[0].get_data()
    >>> bool(np.allclose(p, path.proba[:, 2]))
    True
    """
    lams = np.asarray(path.lams, dtype=float)
    proba = np.asarray(path.proba, dtype=float)
    if proba.ndim != 2 or proba.shape[0] != lams.shape[0]:
        raise ValueError(
            f"path.proba must have shape (L, K) with L = {lams.shape[0]}; got {proba.shape}"
        )
    j = _target_index(path.target, proba.shape[1], classes, target_index)
    p = proba[:, j]
    dist = np.asarray(path.distance, dtype=float)
    ax_p, ax_d, ax_pd = _axes(axes, 3, (11.0, 3.3))
    ax_p.plot(lams, p, marker=".", color="C0")
    ax_p.set(xscale="log", xlabel="λ", ylabel=f"p({path.target!r})", title="target probability")
    ax_d.plot(lams, dist, marker=".", color="C1")
    ax_d.set(xscale="log", xlabel="λ", ylabel="distance ‖x − x̄‖", title="distance")
    ax_pd.plot(p, dist, marker=".", color="C2")
    ax_pd.set(xlabel=f"p({path.target!r})", ylabel="distance ‖x − x̄‖", title="trade-off")
    success = np.asarray(path.success, dtype=bool)
    if success.any():
        lam_ok = float(lams[success].max())
        for ax in (ax_p, ax_d):
            ax.axvline(lam_ok, color="grey", ls="--", lw=0.8)
    return [ax_p, ax_d, ax_pd]


def plot_changes(cf, top=10, *, scale=None, feature_names=None, ax=None):
    """Bar chart of the largest feature changes ``x − x0`` of a counterfactual.

    Parameters
    ----------
    cf : Counterfactual
        One answer (``batch[i]`` picks one from a batch).
    top : int, default=10
        Show at most this many features, those with the largest ``|change|``; features that did
        not move are never shown.
    scale : array_like of shape (D,), optional
        Divide each change by this (e.g. ``explainer.mad_`` to read changes in MADs).
    feature_names : sequence of str, optional
        Overrides ``cf.feature_names`` (default names are ``x0, x1, ...``).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
        Horizontal bars, largest change on top; increases in blue, decreases in red.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> import fastcf
    >>> from fastcf.plot import plot_changes
    >>> ex = fastcf.LinearExplainer.from_arrays(np.array([[3.0, -1.0, 0.5]]), np.array([0.0]))
    >>> res = ex.explain(np.array([-1.0, 0.0, 0.0]), target=1, region=True)
    >>> ax = plot_changes(res, top=2)
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['x1', 'x0']
    """
    top = check_int(top, "top", lo=1)
    if hasattr(cf, "changes"):  # a tabular answer: DataFrames, categories
        raise TypeError(
            "plot_changes draws an answer on numeric features; for one of TabularExplainer "
            "(a FrameCounterfactual) use plot_recourse(res)"
        )
    delta = np.asarray(cf.x, dtype=float) - np.asarray(cf.x0, dtype=float)
    if scale is not None:
        scale = np.broadcast_to(np.asarray(scale, dtype=float), delta.shape)
        delta = np.divide(delta, scale, out=np.zeros_like(delta), where=scale != 0)
    names = feature_names if feature_names is not None else cf.feature_names
    if names is None:
        names = [f"x{i}" for i in range(delta.shape[0])]
    names = [str(n) for n in names]
    if len(names) != delta.shape[0]:
        raise ValueError(f"feature_names must have {delta.shape[0]} names; got {len(names)}")
    moved = np.flatnonzero(delta != 0)
    order = moved[np.argsort(-np.abs(delta[moved]), kind="stable")][:top]
    if ax is None:
        plt = _pyplot()
        _fig, ax = plt.subplots(
            figsize=(7.5, 0.35 * max(len(order), 3) + 1.0), layout="constrained"
        )
    vals = delta[order][::-1]  # barh draws bottom-up: largest change on top
    colors = np.where(vals > 0, "C0", "C3")
    y = np.arange(len(order))
    ax.barh(y, vals, color=colors)
    ax.set_yticks(y, [names[i] for i in order[::-1]])
    ax.axvline(0.0, color="black", lw=0.8)
    unit = " (scaled)" if scale is not None else ""
    ax.set(
        xlabel=f"change x − x̄{unit}",
        title=f"{len(order)} of {moved.size} changed features (target {cf.target!r})",
    )
    return ax


def _short(v):
    """Return a cell of a tabular answer as a short label (whole floats without ``.0``)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        return str(v)
    return f"{int(v):,}" if float(v).is_integer() else f"{float(v):.4g}"


def plot_recourse(res, top=10, *, ax=None, axes=None):
    """Plot tabular recourse: one answer's column costs, or a batch's summary.

    Parameters
    ----------
    res : Counterfactual or CounterfactualBatch of a TabularExplainer
        From :meth:`fastcf.tabular.TabularExplainer.explain` (``x`` a DataFrame).
    top : int, default=10
        Show at most this many columns (those with the largest cost, or changed most often).
    ax : matplotlib Axes, optional
        For one answer: horizontal bars of the cost of each changed column (labelled
        ``column: before → after``), largest on top.
    axes : two matplotlib Axes, optional
        For a batch: the share of the answers (successes) that change each column, and the
        histogram of their costs with the median marked.

    Returns
    -------
    matplotlib Axes, or a list of two for a batch

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np, pandas as pd
    >>> from sklearn.compose import make_column_transformer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import OneHotEncoder, StandardScaler
    >>> from fastcf.plot import plot_recourse
    >>> from fastcf.tabular import TabularExplainer
    >>> rng = np.random.default_rng(0)
    >>> X = pd.DataFrame({"income": rng.normal(50, 10, 200).round(),
    ...                   "job": rng.choice(["a", "b", "c"], 200)})
    >>> y = (X.income + 10 * (X.job == "c") + rng.normal(0, 5, 200) > 55).astype(int)
    >>> pre = make_column_transformer((StandardScaler(), ["income"]), (OneHotEncoder(), ["job"]))
    >>> model = make_pipeline(pre, LogisticRegression()).fit(X, y)
    >>> tx = TabularExplainer(model, X)
    >>> batch = tx.explain(X[model.predict(X) == 0].iloc[:20], target=1)
    >>> ax = plot_recourse(batch[0])
    >>> len(ax.patches) == len(batch[0].changed)  # one bar per changed column
    True
    >>> share_ax, cost_ax = plot_recourse(batch)
    """
    top = check_int(top, "top", lo=1)
    if hasattr(res, "summary"):
        return _plot_recourse_batch(res, top, axes)
    if not hasattr(res, "changes"):
        raise TypeError(
            "res must be an answer of TabularExplainer.explain (a FrameCounterfactual or "
            f"FrameCounterfactualBatch, x a DataFrame); got {type(res).__name__}"
        )
    ch = res.changes.sort_values("cost", ascending=False, kind="stable").iloc[:top]
    if ax is None:
        plt = _pyplot()
        _fig, ax = plt.subplots(figsize=(7.5, 0.4 * max(len(ch), 3) + 1.0), layout="constrained")
    y = np.arange(len(ch))
    rows = list(ch.itertuples())[::-1]  # barh draws bottom-up: largest cost on top
    ax.barh(y, [r.cost for r in rows], color="C0")
    ax.set_yticks(y, [f"{r.column}: {_short(r.before)} → {_short(r.after)}" for r in rows])
    verdict = "" if res.success else f" — no recourse: {res.message}"
    ax.set(
        xlabel="cost (MAD units for numbers, 1 per categorical change, by default)",
        title=f"cost {res.distance:.4g} over {len(res.changed)} changed columns{verdict}",
    )
    return ax


def _plot_recourse_batch(batch, top, axes):
    share_ax, cost_ax = _axes(axes, 2, (11.0, 4.0))
    s = batch.summary
    share = list(s["changed_share"].items())[:top][::-1]
    y = np.arange(len(share))
    share_ax.barh(y, [v for _, v in share], color="C0")
    share_ax.set_yticks(y, [c for c, _ in share])
    share_ax.set(
        xlim=(0, 1),
        xlabel="share of the answers that change the column",
        title=f"recourse for {s['n_success']} of {s['n']} rows",
    )
    d = batch.distance[np.asarray(batch.success, dtype=bool)]
    if d.size:
        cost_ax.hist(d, bins=min(30, max(5, d.size // 5)), color="C0")
        cost_ax.axvline(s["cost"]["median"], color="black", lw=1.0, ls="--", label="median")
        cost_ax.legend()
    cost_ax.set(xlabel="cost of the answer", ylabel="rows", title="cost of recourse")
    return [share_ax, cost_ax]


def plot_image(
    cf, shape, *, classes=None, target_index=None, axes=None, cmap="gray_r", diff_cmap="RdBu_r"
):
    """Show a counterfactual of pixel data: source | counterfactual | difference.

    As the digit figures of the paper: the two images on one grey scale, the difference on a
    diverging scale symmetric around 0.

    Parameters
    ----------
    cf : Counterfactual
    shape : tuple of int
        Image shape, e.g. ``(8, 8)`` for scikit-learn's digits or ``(28, 28)`` for MNIST.
    classes : array_like or explainer, optional
        Class labels in the order of ``cf.proba`` (or an object with ``classes_``), used to
        print p_target in the title; ``target_index`` gives the column directly.
    target_index : int, optional
    axes : sequence of 3 Axes, optional
    cmap, diff_cmap : str
        Colour maps of the images and of the difference.

    Returns
    -------
    list of 3 matplotlib Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> import fastcf
    >>> from fastcf.plot import plot_image
    >>> rng = np.random.default_rng(0)
    >>> ex = fastcf.LinearExplainer.from_arrays(rng.normal(size=(3, 16)), np.zeros(3))
    >>> res = ex.explain(rng.normal(size=16), target=2, lam=0.1)
    >>> axes = plot_image(res, (4, 4))
    >>> axes[2].images[0].get_array().shape
    (4, 4)
    """
    shape = tuple(int(s) for s in np.atleast_1d(shape))
    x0 = np.asarray(cf.x0, dtype=float)
    x = np.asarray(cf.x, dtype=float)
    if int(np.prod(shape)) != x.shape[0]:
        raise ValueError(f"shape {shape} does not hold the {x.shape[0]} features of cf.x")
    a_src, a_cf, a_diff = _axes(axes, 3, (8.0, 3.0))
    lo, hi = min(x0.min(), x.min()), max(x0.max(), x.max())
    a_src.imshow(x0.reshape(shape), cmap=cmap, vmin=lo, vmax=hi)
    a_cf.imshow(x.reshape(shape), cmap=cmap, vmin=lo, vmax=hi)
    d = (x - x0).reshape(shape)
    m = float(np.abs(d).max()) or 1.0
    im = a_diff.imshow(d, cmap=diff_cmap, vmin=-m, vmax=m)
    a_diff.figure.colorbar(im, ax=a_diff, shrink=0.8)
    a_src.set_title("source x̄")
    ptxt = ""
    if cf.proba is not None:
        try:
            j = _target_index(cf.target, len(cf.proba), classes, target_index)
            ptxt = f"\np = {cf.proba[j]:.3f}"
        except ValueError:  # labels unknown: no probability in the title
            pass
    a_cf.set_title(f"counterfactual ({cf.target!r}){ptxt}")
    a_diff.set_title("difference x − x̄")
    for ax in (a_src, a_cf, a_diff):
        ax.set_xticks([])
        ax.set_yticks([])
    return [a_src, a_cf, a_diff]


def plot_enumeration(models, X=None, y=None, *, label=None, axes=None):
    """Rank plots of an SVM enumeration: f(α_r) / f(α_1) (and the test hinge-loss ratio).

    As Fig. 1 of the EnumSV paper: the dual objective of the r-th model relative to the first
    one, and — when test data ``(X, y)`` are given — the mean hinge loss on them relative to the
    first model's.

    Parameters
    ----------
    models : sequence of EnumeratedSVM, or dict of label -> sequence
        The enumerated models, best first (as :func:`fastcf.enumerate_svms` returns them); a dict
        draws one line per entry (e.g. one per data set or per C).
    X, y : array_like, optional
        Test data for the hinge-loss panel (with a dict, the same data for every entry).
    label : str, optional
        Legend label for a single sequence.
    axes : Axes or sequence of Axes, optional
        One Axes (objective only) or two (objective and hinge loss when ``X, y`` are given).

    Returns
    -------
    list of matplotlib Axes
        ``[objective]`` or ``[objective, hinge loss]``.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from fastcf import enumerate_svms
    >>> from fastcf.plot import plot_enumeration
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(30, 2))
    >>> y = (X[:, 0] + 0.3 * rng.normal(size=30) > 0).astype(int)
    >>> top = enumerate_svms(X, y, k=5, C=1.0)
    >>> (ax,) = plot_enumeration(top)
    >>> ranks, ratio = ax.lines[0].get_data()
    >>> ranks.tolist(), float(ratio[0])
    ([1, 2, 3, 4, 5], 1.0)
    """
    if (X is None) != (y is None):
        raise ValueError("give both X and y (test data for the hinge loss) or neither")
    groups = dict(models) if isinstance(models, dict) else {label: list(models)}
    for name, ms in groups.items():
        if len(ms) == 0:
            raise ValueError(f"no models to plot{'' if name is None else f' for {name!r}'}")
    n = 1 if X is None else 2
    axs = _axes(axes, n, (5.0 * n, 3.6))
    for name, ms in groups.items():
        ranks = np.array([m.rank for m in ms])
        f = np.array([m.objective for m in ms], dtype=float)
        axs[0].plot(ranks, f / f[0], marker=".", label=name)
        if X is not None:
            h = np.array([m.hinge_loss(X, y) for m in ms], dtype=float)
            axs[1].plot(ranks, h / h[0], marker=".", label=name)
    axs[0].set(xlabel="rank r", ylabel="f(α_r) / f(α_1)", title="dual objective ratio")
    if X is not None:
        axs[1].axhline(1.0, color="grey", ls="--", lw=0.8)
        axs[1].set(xlabel="rank r", ylabel="L(α_r) / L(α_1)", title="test hinge-loss ratio")
    if any(name is not None for name in groups):
        for ax in axs:
            ax.legend()
    return axs
