"""Attempts parval abandoned (interrupt, deadline, redone on --resume) never prove a PASS,
but a mismatch, request error or crash seen in them still fails Q5 and the comparison."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from parval.gates.judge_context import exact_result
from parval.gates.quality import q5_intermittent
from parval.rundir.event_index import COUNT_PHASES
from parval.status import Status
from tests.gates.cmp_events import SAMPLES, Events, tts_reply

OTHER = (SAMPLES // 3).astype(np.int16)


def resumed(tmp_path: Path, first: dict[str, object] | None, *, crash: bool = False, finished: bool = False) -> Events:
    """count2-s1: attempt 1 got `first` (None: a request error), then was abandoned; the redone
    attempt (on --resume) is clean."""
    ev = Events(tmp_path)
    ev.baseline({"ref_cold": [tts_reply(), tts_reply()]})
    a = ev.start("count2-s1")
    ev.request("count2-s1", a, "cold_wave", first)
    if crash:
        ev.crash("count2-s1", a)
    if finished:
        ev.end("count2-s1", a)
    else:
        ev.abandon("count2-s1", a)
    b = ev.start("count2-s1")
    ev.request("count2-s1", b, "cold_wave", tts_reply())
    ev.end("count2-s1", b)
    return ev


def m2_exact(ev: Events) -> tuple[Status, dict[str, object], Status, dict[str, object]]:
    ctx = ev.context()
    rec = ctx.rec
    r = exact_result(
        "M2.exact", ctx.judge([e for e in rec.requests("count2-s1", COUNT_PHASES)]), "count 2", ctx, count=2
    )
    q = q5_intermittent(ctx, [r], 2)
    return r.status, r.evidence, q.status, q.evidence


def test_a_mismatch_in_an_abandoned_attempt_stays_failed(tmp_path: Path) -> None:
    ev = resumed(tmp_path, tts_reply(OTHER))
    st, evidence, q, qev = m2_exact(ev)
    assert st is Status.FAIL and q is Status.FAIL
    m = evidence["mismatches"][0]  # type: ignore[index]
    assert m["set_aside"] == "abandoned" and m["attempt"] == 3  # baseline a=1, b=2
    assert evidence["compared"] == 1 and evidence["exact"] == 1  # only the redone attempt is compared
    assert qev["mismatches"][0]["set_aside"] == "abandoned"  # type: ignore[index]
    assert qev["failure_kind"] == "output"


def test_a_request_error_in_an_abandoned_attempt_fails(tmp_path: Path) -> None:
    st, evidence, q, qev = m2_exact(resumed(tmp_path, None))
    assert st is Status.FAIL and evidence["error_count"] == 1 and evidence["failure_kind"] == "request"
    assert q is Status.FAIL and qev["set_aside_errors"][0]["attempt"] == 3  # type: ignore[index]


def test_a_crash_in_an_abandoned_attempt_fails_q5(tmp_path: Path) -> None:
    _, _, q, qev = m2_exact(resumed(tmp_path, tts_reply(), crash=True))
    assert q is Status.FAIL and qev["failure_kind"] == "lifecycle"
    assert qev["set_aside_crashes"][0]["attempt"] == 3  # type: ignore[index]


def test_a_clean_abandoned_attempt_changes_nothing(tmp_path: Path) -> None:
    ev = resumed(tmp_path, tts_reply())
    st, evidence, q, _ = m2_exact(ev)
    assert st is Status.PASS and q is Status.PASS and evidence["compared"] == 1
    assert ev.records().set_aside[("count2-s1", 3)]["status"] == "abandoned"


def test_an_abandoned_start_alone_is_no_proof_of_pass(tmp_path: Path) -> None:
    """A start with no attempt that stands: nothing is compared (PENDING), yet what failed
    in its abandoned attempt still fails that count's Q5."""
    for i, body in enumerate((tts_reply(), tts_reply(OTHER))):
        ev = Events(tmp_path / str(i))
        ev.baseline({"ref_cold": [tts_reply(), tts_reply()]})
        a = ev.start("count2-s1")
        ev.request("count2-s1", a, "cold_wave", body)
        ev.abandon("count2-s1", a)
        st, evidence, q, _ = m2_exact(ev)
        assert "count2-s1" not in ev.records().runs
        assert st is Status.PENDING and evidence["compared"] == 0
        # nothing compared: Q5 cannot pass on it either; a mismatch in the set-aside attempt fails it
        assert q is (Status.PENDING if i == 0 else Status.FAIL)


def test_a_superseded_attempt_counts_its_mismatch_too(tmp_path: Path) -> None:
    ev = resumed(tmp_path, tts_reply(OTHER), finished=True)
    st, evidence, q, _ = m2_exact(ev)
    assert st is Status.FAIL and q is Status.FAIL
    assert evidence["mismatches"][0]["set_aside"] == "superseded"  # type: ignore[index]


def test_abandoned_baseline_attempts_are_references_not_outputs(tmp_path: Path) -> None:
    """A set-aside baseline start differing from the kept one is serial variation, which
    M1.serial_repeat measures; it is not a candidate mismatch."""
    ev = Events(tmp_path)
    a = ev.start("ref-baseline-a", role="reference", count=1, exe_role="baseline")
    ev.request("ref-baseline-a", a, "ref_cold", tts_reply(OTHER))
    ev.abandon("ref-baseline-a", a)
    ev.baseline({"ref_cold": [tts_reply(), tts_reply()]})
    ctx = ev.context()
    r = q5_intermittent(ctx, [])
    assert r.status is not Status.FAIL and not r.evidence.get("mismatches"), r.reason
