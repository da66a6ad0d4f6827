"""Schema-valid synthetic framework records and verify-protected results for tests whose
verdict must depend on the model gate alone (the framework tests cover real records)."""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

from parval import PROCEDURE_VERSION
from parval.procedure.assertion_ids import FRAMEWORK_GATE
from parval.rundir.manifest import driver_version, gpu_info

UPSTREAM = "0" * 40
CANDIDATE_COMMIT = "1" * 40
ALL_COUNTS = list(range(1, 17))


def framework_record(
    candidate_sha256: str,
    *,
    backend: str = "cpu",
    counts: list[int] | None = ALL_COUNTS,
    statuses: dict[str, str] | None = None,
    record_id: str = "fw-synthetic",
    **identity: Any,
) -> dict[str, Any]:
    """A record as `parval framework` writes it, for `candidate_sha256` on `backend`,
    covering `counts` (default 1-16; None: no identity.counts); `statuses` overrides single
    assertions (default PASS). Device 0, this machine's driver and GPUs unless `identity`
    says otherwise (None: the record does not name them)."""
    status = {fid: "PASS" for fid in FRAMEWORK_GATE}
    status.update(statuses or {})
    groups: dict[str, Any] = {}
    for fid, st in status.items():
        g = groups.setdefault(
            fid.split(".")[0],
            {"status": "PASS", "assertions": [], "coverage": "full", "blanket_pass": True, "summary": "synthetic"},
        )
        g["assertions"].append(fid)
        if st != "PASS":
            g["status"], g["blanket_pass"] = st, False
    ident: dict[str, Any] = {
        "candidate_sha256": candidate_sha256,
        "candidate_path": "/synthetic/audiocpp_server",
        "source_commit": None,
        "backend": backend,
        "platform": {"os": "synthetic", "machine": platform.machine()},
        "plan_sha256": "e" * 64,
        "counts": None if counts is None else list(counts),
        "device": 0,
        "driver": driver_version(backend),
        "gpu": gpu_info(),
    }
    ident.update(identity)
    for key in ("counts", "device", "driver", "gpu"):
        if ident.get(key) is None:
            del ident[key]
    worst = "FAIL" if "FAIL" in status.values() else "PENDING" if set(status.values()) - {"PASS"} else "PASS"
    return {
        "schema_version": 1,
        "kind": "parval-framework-record",
        "record_id": record_id,
        "procedure_version": PROCEDURE_VERSION,
        "created_at": "20261201T000000Z",
        "identity": ident,
        "scope": {"capacity": 16, "counts_tested": ident.get("counts", []), "ui_management": True, "model": {}},
        "contract": {"version": "synthetic", "areas": {}},
        "assertions": [
            {
                "id": fid,
                "status": st,
                "applicable": True,
                "reason": "synthetic record",
                "evidence": {},
                "reproduction": "synthetic",
                "limitations": [],
            }
            for fid, st in status.items()
        ],
        "groups": groups,
        "probes": [],
        "ctest_runs": [],
        "verdict": {"status": worst, "exit_code": {"PASS": 0, "FAIL": 1}.get(worst, 3), "line": worst},
    }


def seal(directory: Path) -> None:
    """Seal a hand-made run directory as a first judging does (listing, chain, seal)."""
    from parval.rundir.integrity import seal_run, write_listing

    write_listing(directory, first=True)
    seal_run(directory)


def write_record_dir(directory: Path, record: dict[str, Any]) -> Path:
    """`record` as `parval framework` leaves it: record.json inside its run directory, with
    events, a manifest and the listing/chain that seal it (a model run uses a record only
    there). Returns the directory."""
    from parval.rundir.integrity import write_listing

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "events.jsonl").write_text(
        json.dumps({"kind": "framework_start", "seq": 1, "t": 0.0})
        + "\n"
        + json.dumps({"kind": "framework_end", "seq": 2, "t": 1.0, "record_id": record.get("record_id")})
        + "\n"
    )
    (directory / "manifest.json").write_text(json.dumps({"schema_version": 1, "synthetic": True}))
    (directory / "record.json").write_text(json.dumps(record))
    write_listing(directory, first=True)
    return directory


def x4_json(
    status: str = "PASS", *, upstream: str = UPSTREAM, candidate_commit: str | None = CANDIDATE_COMMIT
) -> dict[str, Any]:
    """A verify-protected result as `parval verify-protected --output` writes it."""
    out: dict[str, Any] = {
        "assertion": "X4",
        "status": status,
        "upstream": upstream,
        "upstream_ref": upstream,
        "repo": "/synthetic/audio.cpp",
        "checked_paths": ["app/server/runtime.h"],
        "changed": [] if status == "PASS" else [{"path": "app/server/runtime.h", "kind": "modified", "hunk": ""}],
        "legacy_runtime": {"path": "app/server/runtime.cpp", "status": "PASS", "reason": "synthetic", "hunk": ""},
        "warnings": [],
        "config": "built-in defaults",
        "tool": "parval verify-protected",
        "version": "0",
    }
    if candidate_commit is not None:
        out["candidate_commit"] = candidate_commit
    return out
