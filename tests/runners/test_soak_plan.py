"""The soak as a plan asks for it: its section (exactly one length), `--soak 60m`, what the
events say it has done (so a resume continues it) and what `validate` says it will reach."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from parval.errors import PlanError
from parval.plan.load import load_plan, parse_duration_minutes, with_soak
from parval.rundir.estimate import soak_line
from parval.runners.soak import soak_done, soak_reserve_s
from tests.conftest import write_plan


def test_durations() -> None:
    assert parse_duration_minutes("60m") == 60
    assert parse_duration_minutes("1.5h") == 90
    assert parse_duration_minutes("90s") == 1.5
    assert parse_duration_minutes("45") == 45
    for bad in ("", "0m", "-5m", "soon", "5d"):
        with pytest.raises(ValueError):
            parse_duration_minutes(bad)


def test_a_soak_names_exactly_one_length(tmp_path: Path) -> None:
    assert load_plan(write_plan(tmp_path / "a", soak={"minutes": 30})).soak == {"minutes": 30, "waves_per_start": 40}
    with pytest.raises(PlanError, match="soak"):
        load_plan(write_plan(tmp_path / "b", soak={"minutes": 30, "waves": 10}))
    with pytest.raises(PlanError, match="soak"):
        load_plan(write_plan(tmp_path / "c", soak={"until_rate_below": 1.5}))
    assert load_plan(write_plan(tmp_path / "d")).soak is None


def test_soak_on_the_command_line_replaces_the_plans(tmp_path: Path) -> None:
    plan = load_plan(write_plan(tmp_path / "p", soak={"waves": 10}))
    soaked, text = with_soak(plan, 60.0)
    assert soaked.soak == {"minutes": 60.0, "waves_per_start": 40}
    assert yaml.safe_load(text)["soak"] == {"minutes": 60.0}
    assert soaked.sha256 != plan.sha256  # the run records the plan it ran


def _events() -> list[dict[str, Any]]:
    """Two soak units: the first complete (3 mixed waves, one of them repeated), the second
    interrupted after 2 s."""
    out: list[dict[str, Any]] = [
        {"kind": "unit_begin", "unit": "soak2-s1", "t": 100.0},
        {"kind": "run_start", "run": "soak2-s1", "attempt": 7, "role": "soak", "count": 2, "t": 100.1},
    ]
    for wave in (0, 1, 1, 2):  # wave 1 repeated
        out.append({"kind": "wave", "run": "soak2-s1", "attempt": 7, "phase": "mixed_wave", "wave": wave, "t": 101.0})
    out += [
        {"kind": "wave", "run": "soak2-s1", "attempt": 7, "phase": "warm_wave", "wave": 1, "t": 101.5},
        {"kind": "run_end", "run": "soak2-s1", "attempt": 7, "t": 109.0},
        {"kind": "unit_end", "unit": "soak2-s1", "ok": True, "t": 110.0},
        {"kind": "unit_begin", "unit": "soak2-s2", "t": 111.0},
        {"kind": "run_start", "run": "soak2-s2", "attempt": 9, "role": "soak", "count": 2, "t": 111.1},
        {"kind": "wave", "run": "soak2-s2", "attempt": 9, "phase": "mixed_wave", "wave": 0, "t": 112.0},
        {"kind": "campaign_interrupted", "t": 113.0},
    ]
    return out


def test_what_the_soak_has_done_is_read_from_the_events() -> None:
    done = soak_done(_events(), 2)
    # the interrupted unit's waves are not kept; its time was spent all the same
    assert (done.units, done.waves) == (1, 3)
    assert done.elapsed_s == pytest.approx(10.0 + 2.0)
    assert soak_done(_events(), 4).units == 0


def test_validate_says_what_a_soak_in_waves_reaches(tmp_path: Path) -> None:
    plan = load_plan(write_plan(tmp_path / "p", soak={"waves": 1000, "waves_per_start": 100}))
    line = soak_line(plan)
    assert line is not None and line.startswith("soak: about ")
    # 3 required starts and 10 soak starts, each cold + warm + 3 reloads, at 2 slots
    warm = plan.waves["warm"]
    required = 3 * (1 + warm + plan.waves["mixed_at_largest"] + 3) * 2
    assert f"{required + 2 * (1000 + 10 * (1 + warm + 3)):,} overlapped outputs at count 2" in line
    minutes = load_plan(write_plan(tmp_path / "m", soak={"minutes": 30}))
    assert "--like RUN" in str(soak_line(minutes))
    target = load_plan(write_plan(tmp_path / "t", soak={"until_rate_below": 0.001}))
    assert "about 2,995 overlapped outputs" in str(soak_line(target))


def _timed_start(
    unit: str, count: int, *, ok: bool = True, spans: tuple[float, ...] = (1.0, 1.0, 1.5)
) -> list[dict[str, Any]]:
    """One start: launched at 100, its mixed waves end at 105, 106, 107 (each lasting
    `spans`), its unit ends at 115."""
    out: list[dict[str, Any]] = [
        {"kind": "unit_begin", "unit": unit, "t": 100.0},
        {"kind": "run_start", "run": unit, "attempt": 1, "role": "count", "count": count, "t": 101.0},
        {"kind": "wave", "run": unit, "attempt": 1, "phase": "warm_wave", "wave": 1, "t": 103.0},
    ]
    for i, span in enumerate(spans):
        wave = {"kind": "wave", "run": unit, "attempt": 1, "phase": "mixed_wave", "wave": i, "t": 105.0 + i}
        out.append({**wave, "t_start": 4.0 + i, "t_end": 4.0 + i + span})
    out.append({"kind": "unit_end", "unit": unit, "ok": ok, "t": 115.0})
    return out


def test_the_soak_reserve_is_measured_from_the_counts_starts() -> None:
    # outside the mixed waves: 100 -> 104 (the first began 1 s before it ended at 105) and 107 -> 115
    assert soak_reserve_s(_timed_start("count2-s1", 2), 2) == 2 * (4.0 + 8.0) + 2 * 1.5
    # the slowest start decides
    slower = [{**e, "t": e["t"] + 10 if e["kind"] == "unit_end" else e["t"]} for e in _timed_start("count2-s2", 2)]
    assert soak_reserve_s(_timed_start("count2-s1", 2) + slower, 2) == 2 * (4.0 + 18.0) + 2 * 1.5


@pytest.mark.parametrize(
    "events",
    [
        [],
        _timed_start("count2-s1", 4),  # another count's start
        _timed_start("count2-s1", 2, ok=False),  # a start that did not complete
        _timed_start("count2-s1", 2, spans=()),  # no mixed wave to time
        [{k: v for k, v in e.items() if k != "t_end"} for e in _timed_start("count2-s1", 2)],  # a wave untimed
    ],
)
def test_without_a_timed_start_at_the_count_the_reserve_is_not_measured(events: list[dict[str, Any]]) -> None:
    assert soak_reserve_s(events, 2) is None
