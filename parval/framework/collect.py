"""Collect the shared F1-F6 record for one candidate build: `run_framework`, the library
entry point behind `parval framework PLAN` (parval.commands.framework), prints nothing.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import anyio

from parval.errors import RunDirError
from parval.framework.ctest import CTestRun
from parval.framework.judges import judge
from parval.framework.probe_context import FrameworkContext
from parval.framework.probe_run import ProbeOutcome, check_options, judge_inputs, parse_selection, run_probes
from parval.framework.record import RECORD, assemble, record_inputs, write_record
from parval.framework.settings import load_options
from parval.plan.load import load_plan
from parval.rundir.event_types import CtestRunEvent, FrameworkEndEvent, FrameworkStartEvent, RecordInputsEvent, plain
from parval.rundir.events import EventLog
from parval.rundir.files import write_json
from parval.rundir.integrity import write_listing
from parval.rundir.layout import EVENTS, MANIFEST, new_run_dir
from parval.rundir.manifest import build_manifest


def framework_run_dir(out: Path | None, plan_name: str) -> Path:
    """`new_run_dir` with a -framework suffix; an --out holding a record is refused too, and
    the hint names no --resume (a framework run has none)."""
    if out is not None and ((out / RECORD).exists() or (out / EVENTS).exists()):
        raise RunDirError(
            f"{out}: already holds a framework run; parval never overwrites evidence", hint="choose another --out"
        )
    return new_run_dir(out, plan_name, suffix="-framework").resolve()


def run_framework(
    plan_path: Path,
    *,
    out: Path | None = None,
    source_commit: str | None = None,
    probes: Path | None = None,
    only: str | None = None,
    argv: list[str] | None = None,
) -> tuple[Path, dict[str, Any]]:
    """Run the probes and CTest, write record.json; returns (run dir, record)."""
    plan = load_plan(plan_path)
    options = load_options(probes)
    selected = parse_selection(only)
    check_options(options)
    run_dir = framework_run_dir(out, plan.name)
    (run_dir / "plan.yaml").write_bytes(plan.path.read_bytes())
    if probes is not None:
        shutil.copyfile(probes, run_dir / "probes.yaml")
    log = EventLog(run_dir / EVENTS)
    started = time.time()
    try:
        ctx = FrameworkContext(plan, run_dir, log, options)
        log.write(
            FrameworkStartEvent(
                kind="framework_start", plan=plan.name, plan_sha256=plan.sha256, only=only, selection=sorted(selected)
            )
        )

        async def main() -> tuple[list[ProbeOutcome], list[CTestRun]]:
            return await run_probes(ctx, selected)

        outcomes, runs = anyio.run(main)
        for r in runs:
            log.write(CtestRunEvent(kind="ctest_run", run=plain(r.to_json())))
        # Judging reads only recorded events from here on (the same path as --rejudge).
        inputs = judge_inputs(ctx, selected, only)
        log.write(inputs)
        rinputs = record_inputs(
            ctx,
            started=started,
            outcomes=outcomes,
            selection=sorted(selected),
            source_commit=source_commit,
            argv=argv or ["parval", "framework", str(plan_path)],
        )
        log.write(
            RecordInputsEvent(
                kind="record_inputs",
                procedure_version=rinputs["procedure_version"],
                parval_version=rinputs["parval_version"],
                created_at=rinputs["created_at"],
                elapsed_s=rinputs["elapsed_s"],
                identity=plain(rinputs["identity"]),
                scope=plain(rinputs["scope"]),
                contract=plain(rinputs["contract"]),
                probes=[plain(p) for p in rinputs["probes"]],
                reproduction=rinputs["reproduction"],
            )
        )
        record = assemble(rinputs, judge(ctx.findings.checks, runs, inputs), runs, ctx.findings.checks)
        write_record(run_dir, record)
        log.write(
            FrameworkEndEvent(kind="framework_end", record_id=record["record_id"], verdict=plain(record["verdict"]))
        )
    finally:
        log.close()
    # Like a model run: a manifest, and the listing/chain that `parval verify` and model
    # runs referencing this record check it against.
    write_json(run_dir / MANIFEST, build_manifest(plan))
    write_listing(run_dir, first=True)
    # As a plain dict: parval.commands.framework reads the assertion rows untyped.
    return run_dir, dict(record)
