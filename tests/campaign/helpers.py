"""Small, fast plans against the stand-in, and a passing framework record, for gate tests."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import yaml

from parval import api
from parval.plan.load import load_plan
from parval.procedure.assertion_ids import FRAMEWORK_GATE
from tests import plankit

STANDIN = str(plankit.STANDIN)
MODEL_BYTES = b"".join(hashlib.sha256(f"test-model-{i}".encode()).digest() for i in range(512))


def plan_dict(
    tmp: Path,
    *,
    faults: list[str] | None = None,
    counts: list[int] | None = None,
    cache_sensitive: bool = False,
    ten: int = 10,
    mixed: int | None = None,
    warm: int = 1,
    starts: int = 3,
    framework: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    """The gate tests' plan (tests/plankit.py `campaign_plan`), its model file written to `tmp`
    and, with `framework`, a passing framework record beside it; `extra` sets top-level
    sections whole (not merged)."""
    model = tmp / "model.bin"
    model.write_bytes(MODEL_BYTES)
    plan = plankit.campaign_plan(
        model,
        faults=faults or [],
        counts=counts or [1, 2, 4],
        cache_sensitive=cache_sensitive,
        ten=ten,
        mixed=mixed,
        warm=warm,
        starts=starts,
        framework={"record": "framework", "protected": "x4.json"} if framework else None,
    )
    if framework:
        write_framework(tmp)
    return {**plan, **extra}


def write_framework(tmp: Path) -> None:
    """A framework record for this stand-in (as `parval framework` would write) and a
    passing verify-protected result, so that admission depends on the model gate alone."""
    exe = Path(STANDIN).resolve()
    sha = hashlib.sha256(exe.read_bytes()).hexdigest()
    from tests.records_kit import framework_record, write_record_dir, x4_json

    record = framework_record(sha, record_id="fw-test-record")
    assert len(record["assertions"]) == len(FRAMEWORK_GATE)
    write_record_dir(tmp / "framework", record)
    (tmp / "x4.json").write_text(json.dumps(x4_json()))


def run(tmp: Path, plan: dict[str, Any]) -> dict[str, Any]:
    path = tmp / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    _, evidence = api.run_plan(load_plan(path), out=tmp / "run")
    return evidence


def status(ev: dict[str, Any], aid: str, count: int | None = None) -> str:
    for a in ev["assertions"]:
        if a["id"] == aid:
            if count is None:
                return str(a["status"])
            per = a["evidence"].get("per_count", {})
            if str(count) in per:
                return str(per[str(count)]["status"])
            return str(a["status"])
    raise KeyError(aid)


def reason(ev: dict[str, Any], aid: str) -> str:
    return next(str(a["reason"]) for a in ev["assertions"] if a["id"] == aid)


def per_count(ev: dict[str, Any], n: int) -> dict[str, str]:
    return {a["id"]: a["status"] for a in ev["model_checks"]["per_count"][str(n)]["assertions"]}
