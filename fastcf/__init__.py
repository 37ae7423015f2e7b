"""fastcf: exact, fast inverse classification.

Given a trained classifier and an input ``x``, find the closest input that the model puts in a
chosen class. The public names (listed in ``__all__`` and in the API reference of the
documentation) are imported lazily, so ``import fastcf`` stays cheap and an optional dependency
that is missing only matters to the feature that needs it.

Examples
--------
>>> import numpy as np
>>> import fastcf
>>> ex = fastcf.LinearExplainer.from_arrays(np.array([[2.0, -1.0]]), np.array([0.5]))
>>> res = ex.explain(np.array([-1.0, 1.0]), target=1, region=True)
>>> bool(res.success), int(ex.predict(res.x)[0])
(True, 1)
"""

from importlib import import_module

__version__ = "0.1.0.dev0"

# public name -> module that defines it
_EXPORTS = {
    "Counterfactual": "fastcf.results",
    "CounterfactualBatch": "fastcf.results",
    "CounterfactualPath": "fastcf.results",
    "LinearExplainer": "fastcf.linear",
    "Status": "fastcf._status",
    "LVQExplainer": "fastcf.lvq",
    "NetExplainer": "fastcf.net",
    "TabularExplainer": "fastcf.tabular",
    "TreeExplainer": "fastcf.trees",
    "SVMEnumerator": "fastcf.svm_enum",
    "EnumeratedSVM": "fastcf.svm_enum",
    "enumerate_svms": "fastcf.svm_enum",
    "counterfactual": "fastcf.dispatch",
    "explainer_for": "fastcf.dispatch",
    "check_gradient": "fastcf.gradcheck",
    "GradientCheck": "fastcf.gradcheck",
    "compile_first": "fastcf._deprecated",
    "wait_for_kernels": "fastcf._deprecated",
    "set_tiered": "fastcf._deprecated",
}
_SUBMODULES = {
    "adapters",
    "bench",
    "dispatch",
    "distributed",
    "gradcheck",
    "linear",
    "lvq",
    "lvq_models",
    "plot",
    "results",
    "svm_enum",
    "tabular",
    "trees",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        module = import_module(f"fastcf.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'fastcf' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS) | _SUBMODULES)
