"""Helpers for the UX tests: the small plan, running `parval` in a pipe or a pseudo-terminal."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parval.procedure.assertion_ids import FRAMEWORK_GATE
from tests import plankit

BIN = Path(sys.executable).parent
STANDIN = plankit.STANDIN
PARVAL = BIN / "parval"
MODEL_BYTES = b"parval ux-test model weights\n" * 64

# The UX tests' plan: tests/plankit.py `ux_plan` (120 ms requests four at a time, ten mixed
# waves at the largest count).
PLAN: dict[str, Any] = plankit.ux_plan()


@dataclass
class Outcome:
    """One `parval` invocation: its run directory, exit code and both output streams."""

    dir: Path
    plan: Path
    rc: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def evidence(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.dir / "evidence.json").read_text())
        return data


def write_plan(directory: Path, **changes: Any) -> Path:
    """Write `PLAN` with `changes` (whole top-level sections, replaced, not merged) and a model
    file into `directory`; return the plan's path."""
    return plankit.write(directory, {**PLAN, **copy.deepcopy(changes)}, model=MODEL_BYTES)


def parval(*args: str | Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """The installed `parval` command, stdin closed, stdout and stderr captured (pipes)."""
    return subprocess.run(
        [str(PARVAL), *map(str, args)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
        check=False,
    )


@dataclass
class Invoked:
    returncode: int
    stdout: str
    stderr: str


def invoke(*args: str | Path) -> Invoked:
    """`parval ARGS` in this process (the console entry point, exit code included): fast."""
    import contextlib
    import io

    from parval.cli import main

    out, err = io.StringIO(), io.StringIO()
    code: int | str | None = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code
    return Invoked(code if isinstance(code, int) else (0 if code is None else 1), out.getvalue(), err.getvalue())


def run_in_pty(argv: list[str], timeout: float = 240) -> tuple[int, str, str]:
    """Run with stderr on a pseudo-terminal (stdout a pipe): (exit code, stdout, terminal text)."""
    master, slave = os.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        else:
            proc.kill()
        assert proc.stdout is not None
        out = proc.stdout.read().decode()
        proc.stdout.close()
        rc = proc.wait(timeout=30)
    finally:
        os.close(master)
    return rc, out, b"".join(chunks).decode(errors="replace")


def campaign(root: Path, name: str, plan: Path, *extra: str) -> Outcome:
    out = root / name
    t0 = time.monotonic()
    p = parval("run", plan, "--out", out, *extra)
    return Outcome(out, plan, p.returncode, p.stdout, p.stderr, time.monotonic() - t0)


def write_framework(directory: Path) -> None:
    """A synthetic shared F1-F6 record for this stand-in and a passing X4 result, so that the
    verdict depends on the model gate alone (the framework helper's tests cover real ones)."""
    sha = hashlib.sha256(STANDIN.resolve().read_bytes()).hexdigest()
    from tests.records_kit import framework_record, write_record_dir, x4_json

    record = framework_record(sha, record_id="fw-ux-synthetic")
    assert len(record["assertions"]) == len(FRAMEWORK_GATE)
    write_record_dir(directory / "framework", record)
    (directory / "x4.json").write_text(json.dumps(x4_json()))
