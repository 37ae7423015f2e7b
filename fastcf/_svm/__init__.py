"""EnumSV, the top-k SVMs with distinct support-vector sets (paper 003): the machinery.

The public names live in :mod:`fastcf.svm_enum` (the estimator-style façade
:class:`~fastcf.svm_enum.SVMEnumerator` and :func:`~fastcf.svm_enum.enumerate_svms`, which
validate the parameters); this private package holds what they drive, one module per part:

``lawler``
    Algorithm 1 of the paper: Lawler's scheme over index subsets (the heap of ``_Node``'s, the
    partition of a popped node into its children S − {i}, the duplicate and degenerate-child
    rules, the descending-order check) in :class:`~fastcf._svm.lawler.SVMEnumeration`, and its
    calls into the warm-started SMO of :mod:`fastcf._kernels.smo` (or the scikit-learn refit
    baseline).
``model``
    The output: :class:`~fastcf._svm.model.EnumeratedSVM` (one SVM on a subset, SVC's
    conventions), the kernel spec shared by all models, and the §5 metrics
    :func:`~fastcf._svm.model.hinge_loss` and :func:`~fastcf._svm.model.demographic_parity`.

The Numba kernels (kernel rows and their cache, the warm start that removes one index, the exact
active-set step and SMO) are in :mod:`fastcf._kernels.smo`; the benchmarks in
:mod:`fastcf.bench.svm`.
"""
