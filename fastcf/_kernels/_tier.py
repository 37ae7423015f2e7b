"""Tiered execution, opt-in: a kernel's first call runs as Python while Numba compiles it.

By default fastcf's kernels behave as Numba's: a kernel is compiled (or loaded from Numba's
on-disk cache) before its first call with new argument types. On an empty cache that first call
waits for the compilation (seconds per family); ``python -m fastcf warmup``, run once (when a
container image is built), fills the cache so that every process after it loads the compiled
kernels and answers with compiled code from its first call. That is the production recipe.

Tiering is for a process that starts on an empty cache and must answer at once (a notebook, a
one-off script): switched on with the environment variable ``FASTCF_TIERED=1`` or
:func:`set_tiered`, a kernel called from Python with argument types it has not been compiled for

1. hands the compilation to one background thread (which first tries Numba's on-disk cache),
2. waits for it while it is only loading from that cache (a warm start then runs compiled code
   from its first call), and
3. otherwise runs the kernel's Python source, with every kernel it calls also as Python, and
   returns that answer. Later calls run the compiled code as soon as the thread has built it.

Calls that would be slow as Python (more than :data:`MAX_INTERPRETED` array elements in their
arguments) wait for the compiled code instead, and so do the later calls of a kernel whose Python
run took more than 0.1 s (a fit calling a cost kernel in a loop would otherwise run as Python
and slow down the compilation it waits for: both need the GIL).

A Python run that raises (Python's ``float`` raises on a division by zero or an overflow where
the compiled code, with NumPy's error model, returns inf or NaN) restores the arrays it was given
and waits for the compiled code, which then answers.

Why it is not the default:

- which tier answers a call depends on timing, and the tiers differ in the last bits of the few
  reductions compiled with ``reassoc`` (:data:`fastcf._kernels.REASSOC`): in the compile window
  the same query can give other bits than later (every answer is still checked afterwards by the
  explainers' certificate);
- the Python tier holds the GIL: other threads (the compilation included) wait meanwhile;
- a kernel met with new argument types at any later time (hours into a service) runs as Python
  again while it compiles;
- the background thread holds Numba's compiler lock while it compiles, and a ``fork`` waits for
  the compilation in progress (an at-fork hook, installed when the thread is first started).

The background thread exits after :data:`_IDLE` seconds without a job and is started again by the
next miss. Only misses come here: Numba's dispatcher calls its ``_compile_for_args`` when no
compiled specialisation matches the arguments, and :func:`install` replaces that method on each
of fastcf's dispatchers (with tiering off it calls Numba's own). A call that matches compiled code
never reaches this module. :func:`compile_first` switches tiering off within a block (``python -m
fastcf warmup`` and the benchmarks run that way, whatever the setting).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import queue
import threading
import time
import types

import numpy as np

__all__ = [
    "install",
    "set_tiered",
    "compile_first",
    "wait_for_kernels",
    "stats",
    "MAX_INTERPRETED",
]

#: the largest call, in array elements over all its array arguments, that runs as Python while
#: its kernel compiles: a single query takes 1–30 ms as Python, a call near this size up to a
#: few seconds (a batch of 500 softmax Manhattan queries at D = 30: 2 s; compiling it: ~20 s)
MAX_INTERPRETED = 1 << 15
#: how long a miss waits for the worker while it may be loading the kernel from the cache
_LOAD_WAIT = 2.0
#: a Python run longer than this (seconds) makes the later calls of its kernel wait for the
#: compiled code: a loop of heavy calls (an estimator's fit) would otherwise run as Python and
#: slow the compilation it waits for (both need the GIL)
_SLOW = 0.1
#: the background thread exits after this many seconds without a job (the next miss starts a
#: new one): a service whose kernels are compiled keeps no idle thread
_IDLE = 5.0

_lock = threading.Lock()
_jobs: dict = {}
_queue: queue.SimpleQueue = queue.SimpleQueue()
_worker: threading.Thread | None = None
_local = threading.local()
_twins: dict = {}
_counts = {"interpreted": 0, "raised": 0, "background": 0, "failed": 0, "fallback": 0}
#: set once a job had to compile (not load): the cache is cold, misses stop waiting
_cold = False
#: the process-wide setting of :func:`set_tiered`; None: the environment variable decides
_setting: bool | None = None
#: set when the interpreter exits: the worker takes no further job
_exiting = False


def _env_on() -> bool:
    return os.environ.get("FASTCF_TIERED", "").strip().lower() in ("1", "true", "yes", "on")


def _enabled() -> bool:
    """Tell whether a miss in the calling thread runs tiered (read at every miss)."""
    if getattr(_local, "compile_first", 0):
        return False
    if _setting is not None:
        return _setting
    return _env_on()


def set_tiered(on: bool | None = True) -> bool | None:
    """Switch tiered execution of the kernels on or off for the whole process.

    Off by default: a kernel is compiled (or loaded from Numba's on-disk cache) before its first
    call, as Numba does, and ``python -m fastcf warmup`` run once fills that cache. Switched on,
    a kernel that is not compiled yet runs as Python while a background thread compiles it, so
    that a process on an empty cache answers its first queries at once; those answers can
    differ from the compiled code's in the last bits (see :mod:`fastcf._kernels._tier`). The
    environment variable ``FASTCF_TIERED=1`` switches it on too; this function overrides it.

    Parameters
    ----------
    on : bool or None, default=True
        ``True`` or ``False``; ``None`` returns to the environment variable's choice.

    Returns
    -------
    bool or None
        The previous setting (``None``: the environment variable), to restore it later.

    Examples
    --------
    >>> import numpy as np
    >>> import fastcf
    >>> ex = fastcf.LinearExplainer.from_arrays(np.array([[2.0, -1.0]]), np.array([0.5]))
    >>> previous = fastcf.set_tiered(True)
    >>> res = ex.explain(np.array([-1.0, 1.0]), target=1, lam=0.1)
    >>> fastcf.wait_for_kernels()  # later calls run compiled code only
    True
    >>> _ = fastcf.set_tiered(previous)
    """
    global _setting
    if on is not None and not isinstance(on, (bool, np.bool_)):
        raise TypeError(f"set_tiered takes True, False or None; got {on!r}")
    with _lock:
        previous = _setting
        _setting = None if on is None else bool(on)
    return previous


@contextlib.contextmanager
def compile_first():
    """Within this block, a kernel that is not compiled yet is compiled before it runs.

    This is Numba's own behaviour and fastcf's default; the block overrides tiered execution
    (``FASTCF_TIERED=1`` or :func:`set_tiered`) for the calling thread, so that the first call
    of each kernel waits for its compilation (seconds on an empty cache) instead of running the
    kernel as Python meanwhile. Benchmarks and ``python -m fastcf warmup`` run this way.

    Examples
    --------
    >>> import numpy as np
    >>> import fastcf
    >>> ex = fastcf.LinearExplainer.from_arrays(np.array([[2.0, -1.0]]), np.array([0.5]))
    >>> with fastcf.compile_first():
    ...     res = ex.explain(np.array([-1.0, 1.0]), target=1, region=True)
    >>> bool(res.success)
    True
    """
    _local.compile_first = getattr(_local, "compile_first", 0) + 1
    try:
        yield
    finally:
        _local.compile_first -= 1


def stats() -> dict:
    """Return the counts of tiered execution since the process started.

    ``interpreted``: calls answered as Python; ``raised``: calls whose Python run raised and that
    the compiled code answered instead; ``background``: compilations (or cache loads) done by the
    background thread; ``failed``: those that raised (the call then compiles in its own thread,
    with Numba's error message); ``fallback``: calls that did; ``pending``: compilations not
    done yet. ``tiered``: whether a miss in the calling thread runs tiered now; ``worker``:
    whether the background thread is running (it exits when idle).
    """
    with _lock:
        out = dict(_counts)
        out["pending"] = sum(not job.done.is_set() for job in _jobs.values())
        out["worker"] = _worker is not None
    out["tiered"] = _enabled()
    return out


def wait_for_kernels(timeout: float | None = None) -> bool:
    """Wait until the kernels that fastcf is compiling in the background are compiled.

    Only tiered execution (``FASTCF_TIERED=1`` or :func:`set_tiered`) compiles in the
    background: a kernel that is not compiled yet runs as Python meanwhile, and later calls run
    the compiled code when it is ready. Call this before timing fastcf, or in a service after
    its first requests, to have only compiled code from then on. With tiering off (the
    default) nothing compiles in the background and this returns ``True`` at once.

    Parameters
    ----------
    timeout : float, optional
        Seconds to wait at most; by default until the compilation is done.

    Returns
    -------
    bool
        ``True`` when nothing is left to compile, ``False`` if the timeout came first.

    Examples
    --------
    >>> import numpy as np
    >>> import fastcf
    >>> ex = fastcf.LinearExplainer.from_arrays(np.array([[2.0, -1.0]]), np.array([0.5]))
    >>> res = ex.explain(np.array([-1.0, 1.0]), target=1, lam=0.1)
    >>> fastcf.wait_for_kernels()
    True
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    with _lock:
        jobs = list(_jobs.values())
    for job in jobs:
        left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        if not job.done.wait(left):
            return False
    return True


class _Job:
    __slots__ = ("disp", "argtypes", "done", "error", "misses0", "slow")

    def __init__(self, disp, argtypes):
        self.disp = disp
        self.argtypes = argtypes
        self.done = threading.Event()
        self.error = None
        self.slow = False
        self.misses0 = disp.stats.cache_misses.get(argtypes, 0)

    def compiling(self) -> bool:
        """Tell whether the worker found no cached code for this call and is compiling it."""
        return self.disp.stats.cache_misses.get(self.argtypes, 0) > self.misses0


def _work():
    global _cold, _worker
    _local.worker = True  # its own misses (none expected) compile in the foreground
    while True:
        if _exiting:
            return
        try:
            job = _queue.get(timeout=_IDLE)
        except queue.Empty:
            with _lock:  # (a job is put under this lock: none can be missed)
                if _queue.empty():
                    if _worker is threading.current_thread():
                        _worker = None
                    return
            continue
        if job is None:  # (put by _stop)
            return
        try:
            init = getattr(job.disp, "_compilation_chain_init_hook", None)
            if init is not None:
                init()
            job.disp.compile(job.argtypes)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            job.error = exc
        # the cache-miss counter, never the time a job took: on a loaded machine a load from
        # the cache took over 0.5 s, a guess from time marked a warm cache cold, and every
        # later miss of that warm start ran as Python (CI, 2026-11-25: 42 calls)
        if job.compiling():
            _cold = True
        with _lock:
            _counts["failed" if job.error is not None else "background"] += 1
        job.done.set()


def _submit(disp, argtypes) -> _Job:
    global _worker
    key = (disp, argtypes)
    with _lock:
        job = _jobs.get(key)
        if job is None:
            job = _jobs[key] = _Job(disp, argtypes)
            _queue.put(job)
            if _worker is None:
                _guard_forks()
                _guard_exit()
                # a daemon, stopped at exit by _stop (after its compilation in progress)
                _worker = threading.Thread(target=_work, name="fastcf-compile", daemon=True)
                _worker.start()
    return job


_exit_guarded = False


def _guard_exit():
    """Make the interpreter's exit wait for the worker's compilation in progress.

    A daemon thread inside LLVM while the process exits can run into LLVM's static
    destructors (CI, 2026-11-29: a script that forked a pool while kernels compiled in the
    background ended with SIGSEGV once; not reproduced). At exit the worker takes no further
    job, and the exit waits for the one it is compiling (``atexit`` runs before finalisation).
    """
    global _exit_guarded
    if not _exit_guarded:
        import atexit

        atexit.register(_stop)
        _exit_guarded = True


def _stop():
    global _exiting
    _exiting = True
    worker = _worker
    if worker is not None and worker is not threading.current_thread():
        _queue.put(None)  # (wakes a worker waiting for a job)
        worker.join()


_fork_guarded = False


def _guard_forks():
    """Keep a fork from copying a compilation in progress into the child.

    A child process made by ``fork`` has only the thread that forked: a compiler lock held by
    the worker at that moment would stay held in the child forever, and its pending jobs would
    never finish. So while the worker runs, a fork waits for its current compilation (it takes
    Numba's compiler lock), and the child starts without a worker and without the parent's
    pending jobs. Installed when the first worker starts (never with tiering off); a fork while
    no worker runs takes only this module's lock (held across the fork, so that no worker can
    start meanwhile) and waits for nothing.
    """
    global _fork_guarded
    if _fork_guarded or not hasattr(os, "register_at_fork"):
        return
    from numba.core.compiler_lock import global_compiler_lock

    held = [False]  # whether the fork in progress took the compiler lock

    def before():
        _lock.acquire()
        held[0] = _worker is not None
        if held[0]:
            global_compiler_lock.acquire()

    def parent():
        if held[0]:
            global_compiler_lock.release()
        _lock.release()

    def child():
        global _worker, _queue, _lock, _jobs
        if held[0]:
            global_compiler_lock.release()
        _worker = None
        _queue = queue.SimpleQueue()
        _lock = threading.Lock()  # (the parent's is held by the forking thread)
        _jobs = {key: job for key, job in _jobs.items() if job.done.is_set()}

    os.register_at_fork(before=before, after_in_parent=parent, after_in_child=child)
    _fork_guarded = True


def _arrays(values):
    for v in values:
        if isinstance(v, np.ndarray):
            yield v
        elif isinstance(v, tuple):
            yield from _arrays(v)


def _tiered(value) -> bool:
    return getattr(value, "_fastcf_tiered", False) is True


def _twin(func):
    """Return the kernel's Python function, calling every kernel it uses as Python too."""
    twin = _twins.get(func)
    if twin is not None:
        return twin
    closure = func.__closure__
    if closure is not None:  # a kernel defined in a function, calling one from there
        cells = []
        for cell in closure:
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                cells.append(cell)
                continue
            cells.append(types.CellType(_twin(value.py_func)) if _tiered(value) else cell)
        closure = tuple(cells)
    glob = dict(func.__globals__)
    twin = types.FunctionType(func.__code__, glob, func.__name__, func.__defaults__, closure)
    twin.__kwdefaults__ = func.__kwdefaults__
    _twins[func] = twin  # before the callees: kernels may call each other in a cycle
    for name, value in func.__globals__.items():
        if _tiered(value):
            glob[name] = _twin(value.py_func)
    return twin


def _python_args(disp, args):
    """Return the arguments of the kernel's Python function for those of a compilation miss.

    Numba's dispatcher hands the arguments of a ``*args`` function folded into one tuple, the
    last one (as the compiled code takes them): the Python function takes them unfolded.
    """
    if disp.py_func.__code__.co_flags & inspect.CO_VARARGS:
        return (*args[:-1], *args[-1])
    return args


def _compiled(disp, job, args):
    """Return the compiled code's answer once the worker is done (compiled here if it failed)."""
    job.done.wait()
    if job.error is None:
        overload = disp.overloads.get(job.argtypes)
        if overload is not None:
            return overload.entry_point(*args)
    with _lock:
        _counts["fallback"] += 1
    # the worker's error (or a changed signature): Numba's own path, with its own errors
    return _numba_compile(disp, *args)(*args)


def _numba_compile(disp, *args, **kws):
    from numba.core.dispatcher import Dispatcher

    return Dispatcher._compile_for_args(disp, *args, **kws)


def _await_load(job):
    """Wait for the job while the worker may be loading it from the cache (a warm start)."""
    global _cold
    deadline = time.monotonic() + _LOAD_WAIT
    while not _cold and not job.done.wait(0.002):
        if job.compiling():
            _cold = True  # no cached code: this and later misses run as Python meanwhile
        elif time.monotonic() > deadline:
            break


#: the deprecation of tiered execution (issue 54), said once per process at its first tiered
#: miss and by every call of its public names (:mod:`fastcf._deprecated`)
TIERED_MESSAGE = (
    "tiered execution (FASTCF_TIERED=1, fastcf.set_tiered, compile_first, wait_for_kernels) is "
    "deprecated and will be removed in the next release: it does not give every family a fast "
    "first answer (a tree ensemble's first query took 34 s as Python). Fill the kernel cache "
    "ahead of time with `python -m fastcf warmup` instead"
)
_said = False


def _say_deprecated():
    """Warn once per process that tiered execution is deprecated (its first tiered miss)."""
    global _said
    if not _said:
        _said = True
        import warnings

        warnings.warn(TIERED_MESSAGE, FutureWarning, stacklevel=4)


def _on_miss(disp, *args, **kws):
    """Replace ``disp._compile_for_args``: return what Numba's dispatcher then calls."""
    from numba.core.dispatcher import OmittedArg

    if (
        kws
        or not _enabled()
        or getattr(_local, "worker", False)
        or any(isinstance(a, OmittedArg) for a in args)
    ):
        return _numba_compile(disp, *args, **kws)
    try:
        argtypes = tuple(disp.typeof_pyval(a) for a in args)
    except Exception:  # noqa: BLE001 - an argument Numba cannot type: its own error message
        return _numba_compile(disp, *args)
    overload = disp.overloads.get(argtypes)
    if overload is not None:  # compiled by the worker since the dispatch
        return overload.entry_point
    _say_deprecated()
    job = _submit(disp, argtypes)
    _await_load(job)
    if job.done.is_set() and job.error is None:
        overload = disp.overloads.get(argtypes)
        if overload is not None:
            return overload.entry_point
    size = sum(a.size for a in _arrays(args))
    if job.error is not None or job.slow or size > MAX_INTERPRETED:
        return lambda *a: _compiled(disp, job, a)
    twin = _twin(disp.py_func)

    def run(*a):
        saved = [(x, x.copy()) for x in _arrays(a) if x.flags.writeable]
        t0 = time.perf_counter()
        try:
            with np.errstate(all="ignore"):
                out = twin(*_python_args(disp, a))
        except Exception:  # noqa: BLE001 - Python semantics differ (ZeroDivisionError, …)
            for x, copy in saved:
                x[...] = copy
            with _lock:
                _counts["raised"] += 1
            return _compiled(disp, job, a)
        if time.perf_counter() - t0 > _SLOW:
            job.slow = True
        with _lock:
            _counts["interpreted"] += 1
        return out

    return run


def install(disp):
    """Route the compilation misses of a fastcf kernel (a Numba dispatcher) through this tier."""
    if not hasattr(disp, "overloads"):  # NUMBA_DISABLE_JIT=1: the kernel is its Python function
        return disp
    disp._fastcf_tiered = True
    disp._compile_for_args = lambda *args, **kws: _on_miss(disp, *args, **kws)
    return disp
