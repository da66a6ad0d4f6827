"""Many runs, one verdict: merging shards, refusing foreign evidence, the catalogue."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import markdown

from parval.plan.load import shard_counts
from parval.plan.schemas import schema_errors
from parval.report.merge import LoadedRun, merge_evidence

from .kit import Outcome, invoke


def _statuses(ev: dict[str, Any]) -> dict[str, str]:
    return {a["id"]: a["status"] for a in ev["assertions"]}


def test_shard_counts_split_by_index() -> None:
    assert shard_counts([1, 2, 4], (1, 2)) == [1, 4]
    assert shard_counts([1, 2, 4], (2, 2)) == [2]
    assert shard_counts([4, 1, 2], None) == [1, 2, 4]
    parts = [shard_counts([1, 2, 3, 4, 5], (i, 3)) for i in (1, 2, 3)]
    assert sorted(n for p in parts for n in p) == [1, 2, 3, 4, 5]


def test_two_shards_give_the_unsharded_verdict(admitted_run: Outcome, shard_runs: tuple[Outcome, Outcome]) -> None:
    one, two = shard_runs
    assert one.evidence["run"]["shard"] == [1, 2] and two.evidence["run"]["shard"] == [2, 2]
    assert one.rc == two.rc == 3  # each shard alone is incomplete
    p = invoke("report", one.dir, two.dir, "--format", "json")
    merged = json.loads(p.stdout)
    full = admitted_run.evidence
    assert full["verdict"]["admitted_counts"] == [1, 2], full["verdict"]["line"]
    assert p.returncode == admitted_run.rc == 0
    assert merged["verdict"]["admitted_counts"] == full["verdict"]["admitted_counts"]
    assert merged["verdict"]["counts"] == full["verdict"]["counts"]
    assert merged["admission_ready"] is full["admission_ready"] is True
    assert _statuses(merged) == _statuses(full)
    for n, c in full["model_checks"]["per_count"].items():
        got = {a["id"]: a["status"] for a in merged["model_checks"]["per_count"][n]["assertions"]}
        assert got == {a["id"]: a["status"] for a in c["assertions"]}, n
    assert merged["model_checks"]["per_count"]["2"]["sources"] == [str(two.dir)]
    assert [m["dir"] for m in merged["merged_from"]] == [str(one.dir), str(two.dir)]
    assert schema_errors(merged, "evidence") == []


def test_merged_reports_render(shard_runs: tuple[Outcome, Outcome]) -> None:
    one, two = shard_runs
    md = invoke("report", one.dir, two.dir)
    assert md.returncode == 0
    assert md.stdout.splitlines()[0] == "**parval: ADMITTED at counts 1, 2 (merged from 2 runs)**"
    assert "Merged from 2 runs" in md.stdout
    markdown.markdown(md.stdout, extensions=["tables", "fenced_code"])
    xml = invoke("report", one.dir, two.dir, "--format", "junit")
    suite = ET.fromstring(xml.stdout).find("testsuite")
    assert suite is not None and suite.get("failures") == "0"


def test_a_count_no_run_covered_stays_pending(shard_runs: tuple[Outcome, Outcome]) -> None:
    one, _ = shard_runs
    merged = merge_evidence([LoadedRun(one.dir, one.evidence)])
    assert merged["verdict"]["counts"]["2"] == "PENDING"
    reasons = {a["reason"] for a in merged["model_checks"]["per_count"]["2"]["assertions"]}
    assert reasons == {"count 2 was not run by any of the merged runs"}
    assert merged["verdict"]["counts"]["1"] == "PENDING"  # M4/M6 only run in the largest count's shard
    assert merged["verdict"]["admitted_counts"] == [] and merged["verdict"]["exit_code"] == 3
    m4 = {a["status"] for a in merged["model_checks"]["model_level"] if a["id"].startswith("M4.")}
    assert "PENDING" in m4


def test_a_failure_in_any_run_fails_the_merged_count(
    admitted_run: Outcome, shard_runs: tuple[Outcome, Outcome]
) -> None:
    one, _ = shard_runs
    broken = copy.deepcopy(one.evidence)
    for a in broken["model_checks"]["per_count"]["1"]["assertions"]:
        if a["id"] == "M2.exact":
            a["status"], a["reason"] = "FAIL", "1 mismatch(es) (planted in the test)"
    merged = merge_evidence([LoadedRun(admitted_run.dir, admitted_run.evidence), LoadedRun(one.dir, broken)])
    assert merged["verdict"]["counts"]["1"] == "FAIL"
    assert merged["verdict"]["admitted_counts"] == [] and merged["verdict"]["exit_code"] == 1
    assert "M2.exact@1" in merged["verdict"]["line"]


def test_different_executables_are_refused(admitted_run: Outcome, failed_run: Outcome) -> None:
    p = invoke("report", admitted_run.dir, failed_run.dir)
    assert p.returncode == 2
    assert "executables.candidate.sha256" in p.stderr
    assert "Traceback" not in p.stderr


def test_same_run_twice_is_refused(admitted_run: Outcome) -> None:
    p = invoke("report", admitted_run.dir, admitted_run.dir)
    assert p.returncode == 2 and "given twice" in p.stderr


def test_catalogue(
    runs_root: Path, admitted_run: Outcome, failed_run: Outcome, shard_runs: tuple[Outcome, Outcome]
) -> None:
    md = invoke("report", "--catalogue", runs_root)
    assert md.returncode == 1  # one run FAILED
    text = md.stdout
    assert text.startswith("**parval catalogue: 4 run(s)")
    header = (
        "| run | model | family | task | backend | mode | admitted counts | blocking assertions "
        "| date | candidate sha256 |"
    )
    assert header in text
    row = next(line for line in text.splitlines() if line.startswith("| `admitted`"))
    assert "| 1, 2 |" in row and "standin_tts" in row and "| tts |" in row and "| cpu |" in row
    failed = next(line for line in text.splitlines() if line.startswith("| `failed`"))
    assert "FAIL" in failed
    markdown.markdown(text, extensions=["tables"])
    data = json.loads(invoke("report", "--catalogue", runs_root, "--format", "json").stdout)
    rows = {r["dir"]: r for r in data["runs"]}
    assert set(rows) == {"shard1", "shard2", "admitted", "failed"}
    assert rows["admitted"]["admitted_counts"] == [1, 2] and rows["admitted"]["blocking"] == []
    assert rows["failed"]["blocking"][0].endswith("FAIL")
    assert rows["shard2"]["shard"] == [2, 2]
    assert rows["admitted"]["candidate_sha256"] == admitted_run.evidence["identity"]["candidate_sha256"]
    # One verdict per model/backend/mode: the newest build's runs merged, the other build's stale.
    assert any(v["exit_code"] == 1 for v in data["verdicts"])
    assert sum(len(v["runs"]) + len(v["stale"]) + len(v["not_used"]) for v in data["verdicts"]) == 4
    xml = ET.fromstring(invoke("report", "--catalogue", runs_root, "-f", "junit").stdout)
    assert len(xml.findall("testsuite/testcase")) == len(data["verdicts"])


def test_empty_catalogue_is_a_usage_error(tmp_path: Path) -> None:
    p = invoke("report", "--catalogue", tmp_path)
    assert p.returncode == 2 and "no run directory" in p.stderr
