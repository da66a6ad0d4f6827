"""`parval report --catalogue DIR --claims CAT` over this session's real runs (the admitted
run, its two shards, the contaminated run of another build) plus an imported record: no
campaign of its own. tests/catalogue/test_disclosure_states.py shows every state from
campaigns made by `parval catalogue run`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import markdown
import pytest
import yaml

from tests.records_kit import CANDIDATE_COMMIT

from .kit import STANDIN, Outcome, invoke


def _catalogue(path: Path, plan: Path, candidate: Path) -> Path:
    claims = [
        {"name": "ux", "plan": str(plan), "backends": ["cpu"], "counts": [1, 2, 3]},
        {"name": "old", "template": str(plan), "overrides": {"model": {"id": "old-tts"}}, "backends": ["cpu"]},
        {"name": "none", "template": str(plan), "overrides": {"model": {"id": "none-tts"}}, "backends": ["cpu"]},
    ]
    doc = {
        "schema_version": 1,
        "kind": "parval-catalogue",
        "name": "ux",
        "builds": {"cpu": {"candidate": {"executable": str(candidate), "source_commit": CANDIDATE_COMMIT}}},
        "claims": claims,
    }
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def runs(tmp_path: Path, admitted_run: Outcome, shard_runs: tuple[Outcome, Outcome], failed_run: Outcome) -> Path:
    """Copies of this session's runs (integrity survives a copy), and a historical record."""
    root = tmp_path / "runs"
    for run in (admitted_run, *shard_runs, failed_run):
        shutil.copytree(run.dir, root / run.dir.name)
    mapping = tmp_path / "old.yaml"
    mapping.write_text(
        yaml.safe_dump(
            {
                "kind": "parval-historical-mapping",
                "procedure_version": "2026-03-01",
                "identity": {"model": "old-tts", "backend": "cpu"},
                "findings": [{"section": "2", "finding": "ok at 2 slots", "status": "PASS", "maps_to": ["M2.exact"]}],
            }
        )
    )
    assert invoke("import", mapping, "--procedure", "2026-03-01", "--out", root / "history" / "old").returncode == 0
    return root


def _json(runs: Path, catalogue: Path) -> tuple[int, dict[str, Any]]:
    p = invoke("report", "--catalogue", runs, "--claims", catalogue, "--format", "json")
    return p.returncode, json.loads(p.stdout)


def _states(data: dict[str, Any]) -> dict[tuple[str, int], str]:
    return {(c["combination"], r["count"]): r["state"] for c in data["combinations"] for r in c["rows"]}


def test_claims_of_the_candidate_build(tmp_path: Path, runs: Path, model_plan: Path) -> None:
    cat = _catalogue(tmp_path / "cat.yaml", model_plan, STANDIN)
    code, data = _json(runs, cat)
    assert _states(data) == {
        ("ux.cpu.offline", 1): "ADMITTED",
        ("ux.cpu.offline", 2): "ADMITTED",
        ("ux.cpu.offline", 3): "STALE",  # only the other build's run covers count 3
        ("old.cpu.offline", 1): "HISTORICAL",
        ("old.cpu.offline", 2): "HISTORICAL",
        ("none.cpu.offline", 1): "NOT RUN",
        ("none.cpu.offline", 2): "NOT RUN",
    }
    assert code == data["exit_code"] == 3
    ux = data["combinations"][0]
    assert ux["admitted_counts"] == [1, 2] and ux["claimed_beyond_admitted"] == [3]
    assert ux["evidence"]["merged"] is True and len(ux["evidence"]["runs"]) == 3  # the run and its shards
    assert [s["dir"] for s in ux["evidence"]["stale"]] == ["failed"]
    assert ux["framework"]["record"] == "fw-ux-synthetic" and ux["framework"]["trusted"] is True
    assert ux["framework"]["reused"] is False
    rows = {(r["combination"], r["count"]): r for r in data["comparison"]}
    assert rows[("ux.cpu.offline", 2)]["candidate_n_slots"]["n"] >= 3  # measured
    assert rows[("ux.cpu.offline", 3)]["candidate_n_slots"] is None  # stale figures are not shown
    md = invoke("report", "--catalogue", runs, "--claims", cat)
    assert md.returncode == 3
    assert md.stdout.startswith("**parval claims: NOT READY for merge — 2 of 7 claimed count(s) admitted")
    assert "| `ux.cpu.offline` | ux-tts | 3 | 🔁 STALE | only stale evidence (failed)" in md.stdout
    assert "- `ux.cpu.offline`: claims 1, 2, 3; admitted 1, 2 → advertise at most `slots: 2`" in md.stdout
    assert "historical `history/old` (procedure 2026-03-01, never admission)" in md.stdout
    markdown.markdown(md.stdout, extensions=["tables"])
    xml = invoke("report", "--catalogue", runs, "--claims", cat, "--format", "junit")
    suite = ET.fromstring(xml.stdout).find("testsuite")
    # a merge gate: only the two HISTORICAL rows are skipped; STALE and NOT RUN claims fail
    assert suite is not None and (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("7", "3", "2")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    stale = cases["ux.cpu.offline[count=3]"].find("failure")
    assert stale is not None and stale.get("type") == "STALE" and stale.get("message", "").startswith("STALE: ")
    not_run = cases["none.cpu.offline[count=1]"].find("failure")
    assert not_run is not None and not_run.get("type") == "NOT RUN"
    assert cases["old.cpu.offline[count=2]"].find("skipped") is not None
    assert list(cases["ux.cpu.offline[count=1]"]) == []  # admitted: passes


def test_claims_of_another_build(tmp_path: Path, runs: Path, model_plan: Path, variant_standin: Path) -> None:
    """The contaminated build as the candidate: its failure is NOT ADMITTED, the admitted
    runs of the stand-in are STALE for it."""
    code, data = _json(runs, _catalogue(tmp_path / "cat.yaml", model_plan, variant_standin))
    states = _states(data)
    assert states[("ux.cpu.offline", 3)] == "NOT ADMITTED"
    assert states[("ux.cpu.offline", 1)] == "PENDING"  # no framework record in that run
    assert states[("ux.cpu.offline", 2)] == "STALE"  # that run has no count 2; the stand-in's do
    assert code == data["exit_code"] == 1
    row = data["combinations"][0]["rows"][2]
    assert "M2.exact FAIL" in row["blocking"]


def test_claims_need_a_catalogue_and_a_runs_folder(tmp_path: Path, model_plan: Path) -> None:
    cat = _catalogue(tmp_path / "cat.yaml", model_plan, STANDIN)
    assert invoke("report", "--claims", cat).returncode == 2
    missing = invoke("report", "--catalogue", tmp_path / "nowhere", "--claims", cat)
    assert missing.returncode == 2 and "no such directory" in missing.stderr
    (tmp_path / "empty").mkdir()
    empty = invoke("report", "--catalogue", tmp_path / "empty", "--claims", cat, "--format", "json")
    assert empty.returncode == 3 and set(_states(json.loads(empty.stdout)).values()) == {"NOT RUN"}
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: parval-catalogue\n")
    assert invoke("report", "--catalogue", tmp_path / "empty", "--claims", bad).returncode == 2
