"""Evidence → JUnit XML for CI dashboards.

One test case per assertion, and per count where the assertion is judged per count
(`M2.exact[count=2]`). PASS passes; FAIL is a <failure> whose text names the mismatching
requests (run, phase, wave, request, slot history, both hashes) and the reproduction
command; PENDING/BLOCKED/UNSUPPORTED/NOT_APPLICABLE are <skipped> with their status and
reason (they are not failures of the candidate, but they do keep it from admission)."""

from __future__ import annotations

from typing import Literal
from xml.etree import ElementTree as ET

from parval.report.failures_md import campaign_command
from parval.report.md_base import detailed
from parval.report.run_table_row import CatalogueRow, CatalogueVerdict, RunWhy
from parval.rundir.evidence_types import Assertion, AssertionEvidence, Evidence
from parval.rundir.mismatch_bound import MismatchBound, count_bound

SKIPPED = ("PENDING", "BLOCKED", "UNSUPPORTED", "NOT_APPLICABLE", "HISTORICAL", "RULES CHANGED")
_PROBLEM_KEYS: tuple[Literal["errors", "malformed", "indeterminate", "no_reference"], ...] = (
    "errors",
    "malformed",
    "indeterminate",
    "no_reference",
)


def _failure_text(a: Assertion, ev: Evidence, count: int | None) -> str:
    lines = [str(a.get("reason", ""))]
    e: AssertionEvidence = a.get("evidence") or {}
    for m in (e.get("mismatches") or [])[:10]:
        lines.append(
            f"mismatch: run={m.get('run')} phase={m.get('phase')} wave={m.get('wave')} "
            f"req={m.get('req')} slot={m.get('slot')} history={m.get('history')} "
            f"got_canon={m.get('got_canon')} ref_canon={m.get('ref_canon')} "
            f"artifact={m.get('artifact')} ref_artifact={m.get('ref_artifact')}"
        )
    for key in _PROBLEM_KEYS:
        for m in (e.get(key) or [])[:5]:
            lines.append(
                f"{key}: run={m.get('run')} phase={m.get('phase')} wave={m.get('wave')} "
                f"req={m.get('req')} history={m.get('history')} "
                f"detail={m.get('error') or m.get('problem') or m.get('outcome')}"
            )
    lines.append(f"reproduce: {a.get('reproduction') or campaign_command(ev, count)}")
    return "\n".join(lines)


def cases(ev: Evidence) -> list[tuple[str, str, Assertion, int | None]]:
    """(test name, class name, entry, count) for every judged entry."""
    out: list[tuple[str, str, Assertion, int | None]] = []
    seen: set[str] = set()
    for n, a in detailed(ev):
        name = a["id"] if n is None else f"{a['id']}[count={n}]"
        if name in seen:
            continue
        seen.add(name)
        out.append((name, a["id"].split(".")[0], a, n))
    judged = {a["id"] for _, _, a, _ in out}
    for a in ev["assertions"]:  # anything not judged in detail (never for a complete record)
        if a["id"] not in judged:
            out.append((a["id"], a["id"].split(".")[0], a, None))
    return out


def testsuite(parent: ET.Element, name: str, statuses: list[str]) -> ET.Element:
    """A <testsuite> under `parent` counting its cases' failures and skips by status."""
    return ET.SubElement(
        parent,
        "testsuite",
        name=name,
        tests=str(len(statuses)),
        failures=str(sum(s == "FAIL" for s in statuses)),
        errors="0",
        skipped=str(sum(s in SKIPPED for s in statuses)),
    )


def assertion_case(
    suite: ET.Element, classname: str, name: str, status: str, reason: str, failure_text: str | None = None
) -> ET.Element:
    """One judged assertion as a test case: PASS passes, FAIL is a <failure>, any other
    status a <skipped> naming it (not a failure of the candidate, but no admission either)."""
    case = ET.SubElement(suite, "testcase", classname=classname, name=name)
    if status == "FAIL":
        ET.SubElement(case, "failure", message=reason[:500], type="FAIL").text = failure_text
    elif status != "PASS":
        ET.SubElement(case, "skipped", message=f"{status}: {reason[:500]}")
    return case


def _suite(parent: ET.Element, ev: Evidence, name: str) -> None:
    items = cases(ev)
    hist = ev.get("historical")
    changed = ev.get("rules_changed")
    loose = (ev.get("rules_loosened") or {}).get("reasons")
    missing = ev.get("closed_list")
    marks = [
        *(["HISTORICAL"] if hist else []),
        *(["RULES CHANGED"] if changed else []),
        *(["FAIL"] if loose else []),
        *(["PENDING"] if missing else []),
    ]
    admitted = ev["verdict"]["exit_code"] == 0
    suite = testsuite(parent, name, ["PASS" if admitted else "FAIL", *marks, *(c[2]["status"] for c in items)])
    props = ET.SubElement(suite, "properties")
    for key, value in (
        ("verdict", ev["verdict"]["line"]),
        ("exit_code", ev["verdict"]["exit_code"]),
        ("admitted_counts", ",".join(map(str, ev["verdict"]["admitted_counts"]))),
        ("admission_ready", str(ev["admission_ready"]).lower()),
        ("procedure_version", ev.get("procedure_version")),
        ("candidate_sha256", ev["identity"].get("candidate_sha256")),
    ):
        ET.SubElement(props, "property", name=key, value=str(value))
    for i, differ in enumerate(ev.get("judgings") or [], 1):  # earlier judgings of this run that read otherwise
        ET.SubElement(props, "property", name=f"judgings_differ_{i}", value=differ)
    # How much each count's clean outputs rule out (parval.rundir.mismatch_bound).
    for key, checks in sorted(ev["model_checks"]["per_count"].items(), key=lambda kv: int(kv[0])):
        b = count_bound(checks["assertions"])
        if b is not None:
            for field, value in bound_properties(b):
                ET.SubElement(props, "property", name=f"count_{key}_{field}", value=value)
    model = ev["identity"]["model"]
    # The verdict itself is a case: evidence that admits nothing (pending included) is never
    # green in CI, though each unresolved assertion is only skipped.
    line = str(ev["verdict"]["line"])
    verdict_case = ET.SubElement(suite, "testcase", classname=f"parval.{model}", name="admission")
    if not admitted:
        ET.SubElement(
            verdict_case, "failure", message=line[:500], type=f"exit {ev['verdict']['exit_code']}"
        ).text = line
    if hist:  # another procedure version: a skipped case naming it, as the claims' HISTORICAL rows
        assertion_case(suite, f"parval.{model}", "procedure_version", "HISTORICAL", str(hist.get("reason", "")))
    if changed:  # judged under rules changed after the events: a case naming why
        reasons = changed.get("reasons")
        why = "; ".join(map(str, reasons)) if isinstance(reasons, list) else ""
        assertion_case(suite, f"parval.{model}", "rules_sealed_before_events", "RULES CHANGED", why)
    if isinstance(loose, list) and loose:  # a FAIL under stricter rules: a failed case naming the rules
        assertion_case(suite, f"parval.{model}", "rules_not_loosened_after_fail", "FAIL", "; ".join(map(str, loose)))
    if missing:  # required assertions missing from the evidence
        assertion_case(suite, f"parval.{model}", "closed_list", "PENDING", str(missing.get("reason", "")))
    for test, group, a, count in items:
        status = a["status"]
        failure = _failure_text(a, ev, count) if status == "FAIL" else None
        case = assertion_case(suite, f"parval.{model}.{group}", test, status, str(a.get("reason", "")), failure)
        b = (a.get("evidence") or {}).get("bound")
        if b is not None:
            case_props = ET.Element("properties")
            for field, value in bound_properties(b):
                ET.SubElement(case_props, "property", name=field, value=value)
            case.insert(0, case_props)


def bound_properties(b: MismatchBound) -> list[tuple[str, str]]:
    """A bound as JUnit properties (name, value)."""
    return [
        ("overlapped_outputs", str(b["overlapped"])),
        ("overlapped_differed", str(b["differed"])),
        ("mismatch_rate_upper_95", f"{b['rate_upper_95']:.6g}"),
    ]


def render_junit(ev: Evidence) -> str:
    root = ET.Element("testsuites", name="parval")
    _suite(root, ev, f"parval {ev['identity']['model']}")
    return document(root)


def render_catalogue_junit(
    rows: list[CatalogueRow], verdicts: list[CatalogueVerdict], set_aside: list[RunWhy] | None = None
) -> str:
    """One test case per verdict (every run of one model/backend/mode merged, named by its
    runs): admitted passes, a FAIL fails, the rest is skipped; an unreadable run fails; a
    run set aside is a skipped case whose message is the reason given."""
    set_aside = set_aside or []
    errors = [r for r in rows if "error" in r]
    root = ET.Element("testsuites", name="parval catalogue")
    suite = ET.SubElement(
        root,
        "testsuite",
        name="parval catalogue",
        tests=str(len(verdicts) + len(errors) + len(set_aside)),
        failures=str(len(errors) + sum(v["exit_code"] == 1 for v in verdicts)),
        errors="0",
        skipped=str(sum(v["exit_code"] not in (0, 1) for v in verdicts) + len(set_aside)),
    )
    for w in set_aside:
        case = ET.SubElement(suite, "testcase", classname="parval.set_aside", name=w["dir"])
        ET.SubElement(case, "skipped", message=f"set aside: {w['why']}")
    for r in errors:
        case = ET.SubElement(suite, "testcase", classname="parval.unknown", name=str(r["dir"]))
        ET.SubElement(case, "failure", message=str(r.get("error")), type="INVALID")
    for v in verdicts:
        name = " + ".join(v["runs"])
        case = ET.SubElement(suite, "testcase", classname=f"parval.{v['model']}", name=name)
        if v["exit_code"] == 1:
            ET.SubElement(case, "failure", message="; ".join(v["blocking"][:10]), type="FAIL")
        elif v["exit_code"] != 0:
            ET.SubElement(case, "skipped", message="pending: " + "; ".join(v["blocking"][:10]))
        left = [f"{w['dir']} not merged: {w['why']}" for w in v["not_used"]]
        left += [f"{w['dir']} stale: {w['why']}" for w in v["stale"]]
        left += [f"{w['dir']} historical: {w['why']}" for w in v["historical"]]
        if left:
            ET.SubElement(case, "system-out").text = "\n".join(left)
    return document(root)


def document(root: ET.Element) -> str:
    """The JUnit XML text of `root` (indented, with its declaration)."""
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
