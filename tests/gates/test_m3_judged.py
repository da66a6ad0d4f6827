"""M3 judged exactly: the verdicts, reasons and evidence of M3.reversed, M3.ten_waves,
M3.history and M3.variation at each branch, and the content digests and variation effects
they rest on."""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from parval.gates.judge_context import JudgeContext
from parval.gates.m3_mixed_waves import (
    content_digest,
    judge_m3,
    m3_history,
    m3_reversed,
    m3_ten_waves,
    m3_variation,
    mixed_wave_counts,
    variation_effects,
)
from parval.rundir.event_index import build_records, derived_ref
from parval.status import Result, Status
from tests.gates.m_events import Events, baseline_refs, counterless_status, counters_status, full_start, plan, tts_body

Edit = Callable[[list[dict[str, Any]]], None]

UNOBSERVED = {"ordered_ok": False, "finished_early": False, "admit_waits_ms": [2000.0, 2000.0]}
LETTERS = "abcdef"
BODIES = {name: tts_body(i + 1) for i, name in enumerate(LETTERS)}
MIXED_REASON_TAIL = (
    "(a request was not seen taking its slot before the next was sent, or one finished before the last was admitted)"
)


def drop(events: list[dict[str, Any]], run: str, phase: str, wave: int, *, kind: str | None = None) -> None:
    """Remove the events (of `kind`, else every kind) of one wave of one start."""
    events[:] = [
        e
        for e in events
        if not (
            e.get("run") == run
            and e.get("phase") == phase
            and e.get("wave") == wave
            and (kind is None or e["kind"] == kind)
        )
    ]


def mixed_waves_of(events: list[dict[str, Any]], run: str | None = None) -> list[dict[str, Any]]:
    return [
        e for e in events if e["kind"] == "wave" and e["phase"] == "mixed_wave" and (run is None or e["run"] == run)
    ]


# --- M3.ten_waves ---------------------------------------------------------------------


def waves_plan(mixed: int, at_largest: int) -> dict[str, Any]:
    p = plan(counts=[1, 2])
    p["waves"] = {**p["waves"], "mixed": mixed, "mixed_at_largest": at_largest}
    return p


def ten_waves(tmp_path: Path, n: int, p: dict[str, Any], *, starts: int = 3, edit: Edit | None = None) -> Result:
    ev = Events(tmp_path)
    for k in range(1, starts + 1):
        full_start(ev, f"count{n}-s{k}", n, p)
    if edit is not None:
        edit(ev.events)
    return m3_ten_waves(ev.context(p), n, [])


def per_start(n: int, k: int, starts: int = 3) -> dict[str, int]:
    return {f"count{n}-s{s}": k for s in range(1, starts + 1)}


@pytest.mark.parametrize("mixed", [2, 9])
def test_ten_waves_short_plan_below_the_largest_count_is_not_applicable(tmp_path: Path, mixed: int) -> None:
    r = ten_waves(tmp_path, 1, waves_plan(mixed, 10))
    assert r.status is Status.NOT_APPLICABLE
    assert r.reason == (
        f"count 1 runs {mixed} mixed warm wave(s) per start (waves.mixed): it can be admitted only "
        "below a larger admitted count that ran 10"
    )
    assert r.evidence == {"short": True, "planned": mixed, "mixed_waves": per_start(1, mixed)}


def test_ten_waves_ten_planned_below_the_largest_count_passes(tmp_path: Path) -> None:
    r = ten_waves(tmp_path, 1, waves_plan(10, 2))
    assert r.status is Status.PASS, r.reason
    assert r.reason == "10+ mixed warm waves in each of 3 starts"
    assert r.evidence == {"mixed_waves": per_start(1, 10), "rests_on": {"starts with ten mixed waves": 3}}


@pytest.mark.parametrize("at_largest", [2, 9])
def test_ten_waves_short_plan_at_the_largest_count_is_pending_never_fail(tmp_path: Path, at_largest: int) -> None:
    r = ten_waves(tmp_path, 2, waves_plan(2, at_largest))
    assert r.status is Status.PENDING
    assert r.reason == (
        f"fewer than 10 mixed warm waves recorded in {per_start(2, at_largest)}: "
        f"the plan runs {at_largest} (waves.mixed_at_largest)"
    )
    assert r.evidence == {"mixed_waves": per_start(2, at_largest)}


def test_ten_waves_a_start_that_recorded_nine_of_ten_planned_is_pending(tmp_path: Path) -> None:
    r = ten_waves(tmp_path, 2, waves_plan(2, 10), edit=lambda evs: drop(evs, "count2-s2", "mixed_wave", 9))
    assert r.status is Status.PENDING
    assert r.reason == "fewer than 10 mixed warm waves recorded in {'count2-s2': 9}: 10 were planned"
    assert r.evidence == {"mixed_waves": {"count2-s1": 10, "count2-s2": 9, "count2-s3": 10}}


def test_ten_waves_two_starts_are_not_enough(tmp_path: Path) -> None:
    r = ten_waves(tmp_path, 2, waves_plan(2, 10), starts=2)
    assert r.status is Status.PENDING
    assert r.reason == "2 complete start(s) at count 2, 3 needed"
    assert r.evidence == {
        "starts": ["count2-s1", "count2-s2"],
        "complete": ["count2-s1", "count2-s2"],
        "mixed_waves": per_start(2, 10, 2),
    }


def test_ten_waves_a_wave_without_its_replies_is_pending(tmp_path: Path) -> None:
    def edit(events: list[dict[str, Any]]) -> None:
        drop(events, "count2-s3", "mixed_wave", 4, kind="request")

    r = ten_waves(tmp_path, 2, waves_plan(2, 10), edit=edit)
    assert r.status is Status.PENDING
    assert r.reason.startswith("evidence incomplete at count 2: count2-s3: "), r.reason


def test_ten_waves_counts_distinct_waves_and_states_the_fewest(tmp_path: Path) -> None:
    """A retried wave counts once; a start with an eleventh wave does not raise the floor."""

    def edit(events: list[dict[str, Any]]) -> None:
        extra = Events(tmp_path)
        for _ in range(2):
            extra.request("count2-s1", "mixed_wave", 10, "base", tts_body(1), ref="base|warm")
            extra.request("count2-s2", "mixed_wave", 0, "base", tts_body(1), ref="base|warm", retry=1)
        extra.wave("count2-s1", "mixed_wave", 10, 2, order=["base", "base"])
        extra.wave("count2-s2", "mixed_wave", 0, 2, order=["base", "base"], retry=1)
        end = next(i for i, e in enumerate(events) if e["kind"] == "run_end" and e["run"] == "count2-s1")
        events[end:end] = [e for e in extra.events if e["run"] == "count2-s1"]
        end = next(i for i, e in enumerate(events) if e["kind"] == "run_end" and e["run"] == "count2-s2")
        events[end:end] = [e for e in extra.events if e["run"] == "count2-s2"]

    p = waves_plan(2, 10)
    r = ten_waves(tmp_path, 2, p, edit=edit)
    assert r.status is Status.PASS, r.reason
    assert r.reason == "10+ mixed warm waves in each of 3 starts"
    assert r.evidence["mixed_waves"] == {"count2-s1": 11, "count2-s2": 10, "count2-s3": 10}


def test_mixed_wave_counts_ignores_other_phases_and_counts(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    p = waves_plan(3, 4)
    full_start(ev, "count1-s1", 1, p)
    full_start(ev, "count2-s1", 2, p)
    ctx = ev.context(p)
    assert mixed_wave_counts(ctx, 1) == {"count1-s1": 3}
    assert mixed_wave_counts(ctx, 2) == {"count2-s1": 4}


# --- M3.reversed ----------------------------------------------------------------------


def reversed_events(
    tmp_path: Path,
    orders: list[list[str]],
    *,
    status: dict[str, Any] | None = None,
    admission: dict[str, Any] | None = None,
    trace: bool | None = None,
    bad: tuple[int, str] | None = None,
    missing: tuple[int, str] | None = None,
    retry: int = 0,
    starts: int = 3,
) -> Events:
    """count2-s1 runs the mixed waves `orders` (requests a..f, each with its reference);
    the other starts run the plan's waves, their admission order never observed."""
    ev = Events(tmp_path)
    ev.start("ref-baseline-a", role="reference")
    for name, body in {"base": tts_body(1), **BODIES}.items():
        for phase in ("ref_cold", "ref_warm", "ref_warm2"):
            ev.request("ref-baseline-a", phase, 0, name, body)
    ev.end("ref-baseline-a")
    st = status or counters_status(2)
    ev.start("count2-s1", count=2)
    for w, order in enumerate(orders):
        for req in order:
            if missing != (w, req):
                body = tts_body(99) if bad == (w, req) else BODIES[req]
                ev.request("count2-s1", "mixed_wave", w, req, body, ref=f"{req}|warm", retry=retry)
        ev.wave("count2-s1", "mixed_wave", w, 2, order=order, status=st, admission=admission, trace_confirmed=trace)
        ev.events[-1]["retry"] = retry
    ev.end("count2-s1")
    for k in range(2, starts + 1):
        full_start(ev, f"count2-s{k}", 2, plan(), status=st)
        for w in mixed_waves_of(ev.events, f"count2-s{k}"):
            w["admission"] = dict(UNOBSERVED)
    return ev


def reversed_result(tmp_path: Path, orders: list[list[str]], **kw: Any) -> Result:
    ctx = reversed_events(tmp_path, orders, **kw).context(plan())
    return m3_reversed(ctx, 2, [])


def test_reversed_is_not_applicable_at_count_one(tmp_path: Path) -> None:
    ctx = reversed_events(tmp_path, [["a", "b"], ["b", "a"]]).context(plan())
    r = m3_reversed(ctx, 1, [])
    assert r.status is Status.NOT_APPLICABLE
    assert r.reason == "one slot: admission order cannot be reversed"


def test_reversed_without_mixed_waves_is_pending(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    full_start(ev, "count1-s1", 1, plan())
    r = m3_reversed(ev.context(plan()), 2, [])
    assert r.status is Status.PENDING
    assert r.reason == "no mixed wave recorded at count 2"


def test_reversed_pair_passes_with_its_evidence(tmp_path: Path) -> None:
    # a/c is seen one way only; the wave that shows it is no part of the verdict (its bad
    # output is not judged here)
    r = reversed_result(tmp_path, [["a", "b"], ["b", "a"], ["a", "c"]], bad=(2, "c"))
    assert r.status is Status.PASS, r.reason
    assert r.reason.startswith("1 request pair(s) observed admitted in both orders (a/b); outputs of those 2 wave(s)")
    assert r.evidence["reversed_pairs"] == [["a", "b"]]
    assert r.evidence["one_order_pairs"] == ["a before c"]
    assert r.evidence["observed_waves"] == 3
    assert r.evidence["mixed_waves"] == 7
    assert r.evidence["rests_on"]["reversed pairs"] == 1
    assert r.evidence["compared"] == 4


def test_reversed_pairs_are_listed_sorted(tmp_path: Path) -> None:
    r = reversed_result(tmp_path, [["d", "c"], ["c", "d"], ["b", "a"], ["a", "b"]])
    assert r.status is Status.PASS, r.reason
    assert r.reason.startswith("2 request pair(s) observed admitted in both orders (a/b, c/d); outputs of those 4 ")
    assert r.evidence["reversed_pairs"] == [["a", "b"], ["c", "d"]]
    assert r.evidence["one_order_pairs"] == []


def test_reversed_retried_waves_are_matched_with_their_outputs(tmp_path: Path) -> None:
    r = reversed_result(tmp_path, [["a", "b"], ["b", "a"]], retry=1)
    assert r.status is Status.PASS, r.reason
    assert r.evidence["compared"] == 4


def test_reversed_mismatch_in_a_reversed_wave_fails_without_rests_on(tmp_path: Path) -> None:
    r = reversed_result(tmp_path, [["a", "b"], ["b", "a"]], bad=(0, "b"))
    assert r.status is Status.FAIL
    assert "rests_on" not in r.evidence
    assert r.evidence["reversed_pairs"] == [["a", "b"]]


def test_reversed_output_not_recorded_is_pending(tmp_path: Path) -> None:
    r = reversed_result(tmp_path, [["a", "b"], ["b", "a"]], missing=(1, "a"))
    assert r.status is Status.PENDING
    assert r.reason == "1 output(s) of the reversed waves not recorded"


def test_reversed_needs_the_required_starts(tmp_path: Path) -> None:
    r = reversed_result(tmp_path, [["a", "b"], ["b", "a"]], starts=2)
    assert r.status is Status.PENDING
    assert r.reason == "2 complete start(s) at count 2, 3 needed"


def test_reversed_needs_every_planned_mixed_wave(tmp_path: Path) -> None:
    # the plan runs mixed waves 0 and 1; count2-s1 recorded wave 0 only, twice as a retry
    ev = reversed_events(tmp_path, [["a", "b"]])
    extra = reversed_events(tmp_path / "x", [["b", "a"]], retry=1, starts=1)
    end = next(i for i, e in enumerate(ev.events) if e["kind"] == "run_end" and e["run"] == "count2-s1")
    ev.events[end:end] = [e for e in extra.events if e.get("run") == "count2-s1" and e["kind"] in ("request", "wave")]
    r = m3_reversed(ev.context(plan()), 2, [])
    assert r.status is Status.PENDING
    assert r.reason == "evidence incomplete at count 2: count2-s1: no mixed_wave 1 recorded"


def test_reversed_one_way_pairs_are_pending_and_listed(tmp_path: Path) -> None:
    r = reversed_result(tmp_path, [["a", "b"], ["d", "c"]])
    assert r.status is Status.PENDING
    assert r.reason == (
        "no request pair was observed admitted in both orders in 2 observed wave(s); "
        "seen in one order only: a before b, d before c"
    )
    assert r.evidence == {"one_order_pairs": ["a before b", "d before c"]}


def test_reversed_lists_at_most_ten_one_way_pairs_in_the_reason(tmp_path: Path) -> None:
    r = reversed_result(tmp_path, [list(LETTERS)])
    assert r.status is Status.PENDING
    assert r.reason.endswith(
        "in 1 observed wave(s); seen in one order only: a before b, a before c, a before d, a before e, "
        "a before f, b before c, b before d, b before e, b before f, c before d"
    )
    assert len(r.evidence["one_order_pairs"]) == 15


def test_reversed_a_request_repeated_in_one_wave_is_no_pair(tmp_path: Path) -> None:
    r = reversed_result(tmp_path, [["a", "a"]])
    assert r.status is Status.PENDING
    assert (
        r.reason
        == "no request pair was observed admitted in both orders in 1 observed wave(s); seen in one order only: "
    )
    assert r.evidence == {"one_order_pairs": []}


@pytest.mark.parametrize(
    ("admission", "trace", "observed"),
    [
        ({"ordered_ok": True, "finished_early": False}, None, True),
        ({"ordered_ok": True}, None, True),
        ({"ordered_ok": True, "finished_early": True}, None, False),
        ({"ordered_ok": 1, "finished_early": False}, None, False),
        ({"ordered_ok": False, "finished_early": False}, None, False),
        ({}, None, False),
        ({"ordered_ok": False}, True, True),
        ({"ordered_ok": True, "finished_early": False}, False, False),
        ({"ordered_ok": False}, 1, False),
    ],
)
def test_reversed_admission_order_observed_only_by_ordered_admission_or_trace(
    tmp_path: Path, admission: dict[str, Any], trace: Any, observed: bool
) -> None:
    ev = reversed_events(tmp_path, [["a", "b"], ["b", "a"]])
    for w in mixed_waves_of(ev.events, "count2-s1"):
        w["admission"], w["trace_confirmed"] = admission, trace
    r = m3_reversed(ev.context(plan()), 2, [])
    if observed:
        assert r.status is Status.PASS, r.reason
    else:
        assert r.status is Status.PENDING
        assert r.reason == f"admission order not observed in any of 6 mixed wave(s) {MIXED_REASON_TAIL}"


def test_reversed_wave_without_an_order_list_is_not_observed(tmp_path: Path) -> None:
    ev = reversed_events(tmp_path, [["a", "b"], ["b", "a"]])
    for w in mixed_waves_of(ev.events, "count2-s1"):
        w["order"] = "a,b"
    r = m3_reversed(ev.context(plan()), 2, [])
    assert r.status is Status.PENDING
    assert r.reason == f"admission order not observed in any of 6 mixed wave(s) {MIXED_REASON_TAIL}"


def test_reversed_counterless_server_without_trace_cannot_observe_order(tmp_path: Path) -> None:
    r = reversed_result(tmp_path, [["a", "b"], ["b", "a"]], status=counterless_status(2), admission=UNOBSERVED)
    assert r.status is Status.PENDING
    assert r.reason == (
        "the server publishes no slot counters and no observer trace confirmed the slots: "
        "the admission order cannot be observed (6 mixed wave(s))"
    )


def test_reversed_counters_in_one_wave_make_it_an_unobserved_order(tmp_path: Path) -> None:
    ev = reversed_events(tmp_path, [["a", "b"], ["b", "a"]], status=counterless_status(2), admission=UNOBSERVED)
    mixed_waves_of(ev.events, "count2-s1")[1]["status"] = counters_status(2)
    r = m3_reversed(ev.context(plan()), 2, [])
    assert r.status is Status.PENDING
    assert r.reason == f"admission order not observed in any of 6 mixed wave(s) {MIXED_REASON_TAIL}"


def test_reversed_trace_on_a_wave_without_order_is_not_a_counterless_server(tmp_path: Path) -> None:
    ev = reversed_events(tmp_path, [["a", "b"], ["b", "a"]], status=counterless_status(2), admission=UNOBSERVED)
    w = mixed_waves_of(ev.events, "count2-s1")[0]
    w["order"], w["trace_confirmed"] = None, True
    r = m3_reversed(ev.context(plan()), 2, [])
    assert r.status is Status.PENDING
    assert r.reason == f"admission order not observed in any of 6 mixed wave(s) {MIXED_REASON_TAIL}"


# --- M3.history -----------------------------------------------------------------------


def history_result(
    tmp_path: Path, *, cache_sensitive: bool = True, starts: int = 3, edit: Edit | None = None
) -> Result:
    """Three count-2 starts whose mixed waves were admitted in order; the references and
    labels are the same-history ones of a cache-sensitive model."""
    p = plan()
    p["model"]["cache_sensitive"] = cache_sensitive
    ev = Events(tmp_path)
    baseline_refs(ev)
    for k in range(1, starts + 1):
        full_start(ev, f"count2-s{k}", 2, p)
    for e in ev.events:
        if e["kind"] == "request":
            e["ref"] = derived_ref(e, cache_sensitive)
    if edit is not None:
        edit(ev.events)
    return m3_history(ev.context(p), 2, [])


NO_TRACE = "no [SLOT_VALIDATION] observer trace: slot mapping from ordered admission only"


def test_history_is_not_applicable_for_a_stateless_model(tmp_path: Path) -> None:
    r = history_result(tmp_path, cache_sensitive=False)
    assert r.status is Status.NOT_APPLICABLE
    assert r.reason == (
        "model declared stateless (model.cache_sensitive: false): outputs do not depend on session history"
    )


def test_history_ordered_admission_passes_with_the_no_trace_limitation(tmp_path: Path) -> None:
    r = history_result(tmp_path)
    assert r.status is Status.PASS, r.reason
    assert r.reason.startswith("mixed-wave outputs vs same-history single-slot replays")
    assert r.evidence["trace_confirmed_waves"] == 0 and r.evidence["waves"] == 6
    assert r.evidence["compared"] == 12
    assert list(r.limitations) == [NO_TRACE]


def test_history_traced_waves_are_counted_and_drop_the_limitation(tmp_path: Path) -> None:
    def edit(events: list[dict[str, Any]]) -> None:
        for w in mixed_waves_of(events)[:2]:
            w["trace_confirmed"] = True

    r = history_result(tmp_path, edit=edit)
    assert r.status is Status.PASS, r.reason
    assert r.evidence["trace_confirmed_waves"] == 2
    assert NO_TRACE not in r.limitations


def test_history_trace_disagreeing_with_admission_is_pending(tmp_path: Path) -> None:
    def edit(events: list[dict[str, Any]]) -> None:
        mixed_waves_of(events, "count2-s2")[1]["trace_confirmed"] = False

    r = history_result(tmp_path, edit=edit)
    assert r.status is Status.PENDING
    assert r.reason == "observer trace disagrees with ordered admission in 1 wave(s)"
    assert r.evidence == {"waves": [("count2-s2", 1)]}
    assert list(r.limitations) == [NO_TRACE]


@pytest.mark.parametrize(
    "admission",
    [
        {"ordered_ok": False, "finished_early": False},
        {"ordered_ok": True, "finished_early": True},
        {"finished_early": False},
        None,
    ],
)
def test_history_without_ordered_admission_is_pending(tmp_path: Path, admission: dict[str, Any] | None) -> None:
    def edit(events: list[dict[str, Any]]) -> None:
        for w in mixed_waves_of(events)[:2]:
            w["admission"] = admission

    r = history_result(tmp_path, edit=edit)
    assert r.status is Status.PENDING
    assert r.reason == "ordered admission not observed in 2 wave(s): slot histories unknown"


def test_history_needs_the_required_starts(tmp_path: Path) -> None:
    r = history_result(tmp_path, starts=2)
    assert r.status is Status.PENDING
    assert r.reason == "2 complete start(s) at count 2, 3 needed"


def test_history_needs_every_planned_mixed_wave(tmp_path: Path) -> None:
    r = history_result(tmp_path, edit=lambda evs: drop(evs, "count2-s3", "mixed_wave", 1))
    assert r.status is Status.PENDING
    assert r.reason == "evidence incomplete at count 2: count2-s3: no mixed_wave 1 recorded"


def test_history_mismatch_fails_before_any_admission_question(tmp_path: Path) -> None:
    def edit(events: list[dict[str, Any]]) -> None:
        e = next(e for e in events if e["kind"] == "request" and e["phase"] == "mixed_wave")
        other = Events(tmp_path / "other").request(e["run"], "mixed_wave", e["wave"], "base", tts_body(7))
        e["output"], e["artifact"] = other["output"], other["artifact"]
        (tmp_path / "artifacts" / f"{e['artifact']}.json").write_bytes(
            (tmp_path / "other" / "artifacts" / f"{e['artifact']}.json").read_bytes()
        )
        mixed_waves_of(events)[0]["trace_confirmed"] = False

    r = history_result(tmp_path, edit=edit)
    assert r.status is Status.FAIL
    assert r.evidence["trace_confirmed_waves"] == 0 and r.evidence["waves"] == 6


# --- M3.variation ---------------------------------------------------------------------

LONGER = {"name": "longer", "changes": "text", "request": {"text": "hello there, a longer one", "seed": 1}}
SEED = {"name": "other_seed", "changes": "seed", "request": {"text": "hello", "seed": 99}}
VOICE = {"name": "voice", "changes": "voice_ref", "request": {"text": "hello", "seed": 1, "voice_ref": "v.wav"}}
REFS = {"base": tts_body(1), "longer": tts_body(2, 320), "other_seed": tts_body(3), "voice": tts_body(4)}
ALL_KINDS = ["length", "seed", "reference"]
Mixed = list[list[tuple[str, dict[str, Any] | None]]]


def rotation(bodies: dict[str, dict[str, Any]]) -> Mixed:
    """Mixed waves of two requests that go round the names, each reply its reference's."""
    names = list(bodies)
    return [
        [(names[(w + i) % len(names)], bodies[names[(w + i) % len(names)]]) for i in range(2)]
        for w in range(len(names))
    ]


def variation_ctx(
    tmp_path: Path,
    variations: list[dict[str, Any]],
    kinds: list[str] | None,
    *,
    refs: dict[str, dict[str, Any]] | None = None,
    mixed: Mixed | None = None,
    justify: bool = True,
    task: str = "tts",
    starts: int = 3,
    edit: Edit | None = None,
) -> JudgeContext:
    """The upstream references `refs` (cold and warm), count2-s1's mixed waves `mixed`
    (default: the references in rotation), the other starts the base request only."""
    bodies = refs if refs is not None else {k: REFS[k] for k in ["base", *(v["name"] for v in variations)]}
    ev = Events(tmp_path)
    ev.start("ref-baseline-a", role="reference")
    for name, body in bodies.items():
        ev.request("ref-baseline-a", "ref_cold", 0, name, body)
        ev.request("ref-baseline-a", "ref_warm", 0, name, body)
    ev.end("ref-baseline-a")
    ev.start("count2-s1", count=2)
    for w, wave in enumerate(mixed if mixed is not None else rotation(bodies)):
        for req, body in wave:
            ev.request("count2-s1", "mixed_wave", w, req, body, ref=f"{req}|warm")
        ev.wave("count2-s1", "mixed_wave", w, 2, order=[req for req, _ in wave])
    ev.end("count2-s1")
    p = plan(variations=variations, variation_kinds=kinds, justify=justify)
    p["model"]["task"] = task
    for k in range(2, starts + 1):
        full_start(ev, f"count2-s{k}", 2, p, body=bodies.get("base", REFS["base"]))
    if edit is not None:
        edit(ev.events)
    return ev.context(p)


def variation_result(tmp_path: Path, variations: list[dict[str, Any]], kinds: list[str] | None, **kw: Any) -> Result:
    ctx = variation_ctx(tmp_path, variations, kinds, **kw)
    return m3_variation(ctx, 2, variation_effects(ctx))


JUSTIFIED = "not varied by this synthetic plan"


def test_variation_every_supported_kind_passes_with_its_evidence(tmp_path: Path) -> None:
    r = variation_result(tmp_path, [LONGER, SEED, VOICE], ALL_KINDS)
    assert r.status is Status.PASS, r.reason
    assert r.reason == (
        "3 variation(s) covering length, seed, reference each change the effective input and the output content: "
        "longer (length: text), other_seed (seed: seed), voice (reference: voice_ref)"
    )
    assert r.evidence["rests_on"] == {"variations": 3, "mixed-wave outputs": 6}
    assert [e["variation"] for e in r.evidence["effects"]] == ["longer", "other_seed", "voice"]
    assert list(r.limitations) == []


def test_variation_justified_omission_is_shown_as_a_limitation(tmp_path: Path) -> None:
    r = variation_result(tmp_path, [LONGER, SEED], ["length", "seed"])
    assert r.status is Status.PASS, r.reason
    assert list(r.limitations) == [f"variation kinds the task supports but the plan leaves out: reference: {JUSTIFIED}"]


def test_variation_empty_kinds_without_reasons_is_pending(tmp_path: Path) -> None:
    r = variation_result(tmp_path, [SEED], [], justify=False)
    assert r.status is Status.PENDING
    assert r.reason == (
        "model.variation_kinds is empty: the plan declares no variation kind the model supports and gives no "
        "reason for length, seed, reference (model.variation_kinds_justification)"
    )
    assert list(r.limitations) == [
        "variation kinds the task supports but the plan leaves out: length: (no reason given); "
        "seed: (no reason given); reference: (no reason given)"
    ]


def test_variation_empty_kinds_for_a_task_without_known_kinds_is_pending(tmp_path: Path) -> None:
    r = variation_result(tmp_path, [SEED], [], task="music")
    assert r.status is Status.PENDING
    assert r.reason == (
        "model.variation_kinds is empty: the plan declares no variation kind the model supports "
        "(model.variation_kinds_justification)"
    )
    assert list(r.limitations) == []


def test_variation_empty_kinds_all_justified_is_not_applicable(tmp_path: Path) -> None:
    r = variation_result(tmp_path, [SEED], [])
    assert r.status is Status.NOT_APPLICABLE
    assert r.reason == (
        f"the plan says the model supports no variation kind: length: {JUSTIFIED}; seed: {JUSTIFIED}; "
        f"reference: {JUSTIFIED}"
    )


@pytest.mark.parametrize(
    ("kinds", "reason"),
    [
        (["seed", "length"], "the plan declares no request variations (supported kinds: seed, length)"),
        (None, "the plan declares no request variations"),
    ],
)
def test_variation_without_variations_is_pending(tmp_path: Path, kinds: list[str] | None, reason: str) -> None:
    r = variation_result(tmp_path, [], kinds)
    assert r.status is Status.PENDING
    assert r.reason == reason


def test_variation_ignored_by_the_candidate_fails(tmp_path: Path) -> None:
    mixed: Mixed = [[("base", REFS["base"]), ("other_seed", tts_body(1, seed=99))], [("other_seed", REFS["base"])]]
    r = variation_result(tmp_path, [SEED], ["seed"], mixed=mixed)
    assert r.status is Status.FAIL
    assert r.reason == (
        "the candidate ignores other_seed (seed): its output content at count 2 never differs from the base "
        "request's, while the upstream reference's does"
    )
    assert [e["variation"] for e in r.evidence["violation"]] == ["other_seed"]
    assert [e["variation"] for e in r.evidence["effects"]] == ["other_seed"]
    assert list(r.limitations) == [
        f"variation kinds the task supports but the plan leaves out: length: {JUSTIFIED}; reference: {JUSTIFIED}"
    ]


def test_variation_changed_once_by_the_candidate_is_not_ignored(tmp_path: Path) -> None:
    mixed: Mixed = [
        [("base", REFS["base"]), ("other_seed", REFS["base"])],
        [("other_seed", REFS["other_seed"]), ("base", REFS["base"])],
    ]
    r = variation_result(tmp_path, [SEED], ["seed"], mixed=mixed)
    assert r.status is Status.PASS, r.reason


def unreadable(outcome: str, req: str = "base", run: str | None = None) -> Edit:
    """Mixed-wave replies of `req` (in `run`, else every start) without a raw body."""

    def edit(events: list[dict[str, Any]]) -> None:
        for e in events:
            if e["kind"] == "request" and e["phase"] == "mixed_wave" and e["req"] == req and run in (None, e["run"]):
                e["artifact"] = None
                e["reply"] = {**e["reply"], "outcome": outcome}

    return edit


def test_variation_unreadable_replies_are_counted(tmp_path: Path) -> None:
    r = variation_result(tmp_path, [SEED], ["seed"], edit=unreadable("ok", run="count2-s1"))
    assert r.status is Status.PENDING
    assert r.reason == (
        "2 mixed-wave output(s) at count 2 without a readable raw reply: whether the candidate ignored a "
        "variation is not known for them"
    )


def test_variation_ignored_without_any_readable_base_output_is_not_a_fail(tmp_path: Path) -> None:
    mixed: Mixed = [
        [("base", REFS["base"]), ("other_seed", REFS["base"])],
        [("other_seed", REFS["base"]), ("base", REFS["base"])],
    ]
    r = variation_result(tmp_path, [SEED], ["seed"], mixed=mixed, edit=unreadable("ok"))
    assert r.status is Status.PENDING
    assert r.reason.startswith("10 mixed-wave output(s) at count 2 without a readable raw reply"), r.reason


def test_variation_failed_request_is_not_an_unreadable_reply(tmp_path: Path) -> None:
    r = variation_result(tmp_path, [SEED], ["seed"], edit=unreadable("http_error", run="count2-s1"))
    assert r.status is Status.PASS, r.reason


def test_variation_plan_defects_are_named(tmp_path: Path) -> None:
    same_seed = {"name": "same_seed", "changes": "seed", "request": {"text": "hello", "seed": 1}}
    refs = {"base": tts_body(1, seed=1), "other_seed": tts_body(1, seed=99), "same_seed": tts_body(5)}
    r = variation_result(tmp_path, [SEED, same_seed], ["seed"], refs=refs)
    assert r.status is Status.PENDING
    assert r.reason == (
        "plan defect: other_seed (seed), same_seed (seed) does not change the output content even on the "
        "upstream reference (choose an input the model uses)"
    )
    assert [e["variation"] for e in r.evidence["effects"]] == ["other_seed", "same_seed"]


def test_variation_length_label_without_a_length_change_is_pending(tmp_path: Path) -> None:
    refs = {"base": tts_body(1), "longer": tts_body(2), "other_seed": tts_body(3)}
    r = variation_result(tmp_path, [LONGER, SEED], ["length", "seed"], refs=refs)
    assert r.status is Status.PENDING
    assert r.reason == (
        "labelled length but the effective length did not change: longer (text); "
        "no effective variation of supported kind(s) length in the mixed waves"
    )


def test_variation_undeclared_kinds_are_pending(tmp_path: Path) -> None:
    r = variation_result(tmp_path, [LONGER], None)
    assert r.status is Status.PENDING
    assert r.reason == (
        "the plan does not declare which variation kinds the model supports "
        "(model.variation_kinds, any of length, seed, reference, preparation, content)"
    )
    assert list(r.limitations) == []


def test_variation_missing_kinds_and_reasons_are_named(tmp_path: Path) -> None:
    r = variation_result(tmp_path, [LONGER], ["length", "seed"], justify=False)
    assert r.status is Status.PENDING
    assert r.reason == (
        "no effective variation of supported kind(s) seed in the mixed waves; the task supports reference but the "
        "plan neither varies nor gives a reason (model.variation_kinds_justification)"
    )
    assert list(r.limitations) == [
        "variation kinds the task supports but the plan leaves out: reference: (no reason given)"
    ]


def test_variation_without_a_reference_output_is_unknown(tmp_path: Path) -> None:
    refs = {"base": REFS["base"], "longer": REFS["longer"]}
    mixed: Mixed = [[("base", REFS["base"]), ("other_seed", REFS["other_seed"])], [("longer", REFS["longer"])]]
    r = variation_result(tmp_path, [LONGER, SEED], ["length", "seed"], refs=refs, mixed=mixed)
    assert r.status is Status.PENDING
    assert r.reason == (
        "no effective variation of supported kind(s) seed in the mixed waves; "
        "output content unknown for ['other_seed'] (no raw reply with content fields recorded)"
    )


def test_variation_unknown_length_and_unused_variation(tmp_path: Path) -> None:
    # the length variation's reference has text only: its effective length is unknown
    refs = {"base": REFS["base"], "longer": {"text": "longer", "timing": {}}, "other_seed": REFS["other_seed"]}
    mixed: Mixed = [[("base", REFS["base"]), ("longer", REFS["longer"])]]
    r = variation_result(tmp_path, [LONGER, SEED], ["length", "seed"], refs=refs, mixed=mixed)
    assert r.status is Status.PENDING
    assert r.reason == (
        "no effective variation of supported kind(s) seed in the mixed waves; "
        "effective length unknown for ['longer']; not used in mixed waves: ['other_seed']"
    )


def test_variation_outputs_of_requests_the_plan_does_not_name(tmp_path: Path) -> None:
    mixed: Mixed = [
        [("base", REFS["base"]), ("other_seed", REFS["other_seed"])],
        [("zeta", REFS["base"]), ("alpha", REFS["base"])],
    ]
    r = variation_result(tmp_path, [SEED], ["seed"], mixed=mixed)
    assert r.status is Status.PENDING
    assert r.reason == "mixed-wave outputs of requests the plan does not name: ['alpha', 'zeta']"


def test_variation_needs_the_required_starts(tmp_path: Path) -> None:
    r = variation_result(tmp_path, [LONGER, SEED], ["length", "seed"], starts=2)
    assert r.status is Status.PENDING
    assert r.reason == "2 complete start(s) at count 2, 3 needed"
    assert list(r.limitations) == [f"variation kinds the task supports but the plan leaves out: reference: {JUSTIFIED}"]


def test_variation_needs_every_planned_mixed_wave(tmp_path: Path) -> None:
    mixed: Mixed = [[("base", REFS["base"]), ("other_seed", REFS["other_seed"])]]
    r = variation_result(tmp_path, [SEED], ["seed"], mixed=mixed)
    assert r.status is Status.PENDING
    assert r.reason == "evidence incomplete at count 2: count2-s1: no mixed_wave 1 recorded"
    assert len(r.limitations) == 1


# --- content digests ------------------------------------------------------------------


def wav(samples: np.ndarray, rate: int = 16000, fmt: str = "WAV") -> str:
    buf = io.BytesIO()
    sf.write(buf, samples, rate, format=fmt, subtype="PCM_16")
    return base64.b64encode(buf.getvalue()).decode()


PCM = (np.arange(200) * 7 % 3000).astype(np.int16)
NAMED = {"id": "vocals", "audio": wav(PCM), "meta": {"peak": 1}}
ARTIFACT = {"id": "a1", "kind": "json", "payload": {"x": 1}, "bytes": 10}


def digests(tmp_path: Path, *bodies: Any) -> list[str | None]:
    ev = Events(tmp_path)
    events = [ev.request("count2-s1", "mixed_wave", 0, "base", body) for body in bodies]
    ctx = ev.context(plan())
    return [content_digest(ctx, e) for e in events]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"text": "a b", "seed": 1}, {"text": "a b", "seed": 2, "language": "en"}),
        ({"audio": wav(PCM)}, {"audio": wav(PCM, fmt="WAVEX"), "sample_rate": 16000}),
        ({"named_audio_outputs": [NAMED]}, {"named_audio_outputs": [{**NAMED, "audio": wav(PCM, fmt="WAVEX")}]}),
        ({"named_audio_outputs": [NAMED]}, {"named_audio_outputs": [{**NAMED, "meta": {"peak": 2}}]}),
        ({"artifacts": [ARTIFACT]}, {"artifacts": [{**ARTIFACT, "bytes": 11}]}),
        # the reply's key order is no part of its content
        ({"custom_schema_output": {"a": 1, "b": 2}}, {"custom_schema_output": {"b": 2, "a": 1}}),
        ({"text": "a", "words": ["a"]}, {"words": ["a"], "text": "a"}),
    ],
)
def test_content_digest_ignores_metadata_and_audio_encoding(tmp_path: Path, first: Any, second: Any) -> None:
    a, b = digests(tmp_path, first, second)
    assert a is not None and a == b


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"text": "a b"}, {"text": "a c"}),
        ({"custom_schema_output": {"label": 1}}, {"custom_schema_output": {"label": 2}}),
        ({"segments": [1]}, {"segments": [2]}),
        ({"segments": [{"start": 0, "text": "a"}]}, {"segments": [{"start": 0, "text": "b"}]}),
        ({"speaker_turns": [1]}, {"speaker_turns": [2]}),
        ({"words": ["a"]}, {"words": ["b"]}),
        ({"text": "a"}, {"text": "a", "words": ["a"]}),
        ({"audio": wav(PCM)}, {"audio": wav(PCM[::-1].copy())}),
        ({"audio": wav(PCM)}, {"audio": wav(PCM, rate=22050)}),
        ({"audio": wav(PCM)}, {"audio": wav(PCM.reshape(100, 2))}),
        ({"named_audio_outputs": [NAMED]}, {"named_audio_outputs": [{**NAMED, "id": "drums"}]}),
        ({"named_audio_outputs": [NAMED]}, {"named_audio_outputs": [{**NAMED, "audio": wav(PCM[::-1].copy())}]}),
        ({"named_audio_outputs": ["x"]}, {"named_audio_outputs": ["y"]}),
        ({"named_audio_outputs": "x"}, {"named_audio_outputs": "y"}),
        ({"artifacts": [ARTIFACT]}, {"artifacts": [{**ARTIFACT, "payload": {"x": 2}}]}),
        ({"artifacts": [ARTIFACT]}, {"artifacts": [{**ARTIFACT, "kind": "text"}]}),
        ({"artifacts": [ARTIFACT]}, {"artifacts": [{**ARTIFACT, "id": "a2"}]}),
        ({"artifacts": ["x"]}, {"artifacts": ["y"]}),
        ({"artifacts": "x"}, {"artifacts": "y"}),
    ],
)
def test_content_digest_tells_content_apart(tmp_path: Path, first: Any, second: Any) -> None:
    a, b = digests(tmp_path, first, second)
    assert a is not None and b is not None and a != b


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"audio": "not wav"}, {"audio": "not wav either"}),
        ({"named_audio_outputs": [NAMED]}, {"named_audio_outputs": [{**NAMED, "audio": "junk"}]}),
    ],
)
def test_content_digest_of_audio_that_does_not_decode_is_of_its_text(tmp_path: Path, first: Any, second: Any) -> None:
    # such a reply is invalid when recorded; were it taken as valid, the raw strings are compared
    ev = Events(tmp_path)
    events = [ev.request("count2-s1", "mixed_wave", 0, "base", body) for body in (first, second)]
    ctx = ev.context(plan())
    a, b = (content_digest(ctx, {**e, "output": {"valid": True}}) for e in events)
    assert a is not None and b is not None and a != b


@pytest.mark.parametrize("body", [{"seed": 1, "language": "en"}, [{"text": "a"}], "text", {}])
def test_content_digest_without_content_is_none(tmp_path: Path, body: Any) -> None:
    assert digests(tmp_path, body) == [None]


def test_content_digest_of_an_unreadable_or_missing_reply_is_none(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    e = ev.request("count2-s1", "mixed_wave", 0, "base", {"text": "a"})
    ctx = ev.context(plan())
    assert content_digest(ctx, None) is None
    assert content_digest(ctx, {**e, "output": {**e["output"], "valid": False}}) is None
    assert content_digest(ctx, {**e, "output": None}) is None
    assert content_digest(ctx, {**e, "artifact": None}) is None
    no_dir = JudgeContext(ctx.rec, plan(), {}, None, "plan.yaml")
    assert content_digest(no_dir, e) is None
    assert content_digest(ctx, {**e, "artifact": "absent"}) is None
    (tmp_path / "artifacts" / "broken.json").write_bytes(b"{not json")
    assert content_digest(ctx, {**e, "artifact": "broken"}) is None
    (tmp_path / "artifacts" / "deep.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    assert content_digest(ctx, {**e, "artifact": "deep"}) is None


def test_content_digest_cache_is_read_and_filled(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    e = ev.request("count2-s1", "mixed_wave", 0, "base", {"text": "a"})
    ctx = ev.context(plan())
    cache: dict[str, str | None] = {}
    digest = content_digest(ctx, e, cache)
    assert digest is not None and cache == {e["artifact"]: digest}
    assert content_digest(ctx, e, {e["artifact"]: "cached"}) == "cached"
    assert content_digest(ctx, e, {e["artifact"]: None}) is None
    absent: dict[str, str | None] = {}
    assert content_digest(ctx, {**e, "artifact": "absent"}, absent) is None
    assert absent == {"absent": None}


# --- variation effects ----------------------------------------------------------------


def effects_of(ctx: JudgeContext) -> dict[str, dict[str, Any]]:
    return {e["variation"]: dict(e) for e in variation_effects(ctx)}


def test_variation_effect_of_a_seed_variation(tmp_path: Path) -> None:
    ctx = variation_ctx(tmp_path, [SEED], ["seed"])
    audio = ctx.rec.refs["other_seed|cold"]["output"]["audio"]
    assert effects_of(ctx) == {
        "other_seed": {
            "variation": "other_seed",
            "field": "seed",
            "kind": "seed",
            "input_changed": True,
            "output_changed": True,
            "length_changed": None,
            "reply_changed": True,
            "applied": {"text": "hello", "seed": 99},
            "audio": audio,
        }
    }


def test_variation_effect_with_an_echoed_seed_changes_the_reply_only(tmp_path: Path) -> None:
    refs = {"base": tts_body(1, seed=1), "other_seed": tts_body(1, seed=99)}
    effect = effects_of(variation_ctx(tmp_path, [SEED], ["seed"], refs=refs))["other_seed"]
    assert (effect["output_changed"], effect["reply_changed"]) == (False, True)
    same = {"base": tts_body(1), "other_seed": tts_body(1)}
    effect = effects_of(variation_ctx(tmp_path / "same", [SEED], ["seed"], refs=same))["other_seed"]
    assert (effect["output_changed"], effect["reply_changed"]) == (False, False)


def test_variation_effect_without_references_is_unknown(tmp_path: Path) -> None:
    effect = effects_of(variation_ctx(tmp_path, [LONGER], ["length"], refs={}))["longer"]
    assert effect["output_changed"] is None and effect["reply_changed"] is None
    assert effect["length_changed"] is None and effect["audio"] is None
    assert effect["input_changed"] is True


def test_variation_effect_without_the_base_reference_is_unknown(tmp_path: Path) -> None:
    ctx = variation_ctx(tmp_path, [LONGER], ["length"], refs={"longer": REFS["longer"]})
    effect = effects_of(ctx)["longer"]
    assert effect["output_changed"] is None and effect["reply_changed"] is None and effect["length_changed"] is None
    assert effect["audio"] == ctx.rec.refs["longer|cold"]["output"]["audio"]


def test_variation_effect_reads_same_history_references(tmp_path: Path) -> None:
    """A cache-sensitive model's references are the hist:<name> replays."""

    def relabel(events: list[dict[str, Any]]) -> None:
        for e in events:
            if e["kind"] == "request" and e["run"] == "ref-baseline-a":
                e["ref"] = derived_ref(e, True)

    ctx = variation_ctx(tmp_path, [LONGER], ["length"], edit=relabel)
    assert "base|cold" not in ctx.rec.refs and "hist:longer" in ctx.rec.refs
    effect = effects_of(ctx)["longer"]
    assert (effect["output_changed"], effect["length_changed"], effect["reply_changed"]) == (True, True, True)


@pytest.mark.parametrize(("frames", "changed"), [(320, True), (160, False)])
def test_variation_effect_length_from_output_frames(tmp_path: Path, frames: int, changed: bool) -> None:
    refs = {"base": tts_body(1), "longer": tts_body(2, frames)}
    effect = effects_of(variation_ctx(tmp_path, [LONGER], ["length"], refs=refs))["longer"]
    assert effect["length_changed"] is changed and effect["output_changed"] is True


def audio_effect(tmp_path: Path, base: object, varied: object, field_: str = "audio") -> Any:
    """The effect of a variation of the input audio file (an audio-input task)."""
    p = plan(variations=[{"name": "long_audio", "changes": field_, "request": {field_: varied}}])
    p["requests"]["base"] = {field_: base}
    ctx = JudgeContext(build_records([]), p, {}, tmp_path, str(tmp_path / "plan.yaml"))
    return effects_of(ctx)["long_audio"]["length_changed"]


def write_wav(path: Path, frames: int) -> str:
    sf.write(path, np.zeros(frames, dtype=np.int16), 16000, subtype="PCM_16")
    return str(path)


@pytest.mark.parametrize("field_", ["audio", "file"])
def test_variation_effect_length_from_input_audio_files(tmp_path: Path, field_: str) -> None:
    short, long_, other = (write_wav(tmp_path / f"{k}.wav", f) for k, f in (("s", 100), ("l", 300), ("o", 100)))
    assert audio_effect(tmp_path, short, long_, field_) is True
    assert audio_effect(tmp_path, short, other, field_) is False
    # relative to the plan's folder
    assert audio_effect(tmp_path, "s.wav", "l.wav", field_) is True
    assert audio_effect(tmp_path, "s.wav", "o.wav", field_) is False


def test_variation_effect_never_reads_a_data_uri_as_a_file(tmp_path: Path) -> None:
    write_wav(tmp_path / "data:x.wav", 300)
    short = write_wav(tmp_path / "s.wav", 100)
    assert audio_effect(tmp_path, short, "data:x.wav") is None


@pytest.mark.parametrize("varied", ["data:audio/wav;base64,AAAA", "missing.wav", 5, "notes.txt"])
def test_variation_effect_length_of_unreadable_input_audio_is_unknown(tmp_path: Path, varied: object) -> None:
    (tmp_path / "notes.txt").write_text("not audio")
    short = write_wav(tmp_path / "s.wav", 100)
    assert audio_effect(tmp_path, short, varied) is None
    assert audio_effect(tmp_path, varied, short) is None


def test_judge_m3_gives_every_assertion_at_the_count(tmp_path: Path) -> None:
    ctx = variation_ctx(tmp_path, [LONGER, SEED, VOICE], ALL_KINDS)
    results = judge_m3(ctx, 2, variation_effects(ctx))
    assert [(r.id, r.count) for r in results] == [
        ("M3.variation", 2),
        ("M3.reversed", 2),
        ("M3.ten_waves", 2),
        ("M3.history", 2),
    ]
    assert results[0].status is Status.PASS and results[3].status is Status.NOT_APPLICABLE


def test_variation_effect_length_of_a_malformed_audio_summary_is_unknown(tmp_path: Path) -> None:
    def malform(events: list[dict[str, Any]]) -> None:
        for e in events:
            if e["kind"] == "request" and e["run"] == "ref-baseline-a" and e["req"] == "longer":
                e["output"] = {**e["output"], "audio": ["not", "a", "summary"]}

    effect = effects_of(variation_ctx(tmp_path, [LONGER], ["length"], edit=malform))["longer"]
    assert effect["length_changed"] is None and effect["output_changed"] is True
