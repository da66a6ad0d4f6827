"""Q1-Q5 verdicts pinned exactly: each branch's status, reason text and evidence (settings
compared, volatile exclusions measured, the tolerance and plan hash, M3.history, and every
mismatch or set-aside failure that keeps Q5 failed, with one count's mismatch bound)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from parval.gates.judge_context import JudgeContext
from parval.gates.quality import (
    judge_quality,
    q1_settings,
    q2_volatile_fields,
    q3_tolerance,
    q4_history_refs,
    q5_intermittent,
    scope_bound,
)
from parval.gates.serial import SerialVerdict
from parval.rundir.event_index import build_records
from parval.rundir.mismatch_bound import bound
from parval.status import Result, Status
from tests.gates import m_events as m
from tests.gates.cmp_events import SAMPLES, Events, plan, tts_reply

REFERENCE_STARTS = ("ref-baseline-a", "ref-baseline-b", "ref-candidate-legacy", "ref-candidate-cap1")
COUNT_STARTS = tuple(f"count{n}-s{i}" for n in (1, 2) for i in (1, 2, 3))
SETTINGS = {"id": "m", "path": "model.bin", "dtype": "f16", "slots": 2}


def started(run: str, count: int | None, config: Any, attempt: int = 1) -> list[dict[str, Any]]:
    role = "reference" if run.startswith("ref-") else "count"
    start = {"kind": "run_start", "run": run, "attempt": attempt, "role": role, "count": count, "config": config}
    return [start, {"kind": "run_end", "run": run, "attempt": attempt}]


def settings_ctx(
    configs: dict[str, Any] | None = None, *, leave_out: tuple[str, ...] = (), extra: list[dict[str, Any]] = ()
) -> JudgeContext:
    """Every planned start (reference starts, three per count) loading SETTINGS, unless
    `configs` gives a start its own config; `leave_out` starts are not recorded."""
    events: list[dict[str, Any]] = []
    for run in (*REFERENCE_STARTS, *COUNT_STARTS):
        if run in leave_out:
            continue
        count = int(run[5]) if run.startswith("count") else 1
        default = {"models": [{"id": "other", "path": "x"}, {**SETTINGS, "slots": count}]}
        events += started(run, count, (configs or {}).get(run, default))
    events += extra
    declared = plan(quality_settings={"dtype": "f16"})
    return JudgeContext(build_records(events), declared, {}, None, "plan.yaml")


# -- Q1 ----------------------------------------------------------------------------------------


def test_identical_settings_in_every_planned_start_pass_q1() -> None:
    r = q1_settings(settings_ctx(), [])
    assert r.status is Status.PASS
    assert r.reason == "identical model settings in all 10 compared runs"
    assert r.evidence["rests_on"] == {"runs with the model's settings": 10}
    assert r.evidence["quality_settings"] == {"dtype": "f16"}


@pytest.mark.parametrize(
    ("entry", "differing"),
    [
        ({"id": "m", "path": "other.bin", "dtype": "f16"}, ["path"]),
        ({"id": "m", "path": "model.bin"}, ["dtype"]),
        ({"id": "m", "path": "model.bin", "dtype": "f16", "rope": 2}, ["rope"]),
        ({"id": "m", "path": "b.bin", "dtype": "f32", "slots": 1}, ["dtype", "path"]),
    ],
)
def test_settings_differing_in_one_start_fail_q1_naming_the_keys(entry: dict[str, Any], differing: list[str]) -> None:
    r = q1_settings(settings_ctx({"count2-s3": {"models": [entry]}}), [])
    assert r.status is Status.FAIL
    assert r.reason == f"quality settings differ between compared runs: {differing}"
    assert r.evidence["violation"] == differing
    settings: Any = r.evidence["settings"]
    assert settings["ref-baseline-a"] == {"path": "model.bin", "dtype": "f16"}
    assert settings["count2-s3"] == {k: v for k, v in entry.items() if k not in ("id", "slots")}


def test_q1_without_any_recorded_settings_is_pending() -> None:
    r = q1_settings(settings_ctx(dict.fromkeys((*REFERENCE_STARTS, *COUNT_STARTS))), [])
    assert r.status is Status.PENDING
    assert r.reason == "no compared run recorded the model's settings: nothing to compare"


def test_q1_with_one_start_recording_settings_is_pending() -> None:
    configs: dict[str, Any] = {run: {"models": [{"id": "x"}]} for run in (*REFERENCE_STARTS, *COUNT_STARTS)}
    configs["count1-s2"] = {"models": [SETTINGS]}
    r = q1_settings(settings_ctx(configs), [])
    assert r.status is Status.PENDING
    assert r.reason == "only count1-s2 recorded the model's settings: nothing to compare"


@pytest.mark.parametrize(
    ("silent", "named"),
    [
        (("count1-s1",), "['count1-s1']"),
        (
            ("ref-baseline-b", "ref-candidate-legacy", "ref-candidate-cap1", *COUNT_STARTS[:4]),
            "['ref-baseline-b', 'ref-candidate-legacy', 'ref-candidate-cap1', 'count1-s1', 'count1-s2', 'count1-s3']",
        ),
    ],
)
def test_starts_without_the_models_settings_keep_q1_pending(silent: tuple[str, ...], named: str) -> None:
    r = q1_settings(settings_ctx(dict.fromkeys(silent, {"models": []})), [])
    assert r.status is Status.PENDING
    assert r.reason == f"start(s) {named} recorded no settings of the model: not compared"


def test_planned_starts_not_recorded_keep_q1_pending() -> None:
    r = q1_settings(settings_ctx(leave_out=("ref-candidate-legacy", "ref-candidate-cap1", "count2-s2")), [])
    assert r.status is Status.PENDING
    assert r.reason == (
        "the settings of planned starts are not all recorded: ref-candidate-cap1, ref-candidate-legacy not recorded; "
        "recorded starts per count {2: 2}, 3 needed"
    )


def test_a_start_named_by_its_events_but_never_recorded_keeps_q1_pending() -> None:
    ghost = [
        {"kind": "run_start", "run": "count1-s4", "attempt": 7, "role": "count", "count": 1},
        {"kind": "run_abandoned", "run": "count1-s4", "attempt": 7, "reason": "interrupted"},
    ]
    r = q1_settings(settings_ctx(extra=ghost), [])
    assert r.status is Status.PENDING
    assert r.reason == "the settings of planned starts are not all recorded: count1-s4 not recorded"


GHOST_REQUEST = {"phase": "cold_wave", "wave": 0, "req": "base", "ref": None, "slot": 0, "history": []}
GHOST_REQUEST |= {"artifact": None, "expect_error": False, "reply": {"outcome": "ok", "status": 200}, "output": None}
GHOST_REQUEST |= {"t_send": 0.0, "t_done": 0.1}
GHOST_WAVE = {"count": 2, "phase": "cold_wave", "wave": 0, "n": 2, "mode": "together", "batch_s": 0.1}
GHOST_WAVE |= {"status": {}, "drained": {}}


@pytest.mark.parametrize(
    ("kind", "fields", "named"),
    [
        ("run_end", {}, True),
        ("server_ready", {"argv": [], "warning_marker": False}, True),
        ("request", GHOST_REQUEST, True),
        ("wave", GHOST_WAVE, True),
        ("server_crash", {"where": "load", "exit_code": 1, "signal": None, "log_tail": ""}, False),
    ],
)
def test_a_start_named_only_by_its_other_events_is_unrecorded(kind: str, fields: dict[str, Any], named: bool) -> None:
    r = q1_settings(settings_ctx(extra=[{"kind": kind, "run": "ghost", "attempt": 5, **fields}]), [])
    if named:
        assert r.status is Status.PENDING
        assert r.reason == "the settings of planned starts are not all recorded: ghost not recorded"
    else:
        assert r.status is Status.PASS, r.reason


def test_only_the_counts_the_campaign_covered_need_their_starts() -> None:
    campaign = {"kind": "campaign_start", "plan": "p", "plan_sha256": "0" * 64, "shard": None, "counts": [1]}
    campaign |= {"resumed": False, "fail_fast": False}
    r = q1_settings(settings_ctx(leave_out=COUNT_STARTS[3:], extra=[campaign]), [])
    assert r.status is Status.PASS, r.reason
    r = q1_settings(settings_ctx(leave_out=COUNT_STARTS[3:]), [])
    assert r.status is Status.PENDING
    assert r.reason == "the settings of planned starts are not all recorded: recorded starts per count {2: 0}, 3 needed"


# -- Q2 ----------------------------------------------------------------------------------------

WALLS = [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]


def baseline(tmp_path: Path, walls: list[float] = WALLS, **extra: Any) -> Events:
    ev = Events(tmp_path)
    it = iter(walls)
    ev.baseline(
        {
            phase: [tts_reply(wall_ms=next(it), **extra), tts_reply(wall_ms=next(it), **extra)]
            for phase in ("ref_cold", "ref_warm", "ref_warm2")
        }
    )
    return ev


def q2(ev: Events, *paths: str) -> Result:
    fields = [{"path": p, "justification": "wall time"} for p in paths]
    return q2_volatile_fields(ev.context(volatile_fields=fields), [])


def test_an_exclusion_measured_to_vary_passes_q2_with_its_measure(tmp_path: Path) -> None:
    r = q2(baseline(tmp_path), "timing.wall_ms")
    assert r.status is Status.PASS
    assert r.reason == (
        "only fields measured to vary across identical serial requests are excluded: "
        "timing.wall_ms (wall time; 1 leaf/leaves vary)"
    )
    assert r.evidence["identical_request_groups"] == 2  # base|cold and base|warm
    assert r.evidence["raw_responses"] == "artifacts/" and r.evidence["problems"] == []
    (m,) = r.evidence["volatile_fields"]  # type: ignore[misc]
    assert m["path"] == "timing.wall_ms" and m["justification"] == "wall time" and m["status"] == "varies"
    assert r.evidence["rests_on"] == {"excluded fields measured to vary": 1}


def across_starts(tmp_path: Path, warm_a: dict[str, Any] | None) -> Events:
    """Walls that vary only across the two baseline starts (start b repeats its warm wall):
    both starts' replies are needed to show the variation. Replies are recorded warm,
    warm2, cold: `warm_a` is the first reply of start a."""
    ev = Events(tmp_path)
    ev.baseline(
        {
            "ref_cold": [tts_reply(wall_ms=10.0), tts_reply(wall_ms=11.0)],
            "ref_warm": [warm_a, tts_reply(wall_ms=13.0)],
            "ref_warm2": [tts_reply(wall_ms=12.0), tts_reply(wall_ms=13.0)],
        }
    )
    return ev


def test_q2_measures_the_repeats_of_both_baseline_starts_by_reference(tmp_path: Path) -> None:
    ev = across_starts(tmp_path, tts_reply(wall_ms=12.0))
    # a performance reply of the baseline is no serial repeat: never read (its raw reply is gone here)
    ev.request("ref-baseline-b", 2, "perf_serial", tts_reply(wall_ms=99.0), ref="base|warm")
    (tmp_path / "artifacts" / f"{ev.events[-1]['artifact']}.json").unlink()
    r = q2(ev, "timing.wall_ms")
    assert r.status is Status.PASS, r.reason
    (m,) = r.evidence["volatile_fields"]  # type: ignore[misc]
    assert m["groups"] == 2 and m["repeated_groups"] == 2


@pytest.mark.parametrize(
    ("broken", "problem"),
    [
        ("error", "ref-baseline-a is not recorded whole (every request cold, warm and repeated warm, raw replies)"),
        ("unreadable", "ref-baseline-a base/ref_warm: raw reply unreadable (JSONDecodeError)"),
    ],
)
def test_a_broken_reply_leaves_the_other_repeats_measured(tmp_path: Path, broken: str, problem: str) -> None:
    ev = across_starts(tmp_path, None if broken == "error" else tts_reply(wall_ms=12.5))
    if broken == "unreadable":
        first = next(e for e in ev.events if e["kind"] == "request")
        (tmp_path / "artifacts" / f"{first['artifact']}.json").write_bytes(b"{")
    r = q2(ev, "timing.wall_ms")
    assert r.status is Status.PENDING
    assert r.reason == f"volatility not measured on the whole baseline: {problem}"


def test_an_error_reply_is_no_repeat_that_could_show_variation(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    same = tts_reply(wall_ms=5.0)
    ev.baseline({"ref_cold": [same, same], "ref_warm": [same, same], "ref_warm2": [same, None]})
    r = q2(ev, "timing.wall_ms")
    assert r.status is Status.FAIL
    assert r.reason == (
        "excluded as volatile but identical across identical serial baseline requests: "
        "timing.wall_ms (stable: timing.wall_ms)"
    )


def test_no_exclusion_passes_q2() -> None:
    ctx = JudgeContext(build_records([]), {**plan(), "compare": {"volatile_fields": []}}, {}, None, "plan.yaml")
    r = q2_volatile_fields(ctx, [])
    assert r.status is Status.PASS and r.reason == "no field excluded: every output field is compared"
    assert r.evidence["rests_on"] == {"compared fields": "every field"}
    assert r.evidence["raw_responses"] == "artifacts/"


def test_an_exclusion_naming_content_fails_q2_before_anything_is_measured() -> None:
    fields = [{"path": p, "justification": "x"} for p in ("timing.wall_ms", "text", "words")]
    ctx = JudgeContext(build_records([]), plan(volatile_fields=fields), {}, None, "plan.yaml")
    r = q2_volatile_fields(ctx, [])
    assert r.status is Status.FAIL
    assert r.reason == (
        "volatile exclusions remove meaningful output: ['text', 'words'] name output content, not volatile scalars "
        "of the `timing` report: content is compared (parity unverified where it varies), never excluded"
    )
    assert r.evidence["violation"] == ["text", "words"]


def test_a_timing_leaf_holding_text_is_content_and_fails_q2(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    notes = iter(f"note {i}" for i in range(6))

    def reply() -> dict[str, Any]:
        body = tts_reply()
        body["timing"]["note"] = next(notes)
        return body

    ev.baseline({phase: [reply(), reply()] for phase in ("ref_cold", "ref_warm", "ref_warm2")})
    r = q2(ev, "timing.note")
    assert r.status is Status.FAIL
    assert r.reason == (
        "volatile exclusions remove meaningful output: timing.note names output content (timing.note (str)); only "
        "volatile scalars (numbers or null) of the `timing` report may be excluded: content is compared (parity "
        "unverified where it varies), never excluded"
    )
    assert [m["path"] for m in r.evidence["violation"]] == ["timing.note"]  # type: ignore[attr-defined]


def test_a_stable_excluded_leaf_fails_q2_naming_it(tmp_path: Path) -> None:
    r = q2(baseline(tmp_path), "timing.wall_ms", "timing.audio_duration_ms")
    assert r.status is Status.FAIL
    assert r.reason == (
        "excluded as volatile but identical across identical serial baseline requests: "
        "timing.audio_duration_ms (stable: timing.audio_duration_ms)"
    )
    assert [m["path"] for m in r.evidence["violation"]] == ["timing.audio_duration_ms"]  # type: ignore[attr-defined]


def test_q2_with_too_few_repeats_is_not_measurable(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    a = ev.start("ref-baseline-a", role="reference", count=1, exe_role="baseline")
    ev.request("ref-baseline-a", a, "ref_cold", tts_reply(wall_ms=3.0))
    ev.end("ref-baseline-a", a)
    r = q2(ev, "timing.wall_ms")
    assert r.status is Status.PENDING
    assert r.reason == (
        "volatility not measurable: fewer than two identical serial baseline requests with raw replies recorded"
    )
    assert r.evidence["problems"] == [
        "ref-baseline-a is not recorded whole (every request cold, warm and repeated warm, raw replies)",
        "ref-baseline-b is not recorded whole (every request cold, warm and repeated warm, raw replies)",
    ]


def test_a_baseline_not_recorded_whole_keeps_q2_pending(tmp_path: Path) -> None:
    ev = baseline(tmp_path)
    ev.events = [e for e in ev.events if not (e.get("run") == "ref-baseline-b" and e.get("phase") == "ref_warm2")]
    r = q2(ev, "timing.wall_ms")
    assert r.status is Status.PENDING
    assert r.reason == (
        "volatility not measured on the whole baseline: ref-baseline-b is not recorded whole (every request cold, "
        "warm and repeated warm, raw replies)"
    )


def test_a_baseline_start_that_did_not_end_keeps_q2_pending(tmp_path: Path) -> None:
    ev = baseline(tmp_path)
    ev.events = [e for e in ev.events if not (e.get("run") == "ref-baseline-a" and e["kind"] == "run_end")]
    ev.crash("ref-baseline-a", 1)
    r = q2(ev, "timing.wall_ms")
    assert r.status is Status.PENDING
    assert r.reason.startswith("volatility not measured on the whole baseline: ref-baseline-a is not recorded whole")


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"artifact": None}, "ref-baseline-b is not recorded whole"),
        ({"ref": None}, "ref-baseline-b is not recorded whole"),
        ({"reply": {"outcome": "http_error", "status": 500}}, "ref-baseline-b is not recorded whole"),
    ],
)
def test_a_repeat_without_its_raw_reply_keeps_q2_pending(tmp_path: Path, change: dict[str, Any], problem: str) -> None:
    ev = baseline(tmp_path)
    last = next(e for e in reversed(ev.events) if e.get("phase") == "ref_warm2")
    last.update(change)
    r = q2(ev, "timing.wall_ms")
    assert r.status is Status.PENDING
    assert r.reason.startswith(f"volatility not measured on the whole baseline: {problem}")


def test_an_unreadable_raw_reply_is_named_and_keeps_q2_pending(tmp_path: Path) -> None:
    ev = baseline(tmp_path)
    last = next(e for e in reversed(ev.events) if e.get("phase") == "ref_warm2")
    (tmp_path / "artifacts" / f"{last['artifact']}.json").write_bytes(b"{not json")
    r = q2(ev, "timing.wall_ms")
    assert r.status is Status.PENDING
    assert r.reason == (
        "volatility not measured on the whole baseline: ref-baseline-b base/ref_warm2: raw reply unreadable "
        "(JSONDecodeError)"
    )
    (tmp_path / "artifacts" / f"{last['artifact']}.json").unlink()
    r = q2(ev, "timing.wall_ms")
    assert r.reason == (
        "volatility not measured on the whole baseline: ref-baseline-b base/ref_warm2: raw reply unreadable "
        "(FileNotFoundError)"
    )


def test_without_a_run_directory_q2_cannot_measure(tmp_path: Path) -> None:
    ctx = baseline(tmp_path).context(volatile_fields=[{"path": "timing.wall_ms", "justification": "j"}])
    ctx.run_dir = None
    r = q2_volatile_fields(ctx, [])
    assert r.status is Status.PENDING
    assert r.evidence["problems"] == ["no run directory: raw replies unavailable"]
    assert r.evidence["identical_request_groups"] == 0


def test_a_path_seen_once_or_never_is_unmeasured(tmp_path: Path) -> None:
    ev = baseline(tmp_path)
    lone = next(e for e in reversed(ev.events) if e.get("phase") == "ref_warm2")
    lone["ref"] = "base|warm-again"  # a reply with no identical request beside it
    raw = tmp_path / "artifacts" / f"{lone['artifact']}.json"
    raw.write_text(raw.read_text().replace('"timing": {', '"timing": {"rtf": 0.5, '))
    r = q2(ev, "timing.wall_ms", "timing.rtf", "timing.tokens")
    assert r.status is Status.PENDING
    assert r.reason == (
        "volatility not shown for timing.rtf (seen once only: timing.rtf); timing.tokens (never present in a "
        "baseline reply: its volatility is unmeasured, and it would hide that field should only the candidate "
        "send it; drop the exclusion)"
    )


# -- Q3 ----------------------------------------------------------------------------------------


def q3_ctx(manifest: dict[str, Any], tolerance: dict[str, Any] | None = None) -> JudgeContext:
    declared = plan(tolerance=tolerance) if tolerance else plan()
    return JudgeContext(build_records([]), declared, manifest, None, "plan.yaml")


SHA = {"plan": {"sha256": "0123456789abcdef" * 4}}
TOL = {"max_abs_sample_diff": 2, "justification": "dither in the vocoder"}


@pytest.mark.parametrize("manifest", [{}, {"plan": None}, {"plan": {}}, {"plan": {"sha256": ""}}])
def test_q3_without_the_plan_hash_is_pending(manifest: dict[str, Any]) -> None:
    r = q3_tolerance(q3_ctx(manifest, TOL), [])
    assert r.status is Status.PENDING
    assert r.reason == "the manifest records no plan hash: the comparison rules are not shown fixed"


def test_byte_exact_comparison_passes_q3_with_the_plan_hash() -> None:
    r = q3_tolerance(q3_ctx(SHA), [])
    assert r.status is Status.PASS and r.reason == "byte-exact comparison; no tolerance declared"
    assert r.evidence["rests_on"] == {"plan hash": "0123456789ab"}


@pytest.mark.parametrize(
    ("serial", "applies", "how"),
    [
        ((False, False, False), False, "not applied: serial variation not measured"),
        (
            (True, False, False),
            False,
            "not applied: serial repeats of the baseline were byte-identical, so outputs must be byte-identical",
        ),
        ((True, True, True), True, "applied: serial repeats of the baseline varied within it"),
    ],
)
def test_a_declared_tolerance_says_whether_it_applied(serial: tuple[bool, bool, bool], applies: bool, how: str) -> None:
    ctx = q3_ctx(SHA, TOL)
    measured, varies, within = serial
    ctx.serial = SerialVerdict(Status.PASS, "", measured=measured, varies=varies, tolerance_applies=within)  # type: ignore[misc]
    r = q3_tolerance(ctx, [])
    assert r.status is Status.PASS
    assert r.reason == (
        "tolerance 2 (16-bit LSB, at each file's own sample format) declared in the plan before the run (plan "
        f"sha256 0123456789ab in the manifest): dither in the vocoder; {how}"
    )
    assert r.evidence["tolerance_applies"] is applies
    assert r.evidence["rests_on"] == {"plan hash": "0123456789ab", "declared tolerance": 2}


# -- Q4 ----------------------------------------------------------------------------------------


def q4_ctx(cache_sensitive: bool = True) -> JudgeContext:
    declared = plan()
    declared["model"]["cache_sensitive"] = cache_sensitive
    return JudgeContext(build_records([]), declared, {}, None, "plan.yaml")


def history(status: Status, count: int, **evidence: Any) -> Result:
    return Result("M3.history", status, f"history at {count}", evidence, count=count)


def test_q4_is_not_applicable_to_a_stateless_model() -> None:
    r = q4_history_refs(q4_ctx(False), [history(Status.FAIL, 1)])
    assert r.status is Status.NOT_APPLICABLE
    assert r.reason == "stateless model: one reference per request (cold and warm kept apart)"


def test_q4_passes_when_m3_history_passes_at_every_count() -> None:
    results = [history(Status.PASS, 1), history(Status.PASS, 2), Result("M2.exact", Status.FAIL, "x", count=2)]
    r = q4_history_refs(q4_ctx(), results)
    assert r.status is Status.PASS
    assert r.reason == "same-history single-slot references only; never the closest reference"
    assert r.evidence["rests_on"] == {"M3.history at each count": 2}


@pytest.mark.parametrize(
    ("kinds", "kind"),
    [
        (["output"], "output"),
        (["output", "output"], "output"),
        (["output", "lifecycle"], "lifecycle"),
        ([None], "lifecycle"),
    ],
)
def test_q4_fails_with_m3_history_naming_each_failed_count(kinds: list[str | None], kind: str) -> None:
    results = [history(Status.PASS, 1)]
    results += [history(Status.FAIL, i + 2, **({"failure_kind": k} if k else {})) for i, k in enumerate(kinds)]
    r = q4_history_refs(q4_ctx(), results)
    assert r.status is Status.FAIL and r.reason == "see M3.history"
    assert r.evidence["violation"] == [{"count": i + 2, "reason": f"history at {i + 2}"} for i in range(len(kinds))]
    assert r.evidence["failure_kind"] == kind


@pytest.mark.parametrize("results", [[], [history(Status.NOT_APPLICABLE, 1)]])
def test_q4_without_m3_history_judged_is_pending(results: list[Result]) -> None:
    r = q4_history_refs(q4_ctx(), results)
    assert r.status is Status.PENDING and r.reason == "M3.history was not judged"


@pytest.mark.parametrize("status", [Status.PENDING, Status.BLOCKED])
def test_q4_takes_m3_historys_open_status(status: Status) -> None:
    r = q4_history_refs(q4_ctx(), [history(Status.PASS, 1), history(status, 2)])
    assert r.status is status and r.reason == "see M3.history"


# -- Q5 ----------------------------------------------------------------------------------------


def empty_ctx() -> JudgeContext:
    return JudgeContext(build_records([]), plan(), {}, None, "plan.yaml")


def mismatch(run: str, wave: int, **extra: Any) -> dict[str, Any]:
    return {"run": run, "attempt": 1, "phase": "cold_wave", "wave": wave, "req": "base", "slot": 0, **extra}


def verdict(id_: str, status: Status, count: int | None = None, **evidence: Any) -> Result:
    return Result(id_, status, f"{id_} said so", evidence, count=count)


def test_q5_passes_on_completed_comparisons_with_no_mismatch() -> None:
    results = [
        verdict("M2.exact", Status.PASS, compared=7),
        verdict("M1.legacy_parity", Status.PASS, compared=3),
        verdict("M3.reversed", Status.NOT_APPLICABLE),
        verdict("M2.starts", Status.FAIL),  # not an output comparison
        verdict("M2.exact", Status.FAIL, count=2, mismatches=[mismatch("count2-s1", 0)]),  # another scope
    ]
    r = q5_intermittent(empty_ctx(), results)
    assert r.status is Status.PASS and r.reason == "no intermittent mismatch in any repeat"
    assert r.evidence["rests_on"] == {"comparison verdicts": 2, "compared outputs": 10}
    assert r.count is None and "bound" not in r.evidence


def test_q5_counts_the_verdicts_when_no_output_count_was_recorded() -> None:
    r = q5_intermittent(empty_ctx(), [verdict("M2.exact", Status.PASS), verdict("M3.variation", Status.PASS)])
    assert r.status is Status.PASS
    assert r.evidence["rests_on"] == {"comparison verdicts": 2, "compared outputs": 2}


def test_q5_with_comparisons_not_completed_is_pending() -> None:
    results = [
        verdict("M2.exact", Status.PASS, compared=2),
        verdict("M3.variation", Status.PENDING),
        verdict("M1.cap1_parity", Status.BLOCKED),
    ]
    r = q5_intermittent(empty_ctx(), results)
    assert r.status is Status.PENDING
    assert r.reason == (
        "no mismatch recorded, but not every comparison of the scope was completed: M3.variation PENDING, "
        "M1.cap1_parity BLOCKED"
    )


def test_q5_with_no_comparison_is_not_passed() -> None:
    r = q5_intermittent(empty_ctx(), [])
    assert r.status is Status.PENDING


def test_every_recorded_mismatch_fails_q5_once() -> None:
    same = mismatch("count2-s1", 0)
    results = [
        verdict("M2.exact", Status.FAIL, mismatches=[same, mismatch("count2-s1", 1)]),
        verdict("M3.variation", Status.PASS, mismatches=[same]),  # the same request judged twice
    ]
    r = q5_intermittent(empty_ctx(), results)
    assert r.status is Status.FAIL
    assert r.reason == "3 mismatch(es) recorded; a mismatch stays failed however many repeats pass"
    assert r.evidence["failure_kind"] == "output"
    assert r.evidence["mismatches"] == [same, mismatch("count2-s1", 1), same]
    assert r.evidence["violation"] == [same, mismatch("count2-s1", 1), same]
    assert r.evidence["set_aside_errors"] == [] and r.evidence["set_aside_crashes"] == []
    assert r.evidence["set_aside_lifecycle"] == []


def test_q5_keeps_at_most_twenty_mismatches_as_the_violation_and_fifty_in_evidence() -> None:
    many = [mismatch("count2-s1", i) for i in range(60)]
    r = q5_intermittent(empty_ctx(), [verdict("M2.exact", Status.FAIL, mismatches=many)])
    assert r.reason.startswith("60 mismatch(es) recorded")
    assert r.evidence["violation"] == many[:20] and r.evidence["mismatches"] == many[:50]


OTHER = (SAMPLES // 3).astype(np.int16)


def set_aside(tmp_path: Path, body: dict[str, Any] | None, *, crash: bool = False, count: int = 2) -> JudgeContext:
    """count<count>-s1: attempt 3 got `body` (None: an error reply), then parval abandoned it."""
    ev = Events(tmp_path)
    ev.baseline({"ref_cold": [tts_reply(), tts_reply()]})
    a = ev.start(f"count{count}-s1", count=count)
    ev.request(f"count{count}-s1", a, "cold_wave", body)
    if crash:
        ev.crash(f"count{count}-s1", a)
    ev.abandon(f"count{count}-s1", a)
    return ev.context()


def test_a_mismatch_in_a_set_aside_attempt_fails_q5_of_its_count_only(tmp_path: Path) -> None:
    ctx = set_aside(tmp_path, tts_reply(OTHER))
    r = q5_intermittent(ctx, [verdict("M2.exact", Status.PASS, count=2, compared=4)], 2)
    assert r.status is Status.FAIL and r.count == 2
    assert r.reason == (
        "1 mismatch(es) recorded; a mismatch stays failed however many repeats pass; "
        "no overlapped outputs: no bound on the mismatch rate"
    )
    (m,) = r.evidence["mismatches"]  # type: ignore[misc]
    assert m["set_aside"] == "abandoned" and m["run"] == "count2-s1"
    assert r.evidence["bound"] == bound(0, 0)
    assert q5_intermittent(ctx, [], None).status is not Status.FAIL
    assert q5_intermittent(ctx, [], 1).status is not Status.FAIL


def test_a_request_error_in_a_set_aside_attempt_fails_q5(tmp_path: Path) -> None:
    r = q5_intermittent(set_aside(tmp_path, None), [verdict("M2.exact", Status.PASS, count=2, compared=4)], 2)
    assert r.status is Status.FAIL
    assert r.reason.startswith("1 request error(s) or malformed repl(ies) in attempt(s) parval set aside; ")
    assert r.evidence["failure_kind"] == "request"
    (e,) = r.evidence["set_aside_errors"]  # type: ignore[misc]
    assert e["set_aside"] == "abandoned"
    assert r.evidence["violation"] == [e]


def test_a_crash_in_a_set_aside_attempt_fails_q5_as_lifecycle(tmp_path: Path) -> None:
    ctx = set_aside(tmp_path, None, crash=True)
    r = q5_intermittent(ctx, [verdict("M2.exact", Status.PASS, count=2, compared=4)], 2)
    assert r.status is Status.FAIL
    assert r.reason.startswith(
        "1 request error(s) or malformed repl(ies) in attempt(s) parval set aside; server crashed in set-aside "
        "attempt(s): count2-s1 attempt 3 (warm_wave, exit -11); "
    )
    assert r.evidence["failure_kind"] == "lifecycle"
    assert r.evidence["set_aside_crashes"] == [
        {"run": "count2-s1", "attempt": 3, "where": "warm_wave", "exit_code": -11, "signal": "SIGSEGV"}
        | {"set_aside": "abandoned"}
    ]


def test_a_lease_left_held_in_a_set_aside_attempt_fails_q5(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    ev.baseline({"ref_cold": [tts_reply(), tts_reply()]})
    a = ev.start("count2-s1", count=2)
    held = {"ok": False, "active": 1, "queued": 0, "fields_present": True}
    status = {"polls": 20, "poll_errors": 0, "max_active": 2, "max_active_loaded": 2, "fields_present": True}
    ev.events.append(
        {"kind": "wave", "run": "count2-s1", "attempt": a, "count": 2, "phase": "cold_wave", "wave": 0, "n": 2}
        | {"mode": "together", "batch_s": 0.1, "retry": 0, "status": status, "drained": held}
    )
    ev.abandon("count2-s1", a)
    r = q5_intermittent(ev.context(), [verdict("M2.exact", Status.PASS, count=2, compared=4)], 2)
    assert r.status is Status.FAIL
    assert r.reason.startswith("1 lifecycle violation(s) in attempt(s) parval set aside: count2-s1 cold_wave; ")
    assert r.evidence["failure_kind"] == "lifecycle"
    (row,) = r.evidence["set_aside_lifecycle"]  # type: ignore[misc]
    assert row["set_aside"] == "abandoned" and row["active"] == 1


def test_an_unload_that_left_the_model_loaded_in_a_set_aside_attempt_fails_q5() -> None:
    stuck = {"reply": {"status": 200}, "loaded_false": False, "still_loaded": True, "polls_after": 9}
    events = [
        {"kind": "run_start", "run": "count2-s1", "attempt": 1, "role": "count", "count": 2},
        {"kind": "probe", "run": "count2-s1", "attempt": 1, "name": "unload", "cycle": 0, "loaded_field": True} | stuck,
        {"kind": "run_abandoned", "run": "count2-s1", "attempt": 1, "reason": "interrupted"},
    ]
    ctx = JudgeContext(build_records(events), plan(), {}, None, "plan.yaml")
    r = q5_intermittent(ctx, [], 2)
    assert r.status is Status.FAIL and r.evidence["failure_kind"] == "lifecycle"
    assert r.reason == (
        "1 lifecycle violation(s) in attempt(s) parval set aside: count2-s1 unload; "
        "no overlapped outputs: no bound on the mismatch rate"
    )
    assert q5_intermittent(ctx, [], None).status is Status.PENDING  # another scope


def test_a_lease_held_in_a_set_aside_recovery_attempt_fails_model_level_q5() -> None:
    held = {"ok": False, "active": 1, "queued": 0, "fields_present": True}
    events = [
        {"kind": "run_start", "run": "recovery", "attempt": 1, "role": "recovery", "count": 2},
        {"kind": "m4_invalid_alongside", "run": "recovery", "attempt": 1, "invalid": {"status": 400}}
        | {"rejected": True, "drained": held},
        {"kind": "run_abandoned", "run": "recovery", "attempt": 1, "reason": "interrupted"},
    ]
    ctx = JudgeContext(build_records(events), plan(), {}, None, "plan.yaml")
    r = q5_intermittent(ctx, [], None)
    assert r.status is Status.FAIL
    assert r.reason == "1 lifecycle violation(s) in attempt(s) parval set aside: recovery m4_invalid_alongside"
    (row,) = r.evidence["set_aside_lifecycle"]  # type: ignore[misc]
    assert row["kind"] == "m4_invalid_alongside" and row["set_aside"] == "abandoned"
    assert q5_intermittent(ctx, [], 2).status is Status.PENDING  # not a count's


def test_n_never_active_in_a_set_aside_attempt_fails_q5_of_its_count(tmp_path: Path) -> None:
    """Requests overlapping from the client, 9 samples while all were in flight, never 2
    active: a lifecycle violation, in an attempt parval set aside, fails that count's Q5."""
    ev = m.Events(tmp_path)
    p = m.plan(counts=[2])
    first = len(ev.events)
    serial = {**m.counters_status(2), "max_active": 1, "max_active_loaded": 1}
    m.full_start(ev, "count2-s1", 2, p, end=False, status=serial, flight=m.in_flight(2, polls=9, max_active=1))
    for e in ev.events[first:]:
        e["attempt"] = -1
    ev.append("run_abandoned", run="count2-s1", attempt=-1)
    ctx = ev.context(p)
    r = q5_intermittent(ctx, [], 2)
    assert r.status is Status.FAIL and r.evidence["failure_kind"] == "lifecycle"
    rows: Any = r.evidence["set_aside_lifecycle"]
    assert rows and all(row["set_aside"] == "abandoned" and row["run"] == "count2-s1" for row in rows)
    assert r.reason.startswith(
        f"{len(rows)} lifecycle violation(s) in attempt(s) parval set aside: count2-s1 cold_wave"
    )
    assert q5_intermittent(ctx, [], None).status is Status.PENDING


def test_a_counts_q5_states_the_widest_bound_plus_uncounted_overlapped_mismatches() -> None:
    counted = mismatch("count2-s1", 0, overlapped=True)
    aside = mismatch("count2-s2", 1, overlapped=True)
    scoped = [
        verdict("M2.exact", Status.FAIL, 2, bound=bound(40, 1), mismatches=[counted]),
        verdict("M3.variation", Status.PASS, 2, bound=bound(10, 0)),
        verdict("M2.serial_reuse", Status.PASS, 2, bound="not a bound"),
    ]
    assert scope_bound(scoped, [counted, aside, mismatch("count2-s3", 2)]) == bound(41, 2)
    assert scope_bound(scoped, [counted]) == bound(40, 1)
    assert scope_bound([], []) == bound(0, 0)
    assert scope_bound([verdict("M2.exact", Status.FAIL, 2, bound=bound(1, 1))], []) == bound(1, 1)


def test_a_counts_q5_pass_states_its_bound() -> None:
    results = [verdict("M2.exact", Status.PASS, 2, compared=40, bound=bound(40, 0))]
    r = q5_intermittent(empty_ctx(), results, 2)
    assert r.status is Status.PASS and r.count == 2
    assert r.reason == (
        "no intermittent mismatch in any repeat; 40 overlapped output(s), 0 differed: mismatch rate < 7.3 % (95 %)"
    )
    assert r.evidence["bound"] == bound(40, 0)


def test_a_counts_pending_q5_states_no_bound_in_its_reason() -> None:
    r = q5_intermittent(empty_ctx(), [verdict("M2.exact", Status.PENDING, 2, bound=bound(4, 0))], 2)
    assert r.status is Status.PENDING
    assert r.reason == "no mismatch recorded, but not every comparison of the scope was completed: M2.exact PENDING"
    assert r.evidence["bound"] == bound(4, 0)


def test_judge_quality_judges_q1_to_q5_in_order() -> None:
    out = judge_quality(empty_ctx(), [])
    assert [r.id for r in out] == ["Q1", "Q2", "Q3", "Q4", "Q5"]
    assert all(r.count is None for r in out)
