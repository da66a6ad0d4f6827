"""The memory guard (memory.guard_mib) is wired into every fresh start: when device memory
reaches it, the start's work stops at once, a `memory_guard` event says why, and the count
is BLOCKED (M2.starts, M5.stable): running out of GPU memory is blocked evidence, never a
FAIL and never a reason to lower quality settings."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import anyio
import pytest

from parval.gates.judge_context import JudgeContext
from parval.gates.m2_concurrency import m2_starts
from parval.plan.load import load_plan
from parval.rundir.event_index import load_records
from parval.rundir.events import EventLog, read_events
from parval.runners.campaign_context import CampaignContext
from parval.runners.phases import count_start
from parval.runners.start import StartAborted
from parval.server import memory
from parval.server.groups import real_error
from parval.status import Status
from tests.conftest import write_plan


class FullGpu:
    """A device whose memory use is already past the guard."""

    struct = "nvml v2 memory struct"

    def memory_mib(self) -> tuple[float, float]:
        return 23000.0, 24576.0

    def process_mib(self, pids: Collection[int]) -> float | None:
        return 22000.0

    def close(self) -> None:
        pass


def test_a_guard_stop_ends_the_start_as_blocked_evidence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "open_device", lambda index: FullGpu())
    plan = load_plan(write_plan(tmp_path / "plan", memory={"guard_mib": 20000, "nvml_device_index": 0}))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    log = EventLog(run_dir / "events.jsonl")
    c = CampaignContext(plan, run_dir, log)
    caught: list[BaseException] = []

    async def body() -> None:
        try:
            await count_start(c, "count1-s1", 1, 1)
        except BaseException as exc:  # noqa: BLE001 - the start's own error, unwrapped below
            caught.append(real_error(exc) if isinstance(exc, BaseExceptionGroup) else exc)

    try:
        anyio.run(body)
    finally:
        log.close()
    assert caught and isinstance(caught[0], StartAborted) and "memory guard" in str(caught[0])
    kinds = [e["kind"] for e in read_events(run_dir / "events.jsonl")]
    assert "memory_guard" in kinds and "run_end" in kinds
    # what run_unit records for it, then the judge
    again = EventLog(run_dir / "events.jsonl")
    again.append("start_aborted", unit="count1-s1", reason=str(caught[0]))
    again.close()
    rec = load_records(run_dir)
    r = m2_starts(JudgeContext(rec, plan.raw, {}, run_dir, "plan.yaml"), 1)
    assert r.status is Status.BLOCKED and "memory guard" in r.reason
    assert (rec.ends["count1-s1"]["memory"] or {}).get("guard_stop")
