"""What the campaign asks the judges between units (MID_RUN: the largest validated count,
a count's failures, the soak's mismatch bound) and the performance series judge_run
builds from a run's events."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import soundfile as sf

from parval import PROCEDURE_VERSION, __version__
from parval.judge import MID_RUN, judge_run, performance_series, procedure_versions
from parval.rundir.event_index import build_records
from parval.rundir.integrity import IntegrityError
from parval.rundir.mismatch_bound import bound
from tests.gates.m_events import Events, baseline_refs, full_start, plan, tts_body

Event = dict[str, Any]


def campaign(run_dir: Path, differ_at: int | None) -> tuple[Path, Any]:
    """Three clean starts at counts 1 and 2 (the last start at `differ_at` replying with
    other audio), written as the campaign writes events.jsonl, and the plan it ran."""
    ev = Events(run_dir)
    baseline_refs(ev)
    p = plan(counts=[1, 2])
    for n in (1, 2):
        for i in range(3):
            body = tts_body(2) if (n == differ_at and i == 2) else None
            full_start(ev, f"count{n}-s{i + 1}", n, p, body=body)
    path = run_dir / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in ev.events))
    return path, SimpleNamespace(raw=p, path=Path("plans/p.yaml"), counts=[1, 2])


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Path]:
    d = tmp_path_factory.mktemp("clean")
    return (*campaign(d, None), d)


@pytest.fixture(scope="module")
def differs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Path]:
    d = tmp_path_factory.mktemp("differs")
    return (*campaign(d, 2), d)


def test_mid_run_judging_of_a_clean_campaign(clean: tuple[Path, Any, Path]) -> None:
    events, p, run_dir = clean
    assert MID_RUN.largest_validated(events, p, run_dir, [1, 2]) == 2
    assert MID_RUN.largest_validated(events, p, run_dir, [2]) == 2
    assert MID_RUN.count_failures(events, p, run_dir, 1) == []
    assert MID_RUN.count_failures(events, p, run_dir, 2) == []
    # 15 outputs overlapped with another in each of 3 starts, none differed
    assert MID_RUN.soak_bound(events, p, run_dir, 2) == bound(45, 0)


def test_mid_run_judging_stops_at_a_count_whose_outputs_differ(differs: tuple[Path, Any, Path]) -> None:
    events, p, run_dir = differs
    assert MID_RUN.largest_validated(events, p, run_dir, [1, 2]) == 1
    assert MID_RUN.count_failures(events, p, run_dir, 1) == []
    assert MID_RUN.count_failures(events, p, run_dir, 2) == ["M2.exact", "M2.serial_reuse", "M2.unload_reload"]
    assert MID_RUN.soak_bound(events, p, run_dir, 2) == bound(45, 15)  # the third start's every output


def test_mid_run_judging_reads_a_memory_refusal_from_the_raw_reply(tmp_path: Path) -> None:
    """A 503 whose summary names no error type is a memory refusal (BLOCKED evidence, not a
    FAIL that would stop a --fail-fast campaign) when its stored body says so."""
    ev = Events(tmp_path)
    baseline_refs(ev)
    p = plan(counts=[1, 2])
    for i in range(3):
        full_start(ev, f"count2-s{i + 1}", 2, p)
    refused = next(e for e in ev.events if e["kind"] == "request" and e["phase"] == "warm_wave")
    body = {"error": {"type": "insufficient_memory", "message": "no VRAM left"}}
    (tmp_path / "artifacts" / "refused.json").write_text(json.dumps(body))
    refused.update(reply={"status": 503, "outcome": "http_error", "ms": 1.0, "error": ""}, artifact="refused")
    refused["output"] = None
    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps(e) + "\n" for e in ev.events))
    declared = SimpleNamespace(raw=p, path=Path("plans/p.yaml"), counts=[1, 2])
    assert MID_RUN.count_failures(events, declared, tmp_path, 2) == []
    assert MID_RUN.count_failures(events, declared, None, 2) == ["M2.exact"]  # the body unread: a failed request


def moved(delta: int) -> dict[str, Any]:
    """tts_body(1) with one sample moved by `delta` LSB."""
    body = tts_body(1)
    samples, rate = sf.read(io.BytesIO(base64.b64decode(body["audio"])), dtype="int16")
    samples[80] += delta
    buf = io.BytesIO()
    sf.write(buf, samples, rate, format="WAV", subtype="PCM_16")
    return {**body, "audio": base64.b64encode(buf.getvalue()).decode()}


def test_mid_run_judging_applies_the_tolerance_from_the_raw_replies(tmp_path: Path) -> None:
    """Baseline repeats one LSB apart (the declared tolerance of 2 applies) and one start per
    count two LSB off: within the tolerance, read from the stored replies in the run directory."""
    ev = Events(tmp_path)
    for run, body in (("ref-baseline-a", tts_body(1)), ("ref-baseline-b", moved(1))):
        ev.start(run, role="reference", count=1, exe_role="baseline")
        for phase in ("ref_cold", "ref_warm", "ref_warm2"):
            ev.request(run, phase, 0, "base", body)
        ev.end(run)
    p = plan(counts=[1, 2])
    p["compare"]["tolerance"] = {"max_abs_sample_diff": 2, "justification": "dithered output"}
    for n in (1, 2):
        for i in range(3):
            full_start(ev, f"count{n}-s{i + 1}", n, p, body=moved(2) if i == 0 else None)
    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps(e) + "\n" for e in ev.events))
    declared = SimpleNamespace(raw=p, path=Path("plans/p.yaml"), counts=[1, 2])
    assert MID_RUN.largest_validated(events, declared, tmp_path, [1, 2]) == 2
    assert MID_RUN.count_failures(events, declared, tmp_path, 2) == []
    assert MID_RUN.soak_bound(events, declared, tmp_path, 2) == bound(45, 0)
    # without the stored replies the tolerance cannot be applied: the first start differs
    assert MID_RUN.largest_validated(events, declared, None, [1, 2]) == 1
    assert MID_RUN.soak_bound(events, declared, None, 2) == bound(45, 15)


# -- performance_series ----------------------------------------------------------------------
def req(run: str, phase: str, wave: int, t_send: float, t_done: float, name: str = "base", ok: bool = True) -> Event:
    return {
        "kind": "request",
        "run": run,
        "attempt": 1,
        "phase": phase,
        "wave": wave,
        "req": name,
        "ref": None,
        "slot": 0,
        "reply": {"outcome": "ok" if ok else "http_error"},
        "output": None,
        "t_send": t_send,
        "t_done": t_done,
    }


def wave(run: str, phase: str, wave_: int, batch_s: float) -> Event:
    return {
        "kind": "wave",
        "run": run,
        "attempt": 1,
        "phase": phase,
        "wave": wave_,
        "n": 2,
        "mode": "together",
        "batch_s": batch_s,
        "status": {},
        "drained": {},
    }


def start(run: str, role: str, count: int | None, ended: bool = True) -> list[Event]:
    out: list[Event] = [{"kind": "run_start", "run": run, "attempt": 1, "role": role, "count": count}]
    return [*out, {"kind": "run_end", "run": run, "attempt": 1}] if ended else out


def perf_event(series: str, count: int, batch_s: float, failures: int = 0) -> Event:
    return {
        "kind": "perf",
        "series": series,
        "count": count,
        "batch_s": batch_s,
        "latencies_s": [batch_s],
        "failures": failures,
    }


def test_performance_series_from_the_reference_and_count_starts() -> None:
    events = [
        *start("ref-candidate-cap1", "reference", 1),
        req("ref-candidate-cap1", "perf_serial", 0, 0.0, 0.7),  # not the cold start
        req("ref-candidate-cap1", "ref_cold", 0, 1.0, 1.1234567),
        req("ref-candidate-cap1", "ref_cold", 0, 2.0, 2.5),  # a later base request: not the cold start
        req("ref-candidate-cap1", "ref_warm", 0, 3.0, 3.1),
        perf_event("candidate_one_slot_serial", 1, 0.5),
        perf_event("independent_servers", 2, 0.4, failures=1),
        perf_event("candidate_n_slots", 2, 0.35),  # joins the count starts' series at count 2
        *start("count2-s1", "count", 2),
        req("count2-s1", "cold_wave", 0, 0.0, 0.5),
        req("count2-s1", "warm_wave", 1, 1.0, 1.2000004),
        req("count2-s1", "warm_wave", 1, 1.0, 1.3, ok=False),
        req("count2-s1", "mixed_wave", 1, 1.0, 9.0),  # another phase's wave of the same number
        wave("count2-s1", "cold_wave", 0, 0.6),
        wave("count2-s1", "warm_wave", 1, 0.3),
        wave("count2-s1", "mixed_wave", 1, 9.5),
        *start("count2-s2", "count", 2),
        wave("count2-s2", "cold_wave", 0, 0.9),  # the first start's cold wave is the one kept
        wave("count2-s2", "warm_wave", 1, 0.25),
        *start("soak2-s1", "soak", 2),  # not a count start
        wave("soak2-s1", "warm_wave", 1, 7.0),
        *start("count3-s1", "count", 3, ended=False),  # never ended: not a figure
        wave("count3-s1", "warm_wave", 1, 8.0),
        {"kind": "rejection_latency", "count": 2, "latencies_ms": [1.5, 2.0], "statuses": [503, 200]},
    ]
    series, rejections = performance_series(build_records(events))
    got = {(s["series"], s["count"]): s for s in series}
    assert list(got) == [("candidate_one_slot_serial", 1), ("independent_servers", 2), ("candidate_n_slots", 2)]
    assert got[("candidate_one_slot_serial", 1)] == {
        "series": "candidate_one_slot_serial",
        "count": 1,
        "cold_s": 0.123457,
        "repeats": [{"batch_s": 0.5, "latencies_s": [0.5], "failures": 0}],
        "estimate": False,
    }
    assert got[("independent_servers", 2)]["cold_s"] is None
    assert got[("independent_servers", 2)]["repeats"] == [{"batch_s": 0.4, "latencies_s": [0.4], "failures": 1}]
    assert got[("candidate_n_slots", 2)] == {
        "series": "candidate_n_slots",
        "count": 2,
        "cold_s": 0.6,
        "repeats": [
            {"batch_s": 0.35, "latencies_s": [0.35], "failures": 0},
            {"batch_s": 0.3, "latencies_s": [0.2, 0.3], "failures": 1},
            {"batch_s": 0.25, "latencies_s": [], "failures": 0},
        ],
        "estimate": False,
    }
    assert rejections == [{"count": 2, "latencies_ms": [1.5, 2.0], "statuses": [503, 200]}]


# -- judge_run -------------------------------------------------------------------------------
def small_run(run_dir: Path, finished: bool) -> Path:
    from tests.gates.test_cmp_small import run_dir as baseline_only

    d = baseline_only(run_dir, PROCEDURE_VERSION)
    if finished:
        with (d / "events.jsonl").open("a") as fh:
            fh.write(json.dumps({"kind": "campaign_end", "finished": True}) + "\n")
    return d


def test_a_completed_run_is_sealed_by_its_first_judging_only(tmp_path: Path) -> None:
    d = small_run(tmp_path / "r", finished=True)
    with pytest.raises(IntegrityError, match="a run directory is sealed once"):
        judge_run(d)
    assert not (d / "evidence.json").exists()
    ev = judge_run(d, first_seal=True)
    assert (d / "files.sha256").exists() and ev["run"]["files_sha256"]
    assert ev["run"]["interrupted"] is False


def test_every_result_is_reproducible_from_the_runs_plan(tmp_path: Path) -> None:
    d = small_run(tmp_path / "r", finished=False)
    ev = judge_run(d, write=False)
    plan_path = str(d / "plan.yaml")
    reproductions = [a["reproduction"] for a in ev["assertions"] if a.get("reproduction")]
    assert reproductions and all(r.startswith(f"parval run {plan_path}") for r in reproductions)


@pytest.mark.parametrize("made", [None, "", 7])
def test_a_manifest_naming_no_procedure_version_is_judged_as_unknown(made: object) -> None:
    manifest = {} if made is None else {"procedure_version": made}
    assert procedure_versions(manifest) == (
        "unknown",
        [
            f"the run's manifest names no procedure version; judged by parval {__version__} "
            f"implementing procedure {PROCEDURE_VERSION}"
        ],
    )


def test_a_run_made_under_another_procedure_is_judged_with_a_warning() -> None:
    assert procedure_versions({"procedure_version": PROCEDURE_VERSION}) == (PROCEDURE_VERSION, [])
    assert procedure_versions({"procedure_version": "2020-01-01"}) == (
        "2020-01-01",
        [
            f"run made under procedure 2020-01-01, re-judged by parval {__version__} implementing procedure "
            f"{PROCEDURE_VERSION}: assertions may differ from the procedure the run followed"
        ],
    )


def tolerance_run(run_dir: Path, source_kept: bool) -> Path:
    """Baseline starts whose audio differs by one LSB, within the plan's tolerance of 2 (so
    the tolerance applies), and a caught negative control planted in ref-baseline-a's cold
    reply (`source_kept`: else in a reply not among the artifacts)."""
    from tests.conftest import SMALL_PLAN
    from tests.gates.cmp_events import SAMPLES, tts_reply
    from tests.gates.cmp_events import Events as CmpEvents

    ev = CmpEvents(run_dir)
    moved = SAMPLES.copy()
    moved[800] += 1
    ev.baseline({"ref_cold": [tts_reply(), tts_reply(moved)]})
    source = next(e for e in ev.events if e["kind"] == "request")["artifact"] if source_kept else "0" * 64
    ev.events.append({"kind": "negative_control", "caught": True, "source": {"artifact": source}})
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in ev.events))
    declared = json.loads(json.dumps(SMALL_PLAN))
    declared["requests"]["variations"] = []
    declared["compare"]["tolerance"] = {"max_abs_sample_diff": 2, "justification": "dithered output"}
    (run_dir / "plan.json").write_text(json.dumps(declared))
    manifest = {
        "procedure_version": PROCEDURE_VERSION,
        "plan": {"path": str(run_dir / "plan.yaml"), "sha256": "0" * 64},
        "executables": {"baseline": {"sha256": "a" * 64}, "candidate": {"sha256": "b" * 64}},
        "model": {"sha256": "c" * 64},
    }
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    return run_dir


@pytest.mark.parametrize("source_kept", [True, False])
def test_with_a_tolerance_in_force_the_control_must_show_the_tolerance_path(tmp_path: Path, source_kept: bool) -> None:
    ev = judge_run(tolerance_run(tmp_path, source_kept), write=False)
    statuses = {a["id"]: a["status"] for a in ev["assertions"]}
    assert statuses["M1.serial_repeat"] == "PASS"  # repeats varied within the tolerance: it applies
    uncaught = [a["id"] for a in ev["assertions"] if a["reason"].startswith("negative control not caught")]
    if source_kept:
        assert uncaught == []
    else:  # the planted reply unreadable: the tolerance path was not shown able to fail
        assert {"M1.legacy_parity", "M1.cap1_parity", "M2.exact"} <= set(uncaught)
        assert all(statuses[i] == "BLOCKED" for i in uncaught)


def test_only_the_manifest_check_carries_the_procedure_warning_and_a_missing_protected_list_is_no_crash(
    tmp_path: Path,
) -> None:
    from tests.gates.test_cmp_small import run_dir as baseline_only

    d = baseline_only(tmp_path / "r", "2020-01-01")
    declared = json.loads((d / "plan.json").read_text())
    declared.setdefault("framework", {})["protected"] = "not-there.json"
    (d / "plan.json").write_text(json.dumps(declared))
    ev = judge_run(d, write=False)
    warned = [a["id"] for a in ev["assertions"] if any("run made under procedure" in x for x in a["limitations"])]
    assert warned == ["M1.manifest"]
    assert ev["framework_checks"]["status"] != "PASS"


def test_the_performance_rows_name_the_backend_model_and_their_counts_verdict(tmp_path: Path) -> None:
    d = small_run(tmp_path / "r", finished=False)
    with (d / "events.jsonl").open("a") as fh:
        for b in (1.0, 1.2, 1.1):
            fh.write(json.dumps(perf_event("base_one_slot_serial", 1, b)) + "\n")
    ev = judge_run(d, write=False)
    (row,) = ev["performance"]["rows"]
    assert (row["count"], row["backend_model"], row["admitted"]) == (1, "cpu/small-tts", False)
    assert row["model_checks"] == ev["verdict"]["counts"]["1"] == "FAIL"
    assert row["base_one_request"]["median_s"] == 1.1
