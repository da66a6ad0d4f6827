"""`parval run --resume RUN`: continue an interrupted campaign.

The plan is the one the run directory keeps (`plan.yaml`, its relative paths resolved from
where the plan was when the run started); a plan named as well must be that same plan, or
the resume is refused naming what differs.

Kept: every unit whose events are complete (a `unit_end`, whatever its outcome: a start
that failed stays failed; redoing it until it passes would be cherry-picking). Redone
from a fresh process: the unit that was running when parval stopped (its partial attempt
has no `run_end`, so the gates ignore it). Refused, with the reason (exit 2), when the
run directory is not a parval run, is already finished, was modified since it was last
judged, or when the manifest no longer matches what is on disk now (plan, executables,
model files, fixtures).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from parval.errors import ResumeRefused, RunDirError
from parval.jsonread import get
from parval.plan.load import Plan, load_plan, parse_plan_text
from parval.rundir.events import campaign_shard, read_events
from parval.rundir.layout import EVENTS, MANIFEST
from parval.rundir.manifest import Manifest, build_manifest, identity_fields

PLAN_COPY = "plan.yaml"


def completed_units(events: Iterable[Mapping[str, object]]) -> set[str]:
    """Units with a recorded end (ok or not): these are kept, never re-run."""
    return {str(e["unit"]) for e in events if e.get("kind") == "unit_end" and "unit" in e}


def _short(value: object) -> str:
    if isinstance(value, str) and len(value) == 64:
        return value[:12]
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def manifest_changes(old: Mapping[str, object], now: Manifest) -> list[str]:
    """What differs between the run's manifest and one built from the files today."""
    changes: list[str] = []
    old_plan_sha = get(old.get("plan", {}), "sha256")
    if old_plan_sha != now["plan"]["sha256"]:
        changes.append(f"plan (sha256 {_short(old_plan_sha)} → {_short(now['plan']['sha256'])})")
    try:
        a = identity_fields(old)
    except (KeyError, TypeError):
        return [*changes, "manifest.json (unreadable fields)"]
    b = identity_fields(now)
    for key in a:
        if a[key] != b[key]:
            changes.append(f"{key} ({_short(a[key])} → {_short(b[key])})")
    return changes


def prepare_resume(plan: Plan, run_dir: Path, shard: tuple[int, int] | None = None) -> tuple[Path, set[str]]:
    """Check that `run_dir` can be continued with `plan`; return it, made absolute (servers
    run with their own directory as the working directory, so a relative run directory
    would be resolved a second time from there), and the units to skip."""
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
        raise ResumeRefused(
            f"{run_dir}: the campaign already finished; there is nothing to resume",
            hint=f"`parval report {run_dir}` shows its evidence",
        )
    from parval.rundir.integrity import chain_problems

    tampered = chain_problems(run_dir)
    if tampered:
        raise ResumeRefused(
            f"{run_dir}: the run directory changed since it was last judged: " + "; ".join(tampered[:5]),
            hint="evidence that was modified cannot be continued; start a new run",
        )
    changes = manifest_changes(old, build_manifest(plan))
    if changes:
        raise ResumeRefused(
            f"{run_dir}: manifest no longer matches: {', '.join(changes)} changed",
            hint="start a new run; a changed plan, executable, model or fixture inherits no evidence",
        )
    was = campaign_shard(events)
    if shard is not None and shard != was:
        raise ResumeRefused(
            f"{run_dir}: --shard {shard[0]}/{shard[1]} differs from the run's "
            f"shard {'none' if was is None else f'{was[0]}/{was[1]}'}",
            hint="resume without --shard",
        )
    return run_dir.resolve(), completed_units(events)


def resume_plan(run_dir: Path, given: Path | None) -> Plan:
    """The plan `run_dir` was started with (or `given`, when it is the same plan)."""
    stored = run_dir / PLAN_COPY
    if not run_dir.is_dir():
        raise RunDirError(f"{run_dir}: no such run directory")
    if not stored.is_file():
        raise RunDirError(
            f"{run_dir}: holds no {PLAN_COPY} (not a parval run directory, or one from before runs kept their plan)",
            hint="name the plan: parval run PLAN --resume RUN",
        )
    try:
        manifest = json.loads((run_dir / MANIFEST).read_text("utf-8"))
        origin = Path(str(manifest["plan"]["path"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RunDirError(
            f"{run_dir}/{MANIFEST}: cannot tell where the plan was ({exc})",
            hint="name the plan: parval run PLAN --resume RUN",
        ) from None
    if given is None:
        return load_plan(stored, located_at=origin)
    plan = load_plan(given)
    kept = stored.read_text("utf-8")
    if plan.sha256 != hashlib.sha256(kept.encode()).hexdigest():
        diffs = plan_differences(
            parse_plan_text(kept, str(stored)), parse_plan_text(given.read_text("utf-8"), str(given))
        )
        what = ", ".join(diffs) if diffs else "its text (comments or layout; the values are the same)"
        raise ResumeRefused(
            f"{given}: not the plan {run_dir} was started with: {what} differ(s)",
            hint=f"resume with the run's own plan: parval run --resume {run_dir}",
        )
    return plan


def plan_differences(old: object, new: object, where: str = "") -> list[str]:
    """Dotted paths of the values that differ between two parsed plans (at most 10)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            path = f"{where}.{key}" if where else str(key)
            if key not in old or key not in new:
                out.append(path)
            else:
                out += plan_differences(old[key], new[key], path)
        return out[:10]
    return [] if old == new else [where or "(the whole plan)"]
