"""The rules a run is judged by are the ones sealed before its events.

The judges read a run's rules (bounds, tolerances, counts, memory limits) from its plan
snapshot, plan.json, written with the manifest before the first event. The manifest seals
it (`plan.snapshot_sha256`), and every judging and every explicit reseal records both the
manifest's and plan.json's hashes in the chain (parval.rundir.integrity). "Never loosen
tolerance after a mismatch"; "do not invent a passing bound after seeing it": a run whose
rules differ from those sealed before its events, or were resealed over, is never admission
evidence (parval.procedure.sealed_rules), whichever path reads it.

`rules_changes` names every sign of that, from the run directory alone:
* plan.json is not the snapshot the manifest sealed before the events;
* the chain's judge links name different manifests or plan snapshots (the rules changed
  between judgings: an explicit reseal let it through);
* an explicit reseal found plan.json or manifest.json modified or missing (runs recorded
  before the manifest sealed the snapshot);
* an explicit reseal could not compare them with what was sealed at all: the chain was gone
  or unreadable (the reseal began a new chain), so nothing recorded an earlier judging. Both
  files may then have been edited together (plan.json and the snapshot hash the manifest
  names), and the rules are *unknown*: never admission evidence either.
"""

from __future__ import annotations

import json
from pathlib import Path

from parval.jsontypes import JsonObject
from parval.rundir.files import sha256_file
from parval.rundir.integrity import CHAIN, LISTING, read_chain
from parval.rundir.layout import MANIFEST, PLAN_SNAPSHOT

RULES = PLAN_SNAPSHOT
SEALED_KEY = "snapshot_sha256"  # manifest.plan.<this>: plan.json's sha256 when the run began
RULE_FILES = (RULES, MANIFEST)
UNKNOWN = "rules unknown"  # how every reason of that last kind begins
# What a reseal that had nothing to compare with found lost.
_LOST = (f"missing: {LISTING}", f"missing: {CHAIN}", f"modified: {CHAIN}", f"modified: {LISTING}")


def rules_sha256(run_dir: Path) -> str | None:
    path = run_dir / RULES
    return sha256_file(path) if path.is_file() else None


def _sealed_snapshot(run_dir: Path) -> str | None:
    try:
        manifest = json.loads((run_dir / MANIFEST).read_text("utf-8"))
    except (OSError, ValueError):
        return None  # integrity checks name a missing or broken manifest
    plan = manifest.get("plan") if isinstance(manifest, dict) else None
    sealed = plan.get(SEALED_KEY) if isinstance(plan, dict) else None
    return sealed if isinstance(sealed, str) else None


def _differs(links: list[JsonObject], key: str) -> bool:
    seen = {str(link[key]) for link in links if link.get("kind") == "judge" and link.get(key)}
    return len(seen) > 1


def _resealed_over_rules(link: JsonObject) -> list[str]:
    """The rule files an explicit reseal found modified or missing."""
    resealed = link.get("resealed")
    found = resealed.get("found") if isinstance(resealed, dict) else None
    if not isinstance(found, list):
        return []
    hit = set()
    for problem in found:
        text = str(problem)
        for name in RULE_FILES:
            if text.startswith((f"modified: {name}", f"missing: {name}")):
                hit.add(name)
    return sorted(hit)


def _resealed_blind(link: JsonObject) -> bool:
    """An explicit reseal that had no earlier judging to compare the rules with: it began
    its chain (the chain was lost or unreadable), or says it could not compare."""
    resealed = link.get("resealed")
    if not isinstance(resealed, dict):
        return False
    return resealed.get("rules_compared") is False or link.get("prev") is None


def rules_changes(run_dir: Path) -> list[str]:
    """Every sign that the rules `run_dir` is judged by are not those sealed before its
    events (empty: none; see the module docstring)."""
    reasons: list[str] = []
    sealed, now = _sealed_snapshot(run_dir), rules_sha256(run_dir)
    if sealed is not None and now != sealed:
        reasons.append(
            f"{RULES} (the rules the judges read) is not the snapshot the manifest sealed before the "
            f"run's events (sealed {sealed[:12]}, now {(now or 'missing')[:12]})"
        )
    links, _ = read_chain(run_dir)
    if _differs(links, "rules_sha256"):
        reasons.append(f"{RULES} changed between judgings of this run (its chain names more than one)")
    if _differs(links, "manifest_sha256"):
        reasons.append(f"{MANIFEST}, which seals the rules, changed between judgings of this run")
    for link in links:
        resealed = link.get("resealed")
        why = resealed.get("reason") if isinstance(resealed, dict) else None
        files = _resealed_over_rules(link)
        if files:
            reasons.append(f"resealed over a changed {' and '.join(files)} (reason given: {why})")
        if _resealed_blind(link):
            found = resealed.get("found") if isinstance(resealed, dict) else None
            lost = [str(f) for f in found if str(f).startswith(_LOST)] if isinstance(found, list) else []
            reasons.append(
                f"{UNKNOWN}: resealed with no record of an earlier judging to compare {RULES} and {MANIFEST} "
                f"with ({'; '.join([*lost, f'reason given: {why}'])})"
            )
    return reasons
