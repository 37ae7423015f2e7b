"""The solvers behind :class:`fastcf.LinearExplainer` (paper 000), one module per problem.

``model``
    :class:`~fastcf._linear.model.BinaryModel` and :class:`~fastcf._linear.model.SoftmaxModel`:
    the model's arrays and arithmetic (logits, probabilities, predicted class, rounding bounds),
    each carrying its own solvers; :func:`~fastcf._linear.model.make_model` picks the family once.
``metric``
    the per-metric constants (V = W⁻¹, G_V = A V Aᵀ, …) and their thread-safe cache.
``binary``
    binary models in closed form (§4): problem (2) through the scalar root φ(α, β) (Theorem 4.2),
    the projections of ``proba=`` and ``region=True``, the λ-path.
``softmax``
    softmax models in the K-dimensional space (§3): problem (2), the λ-search of ``proba=``, the
    region dual of ``region=True``, the warm-started λ-path.
``boxed``
    softmax models with ``bounds=``: the projected Newton method, its λ-search, the region QP.
``reference``
    the D-dimensional reference methods (``method="woodbury" | "lbfgs" | "cg" | "gd"``) and the
    one Python implementation of the softmax energy.
``verify``
    verdicts, result building and the rounding-safe ``region=True``.
``fast``
    the short paths of one common query (type tests instead of validation): ``region=True`` and
    ``proba=τ`` with the same kernel calls and the same bits as the long path.
"""
