"""Progress while waiting: compile notices on the command line, a line for slow batches."""

import io
import os
import subprocess
import sys
import time

import numba
import pytest

from fastcf import _progress
from fastcf._progress import compile_progress, rows


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_rows_draws_a_line_on_a_terminal_only_once_slow_and_erases_it():
    term = _Terminal()
    out = []
    for i in rows(range(5), "demo", delay=0.0, every=0.0, stream=term):
        out.append(i)
    assert out == list(range(5))
    text = term.getvalue()
    assert "demo: 5/5 rows" in text and text.endswith("\r")
    # not yet slow: nothing
    quiet = _Terminal()
    assert list(rows(range(5), "demo", delay=60.0, stream=quiet)) == list(range(5))
    assert quiet.getvalue() == ""
    # not a terminal: nothing
    log = io.StringIO()
    assert list(rows(range(5), "demo", delay=0.0, every=0.0, stream=log)) == list(range(5))
    assert log.getvalue() == ""


def test_rows_is_off_with_fastcf_progress_0(monkeypatch):
    monkeypatch.setenv("FASTCF_PROGRESS", "0")
    term = _Terminal()
    assert list(rows(range(3), "x", delay=0.0, every=0.0, stream=term)) == [0, 1, 2]
    assert term.getvalue() == ""


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="nothing compiles")
def test_compile_progress_names_the_kernel_compiling():
    lines = []

    def slow_to_compile(x):  # a fresh function: Numba compiles it in the block
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i] * x[i]
        return s

    import numpy as np

    with compile_progress(out=lines.append, every=0.01, why="a test"):
        f = numba.njit(slow_to_compile)
        f(np.arange(3.0))
        time.sleep(0.05)
    # (the test function is not fastcf's: the line counts it and names no fastcf kernel)
    assert lines and "(a test; later runs load the kernels from it)" in lines[0]
    assert all("compiling fastcf's kernels" in line and "now" not in line for line in lines)
    # after the block the listener is gone: a compilation says nothing
    n = len(lines)
    numba.njit(lambda x: x + 1)(1.0)
    time.sleep(0.05)
    assert len(lines) == n


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="nothing compiles")
def test_a_cold_warmup_says_what_it_compiles(tmp_path):
    # a fresh cache: `python -m fastcf warmup logistic` compiles, and says so as it goes
    proc = subprocess.run(
        [sys.executable, "-m", "fastcf", "warmup", "logistic"],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path)),
    )
    assert "compiling fastcf's kernels" in proc.stdout
    assert "fastcf._kernels." in proc.stdout


def test_the_demo_heartbeat_says_something_whenever_output_is_silent():
    # idle=: a line whenever stdout and stderr have been silent that long; a print resets it
    lines = []
    saved = sys.stdout, sys.stderr
    with compile_progress(out=lines.append, every=60.0, idle=0.3):
        time.sleep(1.0)
        n = len(lines)
        for _ in range(50):
            print("working", flush=True)
            time.sleep(0.01)
        quiet = len(lines) - n
    assert n >= 2 and all("still working" in line for line in lines)
    assert quiet == 0  # prints 10 ms apart for half a second: never silent for 0.3 s
    assert (sys.stdout, sys.stderr) == saved  # the streams are given back


class _Disp:
    """A stand-in for a Numba dispatcher: its ``py_func``'s module decides whose kernel it is."""

    def __init__(self, module):
        def kernel():
            pass

        kernel.__module__ = module
        self.py_func = kernel


def _event(status, module):
    from numba.core import event

    return event.Event("numba:compile", status, data={"dispatcher": _Disp(module)})


def _compile(notice, module, seconds):
    from numba.core.event import EventStatus

    notice.on_event(_event(EventStatus.START, module))
    time.sleep(seconds)
    notice.on_event(_event(EventStatus.END, module))


def test_a_library_call_says_on_stderr_while_fastcf_kernels_compile(monkeypatch):
    monkeypatch.setattr(_progress, "NOTICE_AFTER", 0.15)
    monkeypatch.setattr(_progress, "NOTICE_EVERY", 0.2)
    err = io.StringIO()
    notice = _progress._Notice(stream=err)
    _compile(notice, "fastcf._kernels.fake", 0.05)  # shorter than NOTICE_AFTER: no word
    time.sleep(0.3)
    assert err.getvalue() == ""
    _compile(notice, "fastcf._kernels.fake", 0.6)
    lines = err.getvalue().splitlines()
    assert 2 <= len(lines) <= 4  # after 0.15 s, then every 0.2 s
    assert lines[0].startswith("fastcf: compiling kernels for their first use")
    assert "now fastcf._kernels.fake." in lines[0] and "python -m fastcf warmup" in lines[0]
    assert all(line.startswith("fastcf: compiling kernels") for line in lines)
    time.sleep(1.5)  # idle: the watcher ends, and a later burst starts a new one
    assert notice.thread is None


def test_the_notice_ignores_other_compiles_and_is_muted_by_the_command_line(monkeypatch):
    monkeypatch.setattr(_progress, "NOTICE_AFTER", 0.0)
    monkeypatch.setattr(_progress, "NOTICE_EVERY", 0.1)
    err = io.StringIO()
    notice = _progress._Notice(stream=err)
    _compile(notice, "mypackage.model", 0.4)  # a user's own Numba function: not fastcf's
    assert err.getvalue() == "" and notice.thread is None
    monkeypatch.setattr(_progress, "_NOTICE", notice)
    with compile_progress(out=lambda text: None, every=60.0):  # the command line speaks
        _compile(notice, "fastcf._kernels.fake", 0.4)
    assert err.getvalue() == ""


def test_a_notice_made_inside_the_command_line_block_is_muted_too(monkeypatch):
    # the demo opens its block before any kernel is imported: the library's notice, made at
    # that import, printed its lines beside the demo's own (CI's log, 2026-11-29)
    monkeypatch.setattr(_progress, "NOTICE_AFTER", 0.0)
    monkeypatch.setattr(_progress, "NOTICE_EVERY", 0.1)
    err = io.StringIO()
    with compile_progress(out=lambda text: None, every=60.0):
        notice = _progress._Notice(stream=err)
        _compile(notice, "fastcf._kernels.fake", 0.4)
    assert err.getvalue() == ""
    _compile(notice, "fastcf._kernels.fake", 0.4)  # after the block: the library speaks
    assert "fastcf: compiling kernels" in err.getvalue()


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="nothing compiles")
def test_a_first_query_on_an_empty_cache_is_never_silent(tmp_path):
    """Fresh kernel cache: the first query says on stderr that it compiles (stdout stays the
    user's); the same query again loads the kernels and says nothing; FASTCF_PROGRESS=0 is
    silent."""
    code = (
        "import numpy as np, fastcf, fastcf._progress as P\n"
        "P.NOTICE_AFTER, P.NOTICE_EVERY = 0.2, 1.0\n"
        "A = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]); b = np.zeros(3)\n"
        "ex = fastcf.LinearExplainer.from_arrays(A, b)\n"
        "print(bool(ex.explain(np.array([2.0, 0.0]), 1, region=True).success))\n"
    )

    def run(**env):
        return subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True,
            env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), **env),
        )  # fmt: skip

    first = run()
    assert first.stdout == "True\n"
    assert "fastcf: compiling kernels for their first use" in first.stderr
    again = run()
    assert again.stdout == "True\n" and "compiling" not in again.stderr
    quiet = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "other"), FASTCF_PROGRESS="0"),
    )  # fmt: skip
    assert quiet.stdout == "True\n" and "compiling" not in quiet.stderr
