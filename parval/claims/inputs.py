"""Is a combination's run directory up to date? What `parval catalogue run` does with it.

A combination's *inputs* are what its evidence is evidence of, exactly what `parval run
--resume` checks (`parval.rundir.resume.manifest_changes`): the effective plan's sha256
(the claim's plan or template with its overrides and the catalogue's settings: backend,
executables' paths, mode, counts, source commits, framework record paths), the sha256 of
the baseline and candidate executables, of the model checkpoint and auxiliary files and
of every fixture, the model id and the backend; plus the procedure version the evidence
was made under. The contents of the framework record and X4 result are inputs of the
judgement, not of the campaign: `parval report RUN --rejudge` applies a new record.

* no run directory yet: RUN;
* a finished, intact run with unchanged inputs: SKIP (up to date);
* an interrupted run with unchanged inputs: RESUME (completed starts are kept); a finished
  one that was never judged: JUDGE;
* changed inputs, or a run directory modified after it was judged: RERUN, after moving
  the old directory to `<out>/superseded/` (evidence is never deleted or overwritten).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from parval import PROCEDURE_VERSION
from parval.errors import RunDirError
from parval.plan.load import Plan
from parval.rundir.events import read_events
from parval.rundir.layout import EVENTS, EVIDENCE, MANIFEST

SUPERSEDED = "superseded"


class Action(StrEnum):
    RUN = "run"
    SKIP = "up to date"
    RESUME = "resume"
    JUDGE = "judge"
    RERUN = "rerun"


@dataclass(frozen=True)
class RunState:
    action: Action
    reason: str


def _finished(run_dir: Path) -> bool:
    ends = [e for e in read_events(run_dir / EVENTS) if e.get("kind") == "campaign_end"]
    return bool(ends and ends[-1].get("finished"))


def input_changes(plan: Plan, run_dir: Path) -> list[str]:
    """The inputs that differ between the run directory's manifest and the files today."""
    from parval.rundir.manifest import build_manifest
    from parval.rundir.resume import manifest_changes

    try:
        old: object = json.loads((run_dir / MANIFEST).read_text("utf-8"))
    except (OSError, ValueError) as exc:
        return [f"manifest.json (unreadable: {exc})"]
    if not isinstance(old, dict):
        return ["manifest.json (not a JSON object)"]
    changes = manifest_changes(old, build_manifest(plan))
    if old.get("procedure_version") != PROCEDURE_VERSION:
        changes.append(f"procedure version ({old.get('procedure_version')} → {PROCEDURE_VERSION})")
    return changes


def check_run_dir(run_dir: Path) -> None:
    """RunDirError when `run_dir` holds something other than a parval run (cheap: checked
    for every combination before anything runs)."""
    if not run_dir.exists() or (run_dir.is_dir() and not any(run_dir.iterdir())):
        return
    if not run_dir.is_dir() or not (run_dir / MANIFEST).exists() or not (run_dir / EVENTS).exists():
        raise RunDirError(
            f"{run_dir}: exists but is not a parval run directory (no manifest.json/events.jsonl)",
            hint="move it away, or choose another --out",
        )


def run_state(plan: Plan, run_dir: Path) -> RunState:
    """What to do with `run_dir` for `plan` (module docstring)."""
    if not run_dir.exists() or (run_dir.is_dir() and not any(run_dir.iterdir())):
        return RunState(Action.RUN, "no evidence yet")
    check_run_dir(run_dir)
    changes = input_changes(plan, run_dir)
    if changes:
        return RunState(Action.RERUN, "inputs changed: " + ", ".join(changes))
    if not _finished(run_dir):
        return RunState(Action.RESUME, "interrupted; inputs unchanged")
    if not (run_dir / EVIDENCE).exists():
        return RunState(Action.JUDGE, "finished but not judged; inputs unchanged")
    from parval.report.load import run_problems

    try:
        evidence = json.loads((run_dir / EVIDENCE).read_text("utf-8"))
    except (OSError, ValueError) as exc:
        return RunState(Action.RERUN, f"evidence.json unreadable ({exc})")
    problems = run_problems(run_dir, evidence)
    if problems:
        return RunState(Action.RERUN, "run directory modified after judging: " + "; ".join(problems[:3]))
    return RunState(Action.SKIP, f"inputs unchanged since {evidence.get('generated_at', 'it was judged')}")


def set_aside(run_dir: Path, out: Path) -> Path:
    """Move a run directory that no longer stands for its combination to out/superseded/."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    target = out / SUPERSEDED / f"{run_dir.name}-{stamp}"
    for i in range(1, 1000):
        if not target.exists():
            break
        target = out / SUPERSEDED / f"{run_dir.name}-{stamp}-{i}"
    target.parent.mkdir(parents=True, exist_ok=True)
    run_dir.rename(target)
    return target
