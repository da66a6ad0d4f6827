"""A soak interrupted with Ctrl-C keeps what it collected, and `--resume` continues it: it
ends with the same counts as an uninterrupted soak of the same length in waves."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import write_plan

from .conftest import events, parval, start_parval, wait_for_event

SOAK = {"waves": 6, "waves_per_start": 2}


def soak_counts(run_dir: Path) -> dict[str, Any]:
    """What the soak bought, from the evidence and the events."""
    ev = json.loads((run_dir / "evidence.json").read_text("utf-8"))
    m2 = next(a for a in ev["model_checks"]["per_count"]["2"]["assertions"] if a["id"] == "M2.exact")
    evs = events(run_dir)
    (end,) = [e for e in evs if e["kind"] == "soak_end"]
    standing = {e["run"]: e["attempt"] for e in evs if e["kind"] == "run_end" and e["run"].startswith("soak")}
    outputs = [
        e
        for e in evs
        if e["kind"] == "request"
        and standing.get(e["run"]) == e["attempt"]
        and e["reply"].get("outcome") == "ok"
        and not e.get("retry")  # a wave's repeat follows the machine's load, not the soak
    ]
    return {
        "soak starts": sorted(standing),
        "soak waves": end["soak_waves"],
        "soak outputs": len(outputs),
        "mismatches": m2["evidence"]["bound"]["differed"],
        "stopped": end["stopped"],
        "interrupted": ev["run"]["interrupted"],
    }


@pytest.mark.slow  # three campaigns of the small plan, one start per count, with a short soak
@pytest.mark.timeout(1500)
def test_an_interrupted_soak_resumed_ends_as_an_uninterrupted_one(tmp_path: Path) -> None:
    plan = write_plan(
        tmp_path / "plan",
        soak=SOAK,
        starts_per_count=1,
        performance={"enabled": False},
        timeouts={"campaign_s": 3600},  # the soak is not cut short by the campaign's deadline
    )
    whole = tmp_path / "whole"
    done = parval("run", plan, "--out", whole, "-q", timeout=600)
    assert done.returncode in (0, 1, 3), done.stderr

    cut = tmp_path / "cut"
    proc = start_parval("run", plan, "--out", cut, "-q")
    try:
        wait_for_event(cut, lambda e: e.get("kind") == "request" and e.get("run") == "soak2-s2", timeout=600, proc=proc)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert proc.returncode == 130
    before = events(cut)
    assert {e["unit"] for e in before if e["kind"] == "unit_end" and e["unit"].startswith("soak")} == {"soak2-s1"}
    # what it collected is kept: the partial run is judged with the complete soak start
    partial = json.loads(parval("report", cut, "--format", "json").stdout)
    assert partial["run"]["interrupted"] is True

    resumed = parval("run", "--resume", cut, "-q", timeout=600)
    assert resumed.returncode in (0, 1, 3), resumed.stderr
    evs = events(cut)
    starts = [e["run"] for e in evs if e["kind"] == "run_start" and e["run"].startswith("soak")]
    # the complete soak start is kept, the interrupted one redone whole, then the soak goes on
    assert starts == ["soak2-s1", "soak2-s2", "soak2-s2", "soak2-s3"]
    assert soak_counts(cut) == soak_counts(whole)
    assert soak_counts(whole)["soak waves"] == 6 and soak_counts(whole)["soak starts"] == [
        "soak2-s1",
        "soak2-s2",
        "soak2-s3",
    ]
