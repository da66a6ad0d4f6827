"""Loading a run's evidence for a report: the run directory verified first (one check,
`parval.rundir.integrity.verified`, refusing a modified directory with exit 2), then the
stored evidence.json or a new judgement of its events (`--rejudge`). Where earlier
judgings of the run (kept under judgings/) read differently, the report says how
(`judgings` in the JSON, the integrity line in the markdown)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, cast

from parval.errors import RunDirError
from parval.procedure.sealed_rules import as_read
from parval.report.render import write_reports
from parval.rundir.evidence_types import Evidence, built_record
from parval.rundir.judgings import differences
from parval.rundir.layout import EVENTS, EVIDENCE
from parval.rundir.verified import Verified, verified


def load_run(run_dir: Path, rejudge: bool) -> tuple[Evidence, Verified]:
    """(the evidence, what was verified of its directory before it was read)."""
    if not run_dir.is_dir():
        raise RunDirError(f"{run_dir}: no such run directory")
    judging = rejudge or not (run_dir / EVIDENCE).exists()
    check = verified(run_dir, rejudging=judging)
    if judging:
        if not (run_dir / EVENTS).exists():
            raise RunDirError(f"{run_dir}: no events.jsonl: not a parval run directory")
        from parval.judge import judge_run
        from parval.rundir.integrity import seal_run

        evidence = built_record(judge_run(run_dir))
        # The run directory's own report follows the new judgement, sealed like `parval run`.
        write_reports(run_dir, evidence)
        seal_run(run_dir)
        return _with_judgings(run_dir, evidence, check)
    try:
        data: Evidence = json.loads((run_dir / EVIDENCE).read_text("utf-8"))
    except ValueError as exc:
        raise RunDirError(
            f"{run_dir / EVIDENCE}: not valid JSON ({exc})", hint="re-judge the recorded events with --rejudge"
        ) from None
    return _with_judgings(run_dir, as_read(run_dir, data), check)


def _with_judgings(run_dir: Path, ev: Evidence, check: Verified) -> tuple[Evidence, Verified]:
    """`ev` and `check` saying how the run's earlier judgings differ from `ev`, if they do."""
    differ = differences(run_dir, ev)
    if not differ:
        return ev, check
    out = cast(dict[str, Any], dict(ev))
    out["judgings"] = differ
    return cast(Evidence, out), dataclasses.replace(check, judgings=tuple(differ))


def run_problems(run_dir: Path, ev: Evidence) -> list[str]:
    """What `verified` would refuse `run_dir` for, listed rather than raised, with `ev` (the
    evidence about to be presented) held to the hashes on disk: the catalogue shows a run's
    problems on its rows (INVALID EVIDENCE) and decides whether to rerun it."""
    from parval.rundir.integrity import integrity_problems, unsealed_problem

    if (lost := unsealed_problem(run_dir)) is not None:
        return [lost]
    return integrity_problems(run_dir, ev)
