"""Judge a run directory: recorded events → every assertion's verdict → evidence.json.

Pure with respect to the server: `parval report` can re-judge an old run at any time."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TypedDict

from parval import PROCEDURE_VERSION, __version__
from parval.framework.record_trust import framework_checks
from parval.gates import admission_verdict as adm
from parval.gates.campaign_cost import campaign_overhead
from parval.gates.execution_path import judge_execution_path
from parval.gates.judge_context import JudgeContext
from parval.gates.m1_baseline import judge_m1
from parval.gates.m2_concurrency import judge_m2, m2_exact
from parval.gates.m3_mixed_waves import judge_m3, variation_effects
from parval.gates.m4_recovery import judge_m4
from parval.gates.m5 import memory_results
from parval.gates.m6_modes import judge_m6
from parval.gates.masking import mask_comparisons, negative_control_caught
from parval.gates.performance import build_performance
from parval.gates.quality import judge_quality, q5_intermittent
from parval.jsontypes import JsonValue
from parval.plan.judged import JudgedPlan, judged_plan
from parval.plan.load import Plan
from parval.plan.schemas import schema_version
from parval.procedure.sealed_rules import as_read
from parval.rundir.cannot_start import cannot_start_events
from parval.rundir.event_index import Records, build_records, load_records
from parval.rundir.events import campaign_shard, read_events
from parval.rundir.evidence_types import (
    Evidence,
    Identity,
    RunInfo,
    assertions_block,
    failures_block,
    framework_checks_block,
    model_checks_block,
    performance_block,
    verdict_block,
)
from parval.rundir.files import sha256_file, write_json
from parval.rundir.layout import EVENTS, EVIDENCE, MANIFEST
from parval.rundir.mismatch_bound import MismatchBound, bound, summed
from parval.status import Result, Status, combine


def load_json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return data


class Repeat(TypedDict):
    batch_s: float
    latencies_s: list[JsonValue]  # as recorded (a perf event's are checked only as a list)
    failures: int


class Series(TypedDict):
    """One performance series at one count, as `build_performance` reads it."""

    series: str
    count: int | None  # a count start's run_start may record none
    cold_s: float | None
    repeats: list[Repeat]
    estimate: bool


class Rejection(TypedDict):
    count: int
    latencies_ms: list[JsonValue]
    statuses: object


def _new_series(name: str, count: int | None) -> Series:
    return {"series": name, "count": count, "cold_s": None, "repeats": [], "estimate": False}


def performance_series(rec: Records) -> tuple[list[Series], list[Rejection]]:
    series: dict[tuple[str, int | None], Series] = {}
    for e in rec.kind("perf"):
        s = series.setdefault((e["series"], e["count"]), _new_series(e["series"], e["count"]))
        s["repeats"].append({"batch_s": e["batch_s"], "latencies_s": e["latencies_s"], "failures": e["failures"]})
    # Cold start/first load, kept apart from the warm figures: the first request of the
    # fresh one-slot reference processes.
    for (name, _n), s in series.items():
        run = {"base_one_slot_serial": "ref-baseline-a", "candidate_one_slot_serial": "ref-candidate-cap1"}.get(name)
        cold = [r for r in rec.requests(run, ("ref_cold",)) if r["req"] == "base"] if run else []
        if cold:
            s["cold_s"] = round(cold[0]["t_done"] - cold[0]["t_send"], 6)
    for run, start in rec.runs.items():
        if start["role"] != "count" or run not in rec.ends:
            continue
        n = start["count"]
        s = series.setdefault(("candidate_n_slots", n), _new_series("candidate_n_slots", n))
        reqs = rec.requests(run)
        for w in rec.waves(run):
            lat: list[JsonValue] = [
                round(r["t_done"] - r["t_send"], 6) for r in reqs if r["phase"] == w["phase"] and r["wave"] == w["wave"]
            ]
            fails = sum(
                1
                for r in reqs
                if r["phase"] == w["phase"] and r["wave"] == w["wave"] and r["reply"].get("outcome") != "ok"
            )
            if w["phase"] == "cold_wave" and s["cold_s"] is None:
                s["cold_s"] = w["batch_s"]
            elif w["phase"] == "warm_wave":
                s["repeats"].append({"batch_s": w["batch_s"], "latencies_s": lat, "failures": fails})
    rejections: list[Rejection] = [
        {"count": e["count"], "latencies_ms": e["latencies_ms"], "statuses": e.get("statuses")}
        for e in rec.kind("rejection_latency")
    ]
    return list(series.values()), rejections


def judge_run(run_dir: Path, *, write: bool = True, first_seal: bool = False) -> Evidence:
    manifest = load_json(run_dir / MANIFEST)
    plan_snapshot = load_json(run_dir / "plan.json")
    plan = judged_plan(plan_snapshot)
    rec = load_records(run_dir)
    plan_path = manifest["plan"]["path"]
    ctx = JudgeContext(rec, plan, manifest, run_dir, plan_path)
    counts = ctx.counts
    serial = ctx.serial
    model_level: list[Result] = [*judge_execution_path(ctx), *judge_m1(ctx, serial), *judge_m4(ctx), *judge_m6(ctx)]
    effects = variation_effects(ctx)
    per_count: dict[int, list[Result]] = {}
    for n in counts:
        per_count[n] = [*judge_m2(ctx, n), *judge_m3(ctx, n, effects)]
    for r in memory_results(rec, run_dir, plan, counts):
        per_count.setdefault(r.count or 0, []).append(r)
    everything = model_level + [r for rs in per_count.values() for r in rs]
    model_level += judge_quality(ctx, everything)
    for n, rs in per_count.items():
        rs.append(q5_intermittent(ctx, rs, n))

    neg = rec.kind("negative_control")
    caught = negative_control_caught(rec, run_dir, ctx.tolerance)
    model_level = mask_comparisons(model_level, caught, serial)
    per_count = {n: mask_comparisons(rs, caught, serial) for n, rs in per_count.items()}

    protected = None
    if plan.framework_protected:
        p = Path(plan.framework_protected)
        p = p if p.is_absolute() else Path(plan_path).parent / p
        protected = load_json(p) if p.exists() else None
    fw_results, fw_info = framework_checks(
        _record_path(plan, plan_path),
        manifest,
        protected,
        plan=plan_snapshot,
        counts=counts,
        plan_dir=Path(plan_path).parent,
    )

    campaign_end = rec.kind("campaign_end")
    interrupted = not campaign_end or not campaign_end[-1].get("finished", False)
    found = campaign_shard(rec.events)
    shard = list(found) if found else None
    made_under, warnings = procedure_versions(manifest)
    model_level = [
        replace(r, limitations=[*r.limitations, *warnings]) if r.id == "M1.manifest" else r for r in model_level
    ]
    d = adm.decide(
        counts,
        model_level,
        per_count,
        fw_results,
        interrupted=interrupted,
        missing="not collected by this run",
        not_run=adm.not_run_counts(rec.events),
        cannot_start=list(cannot_start_events(rec.events).values()),
        mode=plan.model.mode,
    )
    admission_ready, flat, assertions = d.admission_ready, d.flat, d.assertions
    model_status = combine(r.status for r in flat)
    series, rejections = performance_series(rec)
    mem_status = combine(r.status for r in flat if r.id.startswith("M5."))
    label = f"{plan.backend}/{plan.model.id}"
    perf = build_performance(
        series,
        rejections,
        model_label=label,
        model_checks=str(model_status),
        framework_checks=fw_info["status"],
        memory_verdict=str(mem_status),
        count_verdicts={n: str(v) for n, v in d.verdicts.items()},
        admitted_counts=d.admitted,
    )
    perf["campaign_overhead"] = campaign_overhead(rec.events)
    run_info: RunInfo = {
        "dir": str(run_dir),
        "plan": plan_path,
        "plan_sha256": manifest["plan"]["sha256"],
        "events_sha256": sha256_file(run_dir / EVENTS),
        "events": len(rec.events),
        "manifest_sha256": sha256_file(run_dir / MANIFEST),
        "interrupted": interrupted,
        "shard": shard,
        "provenance": manifest.get("provenance"),
    }
    identity: Identity = {
        "model": plan.model.id,
        "family": plan.model.family,
        "task": plan.model.task,
        "mode": plan.model.mode,
        "backend": plan.backend,
        "candidate_sha256": manifest["executables"]["candidate"]["sha256"],
        "baseline_sha256": manifest["executables"]["baseline"]["sha256"],
        "model_sha256": manifest["model"]["sha256"],
    }
    model_checks = {
        **adm.model_checks_block(flat, model_level, per_count),
        "variation_effects": effects,
        "negative_control": neg[-1] if neg else None,
    }
    # The blocks the gates build are checked against the schema as they are written.
    built: Evidence = {
        "schema_version": schema_version("evidence"),
        "procedure_version": made_under,
        "judged_with_procedure_version": PROCEDURE_VERSION,
        "procedure_version_differs": made_under != PROCEDURE_VERSION,
        "warnings": warnings,
        "parval_version": __version__,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "run": run_info,
        "identity": identity,
        "verdict": verdict_block(d.verdict_json()),
        "assertions": assertions_block([a.to_json() for a in assertions]),
        "model_checks": model_checks_block(model_checks),
        "framework_checks": framework_checks_block({**fw_info, "results": adm.as_json(fw_results)}),
        "admission_ready": admission_ready,
        "all_plan_rules": admission_ready,
        "performance": performance_block(perf),
        "failures": failures_block([*rec.failures, *[{k: v for k, v in c.items()} for c in rec.crashes]]),
    }
    # Another procedure version's run is historical, and a run whose rules changed after its
    # events never admits, whichever parval re-judges it.
    evidence = as_read(run_dir, built)
    if write:
        from parval.rundir.integrity import write_listing

        evidence["run"]["files_sha256"] = write_listing(run_dir, first=first_seal)
        write_json(run_dir / EVIDENCE, evidence)
    return evidence


def procedure_versions(manifest: Mapping[str, object]) -> tuple[str, list[str]]:
    """The procedure version a run was made under (its manifest's), and a warning when
    this parval judges under another one."""
    made = manifest.get("procedure_version")
    if not isinstance(made, str) or not made:
        return "unknown", [
            "the run's manifest names no procedure version; judged by parval "
            f"{__version__} implementing procedure {PROCEDURE_VERSION}"
        ]
    if made != PROCEDURE_VERSION:
        return made, [
            f"run made under procedure {made}, re-judged by parval {__version__} "
            f"implementing procedure {PROCEDURE_VERSION}: assertions may differ from "
            "the procedure the run followed"
        ]
    return made, []


def _record_path(plan: JudgedPlan, plan_path: str) -> str | None:
    if not plan.framework_record:
        return None
    p = Path(plan.framework_record)
    return str(p if p.is_absolute() else Path(plan_path).parent / p)


class _MidRun:
    """The gates' judgement of a campaign's evidence so far, handed to the campaign (the
    recorder, which never imports the judges): parval.runners.campaign.MidRunJudging."""

    @staticmethod
    def _context(events: Path, plan: Plan, run_dir: Path) -> JudgeContext:
        return JudgeContext(build_records(read_events(events)), judged_plan(plan.raw), {}, run_dir, str(plan.path))

    def largest_validated(self, events: Path, plan: Plan, run_dir: Path, counts: list[int]) -> int:
        ctx = self._context(events, plan, run_dir)
        return adm.largest_consecutive(
            counts, plan.counts, lambda n: all(r.status is Status.PASS for r in judge_m2(ctx, n))
        )

    def count_failures(self, events: Path, plan: Plan, run_dir: Path, n: int) -> list[str]:
        ctx = self._context(events, plan, run_dir)
        results = [*judge_m2(ctx, n), *judge_m3(ctx, n, variation_effects(ctx))]
        return sorted({r.id for r in results if r.status is Status.FAIL})

    def soak_bound(self, events: Path, plan: Plan, run_dir: Path, n: int) -> MismatchBound:
        ctx = self._context(events, plan, run_dir)
        found = m2_exact(ctx, n).evidence.get("bound")
        return summed([found] if isinstance(found, Mapping) else []) or bound(0, 0)


MID_RUN = _MidRun()
