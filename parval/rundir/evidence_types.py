"""The evidence record (evidence.json, `schemas/evidence.schema.json`) as the judge writes it
and the report, the catalogue and the claims disclosure read it: one TypedDict per object of
the schema. The judge builds each block the gates hand it through a reader below that checks
it against the schema (`evidence_block`); a record read from disk is not checked here, so a
reader that needs a value's exact type of an open part (an assertion's raw `evidence`)
still narrows it."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import NotRequired, TypedDict, TypeGuard, cast

import jsonschema

from parval.jsontypes import JsonObject, JsonValue
from parval.plan.schemas import format_path, load_schema
from parval.rundir.mismatch_bound import MismatchBound


# -- the performance table (P5), as parval.gates.performance writes it ------------------
class TimeStats(TypedDict, total=False):
    """One series' figures in the evidence's `performance` rows (`parval.gates.performance`)."""

    n: int
    failed_repeats: int
    failed_requests: int
    estimate: bool
    cold_s: float | None
    median_s: float | None
    min_s: float | None
    max_s: float | None
    latency_s: JsonObject | None
    blocked: str  # only when the series could not run for memory reasons
    candidate_saved_pct: float | None  # independent servers only


class PerformanceRow(TypedDict):
    """One N of the evidence's `performance` table."""

    count: int
    backend_model: str
    model_checks: str
    framework_checks: str
    admitted: bool
    base_one_request: TimeStats | None
    candidate_one_slot: TimeStats | None
    base_n_serial: TimeStats | None
    candidate_n_slots: TimeStats | None
    one_request_saved_pct: float | None
    n_saved_pct: float | None
    candidate_serial_n: TimeStats | None
    independent_servers: TimeStats | str
    status: str
    pending: list[str]


class RejectionLatency(TypedDict):
    count: int
    n: int  # the 503 replies the figures are made of
    median_ms: float | None
    min_ms: float | None
    max_ms: float | None
    latencies_ms: list[float]
    not_503: NotRequired[int | None]  # replies of another status, left out


class Performance(TypedDict, total=False):
    """The evidence's `performance` object, as the report reads it."""

    status: str
    model_checks: str
    framework_checks: str
    memory_verdict: str
    rows: list[PerformanceRow]
    samples: list[JsonObject]
    rejection_latency: list[RejectionLatency]
    notes: list[str]
    campaign_overhead: JsonObject  # a single run's record; a merged record has none


class RequestRecord(TypedDict, total=False):
    """One request in a comparison assertion's evidence (a mismatch, an error, a malformed
    reply, ...): where it ran, its slot history and both hashes."""

    run: JsonValue
    phase: JsonValue
    wave: JsonValue
    req: JsonValue
    slot: JsonValue
    history: JsonValue
    got_canon: JsonValue
    ref_canon: JsonValue
    ref: JsonValue
    artifact: JsonValue
    ref_artifact: JsonValue
    got_audio: JsonObject
    ref_audio: JsonObject
    error: JsonValue
    problem: JsonValue
    outcome: JsonValue
    status: JsonValue
    overlapped: bool  # produced while another request of the model was executing


class AssertionEvidence(TypedDict, total=False):
    """An assertion's raw facts (open: each gate records its own); the request lists the
    failure sections read by name, with their totals before shortening."""

    mismatches: list[RequestRecord]
    mismatch_count: int
    errors: list[RequestRecord]
    errors_count: int
    malformed: list[RequestRecord]
    malformed_count: int
    indeterminate: list[RequestRecord]
    indeterminate_count: int
    no_reference: list[RequestRecord]
    no_reference_count: int
    bound: MismatchBound  # M2.exact, M3's comparisons and each count's Q5


class Assertion(TypedDict):
    """One judged entry (E2)."""

    id: str
    status: str
    applicable: bool
    reason: str
    evidence: AssertionEvidence
    reproduction: str
    limitations: list[str]
    count: NotRequired[int]


class RunInfo(TypedDict, total=False):
    """Where the evidence came from and the hashes it was judged from."""

    dir: str | None
    plan: str | None
    plan_sha256: str | None
    events_sha256: str
    events: int
    manifest_sha256: str
    files_sha256: str
    interrupted: bool
    shard: list[int] | None
    merged: bool
    count_sources: dict[str, list[str]]
    provenance: JsonObject | None


class Identity(TypedDict):
    """What this evidence is evidence of (M1.manifest, E1)."""

    model: str
    family: str
    task: str
    mode: str
    backend: str
    candidate_sha256: str | None
    baseline_sha256: str | None
    model_sha256: str | None


class Verdict(TypedDict):
    line: str
    exit_code: int
    admitted_counts: list[int]
    counts: dict[str, str]  # the verdict per count (string keys)
    # executables whose first start exited before it was ready (rundir/cannot_start.py)
    cannot_start: NotRequired[list[JsonObject]]


class CountChecks(TypedDict):
    """One count's M1-M6 entries."""

    status: str
    groups: dict[str, str]
    assertions: list[Assertion]
    sources: NotRequired[list[str]]


class ModelChecks(TypedDict):
    status: str
    groups: dict[str, str]
    per_count: dict[str, CountChecks]
    model_level: list[Assertion]
    variation_effects: NotRequired[JsonValue]
    negative_control: NotRequired[JsonValue]


class FrameworkRecordUsed(TypedDict, total=False):
    """The framework record this evidence relies on (`parval.framework.record_trust`)."""

    path: JsonValue
    identity: JsonObject
    id: JsonValue
    procedure_version: JsonValue
    groups: JsonObject
    verdict: JsonValue


class FrameworkCoverage(TypedDict, total=False):
    """Which counts the framework record covers."""

    record_counts: JsonValue
    run_counts: JsonValue
    missing: JsonValue
    count_scoped: list[str]


class AdapterPath(TypedDict):
    path: str
    why: str


class FrameworkReuse(TypedDict, total=False):
    """The review of a framework record reused for a later build
    (`parval.framework.reuse`)."""

    status: JsonValue
    reused: bool
    reason: JsonValue
    record: JsonValue
    record_commit: str
    candidate_commit: str
    candidate_sha256: JsonValue
    repo: JsonValue
    family: JsonValue
    adapter_paths: list[AdapterPath]
    refused_files: list[str]
    adapter_changes: dict[str, list[str]]  # changed adapter files by model family
    dirty: list[str]
    model_gate_required: list[str]


class FrameworkChecks(TypedDict):
    """F1-F6 (and X4), with the framework record used and its reuse review."""

    status: str
    results: list[Assertion]
    record: NotRequired[FrameworkRecordUsed | None]
    scope: NotRequired[JsonObject]
    assertions: NotRequired[list[str]]
    trusted: NotRequired[bool]
    untrusted_reason: NotRequired[JsonValue]
    coverage: NotRequired[FrameworkCoverage | None]
    reuse: NotRequired[FrameworkReuse | None]


class MergedRun(TypedDict, total=False):
    """A merged record's `merged_from` entry: one run it was merged from."""

    dir: str
    shard: list[int] | None
    counts: list[int]
    plan: str | None
    plan_sha256: str | None
    events_sha256: str | None
    manifest_sha256: str | None
    generated_at: str | None
    interrupted: bool
    verdict: str
    provenance: JsonValue


class Evidence(TypedDict):
    """The whole record (a run's, or a merged one with `merged_from`)."""

    schema_version: int
    procedure_version: str
    # a run's own record: the procedure it is judged under, and a warning where that differs
    judged_with_procedure_version: NotRequired[str]
    procedure_version_differs: NotRequired[bool]
    warnings: NotRequired[list[str]]
    parval_version: NotRequired[str]
    generated_at: NotRequired[str]
    run: RunInfo
    identity: Identity
    verdict: Verdict
    assertions: list[Assertion]
    model_checks: ModelChecks
    framework_checks: FrameworkChecks
    admission_ready: bool
    all_plan_rules: bool
    performance: Performance
    failures: NotRequired[list[JsonObject]]
    merged_from: NotRequired[list[MergedRun]]
    historical: NotRequired[JsonObject]  # parval.procedure.version: another procedure version's evidence
    rules_changed: NotRequired[JsonObject]  # parval.procedure.sealed_rules: judged under rules changed afterwards
    closed_list: NotRequired[JsonObject]  # parval.procedure.closed_list: required assertions missing
    rules_loosened: NotRequired[JsonObject]  # parval.report.rules_loosened: a FAIL under stricter rules
    judgings: NotRequired[list[str]]  # parval.rundir.judgings: how earlier judgings of the run differ (reports)


def built_record(record: Mapping[str, object]) -> Evidence:
    """A record built in memory to this shape by code that declares it as a plain mapping
    (`parval.judge.judge_run`, the merge's blocks from `parval.gates.admission_verdict`): taken as
    the evidence it is, unchanged and unchecked, like a record read back from evidence.json."""
    return cast(Evidence, record)


# -- the blocks the judge writes, each checked against its part of the schema -----------
@cache
def _validator(block: str) -> jsonschema.Draft202012Validator:
    """A validator of one top-level property of the evidence schema (`{block: value}`)."""
    root = load_schema("evidence")
    properties = root["properties"]
    assert isinstance(properties, dict)
    only = {**root, "required": [block], "properties": {block: properties[block]}}
    return jsonschema.Draft202012Validator(only)


def _errors(block: str, value: object) -> list[str]:
    found = sorted(_validator(block).iter_errors({block: value}), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{format_path(e.absolute_path)}: {e.message}" for e in found]


def _mismatch(block: str, value: object) -> ValueError:
    errors = _errors(block, value)
    more = f" (+{len(errors) - 3} more)" if len(errors) > 3 else ""
    return ValueError(f"evidence {block} does not match schemas/evidence.schema.json: " + "; ".join(errors[:3]) + more)


def _is_verdict(value: object) -> TypeGuard[Verdict]:
    return not _errors("verdict", value)


def _is_assertions(value: object) -> TypeGuard[list[Assertion]]:
    return not _errors("assertions", value)


def _is_model_checks(value: object) -> TypeGuard[ModelChecks]:
    return not _errors("model_checks", value)


def _is_framework_checks(value: object) -> TypeGuard[FrameworkChecks]:
    return not _errors("framework_checks", value)


def _is_performance(value: object) -> TypeGuard[Performance]:
    return not _errors("performance", value)


def _is_failures(value: object) -> TypeGuard[list[JsonObject]]:
    return not _errors("failures", value)


def verdict_block(value: object) -> Verdict:
    """`verdict`, checked against the schema (ValueError naming what does not match)."""
    if _is_verdict(value):
        return value
    raise _mismatch("verdict", value)


def assertions_block(value: object) -> list[Assertion]:
    """`assertions`, checked against the schema."""
    if _is_assertions(value):
        return value
    raise _mismatch("assertions", value)


def model_checks_block(value: object) -> ModelChecks:
    """`model_checks`, checked against the schema."""
    if _is_model_checks(value):
        return value
    raise _mismatch("model_checks", value)


def framework_checks_block(value: object) -> FrameworkChecks:
    """`framework_checks`, checked against the schema."""
    if _is_framework_checks(value):
        return value
    raise _mismatch("framework_checks", value)


def performance_block(value: object) -> Performance:
    """`performance`, checked against the schema."""
    if _is_performance(value):
        return value
    raise _mismatch("performance", value)


def failures_block(value: object) -> list[JsonObject]:
    """`failures`, checked against the schema."""
    if _is_failures(value):
        return value
    raise _mismatch("failures", value)
