"""Private machinery of :class:`fastcf.lvq.LVQExplainer` (paper 001), one problem per module.

* :mod:`.model` reads fitted models (fastcf, sklearn-lvq, sklvq) and arrays into one geometry:
  prototypes, class indices, the metric (Ω per prototype or shared) and the linear constraints
  that a shared metric gives (eq. 12–13);
* :mod:`.options` turns ``explain``'s options (metric, weights, frozen, bounds, constraints,
  margin) into arrays;
* :mod:`.exact` runs the exact dual active-set QP (Lawson & Hanson's LDP, in Numba) for
  GLVQ/GMLVQ under the Euclidean distance;
* :mod:`.programs` builds the convex cvxpy program of every target prototype once (with
  ``cp.Parameter``), compiles it for Clarabel and re-solves it per query;
* :mod:`.ccp` runs the penalty convex–concave procedure for LGMLVQ (§6.4);
* :mod:`.route` runs a query through its method's solver, the repairs of :mod:`.certify` and the
  model's verification;
* :mod:`.sparse` answers ``max_changes=m`` exactly (a MILP per target prototype, or the shared
  branch-and-bound over frozen sets); :mod:`.vocabulary` checks the words every family takes
  (``region=True`` only, ``max_changes`` refused for LGMLVQ).

Every solver returns a :class:`fastcf.results.Solution`; the façade verifies and packages it.
"""
