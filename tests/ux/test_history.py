"""Historical records (`parval import OLD --procedure VERSION`) and the catalogue's runs,
verdicts and historical sections. Synthetic evidence and mapping files, no campaign."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import yaml

from parval import PROCEDURE_VERSION
from parval.report.history import HISTORICAL, build_historical
from tests.closed_list_kit import complete
from tests.records_kit import seal
from tests.ux.test_merge_plans import PLAN, _manifest

from .kit import invoke

OLD = "2026-05-01"


def _old_evidence(directory: Path, *, version: str = OLD) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    ev = {
        "schema_version": 1,
        "procedure_version": version,
        "identity": {
            "model": "whisper-s",
            "family": "whisper",
            "task": "asr",
            "mode": "offline",
            "backend": "cuda",
            "candidate_sha256": "c" * 64,
            "baseline_sha256": "b" * 64,
            "model_sha256": "d" * 64,
        },
        "assertions": [
            {"id": "M2.exact", "status": "PASS", "reason": "exact", "evidence": {"per_count": {"1": {}, "2": {}}}},
            {"id": "M4.targeted_unload", "status": "FAIL", "reason": "unload did not wait"},
            {"id": "F1.fifo", "status": "PASS", "reason": "fifo"},
            {"id": "S7.old_name", "status": "PASS", "reason": "an ID this procedure no longer has"},
        ],
        "admission_ready": True,
        "verdict": {"line": "ADMITTED at counts 1, 2", "exit_code": 0},
    }
    (directory / "evidence.json").write_text(json.dumps(ev))
    return directory / "evidence.json"


def test_an_imported_pass_never_counts_and_failures_are_kept(tmp_path: Path) -> None:
    path = _old_evidence(tmp_path / "old-run")
    rec = build_historical(path, OLD, candidate_sha256="e" * 64)
    assert rec["admission_ready"] is False and rec["counts_toward_admission"] is False
    assert rec["procedure_version"] == OLD and rec["current_procedure_version"] == PROCEDURE_VERSION
    by = {e["original_id"]: e for e in rec["entries"]}
    assert by["M2.exact"]["original_status"] == "PASS" and by["M2.exact"]["status"] == "PENDING"
    assert by["M2.exact"]["counts"] == [1, 2] and by["M2.exact"]["tested"]["candidate_sha256"] == "c" * 64
    assert by["M4.targeted_unload"]["status"] == "FAIL" and rec["failures"] == ["M4.targeted_unload"]
    assert by["S7.old_name"]["maps_to"] == [] and by["F1.fifo"]["maps_to"] == ["F1.fifo"]
    lims = "\n".join(rec["limitations"])
    for what in (
        "no recorded events",
        "no raw outputs",
        "no manifest.json",
        "tested candidate_commit not recorded",
        "changed binary",
        f"under procedure {PROCEDURE_VERSION} it never counts",
    ):
        assert what in lims, what
    assert rec["verdict"]["line"].startswith(f"HISTORICAL evidence (procedure {OLD})")


def test_a_mapping_file_for_a_hand_written_report(tmp_path: Path) -> None:
    (tmp_path / "report.md").write_text("# seven sections\n")
    mapping = {
        "kind": "parval-historical-mapping",
        "report": "report.md",
        "procedure_version": OLD,
        "tested": {"candidate_sha256": "c" * 64, "candidate_commit": "1" * 40},
        "identity": {"model": "vad", "backend": "cpu"},
        "raw_outputs": False,
        "findings": [
            {
                "section": "3. Parity",
                "finding": "identical at 1 and 2",
                "status": "PASS",
                "maps_to": ["M2.exact", "M1.cap1_parity"],
                "counts": [1, 2],
            },
            {"section": "5. Unload", "finding": "hang once", "status": "fail", "maps_to": ["M4.all_unload"]},
            {"section": "7. Notes", "finding": "looked fine", "status": "PASS"},
        ],
    }
    path = tmp_path / "old.map.yaml"
    path.write_text(yaml.safe_dump(mapping))
    rec = build_historical(path, OLD)
    assert rec["source"]["format"] == "mapping"
    assert rec["source"]["report_sha256"] == hashlib.sha256(b"# seven sections\n").hexdigest()
    assert [e["status"] for e in rec["entries"]] == ["PENDING", "FAIL", "PENDING"]
    assert rec["failures"] == ["5. Unload"] and rec["admission_ready"] is False
    lims = "\n".join(rec["limitations"])
    assert "7. Notes: not mapped" in lims and "raw outputs not available" in lims
    assert "slot histories not available" in lims and "tested baseline_sha256 not recorded" in lims


def test_import_command_writes_a_new_record_and_never_overwrites(tmp_path: Path) -> None:
    path = _old_evidence(tmp_path / "old-run")
    out = tmp_path / "history" / "whisper-may"
    p = invoke("import", path, "--procedure", OLD, "--out", out)
    assert p.returncode == 0, p.stderr
    assert "HISTORICAL evidence" in p.stdout and "limitation:" in p.stdout
    first = (out / HISTORICAL).read_text()
    again = invoke("import", path, "--procedure", OLD, "--out", out)
    assert again.returncode == 2 and "never overwrites" in again.stderr
    assert (out / HISTORICAL).read_text() == first
    into_run = invoke("import", path, "--procedure", OLD, "--out", tmp_path / "old-run")
    assert into_run.returncode == 2 and "never overwrites" in into_run.stderr


def test_import_refuses_what_is_not_historical(tmp_path: Path) -> None:
    path = _old_evidence(tmp_path / "old-run")
    current = invoke("import", path, "--procedure", PROCEDURE_VERSION, "--out", tmp_path / "h1")
    assert current.returncode == 2 and "current procedure version" in current.stderr
    other = invoke("import", path, "--procedure", "2026-01-01", "--out", tmp_path / "h2")
    assert other.returncode == 2 and f"says procedure version {OLD}" in other.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        yaml.safe_dump(
            {"kind": "parval-historical-mapping", "findings": [{"status": "PASS", "maps_to": ["M9.nothing"]}]}
        )
    )
    p = invoke("import", bad, "--procedure", OLD, "--out", tmp_path / "h3")
    assert p.returncode == 2 and "M9.nothing" in p.stderr


def _current_run(root: Path, name: str, date: str, exit_code: int, **ident: Any) -> None:
    d = root / name
    d.mkdir(parents=True)
    identity = {
        "model": "whisper-s",
        "family": "whisper",
        "task": "asr",
        "backend": "cuda",
        "mode": "offline",
        "candidate_sha256": "c" * 64,
        **ident,
    }
    status = "PASS" if exit_code == 0 else "FAIL"
    entry = {"id": "M2.exact", "status": status, "reason": status, "count": 1, "applicable": True, "evidence": {}}
    ev = {
        "schema_version": 1,
        "identity": identity,
        "generated_at": date,
        "procedure_version": PROCEDURE_VERSION,
        "run": {"shard": None, "provenance": {"kind": "local", "service": None, "details": {}}},
        "verdict": {
            "line": status,
            "admitted_counts": [1] if exit_code == 0 else [],
            "exit_code": exit_code,
            "counts": {"1": status},
        },
        "admission_ready": exit_code == 0,
        "assertions": [entry],
        "model_checks": {"per_count": {"1": {"assertions": [entry]}}, "model_level": []},
        "framework_checks": {"status": "PASS", "results": []},
    }
    complete(ev)
    manifest = _manifest({"kind": "local"})
    manifest["model"]["id"] = identity["model"]
    (d / "manifest.json").write_text(json.dumps(manifest))
    (d / "plan.json").write_text(json.dumps(PLAN | {"counts": [1]}))
    (d / "evidence.json").write_text(json.dumps(ev))
    seal(d)  # as a judged run directory is: the catalogue verifies it first


def test_catalogue_shows_historical_records_apart_and_merges_every_run(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    _current_run(root, "old-fail", "2026-11-01T00:00:00Z", 1)
    _current_run(root, "new-pass", "2026-11-20T00:00:00Z", 0)
    _current_run(root, "other-model", "2026-11-02T00:00:00Z", 0, model="vad")
    assert (
        invoke(
            "import", _old_evidence(tmp_path / "old"), "--procedure", OLD, "--out", root / "history" / "may"
        ).returncode
        == 0
    )
    md = invoke("report", "--catalogue", root)
    # The old failure is merged with the newer passing run of the same model: it stays failed.
    assert md.returncode == 1, md.stdout
    text = md.stdout
    runs, _, rest = text.partition("Verdicts (")
    verdicts, _, historical = rest.partition("Historical records")
    assert "`new-pass` (local)" in runs and "`other-model`" in runs and "`old-fail` (local)" in runs
    assert "| whisper-s | cuda | offline | `old-fail`, `new-pass` | NOT ADMITTED | none | M2.exact FAIL" in verdicts
    assert "| vad | cuda | offline | `other-model` | ADMITTED | 1 | – |" in verdicts
    assert "`history/may`" in historical and OLD in historical and "M4.targeted_unload" in historical
    assert "never count toward admission" in historical
    data = json.loads(invoke("report", "--catalogue", root, "--format", "json").stdout)
    merged = {tuple(v["runs"]): v["exit_code"] for v in data["verdicts"]}
    assert merged == {("old-fail", "new-pass"): 1, ("other-model",): 0}
    assert [h["dir"] for h in data["historical"]] == ["history/may"]
    assert data["historical"][0]["admission_ready"] is False


def test_a_historical_record_is_not_a_run_to_report_or_merge(tmp_path: Path) -> None:
    out = tmp_path / "h"
    assert invoke("import", _old_evidence(tmp_path / "old"), "--procedure", OLD, "--out", out).returncode == 0
    p = invoke("report", out)
    assert p.returncode == 2
    only = invoke("report", "--catalogue", out)
    assert only.returncode == 3 and "Historical records (1" in only.stdout
