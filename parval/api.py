"""Library entry points: run a plan (campaign, then judging), finalize a run (reports and
the integrity seal), load evidence. No printing here; parval/commands/ prints."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import anyio

from parval.jsontypes import JsonObject
from parval.judge import MID_RUN, judge_run
from parval.plan.load import Plan
from parval.report.render import write_reports
from parval.rundir.events import EventListener, EventLog
from parval.rundir.evidence_types import Evidence
from parval.rundir.files import sha256_file, write_json
from parval.rundir.integrity import seal_run
from parval.rundir.layout import EVENTS, MANIFEST, PLAN_SNAPSHOT, new_run_dir
from parval.rundir.manifest import build_manifest
from parval.runners.campaign import Campaign


def prepare_run_dir(plan: Plan, out: Path | None, *, plan_text: str | None = None) -> Path:
    """A fresh run directory holding the plan, its snapshot and the manifest. `plan_text`:
    the plan's own text when `plan.path` names where its paths resolve from rather than
    the plan itself (an effective plan of a catalogue combination)."""
    # Absolute, because servers run with their own directory as the working directory.
    run_dir = new_run_dir(out.resolve() if out is not None else None, plan.name).resolve()
    if plan_text is not None:
        (run_dir / "plan.yaml").write_text(plan_text, "utf-8")
    else:
        (run_dir / "plan.yaml").write_bytes(plan.path.read_bytes())
    write_json(run_dir / PLAN_SNAPSHOT, plan.raw)
    manifest = build_manifest(plan)
    # The rules the run will be judged by, sealed before its first event.
    manifest["plan"]["snapshot_sha256"] = sha256_file(run_dir / PLAN_SNAPSHOT)
    write_json(run_dir / MANIFEST, manifest)
    return run_dir


def run_plan(
    plan: Plan,
    *,
    out: Path | None = None,
    run_dir: Path | None = None,
    listeners: list[EventListener] | None = None,
    shard: tuple[int, int] | None = None,
    skip_runs: set[str] | None = None,
    fail_fast: bool = False,
) -> tuple[Path, Evidence]:
    """Run the whole campaign (fresh run dir unless `run_dir` is given for a resume),
    then judge it. Returns (run_dir, evidence)."""
    # Absolute (as prepare_run_dir makes it), because servers run in their own directory.
    run_dir = prepare_run_dir(plan, out) if run_dir is None else run_dir.resolve()
    log = EventLog(run_dir / EVENTS, sync_behind=True)  # waves do not wait for fsync
    log.listeners.extend(listeners or [])
    try:
        anyio.run(
            Campaign(plan, run_dir, log, judging=MID_RUN, shard=shard, skip_runs=skip_runs, fail_fast=fail_fast).run
        )
    finally:
        log.close()
    # The campaign just completed this run: its judging is the run's first seal.
    return run_dir, judge_run(run_dir, first_seal=True)


def finalize(run_dir: Path, evidence: Mapping[str, object]) -> None:
    """report.md (and memory plots) next to the evidence, then the seal `parval verify` checks."""
    write_reports(run_dir, evidence)
    seal_run(run_dir)


def load_evidence(run_dir: Path) -> JsonObject:
    """A run's evidence.json as JSON values (narrow with isinstance before use)."""
    data: JsonObject = json.loads((run_dir / "evidence.json").read_text("utf-8"))
    return data
