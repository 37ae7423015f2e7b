"""The ReLU network family (:class:`fastcf.NetExplainer`): exact mixed-integer recourse.

* :mod:`.model` — a fitted network read into float64 layers (scikit-learn's ``MLPClassifier``);
* :mod:`.bounds` — bounds on every neuron's pre-activation over a query's box, tightened by the
  cost budget of a known answer;
* :mod:`.program` — the mixed-integer program over the unstable neurons (HiGHS) and the linear
  program inside one activation pattern;
* :mod:`.answer` — a query's options and each row's answer.
"""
