"""Pins parval.gates.exactness: how each recorded output is judged against its reference
(exact, tolerated, mismatch, error, refused for memory, indeterminate, malformed, no
reference, relabelled), the tally's counts, summary and reason text, and set-aside failures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

from parval.gates.exactness import (
    Tally,
    failure_key,
    judge_requests,
    refused_for_memory,
    set_aside_failures,
    tolerance_check,
)
from parval.rundir.event_index import Records, build_records
from parval.rundir.event_types import RequestEvent
from tests.gates.cmp_events import SAMPLES, VOLATILE, Events, tts_reply

RUN = "count2-s1"


def nudged(by: int) -> np.ndarray[Any, Any]:
    other = SAMPLES.copy()
    other[100] += by
    return other


def as_request(e: dict[str, Any]) -> RequestEvent:
    """A synthetic request event as the judges read it (the loader checks its fields)."""
    return cast(RequestEvent, e)


def pair(a: dict[str, Any], b: dict[str, Any]) -> tuple[RequestEvent, RequestEvent]:
    return as_request(a), as_request(b)


def where(run: str = RUN, req: str = "base", **over: Any) -> dict[str, Any]:
    """A failure's location fields as `judge_requests` records them."""
    return {
        "run": run,
        "attempt": 1,
        "phase": "cold_wave",
        "wave": 0,
        "req": req,
        "slot": None,
        "history": [],
        "artifact": None,
        **over,
    }


def at(e: dict[str, Any], **over: Any) -> dict[str, Any]:
    """Where a request of the judged start (its second attempt number, slot 0) ran."""
    return where(attempt=2, slot=0, artifact=e["artifact"], **over)


class Judged:
    """ref-baseline-a (the reference table) and one count-2 start whose requests are judged."""

    def __init__(self, tmp_path: Path, ref_body: dict[str, Any] | None = None) -> None:
        self.ev = Events(tmp_path)
        a = self.ev.start("ref-baseline-a", role="reference", count=1, exe_role="baseline")
        self.ev.request("ref-baseline-a", a, "ref_cold", ref_body or tts_reply(), ref="base|cold")
        self.ev.end("ref-baseline-a", a)
        self.attempt = self.ev.start(RUN, count=2)
        self.judged: list[dict[str, Any]] = []

    def request(self, body: dict[str, Any] | None, **kw: Any) -> dict[str, Any]:
        e = self.ev.request(RUN, self.attempt, kw.pop("phase", "cold_wave"), body, **kw)
        self.judged.append(e)
        return e

    def judge(self, **kw: Any) -> Tally:
        self.ev.end(RUN, self.attempt)
        rec = build_records(self.ev.events)
        return judge_requests(rec, self.events(), run_dir=self.ev.run_dir, **kw)

    def events(self) -> list[RequestEvent]:
        return [as_request(e) for e in self.judged]


# -- Tally ---------------------------------------------------------------------------------------

LISTS = ("mismatches", "errors", "indeterminate", "malformed", "no_reference", "resource", "relabelled")


def test_merge_adds_every_count_and_extends_every_list() -> None:
    a = Tally(compared=1, exact=2, tolerated=3, overlapped=4, overlapped_differed=5)
    b = Tally(compared=10, exact=20, tolerated=30, overlapped=40, overlapped_differed=50)
    for i, name in enumerate(LISTS):
        getattr(a, name).append({"a": i})
        getattr(b, name).append({"b": i})
    a.merge(b)
    assert (a.compared, a.exact, a.tolerated, a.overlapped, a.overlapped_differed) == (11, 22, 33, 44, 55)
    for i, name in enumerate(LISTS):
        assert getattr(a, name) == [{"a": i}, {"b": i}], name


def test_clean_needs_something_compared_and_no_failure_of_any_kind() -> None:
    assert Tally(compared=1, exact=1).clean is True
    assert Tally(compared=0).clean is False
    for name in LISTS:
        t = Tally(compared=3, exact=2)
        getattr(t, name).append({"run": RUN})
        assert t.clean is False, name


def test_all_within_declared_needs_mismatches_each_within_the_declared_tolerance() -> None:
    assert Tally().all_within_declared is False
    assert Tally(mismatches=[{"within_declared_tolerance": True}] * 2).all_within_declared is True
    assert Tally(mismatches=[{"within_declared_tolerance": True}, {}]).all_within_declared is False


def test_bound_counts_overlapped_outputs_and_those_that_differed() -> None:
    found = Tally(overlapped=10, overlapped_differed=0).bound()
    assert found["overlapped"] == 10 and found["differed"] == 0
    assert found["rate_upper_95"] == pytest.approx(1 - 0.05 ** (1 / 10))
    found = Tally(overlapped=10, overlapped_differed=10).bound()
    assert (found["overlapped"], found["differed"], found["rate_upper_95"]) == (10, 10, 1.0)


def test_summary_states_every_count_and_caps_the_listed_failures() -> None:
    t = Tally(compared=70, exact=5, tolerated=2)
    for name in LISTS:
        getattr(t, name).extend({"i": i} for i in range(60))
    s = t.summary()
    assert list(s) == [
        "compared",
        "exact",
        "within_declared_tolerance",
        "mismatches",
        "mismatch_count",
        "errors",
        "error_count",
        "indeterminate",
        "indeterminate_count",
        "malformed",
        "malformed_count",
        "no_reference",
        "no_reference_count",
        "refused_for_memory",
        "relabelled",
        "relabelled_count",
    ]
    assert (s["compared"], s["exact"], s["within_declared_tolerance"]) == (70, 5, 2)
    assert s["mismatches"] == [{"i": i} for i in range(50)] and s["mismatch_count"] == 60
    for listed, count in (
        ("errors", "error_count"),
        ("indeterminate", "indeterminate_count"),
        ("malformed", "malformed_count"),
        ("no_reference", "no_reference_count"),
        ("relabelled", "relabelled_count"),
    ):
        assert s[listed] == [{"i": i} for i in range(20)] and s[count] == 60, listed
    assert s["refused_for_memory"] == [{"i": i} for i in range(20)]


def test_problem_names_each_kind_of_failure_in_order() -> None:
    t = Tally(
        compared=4,
        mismatches=[where()] * 2,
        errors=[where()],
        malformed=[where()] * 3,
        indeterminate=[where()],
        resource=[where()] * 2,
    )
    assert t.problem() == (
        "2 mismatch(es), 1 request error(s), 3 malformed repl(ies), 1 indeterminate outcome(s), "
        "2 request(s) refused for memory (503 insufficient_memory): a VRAM failure is blocked evidence, "
        "never a reason to lower quality settings"
    )


def test_problem_of_a_clean_tally_is_empty_and_of_an_empty_one_says_nothing_compared() -> None:
    assert Tally(compared=3, exact=3).problem() == ""
    assert Tally().problem() == "nothing compared"
    assert Tally(errors=[where()]).problem() == "1 request error(s), nothing compared"


@pytest.mark.parametrize(
    ("histories", "unseen"), [([[], ["base"]], 0), ([None, ["base"]], 1), ([["base", "?"], None, []], 2)]
)
def test_problem_says_when_a_missing_reference_is_due_to_an_unobserved_slot_history(
    histories: list[list[str] | None], unseen: int
) -> None:
    t = Tally(compared=1, no_reference=[where(history=h) for h in histories])
    text = f"{len(histories)} output(s) without a same-history reference"
    if unseen:
        text += (
            f" ({unseen} whose slot history was not observed: the server's admission order was not seen, which a "
            "busy machine can cause; run again with fewer other processes)"
        )
    assert t.problem() == text


def test_problem_names_the_set_aside_attempts_sorted_and_at_most_five() -> None:
    aside = [where(run=f"count2-s{i}", attempt=i, set_aside="abandoned") for i in (7, 3, 5, 1, 6, 2)]
    t = Tally(compared=1, mismatches=aside[:2], errors=aside[2:4], malformed=aside[4:], indeterminate=[where()])
    assert t.problem() == (
        "2 mismatch(es), 2 request error(s), 2 malformed repl(ies), 1 indeterminate outcome(s), "
        "6 of these in attempt(s) parval set aside: count2-s1 attempt 1 (abandoned), count2-s2 attempt 2 "
        "(abandoned), count2-s3 attempt 3 (abandoned), count2-s5 attempt 5 (abandoned), count2-s6 attempt 6 "
        "(abandoned)"
    )
    # the same attempt twice is named once; an attempt not recorded reads None
    twice = [{**where(), "set_aside": "superseded"}] * 2 + [{"run": "x", "set_aside": "unknown"}]
    assert Tally(compared=1, mismatches=twice).problem() == (
        "3 mismatch(es), 3 of these in attempt(s) parval set aside: count2-s1 attempt 1 (superseded), "
        "x attempt None (unknown)"
    )


def test_problem_names_the_first_relabelled_output() -> None:
    t = Tally(
        compared=2,
        relabelled=[
            {**where(phase="warm_wave"), "label": "base|cold", "ref": "base|warm"},
            {**where(req="other"), "label": "a", "ref": "b"},
        ],
    )
    assert t.problem() == (
        "2 output(s) whose recorded reference label disagrees with the reference their history calls for "
        "(first: count2-s1 warm_wave base labelled base|cold, ran as base|warm); compared with the derived "
        "reference, not shown against the labelled one"
    )


def test_failure_key_identifies_a_request_by_where_it_ran() -> None:
    m = {**where(slot=1, artifact="abc"), "extra": 1}
    assert failure_key(m) == (RUN, 1, "cold_wave", 0, "base", 1, "abc")
    assert failure_key({}) == (None,) * 7


# -- set-aside failures --------------------------------------------------------------------------


def set_aside_records(tmp_path: Path) -> Records:
    ev = Events(tmp_path)
    first = ev.start(RUN)
    ev.abandon(RUN, first)
    second = ev.start(RUN)
    ev.end(RUN, second)
    third = ev.start(RUN)
    ev.end(RUN, third)
    return build_records(ev.events)


def test_set_aside_failures_keep_only_failures_marked_with_why_the_attempt_was_set_aside(tmp_path: Path) -> None:
    rec = set_aside_records(tmp_path)
    judged = Tally(
        compared=5,
        exact=2,
        tolerated=1,
        mismatches=[
            {**where(attempt=1), "overlapped": True},
            {**where(attempt=2), "overlapped": False},
            {**where(attempt=2), "overlapped": True},
        ],
        errors=[where(attempt=2)],
        malformed=[where(attempt=9)],
        indeterminate=[where()],
        no_reference=[where()],
        resource=[where()],
        relabelled=[where()],
        overlapped=7,
        overlapped_differed=3,
    )
    out = set_aside_failures(rec, judged)
    assert [m["set_aside"] for m in out.mismatches] == ["abandoned", "superseded", "superseded"]
    assert out.mismatches[0] == {**where(attempt=1), "overlapped": True, "set_aside": "abandoned"}
    assert out.errors == [{**where(attempt=2), "set_aside": "superseded"}]
    assert out.malformed == [{**where(attempt=9), "set_aside": "unknown"}]
    assert out.indeterminate == out.no_reference == out.resource == out.relabelled == []
    assert (out.compared, out.exact, out.tolerated) == (0, 0, 0)
    # a set-aside output that differed counts in the bound, as overlapped and as differing
    assert (out.overlapped, out.overlapped_differed) == (2, 2)


# -- refused for memory --------------------------------------------------------------------------

REFUSAL = {"error": {"type": "insufficient_memory", "message": "not enough VRAM"}}


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ({"status": 503, "error_type": "insufficient_memory"}, True),
        ({"status": 503, "error_type": "overloaded"}, False),
        # recorded as null: the summary says what type it was (none), the body is not read
        ({"status": 503, "error_type": None}, False),
        ({"status": 500, "error_type": "insufficient_memory"}, False),
    ],
)
def test_refused_for_memory_from_the_reply_summary(tmp_path: Path, reply: dict[str, Any], expected: bool) -> None:
    ev = Events(tmp_path)
    e = ev.request(RUN, 1, "cold_wave", REFUSAL, status=503)
    e["reply"] = reply
    assert refused_for_memory(as_request(e), tmp_path) is expected


def test_refused_for_memory_from_the_raw_body_when_the_type_was_not_recorded(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    refusal = ev.request(RUN, 1, "cold_wave", REFUSAL, status=503)
    assert refused_for_memory(as_request(refusal), tmp_path) is True
    assert refused_for_memory(as_request(refusal), None) is False
    assert refused_for_memory(as_request({**refusal, "reply": {"status": 500}}), tmp_path) is False
    assert refused_for_memory(as_request({**refusal, "reply": {}}), tmp_path) is False
    assert refused_for_memory(as_request({**refusal, "artifact": None}), tmp_path) is False
    assert refused_for_memory(as_request({**refusal, "artifact": "absent"}), tmp_path) is False
    other = ev.request(RUN, 1, "cold_wave", {"error": {"type": "overloaded"}}, status=503)
    assert refused_for_memory(as_request(other), tmp_path) is False


@pytest.mark.parametrize("raw", [b"not json", b"[1, 2]", b'{"error": "insufficient_memory"}', b"{}"])
def test_refused_for_memory_is_false_for_a_body_that_does_not_say_so(tmp_path: Path, raw: bytes) -> None:
    (tmp_path / "artifacts").mkdir()
    (tmp_path / "artifacts" / "x.json").write_bytes(raw)
    e = {"reply": {"status": 503}, "artifact": "x"}
    assert refused_for_memory(as_request(e), tmp_path) is False


def test_refused_for_memory_is_false_for_a_body_nested_too_deep(tmp_path: Path) -> None:
    (tmp_path / "artifacts").mkdir()
    (tmp_path / "artifacts" / "x.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    e = {"reply": {"status": 503}, "artifact": "x"}
    assert refused_for_memory(as_request(e), tmp_path) is False


# -- judge_requests ------------------------------------------------------------------------------


def test_an_exact_output_is_compared_and_exact(tmp_path: Path) -> None:
    j = Judged(tmp_path)
    j.request(tts_reply())
    warm = j.request(tts_reply(), phase="warm_wave", ref="base|warm", history=["base"])
    t = j.judge()
    assert (t.compared, t.exact, t.tolerated) == (1, 1, 0)
    # the warm request has no warm reference recorded
    assert t.no_reference == [{**at(warm, phase="warm_wave", history=["base"]), "ref": "base|warm"}]
    assert t.clean is False


@pytest.mark.parametrize("outcome", ["indeterminate", "connect_error", "oversize"])
def test_an_indeterminate_outcome_is_never_compared(tmp_path: Path, outcome: str) -> None:
    j = Judged(tmp_path)
    e = j.request(tts_reply())
    e["reply"] = {"status": None, "outcome": outcome, "error": "timed out"}
    t = j.judge()
    assert t.indeterminate == [{**at(e), "outcome": outcome, "error": "timed out"}]
    assert (t.compared, t.errors, t.malformed) == (0, [], [])


def test_a_request_error_and_a_memory_refusal_are_told_apart(tmp_path: Path) -> None:
    j = Judged(tmp_path)
    err = j.request(None, status=500)
    err["reply"]["error"] = "boom"
    refusal = j.request(REFUSAL, status=503)
    t = j.judge()
    assert t.errors == [{**at(err), "status": 500, "error": "boom"}]
    assert t.resource == [{**at(refusal), "status": 503, "error": None}]
    assert t.compared == 0 and t.indeterminate == []
    # without the raw replies the refusal cannot be shown to be one: a request error
    rec = build_records(j.ev.events)
    assert len(judge_requests(rec, j.events()).errors) == 2


def test_a_reply_without_a_valid_output_is_malformed(tmp_path: Path) -> None:
    j = Judged(tmp_path)
    none = j.request(tts_reply())
    none["output"] = None
    bad = j.request(tts_reply())
    bad["output"] = {"valid": False, "problem": "audio is not a WAV"}
    t = j.judge()
    assert t.malformed == [{**at(none), "problem": "no output recorded"}, {**at(bad), "problem": "audio is not a WAV"}]
    assert t.compared == 0


def test_a_missing_reply_summary_is_a_request_error(tmp_path: Path) -> None:
    j = Judged(tmp_path)
    e = j.request(tts_reply())
    rec = build_records(j.ev.events)
    e["reply"] = None  # judged as read, past the loader's check
    t = judge_requests(rec, j.events(), run_dir=j.ev.run_dir)
    assert t.errors == [{**at(e), "status": None, "error": None}]
    assert t.compared == 0


def test_a_label_that_disagrees_with_the_history_is_relabelled_and_compared_with_the_derived_ref(
    tmp_path: Path,
) -> None:
    j = Judged(tmp_path)
    e = j.request(tts_reply(), ref="base|warm")
    t = j.judge()
    assert t.relabelled == [{**at(e), "label": "base|warm", "ref": "base|cold"}]
    assert (t.compared, t.exact) == (1, 1) and t.clean is False


def test_no_derived_reference_is_no_reference(tmp_path: Path) -> None:
    j = Judged(tmp_path)
    e = j.request(tts_reply(), phase="warm_wave", ref=None, history=None)
    t = j.judge()
    # no recorded slot history: no reference applies (the label None agrees with it)
    assert t.relabelled == []
    assert t.no_reference == [{**at(e, phase="warm_wave", history=None), "ref": None}]
    assert t.compared == 0


def test_every_request_is_judged_whatever_the_one_before_showed(tmp_path: Path) -> None:
    j = Judged(tmp_path)
    j.request(tts_reply())["reply"]["outcome"] = "indeterminate"
    j.request(None, status=500)
    j.request(tts_reply())["output"] = None
    j.request(tts_reply(), phase="warm_wave", ref="base|warm", history=["base"])
    j.request(tts_reply())
    j.request(tts_reply(nudged(1)))
    j.request(tts_reply(nudged(2)))
    j.request(tts_reply(nudged(1)))
    t = j.judge(tolerance=1, volatile=VOLATILE)
    counts = [len(x) for x in (t.indeterminate, t.errors, t.malformed, t.no_reference, t.mismatches)]
    assert counts == [1, 1, 1, 1, 1]
    assert (t.compared, t.exact, t.tolerated) == (4, 1, 2)


def mismatch(e: dict[str, Any], ref: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        **at(e),
        "ref": "base|cold",
        "got_canon": e["output"]["canon"],
        "ref_canon": ref["output"]["canon"],
        "ref_artifact": ref["artifact"],
        "got_audio": e["output"]["audio"],
        "ref_audio": ref["output"]["audio"],
        **extra,
    }


def test_a_differing_output_is_a_mismatch_with_both_hashes(tmp_path: Path) -> None:
    j = Judged(tmp_path)
    e = j.request(tts_reply(nudged(1)))
    t = j.judge()
    ref = build_records(j.ev.events).refs["base|cold"]
    assert t.mismatches == [mismatch(e, dict(ref), max_abs_sample_diff=None)]
    assert (t.compared, t.exact, t.tolerated) == (1, 0, 0)
    assert t.problem() == "1 mismatch(es)"


@pytest.mark.parametrize(("by", "tolerated"), [(2, True), (3, False)])
def test_the_tolerance_that_applies_tolerates_samples_within_it(tmp_path: Path, by: int, tolerated: bool) -> None:
    j = Judged(tmp_path)
    # the wall time differs too: a volatile field, left out of the comparison
    e = j.request(tts_reply(nudged(by), wall_ms=7.0))
    t = j.judge(tolerance=2, volatile=VOLATILE, declared_tolerance=9)
    assert (t.compared, t.exact, t.tolerated) == (1, 0, int(tolerated))
    if tolerated:
        assert t.mismatches == [] and t.clean is True
    else:
        ref = build_records(j.ev.events).refs["base|cold"]
        why = "max abs sample difference 3 exceeds the declared 2"
        assert t.mismatches == [mismatch(e, dict(ref), max_abs_sample_diff=3, tolerance_check=why)]


def test_a_declared_tolerance_that_does_not_apply_is_only_noted(tmp_path: Path) -> None:
    j = Judged(tmp_path)
    within = j.request(tts_reply(nudged(2)))
    beyond = j.request(tts_reply(nudged(3)))
    t = j.judge(volatile=VOLATILE, declared_tolerance=2)
    ref = dict(build_records(j.ev.events).refs["base|cold"])
    assert t.tolerated == 0 and t.compared == 2
    assert t.mismatches == [
        mismatch(within, ref, max_abs_sample_diff=2, tolerance_check="", within_declared_tolerance=True),
        mismatch(
            beyond, ref, max_abs_sample_diff=3, tolerance_check="max abs sample difference 3 exceeds the declared 2"
        ),
    ]
    assert t.all_within_declared is False


def test_a_tolerance_without_a_numeric_difference_records_none(tmp_path: Path) -> None:
    j = Judged(tmp_path)
    e = j.request(tts_reply(text="other"))
    t = j.judge(tolerance=2, volatile=VOLATILE)
    assert t.mismatches[0]["max_abs_sample_diff"] is None
    assert t.mismatches[0]["tolerance_check"] == "non-audio fields differ (a tolerance covers PCM samples only)"
    assert t.mismatches[0]["artifact"] == e["artifact"]


def test_overlap_counts_outputs_produced_beside_another_request(tmp_path: Path) -> None:
    j = Judged(tmp_path)
    same = j.request(tts_reply(), t_send=0.0, t_done=1.0)
    differs = j.request(tts_reply(nudged(1)), t_send=0.5, t_done=1.5)
    alone = j.request(tts_reply(nudged(1)), t_send=5.0, t_done=6.0)
    t = j.judge(overlap=True)
    assert (t.compared, t.exact, t.overlapped, t.overlapped_differed) == (3, 1, 2, 1)
    assert [(m["artifact"], m["overlapped"]) for m in t.mismatches] == [
        (differs["artifact"], True),
        (alone["artifact"], False),
    ]
    assert same["artifact"] not in {m["artifact"] for m in t.mismatches}
    # without `overlap` nothing is counted and mismatches carry no overlap flag
    rec = build_records(j.ev.events)
    plain = judge_requests(rec, j.events(), run_dir=j.ev.run_dir)
    assert (plain.overlapped, plain.overlapped_differed) == (0, 0)
    assert all("overlapped" not in m for m in plain.mismatches)


def test_cache_sensitive_outputs_are_compared_with_the_same_history_reference(tmp_path: Path) -> None:
    j = Judged(tmp_path)
    e = j.request(tts_reply())
    t = j.judge(cache_sensitive=True)
    # the table holds base|cold only: a cache-sensitive cold output needs hist:base
    assert t.relabelled == [{**at(e), "label": "base|cold", "ref": "hist:base"}]
    assert t.no_reference == [{**at(e), "ref": "hist:base"}]


# -- tolerance_check -----------------------------------------------------------------------------


def test_tolerance_check_needs_both_raw_replies(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    a = ev.request(RUN, 1, "cold_wave", tts_reply(nudged(1)))
    b = ev.request(RUN, 1, "cold_wave", tts_reply())
    absent = {"covered": False, "why": "raw replies not available to apply the tolerance"}
    assert tolerance_check(None, *pair(a, b), VOLATILE, 2) == absent
    assert tolerance_check(tmp_path, *pair({**a, "artifact": None}, b), VOLATILE, 2) == absent
    assert tolerance_check(tmp_path, *pair(a, {**b, "artifact": ""}), VOLATILE, 2) == absent
    assert tolerance_check(tmp_path, *pair(a, b), VOLATILE, 2) == {"covered": True, "max_abs_sample_diff": 1}
    assert tolerance_check(tmp_path, *pair(a, b), VOLATILE, 0) == {
        "covered": False,
        "why": "max abs sample difference 1 exceeds the declared 0",
        "max_abs_sample_diff": 1,
    }


@pytest.mark.parametrize("which", ["got", "ref"])
def test_tolerance_check_says_a_raw_reply_is_unreadable(tmp_path: Path, which: str) -> None:
    ev = Events(tmp_path)
    a = ev.request(RUN, 1, "cold_wave", tts_reply(nudged(1)))
    b = ev.request(RUN, 1, "cold_wave", tts_reply())
    if which == "got":
        a = {**a, "artifact": "gone"}
    else:
        b = {**b, "artifact": "gone"}
    found = tolerance_check(tmp_path, *pair(a, b), VOLATILE, 2)
    assert found["covered"] is False
    path = tmp_path / "artifacts" / "gone.json"
    assert found["why"] == f"raw reply unreadable: [Errno 2] No such file or directory: '{path}'"


def test_the_raw_bodies_are_compared_not_the_canonical_forms(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    a = ev.request(RUN, 1, "cold_wave", tts_reply(nudged(2), wall_ms=9.0))
    b = ev.request(RUN, 1, "cold_wave", tts_reply())
    assert tolerance_check(tmp_path, *pair(a, b), VOLATILE, 2)["covered"] is True
    # the volatile fields passed are the ones removed
    found = tolerance_check(tmp_path, *pair(a, b), [], 2)
    assert found["covered"] is False and found["fields"] == ["timing"]
    assert json.loads((tmp_path / "artifacts" / f"{a['artifact']}.json").read_bytes())["timing"]["wall_ms"] == 9.0
