"""The framework record: identity (what was tested, where), one result per F assertion,
group summaries that are never a blanket pass over partial contract areas, the CTest runs
and the verdict. Validated against schemas/framework.schema.json before it is written, and
shown by `parval report FRAMEWORK_RUN` (parval.report.framework_record_md).

Format history: schema_version 1 = first version. Model evidence reads `identity`,
`record_id` and `assertions` (parval/framework/record_trust.py).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path
from typing import Literal, NotRequired, TypedDict, get_args

from parval import PROCEDURE_VERSION, __version__
from parval.errors import EXIT_ADMITTED, EXIT_FAILED, EXIT_INCOMPLETE
from parval.framework import contract
from parval.framework.ctest import CTestRun
from parval.framework.judges import Check
from parval.framework.probe_context import FrameworkContext
from parval.framework.probe_run import ProbeOutcome
from parval.jsontypes import JsonObject
from parval.plan.schemas import schema_errors, schema_version
from parval.procedure.assertion_ids import FRAMEWORK_GATE, group_of
from parval.rundir.files import sha256_file, write_json
from parval.rundir.manifest import HostPlatform, driver_version, gpu_info, host_platform
from parval.rundir.provenance import Provenance
from parval.rundir.provenance import detect as detect_provenance
from parval.status import Result, Status, combine

RECORD = "record.json"
SCHEMA_VERSION = schema_version("framework")


class Identity(TypedDict):
    """The scope a record speaks for (`identity`): one source/build/platform/backend, and the
    flagged counts it covers (`counts`, added when the results are judged)."""

    candidate_sha256: str
    candidate_path: str
    candidate_name: str
    candidate_args: list[str]
    source_commit: str | None
    build_flags: NotRequired[str | list[str] | None]
    backend: str
    counts: NotRequired[list[int]]
    device: int
    threads: int
    platform: HostPlatform
    driver: object
    gpu: JsonObject
    provenance: Provenance
    plan_sha256: str
    plan_path: str
    plan_name: str
    probes_file: dict[str, str | None]


class RecordInputs(TypedDict, total=False):
    """What a record states besides the judged results (the `record_inputs` event;
    `assemble` names a field an old or damaged record lacks, by a KeyError)."""

    identity: Identity
    created_at: str
    procedure_version: str
    parval_version: str
    elapsed_s: float
    scope: dict[str, object]
    contract: dict[str, object]
    probes: list[ProbeOutcome]
    reproduction: str


RecordInputField = Literal[
    "identity",
    "created_at",
    "procedure_version",
    "parval_version",
    "elapsed_s",
    "scope",
    "contract",
    "probes",
    "reproduction",
]
RECORD_INPUT_FIELDS: tuple[RecordInputField, ...] = get_args(RecordInputField)


class GroupSummary(TypedDict):
    """One F group's line in the record (`groups`)."""

    status: str
    assertions: list[str]
    coverage: str  # full or partial
    blanket_pass: bool
    partial_areas: list[str]
    summary: str


class RecordVerdict(TypedDict):
    """The record's verdict and the exit code `parval framework` ends with."""

    status: str
    exit_code: int
    line: str


class FrameworkRecord(TypedDict):
    """record.json (schemas/framework.schema.json); `assertions` and `ctest_runs` hold
    Result.to_json and CTestRun.to_json rows."""

    schema_version: int
    kind: str
    record_id: str
    procedure_version: str
    parval_version: str
    created_at: str
    elapsed_s: float
    identity: Identity
    scope: dict[str, object]
    contract: dict[str, object]
    assertions: list[dict[str, object]]
    groups: dict[str, GroupSummary]
    probes: list[ProbeOutcome]
    ctest_runs: list[dict[str, object]]
    verdict: RecordVerdict
    reproduction: str


def identity(ctx: FrameworkContext, source_commit: str | None) -> Identity:
    """The scope this record speaks for: one source/build/platform/backend."""
    spec = ctx.plan.candidate
    server = ctx.plan.server
    return {
        "candidate_sha256": sha256_file(ctx.exe),
        "candidate_path": str(ctx.exe),
        "candidate_name": spec.executable,
        "candidate_args": list(spec.args),
        "source_commit": source_commit or ctx.options.source_commit or plan_commit(ctx),
        # Compared when a model run reuses or uses the record: another flag set is another build.
        "build_flags": plan_flags(ctx),
        "backend": server["backend"],
        "counts": covered_counts(ctx.findings.checks),
        "device": server["device"],
        "threads": server["threads"],
        "platform": host_platform(),
        # What a model run on another device or driver must not inherit, and where the
        # record was made (local and CI results are distinct).
        "driver": driver_version(str(server["backend"])) or ctx.plan.identity.get("driver"),
        "gpu": gpu_info(),
        "provenance": detect_provenance(),
        "plan_sha256": ctx.plan.sha256,
        "plan_path": str(ctx.plan.path),
        "plan_name": ctx.plan.name,
        "probes_file": {"path": ctx.options.path, "sha256": ctx.options.sha256},
    }


def plan_commit(ctx: FrameworkContext) -> str | None:
    ident = ctx.plan.raw.get("identity")
    cand = ident.get("candidate") if isinstance(ident, dict) else None
    value = cand.get("source_commit") if isinstance(cand, dict) else None
    return value if isinstance(value, str) and value else None


def plan_flags(ctx: FrameworkContext) -> str | list[str] | None:
    """The plan's `identity.candidate.build_flags` (None when it names none)."""
    ident = ctx.plan.raw.get("identity")
    cand = ident.get("candidate") if isinstance(ident, dict) else None
    value = cand.get("build_flags") if isinstance(cand, dict) else None
    if isinstance(value, str) and value:
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value) and value:
        return [str(v) for v in value]
    return None


def covered_counts(checks: list[Check]) -> list[int]:
    """Flagged counts whose FIFO order and first-load pool drain both passed here (count 1
    by the capacity-one probe): what a model run may rely on this record for."""
    passed = {(c.assertion, c.name) for c in checks if c.status is Status.PASS}
    counts = set()
    for c in checks:
        m = re.fullmatch(r"first_publish@(\d+)", c.name)
        if c.assertion != "F2.first_publish" or m is None:
            continue
        n = int(m.group(1))
        fifo = "F1.cap1_fifo" if n == 1 else "F1.fifo"
        if (c.assertion, c.name) in passed and (fifo, f"forced_order@{n}") in passed:
            counts.add(n)
    return sorted(counts)


def record_id(ident: Identity, stamp: str) -> str:
    digest = hashlib.sha256(json.dumps({**ident, "stamp": stamp}, sort_keys=True).encode()).hexdigest()
    return f"fw-{stamp}-{ident['candidate_sha256'][:8]}-{digest[:8]}"


def groups(results: list[Result]) -> dict[str, GroupSummary]:
    out: dict[str, GroupSummary] = {}
    for g in sorted({group_of(r.id) for r in results}):
        members = [r for r in results if group_of(r.id) == g]
        status = combine(r.status for r in members)
        partial = sorted(
            {
                a
                for r in members
                for a in contract.COVERAGE.get(r.id, contract.Coverage((), ())).areas
                if contract.AREAS[a] != "Directly tested"
            }
        )
        limited = [r.id for r in members if r.limitations]
        blanket = status is Status.PASS and not partial and not limited
        if status is Status.PASS and not blanket:
            summary = (
                f"{g} PASS with partial coverage: every assertion passed, but contract area(s) "
                f"{', '.join(partial)} are partially tested and {len(limited)} assertion(s) carry "
                "limitations; not a blanket pass"
            )
        else:
            counts = {s: sum(1 for r in members if r.status is s) for s in Status}
            summary = f"{g} {status}: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n)
        out[g] = {
            "status": str(status),
            "assertions": [r.id for r in members],
            "coverage": "partial" if (partial or limited) else "full",
            "blanket_pass": blanket,
            "partial_areas": partial,
            "summary": summary,
        }
    return out


def verdict(results: list[Result]) -> RecordVerdict:
    applicable = [r for r in results if r.applicable]
    status = combine(r.status for r in applicable)
    if status is Status.PASS:
        code, line = (EXIT_ADMITTED, "every applicable F assertion PASS (partial contract areas noted)")
    elif status is Status.FAIL:
        failed = [r.id for r in applicable if r.status is Status.FAIL]
        code, line = EXIT_FAILED, f"FAIL: {', '.join(failed)}"
    else:
        open_ = [f"{r.id} {r.status}" for r in applicable if r.status is not Status.PASS]
        code, line = EXIT_INCOMPLETE, "evidence collected; validation pending: " + ", ".join(open_)
    return {"status": str(status), "exit_code": code, "line": line}


def assemble(inputs: RecordInputs, results: list[Result], runs: list[CTestRun], checks: list[Check]) -> FrameworkRecord:
    """The record from its recorded inputs and the judged results (also for --rejudge)."""
    missing = [a for a in FRAMEWORK_GATE if a not in {r.id for r in results}]
    if missing:
        raise RuntimeError(f"framework record lacks {missing}")
    ident: Identity = {**inputs["identity"], "counts": covered_counts(checks)}
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "parval-framework-record",
        "record_id": record_id(ident, inputs["created_at"]),
        "procedure_version": inputs["procedure_version"],
        "parval_version": inputs["parval_version"],
        "created_at": inputs["created_at"],
        "elapsed_s": inputs["elapsed_s"],
        "identity": ident,
        "scope": inputs["scope"],
        "contract": inputs["contract"],
        "assertions": [r.to_json() for r in results],
        "groups": groups(results),
        "probes": inputs["probes"],
        "ctest_runs": [r.to_json() for r in runs],
        "verdict": verdict(results),
        "reproduction": inputs["reproduction"],
    }


def record_inputs(
    ctx: FrameworkContext,
    *,
    started: float,
    outcomes: list[ProbeOutcome],
    selection: list[str],
    source_commit: str | None,
    argv: list[str],
) -> RecordInputs:
    """What the record states besides judged results, fixed when the probes end."""
    ident = identity(ctx, source_commit)
    ident.pop("counts")
    return {
        "procedure_version": PROCEDURE_VERSION,
        "parval_version": __version__,
        "created_at": time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started)),
        "elapsed_s": round(time.time() - started, 3),
        "identity": ident,
        "scope": {
            "capacity": ctx.capacity,
            "counts_tested": [n for n in ctx.plan.counts if n <= (ctx.capacity or 1)],
            "plan_counts": ctx.plan.counts,
            "ui_management": ctx.ui,
            "model": {
                "id": ctx.model_id,
                "family": ctx.plan.model["family"],
                "task": ctx.plan.model["task"],
                "mode": ctx.plan.model["mode"],
                "path": str(ctx.plan.model_path),
                "sha256": sha256_file(ctx.plan.model_path) if ctx.plan.model_path.is_file() else None,
            },
            "timing": ctx.timing.to_json() if ctx.timing else None,
            "selection": selection,
            "notes": ctx.notes,
            "capabilities": ctx.caps.to_json(),
        },
        "contract": {"version": contract.CONTRACT_VERSION, "document": contract.CONTRACT_DOC, "areas": contract.AREAS},
        "probes": outcomes,
        "reproduction": " ".join(argv),
    }


def write_record(run_dir: Path, record: FrameworkRecord) -> Path:
    errors = schema_errors(record, "framework")
    if errors:
        raise RuntimeError("framework record does not validate: " + "; ".join(errors[:5]))
    path = run_dir / RECORD
    write_json(path, record)
    return path
