"""Evidence → JUnit XML: one test case per assertion (per count where judged per count)."""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree as ET


def render_junit(ev: dict[str, Any]) -> str:
    cases: list[tuple[str, str, dict[str, Any]]] = []
    for a in ev["assertions"]:
        per = a["evidence"].get("per_count") if isinstance(a.get("evidence"), dict) else None
        if per:
            for n, item in sorted(per.items()):
                cases.append((f"{a['id']}[count={n}]", a["id"].split(".")[0], {**a, **item}))
        else:
            cases.append((a["id"], a["id"].split(".")[0], a))
    suite = ET.Element("testsuite", name=f"parval {ev['identity']['model']}",
                       tests=str(len(cases)),
                       failures=str(sum(c[2]["status"] == "FAIL" for c in cases)),
                       errors="0",
                       skipped=str(sum(c[2]["status"] in ("PENDING", "BLOCKED", "UNSUPPORTED", "NOT_APPLICABLE")
                                       for c in cases)))
    for name, group, a in cases:
        case = ET.SubElement(suite, "testcase", classname=f"parval.{group}", name=name)
        status, reason = a["status"], a.get("reason", "")
        if status == "FAIL":
            ET.SubElement(case, "failure", message=reason[:500], type="FAIL").text = reason
        elif status != "PASS":
            ET.SubElement(case, "skipped", message=f"{status}: {reason[:500]}")
    root = ET.Element("testsuites", name="parval")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
