import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import fastcf  # noqa: E402
from fastcf.plot import (  # noqa: E402
    plot_changes,
    plot_enumeration,
    plot_image,
    plot_path,
    plot_recourse,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def softmax():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(3, 6))
    return fastcf.LinearExplainer.from_arrays(A, rng.normal(size=3), classes=["a", "b", "c"]), rng


def test_plot_path_data_are_the_path(softmax):
    ex, rng = softmax
    x = rng.normal(size=6)
    lams = np.logspace(2, -3, 15)
    path = ex.path(x, "c", lams)
    axes = plot_path(path, classes=ex)
    assert len(axes) == 3
    lx, lp = axes[0].lines[0].get_data()
    np.testing.assert_array_equal(lx, lams)
    np.testing.assert_array_equal(lp, path.proba[:, 2])
    dx, dd = axes[1].lines[0].get_data()
    np.testing.assert_array_equal(dd, path.distance)
    px, pd = axes[2].lines[0].get_data()
    np.testing.assert_array_equal(px, path.proba[:, 2])
    np.testing.assert_array_equal(pd, path.distance)
    assert axes[0].get_xscale() == "log"
    # the success marker sits at the largest λ classified as the target
    vline = axes[0].lines[1].get_xdata()
    assert vline[0] == lams[path.success].max()


def test_plot_path_target_column_choices(softmax):
    ex, rng = softmax
    path = ex.path(rng.normal(size=6), "b", np.logspace(1, -2, 5))
    a1 = plot_path(path, classes=ex.classes_)
    a2 = plot_path(path, target_index=1)
    np.testing.assert_array_equal(a1[0].lines[0].get_ydata(), a2[0].lines[0].get_ydata())
    with pytest.raises(ValueError, match="classes="):
        plot_path(path)  # label "b" and no classes: ambiguous
    with pytest.raises(ValueError, match="not one of classes"):
        plot_path(path, classes=["x", "y", "z"])
    with pytest.raises(ValueError, match="target_index"):
        plot_path(path, target_index=3)


def test_plot_path_integer_labels_and_given_axes():
    ex = fastcf.LinearExplainer.from_arrays(np.eye(3, 4), np.zeros(3))
    path = ex.path(np.zeros(4), 1, np.logspace(1, -1, 4))
    fig, axs = plt.subplots(1, 3)
    out = plot_path(path, axes=axs)
    assert out[0] is axs[0]
    np.testing.assert_array_equal(axs[0].lines[0].get_ydata(), path.proba[:, 1])
    with pytest.raises(ValueError, match="3 Axes"):
        plot_path(path, axes=axs[:2])


def test_plot_changes_bars_are_the_largest_changes():
    ex = fastcf.LinearExplainer.from_arrays(np.array([[3.0, -1.0, 0.5, 0.0, 2.0]]), np.array([0.0]))
    res = ex.explain(np.zeros(5), target=1, proba=0.9)
    ax = plot_changes(res, top=3)
    widths = [p.get_width() for p in ax.patches]
    assert len(widths) == 3
    # top to bottom = largest |change| first; barh stores them bottom-up
    expected = res.delta[[0, 4, 1]][::-1]
    np.testing.assert_allclose(widths, expected)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["x1", "x4", "x0"]
    # increases blue, decreases red
    colors = [p.get_facecolor() for p in ax.patches]
    assert colors[0] != colors[2]


def test_plot_changes_skips_unmoved_features_and_scales():
    ex = fastcf.LinearExplainer.from_arrays(
        np.array([[1.0, 0.0, -1.0, 0.0]]), np.array([0.0]), feature_names=["a", "b", "c", "d"]
    )
    res = ex.explain(np.zeros(4), target=1, proba=0.8)
    ax = plot_changes(res, top=10, scale=[2.0, 1.0, 4.0, 1.0])
    assert len(ax.patches) == 2  # only a and c moved
    assert sorted(t.get_text() for t in ax.get_yticklabels()) == ["a", "c"]
    got = sorted(p.get_width() for p in ax.patches)
    np.testing.assert_allclose(got, sorted([res.delta[0] / 2.0, res.delta[2] / 4.0]))
    with pytest.raises(ValueError, match="top"):
        plot_changes(res, top=0)
    with pytest.raises(ValueError, match="feature_names"):
        plot_changes(res, feature_names=["a"])


def test_plot_image_panels():
    rng = np.random.default_rng(1)
    ex = fastcf.LinearExplainer.from_arrays(rng.normal(size=(4, 12)), np.zeros(4))
    res = ex.explain(rng.random(12), target=3, lam=0.05)
    axes = plot_image(res, (3, 4), classes=ex)
    np.testing.assert_array_equal(axes[0].images[0].get_array(), res.x0.reshape(3, 4))
    np.testing.assert_array_equal(axes[1].images[0].get_array(), res.x.reshape(3, 4))
    np.testing.assert_allclose(axes[2].images[0].get_array(), res.delta.reshape(3, 4))
    vmin, vmax = axes[2].images[0].get_clim()
    assert vmin == -vmax == -np.abs(res.delta).max()
    assert f"{res.proba[3]:.3f}" in axes[1].get_title()
    with pytest.raises(ValueError, match="shape"):
        plot_image(res, (5, 5))


def test_plot_enumeration_ratios():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(25, 2))
    y = (X[:, 0] + 0.5 * rng.normal(size=25) > 0).astype(int)
    top = fastcf.enumerate_svms(X, y, k=6, C=1.0)
    f = np.array([m.objective for m in top])
    axes = plot_enumeration(top, X, y, label="toy")
    assert len(axes) == 2
    r, ratio = axes[0].lines[0].get_data()
    np.testing.assert_array_equal(r, [m.rank for m in top])
    np.testing.assert_allclose(ratio, f / f[0])
    h = np.array([m.hinge_loss(X, y) for m in top])
    np.testing.assert_allclose(axes[1].lines[0].get_ydata(), h / h[0])
    assert axes[0].get_legend().get_texts()[0].get_text() == "toy"
    two = plot_enumeration({"first": top[:3], "all": top})
    assert [len(line.get_xdata()) for line in two[0].lines] == [3, 6]
    with pytest.raises(ValueError, match="both X and y"):
        plot_enumeration(top, X)


def _tabular_batch():
    pd = pytest.importorskip("pandas")
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from fastcf.tabular import TabularExplainer

    rng = np.random.default_rng(0)
    X = pd.DataFrame(
        {
            "income": rng.normal(50, 10, 300).round(),
            "debt": rng.exponential(10, 300),
            "job": rng.choice(["a", "b", "c"], 300),
        }
    )
    s = X.income - X.debt + 10 * (X.job == "c") + rng.normal(0, 5, 300)
    y = (s > np.median(s)).astype(int)
    pre = make_column_transformer(
        (StandardScaler(), ["income", "debt"]), (OneHotEncoder(), ["job"])
    )
    model = make_pipeline(pre, LogisticRegression()).fit(X, y)
    tx = TabularExplainer(model, X, immutable=["debt"], weights={"job": 0.2})
    return tx.explain(X[model.predict(X) == 0].iloc[:40], target=1)


def test_plot_recourse_one_answer_bars_are_its_column_costs():
    batch = _tabular_batch()
    res = max(batch, key=lambda r: len(r.changed))  # an answer with several changed columns
    assert len(res.changed) >= 2
    ax = plot_recourse(res)
    ch = res.changes.sort_values("cost", ascending=False, kind="stable")
    np.testing.assert_allclose([p.get_width() for p in ax.patches], ch.cost.to_numpy()[::-1])
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert [lab.split(":")[0] for lab in labels] == list(ch.column)[::-1]
    assert all("→" in lab for lab in labels)
    assert f"{res.distance:.4g}" in ax.get_title()
    assert len(plot_recourse(res, top=1).patches) == 1


def test_plot_recourse_batch_panels_are_its_summary():
    batch = _tabular_batch()
    share_ax, cost_ax = plot_recourse(batch)
    share = batch.summary["changed_share"]
    labels = [t.get_text() for t in share_ax.get_yticklabels()]
    assert labels == list(share)[::-1]
    np.testing.assert_allclose(
        [p.get_width() for p in share_ax.patches], list(share.values())[::-1]
    )
    heights = sum(p.get_height() for p in cost_ax.patches)
    assert heights == batch.success.sum()  # the histogram counts every success once
    median = cost_ax.lines[0].get_xdata()[0]
    assert median == pytest.approx(np.median(batch.distance[batch.success]))
    with pytest.raises(TypeError, match="FrameCounterfactual"):
        plot_recourse(np.zeros(3))
    with pytest.raises(ValueError, match="axes must hold 2"):
        plot_recourse(batch, axes=[share_ax])
