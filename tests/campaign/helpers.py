"""Small, fast plans against the stand-in, and a passing framework record, for gate tests."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from parval import api
from parval.plan.load import load_plan
from parval.procedure.catalogue import FRAMEWORK_GATE
from tests.records_kit import CANDIDATE_COMMIT, UPSTREAM

STANDIN = str(Path(sys.executable).parent / "parval-standin")
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
    model = tmp / "model.bin"
    model.write_bytes(MODEL_BYTES)
    args: list[str] = []
    for f in faults or []:
        args += ["--fault", f]
    text = "Parval checks every slot."
    plan: dict[str, Any] = {
        "schema_version": 1,
        "name": "t",
        "servers": {"baseline": {"executable": STANDIN}, "candidate": {"executable": STANDIN, "args": args}},
        "server": {"backend": "cpu", "ui_management": True},
        "model": {
            "id": "m",
            "family": "standin_tts",
            "task": "tts",
            "path": str(model),
            "load_options": {"capacity": 4, "service_ms": 100, "load_ms": 80, "cache_sensitive": cache_sensitive},
            "cache_sensitive": cache_sensitive,
            "variation_kinds": ["length", "seed"],
            "variation_kinds_justification": {"reference": "the stand-in TTS plan keeps to text length and seed"},
        },
        # what parval cannot discover (M1.manifest), declared as a real plan would
        "identity": {
            "baseline": {"source_commit": UPSTREAM, "build_flags": "none (Python stand-in)"},
            "candidate": {"source_commit": CANDIDATE_COMMIT, "build_flags": "none (Python stand-in)"},
            "quantization": "none",
        },
        # only fields that vary across identical serial requests (Q2)
        "compare": {
            "volatile_fields": [
                {"path": "timing.wall_ms", "justification": "wall time differs on every run"},
                {"path": "timing.rtf", "justification": "wall time over audio duration differs on every run"},
            ]
        },
        "counts": counts or [1, 2, 4],
        "starts_per_count": starts,
        # mixed None: every count runs `ten` mixed waves (any count may end up the largest admitted)
        "waves": {"warm": warm, "mixed": mixed, "mixed_at_largest": ten, "serial_reuse": 2},
        "requests": {
            "base": {"text": text, "seed": 7},
            "variations": [
                {"name": "longer", "changes": "text", "request": {"text": text + " And a longer tail.", "seed": 7}},
                {"name": "seed", "changes": "seed", "request": {"text": text, "seed": 8}},
            ],
            "invalid": {"text": "x", "max_tokens": -1},
        },
        "memory": {
            "gpu_required": False,
            "host_interval_ms": 20,
            "stabilisation": {"last_k_waves": 3, "max_growth_mib": 6},
        },
        "performance": {"warm_repeats": 3},
        "timeouts": {
            "ready_s": 20,
            "request_s": 20,
            "wave_s": 40,
            "start_s": 120,
            "campaign_s": 600,
            "shutdown_grace_s": 5,
        },
    }
    if framework:
        plan["framework"] = {"record": "framework", "protected": "x4.json"}
        write_framework(tmp)
    for key, value in extra.items():
        plan[key] = value
    return plan


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
