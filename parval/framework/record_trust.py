"""framework_checks: the shared F1-F6 record a model's evidence references (E3, E4), and X4.

A record is used only after it is shown to be one: it matches schemas/framework.schema.json,
was made under the procedure version this parval implements (never another, not even the
run's own older one), is unchanged when it sits in a run directory
with an integrity listing/chain, tested this candidate executable on this backend and
platform (and source commit, when both name one), and covers every count this run admits:
F1 FIFO and the first-load pool drain apply at every flagged count, count 1 included, so a
count missing from `identity.counts` keeps those entries PENDING at that count (it cannot be
admitted). Any failed check makes the framework entries PENDING with the reason; it is never
a model FAIL. An X4 result must match schemas/protected.schema.json and name the candidate
source commit and the upstream commit it compared; one that does not, or whose candidate
commit differs from the plan's `identity.candidate.source_commit`, is PENDING.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sized
from dataclasses import replace
from pathlib import Path
from typing import Any

from parval import PROCEDURE_VERSION
from parval.framework.record_identity import (
    flags_problem,
    integrity_problems,
    machine_of,
    other_device,
    other_machine,
    provenance_note,
    record_file,
    reuse_problem,
    same_commit,
    unnamed_device,
)
from parval.framework.reuse import ReuseDecision
from parval.jsonread import get, iterate
from parval.plan.load import path_shown
from parval.procedure import judge_shape as shape
from parval.procedure.assertion_ids import FRAMEWORK_GATE
from parval.procedure.entry import PROTECTED, X4_CMD, Declaration, Entry
from parval.procedure.version import is_current
from parval.status import Result, Status, combine, pending

# The F entries whose evidence is per flagged count (F1 FIFO, first-load pool drain).
COUNT_SCOPED: tuple[str, ...] = ("F1.fifo", "F2.first_publish")


def load_record(path: Path) -> dict[str, Any] | None:
    """The record at `path`, or `path/record.json` when given the framework run directory."""
    try:
        data = json.loads(record_file(path).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def framework_checks(
    record_path: str | None,
    manifest: dict[str, Any],
    protected: dict[str, Any] | None,
    *,
    plan: Mapping[str, object] | None = None,
    counts: list[int] | None = None,
    plan_dir: Path | None = None,
) -> tuple[list[Result], dict[str, Any]]:
    """(F results + X4, the framework_checks object for the evidence).

    `counts` are the counts this model run may admit (default: the manifest's plan counts);
    `plan` is the plan snapshot (its `identity.candidate.source_commit`, when present, must
    match the record's and the X4 result's candidate commit; its `framework.reuse` asks for
    a reviewed reuse of a record made for another build, see parval/framework/reuse.py);
    `plan_dir`: the folder the plan's relative `framework.record` was resolved from."""
    if plan is None:  # the manifest's copy of the plan settings this check reads
        plan = {
            "framework": (manifest.get("settings") or {}).get("framework"),
            "model": manifest.get("model"),
            "identity": manifest.get("identity"),
        }
    cand = manifest.get("executables", {}).get("candidate", {}).get("sha256")
    backend = manifest.get("platform", {}).get("backend")
    run_counts = sorted(
        int(n) for n in (counts if counts is not None else (manifest.get("settings") or {}).get("counts") or [])
    )
    commit = candidate_commit(plan, manifest)
    results: list[Result] = []
    info: dict[str, Any] = {
        "record": None,
        "scope": {"candidate_sha256": cand, "backend": backend, "counts": run_counts, "candidate_commit": commit},
    }
    reuse = _reuse(plan, manifest)
    if reuse is not None:
        info["reuse"] = reuse.to_json()
        record_path = reuse.record
    record = load_record(Path(record_path)) if record_path else None
    reason = ""
    if reuse is not None and not reuse.reused:
        reason = reuse.reason
    elif record_path is None:
        reason = "no framework record referenced (plan framework.record); run `parval framework PLAN`"
    elif record is None:
        written = get(plan.get("framework") or {}, "record")
        shown = (
            path_shown(written, plan_dir)
            if reuse is None and plan_dir is not None and isinstance(written, str)
            else str(record_path)
        )
        reason = f"framework record {shown} is missing or unreadable"
    else:
        ident = record.get("identity") if isinstance(record.get("identity"), dict) else {}
        info["record"] = {
            "path": record_path,
            "identity": ident,
            "id": record.get("record_id"),
            "procedure_version": record.get("procedure_version"),
        }
        flags = candidate_flags(plan, manifest)
        reason = reason or record_problem(record, record_file(Path(record_path)), manifest, commit, reuse, flags)
        # Group summaries say where a pass is not a blanket pass (partial contract areas).
        if isinstance(record.get("groups"), dict):
            info["record"]["groups"] = {
                g: {k: v.get(k) for k in ("status", "coverage", "blanket_pass", "summary")}
                for g, v in record["groups"].items()
                if isinstance(v, dict)
            }
        if isinstance(record.get("verdict"), dict):
            info["record"]["verdict"] = record["verdict"].get("line")
    if reason:
        info["trusted"] = False
        info["untrusted_reason"] = reason
        results = [pending(fid, reason) for fid in FRAMEWORK_GATE]
    else:
        assert record is not None and info["record"] is not None
        info["trusted"] = True
        rid = info["record"]["id"]
        by_id = {r["id"]: Result.from_json(r) for r in record.get("assertions", [])}
        for fid in FRAMEWORK_GATE:
            r = by_id.get(fid) or pending(fid, "not in the framework record")
            evidence = {**r.evidence, "record": rid}
            limitations = list(r.limitations)
            if (note := provenance_note(info["record"]["identity"], manifest)) is not None:
                limitations.append(note)
            if reuse is not None:
                evidence["reused_from"] = {"record": rid, "record_commit": reuse.record_commit}
                carried, why = reuse.carried(fid)
                if not carried:
                    results.append(pending(fid, why, reused_from=evidence["reused_from"]))
                    continue
                limitations.append(reuse.reason)
                if reuse.adapter_changes:
                    limitations.append(f"carried over the adapter-only change: {why}")
                if reuse.family in reuse.adapter_changes and not commit:
                    limitations.append(
                        "the plan names no identity.candidate.source_commit, "
                        f"so this run is not shown to be the {reuse.family} model gate "
                        f"on build {reuse.candidate_commit[:12]}"
                    )
            results.append(replace(r, evidence=evidence, limitations=limitations, count=None))
        covered, missing, why = coverage(record, run_counts)
        info["coverage"] = {
            "record_counts": covered,
            "run_counts": run_counts,
            "missing": missing,
            "count_scoped": list(COUNT_SCOPED),
        }
        for n in missing:
            for fid in COUNT_SCOPED:
                r = pending(
                    fid,
                    f"framework record {rid} does not cover count {n} ({why}); F1 FIFO and "
                    "the first-load pool drain apply at every flagged count, so count "
                    f"{n} cannot be admitted on this record",
                    record=rid,
                    missing_counts=missing,
                )
                results.append(replace(r, count=n))
    results.append(x4_result(protected, commit))
    info["status"] = str(combine(r.status for r in results))
    info["assertions"] = list(dict.fromkeys(r.id for r in results))
    return results, info


# -- the record's checks --------------------------------------------------------------------
def _reuse(plan: Mapping[str, object] | None, manifest: dict[str, Any]) -> ReuseDecision | None:
    from parval.framework.reuse import decide

    fw = (plan or {}).get("framework")
    cfg = fw.get("reuse") if isinstance(fw, dict) else None
    if not isinstance(cfg, dict):
        return None
    plan_path = (manifest.get("plan") or {}).get("path")
    base = Path(plan_path).parent if plan_path else Path(".")
    model = (plan or {}).get("model") or {}
    family = str(get(model, "family") or manifest.get("model", {}).get("family"))
    return decide(cfg, base, family)


def record_problem(
    record: dict[str, Any],
    path: Path,
    manifest: dict[str, Any],
    commit: str | None,
    reuse: ReuseDecision | None = None,
    flags: object = None,
) -> str:
    """Why this record cannot be used for this run ('' when it can), first problem only.

    Under an accepted reuse the record is for another executable by design: instead of the
    executable hash, its source commit must be the reviewed one and the plan's candidate
    commit (when named) the one the review diffed to."""
    from parval.plan.schemas import schema_errors

    errors = schema_errors(record, "framework")
    if errors:
        more = f" (+{len(errors) - 3} more)" if len(errors) > 3 else ""
        return f"framework record {path} does not match schemas/framework.schema.json: " + "; ".join(errors[:3]) + more
    # Only this parval's procedure version is current; a run's own older version is no licence.
    if not is_current(record.get("procedure_version")):
        return (
            f"framework record was made under procedure version {record.get('procedure_version')}, "
            f"this parval implements {PROCEDURE_VERSION}: "
            "evidence of another procedure version is historical, not current"
        )
    tampered = integrity_problems(path)
    if tampered:
        return f"framework record {path} not accepted: " + "; ".join(tampered[:5])
    ident = record["identity"]
    cand = manifest.get("executables", {}).get("candidate", {}).get("sha256")
    backend = manifest.get("platform", {}).get("backend")
    recorded = ident.get("source_commit")
    if reuse is not None:
        if (why := reuse_problem(reuse, recorded, commit, cand)) is not None:
            return f"framework record {path}: {why}"
    elif ident.get("candidate_sha256") != cand:
        return (
            "framework record is for another executable "
            f"({str(ident.get('candidate_sha256'))[:12]} "
            f"!= {str(cand)[:12]})"
        )
    if (why := flags_problem(ident.get("build_flags"), flags, reuse is not None)) is not None:
        return f"framework record {path} {why}"
    if ident.get("backend") != backend:
        return f"framework record is for backend {ident.get('backend')}, this run uses {backend}"
    if (other := other_machine(ident, manifest)) is not None:
        return f"framework record is for platform {other}, this run uses {machine_of(manifest)}"
    if (other := other_device(ident, manifest)) is not None:
        return f"framework record is for {other}: device evidence does not carry over"
    if (unnamed := unnamed_device(ident, manifest)) is not None:
        return f"framework record names no {unnamed}: device evidence is trusted only for the device it names"
    if reuse is None and commit and isinstance(recorded, str) and recorded and not same_commit(recorded, commit):
        return (
            f"framework record was made from source commit {recorded[:12]}, the plan names "
            f"candidate commit {commit[:12]}"
        )
    return ""


def coverage(record: Mapping[str, object], run_counts: list[int]) -> tuple[list[int], list[int], str]:
    """(counts the record covers, run counts it does not cover, why)."""
    raw = get(record.get("identity") or {}, "counts")
    counts = [n for n in raw if isinstance(n, int) and not isinstance(n, bool)] if isinstance(raw, list) else []
    if not isinstance(raw, list) or len(counts) != len(raw):
        return [], list(run_counts), "the record has no identity.counts, so it covers no count"
    covered = sorted(set(counts))
    return covered, [n for n in run_counts if n not in covered], f"identity.counts is {covered}"


# -- candidate source commit ----------------------------------------------------------------
def candidate_commit(plan: Mapping[str, object] | None, manifest: Mapping[str, object]) -> str | None:
    """`identity.candidate.source_commit` from the plan snapshot (or the manifest's copy)."""
    for source in (plan, manifest):
        ident = source.get("identity") if isinstance(source, dict) else None
        cand = ident.get("candidate") if isinstance(ident, dict) else None
        value = cand.get("source_commit") if isinstance(cand, dict) else None
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def candidate_flags(plan: Mapping[str, object] | None, manifest: Mapping[str, object]) -> object:
    """`identity.candidate.build_flags` from the plan snapshot (or the manifest's copy)."""
    for source in (plan, manifest):
        ident = source.get("identity") if isinstance(source, dict) else None
        cand = ident.get("candidate") if isinstance(ident, dict) else None
        value = cand.get("build_flags") if isinstance(cand, dict) else None
        if value:
            return value
    return None


# -- X4 -------------------------------------------------------------------------------------
@shape.judge(
    "X4",
    Declaration(
        "commit",
        (PROTECTED,),
        reproduce=X4_CMD,
        notes=(
            "PENDING when no result is attached, it does not match the schema, or it "
            "checked another candidate commit than identity.candidate.source_commit",
            "judged from the verify-protected result itself (changed files, legacy runtime check), never "
            "from the status of a wrapper around it",
        ),
    ),
)
def x4_result(protected: Mapping[str, object] | None, commit: str | None) -> Result:
    if protected is None:
        return pending(
            "X4",
            "no verify-protected result attached (plan framework.protected); run "
            "`parval verify-protected --upstream <sha> --output x4.json`",
        )
    from parval.plan.schemas import schema_errors

    if not isinstance(protected, dict):
        return pending("X4", "the attached verify-protected result is not a JSON object")
    # Either the verify-protected JSON itself or an X4 entry carrying it as evidence.
    raw = protected.get("evidence") if "id" in protected and "assertion" not in protected else protected
    raw = raw if isinstance(raw, dict) else {}
    again = "re-run `parval verify-protected --repo <candidate checkout> --upstream <sha> --output x4.json`"
    errors = schema_errors(raw, "protected")
    if errors:
        return pending(
            "X4",
            "verify-protected result does not match schemas/protected.schema.json: "
            + "; ".join(errors[:3])
            + f"; {again}",
        )
    cand = raw.get("candidate_commit")
    if not isinstance(cand, str) or not cand:
        return pending(
            "X4",
            "verify-protected result does not name the candidate source commit it "
            f"checked (candidate_commit), so it cannot be tied to this build; {again}",
            upstream=raw.get("upstream"),
        )
    if commit and not same_commit(cand, commit):
        return pending(
            "X4",
            f"verify-protected checked candidate commit {cand[:12]}, the plan names "
            f"{commit[:12]} (identity.candidate.source_commit); {again} on that commit",
            upstream=raw.get("upstream"),
            candidate_commit=cand,
        )
    # Judged from the verify-protected result itself, never from a wrapper's own status.
    x4 = x4_from_protected(raw)
    limitations = list(x4.limitations)
    if raw.get("candidate_dirty"):
        limitations.append(
            "the candidate working tree had uncommitted changes when checked: the commit alone does not reproduce it"
        )
    if not commit:
        limitations.append(
            "the plan names no candidate source commit "
            "(identity.candidate.source_commit) to tie this check to the tested build"
        )
    evidence = {**x4.evidence, "upstream": raw.get("upstream"), "candidate_commit": cand}
    return replace(x4, evidence=evidence, limitations=limitations)


# The registry entry the judge above declares.
ENTRIES: tuple[Entry, ...] = shape.entries_of({"X4": x4_result})


def _count(value: object) -> int:
    """`len(value)` of a recorded list."""
    if isinstance(value, Sized):
        return len(value)
    raise TypeError(f"object of type '{type(value).__name__}' has no len()")


def x4_from_protected(data: Mapping[str, object]) -> Result:
    """The X4 verdict on one schema-valid verify-protected result, which it keeps whole as
    evidence: the one builder, for `parval run`, `parval report` and the command's output."""
    changed = [str(get(c, "path")) for c in iterate(data.get("changed") or [])]
    legacy_status = get(data.get("legacy_runtime") or {}, "status")
    checked = _count(data.get("checked_paths") or [])
    repo = shlex.quote(str(data.get("repo") or "."))
    again = f"parval verify-protected --repo {repo} --upstream {data.get('upstream')}"
    # A FAIL names what differed (a changed protected file, a legacy runtime beyond its
    # rejection block); a PASS needs protected paths that were actually compared.
    if changed or legacy_status == "FAIL":
        status = Status.FAIL
    elif data.get("status") != "PASS":
        return pending(
            "X4",
            f"the verify-protected result says {data.get('status')} but names no changed protected file and "
            f"no legacy runtime difference; re-run `{again}`",
            upstream=data.get("upstream"),
        )
    elif checked == 0 or legacy_status != "PASS":
        return pending(
            "X4",
            "the verify-protected result compared no protected path with upstream (checked_paths is empty); "
            f"name the protected paths (its configuration) and re-run `{again}`",
            upstream=data.get("upstream"),
        )
    else:
        status = Status.PASS
    if changed:
        more = f" (+{len(changed) - 10} more)" if len(changed) > 10 else ""
        found = f"{len(changed)} protected file(s) changed: {', '.join(changed[:10])}{more}"
    else:
        found = f"{_count(data.get('checked_paths') or [])} protected path(s) identical to upstream"
    legacy = data.get("legacy_runtime") or {}
    reason = f"{found}; legacy runtime {get(legacy, 'path')}: {get(legacy, 'reason')}"
    evidence: dict[str, object] = dict(data)
    if status is Status.PASS:
        evidence["rests_on"] = {"checked protected paths": _count(data.get("checked_paths") or [])}
    else:
        evidence["violation"] = {"changed": changed, "legacy_runtime": get(legacy, "status")}
    return Result(
        "X4",
        status,
        reason,
        evidence,
        reproduction=again,
        limitations=[
            "protected files are compared as git sees them (after clean "
            "filters such as core.autocrlf); files ignored by .gitignore are "
            "not checked"
        ],
    )
