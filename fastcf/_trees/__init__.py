"""Tree models: parsed into plain arrays, then answered exactly.

Where each piece lives:

- :mod:`.forest` — the library-independent representation: every split as *left iff
  ``x <= boundary``* on the float64 input (the library's own rule, rewritten once by its parser),
  leaf terms, the way the library adds them up (``base``, ``divisor``) and the way it decides a
  class (:class:`~.forest.Argmax`, :class:`~.forest.Sign`) and a probability (the links).
  It evaluates the model exactly as the library does, term by term in the library's order.
- :mod:`.parse_sklearn` — scikit-learn's trees (``float32(x) <= threshold``) and ensembles;
  :mod:`.parse_hist` (HistGradientBoosting: ``x <= threshold`` in float64),
  :mod:`.parse_xgboost` (``float32(x) < split_condition``, margins in float32) and
  :mod:`.parse_lightgbm` (``x <= threshold`` in float64, ``|x| <= 1e-35`` read as 0) produce
  the same :class:`~.forest.Forest`; :mod:`.outputs` holds each library's probability and class
  arithmetic, :mod:`.agree` the check of a parsed model against the library's own predictions.
- :mod:`.missing` — NaN in a query: the forest conditioned on the missing features (each split
  on one collapsed to the child the library routes a NaN to), answered by the same solvers.
- :mod:`.categorical` — native categorical splits (HistGB, LightGBM, XGBoost; sets): routed
  as the model routes them; answered conditioned on the query's categories, over every
  combination of the categories a query leaves free.
- :mod:`.leaves` — one tree: the cheapest projection of x onto the box of a target leaf.
- :mod:`.milp` — ensembles: a mixed-integer program over per-feature threshold intervals,
  solved by HiGHS, with lazy cuts for answers within rounding of a tie.
"""
