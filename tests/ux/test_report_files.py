"""What `parval report` says and writes around a run: a folder of runs points at
`--catalogue`; report files get a new file's permissions (the umask's), not mkstemp's 0600."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from parval.rundir.files import atomic_write, process_umask
from tests.catalogue.test_every_run_counts import _combo, _evidence, _run
from tests.ux.kit import invoke

_COMPLETE = {"warnings": [], "failures": [], "performance": {"status": "PASS", "rows": []}, "all_plan_rules": True}


def _sealed_run(tmp_path: Path) -> Path:
    _, combo = _combo(tmp_path)
    return _run(tmp_path / "runs", "a", _evidence(combo, "2026-01-01T00:00:00Z", failing=False) | _COMPLETE)


def test_a_folder_of_runs_points_at_catalogue(tmp_path: Path) -> None:
    run = _sealed_run(tmp_path)
    p = invoke("report", run.parent)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert f"{run.parent}: a folder of 1 run(s) (a), not a run directory" in p.stderr
    assert f"parval report --catalogue {run.parent}" in p.stderr and f"parval report {run}" in p.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "--catalogue" not in invoke("report", empty).stderr  # no runs in it: not a folder of runs


def test_report_files_follow_the_umask(tmp_path: Path) -> None:
    out = tmp_path / "x.md"
    atomic_write(out, "text")
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~process_umask()
    run = _sealed_run(tmp_path)
    for mask, mode in ((0o022, 0o644), (0o027, 0o640)):
        target = tmp_path / f"report-{mask:o}.md"
        code = f"import os, sys; os.umask({mask}); from parval.cli import main; main(sys.argv[1:])"
        p = subprocess.run(
            [sys.executable, "-c", code, "report", str(run), "--output", str(target)],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ},
        )
        assert p.returncode == 0, p.stderr
        assert stat.S_IMODE(target.stat().st_mode) == mode, oct(target.stat().st_mode)
