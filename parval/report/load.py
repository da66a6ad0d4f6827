"""Loading a run's evidence for a report: the stored evidence.json, or a new judgement of
its events (`--rejudge`), and the integrity problems that make a report invalid."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from parval.errors import RunDirError
from parval.report.render import write_reports
from parval.rundir.layout import EVENTS, EVIDENCE


def load_run(run_dir: Path, rejudge: bool) -> dict[str, Any]:
    if not run_dir.is_dir():
        raise RunDirError(f"{run_dir}: no such run directory")
    if rejudge or not (run_dir / EVIDENCE).exists():
        if not (run_dir / EVENTS).exists():
            raise RunDirError(f"{run_dir}: no events.jsonl: not a parval run directory")
        from parval.judge import judge_run
        from parval.rundir.integrity import seal_run

        evidence = judge_run(run_dir)
        # The run directory's own report follows the new judgement, sealed like `parval run`.
        write_reports(run_dir, evidence)
        seal_run(run_dir)
        return evidence
    try:
        data: dict[str, Any] = json.loads((run_dir / EVIDENCE).read_text("utf-8"))
    except ValueError as exc:
        raise RunDirError(
            f"{run_dir / EVIDENCE}: not valid JSON ({exc})", hint="re-judge the recorded events with --rejudge"
        ) from None
    return data


def run_problems(run_dir: Path, ev: dict[str, Any]) -> list[str]:
    from parval.rundir.integrity import integrity_problems

    return integrity_problems(run_dir, ev)
