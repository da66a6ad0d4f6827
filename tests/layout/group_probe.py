"""Collected only when named on the command line: six tests sharing one module fixture, for
tests/layout/test_ci_runner.py (they must all run on one pytest-xdist worker)."""

import os

import pytest


@pytest.fixture(scope="module")
def shared() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


@pytest.mark.parametrize("i", range(6))
def test_reads_the_module_fixture(shared: str, i: int) -> None:
    assert shared == os.environ.get("PYTEST_XDIST_WORKER", "main")
