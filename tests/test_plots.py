"""Memory timeline plot: a valid PNG with matplotlib, a clear message without it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from parval.report.plots import MISSING_MATPLOTLIB, plot_memory_timeline

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def stream() -> tuple[list[dict[str, Any]], list[tuple[float, str]]]:
    phases = ["startup", "cold_load", "cold_wave", "warm_wave:1", "mixed_wave:2", "unload", "idle", "reload"]
    transitions = [(100.0 + i, p) for i, p in enumerate(phases)]
    samples: list[dict[str, Any]] = []
    for k in range(80):
        t = 100.0 + k * 0.1
        phase = phases[min(int(k * 0.1), len(phases) - 1)]
        samples.append({"t": t, "phase": phase, "kind": "host", "rss_mib": 100 + k, "pss_mib": 90 + k, "pids": [1]})
        samples.append(
            {
                "t": t + 0.01,
                "phase": phase,
                "kind": "gpu",
                "device_used_mib": 500 + 3 * k,
                "device_total_mib": 24576,
                "process_mib": 400 + 3 * k,
            }
        )
    return samples, transitions


def test_writes_valid_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    samples, transitions = stream()
    out = tmp_path / "plots" / "memory-n2-start0.png"
    assert plot_memory_timeline(samples, transitions, out, title="count 2, start 0") is None
    assert out.read_bytes()[:8] == PNG_MAGIC
    host_only = tmp_path / "host.png"
    hs = [s for s in samples if s["kind"] == "host"]
    assert plot_memory_timeline(hs, transitions, host_only, title="host only") is None
    assert host_only.read_bytes()[:8] == PNG_MAGIC


def test_missing_matplotlib_gives_install_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib...` fail
    samples, transitions = stream()
    out = tmp_path / "x.png"
    msg = plot_memory_timeline(samples, transitions, out, title="t")
    assert msg == MISSING_MATPLOTLIB
    assert "pip install 'parval[plots]'" in msg
    assert not out.exists()


def test_no_samples_message(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    assert plot_memory_timeline([], [], tmp_path / "x.png", title="t") == "no memory samples to plot"
