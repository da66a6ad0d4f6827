"""Reading a catalogue file: YAML → schema → typed builds and claims. Every problem names
its place (`catalogue.yaml: claims[1] (silero).backends[0]: ...`) like plan errors do;
nothing here reads the claims' plans (`combination.py` does)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import NotRequired, TypedDict

from parval.errors import PlanError
from parval.jsontypes import JsonObject
from parval.plan.load import executable_shown, parse_plan_text, path_shown, resolve_executable
from parval.plan.schemas import fill_defaults, load_schema, schema_errors

CATALOGUE_KIND = "parval-catalogue"


def is_path(value: str) -> bool:
    """How `parval run` reads an executable: a path when it has a separator or starts with
    '.', otherwise a name looked up on PATH."""
    return os.sep in value or value.startswith(".")


def relative_to_plan(value: str, catalogue_dir: Path, plan_dir: Path) -> str:
    """A path written relative to the catalogue, re-expressed relative to a plan's folder
    (the effective plan resolves its paths there), so that the effective plan, and with it
    the plan hash, does not depend on where the checkout lives. Absolute paths and PATH
    names stay as they are."""
    p = Path(os.path.expanduser(value))
    if p.is_absolute() or not is_path(value):
        return value
    try:
        rel = os.path.relpath((catalogue_dir / p).resolve(), plan_dir.resolve())
    except ValueError:  # another drive (Windows): keep it absolute
        return str((catalogue_dir / p).resolve())
    return rel if is_path(rel) else f".{os.sep}{rel}"


@dataclass(frozen=True)
class BuildExecutable:
    """One executable of a build: as written, and what it is declared to be."""

    where: str  # e.g. "builds.cuda.candidate"
    executable: str  # as written in the catalogue (relative to it, or a name on PATH)
    base_dir: Path  # the catalogue's folder
    sha256: str | None
    source_commit: str | None

    def local_path(self) -> Path | None:
        return resolve_executable(self.executable, self.base_dir)

    def local_sha256(self) -> str | None:
        path = self.local_path()
        if path is None or not path.is_file():
            return None
        digest = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()

    def identity_sha256(self) -> str:
        """The sha256 evidence must show for this build: the declared one, else the hash of
        the executable on this machine. PlanError when neither is known or they disagree."""
        here = self.local_sha256()
        if self.sha256 and here and here != self.sha256:
            raise PlanError(
                f"{self.where}: sha256 {self.sha256[:12]}… is declared, but {self.local_path()} hashes to {here[:12]}…",
                hint="the catalogue names another build than the one on this machine: fix sha256 or the executable",
            )
        if self.sha256:
            return self.sha256
        if here:
            return here
        raise PlanError(
            f"{self.where}.executable: {executable_shown(self.executable, self.base_dir, 'the catalogue folder')} "
            "is not on this machine, and no sha256 is given",
            hint=f"add {self.where}.sha256 (the build's sha256sum) so that evidence can be matched to it",
        )


BACKENDS = ("cpu", "cuda", "hip", "rocm", "vulkan", "metal")


@dataclass(frozen=True)
class Build:
    """The candidate build of one backend (and optionally its baseline and shared records).
    `name` is its key in the catalogue: the backend itself, or another name (two builds of
    one backend)."""

    name: str
    backend: str
    candidate: BuildExecutable
    baseline: BuildExecutable | None
    framework_record: str | None  # relative to the catalogue (or absolute)
    protected: str | None
    runs_on: tuple[str, ...]


@dataclass(frozen=True)
class Claim:
    index: int
    name: str
    source: Path  # the plan or template, absolute
    is_template: bool
    overrides: JsonObject
    backends: tuple[str, ...]  # keys of the catalogue's builds
    modes: tuple[str, ...] | None  # None: the plan's model.mode
    counts: tuple[int, ...] | None  # None: the plan's counts
    shards: int

    @property
    def where(self) -> str:
        return f"claims[{self.index}] ({self.name})"


@dataclass(frozen=True)
class CatalogueFile:
    path: Path  # absolute
    name: str
    description: str
    builds: dict[str, Build]
    claims: tuple[Claim, ...]

    @property
    def base_dir(self) -> Path:
        return self.path.parent


class ExecutableEntry(TypedDict):
    """`builds.<key>.candidate` (or `.baseline`) as written, defaults filled in."""

    executable: str
    sha256: str | None
    source_commit: str | None


class FrameworkEntry(TypedDict):
    record: str | None
    protected: str | None


class BuildEntry(TypedDict):
    """`builds.<key>` as written (`schemas/catalogue.schema.json`), defaults filled in."""

    candidate: ExecutableEntry
    backend: NotRequired[str]
    baseline: NotRequired[ExecutableEntry]
    framework: NotRequired[FrameworkEntry]
    runs_on: NotRequired[list[str]]


class ClaimEntry(TypedDict):
    """`claims[i]` as written, defaults filled in."""

    name: str
    backends: list[str]
    shards: int
    plan: NotRequired[str]
    template: NotRequired[str]
    overrides: NotRequired[JsonObject]
    modes: NotRequired[list[str]]
    counts: NotRequired[list[int]]


class CatalogueData(TypedDict):
    """A catalogue file that validated against its schema, defaults filled in."""

    schema_version: int
    kind: str
    name: str
    description: NotRequired[str]
    builds: dict[str, BuildEntry]
    claims: list[ClaimEntry]


def _executable(raw: ExecutableEntry, where: str, base: Path) -> BuildExecutable:
    return BuildExecutable(
        where=where,
        executable=str(raw["executable"]),
        base_dir=base,
        sha256=raw.get("sha256"),
        source_commit=raw.get("source_commit"),
    )


def _problems(data: CatalogueData, base: Path) -> list[str]:
    """What the schema cannot say: plan xor template, files that exist, a build for every
    backend, unique names."""
    out: list[str] = []
    names: dict[str, int] = {}
    for i, c in enumerate(data["claims"]):
        where = f"claims[{i}] ({c['name']})"
        if c["name"] in names:
            out.append(f"{where}.name: {c['name']!r} is also claims[{names[c['name']]}]'s name")
        names.setdefault(c["name"], i)
        has_plan, has_template = "plan" in c, "template" in c
        if has_plan == has_template:
            out.append(
                f"{where}: name either a plan or a template (with overrides), not {'both' if has_plan else 'neither'}"
            )
        if has_template and not c.get("overrides"):
            out.append(f"{where}.overrides: a template needs overrides that complete it (at least the model)")
        for key in ("plan", "template"):
            if key in c and not (base / os.path.expanduser(c[key])).is_file():
                out.append(f"{where}.{key}: {path_shown(str(c[key]), base, 'the catalogue folder')} does not exist")
        for j, backend in enumerate(c["backends"]):
            if backend not in data["builds"]:
                out.append(
                    f"{where}.backends[{j}]: no build {backend!r}: add builds.{backend}.candidate "
                    "(the candidate executable on that backend)"
                )
        if c.get("counts") is not None and 1 not in c["counts"]:
            out.append(
                f"{where}.counts: must include 1 (admission is the consecutive validated counts from one upward)"
            )
    for key, b in data["builds"].items():
        if "backend" not in b and key not in BACKENDS:
            out.append(
                f"builds.{key}.backend: {key!r} is not a backend name ({', '.join(BACKENDS)}): say which backend it is"
            )
    return out


def read_catalogue(path: Path) -> CatalogueFile:
    """Load and check a catalogue file; PlanError (exit 2) lists every problem with its place."""
    path = Path(path)
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        raise PlanError(f"{path}: catalogue file not found", hint="check the path") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanError(f"{path}: cannot read the catalogue: {exc}") from None
    data = parse_plan_text(text, str(path))
    errors = schema_errors(data, "catalogue")
    if errors:
        lines = "\n".join(f"  {path.name}: {e}" for e in errors)
        raise PlanError(
            f"{path}: {len(errors)} schema error(s):\n{lines}",
            hint="`parval schema catalogue` prints the catalogue schema",
        )
    checked: CatalogueData = fill_defaults(load_schema("catalogue"), data)
    base = path.resolve().parent
    problems = _problems(checked, base)
    if problems:
        lines = "\n".join(f"  {path.name}: {p}" for p in problems)
        raise PlanError(f"{path}: {len(problems)} problem(s):\n{lines}")
    builds: dict[str, Build] = {}
    for key, b in checked["builds"].items():
        fw = b.get("framework")
        backend = str(b.get("backend") or key)
        builds[key] = Build(
            name=key,
            backend=backend,
            candidate=_executable(b["candidate"], f"builds.{key}.candidate", base),
            baseline=_executable(b["baseline"], f"builds.{key}.baseline", base) if b.get("baseline") else None,
            framework_record=fw.get("record") if fw else None,
            protected=fw.get("protected") if fw else None,
            runs_on=tuple(b.get("runs_on") or ("self-hosted", backend)),
        )
    claims = tuple(
        Claim(
            index=i,
            name=str(c["name"]),
            source=(base / os.path.expanduser(c.get("plan") or c["template"])).resolve(),
            is_template="template" in c,
            overrides=dict(c.get("overrides") or {}),
            backends=tuple(c["backends"]),
            modes=tuple(c["modes"]) if c.get("modes") else None,
            counts=tuple(sorted(c["counts"])) if c.get("counts") else None,
            shards=int(c["shards"]),
        )
        for i, c in enumerate(checked["claims"])
    )
    return CatalogueFile(
        path=path.resolve(),
        name=str(checked["name"]),
        description=str(checked.get("description") or ""),
        builds=builds,
        claims=claims,
    )
