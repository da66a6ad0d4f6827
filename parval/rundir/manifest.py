"""The manifest: hashes of executables, model files, fixtures and the plan, plus the platform."""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import NotRequired, TypedDict

from parval import PROCEDURE_VERSION, __version__
from parval.jsonread import item
from parval.jsontypes import JsonObject
from parval.plan.load import Plan, ServerSpec, resolve_executable
from parval.plan.sections import BuildIdentity, CompareSection, FrameworkSection, ServerSection
from parval.rundir.files import sha256_file, sha256_tree
from parval.rundir.provenance import Provenance
from parval.rundir.provenance import detect as detect_provenance


class ExecutableFacts(TypedDict):
    name: str  # as the plan names it
    path: str | None  # None: not found
    sha256: str | None
    args: list[str]
    env: dict[str, str]


class Executables(TypedDict):
    baseline: ExecutableFacts
    candidate: ExecutableFacts


class PlanFacts(TypedDict):
    path: str
    sha256: str
    name: str
    # plan.json's sha256, sealed before the first event: the rules the run is judged by
    # (parval.rundir.rules_seal). Absent in runs recorded before it was sealed.
    snapshot_sha256: NotRequired[str]


class ModelFacts(TypedDict):
    id: str
    family: str
    task: str
    mode: str
    quantization: str
    path: str
    sha256: str | None  # None: the model path does not exist
    auxiliary: dict[str, str]  # path -> sha256 of each auxiliary file present
    load_options: dict[str, object]
    session_options: dict[str, object]
    cache_sensitive: bool


class DeclaredBuild(TypedDict):
    """What the plan declares of one build; None where it declares nothing."""

    source_commit: str | None
    build_flags: str | list[str] | None


class DeclaredIdentity(TypedDict):
    baseline: DeclaredBuild
    candidate: DeclaredBuild
    quantization: str | None


class Settings(TypedDict):
    server: ServerSection
    counts: list[int]
    starts_per_count: int
    waves: dict[str, int]
    compare: CompareSection
    framework: FrameworkSection


class HostPlatform(TypedDict):
    os: str
    machine: str
    cpu: str
    cpu_count: int | None
    python: str


class ManifestPlatform(HostPlatform):
    backend: str
    device: int
    threads: int
    driver: str | None
    gpu: JsonObject


class Manifest(TypedDict):
    """manifest.json: everything that identifies what was tested (M1.manifest, E1)."""

    schema_version: int
    procedure_version: str
    parval_version: str
    plan: PlanFacts
    executables: Executables
    model: ModelFacts
    fixtures: dict[str, str]  # path -> sha256
    requests: dict[str, dict[str, object]]  # request name -> body
    identity: DeclaredIdentity
    settings: Settings
    provenance: Provenance
    platform: ManifestPlatform


def gpu_info() -> JsonObject:
    try:
        from parval import nvml
    except ImportError:
        return {"available": False, "reason": "NVML module unavailable"}
    describe = getattr(nvml, "describe_gpus", None)
    if describe is None:
        return {"available": False, "reason": "NVML description not implemented"}
    result: JsonObject = describe()
    return result


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def host_platform() -> HostPlatform:
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


def _declared_build(build: BuildIdentity | None) -> DeclaredBuild:
    build = build or {}
    return {"source_commit": build.get("source_commit"), "build_flags": build.get("build_flags")}


def build_identity(plan: Plan) -> DeclaredIdentity:
    """What parval cannot discover (source commits, build flags, quantization), as the plan
    declares it; an item the plan leaves out stays None so M1.manifest can name it."""
    declared = plan.identity
    return {
        "baseline": _declared_build(declared.get("baseline")),
        "candidate": _declared_build(declared.get("candidate")),
        "quantization": declared.get("quantization") or plan.model.get("quantization") or None,
    }


def _executable(spec: ServerSpec, base_dir: Path) -> ExecutableFacts:
    resolved = resolve_executable(spec.executable, base_dir)
    return {
        "name": spec.executable,
        "path": str(resolved) if resolved else None,
        "sha256": sha256_file(resolved) if resolved and resolved.is_file() else None,
        "args": list(spec.args),
        "env": dict(spec.env),
    }


def build_manifest(plan: Plan) -> Manifest:
    """Everything that identifies what was tested (M1.manifest, E1)."""
    executables: Executables = {
        "baseline": _executable(plan.baseline, plan.base_dir),
        "candidate": _executable(plan.candidate, plan.base_dir),
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


def _at(manifest: Mapping[str, object], dotted: str) -> object:
    """`manifest[a][b]...` for the dotted path `a.b...` (KeyError, TypeError as indexing)."""
    value: object = manifest
    for key in dotted.split("."):
        value = item(value, key)
    return value


# The fields compared, by their dotted paths in the manifest.
_IDENTITY_FIELDS = (
    "executables.baseline.sha256",
    "executables.candidate.sha256",
    "model.sha256",
    "model.auxiliary",
    "fixtures",
    "model.id",
    "platform.backend",
)


def identity_fields(manifest: Mapping[str, object]) -> dict[str, object]:
    """The fields that must agree for two runs' evidence to be merged or resumed."""
    return {field: _at(manifest, field) for field in _IDENTITY_FIELDS}
