"""What a first call compiles: the cold start (issue "Hardening", item 4) must not regress.

A fresh process on an empty kernel cache runs one query of each kind and reports which
specialisations of the kernels it compiled. A query compiles only the code it runs: an unbounded
binary query none of the box's breakpoint walk (Numba prunes it for ``lo is None``), a single
query no parallel kernel, and no kernel twice for a literal argument. The compile times
themselves are measured by ``docs/scripts/compile_times.py``, not here (no timings in tests).

The child runs in the environment's mode: fastcf's default (each kernel compiles before its
first call) or, in ``.ci/run``'s tiered job, ``FASTCF_TIERED=1``, where it waits for the
background compilations before it reads the signatures: the same specialisations either way.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

# slow: the child compiles the kernels of ten queries on an empty cache (about 40 s)
pytestmark = [pytest.mark.needs_jit, pytest.mark.slow]

_CHILD = r"""
import importlib, json, pkgutil
import numpy as np
from numba.core import types
import fastcf
from fastcf import LinearExplainer, LVQExplainer
from fastcf.lvq_models import GLVQ
from fastcf._kernels import logistic, lvq_qp
from fastcf._kernels._batch import Batch
from fastcf._kernels.l1 import entropy_solve, knapsack, region_lp

rng = np.random.default_rng(0)
w = rng.normal(size=(1, 12))
ex = LinearExplainer.from_arrays(w, np.array([0.1]))
x = rng.normal(size=12)
k = int(w[0] @ x + 0.1 < 0)
for form in ({"lam": 1e-3}, {"proba": 0.8}, {"region": True}):
    assert ex.explain(x, k, **form).success, form
    assert ex.explain(x, k, **form, metric="manhattan").success, form
X = np.vstack([rng.normal(0.0, 1.0, (20, 3)), rng.normal(3.0, 1.0, (20, 3))])
y = np.repeat([0, 1], 20)
model = GLVQ(random_state=0).fit(X, y)
t = 1 - int(model.predict(X[:1])[0])
assert LVQExplainer(model).explain(X[0], t).success
# single Manhattan queries of a softmax model: lam= and region=True
A3 = rng.normal(size=(3, 4))
sm = LinearExplainer.from_arrays(A3, rng.normal(size=3))
for form in ({"lam": 0.1}, {"region": True}):
    sm.explain(rng.normal(size=4), 1, **form, metric="manhattan")
# Lawler's enumeration (l1_enum): its heap's kernels
assert len(ex.enumerate(x, k, k=3, region=True, metric="manhattan")) >= 1
assert fastcf.wait_for_kernels(timeout=600)  # (tiered: the background compilations)

def sigs(d):
    return [[str(a) for a in s] for s in d.signatures]

def kernels(mod):
    # the module's kernels, with the serial and the parallel kernel of each batch
    for name, d in vars(mod).items():
        if isinstance(d, Batch):
            yield f"{name}.serial", d.serial
            yield f"{name}.parallel", d.parallel
        else:
            yield name, d

def get(mod, name):
    for part in name.split("."):
        mod = getattr(mod, part)
    return mod

# every kernel compiled more than once, once for a literal argument (Literal[int](0),
# Literal[bool](True), ...): a second specialisation of the same code
twins = []
for info in pkgutil.walk_packages(fastcf._kernels.__path__, "fastcf._kernels."):
    mod = importlib.import_module(info.name)
    for name, d in kernels(mod):
        if getattr(d, "_fastcf_tiered", False) and d.py_func.__module__ == mod.__name__:
            literal = any(isinstance(a, types.Literal) for s in d.signatures for a in s)
            if literal and len(d.signatures) > 1:
                twins.append([f"{info.name}.{name}", sigs(d)])

out = {
    f"{mod.__name__.rsplit('.', 1)[1]}.{name}": sigs(get(mod, name))
    for mod, names in (
        (logistic, ["_lam_bounded_one", "_breakpoints", "_project_one", "_dist_grad",
                    "_lam.parallel", "_project.parallel"]),
        (knapsack, ["_next", "_record", "_constrained.parallel", "_lam.parallel"]),
        (lvq_qp, ["_fast.serial", "_fast.parallel", "_fast_row", "_solve_query"]),
        (entropy_solve, ["_sm_lam.serial", "_lam_start", "_lam_settle"]),
        (region_lp, ["_region.serial", "region_lp_one"]),
    )
    for name in names
}
out["literal twins"] = twins

# the l1 softmax kernels compiled with a CPython wrapper: only those that Python calls (the
# others are kernel(callee=True), compiled without one)
from fastcf._kernels.l1 import entropy, entropy_face, kkt, kspace
wrapped = set()
for mod in (entropy, entropy_face, entropy_solve, kspace, kkt, region_lp):
    for name, d in vars(mod).items():
        if getattr(d, "_fastcf_tiered", False) and d.py_func.__module__ == mod.__name__:
            if d.signatures and not d.targetoptions.get("no_cpython_wrapper", False):
                wrapped.add(f"{mod.__name__.rsplit('.', 1)[1]}.{name}")
out["l1 wrapped"] = sorted(wrapped)

# the same for the binary (logistic, knapsack, l1_enum), verdict, root, linalg and LVQ
# kernels: compiled with and without a CPython wrapper (kernel(callee=True))
from fastcf._kernels import l1_enum, linalg, roots, verdict
callee = {"wrapped": set(), "bare": set()}
for mod in (logistic, knapsack, l1_enum, verdict, roots, linalg, lvq_qp):
    for name, d in vars(mod).items():
        if getattr(d, "_fastcf_tiered", False) and d.py_func.__module__ == mod.__name__:
            if d.signatures:
                bare = d.targetoptions.get("no_cpython_wrapper", False)
                short = f"{mod.__name__.rsplit('.', 1)[1]}.{name}"
                callee["bare" if bare else "wrapped"].add(short)
out["binary wrapped"] = sorted(callee["wrapped"])
out["binary bare"] = sorted(callee["bare"])
print(json.dumps(out))
"""


def _cold_child(script, cache):
    """Run ``script`` in a child process on the empty Numba cache ``cache``; its JSON line."""
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ, NUMBA_CACHE_DIR=str(cache)),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    # an empty cache: a kernel loaded from the cache brings its callees' code along, without
    # their dispatchers, so only a cold process shows what a first call compiles
    return _cold_child(_CHILD, tmp_path_factory.mktemp("numba-cache"))


def test_unbounded_binary_queries_compile_no_box_code(compiled):
    assert compiled["logistic._lam_bounded_one"] == []
    assert compiled["logistic._breakpoints"] == []
    # one specialisation each, with lo = hi = None (arguments 6, 7 and 7, 8)
    for name, at in (("logistic._project_one", 6), ("logistic._dist_grad", 7)):
        assert len(compiled[name]) == 1, compiled[name]
        assert compiled[name][0][at : at + 2] == ["none", "none"], compiled[name]


def test_single_queries_compile_no_parallel_kernel(compiled):
    for name in (
        "logistic._lam.parallel",
        "logistic._project.parallel",
        "knapsack._constrained.parallel",
        "knapsack._lam.parallel",
        "lvq_qp._fast.parallel",
    ):
        assert compiled[name] == [], name
    # a single LVQ query calls its row's solver from Python (lvq_qp._solve_query): no batch
    # kernel at all; the row kernel is inlined into its batch kernels (see _batch)
    assert compiled["lvq_qp._fast.serial"] == []
    assert len(compiled["lvq_qp._solve_query"]) == 1
    assert compiled["lvq_qp._fast_row"] == []
    # nor a single Manhattan lam= or region=True query of a softmax model: its row's kernels
    # called from Python (entropy_solve._lam_single, region_lp._region_one)
    assert compiled["entropy_solve._sm_lam.serial"] == []
    assert compiled["region_lp._region.serial"] == []
    for name in (
        "entropy_solve._lam_start",
        "entropy_solve._lam_settle",
        "region_lp.region_lp_one",
    ):
        assert len(compiled[name]) == 1, (name, compiled[name])


def test_no_kernel_is_compiled_twice_for_a_literal(compiled):
    for name in ("knapsack._next", "knapsack._record", "lvq_qp._solve_query"):
        assert len(compiled[name]) == 1, (name, compiled[name])
        assert not any("Literal" in a for s in compiled[name] for a in s), compiled[name]
    # (a caller's variable that starts as a constant, `i = 0`, is typed Literal[int](0) for a
    # while during Numba's type inference, and a kernel it is passed to is compiled for that
    # too: the callers start such variables as np.int64(0))
    assert compiled["literal twins"] == []


def test_l1_softmax_kernels_that_only_kernels_call_compile_no_cpython_wrapper(compiled):
    # the single lam= and region=True queries (and the binary Manhattan ones, which call
    # kkt.l1_residual) compile a CPython wrapper only for the kernels Python calls: the steps
    # of a single lam= query (entropy_solve._lam_single) and the region LP
    # (region_lp._region_one); each of the others would cost ~0.05 s more of a first query
    assert compiled["l1 wrapped"] == [
        "entropy.lam_dual",
        "entropy_solve._lam_settle",
        "entropy_solve._lam_start",
        "region_lp.region_lp_one",
    ]


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT", "0") == "1", reason="JIT disabled")
def test_a_callee_kernel_called_from_python_raises_not_crashes():
    # kernel(callee=True): no CPython wrapper, so Numba's dispatcher would jump to a null
    # address (a segmentation fault); fastcf's class raises
    from fastcf._kernels.l1.entropy import _less, _pop

    assert _pop.py_func(np.zeros(0), np.zeros(0, dtype=np.int64), 0) == (-1, 0)
    with pytest.raises(TypeError, match="compiled for calls from other kernels only"):
        _less(1.0, 0, 2.0, 1)


# Single Euclidean softmax proba= and lam= queries and an SVM enumeration, on an empty cache (issue
# 54): what their first calls compile, and what the top kernels link. A kernel that calls
# another links the callee's code into its own module, and LLVM optimises and emits all of it
# once more: the region dual of a cold proba= start is called from Python, not by the search.
_CHILD_SEARCH = r"""
import json
import numpy as np
from numba.core import event
import fastcf
from fastcf import LinearExplainer, enumerate_svms
from fastcf._kernels import smo
from fastcf._kernels.softmax import core, lamsearch, region

class Names(event.Listener):
    def __init__(self):
        self.names = []
    def on_start(self, ev):
        py = ev.data["dispatcher"].py_func
        self.names.append(f"{py.__module__}.{py.__qualname__}")
    def on_end(self, ev):
        pass

names = Names()
event.register("numba:compile", names)
rng = np.random.default_rng(0)
A = rng.normal(size=(4, 12))
ex = LinearExplainer.from_arrays(A, rng.normal(size=4))
x = rng.normal(size=12)
k = int(np.argmin(A @ x))  # the least likely class: a cold start from the tie point
assert ex.explain(x, k, proba=0.9).success
ex.explain(x, k, lam=0.01)  # (its row's kernels: initial_y, the Newton solve)
X = rng.normal(size=(30, 3))
y = (X[:, 0] + 0.3 * rng.normal(size=30) > 0).astype(int)
assert len(enumerate_svms(X, y, k=4)) == 4
assert fastcf.wait_for_kernels(timeout=600)

def sigs(d):
    return [[str(a) for a in s] for s in d.signatures]

out = {
    "proba_search": sigs(lamsearch.proba_search),
    "_start": sigs(lamsearch._start),
    "_row_head": sigs(lamsearch._row_head),
    "_rows.serial": sigs(lamsearch._rows.serial),
    "region_dual": sigs(region.region_dual),
    "_newton_core": sigs(core._newton_core),
    "_objective": sigs(core._objective),
    "_objective_gy": sigs(core._objective_gy),
    "solve_children": sigs(smo.solve_children),
    "remove_and_rebalance": sigs(smo.remove_and_rebalance),
    "search_ir": "".join(
        lamsearch.proba_search.inspect_llvm(s) for s in lamsearch.proba_search.signatures
    ),
    "compiled": names.names,
}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    return _cold_child(_CHILD_SEARCH, tmp_path_factory.mktemp("numba-cache-search"))


def test_single_proba_query_links_no_region_dual_into_its_search(searched):
    # one specialisation of each kernel of the query (no int/float, literal or layout twins)
    for name in ("proba_search", "_start", "_row_head", "region_dual", "_newton_core"):
        assert len(searched[name]) == 1, (name, searched[name])
    # its row's kernels are called from Python (lamsearch._one_row): no batch kernel
    assert searched["_rows.serial"] == []
    # the tie point's dual is called by the search's caller: compiled once, on its own, and
    # linked into neither the search nor its start (whose code the search links)
    assert "region_dual" not in searched["search_ir"]
    assert "_newton_core" in searched["search_ir"]  # (the check reads the linked module)


def test_softmax_queries_compile_no_objective_wrapper(searched):
    # initial_y evaluates E by _objective_gy itself: the _objective kernel, a call of it with
    # gy = z, would be one more level under every row kernel of problem (2)
    assert searched["_objective"] == []
    assert len(searched["_objective_gy"]) == 1, searched["_objective_gy"]


def test_svm_enumeration_compiles_one_kernel_per_step(searched):
    assert len(searched["solve_children"]) == 1, searched["solve_children"]
    assert len(searched["remove_and_rebalance"]) == 1, searched["remove_and_rebalance"]
    # the active indices by a loop, not np.flatnonzero's generic implementation; the moves of
    # remove_and_rebalance in it, not in a kernel of their own
    compiled = searched["compiled"]
    assert not any("flatnonzero" in n for n in compiled), compiled
    assert not any(n.endswith("smo._take") for n in compiled), compiled
    assert "fastcf._kernels.smo.solve_children" in compiled


def test_binary_lvq_and_verdict_kernels_that_only_kernels_call_compile_no_cpython_wrapper(
    compiled,
):
    # the binary queries (Euclidean and Manhattan, lam=, proba=, region=True, Lawler's
    # enumeration) and the GLVQ query compile a CPython wrapper only for the kernels that
    # Python code calls (the façade, lvq_qp.lvq_fast_batch's call of _solve_query, or tests and
    # benchmarks: roots.phi, linalg.dot); the kernels that only kernels call are
    # kernel(callee=True), ~0.05 s less each of a first query (issue 54). Not the LDP's
    # (_ldp_scaled, nnls, _lstsq, _norm_scaled): Numba compiles its own overloads (np.empty,
    # np.zeros, ...) once per caller's flags, and the bare ones would compile eight again
    # beside those of their wrapped callers ldp and lvq_qp._solve_query (GLVQ query +0.2 s,
    # measured)
    assert compiled["binary wrapped"] == [
        "l1_enum.lawler_l1",
        "linalg._ldp_scaled",
        "linalg._lstsq",
        "linalg.dot",
        "linalg.ldp",
        "linalg.need_bounds",
        "linalg.need_of_norm",
        "linalg.nnls",
        "logistic.binary_proba",
        "lvq_qp._norm_scaled",
        "lvq_qp._solve_query",
        "roots.phi",
        "verdict.binary_finish",
        "verdict.binary_judge",
        "verdict.clear_of_need",
        "verdict.verdicts",
    ]
    # and the callees did compile (bare): the list above is not empty by accident
    for name in (
        "logistic._closed_form_row",
        "logistic._project_one",
        "knapsack._lam_one",
        "knapsack._constrained_one",
        "l1_enum._node",
        "roots.sigmoid",
        "verdict.verdict_row",
        "linalg._lu_factor",
        "linalg.need_bound",
    ):
        assert name in compiled["binary bare"], (name, compiled["binary bare"])
