"""`parval report`: markdown for PR comments, the JSON evidence record, JUnit XML."""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree as ET

import markdown

from parval.procedure.assertion_ids import all_ids
from parval.report.markdown import COMMENT_LIMIT
from parval.report.md_base import local_paths

from .kit import Outcome, invoke


def _md(run: Outcome, *extra: str | Path) -> str:
    p = invoke("report", run.dir, *extra)
    assert p.returncode == run.rc, p.stderr
    return p.stdout


def test_markdown_reads_as_a_pr_comment(shard_runs: tuple[Outcome, Outcome], tmp_path: Path) -> None:
    _, run = shard_runs
    out = tmp_path / "comment.md"
    p = invoke("report", run.dir, "--output", out)
    assert p.returncode == 3 and p.stdout == ""
    text = out.read_text()
    # the evidence's verdict line, its list of IDs said as the causes behind them
    line = run.evidence["verdict"]["line"]
    assert text.splitlines()[0].startswith("**parval: evidence collected; validation pending — ")
    assert text.splitlines()[0].endswith(line.rsplit(")", 1)[1] + "**")
    order = [
        "### Checks",
        "| **M1** Scope / serial quality",
        "| **F6** Regressions / sanitizers",
        "### Performance",
        "### Memory",
        "### Every assertion",
    ]
    positions = [text.index(x) for x in order]
    assert positions == sorted(positions)
    assert text.count("<details") == len(all_ids())
    html = markdown.markdown(text, extensions=["tables", "fenced_code"])
    assert html.count("<table>") >= 3
    assert not re.findall(r"!\[[^]]*\]\(([^)]+)\)", text)  # no image a comment could not show
    assert "```mermaid" in text
    assert len(text) <= COMMENT_LIMIT + 2000
    # the unresolved entries are grouped by reason, not hidden
    why = text.split("### Performance")[0].split("### Why it is not admitted")[1]
    assert "Still unresolved" in why and "M2.starts@1" in why and "0 complete start(s) at count 1" in why


def test_admitted_markdown(admitted_run: Outcome) -> None:
    text = _md(admitted_run)
    assert text.startswith("**parval: ADMITTED at counts 1, 2**")
    assert "Why it is not admitted" not in text
    assert "**admitted**" in text
    markdown.markdown(text, extensions=["tables", "fenced_code"])


def test_every_fail_is_explained(failed_run: Outcome) -> None:
    text = _md(failed_run)
    assert text.startswith("**parval: NOT ADMITTED")
    section = text.split("### Performance")[0]
    assert "#### ❌ M2.exact at count 3" in section
    entry = next(
        a for a in failed_run.evidence["model_checks"]["per_count"]["3"]["assertions"] if a["id"] == "M2.exact"
    )
    first = entry["evidence"]["mismatches"][0]
    exact = section.split("#### ❌ M2.exact at count 3")[1].split("#### ")[0]
    assert "| # | run | phase · wave | request | slot | slot history |" in exact
    assert f"| 1 | {first['run']} | {first['phase']} · {first['wave']} | `{first['req']}` |" in exact
    assert first["got_canon"] in exact and first["ref_canon"] in exact  # both hashes, in full
    # the run's files as the Reproduce block shows them from here (relative, or a token when far)
    cmp, _ = local_paths(f"cmp {failed_run.dir}/artifacts/{first['artifact']}.json", Path.cwd())
    assert cmp in exact and str(failed_run.dir) not in exact
    assert "--fault contaminate_3plus" in exact  # the server exactly as it was started
    assert "curl -sS http://127.0.0.1:$PORT/v1/tasks/run" in exact
    assert "parval run " in exact
    html = markdown.markdown(text, extensions=["tables", "fenced_code"])
    assert "M2.exact" in html
    # every FAIL entry has its own explanation
    fails = [
        (n, a["id"])
        for n, c in failed_run.evidence["model_checks"]["per_count"].items()
        for a in c["assertions"]
        if a["status"] == "FAIL"
    ]
    for n, id_ in fails:
        assert f"#### ❌ {id_} at count {n}" in section


def test_json_is_the_evidence_record(admitted_run: Outcome) -> None:
    p = invoke("report", admitted_run.dir, "--format", "json")
    assert json.loads(p.stdout) == admitted_run.evidence


def test_junit_has_one_case_per_assertion(
    shard_runs: tuple[Outcome, Outcome], failed_run: Outcome, tmp_path: Path
) -> None:
    out = tmp_path / "parval.xml"
    assert invoke("report", failed_run.dir, "-f", "junit", "-o", out).returncode == 1
    root = ET.parse(out).getroot()
    suite = root.find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert int(suite.get("tests", "0")) == len(cases)
    failures = [c for c in cases if c.find("failure") is not None]
    assert int(suite.get("failures", "0")) == len(failures) > 0
    names = {c.get("name") for c in cases}
    assert "M2.exact[count=3]" in names and "M1.manifest" in names and "F1.fifo" in names
    ids = {str(n).split("[")[0] for n in names}
    assert set(all_ids()) <= ids
    exact = next(c for c in cases if c.get("name") == "M2.exact[count=3]")
    failure = exact.find("failure")
    assert failure is not None and "got_canon=" in (failure.text or "") and "history=" in (failure.text or "")
    skipped = int(suite.get("skipped", "0"))
    assert skipped == sum(1 for c in cases if c.find("skipped") is not None)
    pending = ET.fromstring(invoke("report", shard_runs[0].dir, "-f", "junit").stdout)
    assert pending.find("testsuite/testcase/skipped") is not None


def test_redact_paths(shard_runs: tuple[Outcome, Outcome]) -> None:
    _, run = shard_runs
    text = invoke("report", run.dir, "--redact-paths").stdout
    assert str(run.dir) not in text and str(run.dir.parent) not in text
    assert "<path:" in text
