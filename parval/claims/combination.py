"""Combinations: each claim x build x mode, with the effective plan its campaign runs (a
build is keyed by its backend, or by another name that says its backend).

The effective plan is the claim's plan (or template) with the claim's `overrides` merged
in, then the catalogue's decisions written over it: `name` (the combination's key),
`server.backend` (the build's backend), `servers.candidate.executable` (and the baseline, when the build names
one), `model.mode` with `admit_modes: [mode]` (one mode per campaign, M6), `counts` (the
advertised counts) and `identity.*.source_commit`, `framework.record`/`protected` from the
build. Its relative paths resolve from the plan's folder (the Plan's path is the plan
file's), so a run directory made from it resumes with `parval run --resume` like any
other. The effective plan's text is deterministic: its sha256 is the plan hash that
decides whether a finished combination is still up to date (`inputs.py`).
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from pathlib import Path

import yaml

from parval.claims.catalogue_file import Build, CatalogueFile, Claim, read_catalogue, relative_to_plan
from parval.errors import PlanError
from parval.jsonread import as_int, get, item, iterate
from parval.jsontypes import JsonObject, JsonValue
from parval.plan.load import Plan, file_problems, parse_plan_text
from parval.plan.schemas import fill_defaults, load_schema, schema_errors


def merge(base: JsonObject, over: JsonObject) -> JsonObject:
    """Mappings merge key by key; any other value replaces; None removes the key."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        current = out.get(key)
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(current, dict):
            out[key] = merge(current, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _section(value: JsonValue) -> JsonObject:
    """A copy of a plan section to write over, as `{**(value or {})}` makes it (TypeError
    for a section that is not a mapping)."""
    if not value:
        return {}
    if isinstance(value, dict):
        return {**value}
    raise TypeError(f"'{type(value).__name__}' object is not a mapping")


def run_dir_name(key: str, shard: tuple[int, int] | None) -> str:
    """`<key>` for a whole campaign, `<key>.shard<i>of<n>` for one shard of it."""
    return key if shard is None else f"{key}.shard{shard[0]}of{shard[1]}"


@dataclass(frozen=True)
class Combination:
    key: str  # <claim>.<build>.<mode> (the build's key is usually its backend)
    claim: Claim
    build: Build
    mode: str
    model_id: str
    family: str
    task: str
    counts: tuple[int, ...]
    data: JsonObject  # the effective plan as a mapping (before defaults)

    @property
    def backend(self) -> str:
        return self.build.backend

    @property
    def shards(self) -> int:
        return self.claim.shards

    @property
    def where(self) -> str:
        return f"{self.claim.where} → {self.key}"

    def shard_list(self) -> list[tuple[int, int] | None]:
        """The shards `catalogue slurm|matrix` split this combination into (None: unsharded)."""
        n = self.shards
        return [None] if n == 1 else [(i, n) for i in range(1, n + 1)]

    def text(self) -> str:
        head = (
            f"# Effective plan of catalogue combination {self.key} (claim {self.claim.name}, backend "
            f"{self.backend}, mode {self.mode}), derived from {self.claim.source.name} by `parval catalogue`.\n"
            f"# Relative paths are taken from the folder of {self.claim.source.name}.\n"
        )
        return head + yaml.safe_dump(self.data, sort_keys=False, allow_unicode=True)

    def plan(self, *, check_files: bool = True) -> Plan:
        """The effective plan as parval runs it (PlanError names the combination)."""
        text = self.text()
        data = parse_plan_text(text, self.key)
        raw = fill_defaults(load_schema("plan"), data)
        plan = Plan(path=self.claim.source, raw=raw, sha256=hashlib.sha256(text.encode()).hexdigest())
        if check_files:
            problems = file_problems(plan)
            if problems:
                lines = "\n".join(f"  {p}" for p in problems)
                raise PlanError(
                    f"{self.where}: {len(problems)} problem(s) with named files (plan {self.claim.source}):\n{lines}"
                )
        return plan


@dataclass(frozen=True)
class Catalogue:
    file: CatalogueFile
    combinations: tuple[Combination, ...]

    @property
    def path(self) -> Path:
        return self.file.path

    @property
    def name(self) -> str:
        return self.file.name

    def select(self, only: list[str] | None) -> list[Combination]:
        """The combinations named by --only (a combination key or a claim name), all by default."""
        if not only:
            return list(self.combinations)
        known = {c.key for c in self.combinations} | {c.claim.name for c in self.combinations}
        unknown = [o for o in only if o not in known]
        if unknown:
            raise PlanError(
                f"{self.path.name}: no combination or claim named {', '.join(map(repr, unknown))}",
                hint="combinations: " + ", ".join(c.key for c in self.combinations),
            )
        return [c for c in self.combinations if c.key in only or c.claim.name in only]


def _read_source(claim: Claim) -> JsonObject:
    try:
        text = claim.source.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanError(f"{claim.where}: cannot read {claim.source}: {exc}") from None
    return parse_plan_text(text, str(claim.source))


def effective_plan(cat: CatalogueFile, claim: Claim, build: Build, mode: str, base: JsonObject) -> JsonObject:
    """The claim's plan with its overrides and the catalogue's decisions (module docstring)."""
    data = merge(base, claim.overrides)
    plan_dir = claim.source.parent

    def here(value: str) -> str:
        return relative_to_plan(value, cat.base_dir, plan_dir)

    data["name"] = f"{claim.name}.{build.name}.{mode}"
    data["server"] = {**_section(data.get("server")), "backend": build.backend}
    servers = _section(data.get("servers"))
    servers["candidate"] = {**_section(servers.get("candidate")), "executable": here(build.candidate.executable)}
    if build.baseline is not None:
        servers["baseline"] = {**_section(servers.get("baseline")), "executable": here(build.baseline.executable)}
    data["servers"] = servers
    data["model"] = {**_section(data.get("model")), "mode": mode, "admit_modes": [mode]}
    if claim.counts is not None:
        data["counts"] = list(claim.counts)
    identity = _section(data.get("identity"))
    for role, exe in (("candidate", build.candidate), ("baseline", build.baseline)):
        if exe is not None and exe.source_commit:
            identity[role] = {**_section(identity.get(role)), "source_commit": exe.source_commit}
    if identity:
        data["identity"] = identity
    framework = _section(data.get("framework"))
    for key, value in (("record", build.framework_record), ("protected", build.protected)):
        if value:
            framework[key] = here(value)
    if framework:
        data["framework"] = framework
    return data


def expand(cat: CatalogueFile) -> list[Combination]:
    """Every claim x backend x mode; PlanError lists each effective plan's problems."""
    out: list[Combination] = []
    problems: list[str] = []
    seen: dict[tuple[str, str, str], str] = {}
    for claim in cat.claims:
        base = _read_source(claim)
        modes = claim.modes or (str(get(base.get("model") or {}, "mode") or "offline"),)
        for build_key in claim.backends:
            build = cat.builds[build_key]
            for mode in modes:
                data = effective_plan(cat, claim, build, mode, base)
                key = str(data["name"])
                errors = schema_errors(data, "plan")
                if errors:
                    what = "template + overrides" if claim.is_template else "plan + overrides"
                    problems += [f"{claim.where} → {key} ({what}): {e}" for e in errors]
                    continue
                model = data["model"]
                counts = tuple(sorted(as_int(n) for n in iterate(data["counts"])))
                if 1 not in counts:
                    problems.append(f"{claim.where} → {key}: counts {list(counts)} must include 1")
                if claim.shards > len(counts):
                    problems.append(
                        f"{claim.where}.shards: {claim.shards} shards for {len(counts)} count(s): "
                        "a shard would run nothing"
                    )
                ident = (str(item(model, "id")), build_key, mode)
                if ident in seen:
                    problems.append(
                        f"{claim.where} → {key}: model {ident[0]!r} on {build_key}/{mode} is already claimed by "
                        f"{seen[ident]} (one claim per model, build and mode)"
                    )
                seen.setdefault(ident, key)
                out.append(
                    Combination(
                        key=key,
                        claim=claim,
                        build=build,
                        mode=mode,
                        model_id=str(item(model, "id")),
                        family=str(get(model, "family", "")),
                        task=str(get(model, "task", "tts")),
                        counts=counts,
                        data=data,
                    )
                )
    if problems:
        lines = "\n".join(f"  {cat.path.name}: {p}" for p in problems)
        raise PlanError(f"{cat.path}: {len(problems)} problem(s) with the claims' plans:\n{lines}")
    return out


def load_catalogue(path: Path) -> Catalogue:
    """The catalogue with every combination's effective plan (files not checked: see Combination.plan)."""
    cat = read_catalogue(path)
    return Catalogue(cat, tuple(expand(cat)))
