"""One row of `parval report --catalogue DIR` (`parval.report.catalogue`), as the markdown
and JUnit renderings read it."""

from __future__ import annotations

from typing import TypedDict

from parval.jsontypes import JsonObject, JsonValue


class CatalogueRow(TypedDict, total=False):
    """One run of the catalogue: `dir` and `error` for unreadable evidence, else the rest
    (read from its evidence.json; `superseded_by` set by `mark_superseded`)."""

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
    superseded_by: str | None
