"""X1/X2 fail on builds whose runtime selection is wrong (like a pre-flag binary)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.campaign.helpers import STANDIN, plan_dict, reason, run, status

pytestmark = pytest.mark.slow


def wrapper(tmp: Path, name: str, body: str) -> str:
    path = tmp / name
    path.write_text(f"#!{sys.executable}\nimport os, sys\nSTANDIN = {STANDIN!r}\n{body}\n")
    path.chmod(0o755)
    return str(path)


def test_a_build_that_is_always_parallel_fails_x1(tmp_path: Path) -> None:
    exe = wrapper(tmp_path, "always-flagged", "os.execv(STANDIN, [STANDIN, *sys.argv[1:], '--parallel-jobs'])")
    plan = plan_dict(tmp_path, counts=[1], starts=1, ten=3, mixed=3)
    plan["servers"]["candidate"]["executable"] = exe
    ev = run(tmp_path, plan)
    assert status(ev, "X1") == "FAIL"
    assert "warning" in reason(ev, "X1") and "not rejected" in reason(ev, "X1")
    # The flagged side is right, but one start per count is not the three X2 rests on.
    assert status(ev, "X2") == "PENDING" and "3 needed" in reason(ev, "X2"), reason(ev, "X2")


def test_a_build_that_ignores_the_flag_fails_x2(tmp_path: Path) -> None:
    exe = wrapper(
        tmp_path, "never-flagged", "os.execv(STANDIN, [STANDIN, *[a for a in sys.argv[1:] if a != '--parallel-jobs']])"
    )
    plan = plan_dict(tmp_path, counts=[1], starts=1, ten=3, mixed=3)
    plan["servers"]["candidate"]["executable"] = exe
    ev = run(tmp_path, plan)
    assert status(ev, "X2") == "FAIL"
    assert "no experimental-runtime warning" in reason(ev, "X2")
    assert status(ev, "X1") == "PASS"
    assert ev["verdict"]["admitted_counts"] == []
