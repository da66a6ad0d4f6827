"""One row of `parval report --catalogue DIR` (`parval.report.run_table`), as the markdown
and JUnit renderings read it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from parval.jsontypes import JsonObject, JsonValue
from parval.rundir.mismatch_bound import MismatchBound


class CatalogueRow(TypedDict, total=False):
    """One run of the catalogue: `dir` and `error` for unreadable evidence, else the rest
    (read from its evidence.json)."""

    dir: str
    error: str
    model: JsonValue
    family: JsonValue
    task: JsonValue
    backend: JsonValue
    mode: JsonValue
    admitted_counts: list[int]
    admission_ready: JsonValue
    exit_code: JsonValue
    blocking: list[str]
    date: JsonValue
    candidate_sha256: JsonValue
    shard: list[int] | None
    procedure_version: JsonValue
    provenance: JsonObject | None


class RunWhy(TypedDict):
    dir: str
    why: str


class CatalogueVerdict(TypedDict):
    """One verdict of the catalogue: every run of one model/family/task/backend/mode that
    tested the newest candidate build, merged as `parval report RUN...` merges them
    (`parval.report.evidence_found.merge_current`); runs of older builds are stale."""

    model: JsonValue
    family: JsonValue
    task: JsonValue
    backend: JsonValue
    mode: JsonValue
    candidate_sha256: JsonValue
    runs: list[str]  # merged into this verdict
    exit_code: int
    admitted_counts: list[int]
    blocking: list[str]
    failed_apart: list[str]  # counts FAILED in a run kept apart by provenance, or under stricter rules
    not_used: list[RunWhy]  # another tested identity (plan settings, files): not merged
    stale: list[RunWhy]  # runs of another candidate build: never current
    historical: list[RunWhy]  # runs of another procedure version, beside current ones: never current
    # per count: overlapped outputs and mismatches summed over `runs`, and their bound
    bounds: dict[str, MismatchBound]


@dataclass(frozen=True)
class SetAside:
    """A run left out of every verdict by an explicit decision (`--set-aside RUN --reason
    TEXT`): the only way an older run leaves a verdict, and every format shows it."""

    run: Path
    reason: str
