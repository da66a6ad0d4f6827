"""The `parval framework` command: exit codes, the run directory, identity options."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import write_plan

PARVAL = str(Path(sys.executable).parent / "parval")


def _parval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PARVAL, *args], cwd=cwd, capture_output=True, text=True, timeout=240)


def test_selected_assertion_record_and_exit_code(tmp_path: Path) -> None:
    plan = write_plan(tmp_path)
    out = tmp_path / "fw"
    p = _parval(
        "framework",
        str(plan),
        "--out",
        str(out),
        "--only",
        "F1.unsupported",
        "--source-commit",
        "0123abcd",
        cwd=tmp_path,
    )
    # Only F1.unsupported ran: everything else is PENDING, so the evidence is incomplete.
    assert p.returncode == 3, p.stdout + p.stderr
    record = json.loads((out / "record.json").read_text())
    res = {a["id"]: a for a in record["assertions"]}
    assert res["F1.unsupported"]["status"] == "PASS", res["F1.unsupported"]["reason"]
    assert res["F1.fifo"]["status"] == "PENDING" and "not selected" in res["F1.fifo"]["reason"]
    assert record["identity"]["source_commit"] == "0123abcd"
    assert "validation pending" in p.stdout and record["record_id"] in p.stdout
    assert (out / "events.jsonl").exists() and (out / "plan.yaml").exists()
    # a finished record directory is never overwritten
    again = _parval("framework", str(plan), "--out", str(out), "--only", "F1.unsupported", cwd=tmp_path)
    assert again.returncode == 2 and "never overwrites" in again.stderr


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    plan = write_plan(tmp_path)
    p = _parval("framework", str(plan), "--only", "F9", "--out", str(tmp_path / "x"), cwd=tmp_path)
    assert p.returncode == 2 and "F9" in p.stderr
    bad = tmp_path / "probes.yaml"
    bad.write_text("unknown_key: 1\n")
    p = _parval("framework", str(plan), "--probes", str(bad), "--out", str(tmp_path / "y"), cwd=tmp_path)
    assert p.returncode == 2 and "unknown key" in p.stderr
    p = _parval("framework", str(tmp_path / "missing.yaml"), cwd=tmp_path)
    assert p.returncode == 2


@pytest.mark.slow
def test_registration_probes_without_ui_management_stay_pending(tmp_path: Path) -> None:
    """A server answering 403 on /v1/models/load leaves registration checks PENDING, never PASS."""
    from .helpers import by_id, run

    _, record = run(tmp_path, only="F2.invalid_replacement,F2.same_id", ui=False)
    res = by_id(record)
    for aid in ("F2.invalid_replacement", "F2.same_id"):
        assert res[aid]["status"] == "PENDING", res[aid]
        assert "ui_management" in res[aid]["reason"]


def test_help_has_an_example() -> None:
    p = subprocess.run([PARVAL, "framework", "--help"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "parval framework plans/framework-demo.yaml" in p.stdout
