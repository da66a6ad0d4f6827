"""Run plans: YAML → schema validation → frozen dataclasses. Loading a plan starts nothing."""

from __future__ import annotations

import copy
import hashlib
import os
import shutil
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import yaml

from parval.errors import PlanError
from parval.plan.schemas import fill_defaults, load_schema, schema_errors
from parval.plan.sections import (
    CompareSection,
    FrameworkSection,
    IdentitySection,
    MemorySection,
    ModelSection,
    PerformanceSection,
    RecoverySection,
    ServerEntry,
    ServerSection,
    SoakSection,
)
from parval.plan.variations import PATH_KEYS, VARIATION_KINDS, same_file_problems, variation_kind, variation_problems

__all__ = ["PATH_KEYS", "VARIATION_KINDS", "variation_kind"]


@dataclass(frozen=True)
class ServerSpec:
    executable: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    knows_parallel_jobs: bool = True


# Backends whose memory is GPU memory (NVML), as opposed to host memory.
GPU_BACKENDS = frozenset({"cuda", "hip", "rocm", "vulkan"})


@dataclass(frozen=True)
class NamedRequest:
    name: str
    changes: str
    body: dict[str, object]


SectionT = TypeVar("SectionT")


class _Section(Generic[SectionT]):
    """A top-level plan section by the attribute's name, as a fresh (shallow) copy so that
    callers cannot edit the loaded plan. The schema fixes its shape (parval.plan.sections)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = name

    def __get__(self, plan: Plan, owner: type | None = None) -> SectionT:
        section: SectionT = plan.raw[self.key]
        return copy.copy(section)


@dataclass(frozen=True)
class Plan:
    path: Path
    raw: dict[str, Any]  # as written, with the schema's defaults filled in
    sha256: str
    # the settings the plan names itself (`raw` before the defaults), where known: a message
    # about a default says so only when the plan did not set it
    written: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    # sections read whole (copies)
    server = _Section[ServerSection]()
    model = _Section[ModelSection]()
    compare = _Section[CompareSection]()
    memory = _Section[MemorySection]()
    performance = _Section[PerformanceSection]()
    recovery = _Section[RecoverySection]()
    framework = _Section[FrameworkSection]()

    @property
    def name(self) -> str:
        return str(self.raw["name"])

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    @property
    def baseline(self) -> ServerSpec:
        return _server(self.raw["servers"]["baseline"])

    @property
    def candidate(self) -> ServerSpec:
        return _server(self.raw["servers"]["candidate"])

    @property
    def model_id(self) -> str:
        return str(self.raw["model"]["id"])

    @property
    def model_path(self) -> Path:
        return self.resolve(self.raw["model"]["path"])

    @property
    def cache_sensitive(self) -> bool:
        return bool(self.raw["model"]["cache_sensitive"])

    @property
    def counts(self) -> list[int]:
        return sorted(int(c) for c in self.raw["counts"])

    @property
    def starts_per_count(self) -> int:
        return int(self.raw["starts_per_count"])

    @property
    def waves(self) -> dict[str, int]:
        """The plan's wave numbers; `mixed` is the resolved number below the largest count
        (parval.plan.waves.mixed_waves)."""
        from parval.plan.waves import mixed_waves

        out = {k: int(v) for k, v in self.raw["waves"].items() if v is not None}
        below = [n for n in self.counts if n != max(self.counts)]
        out["mixed"] = mixed_waves(self.raw, below[0]) if below else out["mixed_at_largest"]
        return out

    @property
    def soak(self) -> SoakSection | None:
        """The optional soak after the required starts (None when the plan has none)."""
        section: SoakSection | None = self.raw.get("soak")
        return copy.copy(section) if section else None

    @property
    def timeouts(self) -> dict[str, float]:
        return {k: float(v) for k, v in self.raw["timeouts"].items()}

    @property
    def volatile_fields(self) -> list[str]:
        return [str(v["path"]) for v in self.raw["compare"]["volatile_fields"]]

    @property
    def identity(self) -> IdentitySection:
        """What the plan declares about the builds and the model (`identity`, optional)."""
        declared: IdentitySection | None = self.raw.get("identity")
        return copy.copy(declared) if declared else {}

    @property
    def status_poll_s(self) -> float:
        return float(self.raw["status_poll_ms"]) / 1000.0

    def resolve(self, value: str) -> Path:
        p = Path(os.path.expanduser(value))
        return p if p.is_absolute() else (self.base_dir / p).resolve()

    def requests(self) -> list[NamedRequest]:
        """The base request first, then each variation, with fixture paths made absolute."""
        reqs = [NamedRequest("base", "base", self._absolute(self.raw["requests"]["base"]))]
        for v in self.raw["requests"]["variations"]:
            reqs.append(NamedRequest(v["name"], v["changes"], self._absolute(v["request"])))
        return reqs

    def invalid_request(self) -> dict[str, object] | None:
        inv = self.raw["requests"].get("invalid")
        return self._absolute(inv) if inv is not None else None

    def fixture_files(self) -> list[Path]:
        """Files named by requests (audio, voice references): hashed into the manifest."""
        bodies = [r.body for r in self.requests()]
        if (inv := self.invalid_request()) is not None:
            bodies.append(inv)
        files: list[Path] = []
        for body in bodies:
            for key in PATH_KEYS:
                if isinstance(val := body.get(key), str) and Path(val).exists():
                    files.append(Path(val))
        return sorted(set(files))

    def auxiliary_files(self) -> list[Path]:
        return [self.resolve(p) for p in self.raw["model"]["auxiliary_files"]]

    def _absolute(self, body: dict[str, object]) -> dict[str, object]:
        out = dict(body)
        for key in PATH_KEYS:
            val = out.get(key)
            if isinstance(val, str) and not val.startswith(("data:", "/")):
                out[key] = str(self.resolve(val))
        return out


def _server(raw: ServerEntry) -> ServerSpec:
    return ServerSpec(
        executable=str(raw["executable"]),
        args=tuple(raw.get("args", ())),
        env=dict(raw.get("env", {})),
        knows_parallel_jobs=bool(raw.get("knows_parallel_jobs", True)),
    )


def _exists(p: Path) -> bool:
    """Path.exists that answers False (instead of raising) for impossible names."""
    try:
        return p.exists()
    except (OSError, ValueError):
        return False


def path_shown(written: str, base_dir: Path, folder: str = "the plan's folder") -> str:
    """A path of a plan (or catalogue) as written, and for a relative one the folder it was
    resolved from: what an error about it names, so a reader sees where parval looked."""
    expanded = os.path.expanduser(written) if "\0" not in written else written
    if os.path.isabs(expanded):
        return f"'{written}'" if expanded == written else f"'{written}' ({expanded})"
    return f"'{written}' (relative to {folder} {base_dir})"


def executable_shown(value: str, base_dir: Path, folder: str = "the plan's folder") -> str:
    """An executable as written: a path (with the folder a relative one is resolved from) or
    a name looked up on PATH."""
    if os.sep in value or value.startswith("."):
        return path_shown(value, base_dir, folder)
    return f"'{value}' (a name looked up on PATH)"


def executable_problem(value: str, base_dir: Path, folder: str = "the plan's folder") -> str | None:
    """Why `value` (a path relative to `base_dir`, or a name on PATH) cannot be started as a
    server; None when it can."""
    resolved = resolve_executable(value, base_dir)
    if resolved is None:
        if os.sep in value or value.startswith("."):
            return f"{path_shown(value, base_dir, folder)} not found"
        return (
            f"'{value}' not found on PATH (a name without '/' is looked up on PATH; "
            f"write ./{value} for a file in {folder} {base_dir})"
        )
    if resolved.is_dir():
        return f"{path_shown(value, base_dir, folder)} is a directory, not an executable file"
    if not os.access(resolved, os.X_OK):
        return f"{path_shown(value, base_dir, folder)} is not executable (no execute permission: chmod +x {resolved})"
    return None


def resolve_executable(value: str, base_dir: Path) -> Path | None:
    """A path (relative to the plan) or a name on PATH; None when not found."""
    if not value or "\0" in value:
        return None
    try:
        return _resolve_executable(value, base_dir)
    except (OSError, ValueError):
        return None


def _resolve_executable(value: str, base_dir: Path) -> Path | None:
    if os.sep in value or value.startswith("."):
        p = Path(os.path.expanduser(value))
        p = p if p.is_absolute() else (base_dir / p)
        return p.resolve() if p.exists() else None
    # Also look beside the running interpreter: console scripts installed with parval
    # (parval-standin) live there even when the virtual environment is not activated.
    search = os.pathsep.join([os.environ.get("PATH", ""), os.path.dirname(sys.executable)])
    found = shutil.which(value, path=search)
    return Path(found).resolve() if found else None


def parse_plan_text(text: str, where: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        loc = f"{where}:{mark.line + 1}:{mark.column + 1}" if mark else where
        problem = getattr(exc, "problem", None) or str(exc)
        raise PlanError(f"{loc}: YAML syntax error: {problem}", hint="fix the YAML syntax") from None
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. a timestamp like 2024-13-01
        raise PlanError(f"{where}: YAML value error: {exc}", hint="quote the value") from None
    except RecursionError:
        raise PlanError(f"{where}: YAML nested too deeply") from None
    if not isinstance(data, dict):
        raise PlanError(f"{where}: a plan must be a YAML mapping, got {type(data).__name__}")
    return data


def load_plan(path: Path, *, check_files: bool = True, located_at: Path | None = None, text: str | None = None) -> Plan:
    """Load and validate a plan; raise PlanError listing every problem with its location.

    `located_at`: where the plan's relative paths are resolved from when `path` is a copy
    (the plan a run directory keeps, resumed without naming the plan); `text`: the plan's
    text when it is not the file's (the plan with a soak `parval run --soak` adds)."""
    path = Path(path)
    try:
        text = path.read_text("utf-8") if text is None else text
    except FileNotFoundError:
        raise PlanError(f"{path}: plan file not found", hint="check the path") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanError(f"{path}: cannot read plan: {exc}") from None
    data = parse_plan_text(text, str(path))
    try:
        errors = schema_errors(data, "plan")
    except RecursionError:
        raise PlanError(f"{path}: plan nested too deeply") from None
    if errors:
        lines = "\n".join(f"  {path.name}: {e}" for e in errors)
        raise PlanError(
            f"{path}: {len(errors)} schema error(s):\n{lines}", hint="`parval schema plan` prints the plan schema"
        )
    raw = fill_defaults(load_schema("plan"), data)
    plan = Plan(
        path=(located_at or path).resolve(), raw=raw, sha256=hashlib.sha256(text.encode()).hexdigest(), written=data
    )
    if problem := mode_problem(raw):
        raise PlanError(f"{path}: {problem}", hint=f"add {raw['model']['mode']} to model.admit_modes")
    if defects := variation_problems(raw) + same_file_problems(raw, lambda v: os.path.realpath(plan.resolve(v))):
        lines = "\n".join(f"  {path.name}: {d}" for d in defects)
        raise PlanError(f"{path}: {len(defects)} problem(s) with the request variations:\n{lines}")
    if check_files:
        problems = file_problems(plan)
        if problems:
            lines = "\n".join(f"  {p}" for p in problems)
            raise PlanError(f"{path}: {len(problems)} problem(s) with named files:\n{lines}")
    return plan


def mode_problem(raw: Mapping[str, Any]) -> str | None:
    """The mode the model runs in is the mode its evidence admits ("offline evidence admits
    offline only"): a plan whose model.admit_modes leaves model.mode out would admit
    nothing, so it is refused before anything runs."""
    model = raw["model"]
    mode, admit = model["mode"], list(model["admit_modes"])
    if mode in admit:
        return None
    return (
        f"model.admit_modes {admit} leaves out model.mode ({mode}), the mode the model runs in: "
        "its evidence admits that mode or nothing"
    )


def port_problem(host: str, port: object) -> str | None:
    """Why a fixed `port` cannot be used on `host` (None when it can be bound now)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        return f"{port!r} is not a TCP port number (1-65535)"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host.strip("[]") or "127.0.0.1", port))
        except OSError as exc:
            return f"{port} cannot be bound on {host}: {exc.strerror or exc} (already in use?)"
        except (ValueError, UnicodeError) as exc:
            return f"{port} cannot be bound on {host!r}: {exc}"
    return None


def file_problems(plan: Plan) -> list[str]:
    """Missing model/fixture files, executables that do not exist or cannot run, a fixed
    port that is taken. Each problem names its place in the plan."""
    problems: list[str] = []
    base = plan.base_dir
    for role in ("baseline", "candidate"):
        if (why := executable_problem(plan.raw["servers"][role]["executable"], base)) is not None:
            problems.append(f"servers.{role}.executable: {why}")
    written_model = str(plan.raw["model"]["path"])
    try:
        mp = plan.model_path
    except (OSError, ValueError, RuntimeError) as exc:
        problems.append(f"model.path: {path_shown(written_model, base)} is not a usable path ({exc})")
    else:
        if not _exists(mp):
            problems.append(f"model.path: {path_shown(written_model, base)} does not exist")
        elif mp.is_file() and mp.stat().st_size == 0:
            problems.append(f"model.path: {path_shown(written_model, base)} is empty")
    for i, value in enumerate(plan.raw["model"]["auxiliary_files"]):
        try:
            aux = plan.resolve(value)
        except (OSError, ValueError, RuntimeError):
            aux = Path(value) if "\0" not in value else Path("\ufffd")
        if not _exists(aux):
            problems.append(f"model.auxiliary_files[{i}]: {path_shown(value, base)} does not exist")
    bodies = [("base", plan.raw["requests"]["base"])]
    bodies += [(str(v["name"]), v["request"]) for v in plan.raw["requests"]["variations"]]
    for name, body in bodies:
        for key in PATH_KEYS:
            val = body.get(key)
            if not isinstance(val, str) or val.startswith("data:"):
                continue
            try:
                found = _exists(plan.resolve(val))
            except (OSError, ValueError, RuntimeError) as exc:
                problems.append(f"requests.{name}.{key}: {path_shown(val, base)} is not a usable path ({exc})")
                continue
            if not found:
                problems.append(f"requests.{name}.{key}: {path_shown(val, base)} does not exist")
    server = plan.raw["server"]
    extra = server.get("extra_config") or {}
    host = str(extra.get("host") or server.get("host") or "127.0.0.1")
    if "port" in extra:
        why = port_problem(host, extra["port"])
        if why:
            problems.append(f"server.extra_config.port: {why}")
    if 1 not in plan.counts:
        problems.append("counts: must include 1 (admission is the consecutive validated counts from one upward)")
    return problems


def shard_counts(counts: list[int], shard: tuple[int, int] | None) -> list[int]:
    """The counts `parval run --shard i/n` runs: every n-th count of the sorted plan counts."""
    if shard is None:
        return sorted(counts)
    i, n = shard
    return [c for k, c in enumerate(sorted(counts)) if k % n == i - 1]


OMIT = "omit"  # "leave the slots key out" (None is the explicit `slots: null`)


def model_entry(
    plan: Plan,
    *,
    model_id: str | None = None,
    lazy: bool | None = None,
    slots: object = OMIT,
    session_options: Mapping[str, object] | None = None,
    **overrides: object,
) -> dict[str, object]:
    """A config/registration entry of the plan's model; the id, laziness, slots, session
    options and any other key may be set for one start or probe."""
    m = plan.model
    entry: dict[str, object] = {
        "id": model_id or m["id"],
        "family": m["family"],
        "task": m["task"],
        "mode": m["mode"],
        "path": str(plan.model_path),
        "lazy": m["lazy"] if lazy is None else lazy,
    }
    options: tuple[tuple[str, Mapping[str, object]], ...] = (
        ("load_options", m["load_options"]),
        ("session_options", session_options if session_options is not None else m["session_options"]),
        ("default_request_options", m["default_request_options"]),
    )
    for key, value in options:
        if value:
            entry[key] = copy.deepcopy(value)
    entry.update(copy.deepcopy(m["entry_extra"]))
    if slots != OMIT:
        entry["slots"] = slots
    entry.update(overrides)
    return entry


def with_soak(plan: Plan, minutes: float) -> tuple[Plan, str]:
    """The plan with `soak: {minutes: M}` in place of any soak it had, and its text (kept in
    the run directory, so that a resume continues the same soak)."""
    data = parse_plan_text(plan.path.read_text("utf-8"), str(plan.path))
    data["soak"] = {"minutes": minutes}
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    return load_plan(plan.path, text=text), text


def parse_duration_minutes(value: str) -> float:
    """'60m', '1.5h', '90s' or a plain number of minutes, in minutes (ValueError otherwise)."""
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|m|min|h)?\s*", value)
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"{value!r}: expected a duration such as 60m, 1.5h or 90s")
    return float(m.group(1)) * {"s": 1 / 60, "m": 1.0, "min": 1.0, "h": 60.0, None: 1.0}[m.group(2)]
