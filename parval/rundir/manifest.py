"""The manifest: hashes of executables, model files, fixtures and the plan, plus the platform."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any

from parval import PROCEDURE_VERSION, __version__
from parval.plan.load import Plan, resolve_executable
from parval.rundir.files import sha256_file, sha256_tree
from parval.rundir.provenance import detect as detect_provenance


def gpu_info() -> dict[str, Any]:
    try:
        from parval.server import nvml
    except ImportError:
        return {"available": False, "reason": "NVML module unavailable"}
    describe = getattr(nvml, "describe_gpus", None)
    if describe is None:
        return {"available": False, "reason": "NVML description not implemented"}
    result: dict[str, Any] = describe()
    return result


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def host_platform() -> dict[str, Any]:
    """The machine parval runs on: OS, architecture, CPU and Python."""
    return {
        "os": platform.platform(),
        "machine": platform.machine(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
    }


def driver_version(backend: str) -> str | None:
    """The device driver's version where the OS exposes it; None where parval cannot read it."""
    if backend == "cpu":
        return "not applicable (cpu backend)"
    sources = {
        "cuda": "/proc/driver/nvidia/version",
        "hip": "/sys/module/amdgpu/version",
        "rocm": "/sys/module/amdgpu/version",
    }
    where = sources.get(backend)
    if where is None:
        return None
    try:
        text = Path(where).read_text(errors="replace").strip()
    except OSError:
        return None
    return text.splitlines()[0].strip() if text else None


def build_identity(plan: Plan) -> dict[str, Any]:
    """What parval cannot discover (source commits, build flags, quantization), as the plan
    declares it; an item the plan leaves out stays None so M1.manifest can name it."""
    declared = plan.identity
    out: dict[str, Any] = {}
    for role in ("baseline", "candidate"):
        build = declared.get(role) or {}
        out[role] = {"source_commit": build.get("source_commit"), "build_flags": build.get("build_flags")}
    out["quantization"] = declared.get("quantization") or plan.model.get("quantization") or None
    return out


def build_manifest(plan: Plan) -> dict[str, Any]:
    """Everything that identifies what was tested (M1.manifest, E1)."""
    executables: dict[str, Any] = {}
    for role, spec in (("baseline", plan.baseline), ("candidate", plan.candidate)):
        resolved = resolve_executable(spec.executable, plan.base_dir)
        executables[role] = {
            "name": spec.executable,
            "path": str(resolved) if resolved else None,
            "sha256": sha256_file(resolved) if resolved and resolved.is_file() else None,
            "args": list(spec.args),
            "env": dict(spec.env),
        }
    model_path = plan.model_path
    model = plan.model
    return {
        "schema_version": 1,
        "procedure_version": PROCEDURE_VERSION,
        "parval_version": __version__,
        "plan": {"path": str(plan.path), "sha256": plan.sha256, "name": plan.name},
        "executables": executables,
        "model": {
            "id": model["id"],
            "family": model["family"],
            "task": model["task"],
            "mode": model["mode"],
            "quantization": model["quantization"],
            "path": str(model_path),
            "sha256": sha256_tree(model_path) if model_path.exists() else None,
            "auxiliary": {str(p): sha256_tree(p) for p in plan.auxiliary_files() if p.exists()},
            "load_options": model["load_options"],
            "session_options": model["session_options"],
            "cache_sensitive": model["cache_sensitive"],
        },
        "fixtures": {str(p): sha256_file(p) for p in plan.fixture_files()},
        "requests": {r.name: r.body for r in plan.requests()},
        "identity": build_identity(plan),
        "settings": {
            "server": plan.server,
            "counts": plan.counts,
            "starts_per_count": plan.starts_per_count,
            "waves": plan.waves,
            "compare": plan.compare,
            # framework.reuse is judged from here when the judge is not given the plan.
            "framework": plan.framework,
        },
        "provenance": detect_provenance(),
        "platform": {
            **host_platform(),
            "backend": plan.server["backend"],
            "device": plan.server["device"],
            "threads": plan.server["threads"],
            "driver": driver_version(plan.server["backend"]) or plan.identity.get("driver"),
            "gpu": gpu_info(),
        },
    }


def identity_fields(manifest: dict[str, Any]) -> dict[str, Any]:
    """The fields that must agree for two runs' evidence to be merged or resumed."""
    return {
        "executables.baseline.sha256": manifest["executables"]["baseline"]["sha256"],
        "executables.candidate.sha256": manifest["executables"]["candidate"]["sha256"],
        "model.sha256": manifest["model"]["sha256"],
        "model.auxiliary": manifest["model"]["auxiliary"],
        "fixtures": manifest["fixtures"],
        "model.id": manifest["model"]["id"],
        "platform.backend": manifest["platform"]["backend"],
    }
