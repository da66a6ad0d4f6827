"""Collected only when named on the command line (not a test_*.py file): one test that skips
and one `gpu` test that skips, for tests/layout/test_ci_skips.py."""

import pytest


def test_skips() -> None:
    pytest.skip("the probe's own skip")


@pytest.mark.gpu
def test_gpu_skips() -> None:
    pytest.skip("no NVML in the probe")
