"""`parval run --resume RUN`: keep the starts whose events are complete, redo the rest from
fresh processes, refuse when the manifest no longer matches what is on disk now."""

from __future__ import annotations

import json
from pathlib import Path

from parval.errors import ResumeRefused, RunDirError
from parval.evidence import EVENTS, MANIFEST, read_events
from parval.manifest import build_manifest, identity_fields
from parval.plan import Plan


def completed_units(run_dir: Path) -> set[str]:
    done: set[str] = set()
    for e in read_events(run_dir / EVENTS):
        if e.get("kind") == "unit_end" and e.get("ok"):
            done.add(str(e["unit"]))
    return done


def prepare_resume(plan: Plan, run_dir: Path) -> tuple[Path, set[str]]:
    if not (run_dir / MANIFEST).exists() or not (run_dir / EVENTS).exists():
        raise RunDirError(f"{run_dir}: not a parval run directory (no manifest.json/events.jsonl)")
    old = json.loads((run_dir / MANIFEST).read_text())
    if old["plan"]["sha256"] != plan.sha256:
        raise ResumeRefused(f"{run_dir}: the plan changed since the run started "
                            f"(sha256 {old['plan']['sha256'][:12]} → {plan.sha256[:12]})",
                            hint="start a new run; evidence from another plan cannot be mixed")
    now = build_manifest(plan)
    a, b = identity_fields(old), identity_fields(now)
    changed = [k for k in a if a[k] != b[k]]
    if changed:
        raise ResumeRefused(f"{run_dir}: manifest no longer matches: {', '.join(changed)} changed",
                            hint="start a new run; new executables or files inherit no evidence")
    return run_dir, completed_units(run_dir)
