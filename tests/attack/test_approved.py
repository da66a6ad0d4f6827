"""Every model-gate judge gives, on the checked-in clean runs, the results approved in
tests/attack/approved.json: the clean result (status, reason, evidence) and the status and
reason once each sampled piece of its evidence is taken away. A deliberate change to a
verdict or its wording is approved by regenerating the file (tests/attack/approved.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.attack.approved import APPROVED, approve_key
from tests.attack.clean_runs import ARCHIVE, extract
from tests.attack.kit import Run

pytestmark = pytest.mark.skipif(not (ARCHIVE.exists() and APPROVED.exists()), reason="no recorded clean runs")

EXPECTED: dict[str, Any] = json.loads(APPROVED.read_text()) if APPROVED.exists() else {}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    return {kind: Run.load(d) for kind, d in extract(tmp_path_factory.mktemp("approved")).items()}


def test_every_assertion_key_is_approved(runs: dict[str, Run]) -> None:
    assert sorted(EXPECTED) == sorted(next(iter(runs.values())).keys())


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_the_judge_gives_its_approved_results(runs: dict[str, Run], key: str) -> None:
    got = approve_key(runs, key)
    want = EXPECTED[key]
    assert got["clean"] == want["clean"], "regenerate tests/attack/approved.json if the change is deliberate"
    assert got["taken_away"] == want["taken_away"]
