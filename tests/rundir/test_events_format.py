"""The events format of a log: the first event of a new log names it (`events_format`), a
log without the marker is format 1 (runs recorded before formats were marked) and is
upgraded on read, and a log of a newer format than this parval reads is refused with a
message naming the file and the format, by every reader (all go through iter_events)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from parval.errors import RunDirError
from parval.rundir.event_fields import FORMAT_FIELD, UPGRADES, EventFieldError, NewerEventsFormat, check_read
from parval.rundir.event_index import load_records
from parval.rundir.events import EVENTS_FORMAT, EventLog, iter_events, read_events

OLD_WAVE_TIMEOUT = {"kind": "wave_timeout", "run": "count2-s3", "attempt": 0, "phase": "warm_wave", "wave": 1}


def write_lines(path: Path, *events: dict[str, Any]) -> None:
    path.write_text("".join(json.dumps({"seq": i, "t": 1.0 + i, **e}) + "\n" for i, e in enumerate(events)))


def test_a_new_log_names_its_format_on_its_first_event_only(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    log.append("unit_begin", unit="u")
    log.append("unit_end", unit="u", ok=True)
    log.close()
    reopened = EventLog(path)  # a resume appends without a second marker
    reopened.append("unit_begin", unit="v")
    reopened.close()
    events = read_events(path)
    assert EVENTS_FORMAT == 2
    assert [e.get(FORMAT_FIELD) for e in events] == [EVENTS_FORMAT, None, None]


def test_a_format_1_log_reads_through_the_upgrade(tmp_path: Path) -> None:
    """An older run: no marker, and a `wave_timeout` recorded before it carried `reason`."""
    path = tmp_path / "events.jsonl"
    write_lines(path, {"kind": "campaign_start", "plan": "demo"}, OLD_WAVE_TIMEOUT)
    events = read_events(path)
    assert FORMAT_FIELD not in events[0]
    assert events[1]["reason"] == UPGRADES["wave_timeout"]["reason"]
    assert load_records(tmp_path).events[1]["reason"] == UPGRADES["wave_timeout"]["reason"]
    resumed = EventLog(path)  # an older run resumed stays format 1 (no marker is added)
    resumed.append("unit_begin", unit="u")
    resumed.close()
    assert all(FORMAT_FIELD not in e for e in read_events(path))


def test_a_format_2_log_is_not_upgraded_a_missing_field_is_refused(tmp_path: Path) -> None:
    """Format 2 events were checked when written: one lacking a field was edited."""
    path = tmp_path / "events.jsonl"
    write_lines(path, {"kind": "unit_begin", "unit": "u", FORMAT_FIELD: 2}, OLD_WAVE_TIMEOUT)
    assert "reason" not in read_events(path)[1]
    with pytest.raises(EventFieldError, match=r"event 1: a `wave_timeout` event lacks `reason`"):
        load_records(tmp_path)


@pytest.mark.parametrize("newer", [EVENTS_FORMAT + 1, 99])
def test_a_newer_format_is_refused_naming_file_and_format(tmp_path: Path, newer: int) -> None:
    path = tmp_path / "events.jsonl"
    write_lines(path, {"kind": "campaign_start", FORMAT_FIELD: newer}, {"kind": "unit_begin", "unit": "u"})
    expected = rf"{path}: written in events format {newer}, newer than this parval reads .*upgrade parval"
    with pytest.raises(NewerEventsFormat, match=expected) as info:
        read_events(path)
    assert isinstance(info.value, RunDirError)
    with pytest.raises(NewerEventsFormat, match=expected):
        next(iter_events(path))
    with pytest.raises(NewerEventsFormat):
        load_records(tmp_path)
    with pytest.raises(NewerEventsFormat):
        EventLog(path)  # nothing is appended to a log this parval cannot read
    with pytest.raises(NewerEventsFormat, match=rf"memory: written in events format {newer}"):
        check_read([{"seq": 0, "kind": "unit_begin", "unit": "u", FORMAT_FIELD: newer}], "memory")


@pytest.mark.parametrize("marker", ["2", 0, True, None, 1.5])
def test_a_marker_that_is_not_a_format_number_is_refused(tmp_path: Path, marker: Any) -> None:
    path = tmp_path / "events.jsonl"
    write_lines(path, {"kind": "unit_begin", "unit": "u", FORMAT_FIELD: marker})
    with pytest.raises(RunDirError, match=r"names events format .* which is not a format number"):
        read_events(path)


def test_the_report_and_rejudge_readers_refuse_a_newer_format(tmp_path: Path) -> None:
    """Readers outside parval/rundir call read_events/iter_events: the same refusal."""
    from parval.framework.rejudge import rejudge_framework
    from parval.report.render import report_context

    write_lines(tmp_path / "events.jsonl", {"kind": "framework_start", FORMAT_FIELD: EVENTS_FORMAT + 1})
    with pytest.raises(NewerEventsFormat, match="upgrade parval"):
        report_context([tmp_path])
    with pytest.raises(NewerEventsFormat, match="upgrade parval"):
        rejudge_framework(tmp_path)
