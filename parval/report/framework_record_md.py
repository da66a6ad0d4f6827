"""`parval report FRAMEWORK_RUN`: a framework record (parval.framework.record) shown as
markdown, JSON or JUnit."""

from __future__ import annotations

import json
from xml.etree import ElementTree as ET

from parval.framework.record import FrameworkRecord
from parval.report import junit
from parval.report.md_base import esc
from parval.rundir.provenance import label as provenance_label


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
