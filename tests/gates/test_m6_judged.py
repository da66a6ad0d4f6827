"""M6 verdicts pinned exactly: each mode's PASS/FAIL/PENDING/BLOCKED/NOT_APPLICABLE reason,
its thresholds (count 2, the server's N active slots, 5 polls, status 400) and evidence."""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from parval.gates.judge_context import JudgeContext
from parval.gates.m6_modes import ENTRIES, _m6_compared, batch_pairing, judge_m6, m6_batch, m6_offline, m6_streaming
from parval.outputs.compare import batch_result_canon, canonicalize
from parval.procedure.entry import MASKED, NEGATIVE, PLAN
from parval.rundir.event_index import build_records
from parval.status import Result, Status
from tests.gates.m_events import DRAINED, Events, baseline_refs, full_start, plan, tts_body, wav_b64

NO_COUNTERS = "the server publishes no slot counters"
HELD = {"ok": False, "active": 1, "queued": 3, "fields_present": True}
COUNTERLESS = {"ok": False, "active": None, "queued": None, "fields_present": False}
WARM = str(canonicalize(json.dumps(tts_body(1)).encode(), ["timing"]).audio["audio"]["sha256"])
CRASH = {"where": "modes warm-up", "exit_code": -11, "signal": "SIGSEGV", "log_tail": "segfault at 0"}


def stream(wave: str = "concurrent", i: int = 0, **over: Any) -> dict[str, Any]:
    s: dict[str, Any] = {
        "wave": wave,
        "index": i,
        "ref": "base|warm",
        "status": 200,
        "outcome": "ok",
        "pcm_sha256": WARM,
        "done": True,
        "disconnected": False,
        "t_send": 0.01 * i,
        "t_done": 1.0,
    }
    s.update(over)
    return s


def cut_stream() -> dict[str, Any]:
    return stream("disconnect", 0, pcm_sha256="x" * 64, done=False, disconnected=True, cut=True)


def streaming(n: int = 2, streams: list[dict[str, Any]] | None = None, **over: Any) -> dict[str, Any]:
    if streams is None:
        streams = [stream("concurrent", i) for i in range(n)] + [cut_stream(), stream("disconnect", 1)]
    e: dict[str, Any] = {
        "run": "modes",
        "attempt": 0,
        "count": n,
        "streams": streams,
        "max_active": n,
        "counters_present": True,
        "polls": 30,
        "drained": dict(DRAINED),
    }
    e.update(over)
    return e


def batch(
    rows: list[tuple[int, int]] | None = None, *, batches: int = 2, replies: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Batches of two requests (base, other), each result equal to its warm reference."""
    names = ["base", "other"]
    results: list[dict[str, Any]] = []
    for b, i in rows if rows is not None else [(b, i) for b in range(batches) for i in (0, 1)]:
        canon = batch_result_canon({**tts_body(i + 1), "timing": None}, ["timing"])
        results.append({"batch": b, "index": i, "req": names[i % 2], "ref": f"{names[i % 2]}|warm", "canon": canon})
    if replies is None:
        replies = [{"batch": b, "status": 200, "outcome": "ok", "error": ""} for b in range(batches)]
    return {
        "run": "modes",
        "attempt": 0,
        "count": 2,
        "batches": batches,
        "expected_results": 2,
        "results": results + replies,
        "drained": dict(DRAINED),
    }


# replies of two more references: one with no audio, one with named audio outputs only
SILENT = {"text": "nothing to say", "timing": {"wall_ms": 1.0}}
NAMED = {"named_audio_outputs": [{"id": "speech", "audio": wav_b64(3)}], "sample_rate": 16000, "channels": 1}


@functools.cache
def reply(seed: int | str) -> tuple[bytes, str, dict[str, Any]]:
    """tts_body(seed) (or SILENT, NAMED) as stored: (raw bytes, artifact name, canonical output), built once."""
    body = {"silent": SILENT, "named": NAMED}[seed] if isinstance(seed, str) else tts_body(seed)
    raw = json.dumps(body).encode()
    return raw, hashlib.sha256(raw).hexdigest(), canonicalize(raw, ["timing"]).to_json()


NAMED_PCM = str(reply("named")[2]["audio"]["named_audio_outputs[speech]"]["sha256"])


def request(
    run_dir: Path, run: str, phase: str, req: str, seed: int | str, ref: str, status: int = 200
) -> dict[str, Any]:
    """A request event as tests.gates.m_events.Events.request records it (raw reply stored)."""
    raw, artifact, output = reply(seed)
    path = run_dir / "artifacts" / f"{artifact}.json"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(raw)
    ok = {"status": status, "outcome": "ok" if status == 200 else "http_error", "ms": 1.0, "error": ""}
    return {
        "kind": "request",
        "run": run,
        "attempt": 0,
        "phase": phase,
        "wave": 0,
        "req": req,
        "ref": ref,
        "slot": None,
        "history": [] if ref.endswith("|cold") else [req],
        "reply": ok,
        "t_send": 0.0,
        "t_done": 1.0,
        "output": output if status == 200 else None,
        "artifact": artifact,
        "expect_error": False,
        "retry": 0,
    }


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run directory for the module: raw replies are named by their content."""
    return tmp_path_factory.mktemp("m6")


def context(
    run_dir: Path,
    *,
    admit: tuple[str, ...] = ("offline", "streaming", "batch"),
    mode: str = "offline",
    count: int | None = 2,
    warmup: int | None = None,
    warm_seed: int = 11,
    warm_status: int = 200,
    recorded: tuple[tuple[str, dict[str, Any]], ...] = (),
    modes_start: bool = True,
    end: bool = True,
) -> JudgeContext:
    """A reference start (base and other, cold differing from warm) and a modes start:
    its warm-up wave (`warmup` requests, default one per slot), then `events` as recorded."""
    events: list[dict[str, Any]] = [{"kind": "run_start", "run": "ref-baseline-a", "attempt": 0, "role": "reference"}]
    events[0]["count"] = 1
    for name, seed in (("base", 1), ("other", 2)):
        events.append(request(run_dir, "ref-baseline-a", "ref_cold", name, seed + 10, f"{name}|cold"))
        events.append(request(run_dir, "ref-baseline-a", "ref_warm", name, seed, f"{name}|warm"))
    for name in ("silent", "named"):
        events.append(request(run_dir, "ref-baseline-a", "ref_warm", name, name, f"{name}|warm"))
    events.append({"kind": "run_end", "run": "ref-baseline-a", "attempt": 0})
    if modes_start:
        events.append({"kind": "run_start", "run": "modes", "attempt": 0, "role": "modes", "count": count})
        events.append(
            {"kind": "server_ready", "run": "modes", "attempt": 0, "argv": ["srv", "--slots", "2"]}
            | {"warning_marker": False}
        )
        for _ in range(warmup if warmup is not None else count or 0):
            events.append(request(run_dir, "modes", "modes_warmup", "base", warm_seed, "base|cold", warm_status))
        for kind, fields in recorded:
            events.append({"kind": kind, "run": "modes", "attempt": 0} | fields)
        if end:
            events.append({"kind": "run_end", "run": "modes", "attempt": 0})
    p = plan(counts=[1], admit_modes=list(admit))
    p["model"]["mode"] = mode
    return JudgeContext(build_records(events), p, {}, run_dir, "plan.yaml")


def judged(ctx: JudgeContext) -> dict[str, Result]:
    return {r.id: r for r in judge_m6(ctx)}


def m6s(run_dir: Path, event: dict[str, Any], **kw: Any) -> Result:
    return m6_streaming(context(run_dir, recorded=(("m6_streaming", event),), **kw))


def m6b(run_dir: Path, event: dict[str, Any], **kw: Any) -> Result:
    return m6_batch(context(run_dir, recorded=(("m6_batch", event),), **kw))


# -- modes the plan leaves out ------------------------------------------------------------


def test_modes_the_plan_leaves_out_are_not_applicable(run_dir: Path) -> None:
    res = judged(context(run_dir, admit=("streaming",), mode="streaming", modes_start=False))
    assert res["M6.offline"].status is Status.NOT_APPLICABLE
    assert res["M6.offline"].reason == "the plan does not admit offline mode"
    assert res["M6.batch"].status is Status.NOT_APPLICABLE
    assert res["M6.batch"].reason == "the plan does not admit native batching (model.admit_modes)"
    res = judged(context(run_dir, admit=("offline",), modes_start=False))
    assert res["M6.streaming"].status is Status.NOT_APPLICABLE
    assert res["M6.streaming"].reason == "the plan does not admit streaming (model.admit_modes)"


@pytest.mark.parametrize(
    ("mode", "id_", "admit"),
    [
        ("offline", "M6.offline", ("streaming", "batch")),
        ("streaming", "M6.streaming", ("offline", "batch")),
        ("batch", "M6.batch", ("offline", "streaming")),
    ],
)
def test_the_mode_under_test_left_out_of_the_plan_is_pending(
    run_dir: Path, mode: str, id_: str, admit: tuple[str, ...]
) -> None:
    r = judged(context(run_dir, admit=admit, mode=mode, modes_start=False))[id_]
    assert r.status is Status.PENDING
    assert r.reason == (
        f"model.admit_modes {sorted(admit)} leaves out {mode}, the mode the model runs in (model.mode): the plan "
        f"excuses no mode under test, so nothing is admitted (add {mode} to model.admit_modes and run again)"
    )
    assert r.evidence["admit_modes"] == sorted(admit) and r.evidence["mode"] == mode


NOT_APPLICABLE_NOTE = (
    "NOT_APPLICABLE when the plan's model.admit_modes leaves the mode out; PENDING when that mode is model.mode "
    "(a plan choice never excuses the mode under test)"
)


def test_the_registry_entries_say_what_each_mode_rests_on() -> None:
    """What `parval explain M6.*` prints: judged per model, the plan's admitted modes, and
    for an output comparison the negative control and its masking."""
    entries = {e.id: e for e in ENTRIES}
    assert list(entries) == ["M6.offline", "M6.streaming", "M6.batch"]
    for e in entries.values():
        assert e.scope == "model" and e.notes[-1] == NOT_APPLICABLE_NOTE
    offline = entries["M6.offline"]
    assert offline.evidence[0] == f"{PLAN}: model.admit_modes, model.mode" and len(offline.evidence) == 2
    assert offline.notes[0] == "exactness itself is M2.exact's; PENDING when no count-wave output was compared"
    assert len(offline.notes) == 2
    for id_ in ("M6.streaming", "M6.batch"):
        e = entries[id_]
        assert len(e.evidence) == 3 and e.evidence[0].startswith(f"`{id_.lower().replace('.', '_')}` event")
        assert e.evidence[-1] == NEGATIVE and e.notes[-2] == MASKED
    assert len(entries["M6.streaming"].notes) == 4 and len(entries["M6.batch"].notes) == 3


def test_an_output_comparisons_declaration_names_the_control_and_its_masking() -> None:
    d = _m6_compared(("`m6_x` event",), "a note")
    assert d.scope == "model" and d.evidence == ("`m6_x` event", NEGATIVE)
    assert d.notes == ("a note", MASKED, NOT_APPLICABLE_NOTE) and d.faults == ()


# -- modes not recorded: crash, stop, nothing -------------------------------------------------


def test_nothing_recorded_is_pending_naming_the_mode(run_dir: Path) -> None:
    res = judged(context(run_dir))
    assert res["M6.streaming"].status is Status.PENDING
    assert res["M6.streaming"].reason == "no streaming evidence recorded"
    assert res["M6.batch"].status is Status.PENDING
    assert res["M6.batch"].reason == "no batch evidence recorded"
    assert res["M6.batch"].reproduction == "parval run plan.yaml   # server: srv --slots 2"


def test_a_crash_fails_the_mode_being_collected_and_blocks_the_next(run_dir: Path) -> None:
    res = judged(context(run_dir, recorded=(("server_crash", CRASH),)))
    text = "modes start (count 2): server crashed during modes warm-up (exit status -11)"
    s, b = res["M6.streaming"], res["M6.batch"]
    assert s.status is Status.FAIL and s.reason == f"{text} while collecting this mode's evidence"
    assert s.evidence["violation"] == {
        "run": "modes",
        "attempt": 0,
        "where": "modes warm-up",
        "exit_code": -11,
        "signal": "SIGSEGV",
    }
    assert s.evidence["log_tail"] == "segfault at 0"
    assert b.status is Status.BLOCKED and b.reason == f"not collected: {text} before this mode's probe"
    assert b.evidence["crash"]["where"] == "modes warm-up"


def test_a_crash_after_streaming_was_recorded_fails_batch(run_dir: Path) -> None:
    crash = {**CRASH, "where": "batch probe"}
    del crash["log_tail"]
    res = judged(context(run_dir, recorded=(("m6_streaming", streaming()), ("server_crash", crash))))
    assert res["M6.streaming"].status is Status.PASS, res["M6.streaming"].reason
    b = res["M6.batch"]
    assert b.status is Status.FAIL
    assert b.reason == (
        "modes start (count 2): server crashed during batch probe (exit status -11) while collecting this mode's "
        "evidence"
    )
    assert b.evidence["log_tail"] == ""


def test_a_crash_with_streaming_not_admitted_fails_batch(run_dir: Path) -> None:
    res = judged(context(run_dir, admit=("offline", "batch"), recorded=(("server_crash", CRASH),)))
    assert res["M6.batch"].status is Status.FAIL


def test_a_crash_of_a_start_without_its_count_names_none(run_dir: Path) -> None:
    res = judged(context(run_dir, count=None, recorded=(("server_crash", CRASH),)))
    assert res["M6.batch"].reason.startswith("not collected: modes start (count None): server crashed")


def test_a_stopped_modes_start_blocks_every_mode_it_did_not_record(run_dir: Path) -> None:
    stop = {"unit": "modes", "reason": "server stopped answering"}
    res = judged(context(run_dir, recorded=(("start_aborted", stop),)))
    for id_ in ("M6.streaming", "M6.batch"):
        r = res[id_]
        assert r.status is Status.BLOCKED
        assert r.reason == "not collected: the modes start (count 2) stopped: server stopped answering"
        assert r.evidence["stop"]["reason"] == "server stopped answering"


# -- M6.streaming ----------------------------------------------------------------------------


def test_concurrent_exact_streams_with_a_cut_pass_with_their_evidence(run_dir: Path) -> None:
    r = m6s(run_dir, streaming(max_active=3))
    assert r.status is Status.PASS
    assert r.reason == (
        "3 streams exact vs the upstream reference of their history; 2 streams overlapped (server showed 3 active); "
        "a client cut its stream while the others stayed exact; lease released"
    )
    assert r.evidence["rests_on"] == {"exact streams": 3, "cut streams": 1}
    assert r.evidence["count"] == 2 and r.evidence["polls"] == 30


def test_the_last_streaming_probe_is_judged(run_dir: Path) -> None:
    bad = streaming(max_active=1)
    ctx = context(run_dir, recorded=(("m6_streaming", bad), ("m6_streaming", streaming())))
    assert m6_streaming(ctx).status is Status.PASS
    ctx = context(run_dir, recorded=(("m6_streaming", streaming()), ("m6_streaming", bad)))
    assert m6_streaming(ctx).status is Status.FAIL


@pytest.mark.parametrize(
    ("refs", "shown"),
    [
        (["nope|warm"], "1 stream(s) without an upstream reference of the same request and history (['nope|warm'])"),
        ([None], "1 stream(s) without an upstream reference of the same request and history (['None'])"),
        (
            ["e|w", "a|w", "d|w", "b|w", "c|w"],
            "5 stream(s) without an upstream reference of the same request and history (['a|w', 'b|w', 'c|w', 'd|w'])",
        ),
    ],
)
def test_streams_without_a_reference_are_pending(run_dir: Path, refs: list[str | None], shown: str) -> None:
    streams = [stream("concurrent", i, ref=ref) for i, ref in enumerate(refs)] + [stream("concurrent", 9)]
    r = m6s(run_dir, streaming(streams=[*streams, cut_stream()]))
    assert r.status is Status.PENDING and r.reason == shown
    assert r.evidence["streams"] == [*streams, cut_stream()]


def test_a_cut_stream_needs_no_reference(run_dir: Path) -> None:
    e = streaming()
    e["streams"][2]["ref"] = "nope|warm"
    assert m6s(run_dir, e).status is Status.PASS


def test_a_reference_with_named_audio_only_is_compared_by_its_first_output(run_dir: Path) -> None:
    e = streaming()
    for s in e["streams"][:2] + e["streams"][3:]:
        s.update(ref="named|warm", pcm_sha256=NAMED_PCM)
    assert m6s(run_dir, e).status is Status.PASS
    e["streams"][3]["pcm_sha256"] = WARM
    assert m6s(run_dir, e).reason == "1 of 3 stream(s) differ from their reference or did not finish"


def test_a_reference_without_audio_is_no_reference_for_a_stream(run_dir: Path) -> None:
    e = streaming()
    e["streams"][0]["ref"] = "silent|warm"
    r = m6s(run_dir, e)
    assert r.status is Status.PENDING
    assert r.reason == "1 stream(s) without an upstream reference of the same request and history (['silent|warm'])"


@pytest.mark.parametrize("streams", [[], [cut_stream()]])
def test_no_kept_stream_is_pending(run_dir: Path, streams: list[dict[str, Any]]) -> None:
    r = m6s(run_dir, streaming(streams=streams))
    assert r.status is Status.PENDING and r.reason == "no stream recorded"


def test_streams_answered_with_errors_fail_naming_each_status(run_dir: Path) -> None:
    e = streaming()
    e["streams"][0].update(status=503, outcome="http_error")
    e["streams"][1].update(status=None, outcome="timeout", pcm_sha256=None)
    r = m6s(run_dir, e)
    assert r.status is Status.FAIL
    assert r.reason == "2 of 3 stream(s) got no complete stream (answered 503, timeout)"
    assert r.evidence["violation"] == [r.reason]


@pytest.mark.parametrize("over", [{"pcm_sha256": "y" * 64}, {"done": False}, {"done": None}])
def test_a_stream_differing_or_unfinished_fails(run_dir: Path, over: dict[str, Any]) -> None:
    e = streaming()
    e["streams"][3].update(over)
    r = m6s(run_dir, e)
    assert r.status is Status.FAIL
    assert r.reason == "1 of 3 stream(s) differ from their reference or did not finish"


def test_a_lease_left_held_fails_after_the_streams(run_dir: Path) -> None:
    r = m6s(run_dir, streaming(drained=dict(HELD)))
    assert r.status is Status.FAIL
    assert r.reason == "lease left held: active_slots 1, queued_requests 3 after the streams"


@pytest.mark.parametrize(
    "drained", [COUNTERLESS, {"ok": False, "active": None, "queued": 0, "fields_present": True}, {}]
)
def test_a_drain_not_shown_is_pending(run_dir: Path, drained: dict[str, Any]) -> None:
    r = m6s(run_dir, streaming(drained=dict(drained)))
    assert r.status is Status.PENDING and r.reason == f"lease release not shown: {NO_COUNTERS}"


def test_failures_come_before_what_is_missing_in_the_reason(run_dir: Path) -> None:
    e = streaming(drained=dict(COUNTERLESS))
    e["streams"][3]["pcm_sha256"] = "y" * 64
    r = m6s(run_dir, e)
    assert r.status is Status.FAIL
    assert r.reason == (
        f"1 of 3 stream(s) differ from their reference or did not finish; lease release not shown: {NO_COUNTERS}"
    )
    assert r.evidence["violation"] == ["1 of 3 stream(s) differ from their reference or did not finish"]
    assert r.evidence["streams"] == e["streams"] and r.evidence["max_active"] == 2  # the probe's record


def test_a_warm_up_output_differing_from_its_cold_reference_fails(run_dir: Path) -> None:
    r = m6s(run_dir, streaming(), warm_seed=5)
    assert r.status is Status.FAIL
    assert r.reason == "the warm-up wave before the mode outputs: 2 mismatch(es)"


def test_a_warm_up_request_answered_with_an_error_fails(run_dir: Path) -> None:
    r = m6s(run_dir, streaming(), warm_status=500)
    assert r.status is Status.FAIL
    assert r.reason == "the warm-up wave before the mode outputs: 2 request error(s), nothing compared"


def test_a_warm_up_wave_short_of_the_slots_is_pending(run_dir: Path) -> None:
    r = m6s(run_dir, streaming(), warmup=1)
    assert r.status is Status.PENDING
    assert r.reason == "no whole warm-up wave recorded before the mode outputs (1 of 2; )"


def test_no_warm_up_wave_is_pending(run_dir: Path) -> None:
    r = m6s(run_dir, streaming(), warmup=0)
    assert r.status is Status.PENDING
    assert r.reason.startswith("no whole warm-up wave recorded before the mode outputs (0 of 2; ")


def test_a_modes_start_without_its_slot_count_is_pending(run_dir: Path) -> None:
    r = m6s(run_dir, streaming(), count=None, warmup=2)
    assert r.status is Status.PENDING
    assert r.reason.startswith("the modes start's slot count was not recorded (its run_start has no count)")


def test_count_one_cannot_show_concurrent_streams(run_dir: Path) -> None:
    e = streaming(1, streams=[stream("concurrent", 0), cut_stream()], max_active=1)
    r = m6s(run_dir, e, count=1)
    assert r.status is Status.PENDING
    assert r.reason == "concurrent streams need count 2 or more; the modes start ran at count 1"


def test_without_counters_the_overlap_is_not_observed(run_dir: Path) -> None:
    r = m6s(run_dir, streaming(counters_present=False, max_active=None))
    assert r.status is Status.PENDING
    assert r.evidence["counters_present"] is False and r.evidence["count"] == 2
    assert r.reason == f"overlap of the 2 streams not observed: {NO_COUNTERS}"


@pytest.mark.parametrize(
    ("max_active", "polls", "status"),
    [(1, 5, Status.FAIL), (1, 4, Status.PENDING), (None, 30, Status.FAIL), (1, None, Status.PENDING)],
)
def test_the_server_must_show_n_active_slots(
    run_dir: Path, max_active: int | None, polls: int | None, status: Status
) -> None:
    """Streams that overlapped from the client, polled 5 times or more, never shown as N
    active fail; with fewer polls the server may have missed them (PENDING)."""
    r = m6s(run_dir, streaming(max_active=max_active, polls=polls))
    assert r.status is status
    assert r.reason == f"the server never showed 2 active slots during the concurrent streams (max {max_active})"


def test_more_active_slots_than_the_count_is_overlap(run_dir: Path) -> None:
    assert m6s(run_dir, streaming(max_active=3)).status is Status.PASS


@pytest.mark.parametrize(
    "timing",
    [
        [(0.0, 1.0), (1.0, 2.0)],  # the second sent exactly when the first finished
        [(0.0, 1.0), (0.5, 2.0), (1.5, 3.0)],
        [(0.0, 1.0)],  # one concurrent stream
        [(0.0, 1.0), (None, 2.0)],  # a send time not recorded
    ],
)
def test_streams_not_overlapping_from_the_client_stay_pending(
    run_dir: Path, timing: list[tuple[float | None, float]]
) -> None:
    streams = []
    for i, (t_send, t_done) in enumerate(timing):
        s = stream("concurrent", i, t_done=t_done, t_send=t_send)
        if t_send is None:
            del s["t_send"]
        streams.append(s)
    r = m6s(run_dir, streaming(streams=[*streams, cut_stream()], max_active=1))
    assert r.status is Status.PENDING
    assert r.reason == (
        "the server never showed 2 active slots during the concurrent streams (max 1), and they did not overlap "
        "from the client side either"
    )


def test_the_overlap_judged_is_that_of_the_concurrent_wave_only(run_dir: Path) -> None:
    # the disconnect wave's later streams are not the concurrent ones: they do not break the overlap
    streams = [stream("concurrent", 0), stream("concurrent", 1), cut_stream(), stream("disconnect", 1, t_send=5.0)]
    r = m6s(run_dir, streaming(streams=streams, max_active=1))
    assert r.status is Status.FAIL


@pytest.mark.parametrize(
    ("cut", "reason"),
    [
        (None, "no stream was recorded as cut mid-stream by its client"),
        (False, "the disconnecting client received the whole stream before it could cut it"),
    ],
)
def test_a_stream_not_cut_by_its_client_is_pending(run_dir: Path, cut: bool | None, reason: str) -> None:
    cs = cut_stream()
    if cut is None:
        del cs["cut"]
    else:
        cs["cut"] = cut
    r = m6s(run_dir, streaming(streams=[stream("concurrent", 0), stream("concurrent", 1), cs]))
    assert r.status is Status.PENDING and r.reason == reason


def test_no_disconnecting_stream_is_pending(run_dir: Path) -> None:
    r = m6s(run_dir, streaming(streams=[stream("concurrent", 0), stream("concurrent", 1)]))
    assert r.status is Status.PENDING
    assert r.reason == "no stream was recorded as cut mid-stream by its client"


def test_a_stream_cut_without_disconnecting_is_not_a_cut(run_dir: Path) -> None:
    streams = [stream("concurrent", 0), stream("concurrent", 1), stream("disconnect", 0, cut=True)]
    r = m6s(run_dir, streaming(streams=streams))
    assert r.status is Status.PENDING
    assert r.reason == "no stream was recorded as cut mid-stream by its client"


def test_several_missing_pieces_are_all_named(run_dir: Path) -> None:
    e = streaming(drained=dict(COUNTERLESS), counters_present=False)
    e["streams"] = e["streams"][:2]
    r = m6s(run_dir, e, warmup=1)
    assert r.status is Status.PENDING
    assert r.reason == (
        f"lease release not shown: {NO_COUNTERS}; no whole warm-up wave recorded before the mode outputs "
        f"(1 of 2; ); overlap of the 2 streams not observed: {NO_COUNTERS}; "
        "no stream was recorded as cut mid-stream by its client"
    )


# -- M6.batch --------------------------------------------------------------------------------


def test_paired_exact_batches_pass_with_their_evidence(run_dir: Path) -> None:
    r = m6b(run_dir, batch())
    assert r.status is Status.PASS
    assert r.reason == (
        "2 concurrent batches, 4 independent results, each paired with its request and equal to that "
        "request's upstream reference"
    )
    assert r.evidence["rests_on"] == {"paired results": 4}
    assert r.evidence["batches"] == 2 and r.evidence["expected_results"] == 2


def test_three_batches_pass(run_dir: Path) -> None:
    r = m6b(run_dir, batch(batches=3))
    assert r.status is Status.PASS and r.reason.startswith("3 concurrent batches, 6 independent results")


def test_the_last_batch_probe_is_judged(run_dir: Path) -> None:
    bad = batch([(0, 0), (0, 1), (1, 0)])
    ctx = context(run_dir, recorded=(("m6_batch", bad), ("m6_batch", batch())))
    assert m6_batch(ctx).status is Status.PASS


def batch_zero_only() -> dict[str, Any]:
    e = batch()
    e["results"] = [r for r in e["results"] if r["batch"] == 0]
    return e


@pytest.mark.parametrize(
    ("event", "shown"),
    [
        (batch(batches=1), "1 batches, results of [0]"),
        (batch_zero_only(), "2 batches, results of [0]"),
        (batch([(0, 0), (0, 1), (1, 0), (1, 1), (2, 0)]), "2 batches, results of [0, 1, 2]"),
    ],
)
def test_an_inconsistent_batch_record_is_pending(run_dir: Path, event: dict[str, Any], shown: str) -> None:
    r = m6b(run_dir, event)
    assert r.status is Status.PENDING
    assert r.reason == f"the batch probe's record is inconsistent ({shown})"


def test_a_batch_record_without_batch_numbers_is_pending(run_dir: Path) -> None:
    e = batch()
    e["results"] = [{k: v for k, v in row.items() if k != "batch"} for row in e["results"]]
    r = m6b(run_dir, e)
    assert r.status is Status.PENDING
    assert r.reason == "the batch probe's record is inconsistent (2 batches, results of [None])"
    assert r.evidence["results"] == e["results"]


@pytest.mark.parametrize(
    ("rows", "problem"),
    [
        ([(0, 0), (0, 1), (1, 0), (1, 1), (1, 1)], "batch 1: request(s) [1] answered more than once"),
        ([(0, 0), (0, 1), (1, 0)], "batch 1: request(s) [1] never answered"),
        ([(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)], "batch 0: result index(es) [2] name no request"),
        ([(0, 0), (0, 1), (0, -1), (1, 0), (1, 1)], "batch 0: result index(es) [-1] name no request"),
        (
            [(0, 1), (0, 1), (0, 3), (1, 0), (1, 1)],
            "batch 0: request(s) [1] answered more than once, request(s) [0] never answered, "
            "result index(es) [3] name no request",
        ),
    ],
)
def test_results_not_paired_one_to_one_with_requests_fail(
    run_dir: Path, rows: list[tuple[int, int]], problem: str
) -> None:
    e = batch(rows)
    for row in e["results"]:  # every result its request's exact output: pairing alone fails
        if "index" in row and row["index"] not in (0, 1):
            row["ref"] = "base|warm"
            row["canon"] = batch_result_canon({**tts_body(1), "timing": None}, ["timing"])
    r = m6b(run_dir, e)
    assert r.status is Status.FAIL and r.reason == problem
    assert r.evidence["violation"] == [problem]


def test_pairing_problems_of_each_batch_are_listed_in_order() -> None:
    e: Any = batch([(0, 0), (1, 1)])
    problems, rows = batch_pairing(e)
    assert problems == ["batch 0: request(s) [1] never answered", "batch 1: request(s) [0] never answered"]
    assert [(r["batch"], r["index"]) for r in rows] == [(0, 0), (1, 1)]


@pytest.mark.parametrize(("status", "failed"), [(400, True), (399, False), (500, True), (None, False)])
def test_a_batch_answered_with_an_error_status_fails(run_dir: Path, status: int | None, failed: bool) -> None:
    replies = [{"batch": 0, "status": status, "outcome": "x", "error": ""}, {"batch": 1, "status": 200}]
    r = m6b(run_dir, batch(replies=replies))
    if failed:
        assert r.status is Status.FAIL
        assert r.reason == f"1 batch(es) answered an error ({status})"
        assert r.evidence["violation"] == [replies[0]]
    else:
        assert r.status is Status.PASS, r.reason


def test_inexact_results_fail_and_are_the_violation(run_dir: Path) -> None:
    e = batch()
    e["results"][3]["canon"] = "{}"
    r = m6b(run_dir, e)
    assert r.status is Status.FAIL
    assert r.reason == "1 result(s) differ from the upstream reference of their request"
    assert r.evidence["violation"] == [e["results"][3]]


def test_every_batch_failure_is_named_in_one_reason(run_dir: Path) -> None:
    e = batch([(0, 0), (0, 1), (1, 0), (1, 1), (1, 1)])
    e["results"][0]["canon"] = "{}"
    e["results"][-1]["status"] = 500
    e["drained"] = dict(HELD)
    r = m6b(run_dir, e, warm_seed=5)
    assert r.status is Status.FAIL
    assert r.reason == (
        "the warm-up wave before the mode outputs: 2 mismatch(es); batch 1: request(s) [1] answered more than once; "
        "1 batch(es) answered an error (500); 1 result(s) differ from the upstream reference of their request; "
        "lease left held: active_slots 1, queued_requests 3 after the batches"
    )
    assert r.evidence["violation"] == [
        "batch 1: request(s) [1] answered more than once",
        e["results"][0],
        e["results"][-1],
        "lease left held: active_slots 1, queued_requests 3",
    ]


@pytest.mark.parametrize(
    ("refs", "shown"),
    [
        ({3: "nope|warm"}, "1 result(s) without an upstream reference of the same request and history (['nope|warm'])"),
        ({3: None}, "1 result(s) without an upstream reference of the same request and history (['None'])"),
        (
            {0: "e|w", 1: "d|w", 2: "c|w", 3: "b|w", 4: "a|w"},
            "5 result(s) without an upstream reference of the same request and history (['a|w', 'b|w', 'c|w', 'd|w'])",
        ),
    ],
)
def test_results_without_a_reference_are_pending(run_dir: Path, refs: dict[int, str | None], shown: str) -> None:
    e = batch(batches=3)
    for i, ref in refs.items():
        e["results"][i]["ref"] = ref
    r = m6b(run_dir, e)
    assert r.status is Status.PENDING and r.reason == shown
    assert r.evidence["batches"] == 3


def test_a_reference_whose_raw_reply_is_gone_is_no_reference(tmp_path: Path) -> None:
    ctx = context(tmp_path, recorded=(("m6_batch", batch()),))
    (tmp_path / "artifacts" / f"{ctx.rec.refs['other|warm']['artifact']}.json").unlink()
    r = m6_batch(ctx)
    assert r.status is Status.PENDING
    assert r.reason == ("2 result(s) without an upstream reference of the same request and history (['other|warm'])")


def test_without_a_run_directory_no_reference_is_read(run_dir: Path) -> None:
    ctx = context(run_dir, recorded=(("m6_batch", batch()),))
    ctx.run_dir = None
    r = m6_batch(ctx)
    assert r.status is Status.PENDING
    assert r.reason.startswith("4 result(s) without an upstream reference of the same request and history")


def test_an_unreadable_reference_reply_is_no_reference(tmp_path: Path) -> None:
    ctx = context(tmp_path, recorded=(("m6_batch", batch()),))
    (tmp_path / "artifacts" / f"{ctx.rec.refs['base|warm']['artifact']}.json").write_bytes(b"not json")
    r = m6_batch(ctx)
    assert r.status is Status.PENDING and r.reason.startswith("2 result(s) without an upstream reference")


def test_a_failure_outranks_results_without_reference(run_dir: Path) -> None:
    e = batch()
    e["results"][3]["ref"] = "nope|warm"
    e["drained"] = dict(HELD)
    r = m6b(run_dir, e)
    assert r.status is Status.FAIL
    assert r.reason == "lease left held: active_slots 1, queued_requests 3 after the batches"


@pytest.mark.parametrize(
    ("drained", "warmup", "reason"),
    [
        (COUNTERLESS, None, f"lease release not shown: {NO_COUNTERS} after the batches"),
        (COUNTERLESS, 1, f"lease release not shown: {NO_COUNTERS} after the batches"),
        (DRAINED, 1, "no whole warm-up wave recorded before the mode outputs (1 of 2; ) after the batches"),
    ],
)
def test_a_drain_or_warm_up_not_shown_keeps_batch_pending(
    run_dir: Path, drained: dict[str, Any], warmup: int | None, reason: str
) -> None:
    e = batch()
    e["drained"] = dict(drained)
    r = m6b(run_dir, e, warmup=warmup)
    assert r.status is Status.PENDING and r.reason == reason
    assert r.evidence["drained"] == drained


def test_missing_references_are_named_before_a_drain_not_shown(run_dir: Path) -> None:
    e = batch()
    e["results"][3]["ref"] = "nope|warm"
    e["drained"] = dict(COUNTERLESS)
    r = m6b(run_dir, e)
    assert r.status is Status.PENDING and r.reason.startswith("1 result(s) without an upstream reference")


# -- M6.offline ------------------------------------------------------------------------------


def offline_ctx(tmp_path: Path, *, counts: list[int], bad: int | None = None) -> JudgeContext:
    ev = Events(tmp_path)
    p = plan(counts=counts)
    baseline_refs(ev)
    for n in counts[:1]:  # M6.offline reads the lowest count only
        for i in (1, 2, 3):
            full_start(ev, f"count{n}-s{i}", n, p, body=tts_body(2) if n == bad else None)
    return ev.context(p)


def test_offline_mode_shown_at_the_lowest_count_passes(tmp_path: Path) -> None:
    ctx = offline_ctx(tmp_path, counts=[2, 3])
    r = m6_offline(ctx)
    compared = r.evidence["compared"]
    assert r.status is Status.PASS and r.evidence["shown_at_count"] == 2
    assert r.reason == (
        f"offline evidence: {compared} /v1/tasks/run outputs of the count-2 waves compared and exact (model mode "
        "offline; each count's outputs are judged by its M2.exact) admits offline mode only"
    )
    assert r.evidence["rests_on"] == {"compared offline outputs": compared}
    assert compared == len(ctx.rec.requests("count2-s1")) * 3


def test_offline_with_nothing_compared_at_the_lowest_count_is_pending(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    baseline_refs(ev)
    r = m6_offline(ev.context(plan(counts=[2, 3])))
    assert r.status is Status.PENDING
    assert r.reason == "no offline output of a count-2 wave was compared with a reference in this run"


def test_offline_outputs_not_shown_exact_at_the_lowest_count_are_pending(tmp_path: Path) -> None:
    r = m6_offline(offline_ctx(tmp_path, counts=[2, 3], bad=2))
    assert r.status is Status.PENDING
    assert r.reason == "the count-2 waves' offline outputs are not shown exact (M2.exact at count 2: FAIL)"


def test_a_batch_result_naming_no_batch_beside_numbered_ones_is_pending(run_dir: Path) -> None:
    e = batch()
    del e["results"][-1]["batch"]
    r = m6b(run_dir, e)
    assert r.status is Status.PENDING
    assert "results of [0, 1, None]" in r.reason
