"""`parval catalogue init`: a proposed catalogue from the server configs and model specs a
candidate ships, with a starter plan per model (`parval init`'s), the decisions left to
the user.

Each model's `slots` field is what the change advertises: the claim's counts are
1..slots. A model that appears in several sources (a CUDA and a Vulkan config) with the
same slots is one claim on every backend; with different slots (or GPU and CPU backends,
whose starter plans sample other memory), one claim per group.
What only the user knows stays an `EDIT-ME` placeholder or a commented choice: the
candidate executable per backend (its sha256 and source commit), the shared framework
record, shards, and everything `parval init` leaves open in each starter plan. A plan file
that already exists is referenced, never overwritten.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from parval.errors import InputFileError, UsageError
from parval.jsonread import iterate
from parval.jsontypes import JsonObject, JsonValue
from parval.plan.load import GPU_BACKENDS
from parval.plan.schemas import schema_version
from parval.plan.starter import (
    BACKENDS,
    PLACEHOLDER,
    advertised_counts,
    missing_slots_warning,
    read_server_config,
    starter_plan,
)


@dataclass
class Source:
    path: Path
    config: JsonObject  # a server config (a model spec is wrapped as one)
    kind: str  # "server config" or "model spec"

    @property
    def backend(self) -> str:
        return str(self.config.get("backend", "cuda"))

    def model_count(self) -> int:
        """How many model entries it lists (`len` of its models)."""
        models: JsonValue = self.config["models"]
        if isinstance(models, list | dict | str):
            return len(models)
        raise TypeError(f"object of type '{type(models).__name__}' has no len()")


@dataclass
class Proposed:
    name: str
    entry: JsonObject
    source: Source
    counts: list[int]
    backends: list[str] = field(default_factory=list)
    mode: str = "offline"


def read_model_spec(path: Path, backend: str | None) -> Source:
    """A model spec: one model entry (id, family, path, task, mode, slots), a list of them,
    or a server config; its backend is its own `backend`, else --backend, else cuda (the
    server's default)."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise InputFileError(f"{path}: model spec not found") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputFileError(f"{path}: cannot read the model spec as JSON: {exc}") from None
    if isinstance(data, dict) and "models" in data:
        return Source(path, read_server_config(path), "model spec")
    models = data if isinstance(data, list) else [data]
    if not models or not all(isinstance(m, dict) for m in models):
        raise UsageError(f"{path}: a model spec is a JSON object (one model entry) or a list of them")
    chosen = backend or next((str(m["backend"]) for m in models if m.get("backend")), "cuda")
    return Source(path, {"backend": chosen, "models": models}, "model spec")


def _name(model_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", model_id).strip("-") or "model"


def proposals(sources: list[Source]) -> list[Proposed]:
    by_id: dict[str, list[tuple[Source, JsonObject, list[int]]]] = {}
    for src in sources:
        if src.backend not in BACKENDS:
            raise UsageError(f"{src.path}: unsupported backend {src.backend!r}")
        for entry in iterate(src.config["models"]):
            if not isinstance(entry, dict):
                continue
            for key in ("id", "family", "path"):
                if not isinstance(entry.get(key), str) or not entry[key]:
                    raise UsageError(f"{src.path}: model entry {entry.get('id')!r} lacks {key!r}")
            by_id.setdefault(str(entry["id"]), []).append((src, entry, advertised_counts(entry)))
    out: list[Proposed] = []
    for model_id, seen in by_id.items():
        # One claim per model where the sources agree on the counts and on GPU vs host
        # memory (the starter plan's memory settings differ); else one per group.
        groups: dict[tuple[tuple[int, ...], bool], list[tuple[Source, JsonObject, list[int]]]] = {}
        for item in seen:
            groups.setdefault((tuple(item[2]), item[0].backend in GPU_BACKENDS), []).append(item)
        for group in groups.values():
            src, entry, counts = group[0]
            name = _name(model_id) if len(groups) == 1 else f"{_name(model_id)}-{src.backend}"
            p = Proposed(name, entry, src, counts, mode=str(entry.get("mode", "offline")))
            for s, _, _ in group:
                if s.backend not in p.backends:
                    p.backends.append(s.backend)
            out.append(p)
    return out


def _rel(path: Path, start: Path) -> str:
    try:
        return os.path.relpath(path.resolve(), start.resolve())
    except ValueError:
        return str(path.resolve())


def proposal_warnings(sources: list[Source]) -> list[str]:
    """What `parval init` warns about the same entries: a model without `slots` (count 1 only)."""
    return [
        w
        for src in sources
        for entry in iterate(src.config["models"])
        if isinstance(entry, dict) and (w := missing_slots_warning(entry, src.path))
    ]


def write_proposal(
    sources: list[Source], output: Path, plans_dir: Path, *, force: bool = False
) -> tuple[str, list[tuple[Path, bool]]]:
    """(catalogue text, [(plan file, written now)]); the plans are written here, the catalogue by the caller."""
    props = proposals(sources)
    if not props:
        raise UsageError("the given configs and specs name no model")
    plans: list[tuple[Path, bool]] = []
    backends: list[str] = []
    for p in props:
        target = plans_dir / f"{p.name}.yaml"
        exists = target.exists()
        if not exists or force:
            plans_dir.mkdir(parents=True, exist_ok=True)
            target.write_text(starter_plan(p.source.config, p.entry, p.source.path, plans_dir), "utf-8")
        plans.append((target, not exists or force))
        backends += [b for b in p.backends if b not in backends]
    cat_dir = output.parent
    name = _name(output.stem.removesuffix(".catalogue")) or "catalogue"
    lines = [
        "# parval catalogue proposed by `parval catalogue init` from:",
        *(f"#   {s.path} ({s.kind}, backend {s.backend}): {s.model_count()} model(s)" for s in sources),
        "# Each model is claimed at the counts its `slots` advertise (1..slots), on each backend",
        "# whose config lists it. Decide before running: the candidate build per backend, which",
        "# claims this change really makes, and each starter plan's EDIT-ME placeholders. Then:",
        "#   parval catalogue validate THIS_FILE",
        "# The format: `parval schema catalogue` (docs/catalogue.md).",
        f"schema_version: {schema_version('catalogue')}",
        "kind: parval-catalogue",
        f"name: {json.dumps(name)}",
        f"description: {json.dumps('Proposed from ' + ', '.join(s.path.name for s in sources))}",
        "",
        "builds:                      # the candidate build per backend",
    ]
    for b in backends:
        lines += [
            f"  {b}:",
            "    candidate:",
            f"      executable: {PLACEHOLDER}/path/to/{b}/candidate/audiocpp_server   # the build under test",
            "      # sha256: <sha256sum of it>   # needed where the report runs without the executable",
            "      # source_commit: <git sha>    # evidence naming another commit is STALE",
            "    # baseline: {executable: <upstream legacy build for this backend>}   # else each plan's",
            "    # framework: {record: <parval framework run dir>, protected: <parval verify-protected x4.json>}",
        ]
    lines += ["", "claims:"]
    for p, (plan, _) in zip(props, plans, strict=True):
        slots = (
            f"the advertised slots: {p.entry['slots']}"
            if "slots" in p.entry
            else f"WARNING: {p.source.path} gives no `slots`: count 1 only"
        )
        lines += [
            f"  - name: {p.name}",
            f"    plan: {_rel(plan, cat_dir)}",
            f"    backends: [{', '.join(p.backends)}]",
            f"    modes: [{p.mode}]",
            f"    counts: {json.dumps(p.counts)}   # {slots}",
            "    shards: 1                # EDIT: split it into --shard jobs for `parval catalogue slurm|matrix`",
        ]
    return "\n".join(lines) + "\n", plans
