"""`parval bench --quick` runs end to end and writes every figure (times are never
asserted: these machines are noisy)."""

from __future__ import annotations

import json
from numbers import Real
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from parval.cli import app

TARGET_IDS = {
    "skew.send_p95_n16",
    "skew.start_p95_n16",
    "skew.syn_retransmits",
    "skew.listen_overflows",
    "campaign.gap_median",
    "campaign.start_overhead",
    "poll.hz_10ms",
    "poll.effect_10ms",
    "poll.hz_5ms",
    "poll.effect_5ms",
    "campaign.peak_rss",
    "campaign.event_log_growth",
    "campaign.artifacts_growth",
    "campaign.judge_growth",
    "campaign.overhead",
    "soak.parval_share",
}


def _number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


@pytest.mark.slow
def test_quick_bench_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    result = CliRunner().invoke(app, ["bench", "--quick", "--json", str(out)])
    assert result.exit_code == 0, result.output
    for heading in (
        "1. Release skew",
        "2. Campaign-like loop",
        "3. Status poller",
        "4. Memory and evidence writing",
        "targets (informational)",
    ):
        assert heading in result.output
    data = json.loads(out.read_text())
    assert data["schema_version"] == 1 and data["quick"] is True

    skew = data["skew"]
    assert skew["ns"] == [2, 16]
    got = {(s["method"], s["n"]) for s in skew["series"]}
    assert got == {("parval", 2), ("baseline", 2), ("parval", 16), ("baseline", 16), ("parval+poll", 16)}
    for s in skew["series"]:
        assert s["waves"] == data["config"]["waves"]
        assert s["requests_ok"] == s["requests"] > 0
        for key in ("send_ms", "accept_ms", "start_ms", "lead_ms"):
            assert _number(s[key]["median"]) and _number(s[key]["p95"]), (s["method"], key)
        assert _number(s["slow_connects"])
    assert isinstance(skew["tcp_counters"], dict)

    camp = data["campaign"]
    assert camp["requests"] >= 128
    assert _number(camp["gap_ms"]["median"]) and _number(camp["gap_ms"]["p95"])
    for part in ("record_ms", "checks_ms", "drained_ms", "next_wave_ms"):
        assert _number(camp["gap_parts_ms"][part]["median"]), part
    for key in (
        "server_own_ready_ms",
        "ready_detect_lag_ms",
        "ready_to_first_poll_ms",
        "start_overhead_ms",
        "server_own_stop_ms",
        "stop_overhead_ms",
        "overhead_ms",
    ):
        assert _number(camp["per_start"][key]), key
    assert _number(camp["rss"]["peak_mib"])
    ov = camp["overhead"]
    for key in (
        "wall_s",
        "server_s",
        "service_s",
        "readiness_s",
        "overhead_s",
        "ratio",
        "per_start_fixed_s",
        "beyond_starts_pct",
    ):
        assert _number(ov[key]), key
    assert ov["requests"] == camp["requests"] and ov["starts"] == camp["starts"]
    assert "campaign overhead: wall" in result.output
    for key in ("event_log", "artifacts"):
        assert _number(camp[key]["first_ms"]) and _number(camp[key]["ratio"]), key
    for key in ("append", "put"):
        assert _number(camp["controlled"][key]["ratio"]), key
    for when in ("mid", "end"):
        assert camp["judge"][when]["error"] is None
        assert _number(camp["judge"][when]["ms"])

    modes = data["poll"]["modes"]
    assert set(modes) == {"off", "10ms", "5ms"}
    assert _number(modes["off"]["latency_median_ms"])
    for mode in ("10ms", "5ms"):
        assert _number(modes[mode]["poll_hz"]) and _number(modes[mode]["effect_pct"])

    soak = data["soak"]
    assert soak["n"] == 4 and soak["overlapped"] > 0
    assert _number(soak["overlapped_per_min"]) and _number(soak["parval_share_pct"])
    assert "overlapped outputs/min; parval's share of the wall time" in result.output

    checks = {c["id"]: c for c in data["targets"]}
    assert set(checks) == TARGET_IDS
    for c in checks.values():
        assert c["result"] in ("PASS", "MISS", None)
        report_only = c["id"] in ("campaign.start_overhead", "poll.hz_10ms")
        assert report_only or c["result"] is not None, c


def test_bad_wave_sizes_are_a_usage_error() -> None:
    result = CliRunner().invoke(app, ["bench", "--n", "1,99"])
    assert result.exit_code != 0
