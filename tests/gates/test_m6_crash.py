"""A modes start whose server crashed fails the mode it was collecting (the crash is what
it observed) and blocks the modes after it, naming the crash; never a PENDING "no evidence
recorded"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parval.gates.m6_modes import judge_m6
from parval.status import Result, Status
from tests.gates.m_events import Events, plan, tts_body


def modes(tmp_path: Path, admit: list[str], *, crash: bool = True, stop: bool = False) -> dict[str, Result]:
    ev = Events(tmp_path)
    ev.start("modes", role="modes", count=2)
    ev.request("modes", "modes_warmup", 0, "base", tts_body(11), ref="base|cold")
    if crash:
        ev.append("server_crash", run="modes", attempt=0, where="modes warm-up", exit_code=-11, signal="SIGSEGV")
    if stop:
        why = "server stopped answering during streaming"
        ev.append("start_aborted", unit="modes", run="modes", attempt=0, reason=why)
    ev.end("modes")
    p: dict[str, Any] = plan(admit_modes=["offline", *admit])
    return {r.id: r for r in judge_m6(ev.context(p))}


def test_a_crash_while_collecting_streaming_fails_it_and_blocks_batch(tmp_path: Path) -> None:
    res = modes(tmp_path, ["streaming", "batch"])
    assert res["M6.streaming"].status is Status.FAIL
    assert "crashed during modes warm-up" in res["M6.streaming"].reason
    assert res["M6.batch"].status is Status.BLOCKED
    assert "crashed during modes warm-up" in res["M6.batch"].reason


def test_a_crash_while_collecting_batch_fails_batch(tmp_path: Path) -> None:
    res = modes(tmp_path, ["batch"])
    assert res["M6.batch"].status is Status.FAIL
    assert "exit status -11" in res["M6.batch"].reason


def test_a_modes_start_parval_stopped_blocks_what_it_did_not_collect(tmp_path: Path) -> None:
    res = modes(tmp_path, ["streaming", "batch"], crash=False, stop=True)
    assert res["M6.streaming"].status is Status.BLOCKED and "stopped answering" in res["M6.streaming"].reason
    assert res["M6.batch"].status is Status.BLOCKED
