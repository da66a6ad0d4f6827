"""Every event kind a judge reads carries the fields the judge reads: the table in
parval/rundir/event_fields.py is enforced where events are written and where they are read,
so a judge meets a clear error naming the kind and field (exit 2), never a KeyError; a hung
server's wave_timeout ends as a verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from parval.errors import EXIT_USAGE, RunDirError
from parval.gates.m2_concurrency import judge_m2, m2_starts
from parval.rundir.event_fields import EVENT_FIELDS, EventFieldError, check_read
from parval.rundir.event_index import build_records
from parval.rundir.events import EventLog
from parval.status import Status
from tests.gates.m_events import Events, baseline_refs, full_start, plan


def count2_with_a_hung_third_start(ev: Events, p: dict[str, Any]) -> None:
    """Two complete starts at count 2, then a third whose warm wave never completed (its
    `wave_timeout` written as the runner used to: no attempt, no reason)."""
    for run in ("count2-s1", "count2-s2"):
        full_start(ev, run, 2, p)
    ev.start("count2-s3", count=2)
    ev.append("wave_timeout", run="count2-s3", phase="warm_wave", wave=1)
    ev.append("run_end", run="count2-s3", attempt=0)
    ev.append("start_aborted", unit="count2-s3", reason="count2-s3: warm_wave wave 1 exceeded timeouts.wave_s")


def test_a_wave_timeout_recorded_without_a_reason_is_a_verdict_not_a_traceback(tmp_path: Path) -> None:
    """The runner used to write `wave_timeout` without `reason`; judging such a run (and the
    campaign's own judging between units) ends as M2.starts BLOCKED naming the timeout."""
    ev = Events(tmp_path)
    baseline_refs(ev)
    p = plan()
    count2_with_a_hung_third_start(ev, p)
    ctx = ev.context(p)
    r = m2_starts(ctx, 2)
    assert r.status is Status.BLOCKED and "did not complete within timeouts.wave_s" in r.reason, r.reason
    for other in judge_m2(ctx, 2):  # every M2 judge gives a verdict: none crashes, none FAILs
        assert other.status is not Status.FAIL, (other.id, other.reason)


def test_a_read_event_without_a_declared_field_names_kind_and_field() -> None:
    events = [{"kind": "run_start", "run": "count1-s1", "attempt": 1, "role": "count", "count": 1}]
    events.append({"kind": "request", "run": "count1-s1", "attempt": 1, "phase": "cold_wave", "wave": 0})
    with pytest.raises(EventFieldError, match=r"a `request` event lacks `req`") as info:
        build_records(events)
    assert isinstance(info.value, RunDirError) and info.value.exit_code == EXIT_USAGE
    with pytest.raises(EventFieldError, match=r"`wave` = 'x', which is not an integer"):
        check_read([{"kind": "wave_timeout", "run": "r", "attempt": 1, "phase": "p", "wave": "x", "reason": "y"}])


def test_the_runner_cannot_write_an_event_without_a_declared_field(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl")
    try:
        with pytest.raises(EventFieldError, match=r"`wave_timeout` event lacks `reason`"):
            log.append("wave_timeout", run="count1-s1", attempt=1, phase="warm_wave", wave=1)
        log.append("note", anything="goes")  # kinds no judge reads are not checked
    finally:
        log.close()
    assert (tmp_path / "events.jsonl").read_text().count("\n") == 1


def test_every_kind_the_gates_read_is_declared() -> None:
    """The kinds `Records.kind(...)` and the judges look up are in the table."""
    import re

    root = Path(__file__).resolve().parents[2] / "parval" / "gates"
    read = set()
    for path in root.glob("*.py"):
        read |= set(re.findall(r'kind\("([a-z0-9_]+)"\)', path.read_text()))
        lines = [line for line in path.read_text().splitlines() if "effects" not in line]
        read |= set(re.findall(r'e\["kind"\] == "([a-z0-9_]+)"', "\n".join(lines)))
    missing = sorted(k for k in read if k not in EVENT_FIELDS)
    assert not missing, f"kinds the gates read that the table does not declare: {missing}"


def test_a_start_that_failed_before_its_server_started_is_a_verdict_not_a_traceback(tmp_path: Path) -> None:
    """A unit can fail before `run_start` is written (the executable vanished: the launch
    raises before the start is recorded). Its `start_failed` names only the unit; every judge
    that reads the start's failures (M2.starts, the campaign's own judging between units)
    still finds the start it names, and says BLOCKED with the reason."""
    ev = Events(tmp_path)
    baseline_refs(ev)
    p = plan()
    for run in ("count2-s1", "count2-s2"):
        full_start(ev, run, 2, p)
    ev.append("start_failed", unit="count2-s3", reason="count2-s3: cannot execute /gone/audiocpp_server", log_tail="")
    ctx = ev.context(p)
    r = m2_starts(ctx, 2)
    assert r.status is Status.BLOCKED, r.reason
    assert "count2-s3 (before its server started): start_failed: count2-s3: cannot execute" in r.reason
    for other in judge_m2(ctx, 2):
        assert other.status is not Status.FAIL, (other.id, other.reason)


def test_the_campaign_judging_between_units_survives_a_wave_timeout(tmp_path: Path) -> None:
    """--fail-fast's count_failures and the recovery count's largest_validated judge the
    evidence so far while the campaign runs: a hung wave at count 2 is no FAIL there and
    stops the validated prefix at count 1, with no traceback."""
    import json
    from types import SimpleNamespace

    from parval.judge import MID_RUN
    from parval.runners.campaign import Campaign

    ev = Events(tmp_path)
    baseline_refs(ev)
    p = plan(counts=[1, 2])
    for run in ("count1-s1", "count1-s2", "count1-s3"):
        full_start(ev, run, 1, p)
    count2_with_a_hung_third_start(ev, p)
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in ev.events))

    c = object.__new__(Campaign)
    appended: list[dict[str, object]] = []
    c.log = SimpleNamespace(path=path, write=lambda event: appended.append(dict(event)))  # type: ignore[assignment]
    c.plan = SimpleNamespace(raw=p, path=Path("plan.yaml"), counts=[1, 2])  # type: ignore[assignment]
    c.run_dir = tmp_path
    c.judging = MID_RUN
    c.shard_counts = lambda: [1, 2]  # type: ignore[method-assign]
    assert c.count_failures(1) == [] and c.count_failures(2) == []
    assert c.largest_validated() == 1
    assert appended == [{"kind": "recovery_count", "count": 1, "reason": "largest consecutive count whose M2 passed"}]
