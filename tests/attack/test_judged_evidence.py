"""What `parval.judge.judge_run` writes for the checked-in clean stand-in runs
(tests/attack/clean-runs.tar.xz), and its helpers on synthetic records: the evidence
file's blocks, the verdict line, the per-start memory the M5 judges read, the performance
series and the framework record's path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from parval import PROCEDURE_VERSION, __version__
from parval.gates.m5 import _start_memory, memory_results
from parval.judge import _record_path, judge_run, performance_series
from parval.plan.judged import judged_plan
from parval.plan.schemas import schema_errors
from parval.rundir.event_index import build_records, load_records
from parval.rundir.files import sha256_file
from parval.status import Status
from tests.attack.clean_runs import ARCHIVE, extract

pytestmark = pytest.mark.skipif(not ARCHIVE.exists(), reason="no recorded clean runs")


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, Any]]]:
    dirs = extract(tmp_path_factory.mktemp("judged"))
    return {kind: (d, judge_run(d, write=False)) for kind, d in dirs.items()}


def by_id(ev: dict[str, Any]) -> dict[tuple[str, Any], str]:
    """(id, None) -> the assertion's overall status; (id, n) -> its status at count n."""
    out: dict[tuple[str, Any], str] = {(a["id"], None): a["status"] for a in ev["assertions"]}
    for n, block in ev["model_checks"]["per_count"].items():
        out.update({(a["id"], int(n)): a["status"] for a in block["assertions"]})
    return out


@pytest.mark.parametrize("kind", ["stateless", "cache_sensitive"])
def test_a_clean_run_is_admitted_at_every_count_with_its_evidence_blocks(
    clean: dict[str, tuple[Path, dict[str, Any]]], kind: str
) -> None:
    run_dir, ev = clean[kind]
    assert schema_errors(ev, "evidence") == []
    assert set(ev) == {
        "schema_version",
        "procedure_version",
        "judged_with_procedure_version",
        "procedure_version_differs",
        "warnings",
        "parval_version",
        "generated_at",
        "run",
        "identity",
        "verdict",
        "assertions",
        "model_checks",
        "framework_checks",
        "admission_ready",
        "all_plan_rules",
        "performance",
        "failures",
    }
    assert ev["schema_version"] == 1 and ev["parval_version"] == __version__
    assert ev["procedure_version"] == ev["judged_with_procedure_version"] == PROCEDURE_VERSION
    assert ev["procedure_version_differs"] is False and ev["warnings"] == []
    assert len(ev["generated_at"]) == 20 and ev["generated_at"].endswith("Z") and "T" in ev["generated_at"]
    assert ev["verdict"] == {
        "line": "ADMITTED at counts 1, 2",
        "exit_code": 0,
        "admitted_counts": [1, 2],
        "counts": {"1": "PASS", "2": "PASS"},
    }
    assert ev["admission_ready"] is True and ev["all_plan_rules"] is True
    assert ev["failures"] == []

    manifest = json.loads((run_dir / "manifest.json").read_text())
    plan = json.loads((run_dir / "plan.json").read_text())
    events = (run_dir / "events.jsonl").read_text().splitlines()
    run = ev["run"]
    assert run["dir"] == str(run_dir) and run["plan"] == manifest["plan"]["path"]
    assert run["plan_sha256"] == manifest["plan"]["sha256"]
    assert run["events_sha256"] == sha256_file(run_dir / "events.jsonl")
    assert run["manifest_sha256"] == sha256_file(run_dir / "manifest.json")
    assert run["events"] == len(events) and run["interrupted"] is False and run["shard"] is None
    assert run["provenance"] == manifest.get("provenance")
    assert ev["identity"] == {
        "model": plan["model"]["id"],
        "family": plan["model"]["family"],
        "task": plan["model"]["task"],
        "mode": plan["model"]["mode"],
        "backend": plan["server"]["backend"],
        "candidate_sha256": manifest["executables"]["candidate"]["sha256"],
        "baseline_sha256": manifest["executables"]["baseline"]["sha256"],
        "model_sha256": manifest["model"]["sha256"],
    }

    checks = ev["model_checks"]
    assert set(checks) == {"status", "groups", "per_count", "model_level", "variation_effects", "negative_control"}
    assert checks["status"] == "PASS" and set(checks["per_count"]) == {"1", "2"}
    assert checks["negative_control"]["kind"] == "negative_control" and checks["negative_control"]["caught"] is True
    assert ev["framework_checks"]["results"] and ev["framework_checks"]["status"] == "PASS"
    statuses = by_id(ev)
    for n in (1, 2):
        for aid in ("M2.starts", "M3.ten_waves", "M5.sampled", "M5.peaks", "M5.stable", "Q5"):
            assert statuses[(aid, n)] == "PASS", (aid, n)
    assert statuses[("M5.baseline", 1)] == ("PASS" if kind == "stateless" else "NOT_APPLICABLE")
    perf = ev["performance"]
    assert perf["model_checks"] == "PASS" and perf["framework_checks"] == "PASS"
    assert perf["memory_verdict"] == "PASS" and "campaign_overhead" in perf
    assert [row["count"] for row in perf["rows"]] == [1, 2]
    assert perf["rejection_latency"], perf.keys()


def test_the_evidence_marks_an_unfinished_campaign(
    clean: dict[str, tuple[Path, dict[str, Any]]], tmp_path: Path
) -> None:
    import shutil

    src, _ = clean["stateless"]
    run_dir = tmp_path / "run"
    shutil.copytree(src, run_dir)
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    kept = [line for line in lines if json.loads(line)["kind"] != "campaign_end"]
    (run_dir / "events.jsonl").write_text("".join(f"{line}\n" for line in kept))
    ev = judge_run(run_dir, write=False)
    assert ev["run"]["interrupted"] is True and ev["verdict"]["exit_code"] == 3
    assert ev["run"]["events"] == len(kept) and "run interrupted" in ev["verdict"]["line"]


def test_a_start_without_a_memory_sampler_record_is_not_sampled(tmp_path: Path) -> None:
    events = [
        {"kind": "run_start", "seq": 1, "t": 0.0, "run": "count1-s1", "attempt": 1, "role": "count", "count": 1},
        {"kind": "run_end", "seq": 2, "t": 1.0, "run": "count1-s1", "attempt": 1},
    ]
    rec = build_records(events)
    m = _start_memory(rec, tmp_path, "count1-s1", 1, 2)
    assert m is not None and m.count == 1 and m.start_index == 2 and m.samples == []
    assert m.sampler_recorded is False and m.gpu_info == "unavailable: not sampled"
    assert m.interval == {"gpu_interval_s": 0.0, "host_interval_s": 0.0} and m.guard_stop is None
    directory = tmp_path / "servers" / "count1-s1-1"
    directory.mkdir(parents=True)
    (directory / "memory.jsonl").write_text('{"t": 0.5, "host_rss_mib": 10}\n\n{"t": 0.6, "host_rss_mib": 11}\n')
    events[1]["memory"] = {"gpu": "nvidia", "gpu_interval_s": 0.1, "host_interval_s": 0.05, "guard_stop": {"t": 0.6}}
    m = _start_memory(build_records(events), tmp_path, "count1-s1", 1, 1)
    assert m is not None and m.sampler_recorded is True and m.gpu_info == "nvidia" and m.guard_stop == {"t": 0.6}
    assert m.samples == [{"t": 0.5, "host_rss_mib": 10}, {"t": 0.6, "host_rss_mib": 11}]
    assert m.interval == {"gpu_interval_s": 0.1, "host_interval_s": 0.05}
    crashed = [events[0], {"kind": "server_crash", "run": "count1-s1", "attempt": 1, "where": "w", "exit_code": 1}]
    assert _start_memory(build_records(crashed), tmp_path, "count1-s1", 1, 1) is None


def test_a_count_without_complete_starts_gets_pending_memory_verdicts(tmp_path: Path) -> None:
    rec = build_records([])
    plan = {"counts": [1, 3], "model": {"id": "m"}, "memory": {"gpu_required": False}, "starts_per_count": 3}
    got = memory_results(rec, tmp_path, plan, [1, 3])
    pend = [(r.id, r.count) for r in got if r.status is Status.PENDING and "no complete start" in r.reason]
    for n in (1, 3):
        for aid in ("M5.sampled", "M5.peaks", "M5.stable", "M5.baseline"):
            assert (aid, n) in pend, (aid, n, [(r.id, r.count, r.reason) for r in got])
    assert all(f"at count {r.count}" in r.reason for r in got if "no complete start" in r.reason)


def test_performance_series_keeps_cold_starts_apart_from_warm_repeats() -> None:
    base = {"attempt": 1}
    events = [
        {"kind": "run_start", "run": "ref-baseline-a", "role": "reference", "count": None, **base},
        {"kind": "run_end", "run": "ref-baseline-a", **base},
        {"kind": "run_start", "run": "count2-s1", "role": "count", "count": 2, **base},
        {"kind": "run_end", "run": "count2-s1", **base},
        {"kind": "run_start", "run": "count2-s2", "role": "count", "count": 2, **base},
    ]
    req = {"kind": "request", "attempt": 1, "slot": 0, "reply": {"outcome": "ok"}}
    events += [
        {**req, "run": "ref-baseline-a", "phase": "ref_cold", "wave": 0, "req": "other", "t_send": 0.0, "t_done": 9.0},
        {**req, "run": "ref-baseline-a", "phase": "ref_cold", "wave": 0, "req": "base", "t_send": 1.0, "t_done": 1.25},
        {**req, "run": "count2-s1", "phase": "cold_wave", "wave": 0, "req": "base", "t_send": 0.0, "t_done": 0.5},
        {**req, "run": "count2-s1", "phase": "warm_wave", "wave": 1, "req": "base", "t_send": 1.0, "t_done": 1.5},
        {
            **req,
            "run": "count2-s1",
            "phase": "warm_wave",
            "wave": 1,
            "req": "base",
            "t_send": 1.0,
            "t_done": 1.75,
            "reply": {"outcome": "error"},
        },
        {**req, "run": "count2-s1", "phase": "warm_wave", "wave": 2, "req": "base", "t_send": 2.0, "t_done": 2.5},
    ]
    wave = {"kind": "wave", "attempt": 1, "n": 2, "mode": "together", "status": {}, "run": "count2-s1"}
    events += [
        {**wave, "phase": "cold_wave", "wave": 0, "batch_s": 0.6},
        {**wave, "phase": "warm_wave", "wave": 1, "batch_s": 0.8},
        {**wave, "phase": "mixed_wave", "wave": 1, "batch_s": 0.9},
        {**wave, "phase": "warm_wave", "wave": 2, "batch_s": 0.7},
    ]
    perf = {"kind": "perf", "count": 2}
    events += [
        {**perf, "series": "base_one_slot_serial", "batch_s": 2.0, "latencies_s": [1.0, 1.0]},
        {**perf, "series": "base_one_slot_serial", "batch_s": 2.5, "latencies_s": [1.0], "failures": 1},
        {**perf, "series": "other_series", "batch_s": 3.0, "latencies_s": [3.0], "failures": 0},
        {"kind": "rejection_latency", "count": 2, "latencies_ms": [1.5], "statuses": [503]},
        {"kind": "rejection_latency", "count": 3, "latencies_ms": [2.5]},
    ]
    for i, e in enumerate(events):
        e.update(seq=i, t=float(i))
        if e["kind"] == "perf":
            e.setdefault("failures", 0)
        if e["kind"] == "request":
            e.update(ref=None, output=None)
        if e["kind"] == "wave":
            e["drained"] = {}
    series, rejections = performance_series(build_records(events))
    got = {(s["series"], s["count"]): s for s in series}
    assert set(got) == {("base_one_slot_serial", 2), ("other_series", 2), ("candidate_n_slots", 2)}
    ref = got[("base_one_slot_serial", 2)]
    assert ref["cold_s"] == 0.25 and ref["estimate"] is False
    assert ref["repeats"] == [
        {"batch_s": 2.0, "latencies_s": [1.0, 1.0], "failures": 0},
        {"batch_s": 2.5, "latencies_s": [1.0], "failures": 1},
    ]
    assert got[("other_series", 2)]["cold_s"] is None
    cand = got[("candidate_n_slots", 2)]
    assert cand["cold_s"] == 0.6 and cand["estimate"] is False
    assert cand["repeats"] == [
        {"batch_s": 0.8, "latencies_s": [0.5, 0.75], "failures": 1},
        {"batch_s": 0.7, "latencies_s": [0.5], "failures": 0},
    ]
    assert rejections == [
        {"count": 2, "latencies_ms": [1.5], "statuses": [503]},
        {"count": 3, "latencies_ms": [2.5], "statuses": None},
    ]


def test_the_framework_record_path_is_read_next_to_the_plan(tmp_path: Path) -> None:
    plan_path = str(tmp_path / "plans" / "p.yaml")

    def record_path(framework: dict[str, Any]) -> str | None:
        return _record_path(judged_plan({"counts": [1], "model": {"id": "m"}, **framework}), plan_path)

    assert record_path({}) is None
    assert record_path({"framework": {"record": ""}}) is None
    assert record_path({"framework": {"record": "fw/r.json"}}) == str(tmp_path / "plans" / "fw/r.json")
    assert record_path({"framework": {"record": "/abs/r.json"}}) == "/abs/r.json"


def test_a_run_is_judged_again_from_its_files_alone(clean: dict[str, tuple[Path, dict[str, Any]]]) -> None:
    run_dir, ev = clean["cache_sensitive"]
    rec = load_records(run_dir)
    again = judge_run(run_dir, write=False)
    assert by_id(again) == by_id(ev) and again["run"]["events"] == len(rec.events)


def test_memory_results_hands_the_m5_judges_the_plans_rule_and_the_right_starts(
    clean: dict[str, tuple[Path, dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which starts are the candidate's (numbered from 1 per count) and which the baseline
    build's (only where the plan declares the comparison), and the plan's rule, defaults
    included: GPU memory required, host RSS, three starts."""
    import parval.gates.m5 as m5
    from parval.gates.m5 import StabilisationRule

    seen: dict[str, Any] = {}

    def recorder(starts: list[Any], rule: Any, **kw: Any) -> list[Any]:
        seen.update(starts=starts, rule=rule, **kw)
        return []

    monkeypatch.setattr(m5, "assess_m5", recorder)
    run_dir, _ = clean["stateless"]
    rec = load_records(run_dir)
    plan = json.loads((run_dir / "plan.json").read_text())
    m5.memory_results(rec, run_dir, plan, [1, 2])
    assert [(s.count, s.start_index) for s in seen["starts"]] == [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (2, 3)]
    assert [(s.count, s.start_index) for s in seen["baseline"]] == [(1, 1), (2, 1)]
    assert all(s.samples for s in seen["baseline"]) and all(s.samples for s in seen["starts"])
    assert seen["baseline_reason"] == plan["memory"]["baseline_comparison"]["reason"]
    assert seen["rule"] == StabilisationRule(3, 64.0, "host_rss")
    assert seen["gpu_required"] is False and seen["expected_starts"] == 3

    plan["memory"] = {"baseline_comparison": None, "stabilisation": {"last_k_waves": 2, "max_growth_mib": 8}}
    plan["starts_per_count"] = 5
    m5.memory_results(rec, run_dir, plan, [2])
    assert [(s.count, s.start_index) for s in seen["starts"]] == [(2, 1), (2, 2), (2, 3)]
    assert seen["baseline"] is None and seen["baseline_reason"] is None
    assert seen["rule"] == StabilisationRule(2, 8.0, "host_rss")
    assert seen["gpu_required"] is True and seen["expected_starts"] == 5
    plan["memory"] = {"stabilisation": {"last_k_waves": 2, "max_growth_mib": 8, "metric": "host_pss"}}
    plan.pop("starts_per_count")
    m5.memory_results(rec, run_dir, plan, [1])
    assert seen["rule"] == StabilisationRule(2, 8.0, "host_pss") and seen["expected_starts"] == 3
    plan["memory"] = {}
    m5.memory_results(rec, run_dir, plan, [1])
    assert seen["rule"] is None


def test_judging_writes_the_evidence_by_default_and_keeps_the_shard_and_counts_not_run(tmp_path: Path) -> None:
    import inspect

    assert inspect.signature(judge_run).parameters["write"].default is True
    from tests.gates.test_cmp_small import run_dir as small_run

    d = small_run(tmp_path / "r", PROCEDURE_VERSION)
    events = [json.loads(line) for line in (d / "events.jsonl").read_text().splitlines()]
    events.insert(0, {"kind": "campaign_start", "seq": 0, "t": 0.0, "counts": [1], "shard": [2, 3]})
    events.append({"kind": "count_not_run", "seq": 98, "t": 1.0, "count": 2, "reason": "count 1 failed"})
    # Without a campaign_end the run was interrupted (and, never judged, may be judged now).
    (d / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    ev = judge_run(d)
    assert (d / "evidence.json").exists() and json.loads((d / "evidence.json").read_text())["run"]["shard"] == [2, 3]
    assert ev["run"]["shard"] == [2, 3]
    assert ev["run"]["interrupted"] is True
    at2 = ev["model_checks"]["per_count"].get("2", {}).get("assertions", [])
    assert at2 and all(a["status"] == "PENDING" and a["reason"] == "count 1 failed" for a in at2)
