"""`parval report RUN -o FILE` never writes where parval writes or reads in a sealed run
directory (a subdirectory, a name of its own): that would make `parval verify` call the run
modified and every later report of it exit 2. It is refused before anything is rendered
(exit 2, naming the run and where to write instead). Any other name beside the run's files,
or outside the run, is written as asked: a file parval never reads is not part of the run."""

from __future__ import annotations

from pathlib import Path

from tests.catalogue.test_every_run_counts import _combo, _evidence, _run
from tests.ux.kit import invoke

_COMPLETE = {"warnings": [], "failures": [], "performance": {"status": "PASS", "rows": []}, "all_plan_rules": True}


def _sealed_run(tmp_path: Path) -> Path:
    _, combo = _combo(tmp_path)
    return _run(tmp_path / "runs", "a", _evidence(combo, "2026-01-01T00:00:00Z", failing=False) | _COMPLETE)


def test_a_report_over_the_runs_own_files_is_refused_and_the_run_stays_intact(tmp_path: Path) -> None:
    run = _sealed_run(tmp_path)
    for inside in (run / "report.json", run / "servers" / "pr.md"):
        p = invoke("report", run, "--format", "md", "-o", inside)
        assert p.returncode == 2, (p.stdout, p.stderr)
        assert "inside the run directory" in p.stderr and str(run) in p.stderr, p.stderr
        assert f"--output {run.parent / inside.name}" in p.stderr, p.stderr
        assert not inside.exists()
    assert invoke("verify", run).returncode == 0
    assert invoke("report", run, "--format", "json").returncode == 0


def test_a_report_beside_the_run_is_written(tmp_path: Path) -> None:
    run = _sealed_run(tmp_path)
    out = tmp_path / "runs" / "pr.md"
    assert invoke("report", run, "--format", "md", "-o", out).returncode == 0
    assert out.read_text("utf-8").startswith("**parval:")
    assert invoke("verify", run).returncode == 0


def test_a_report_beside_the_runs_files_is_written_and_not_part_of_the_run(tmp_path: Path) -> None:
    run = _sealed_run(tmp_path)
    assert invoke("report", run, "--format", "md", "-o", run / "pr.md").returncode == 0
    assert (run / "pr.md").read_text("utf-8").startswith("**parval:")
    verified = invoke("verify", run)
    assert verified.returncode == 0 and "not part of the run: pr.md" in verified.stdout, verified
