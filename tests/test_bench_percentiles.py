"""``python -m fastcf bench`` rows: p50, p95 and p99 of the per-query times (issue 54)."""

import numpy as np
import pytest

from fastcf.bench import _format
from fastcf.bench.common import row, summary


def test_summary_has_p50_p95_p99():
    v = np.arange(1.0, 201.0)  # 200 queries
    s = summary(v)
    assert s["p50"] == s["median"] == pytest.approx(100.5)
    assert s["p95"] == pytest.approx(np.percentile(v, 95))
    assert s["p99"] == pytest.approx(np.percentile(v, 99))
    assert s["p50"] <= s["p95"] <= s["p99"] <= s["max"]


def test_rows_and_table_report_p99_for_fastcf_and_the_baseline():
    fast = [1e-3] * 98 + [2e-3, 50e-3]  # a tail only p99 (and max) shows
    base = [10e-3] * 100
    r = row("q", fast, base, "plain")
    assert r["p50"] == r["median"] == r["fastcf_s"] == pytest.approx(1e-3)
    assert r["p99"] == r["fastcf_p99"] == pytest.approx(np.percentile(fast, 99))
    assert r["p95"] < r["p99"] and r["baseline_p99"] == pytest.approx(10e-3)
    text = _format([r], "t")
    assert "| fastcf p50 · p95 · p99 | baseline p50 · p95 · p99 |" in text
    assert "per query: p50 · p95 · max" in text
    assert f"| 1 ms · 1 ms · {r['p99'] * 1e3:.3g} ms | 10 ms · 10 ms · 10 ms |" in text
    one = row("one", (2e-3, 1e-3, 3e-3))  # one query's repeated calls: its median thrice
    assert one["p50"] == one["p95"] == one["p99"] == 2e-3
    assert "| 2 ms · 2 ms · 2 ms | – |" in _format([one], "t")
