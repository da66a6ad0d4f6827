"""A campaign cut short after its count-1 starts keeps its negative control: the control runs
right after the reference runs, before any count start, so the comparisons recorded before
the cut are judged (a PASS stays a PASS), never BLOCKED for want of the control."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from parval import api, signals
from parval.jsontypes import JsonObject
from parval.plan.load import load_plan
from parval.rundir.events import read_events

# Comparison verdicts the references and the count-1 starts decide (gates/masking.py
# COMPARISON_IDS): model-level, and per count at count 1.
MODEL_COMPARISONS = ("M1.legacy_parity", "M1.cap1_parity")
COUNT1_COMPARISONS = ("M2.exact", "M2.unload_reload", "M2.serial_reuse")


def interrupt_at(unit: str, state: signals.SignalState) -> Callable[[JsonObject], None]:
    """A listener that records a SIGINT (as the handler of `handle_signals` does, without a
    real signal or its kill timer) once `unit` begins: the campaign stops during that unit."""

    def listener(event: JsonObject) -> None:
        if event.get("kind") == "unit_begin" and event.get("unit") == unit and not state.received:
            state.received.append(signal.SIGINT)

    return listener


def verdict_of(ev: dict[str, Any], aid: str, count: int | None = None) -> dict[str, Any]:
    if count is None:
        return next(a for a in ev["model_checks"]["model_level"] if a["id"] == aid)
    return next(a for a in ev["model_checks"]["per_count"][str(count)]["assertions"] if a["id"] == aid)


@pytest.mark.slow
def test_a_campaign_interrupted_after_count_one_keeps_its_negative_control(
    tmp_path: Path, make_plan: Callable[..., Path]
) -> None:
    assert threading.current_thread() is threading.main_thread()  # handle_signals needs it
    plan = load_plan(make_plan())  # counts [1, 2], three starts each: a few seconds
    with signals.handle_signals(grace_s=plan.timeouts["shutdown_grace_s"]) as state:
        run_dir, ev = api.run_plan(plan, out=tmp_path / "runs", listeners=[interrupt_at("count2-s1", state)])
    events = read_events(run_dir / "events.jsonl")
    kinds = [e["kind"] for e in events]
    assert kinds[-2:] == ["campaign_interrupted", "campaign_end"], kinds[-4:]
    assert events[-2]["unit"] == "count2-s1"  # cut short during a later unit
    ended = [e["unit"] for e in events if e["kind"] == "unit_end"]
    assert {"count1-s1", "count1-s2", "count1-s3"} <= set(ended) and "count2-s1" not in ended
    assert ev["run"]["interrupted"] is True

    # The control ran (before the count starts) and was caught.
    assert ended.index("negative-control") < ended.index("count1-s1")
    assert ev["model_checks"]["negative_control"]["caught"] is True

    # So the comparisons recorded before the cut are judged, not masked for want of it.
    for aid, count in [*((a, None) for a in MODEL_COMPARISONS), *((a, 1) for a in COUNT1_COMPARISONS)]:
        r = verdict_of(ev, aid, count)
        assert r["status"] == "PASS", (aid, count, r["status"], r["reason"])
        assert "negative control" not in r["reason"], (aid, count, r["reason"])
        assert "status_before_negative_control" not in r.get("evidence", {}), (aid, count)
