"""`parval run PLAN --resume RUN`: continue an interrupted campaign.

Kept: every unit whose events are complete (a `unit_end`, whatever its outcome: a start
that failed stays failed; redoing it until it passes would be cherry-picking). Redone
from a fresh process: the unit that was running when parval stopped (its partial attempt
has no `run_end`, so the gates ignore it). Refused, with the reason (exit 2), when the
run directory is not a parval run, is already finished, was modified since it was last
judged, or when the manifest no longer matches what is on disk now (plan, executables,
model files, fixtures).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from parval.errors import ResumeRefused, RunDirError
from parval.evidence import EVENTS, MANIFEST, read_events
from parval.manifest import build_manifest, identity_fields
from parval.plan import Plan


def completed_units(events: list[dict[str, Any]]) -> set[str]:
    """Units with a recorded end (ok or not): these are kept, never re-run."""
    return {str(e["unit"]) for e in events if e.get("kind") == "unit_end" and "unit" in e}


def recorded_shard(events: list[dict[str, Any]]) -> tuple[int, int] | None:
    for e in events:
        if e.get("kind") == "campaign_start":
            shard = e.get("shard")
            return (int(shard[0]), int(shard[1])) if shard else None
    return None


def _short(value: Any) -> str:
    if isinstance(value, str) and len(value) == 64:
        return value[:12]
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def manifest_changes(old: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What differs between the run's manifest and one built from the files today."""
    changes: list[str] = []
    if old.get("plan", {}).get("sha256") != now["plan"]["sha256"]:
        changes.append(f"plan (sha256 {_short(old.get('plan', {}).get('sha256'))} → "
                       f"{_short(now['plan']['sha256'])})")
    try:
        a = identity_fields(old)
    except (KeyError, TypeError):
        return [*changes, "manifest.json (unreadable fields)"]
    b = identity_fields(now)
    for key in a:
        if a[key] != b[key]:
            changes.append(f"{key} ({_short(a[key])} → {_short(b[key])})")
    return changes


def prepare_resume(plan: Plan, run_dir: Path,
                   shard: tuple[int, int] | None = None) -> tuple[Path, set[str]]:
    """Check that `run_dir` can be continued with `plan`; return it and the units to skip."""
    if not run_dir.is_dir():
        raise RunDirError(f"{run_dir}: no such run directory")
    if not (run_dir / MANIFEST).exists() or not (run_dir / EVENTS).exists():
        raise RunDirError(f"{run_dir}: not a parval run directory (no manifest.json/events.jsonl)")
    try:
        old = json.loads((run_dir / MANIFEST).read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise RunDirError(f"{run_dir}/{MANIFEST}: unreadable ({exc})") from None
    if not isinstance(old, dict):
        raise RunDirError(f"{run_dir}/{MANIFEST}: not a JSON object")
    events = read_events(run_dir / EVENTS)  # CorruptEventLog (exit 2) names a damaged line
    ends = [e for e in events if e.get("kind") == "campaign_end"]
    if ends and ends[-1].get("finished"):
        raise ResumeRefused(f"{run_dir}: the campaign already finished; there is nothing to resume",
                            hint=f"`parval report {run_dir}` shows its evidence")
    from parval.integrity import chain_problems

    tampered = chain_problems(run_dir)
    if tampered:
        raise ResumeRefused(f"{run_dir}: the run directory changed since it was last judged: "
                            + "; ".join(tampered[:5]),
                            hint="evidence that was modified cannot be continued; start a new run")
    changes = manifest_changes(old, build_manifest(plan))
    if changes:
        raise ResumeRefused(f"{run_dir}: manifest no longer matches: {', '.join(changes)} changed",
                            hint="start a new run; a changed plan, executable, model or fixture "
                                 "inherits no evidence")
    was = recorded_shard(events)
    if shard is not None and shard != was:
        raise ResumeRefused(f"{run_dir}: --shard {shard[0]}/{shard[1]} differs from the run's "
                            f"shard {'none' if was is None else f'{was[0]}/{was[1]}'}",
                            hint="resume without --shard")
    return run_dir, completed_units(events)
