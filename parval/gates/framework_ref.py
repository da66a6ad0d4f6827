"""framework_checks: the shared F1-F6 record a model's evidence references (E3, E4).

No record, or a record for another executable or backend, makes every applicable F
assertion PENDING — which blocks admission but is never a model FAIL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from parval.assertions import FRAMEWORK_GATE
from parval.status import Result, Status, combine, pending


def load_record(path: Path) -> dict[str, Any] | None:
    """The record at `path`, or `path/record.json` when given the framework run directory."""
    if path.is_dir():
        path = path / "record.json"
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def framework_checks(record_path: str | None, manifest: dict[str, Any],
                     protected: dict[str, Any] | None) -> tuple[list[Result], dict[str, Any]]:
    """(F results + X4, the framework_checks object for the evidence)."""
    cand = manifest.get("executables", {}).get("candidate", {}).get("sha256")
    backend = manifest.get("platform", {}).get("backend")
    results: list[Result] = []
    info: dict[str, Any] = {"record": None, "scope": {"candidate_sha256": cand, "backend": backend}}
    record = load_record(Path(record_path)) if record_path else None
    reason = ""
    if record_path is None:
        reason = "no framework record referenced (plan framework.record); run `parval framework PLAN`"
    elif record is None:
        reason = f"framework record {record_path} is missing or unreadable"
    else:
        ident = record.get("identity", {})
        info["record"] = {"path": record_path, "identity": ident, "id": record.get("record_id")}
        if ident.get("candidate_sha256") != cand:
            reason = (f"framework record is for another executable ({str(ident.get('candidate_sha256'))[:12]} "
                      f"!= {str(cand)[:12]})")
        elif ident.get("backend") != backend:
            reason = f"framework record is for backend {ident.get('backend')}, this run uses {backend}"
        elif (other := _other_machine(ident, manifest)) is not None:
            reason = f"framework record is for platform {other}, this run uses {_machine(manifest)}"
        # Group summaries say where a pass is not a blanket pass (partial contract areas).
        if isinstance(record.get("groups"), dict):
            info["record"]["groups"] = {g: {k: v.get(k) for k in ("status", "coverage", "blanket_pass", "summary")}
                                        for g, v in record["groups"].items() if isinstance(v, dict)}
        if isinstance(record.get("verdict"), dict):
            info["record"]["verdict"] = record["verdict"].get("line")
    if reason:
        results = [pending(fid, reason) for fid in FRAMEWORK_GATE]
    else:
        assert record is not None
        by_id = {r["id"]: Result.from_json(r) for r in record.get("assertions", [])}
        for fid in FRAMEWORK_GATE:
            r = by_id.get(fid) or pending(fid, "not in the framework record")
            r.evidence = {**r.evidence, "record": info["record"]["id"] if info["record"] else None}
            results.append(r)
    if protected is not None:
        x4 = Result.from_json(protected) if "id" in protected else _x4_from_protected(protected)
    else:
        x4 = pending("X4", "no verify-protected result attached (plan framework.protected); run "
                     "`parval verify-protected --upstream <sha> --output x4.json`")
    results.append(x4)
    info["status"] = str(combine(r.status for r in results))
    info["assertions"] = [r.id for r in results]
    return results, info


def _machine(manifest: dict[str, Any]) -> Any:
    return manifest.get("platform", {}).get("machine")


def _other_machine(ident: dict[str, Any], manifest: dict[str, Any]) -> str | None:
    """The record's machine architecture when both sides name one and they differ."""
    recorded = (ident.get("platform") or {}).get("machine") if isinstance(ident.get("platform"), dict) else None
    here = _machine(manifest)
    if recorded and here and recorded != here:
        return str(recorded)
    return None


def _x4_from_protected(data: dict[str, Any]) -> Result:
    status = Status.PASS if data.get("status") == "PASS" else Status.FAIL
    changed = [c.get("path") for c in data.get("changed", [])]
    reason = ("protected files identical to upstream; legacy runtime differs only by the rejection block"
              if status is Status.PASS else f"changed protected files: {changed}; legacy runtime: "
              f"{(data.get('legacy_runtime') or {}).get('status')}")
    return Result("X4", status, reason, {"upstream": data.get("upstream"), "changed": changed},
                  reproduction=f"parval verify-protected --upstream {data.get('upstream')}")
