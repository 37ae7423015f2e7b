"""The Numba options of the l1 kernels that only other kernels call.

Numba compiles with every kernel a CPython wrapper (the code that unboxes each argument from a
Python object and boxes the results) and a C wrapper (for first-class function calls), whether
or not anything outside compiled code ever calls it: for a kernel of 14 array and scalar
arguments returning a tuple, about 0.04–0.05 s of Numba's lowering and LLVM per compilation
(issue 54: 1.3 s of a first Manhattan softmax ``lam=`` query; Numba's own ``@overload``
implementations are compiled without it). A kernel that only other kernels call needs neither:
``@kernel(**CALLEE)``.

Such a kernel cannot be called from Python: its dispatcher would jump to a null wrapper (a
crash, not an exception). Only kernels called from compiled code take it; a kernel
that Python calls (:func:`.entropy.lam_dual` and the steps of a single ``lam=`` query, the batch
kernels, the solvers the package exports) keeps its wrapper. With ``NUMBA_DISABLE_JIT=1`` and in
the Python tier of ``FASTCF_TIERED=1`` (:mod:`fastcf._kernels._tier`, which runs a kernel's
callees as their Python functions) the options play no part.
"""

#: the options of a kernel that only other kernels call: ``@kernel(**CALLEE)``
CALLEE = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}
