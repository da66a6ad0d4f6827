"""A file parval neither wrote nor reads never taints a run: `parval report RUN > RUN/pr.md`
(the shell creates pr.md before parval reads the run) writes the report, and later reports,
a re-judging and `parval verify` succeed, naming it as not part of the run. A file parval
reads or writes (a subdirectory, a derived report's name) is still refused, and a sealed
file modified or missing still is."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from .conftest import parval


def _sh(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=180)


def test_a_report_redirected_into_its_run_changes_nothing(run_copy: Path) -> None:
    run = shlex.quote(str(run_copy))
    parval_cmd = f"{shlex.quote(sys.executable)} -m parval"
    redirected = _sh(f"{parval_cmd} report {run} > {run}/pr.md")
    assert redirected.returncode in (0, 1, 3), redirected.stderr
    assert (run_copy / "pr.md").read_text("utf-8").startswith("**parval:"), redirected.stderr
    named = "not part of the run (parval neither wrote nor reads it): pr.md"
    again = parval("report", run_copy)
    assert again.returncode == redirected.returncode and named in again.stdout, again.stderr
    rejudged = parval("report", run_copy, "--rejudge")
    assert rejudged.returncode == redirected.returncode and named in rejudged.stdout, rejudged.stderr
    verified = parval("verify", run_copy)
    assert verified.returncode == 0, verified.stdout
    assert "not part of the run: pr.md" in verified.stdout and "TAMPERED" not in verified.stdout
    # Never listed: removing it later changes nothing either.
    assert "pr.md" not in (run_copy / "files.sha256").read_text("utf-8")
    (run_copy / "pr.md").unlink()
    assert parval("verify", run_copy).returncode == 0


def test_files_parval_reads_are_still_refused(run_copy: Path) -> None:
    (run_copy / "report.json").write_text("{}")  # a derived report's name, never sealed
    (run_copy / "servers" / "extra.txt").write_text("x")  # servers/ is read by pattern
    proc = parval("verify", run_copy)
    assert proc.returncode == 1 and "added: report.json" in proc.stdout and "added: servers/extra.txt" in proc.stdout
    assert parval("report", run_copy).returncode == 2
    (run_copy / "report.json").unlink()
    (run_copy / "servers" / "extra.txt").unlink()
    (run_copy / "pr.md").write_text("notes")
    (run_copy / "plan.json").write_text("{}")  # a sealed file modified: refused as before
    proc = parval("verify", run_copy)
    assert proc.returncode == 1 and "modified: plan.json" in proc.stdout, proc.stdout
    refused = parval("report", run_copy, "--rejudge")
    assert refused.returncode == 2 and "modified: plan.json" in refused.stderr, refused.stderr
