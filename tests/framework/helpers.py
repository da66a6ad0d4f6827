"""Plans for `parval framework` against the stand-in, sized so forced orders are reliable on
two cores (a warm request ~150 ms, a load ~200 ms, a teardown ~150 ms)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from parval.framework.collect import run_framework

STANDIN = str(Path(sys.executable).parent / "parval-standin")
MODEL_BYTES = b"".join(hashlib.sha256(f"framework-model-{i}".encode()).digest() for i in range(256))

# The six historical regressions and the one assertion each must fail.
REGRESSIONS: dict[str, str] = {
    "barging": "F1.fifo",
    "lease_binding": "F2.reconfigure_queued",
    "bulk_waits_unpublished": "F5.bulk_ready_first",
    "retiring_resident": "F5.retiring_residency",
    "registry_convoy": "F5.no_convoy",
    "overdue_suppressed": "F1.overdue",
}


def write_plan(
    tmp: Path,
    *,
    faults: list[str] | None = None,
    counts: list[int] | None = None,
    ui: bool = True,
    name: str = "fw",
    **extra: Any,
) -> Path:
    model = tmp / "model.bin"
    model.write_bytes(MODEL_BYTES)
    args: list[str] = []
    for f in faults or []:
        args += ["--fault", f]
    plan: dict[str, Any] = {
        "schema_version": 1,
        "name": name,
        "servers": {"baseline": {"executable": STANDIN}, "candidate": {"executable": STANDIN, "args": args}},
        "server": {"backend": "cpu", "ui_management": ui},
        "model": {
            "id": "m",
            "family": "standin_tts",
            "task": "tts",
            "path": str(model),
            "load_options": {
                "capacity": 4,
                "service_ms": 150,
                "load_ms": 200,
                "teardown_ms": 150,
                "native_batch": True,
                "model_mib": 1,
                "session_mib": 1,
            },
        },
        "counts": counts or [1, 2],
        "requests": {"base": {"text": "Framework probe.", "seed": 7}, "invalid": {"text": "x", "max_tokens": -1}},
        "status_poll_ms": 5,
        "timeouts": {"ready_s": 20, "request_s": 30, "start_s": 120, "shutdown_grace_s": 5},
    }
    plan.update(extra)
    path = tmp / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    return path


def run(
    tmp: Path, only: str | None = None, probes: dict[str, Any] | None = None, **plan_kw: Any
) -> tuple[Path, dict[str, Any]]:
    plan = write_plan(tmp, **plan_kw)
    probes_path = None
    if probes is not None:
        probes_path = tmp / "probes.yaml"
        probes_path.write_text(yaml.safe_dump(probes))
    return run_framework(plan, out=tmp / "record", only=only, probes=probes_path)


def by_id(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {a["id"]: a for a in record["assertions"]}


def failing(record: dict[str, Any]) -> dict[str, list[str]]:
    """assertion -> names of its FAIL sub-checks."""
    out: dict[str, list[str]] = {}
    for a in record["assertions"]:
        names = [c["name"] for c in a["evidence"].get("checks", []) if c["status"] == "FAIL"]
        if a["status"] == "FAIL" and names:
            out[a["id"]] = names
    return out


def explain(record: dict[str, Any]) -> str:
    lines = []
    for a in record["assertions"]:
        if a["status"] not in ("PASS", "NOT_APPLICABLE"):
            lines.append(f"{a['id']} {a['status']}: {a['reason'][:400]}")
    return "\n".join(lines) or json.dumps(record["verdict"])
