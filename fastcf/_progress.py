"""Progress while fastcf's command line waits: which kernels compile, and for how long.

A first call on an empty kernel cache compiles its kernels, seconds each; without a word, the
first ``python -m fastcf demo`` sat silent for most of a minute. :func:`compile_progress` listens
to Numba's compile events (``numba.core.event``, "numba:compile": one per kernel and signature
actually compiled, none for a kernel loaded from the cache) and, while a compilation runs, says
every few seconds how many kernels have compiled and which one is compiling now. It is used by
the command line (``demo``, ``warmup``, ``bench``); library calls print nothing.

:func:`rows` draws a progress line for a batch of slow rows (the tabular and tree families'
programs), on a terminal only, once the batch has run a few seconds.
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading
import time

__all__ = ["compile_progress", "rows"]


class _Compiles:
    """Count the kernels compiled, and name the one compiling (Numba's event listener)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.depth = 0  # nested compilations: a kernel compiles the kernels it calls
        self.done = 0
        self.current = None
        self.since = None  # when the outermost compilation in progress began

    def notify(self, event):  # (numba.core.event.Listener's interface)
        with self.lock:
            if event.is_start:
                if self.depth == 0:
                    self.since = time.monotonic()
                self.depth += 1
                disp = (event.data or {}).get("dispatcher")
                func = getattr(disp, "py_func", None)
                # fastcf's kernels by name (Numba's own overloads compile inside them)
                if func is not None and func.__module__.startswith("fastcf"):
                    self.current = f"{func.__module__}.{func.__qualname__}"
            elif event.is_end:
                self.depth = max(self.depth - 1, 0)
                self.done += 1
                if self.depth == 0:
                    self.since = None


@contextlib.contextmanager
def compile_progress(out=None, every=4.0, why="the kernel cache is empty", idle=None):
    """Say every ``every`` seconds what compiles while the block runs (nothing if nothing does).

    Parameters
    ----------
    out : callable, optional
        Prints one line (default: ``print`` to stdout, flushed).
    every : float, default=4.0
        Seconds between two lines (the first comes ``every`` seconds into a compilation).
    why : str
        Said once, with the first line.
    idle : float, optional
        A heartbeat (the demo's): whenever standard output and standard error have been silent
        for ``idle`` seconds, say so in one line, what compiles if something does, else how
        long the block has been silent (a model training, a long solve). No wait is then
        silent for much longer than ``idle`` seconds (as long as the waiting thread lets
        Python's others run, as NumPy, scikit-learn, Numba's compiler and HiGHS do).

    Examples
    --------
    >>> with compile_progress(every=60.0):
    ...     pass
    """
    if out is None:

        def out(text):
            print(text, file=sys.stdout, flush=True)

    try:
        from numba.core import event
    except ImportError:  # pragma: no cover - every supported Numba has it
        yield
        return
    state = _Compiles()
    listener = type("_Listener", (event.Listener,), {
        "on_start": lambda self, e: state.notify(e),
        "on_end": lambda self, e: state.notify(e),
    })()  # fmt: skip
    stop = threading.Event()
    said = [False]
    stamp = _Stamp()

    def compiling(since, done, current):
        head = "" if said[0] else f"({why}; later runs load the kernels from it) "
        said[0] = True
        now = "" if current is None else f", now {current}"
        return (
            f"  … compiling fastcf's kernels {head}{done} compiled so far{now} "
            f"({time.monotonic() - since:.0f} s into it)"
        )

    def watch():
        tick = every if idle is None else min(every, 0.25 * idle)
        while not stop.wait(tick):
            with state.lock:
                since, done, current = state.since, state.done, state.current
            if idle is None:
                if since is not None:
                    out(compiling(since, done, current))
                continue
            quiet = time.monotonic() - stamp.last
            if quiet < idle:
                continue
            if since is not None:
                out(compiling(since, done, current))
            else:
                out(f"  … still working ({quiet:.0f} s since the last line)")
            stamp.last = time.monotonic()

    thread = threading.Thread(target=watch, name="fastcf-progress", daemon=True)
    streams = (sys.stdout, sys.stderr)
    if idle is not None:
        sys.stdout, sys.stderr = (_Stamped(s, stamp) for s in streams)
    try:
        with event.install_listener("numba:compile", listener):
            thread.start()
            try:
                yield state
            finally:
                stop.set()
                thread.join()
    finally:
        if idle is not None:
            sys.stdout, sys.stderr = streams


class _Stamp:
    """When a stamped stream was last written (``time.monotonic``)."""

    def __init__(self):
        self.last = time.monotonic()


class _Stamped:
    """A text stream that stamps the time of each write (the heartbeat of compile_progress)."""

    def __init__(self, stream, stamp):
        self._stream = stream
        self._stamp = stamp

    def write(self, text):
        if text:
            self._stamp.last = time.monotonic()
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def rows(seq, desc, *, delay=2.0, every=0.5, stream=None):
    """Yield the items of ``seq`` (a sized sequence), with a progress line on a terminal.

    The line (``desc: 120/500 rows, 38.0/s, ~10 s left``) appears on ``stream`` (standard
    error) once the loop has run ``delay`` seconds, is redrawn at most every ``every`` seconds
    and erased at the end: a batch of a few milliseconds shows nothing, and nothing is written
    where standard error is not a terminal (a log, a notebook's captured stream, a service) or
    with ``FASTCF_PROGRESS=0``.

    Examples
    --------
    >>> [i for i in rows(range(3), "doctest")]
    [0, 1, 2]
    """
    import os

    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    on = os.environ.get("FASTCF_PROGRESS", "1").strip() != "0"
    if not (on and isatty is not None and isatty()):
        yield from seq
        return
    n = len(seq)
    t0 = time.monotonic()
    last = -math.inf
    width = 0
    for i, item in enumerate(seq):
        yield item
        now = time.monotonic()
        if now - t0 >= delay and now - last >= every:
            rate = (i + 1) / (now - t0)
            text = f"{desc}: {i + 1}/{n} rows, {rate:.1f}/s, ~{(n - i - 1) / rate:.0f} s left"
            stream.write("\r" + text.ljust(width))
            stream.flush()
            width = max(width, len(text))
            last = now
    if width:
        stream.write("\r" + " " * width + "\r")
        stream.flush()
