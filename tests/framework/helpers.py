"""Plans for `parval framework` against the stand-in, sized so forced orders are reliable on
two cores (a warm request ~150 ms, a load ~200 ms, a teardown ~150 ms)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import yaml

from parval.framework.collect import run_framework
from tests import plankit

STANDIN = str(plankit.STANDIN)
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
    """The framework plan (tests/plankit.py `framework_plan`) and its model file, written to
    `tmp`; `extra` sets top-level sections whole (not merged). Return the plan's path."""
    plan = plankit.framework_plan(tmp / "model.bin", faults=faults or [], counts=counts or [1, 2], ui=ui, name=name)
    return plankit.write(tmp, {**plan, **extra}, model=MODEL_BYTES, sort_keys=True)


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
