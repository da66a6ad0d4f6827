"""How the suites run: in CI nothing skips quietly (with PARVAL_FAIL_ON_SKIP=1, set by
.ci/run, a skipped test fails, naming its reason, except a `gpu` test's: CI machines have no
GPU), and tests that share a module's campaign stay on one pytest-xdist worker."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import FAIL_ON_SKIP_ENV

REPO = Path(__file__).resolve().parents[2]
PROBE = "tests/layout/skip_probe.py"


def _pytest(*args: str, flag: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != FAIL_ON_SKIP_ENV}
    if flag is not None:
        env[FAIL_ON_SKIP_ENV] = flag
    argv = [sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider"]
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)


def _probe(flag: str | None) -> subprocess.CompletedProcess[str]:
    return _pytest(PROBE, "-n", "0", "-rA", flag=flag)


def test_a_skip_fails_when_ci_asks() -> None:
    p = _probe("1")
    assert p.returncode == 1, p.stdout
    assert "1 failed, 1 skipped" in p.stdout, p.stdout
    assert "FAILED tests/layout/skip_probe.py::test_skips" in p.stdout
    assert "the probe's own skip" in p.stdout  # the reason is kept in the failure


def test_a_skip_stays_a_skip_elsewhere() -> None:
    p = _probe(None)
    assert p.returncode == 0, p.stdout
    assert "2 skipped" in p.stdout, p.stdout


def test_ci_sets_the_flag() -> None:
    ci = (REPO / ".ci" / "run").read_text()
    assert f"export {FAIL_ON_SKIP_ENV}=1" in ci.splitlines()


def test_tests_sharing_a_module_fixture_run_on_one_worker() -> None:
    p = _pytest("tests/layout/group_probe.py", "-n", "2", "-v")
    assert p.returncode == 0, p.stdout
    workers = re.findall(r"^\[(gw\d+)\] .* PASSED tests/layout/group_probe.py::", p.stdout, re.MULTILINE)
    assert len(workers) == 6 and len(set(workers)) == 1, p.stdout
