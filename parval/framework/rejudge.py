"""`parval report --rejudge FRAMEWORK_RUN`: the framework record again from its events alone.

The probes record what every forced situation showed (`observation` events: request
timelines, reply hashes with the raw bodies in artifacts/, status samples, trace lines,
bounded waits, timing and references), the CTest runs (`ctest_run`) and what judging reads
(`judge_inputs`, `record_inputs`). Here every sub-check is judged again from its
observation by the registered pure judge (the `check` events the run wrote are not read),
then combined into F assertions, groups, covered counts and the verdict, so a fix to a
judge or to those rules applies to an existing record without a server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

from parval.errors import RunDirError
from parval.framework.ctest import CTestRun
from parval.framework.judges import JUDGE_INPUT_FIELDS, Check, JudgeInputs, judge, run_judge
from parval.framework.observed import Facts
from parval.framework.record import RECORD, RECORD_INPUT_FIELDS, FrameworkRecord, RecordInputs, assemble
from parval.rundir.event_fields import check_read
from parval.rundir.event_types import ObservationEvent
from parval.rundir.events import read_events
from parval.rundir.layout import EVENTS


def is_framework_run(path: Path) -> bool:
    return path.is_dir() and (path / RECORD).is_file() and (path / EVENTS).is_file()


def rejudge_observation(event: ObservationEvent, seq: object = None) -> Check:
    """The sub-check the registered judge gives for one recorded observation (`seq`: its
    place in the log, named when its judge key is unknown)."""
    facts: Facts = dict(event["facts"])
    try:
        verdict = run_judge(str(event["judge"]), facts)
    except KeyError as exc:
        raise RunDirError(f"observation {seq}: {exc.args[0]}") from None
    evidence = {"judge": event["judge"], **(event.get("evidence") or {})}
    return Check(str(event["assertion"]), str(event["name"]), verdict.status, verdict.detail(), evidence)


def rejudge_framework(run_dir: Path) -> FrameworkRecord:
    """The record rebuilt from `run_dir/events.jsonl`; RunDirError when it lacks the events."""
    # every event with the fields its kind declares: a missing one is named, never a KeyError
    # (format-2 logs; a format-1 log predates the framework kinds' declarations)
    events = check_read(read_events(run_dir / EVENTS), str(run_dir / EVENTS))
    judge_event = record_event = None
    checks: list[Check] = []
    runs: list[CTestRun] = []
    for e in events:
        kind = e.get("kind")
        if kind == "observation":
            # its fields checked by check_read (format 2; a format-1 log predates the
            # declaration, and a field missing there is a KeyError as it always was)
            checks.append(rejudge_observation(cast(ObservationEvent, e), e.get("seq")))
        elif kind == "ctest_run":
            runs.append(CTestRun.from_json(e["run"]))
        elif kind == "judge_inputs":
            judge_event = e
        elif kind == "record_inputs":
            record_event = e
    if judge_event is None or record_event is None:
        missing = [k for k, e in (("judge_inputs", judge_event), ("record_inputs", record_event)) if e is None]
        raise RunDirError(
            f"{run_dir}: the framework events hold no {', '.join(missing)} "
            "(recorded by an older parval, or the run did not finish), so the record "
            "cannot be rebuilt from them"
        )
    # The fields each event holds (an older record may lack some; the reader names it).
    inputs: JudgeInputs = {}
    for key in JUDGE_INPUT_FIELDS:
        if key in judge_event:
            inputs[key] = judge_event[key]
    stated: RecordInputs = {}
    for field in RECORD_INPUT_FIELDS:
        if field in record_event:
            stated[field] = record_event[field]
    results = judge(checks, runs, inputs)
    return assemble(stated, results, runs, checks)


def load_framework_record(run_dir: Path, rejudge: bool) -> tuple[FrameworkRecord, list[str]]:
    """(record, notes): the directory verified first (a modified one is refused, exit 2),
    then the stored record, or with `rejudge` the one rebuilt from the events (a note names
    every top-level field that differs from the stored one)."""
    from parval.rundir.verified import verified

    check = verified(run_dir)
    stored: FrameworkRecord = json.loads((run_dir / RECORD).read_text("utf-8"))
    if not rejudge:
        return stored, [check.line()]
    record = rejudge_framework(run_dir)
    changed = sorted(k for k in set(record) | set(stored) if record.get(k) != stored.get(k))
    notes = [
        check.line(),
        f"re-judged from events.jsonl; differs from the stored {RECORD} in: {', '.join(changed)}"
        if changed
        else f"re-judged from events.jsonl: identical to the stored {RECORD}",
    ]
    return record, notes
