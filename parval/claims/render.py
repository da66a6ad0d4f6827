"""`parval report --catalogue DIR --claims CAT` in md, json or junit, and its exit code
(0 every claimed count ADMITTED · 1 any NOT ADMITTED · 3 otherwise · 2 a bad catalogue or
DIR); `parval.claims.disclosure` decides each row."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from xml.etree import ElementTree as ET

from parval.claims.disclosure import Disclosure, State, disclose
from parval.errors import UsageError
from parval.report.run_table_row import SetAside


def claims_json(d: Disclosure) -> dict[str, object]:
    from parval.claims.render_md import comparison_rows, verdict_line

    return {
        "kind": "parval-claims",
        "schema_version": 1,
        "catalogue": str(d.catalogue.path),
        "name": d.catalogue.name,
        "runs_dir": str(d.runs_dir),
        "line": verdict_line(d),
        "exit_code": d.exit_code,
        "summary": d.summary(),
        "combinations": [c.to_json() for c in d.combinations],
        "comparison": comparison_rows(d),
        "unreadable": d.unreadable,
        "set_aside": [{**r.summary(), "why": why} for r, why in d.set_aside],
    }


def claims_junit(d: Disclosure) -> str:
    """One test case per claimed combination and count, for a merge gate: ADMITTED passes;
    every claim that is not admitted fails, its state the failure's type and the head of its
    message (NOT ADMITTED with the failing assertions; BLOCKED, PENDING, NOT RUN and STALE
    are unverified claims, never "not failing"); HISTORICAL rows are informational (an
    imported record never admits) and are skipped."""
    rows = d.rows
    failed = [r for _, r in rows if r.state not in (State.ADMITTED, State.HISTORICAL)]
    root = ET.Element("testsuites", name="parval claims")
    suite = ET.SubElement(
        root,
        "testsuite",
        name=f"parval claims {d.catalogue.name}",
        tests=str(len(rows) + len(d.set_aside)),
        failures=str(len(failed)),
        errors="0",
        skipped=str(sum(r.state is State.HISTORICAL for _, r in rows) + len(d.set_aside)),
    )
    for run, why in d.set_aside:  # an explicit decision, shown to the gate as a skipped case
        case = ET.SubElement(suite, "testcase", classname="parval.claims.set_aside", name=run.rel)
        ET.SubElement(case, "skipped", message=f"set aside: {why}")
    for c, r in rows:
        case = ET.SubElement(
            suite, "testcase", classname=f"parval.claims.{c.combo.claim.name}", name=f"{c.combo.key}[count={r.count}]"
        )
        message = f"{r.state}: {r.reason[:500]}"
        text = "; ".join(r.blocking[:20])
        if r.state is State.HISTORICAL:
            ET.SubElement(case, "skipped", message=message).text = text or None
        elif r.state is not State.ADMITTED:
            ET.SubElement(case, "failure", message=message, type=str(r.state)).text = text or r.reason
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render_claims(catalogue: Path, runs_dir: Path, fmt: str, set_aside: Sequence[SetAside] = ()) -> tuple[str, int]:
    from parval.claims.combination import load_catalogue

    d = disclose(load_catalogue(catalogue), runs_dir, set_aside)
    if fmt == "json":
        return json.dumps(claims_json(d), indent=2, sort_keys=True) + "\n", d.exit_code
    if fmt == "junit":
        return claims_junit(d), d.exit_code
    from parval.claims.render_md import render_claims_markdown

    return render_claims_markdown(d), d.exit_code


def render_claims_report(
    claims: Path,
    catalogue: Path | None,
    runs: list[Path],
    *,
    fmt: str,
    redact: bool,
    rejudge: bool,
    set_aside: Sequence[SetAside] = (),
) -> tuple[str, int]:
    """`parval report --catalogue DIR --claims CAT` → (text, exit code)."""
    from parval.report.write import check_options

    check_options(fmt, catalogue, set_aside)
    if catalogue is None or runs or rejudge:
        raise UsageError(
            "--claims CAT discloses the runs under --catalogue DIR (no run directories, no --rejudge)",
            hint="parval report --catalogue runs/ --claims plans/catalogue.yaml",
        )
    text, code = render_claims(claims, catalogue, fmt, set_aside)
    if redact:
        from parval.report.redact import redact_paths

        text = redact_paths(text)
    return text, code
