"""Historical records: `parval import OLD --procedure VERSION` (procedure E6).

"Label historical evidence with its procedure version and tested hashes. Do not recalculate
old seven-section reports as passes merely by changing the plan. First map
assertions/evidence to M/F entries, retaining failures, missing raw metadata/histories and
changed-binary limitations. New executables do not inherit quality certification."

OLD is either a parval evidence file (or its run directory) of an earlier procedure version,
or a mapping file (YAML/JSON, `kind: parval-historical-mapping`, docs/evidence-across-builds.md "Historical
records") that maps each finding of a hand-written report to M/F entries. The import writes
`historical.json` into a new directory (never over an existing record or run):

* every old finding becomes an entry with its original ID, status, procedure version and
  the tested hashes, mapped to current M/F/X/Q IDs where it can be;
* a FAIL stays FAIL (retained); any other old status stands as PENDING now: an imported PASS
  never counts toward admission, and the record's `admission_ready` is always false;
* what is missing (raw outputs, slot histories, manifest/metadata, tested hashes, unmapped
  findings) and a changed binary (`--candidate`) are listed as limitations.

`parval report --catalogue` lists historical records apart from current runs.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import NotRequired, TypedDict

import yaml

from parval import PROCEDURE_VERSION, __version__
from parval.errors import InputFileError, RunDirError, UsageError
from parval.jsonread import iterate
from parval.jsontypes import JsonValue
from parval.procedure.assertion_ids import all_ids

HISTORICAL = "historical.json"
MAPPING_KIND = "parval-historical-mapping"
RECORD_KIND = "parval-historical-record"
TESTED_KEYS = ("candidate_sha256", "baseline_sha256", "model_sha256", "candidate_commit")
IDENTITY_KEYS = ("model", "family", "task", "backend", "mode")
_STATUSES = {"PASS", "FAIL", "PENDING", "BLOCKED", "UNSUPPORTED", "NOT_APPLICABLE"}


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _read(path: Path) -> object:
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(f"cannot read {path}: {exc}") from exc
    try:
        return json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise UsageError(f"{path}: not valid JSON/YAML: {str(exc).splitlines()[0]}") from exc


def _mapping(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


class HistoricalEntry(TypedDict):
    """One old finding as the historical record lists it."""

    original_id: str
    maps_to: list[str]
    original_status: str
    original_reason: str
    status: str
    reason: str
    counts: list[int]
    procedure_version: str
    tested: Mapping[str, object]
    source: str


class HistoricalVerdict(TypedDict):
    line: str
    admitted_counts: list[int]


class HistoricalRecord(TypedDict):
    """historical.json (see the module docstring)."""

    kind: str
    schema_version: int
    historical: bool
    record_id: str
    imported_at: str
    parval_version: str
    procedure_version: str
    current_procedure_version: str
    source: dict[str, object]
    identity: dict[str, object]
    tested: dict[str, object]
    entries: list[HistoricalEntry]
    failures: list[str]
    limitations: list[str]
    admission_ready: bool
    counts_toward_admission: bool
    verdict: HistoricalVerdict


class ReportSource(TypedDict):
    """The hand-written report a mapping file maps (and its hash when it is there)."""

    report: str
    report_sha256: str | None


class ImportedBody(TypedDict):
    """What a historical record is built from, whichever format it was read from."""

    identity: dict[str, object]
    tested: dict[str, object]
    entries: list[HistoricalEntry]
    limitations: list[str]
    format: str
    report: NotRequired[str]
    report_sha256: NotRequired[str | None]


def _known(id_: str) -> bool:
    return id_ in all_ids()


def _standing(original: str, version: str) -> tuple[str, str]:
    """(current status, why): failures are retained, nothing else counts now."""
    if original == "FAIL":
        return "FAIL", f"failure retained from procedure {version}"
    return "PENDING", (
        f"historical {original} under procedure {version}; never counts toward admission "
        f"under procedure {PROCEDURE_VERSION}: re-run it"
    )


def _entry(
    original_id: str,
    maps_to: list[str],
    original: str,
    version: str,
    tested: Mapping[str, object],
    counts: list[int] | None = None,
    source: str = "",
    reason: str = "",
) -> HistoricalEntry:
    status, why = _standing(original, version)
    return {
        "original_id": original_id,
        "maps_to": maps_to,
        "original_status": original,
        "original_reason": reason,
        "status": status,
        "reason": why,
        "counts": counts or [],
        "procedure_version": version,
        "tested": tested,
        "source": source,
    }


# -- from a parval evidence file ------------------------------------------------------------
def _from_evidence(ev: Mapping[str, object], run_dir: Path | None, version: str) -> ImportedBody:
    ident = _mapping(ev.get("identity"))
    tested = {k: ident.get(k) for k in TESTED_KEYS}
    limitations: list[str] = []
    entries: list[HistoricalEntry] = []
    for a in iterate(ev.get("assertions") or []):
        if not isinstance(a, dict) or "id" not in a:
            continue
        aid, st = str(a["id"]), str(a.get("status"))
        if st not in _STATUSES:
            limitations.append(f"entry {aid}: unknown status {st!r}, read as not passing")
            st = "PENDING"
        maps = [aid] if _known(aid) else []
        per = (a.get("evidence") or {}).get("per_count") if isinstance(a.get("evidence"), dict) else None
        counts = sorted(int(n) for n in per if str(n).isdigit()) if isinstance(per, dict) else []
        entries.append(
            _entry(aid, maps, st, version, tested, counts, "evidence.json assertions", str(a.get("reason", "")))
        )
    if run_dir is None:
        limitations.append(
            "imported without its run directory: no recorded events, raw outputs, slot histories or manifest"
        )
    else:
        if not (run_dir / "events.jsonl").exists():
            limitations.append("no recorded events (events.jsonl): slot histories and request timings missing")
        if not (run_dir / "artifacts").is_dir():
            limitations.append("no raw outputs (artifacts/): outputs cannot be re-compared")
        if not (run_dir / "manifest.json").exists():
            limitations.append("no manifest.json: build, platform and settings metadata missing")
    return _imported(ident, tested, entries, limitations, "parval-evidence")


def _imported(
    ident: Mapping[str, object],
    tested: dict[str, object],
    entries: list[HistoricalEntry],
    limitations: list[str],
    fmt: str,
    source: ReportSource | None = None,
) -> ImportedBody:
    """The body of a historical record, whichever format it was read from."""
    body: ImportedBody = {
        "identity": {k: ident.get(k) for k in IDENTITY_KEYS},
        "tested": tested,
        "entries": entries,
        "limitations": limitations,
        "format": fmt,
    }
    if source is not None:
        body["report"] = source["report"]
        body["report_sha256"] = source["report_sha256"]
    return body


# -- from a mapping file --------------------------------------------------------------------
def _from_mapping(data: Mapping[str, object], base: Path, version: str) -> ImportedBody:
    tested_raw = _mapping(data.get("tested"))
    tested = {k: tested_raw.get(k) for k in TESTED_KEYS}
    ident_raw = _mapping(data.get("identity"))
    findings = data.get("findings")
    if not isinstance(findings, list) or not findings:
        raise UsageError("mapping file: `findings` must be a non-empty list")
    entries: list[HistoricalEntry] = []
    limitations = [str(x) for x in iterate(data.get("limitations") or [])]
    for i, f in enumerate(findings, 1):
        if not isinstance(f, dict):
            raise UsageError(f"mapping file: findings[{i - 1}] must be a mapping")
        st = str(f.get("status", "")).upper()
        if st not in _STATUSES:
            raise UsageError(
                f"mapping file: findings[{i - 1}].status {f.get('status')!r}: use one of "
                + ", ".join(sorted(_STATUSES))
            )
        maps = [str(m) for m in (f.get("maps_to") or [])]
        unknown = [m for m in maps if not _known(m)]
        if unknown:
            raise UsageError(
                f"mapping file: findings[{i - 1}].maps_to names unknown assertion(s) "
                f"{', '.join(unknown)} (see procedure-assertions)"
            )
        label = str(f.get("section") or f"finding {i}")
        if not maps:
            limitations.append(f"{label}: not mapped to any M/F entry")
        counts = [int(n) for n in f.get("counts") or []]
        entries.append(_entry(label, maps, st, version, tested, counts, label, str(f.get("finding", ""))))
    if not data.get("raw_outputs"):
        limitations.append("raw outputs not available: outputs cannot be re-compared")
    if not data.get("slot_histories"):
        limitations.append("slot histories not available: Q4/M3.history cannot be re-checked")
    report = data.get("report")
    source: ReportSource | None = None
    if report:
        rp = Path(str(report))
        rp = rp if rp.is_absolute() else base / rp
        source = {"report": str(rp), "report_sha256": file_sha256(rp) if rp.is_file() else None}
        if not rp.is_file():
            limitations.append(f"the mapped report {rp} is not available to check against")
    return _imported(ident_raw, tested, entries, limitations, "mapping", source)


# -- the record -----------------------------------------------------------------------------
def build_historical(old: Path, version: str, *, candidate_sha256: str | None = None) -> HistoricalRecord:
    """The historical record for OLD (see the module docstring)."""
    if not version.strip():
        raise UsageError("--procedure: give the procedure version OLD was made under")
    if version == PROCEDURE_VERSION:
        raise UsageError(
            f"--procedure {version} is the current procedure version: that evidence is current, not historical",
            hint="use `parval report RUN` (or --rejudge) for it",
        )
    path = old / "evidence.json" if old.is_dir() else old
    if not path.is_file():
        raise InputFileError(f"{old}: no such file (or no evidence.json in that directory)")
    data = _read(path)
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a mapping at the top level")
    if data.get("kind") == MAPPING_KIND:
        stated = data.get("procedure_version")
        body = _from_mapping(data, path.parent, version)
    elif "assertions" in data and "identity" in data:
        stated = data.get("procedure_version")
        body = _from_evidence(data, path.parent if path.name == "evidence.json" else None, version)
    else:
        raise UsageError(
            f"{path}: neither a parval evidence file nor a mapping file "
            f"(kind: {MAPPING_KIND}); docs/evidence-across-builds.md, 'Historical records', shows the format"
        )
    if stated is not None and str(stated) != version:
        raise UsageError(f"{path} says procedure version {stated}, --procedure says {version}")
    tested = body["tested"]
    limitations = list(body["limitations"])
    for k in TESTED_KEYS:
        if not tested.get(k):
            limitations.append(f"tested {k} not recorded")
    if candidate_sha256 and tested.get("candidate_sha256") != candidate_sha256:
        limitations.append(
            f"changed binary: the tested candidate {str(tested.get('candidate_sha256'))[:12]} "
            f"is not the current candidate {candidate_sha256[:12]}; new executables inherit "
            "no quality certification"
        )
    limitations.append(
        f"made under procedure {version}; under procedure {PROCEDURE_VERSION} it never counts toward admission"
    )
    entries = body["entries"]
    failures = sorted({e["original_id"] for e in entries if e["status"] == "FAIL"})
    digest = file_sha256(path)
    line = (
        f"HISTORICAL evidence (procedure {version}): "
        f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}, "
        f"{len(failures)} failure(s) retained; "
        f"not admission evidence under procedure {PROCEDURE_VERSION}"
    )
    return {
        "kind": RECORD_KIND,
        "schema_version": 1,
        "historical": True,
        "record_id": f"hist-{digest[:12]}",
        "imported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "parval_version": __version__,
        "procedure_version": version,
        "current_procedure_version": PROCEDURE_VERSION,
        "source": _source(path, digest, body),
        "identity": body["identity"],
        "tested": tested,
        "entries": entries,
        "failures": failures,
        "limitations": list(dict.fromkeys(limitations)),
        "admission_ready": False,
        "counts_toward_admission": False,
        "verdict": {"line": line, "admitted_counts": []},
    }


def _source(path: Path, digest: str, body: ImportedBody) -> dict[str, object]:
    """The record's `source`: the file imported, and the report a mapping file maps."""
    source: dict[str, object] = {"path": str(path), "sha256": digest, "format": body["format"]}
    if "report" in body:
        source["report"] = body["report"]
    if "report_sha256" in body:
        source["report_sha256"] = body["report_sha256"]
    return source


def write_historical(record: HistoricalRecord, out: Path) -> Path:
    """Write into a new directory; an existing record or run is never overwritten."""
    if (out / HISTORICAL).exists() or (out / "evidence.json").exists() or (out / "events.jsonl").exists():
        raise RunDirError(
            f"{out}: already holds a record or run; parval never overwrites evidence", hint="choose another --out"
        )
    if out.exists() and not out.is_dir():
        raise RunDirError(f"{out}: exists and is not a directory", hint="choose another --out")
    from parval.rundir.files import write_json

    out.mkdir(parents=True, exist_ok=True)
    write_json(out / HISTORICAL, record)
    return out / HISTORICAL


# -- catalogue ------------------------------------------------------------------------------
class HistoricalRow(TypedDict, total=False):
    """One historical record of the catalogue: `dir` and `error` when unreadable, else the rest."""

    dir: str
    error: str
    record_id: JsonValue
    model: JsonValue
    backend: JsonValue
    mode: JsonValue
    procedure_version: JsonValue
    candidate_sha256: JsonValue
    entries: int
    failures: list[str]
    limitations: int
    imported_at: JsonValue
    admission_ready: bool


def historical_rows(root: Path) -> list[HistoricalRow]:
    rows: list[HistoricalRow] = []
    for p in sorted(root.rglob(HISTORICAL)):
        d = p.parent
        rel = str(d.relative_to(root)) if d != root else "."
        try:
            rec = json.loads(p.read_text("utf-8"))
            ident, tested = rec["identity"], rec["tested"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            rows.append({"dir": rel, "error": f"unreadable historical record: {exc}"})
            continue
        rows.append(
            {
                "dir": rel,
                "record_id": rec.get("record_id"),
                "model": ident.get("model"),
                "backend": ident.get("backend"),
                "mode": ident.get("mode"),
                "procedure_version": rec.get("procedure_version"),
                "candidate_sha256": tested.get("candidate_sha256"),
                "entries": len(rec.get("entries") or []),
                "failures": rec.get("failures") or [],
                "limitations": len(rec.get("limitations") or []),
                "imported_at": rec.get("imported_at"),
                "admission_ready": False,
            }
        )
    return rows
