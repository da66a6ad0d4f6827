"""SSH hangup: SIGHUP stops a run like Ctrl-C (servers stopped, partial evidence written,
exit 129) and `parval run --resume` finishes it; under `nohup` (SIGHUP ignored) the
campaign goes on."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import write_plan

from .conftest import PARVAL, events, load_evidence, parval, start_parval, wait_for_event, wait_no_servers


@pytest.mark.slow
def test_sighup_leaves_a_run_that_resumes(tmp_path: Path, tmp_run: Path) -> None:
    plan = write_plan(tmp_path / "plan", counts=[1], starts_per_count=1)
    proc = start_parval("run", plan, "--out", tmp_run, "-q")
    wait_for_event(
        tmp_run, lambda e: e.get("kind") == "request" and e.get("run") == "ref-baseline-b", timeout=60, proc=proc
    )
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 129, err
    assert "interrupted by SIGHUP" in err and "Traceback" not in err
    assert wait_no_servers(tmp_run, timeout=1.0) == []
    assert load_evidence(tmp_run)["run"]["interrupted"] is True
    evs = events(tmp_run)
    assert [e["kind"] for e in evs][-2:] == ["campaign_interrupted", "campaign_end"]
    assert evs[-2]["signal"] == "SIGHUP"

    resumed = parval("run", "--resume", tmp_run, "-q", timeout=180)
    assert resumed.returncode in (0, 1, 3), resumed.stderr
    assert "interrupted" not in resumed.stderr
    evidence = load_evidence(tmp_run)
    assert evidence["run"]["interrupted"] is False
    ends = [e for e in events(tmp_run) if e["kind"] == "campaign_end"]
    assert ends[-1]["finished"] is True
    # the start the hangup cut short was redone on a fresh process
    done = [e["run"] for e in events(tmp_run) if e["kind"] == "run_end"]
    assert done.count("ref-baseline-b") == 1 and "count1-s1" in done


def _run_with_ignored(signum: signal.Signals, tmp_path: Path, tmp_run: Path) -> subprocess.Popen[str]:
    """`parval run` started with `signum` ignored (as `nohup`, or `&` in a script, leave it),
    once its first request is recorded."""
    plan = write_plan(tmp_path / "plan", counts=[1], starts_per_count=1)
    proc = subprocess.Popen(
        [*PARVAL, "run", str(plan), "--out", str(tmp_run), "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signum, signal.SIG_IGN),
    )
    wait_for_event(tmp_run, lambda e: e.get("kind") == "request", timeout=60, proc=proc)
    return proc


def _stopped_by_ctrl_c(proc: subprocess.Popen[str], tmp_run: Path) -> None:
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert [e["signal"] for e in events(tmp_run) if e["kind"] == "campaign_interrupted"] == ["SIGINT"]


def test_sighup_under_nohup_is_ignored(tmp_path: Path, tmp_run: Path) -> None:
    """`nohup parval run ...` leaves SIGHUP ignored: a hangup does not stop the campaign."""
    proc = _run_with_ignored(signal.SIGHUP, tmp_path, tmp_run)
    proc.send_signal(signal.SIGHUP)
    time.sleep(1.0)
    assert proc.poll() is None
    _stopped_by_ctrl_c(proc, tmp_run)


def test_ctrl_c_stops_a_run_started_with_sigint_ignored(tmp_path: Path, tmp_run: Path) -> None:
    """A job a non-interactive shell starts with `&` begins with SIGINT ignored: parval still
    stops cleanly on it (only SIGHUP keeps an ignored disposition)."""
    _stopped_by_ctrl_c(_run_with_ignored(signal.SIGINT, tmp_path, tmp_run), tmp_run)
