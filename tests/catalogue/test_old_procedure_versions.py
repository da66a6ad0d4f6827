"""Evidence of another procedure version than this parval implements is HISTORICAL,
never current: `parval report RUN`, a merge `parval report A B`, `--catalogue DIR` and
`--claims CAT` all say so (never ADMITTED, never exit 0) in md, json and junit, naming the
run's procedure version. Synthetic sealed run directories, no campaign."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from parval import PROCEDURE_VERSION
from parval.claims.render import render_claims
from parval.report.run_table import render_catalogue
from parval.report.write import render_many, render_report
from parval.rundir.verified import reseal_run
from tests.attack.clean_runs import ARCHIVE, extract, framework_record_dir
from tests.catalogue.test_every_run_counts import _combo, _evidence, _run
from tests.records_kit import write_record_dir
from tests.ux.test_merge_plans import _manifest

OLD = "2026-05-01"
# what the markdown report reads beyond the synthetic evidence of test_every_run_counts
_COMPLETE = {"warnings": [], "failures": [], "performance": {"status": "PASS", "rows": []}}


def _old_runs(tmp_path: Path, names: tuple[str, ...] = ("a",)) -> tuple[Path, Path, list[Path]]:
    """Runs made under procedure OLD whose stored evidence says ADMITTED (exit 0)."""
    cat, combo = _combo(tmp_path)
    root = tmp_path / "runs"
    dirs = []
    for i, name in enumerate(names):
        ev = _evidence(combo, f"2026-05-0{i + 1}T00:00:00Z", failing=False)
        ev |= {"procedure_version": OLD, "all_plan_rules": True, **_COMPLETE}
        dirs.append(_run(root, name, ev, {**_manifest(), "procedure_version": OLD}))
    return cat, root, dirs


def _says_historical(text: str, fmt: str) -> None:
    assert "HISTORICAL" in text and OLD in text, text
    if fmt == "md":
        assert "ADMITTED at" not in text.split("\n", 1)[0]


@pytest.mark.parametrize("fmt", ["md", "json", "junit"])
def test_report_of_one_old_run_is_historical(tmp_path: Path, fmt: str) -> None:
    _, _, (run,) = _old_runs(tmp_path)
    text, code = render_report([run], fmt=fmt, catalogue=None, redact=False, rejudge=False)
    assert code == 3, text
    _says_historical(text, fmt)
    if fmt == "json":
        ev = json.loads(text)
        assert ev["verdict"]["admitted_counts"] == [] and ev["admission_ready"] is False
        assert ev["historical"]["procedure_version"] == OLD
        assert ev["historical"]["current_procedure_version"] == PROCEDURE_VERSION
    if fmt == "junit":
        (case,) = [c for c in ET.fromstring(text).iter("testcase") if c.get("name") == "procedure_version"]
        skipped = case.find("skipped")
        assert skipped is not None and "HISTORICAL" in str(skipped.get("message"))


@pytest.mark.parametrize("fmt", ["md", "json", "junit"])
def test_a_merge_of_old_runs_is_historical(tmp_path: Path, fmt: str) -> None:
    _, _, dirs = _old_runs(tmp_path, ("a", "b"))
    text, code = render_many(dirs, fmt, None, False)
    assert code == 3, text
    _says_historical(text, fmt)
    if fmt == "json":
        ev = json.loads(text)
        assert ev["verdict"]["line"].startswith("HISTORICAL") and ev["verdict"]["admitted_counts"] == []
        assert len(ev["merged_from"]) == 2  # the merge itself still happened


@pytest.mark.parametrize("fmt", ["md", "json", "junit"])
def test_the_catalogue_of_an_old_run_is_historical(tmp_path: Path, fmt: str) -> None:
    _, root, _ = _old_runs(tmp_path)
    text, code = render_catalogue(root, fmt)
    assert code == 3, text
    _says_historical(text, fmt)
    if fmt == "json":
        doc = json.loads(text)
        (verdict,) = doc["verdicts"]
        assert verdict["exit_code"] == 3 and verdict["admitted_counts"] == []
        assert [r["exit_code"] for r in doc["runs"]] == [3]


@pytest.mark.parametrize("fmt", ["md", "json", "junit"])
def test_claims_count_an_old_run_as_historical(tmp_path: Path, fmt: str) -> None:
    cat, root, _ = _old_runs(tmp_path)
    text, code = render_claims(cat, root, fmt)
    assert code == 3, text
    _says_historical(text, fmt)
    if fmt == "json":
        data = json.loads(text)
        rows = {r["count"]: r["state"] for c in data["combinations"] for r in c["rows"]}
        assert rows == {1: "HISTORICAL", 2: "HISTORICAL"}
        assert data["combinations"][0]["evidence"]["runs"] == []


def test_a_failure_of_an_old_run_is_retained(tmp_path: Path) -> None:
    # Historical is never milder than what was recorded: an old FAIL still exits 1.
    cat, combo = _combo(tmp_path)
    ev = _evidence(combo, "2026-05-01T00:00:00Z", failing=True)
    ev |= {"procedure_version": OLD, "all_plan_rules": False, **_COMPLETE}
    run = _run(tmp_path / "runs", "a", ev, {**_manifest(), "procedure_version": OLD})
    text, code = render_report([run], fmt="md", catalogue=None, redact=False, rejudge=False)
    assert code == 1 and "HISTORICAL" in text and OLD in text, text


@pytest.mark.skipif(not ARCHIVE.exists(), reason="no recorded clean runs")
def test_a_recorded_run_of_an_old_procedure_rejudges_historical(tmp_path: Path) -> None:
    # A recorded clean run (ADMITTED as recorded) whose manifest names procedure OLD, with a
    # framework record of that version: re-judged, it is HISTORICAL, and the record is not
    # current for it either.
    run = extract(tmp_path)["stateless"]
    record_dir = framework_record_dir(run)
    record = json.loads((record_dir / "record.json").read_text("utf-8"))
    shutil.rmtree(record_dir)
    write_record_dir(record_dir, {**record, "procedure_version": OLD})
    manifest = json.loads((run / "manifest.json").read_text("utf-8"))
    (run / "manifest.json").write_text(json.dumps({**manifest, "procedure_version": OLD}), "utf-8")
    reseal_run(run, "test: the manifest names an older procedure version")
    text, code = render_report([run], fmt="json", catalogue=None, redact=False, rejudge=True)
    ev = json.loads(text)
    assert code == 3, ev["verdict"]
    assert ev["verdict"]["line"].startswith(f"HISTORICAL evidence (procedure {OLD})")
    assert ev["admission_ready"] is False and ev["verdict"]["admitted_counts"] == []
    assert ev["framework_checks"]["trusted"] is False
    assert f"procedure version {OLD}" in ev["framework_checks"]["untrusted_reason"]
    # the run's own report and evidence.json say so too
    assert json.loads((run / "evidence.json").read_text("utf-8"))["verdict"]["exit_code"] == 3
    assert "HISTORICAL" in (run / "report.md").read_text("utf-8").split("\n", 1)[0]


def test_a_newer_old_procedure_run_does_not_displace_a_current_one(tmp_path: Path) -> None:
    # The catalogue's verdict is the current runs'; a run of another procedure version,
    # however recent, is listed apart as historical and keeps no current failure from view.
    _, combo = _combo(tmp_path)
    root = tmp_path / "runs"
    _run(root, "current", _evidence(combo, "2026-01-01T00:00:00Z", failing=True) | _COMPLETE)
    old = _evidence(combo, "2026-06-01T00:00:00Z", failing=False) | _COMPLETE | {"procedure_version": OLD}
    _run(root, "old", old, {**_manifest(), "procedure_version": OLD})
    text, code = render_catalogue(root, "json")
    (verdict,) = json.loads(text)["verdicts"]
    assert code == 1 and verdict["runs"] == ["current"] and verdict["exit_code"] == 1, verdict
    assert [w["dir"] for w in verdict["historical"]] == ["old"] and OLD in verdict["historical"][0]["why"]
    md, _ = render_catalogue(root, "md")
    assert f"`old` historical: made under procedure {OLD}" in md, md
