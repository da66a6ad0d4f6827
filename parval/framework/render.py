"""`parval report FRAMEWORK_RUN`: a framework record as markdown, JSON or JUnit."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

from parval.framework.record import RECORD, FrameworkRecord
from parval.report import junit
from parval.report.md_base import esc
from parval.rundir.provenance import label as provenance_label


def load_framework_record(run_dir: Path, rejudge: bool) -> tuple[FrameworkRecord, list[str]]:
    """(record, notes): the directory verified first (a modified one is refused, exit 2),
    then the stored record, or with `rejudge` the one rebuilt from the events (a note names
    every top-level field that differs from the stored one)."""
    from parval.rundir.verified import verified

    check = verified(run_dir)
    stored: FrameworkRecord = json.loads((run_dir / RECORD).read_text("utf-8"))
    if not rejudge:
        return stored, [check.line()]
    from parval.framework.rejudge import rejudge_framework

    record = rejudge_framework(run_dir)
    changed = sorted(k for k in set(record) | set(stored) if record.get(k) != stored.get(k))
    notes = [
        check.line(),
        f"re-judged from events.jsonl; differs from the stored {RECORD} in: {', '.join(changed)}"
        if changed
        else f"re-judged from events.jsonl: identical to the stored {RECORD}",
    ]
    return record, notes


def render_framework(record: FrameworkRecord, fmt: str, notes: list[str]) -> str:
    if fmt == "json":
        return json.dumps(record, indent=2, sort_keys=True) + "\n"
    if fmt == "junit":
        return _junit(record)
    return _markdown(record, notes)


def _markdown(record: FrameworkRecord, notes: list[str]) -> str:
    ident = record["identity"]
    lines = [
        f"## Framework record {record['record_id']}",
        "",
        f"**{record['verdict']['line']}**",
        "",
        f"candidate `{ident['candidate_name']}` sha256 `{ident['candidate_sha256'][:16]}`, backend "
        f"{ident['backend']}, source commit {ident.get('source_commit') or 'not recorded'}, "
        f"procedure {record['procedure_version']}, "
        f"counts covered: {ident.get('counts') or 'none'}, made: {provenance_label(ident.get('provenance'))}",
        "",
    ]
    lines += [f"> {n}" for n in notes]
    lines += ["", "| assertion | status | reason |", "|---|---|---|"]
    for a in record["assertions"]:
        lines.append(f"| {a['id']} | {a['status']} | {esc(str(a['reason'])[:300])} |")
    lines += ["", *[f"- {g['summary']}" for g in record["groups"].values()], ""]
    return "\n".join(lines)


def _junit(record: FrameworkRecord) -> str:
    """One test case per F assertion, as the model run's JUnit has one per assertion."""
    root = ET.Element("testsuites", name="parval framework")
    suite = junit.testsuite(root, record["record_id"], [str(a["status"]) for a in record["assertions"]])
    for a in record["assertions"]:
        junit.assertion_case(suite, "parval.framework", str(a["id"]), str(a["status"]), str(a["reason"]))
    return junit.document(root)
