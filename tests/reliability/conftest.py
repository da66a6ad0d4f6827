"""Helpers for the reliability tests: run parval as a real subprocess, find stand-in
processes that belong to a run directory, small plans with one fault switched on."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import plankit
from tests.conftest import MODEL_BYTES, write_plan

PARVAL = [sys.executable, "-m", "parval"]


def parval(*args: str | Path, timeout: float = 120, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the parval CLI to completion; stdout/stderr captured as text."""
    return subprocess.run([*PARVAL, *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def _default_hangup() -> None:
    # A suite started under `nohup` passes SIGHUP ignored to every child, and parval rightly
    # keeps it so: the signal tests start parval as a terminal session would.
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def start_parval(*args: str | Path, cwd: Path | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*PARVAL, *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        preexec_fn=_default_hangup,
    )


def events(run_dir: Path) -> list[dict[str, Any]]:
    from parval.rundir.events import read_events

    return read_events(run_dir / "events.jsonl")


def wait_for_event(
    run_dir: Path, pred: Callable[[dict[str, Any]], bool], timeout: float, proc: subprocess.Popen[str] | None = None
) -> dict[str, Any]:
    """Poll events.jsonl until an event satisfies `pred` (fails the test on timeout)."""
    deadline = time.monotonic() + timeout
    path = run_dir / "events.jsonl"
    while time.monotonic() < deadline:
        if path.exists():
            for line in path.read_bytes().split(b"\n")[:-1]:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if pred(e):
                    return e
        if proc is not None and proc.poll() is not None:
            raise AssertionError(
                f"parval exited ({proc.returncode}) before the event: {proc.stderr.read() if proc.stderr else ''}"
            )
        time.sleep(0.02)
    raise AssertionError("timed out waiting for an event")


def _proc_state(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def server_processes(run_dir: Path) -> list[int]:
    """Live (not zombie) processes whose command line names a file in `run_dir`: every
    server parval starts gets `--config RUN/servers/.../config.json`."""
    marker = str(run_dir.resolve()).encode()
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker in cmdline and b"--config" in cmdline:
            state = _proc_state(int(entry.name))
            if state is not None and state != "Z":
                alive.append(int(entry.name))
    return alive


def wait_no_servers(run_dir: Path, timeout: float = 5.0) -> list[int]:
    """Wait until no server of `run_dir` is alive; return the survivors (empty = clean)."""
    deadline = time.monotonic() + timeout
    while True:
        left = server_processes(run_dir)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def kill_leftovers(run_dir: Path) -> None:
    for pid in server_processes(run_dir):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass


def statuses(evidence: dict[str, Any]) -> dict[str, str]:
    return {a["id"]: a["status"] for a in evidence["assertions"]}


def load_evidence(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "evidence.json").read_text())
    return data


def per_count(evidence: dict[str, Any], n: int, id_: str) -> dict[str, Any]:
    for a in evidence["model_checks"]["per_count"][str(n)]["assertions"]:
        if a["id"] == id_:
            result: dict[str, Any] = a
            return result
    raise KeyError(id_)


# A smaller plan still: one count, one start, no performance series. For fault tests.
TINY: dict[str, Any] = plankit.TINY


def fault_plan(directory: Path, fault: str, **overrides: Any) -> Path:
    """The tiny plan with `fault` switched on in the candidate only (the baseline is sound)."""
    return plankit.write(directory, plankit.fault_plan(fault, **overrides), model=MODEL_BYTES)


@pytest.fixture
def tmp_run(tmp_path: Path) -> Iterator[Path]:
    """A run directory path; any server left behind is killed (and fails the test)."""
    run_dir = tmp_path / "run"
    yield run_dir
    left = server_processes(run_dir) if run_dir.exists() else []
    kill_leftovers(run_dir)
    assert not left, f"servers left running after the test: {left}"


@pytest.fixture(scope="session")
def complete_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One never-interrupted campaign of the small plan, run through the CLI (read-only:
    tests that modify a run work on a copy, see `run_copy`)."""
    base = tmp_path_factory.mktemp("complete")
    plan = write_plan(base / "plan")
    run_dir = base / "run"
    proc = parval("run", plan, "--out", run_dir, "-q", timeout=180)
    assert proc.returncode in (0, 1, 3), proc.stderr
    assert "Traceback" not in proc.stderr
    return run_dir


@pytest.fixture
def run_copy(complete_run: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(complete_run, target)
    return target
