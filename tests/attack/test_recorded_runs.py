"""The checked-in clean runs are what today's campaign records: a fresh recording of each
gives the same model-gate verdicts (so the attacks never work on stale evidence)."""

from __future__ import annotations

from pathlib import Path

import pytest

from parval.status import Status
from tests.attack.clean_runs import ARCHIVE, RUNS, extract, record
from tests.attack.kit import Run, verdict

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not ARCHIVE.exists(), reason="no recorded clean runs")]


@pytest.mark.parametrize("kind", RUNS)
def test_a_fresh_recording_gives_the_checked_in_verdicts(kind: str, tmp_path: Path) -> None:
    kept = Run.load(extract(tmp_path / "kept")[kind])
    fresh = Run.load(record(kind, tmp_path / "fresh"))
    differ = {}
    for key in kept.keys():
        a, b = verdict(kept, kept.events, key), verdict(fresh, fresh.events, key)
        # a loaded machine may leave a timing-dependent observation unresolved: never a FAIL
        if a.status is not b.status and not (a.status is Status.PASS and b.status is Status.PENDING):
            differ[key] = (str(a.status), str(b.status), b.reason)
    assert not differ, differ
