"""Running CTest once for F6 (argument list, no shell), recorded as a `CTestRun`.

`run_ctest` reads the JUnit file CTest writes and falls back to CTest's per-test stdout lines
when no JUnit file appears (older CTest, a killed run). It never raises for a missing build
directory or executable: those become a `CTestRun` with status "not_run" and the reason,
which F6 reports as PENDING.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from parval.framework.ctest import (
    DEFAULT_LABEL,
    STDERR_TAIL_CHARS,
    STDOUT_TAIL_CHARS,
    CTestCase,
    CTestRun,
    RunStatus,
    now,
    parse_ctest_stdout,
    parse_junit,
)


def run_ctest(
    build_dir: Path,
    *,
    tests_regex: str | None,
    label: str = DEFAULT_LABEL,
    ctest: str = "ctest",
    timeout_s: float = 1800,
    extra_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    meta: Mapping[str, object] | None = None,
) -> CTestRun:
    """Run CTest in `build_dir` and record the outcome; never raises for a missing tool.

    `env` entries are added to the inherited environment (e.g. ASAN_OPTIONS, a stress seed)
    and recorded; `meta` is free-form context kept with the run (seed, platform limits).
    """
    started = now()
    env_over = dict(env or {})
    meta_d = dict(meta or {})

    def not_run(reason: str) -> CTestRun:
        run = CTestRun.not_run(label, reason, build_dir=build_dir, tests_regex=tests_regex, meta=meta_d)
        run.env, run.started_at = env_over, started
        return run

    if not build_dir.is_dir():
        return not_run(f"build directory not found: {build_dir}")
    exe = shutil.which(ctest)
    if exe is None:
        return not_run(f"ctest executable not found: {ctest}")

    tmp = Path(tempfile.mkdtemp(prefix="parval-ctest-"))
    junit = tmp / "junit.xml"
    cmd = [exe, "--test-dir", str(build_dir.resolve()), "--output-on-failure", "--output-junit", str(junit)]
    if tests_regex is not None:
        cmd += ["-R", tests_regex]
    cmd += list(extra_args)
    t0 = time.monotonic()
    timed_out = False
    try:
        try:
            proc = subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **env_over},
                # Own process group, so a timeout also stops the tests CTest started.
                start_new_session=os.name == "posix",
            )
        except OSError as exc:
            run = not_run(f"cannot start {ctest}: {exc}")
            run.command = cmd
            return run
        try:
            out_b, err_b = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_tree(proc)
            out_b, err_b = proc.communicate()
        duration = time.monotonic() - t0
        stdout = out_b.decode("utf-8", "replace")
        stderr = err_b.decode("utf-8", "replace")
        from_junit = parse_junit(junit)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    from_stdout = parse_ctest_stdout(stdout)
    tests: list[CTestCase]
    parsed_from: Literal["junit", "stdout", "none"]
    if from_junit is not None:
        tests, parsed_from = from_junit, "junit"
        # JUnit failure messages are often empty; the stdout line says Timeout/SegFault.
        detail = {c.name: c.message for c in from_stdout if c.message}
        for c in tests:
            if not c.message and c.name in detail:
                c.message = detail[c.name]
    elif from_stdout:
        tests, parsed_from = from_stdout, "stdout"
    else:
        tests, parsed_from = [], "none"

    run = CTestRun(
        label=label,
        build_dir=str(build_dir),
        status="passed",
        command=cmd,
        exit_code=proc.returncode,
        duration_s=duration,
        stdout_tail=stdout[-STDOUT_TAIL_CHARS:],
        stderr_tail=stderr[-STDERR_TAIL_CHARS:],
        tests=tests,
        parsed_from=parsed_from,
        tests_regex=tests_regex,
        env=env_over,
        meta=meta_d,
        started_at=started,
    )
    run.status, run.reason = _verdict(run, timed_out, timeout_s, build_dir, stderr)
    if run.status == "error":
        run.error_kind = (
            "parval_timeout" if timed_out else "ctest_too_old" if "needs CTest >= 3.21" in run.reason else "no_results"
        )
    return run


def _kill_tree(proc: subprocess.Popen[bytes]) -> None:
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass


def _verdict(run: CTestRun, timed_out: bool, timeout_s: float, build_dir: Path, stderr: str) -> tuple[RunStatus, str]:
    n = len(run.tests)
    if timed_out:
        return "error", f"ctest did not finish within {timeout_s:g} s (killed); {n} test(s) seen"
    failures = run.failures
    if failures:
        names = ", ".join(f"{c.name} ({c.message or c.status})" for c in failures)
        return "failed", f"{len(failures)} of {n} test(s) failed: {names}"
    first_err = next((ln.strip() for ln in stderr.splitlines() if ln.strip()), "")
    if n == 0:
        if run.exit_code == 0:
            where = "" if run.tests_regex is None else f" matching -R {run.tests_regex!r}"
            hint = ""
            if not (build_dir / "CTestTestfile.cmake").exists():
                hint = " (no CTestTestfile.cmake: not a configured build with tests?)"
            return "not_run", f"ctest found no tests{where}{hint}"
        if "Unknown argument" in stderr or "Unknown argument" in run.stdout_tail:
            return "error", "ctest rejected the arguments (needs CTest >= 3.21 for --output-junit)"
        return "error", f"ctest exited {run.exit_code} without test results: {first_err}"
    if run.exit_code != 0:
        return "error", f"ctest exited {run.exit_code} although no test failed: {first_err}"
    skipped = run.counts["skipped"]
    note = f" ({skipped} skipped)" if skipped else ""
    return "passed", f"{n - skipped} of {n} test(s) passed{note}"
