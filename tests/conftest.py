"""Shared fixtures: a small, fast plan pointing at the bundled stand-in server (built by
tests/plankit.py, `small_plan`).

`make_plan(tmp_path, **overrides)` writes `plan.yaml` (plus a model file) into a directory
and returns its path. Counts [1, 2], three starts per count, ~40 ms service time and few
waves, so a whole campaign takes a few seconds. `overrides` are merged recursively into
the plan mapping (a value of None deletes the key).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests import plankit

# Generated tests: a small profile for the default run, a larger one in CI (`CI=true`) or
# when HYPOTHESIS_PROFILE names one. Tests that need their own budget pass
# `@settings(max_examples=...)`, which overrides only that field.
settings.register_profile(
    "default", max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci", max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "default"))

STANDIN = plankit.STANDIN

# The real audiocpp_server build shipped beside the checkout (legacy runtime, CPU); tests
# marked `real` use it and skip cleanly where it is absent.
REAL_AUDIOCPP = Path(__file__).resolve().parents[2] / "shared" / "real-audiocpp"
PARVAL = Path(sys.executable).parent / "parval"

MODEL_BYTES = b"parval stand-in model weights\n" * 4

SMALL_PLAN: dict[str, Any] = plankit.small_plan()


def write_real_plan(tmp: Path, real: Path, name: str, **overrides: Any) -> Path:
    """A plan for the real legacy audiocpp_server in `real` (Silero VAD on its speech fixture,
    counts 1 and 2, no management routes), with `overrides` merged in; return its path."""
    return plankit.write(tmp, plankit.real_plan(real, name, **overrides), sort_keys=True)


def write_plan(directory: Path, **overrides: Any) -> Path:
    """Write the small plan (with `overrides` merged in) and a model file; return the path."""
    return plankit.write(directory, plankit.small_plan(**overrides), model=MODEL_BYTES)


@pytest.fixture
def make_plan(tmp_path: Path) -> Callable[..., Path]:
    def make(**overrides: Any) -> Path:
        return write_plan(tmp_path / "plan", **overrides)

    return make


@pytest.fixture
def real_audiocpp() -> Path:
    """The real-audiocpp folder (bin/, models/, fixtures/), or skip when it is absent."""
    exe = REAL_AUDIOCPP / "bin" / "audiocpp_server"
    if not exe.is_file():
        pytest.skip(f"no real audiocpp_server at {exe}")
    return REAL_AUDIOCPP


# In CI (`.ci/run` sets PARVAL_FAIL_ON_SKIP=1) a skipped test fails the run: a missing
# ../shared/real-audiocpp, a Slurm that did not start or a tool that did not install must not
# pass as green. Only `gpu` tests may skip there (CI machines have no GPU).
FAIL_ON_SKIP_ENV = "PARVAL_FAIL_ON_SKIP"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if not (report.skipped and os.environ.get(FAIL_ON_SKIP_ENV) == "1") or hasattr(report, "wasxfail"):
        return
    if item.get_closest_marker("gpu") is not None:
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = (
        f"skipped in CI ({FAIL_ON_SKIP_ENV}=1), which allows no skip but a `gpu` test's: {reason}\n"
        "Install what the test needs (see .ci/run), or unset the variable outside CI."
    )


def pytest_itemcollected(item: pytest.Item) -> None:
    """Keep each campaign that tests share on one pytest-xdist worker (`--dist loadgroup`):
    tests that read a session fixture of a test folder (the UX campaigns, the reliability
    suite's complete run) are grouped by the folder that declares it, the rest by module, so
    that no worker repeats a module's or a session's campaign another worker already ran.
    (Marked as each item is collected: xdist reads the groups in its own
    pytest_collection_modifyitems.)"""
    if item.get_closest_marker("xdist_group") is not None:
        return
    info = getattr(item, "_fixtureinfo", None)
    shared = sorted(
        {
            defs[-1].baseid
            for defs in (info.name2fixturedefs.values() if info is not None else ())
            if defs and defs[-1].scope == "session" and defs[-1].baseid.startswith("tests")
        }
    )
    item.add_marker(pytest.mark.xdist_group(shared[0] if shared else item.nodeid.split("::", 1)[0]))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The groups that share a session's campaigns (a test folder's, above) go first: each is
    one long unit a worker takes whole, and one taken last would leave the other worker idle
    while it runs. The rest keep their order."""

    def shares_a_session(item: pytest.Item) -> bool:
        marker = item.get_closest_marker("xdist_group")
        name = str(marker.args[0]) if marker is not None and marker.args else ""
        return bool(name) and not name.endswith(".py") and "::" not in name

    items.sort(key=lambda item: not shares_a_session(item))
