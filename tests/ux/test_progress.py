"""Progress output: live display on a terminal, plain lines otherwise, JSON events, quiet."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

from parval.ui.lines import json_line, plain_line
from parval.ui.listener import make_listener
from parval.ui.state import ProgressState, fmt_duration, planned_requests, unit_requests

from .kit import Outcome

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _request(ok: bool = True) -> dict[str, Any]:
    return {
        "kind": "request",
        "phase": "warm_wave",
        "wave": 1,
        "expect_error": False,
        "reply": {"outcome": "ok" if ok else "http_error"},
    }


# -- the state the displays show (pure) -------------------------------------------------------
def test_state_folds_events() -> None:
    s = ProgressState()
    s.update({"kind": "campaign_start", "counts": [1, 2], "shard": None})
    s.update({"kind": "unit_begin", "unit": "count2-s3"})
    assert (s.count, s.start) == (2, 3)
    s.update(_request())
    s.update(_request(ok=False))
    s.update(
        {"kind": "request", "phase": "recovery", "wave": 0, "expect_error": True, "reply": {"outcome": "http_error"}}
    )
    assert (s.done, s.failed) == (2, 1)
    s.update({"kind": "wave", "phase": "warm_wave", "wave": 1, "n": 2, "status": {"max_active": 2}})
    assert s.last_active == (2, 2)
    s.update({"kind": "unit_end", "unit": "count2-s3", "ok": True})
    assert s.units_done == 1
    assert s.eta() is None  # the schedule is not known yet


def test_repeated_waves_and_unload_tries_add_to_the_planned_requests() -> None:
    s = ProgressState(planned=10)
    s.update({"kind": "wave_repeat", "n": 3, "repeat": False})
    assert s.planned == 10  # a wave judged once adds nothing
    s.update({"kind": "wave_repeat", "n": 3, "repeat": True})
    assert s.planned == 13
    s.update({"kind": "m4_targeted_unload", "tries": 1, "busy": 2})
    assert s.planned == 13  # the first try is in the schedule
    s.update({"kind": "m4_all_unload", "tries": 2, "busy": 2})
    assert s.planned == 16  # a second try sends its two in-flight requests and the later one again


def test_state_finds_the_plan_and_estimates(admitted_run: Outcome) -> None:
    argv = json.loads(next((admitted_run.dir / "servers").glob("count1-s1-*/argv.json")).read_text())
    s = ProgressState()
    s.update({"kind": "campaign_start", "counts": [1], "shard": [1, 2]})
    s.update({"kind": "server_ready", "run": "count1-s1", "pid": 1, "argv": argv, "ready_s": 0.1})
    assert s.run_dir == admitted_run.dir
    assert s.planned and s.planned > 0
    s.done = s.planned // 2
    assert s.eta() is not None and "left" in s.ratio()


def test_planned_requests_follow_the_schedule(admitted_run: Outcome) -> None:
    plan = json.loads((admitted_run.dir / "plan.json").read_text())
    everything = planned_requests(plan, None)
    first = planned_requests(plan, [1])
    second = planned_requests(plan, [2])
    assert everything and first and second
    assert first < everything and second < everything
    # the whole run asked for roughly what the schedule planned
    done = sum(1 for line in (admitted_run.dir / "events.jsonl").read_text().splitlines() if '"kind":"request"' in line)
    assert 0.5 * everything <= done <= 1.5 * everything


def test_fmt_duration() -> None:
    assert fmt_duration(5) == "5s"
    assert fmt_duration(125) == "2m05s"
    assert fmt_duration(3725) == "1h02m"


def test_plain_lines_and_json_lines() -> None:
    wave = {
        "kind": "wave",
        "run": "count2-s1",
        "phase": "warm_wave",
        "wave": 1,
        "n": 2,
        "batch_s": 0.1,
        "status": {"max_active": 2},
        "drained": {"ok": True},
    }
    assert plain_line(wave) == "[parval] count2-s1: warm wave 1, 2 requests in 0.100s, active slots 2 of 2, drained"
    assert plain_line({"kind": "request"}) is None
    obj = json.loads(json_line(wave, ProgressState()) or "")
    assert obj["event"] == "wave" and obj["v"] == 1 and obj["max_active"] == 2 and obj["drained"] is True
    assert set(obj["progress"]) == {"requests_done", "requests_failed", "requests_planned", "elapsed_s", "eta_s"}
    assert json_line({"kind": "request"}, ProgressState()) is None


def test_a_server_without_counters_shows_unknown_slots_and_drain_not_a_failure() -> None:
    """A server that publishes no slot counters (the legacy build) leaves `max_active` null and
    the drain check `ok: false` with no fields: that is unknown, shown as '?', never as a
    failed drain; a drain the counters showed not happening is said in words."""
    wave = {
        "kind": "wave",
        "run": "count2-s3",
        "phase": "mixed_wave",
        "wave": 9,
        "n": 2,
        "batch_s": 0.098,
        "status": {"max_active": None, "fields_present": False},
        "drained": {"ok": False, "active": None, "queued": None, "fields_present": False, "waited": False},
    }
    line = plain_line(wave) or ""
    assert line == "[parval] count2-s3: mixed wave 9, 2 requests in 0.098s, active slots ?, drained ?"
    assert "False" not in line and "None" not in line and "=" not in line
    obj = json.loads(json_line(wave, ProgressState()) or "")
    assert obj["max_active"] is None and obj["drained"] is None
    tty = Tty()
    listen, finish = make_listener(quiet=False, events_json=False, stderr=tty)
    listen({"kind": "unit_begin", "unit": "count2-s3"})
    listen(wave)
    listen({"kind": "unit_end", "unit": "count2-s3", "ok": True})
    finish({"verdict": {}})
    assert re.search(r"active slots\s+\?", ANSI.sub("", tty.getvalue()))
    busy = dict(wave, drained={"ok": False, "active": 1, "queued": 0, "fields_present": True}, status={"max_active": 2})
    assert plain_line(busy) == (
        "[parval] count2-s3: mixed wave 9, 2 requests in 0.098s, active slots 2 of 2, not drained (active 1, queued 0)"
    )
    assert json.loads(json_line(busy, ProgressState()) or "")["drained"] is False


def test_a_resumed_run_counts_the_requests_it_still_sends(admitted_run: Outcome) -> None:
    """After `--resume`, the units finished before are skipped: the planned requests, and so
    the time left, are those still to send, not the whole campaign's."""
    plan = json.loads((admitted_run.dir / "plan.json").read_text())
    whole = ProgressState(plan_raw=plan)
    whole.update({"kind": "campaign_start", "counts": [1, 2], "shard": None})
    resumed = ProgressState(plan_raw=plan)
    resumed.update({"kind": "campaign_start", "counts": [1, 2], "shard": None, "resumed": True})
    kept = ["ref-baseline-a", "ref-baseline-b", "ref-candidate-legacy", "x1-config-slots", "count1-s1", "count1-s2"]
    for unit in kept:
        resumed.update({"kind": "unit_skipped", "unit": unit, "reason": "completed before resume"})
    assert whole.planned and resumed.planned
    assert resumed.planned < whole.planned
    assert resumed.planned == whole.planned - sum(unit_requests(plan, u) for u in kept)
    assert unit_requests(plan, "count1-s1") > 0 and unit_requests(plan, "ref-baseline-a") > 0
    resumed.update(_request())
    assert resumed.ratio().startswith(f"requests 1 of {resumed.planned} done, 0 failed")
    assert "(6 units kept from before the resume)" in resumed.ratio()
    start = {"kind": "campaign_start", "plan": "ux", "counts": [1, 2], "shard": None, "resumed": True}
    assert plain_line(start) == "[parval] campaign ux: counts 1, 2 (resumed: units finished before are kept)"


def test_listener_modes_in_process() -> None:
    err, out = io.StringIO(), io.StringIO()
    listen, finish = make_listener(quiet=True, events_json=False, stderr=err, stdout=out)
    listen({"kind": "unit_begin", "unit": "x"})
    assert err.getvalue() == out.getvalue() == ""
    listen, finish = make_listener(quiet=False, events_json=False, stderr=err, stdout=out)
    listen({"kind": "unit_begin", "unit": "x"})
    listen({"kind": "unit_end", "unit": "x", "ok": True})
    assert "[parval] x: starting" in err.getvalue() and "requests 0" in err.getvalue()
    assert out.getvalue() == ""


def test_a_broken_display_never_breaks_the_run() -> None:
    err = io.StringIO()
    listen, _ = make_listener(quiet=False, events_json=False, stderr=err)
    listen({"kind": "unit_begin"})  # no 'unit': the display fails ...
    listen({"kind": "unit_begin", "unit": "x"})  # ... and stays off, without raising
    assert err.getvalue().count("progress display disabled") == 1


def test_live_display_renders_to_a_terminal() -> None:
    tty = Tty()
    listen, finish = make_listener(quiet=False, events_json=False, stderr=tty)
    listen({"kind": "unit_begin", "unit": "count1-s1"})
    listen(_request())
    listen({"kind": "unit_end", "unit": "count1-s1", "ok": True})
    finish({"verdict": {}})
    text = ANSI.sub("", tty.getvalue())
    assert "requests" in text and "count1-s1" in text and "remaining" in text


# -- the real command -----------------------------------------------------------------------
def test_terminal_gets_the_live_display(admitted_run: Outcome) -> None:
    assert admitted_run.rc == 0, admitted_run.stderr[-3000:]
    term = admitted_run.stderr
    assert ANSI.search(term), "no terminal control codes: the rich display did not run"
    plain = ANSI.sub("", term)
    for label in (
        "parval run",
        "count / start",
        "active slots",
        "requests",
        "host memory",
        "GPU memory",
        "elapsed",
        "remaining",
    ):
        assert label in plain, label
    assert "[parval]" not in plain  # no plain step lines on a terminal
    assert re.search(r"\d+ done of \d+", plain)
    assert admitted_run.stdout.splitlines()[0].startswith("ADMITTED at counts 1, 2")


def test_pipe_gets_one_plain_line_per_step(shard_runs: tuple[Outcome, Outcome]) -> None:
    _, two = shard_runs
    assert not ANSI.search(two.stderr)
    lines = two.stderr.splitlines()
    assert any(re.fullmatch(r"\s*[\d.]+s \[parval\] count2-s1: starting", x) for x in lines)
    assert any("campaign ux shard 2/2: counts 2" in x for x in lines)
    assert any("count2-s3: mixed wave 9, 2 requests in " in x for x in lines)
    waves = [x for x in lines if "requests in " in x]
    assert waves and all(re.search(r"active slots (\d+ of \d+|\?), (drained|drained \?|not drained)", x) for x in waves)
    ends = [x for x in lines if ": done · requests" in x]
    assert ends and re.search(r"requests \d+ of \d+ done, 0 failed", ends[-1])
    assert any("campaign finished" in x for x in lines)
    assert two.stdout.splitlines()[0].startswith("evidence collected; validation pending")
    assert any(x.startswith("report:") for x in two.stdout.splitlines())


def test_events_json_streams_machine_readable_progress(shard_runs: tuple[Outcome, Outcome]) -> None:
    one, _ = shard_runs
    events = [json.loads(x) for x in one.stdout.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "campaign_start" and kinds[-1] == "verdict"
    assert {"unit_begin", "server_ready", "wave", "unit_end", "campaign_end"} <= set(kinds)
    assert events[0]["shard"] == [1, 2] and events[0]["counts"] == [1]
    last_step = events[-2]["progress"]
    assert last_step["requests_planned"] and last_step["requests_done"] > 0
    assert events[-1]["exit_code"] == one.rc == 3
    assert one.stderr == ""


def test_quiet_prints_only_the_verdict(failed_run: Outcome) -> None:
    assert failed_run.stderr == ""
    assert failed_run.stdout.splitlines() == [failed_run.evidence["verdict"]["line"]]


def test_runs_write_their_report(shard_runs: tuple[Outcome, Outcome]) -> None:
    for run in shard_runs:
        assert Path(run.dir / "report.md").read_text().startswith("**parval: evidence collected")
