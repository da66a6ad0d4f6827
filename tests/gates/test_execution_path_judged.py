"""X1-X3 judged over synthetic event lists: every verdict and its exact reason, the slots
forms still untried, the counts a sharded campaign covered, and the start each is
reproducible from."""

from __future__ import annotations

from typing import Any

import pytest

from parval.gates.execution_path import (
    CAP1,
    LEGACY,
    campaign_counts,
    judge_execution_path,
    x1_legacy_path,
    x2_flagged_capacity_one,
    x3_resize_across_one,
)
from parval.gates.judge_context import JudgeContext
from parval.rundir.event_index import build_records
from parval.status import Status

PLAN: dict[str, Any] = {"counts": [1, 2], "model": {"id": "m", "cache_sensitive": False}}
FORMS: list[Any] = [1, 2, None, False, "4"]
Event = dict[str, Any]


def ctx(events: list[Event]) -> JudgeContext:
    return JudgeContext(build_records(events), PLAN, {}, None, "plan.yaml")


def start(run: str, role: str = "reference", count: int | None = 1) -> Event:
    return {"kind": "run_start", "run": run, "attempt": 1, "role": role, "count": count}


def ready(run: str, warning: bool, argv: list[str] | None = None) -> Event:
    return {"kind": "server_ready", "run": run, "attempt": 1, "warning_marker": warning, "argv": argv or []}


def end(run: str, fields: Any = None) -> Event:
    e: Event = {"kind": "run_end", "run": run, "attempt": 1}
    if fields is not None:
        e["status_fields"] = fields
    return e


# -- X1 --------------------------------------------------------------------------------------
def config(value: Any, rejected: bool = True, message_ok: bool = True) -> Event:
    return {"kind": "x1_config_probe", "value": value, "rejected": rejected, "message_ok": message_ok}


def registration(value: Any, ok: bool = True, status: int = 400, message: str = "legacy") -> Event:
    return {
        "kind": "x1_registration_probe",
        "run": LEGACY,
        "attempt": 1,
        "value": value,
        "ok": ok,
        "reply": {"status": status},
        "message": message,
    }


def x1(
    configs: list[Event] | None = None,
    regs: list[Event] | None = None,
    *,
    warning: bool = False,
    tail: list[Event] | None = None,
) -> list[Event]:
    """The legacy start with its probes; `tail` replaces its clean end (no slot fields)."""
    configs = [config(v) for v in FORMS] if configs is None else configs
    regs = [registration(v) for v in FORMS] if regs is None else regs
    closing = [end(LEGACY, {"slot_fields": False})] if tail is None else tail
    return [start(LEGACY), ready(LEGACY, warning, ["llama-server", "-m", "m.gguf"]), *configs, *regs, *closing]


def test_x1_passes_a_clean_legacy_path_naming_its_evidence() -> None:
    r = x1_legacy_path(ctx(x1()))
    assert r.status is Status.PASS
    assert (
        r.reason
        == "legacy path: no warning, every explicit slots field rejected (5 config forms, 5 registration forms)"
    )
    assert r.evidence["rests_on"] == {"startup rejections": 5, "registration rejections": 5, "legacy start": 1}
    assert [p["value"] for p in r.evidence["config_probes"]] == FORMS


@pytest.mark.parametrize(
    "events",
    [
        [start(LEGACY), config(1)],  # no readiness record of the legacy start
        [start(LEGACY), ready(LEGACY, False), end(LEGACY, {"slot_fields": False})],  # no config probes
    ],
)
def test_x1_without_the_legacy_start_or_its_probes_is_pending(events: list[Event]) -> None:
    r = x1_legacy_path(ctx(events))
    assert r.status is Status.PENDING
    assert r.reason == "unflagged candidate run or slots-config probes missing"


def test_x1_fails_every_problem_at_once_with_its_own_words() -> None:
    configs = [config(1), config(2, rejected=False), config(None, message_ok=False), config(False), config("4")]
    regs = [registration(1), registration("4", ok=False, status=200, message="accepted")]
    events = x1(configs, regs, warning=True, tail=[end(LEGACY, {"slot_fields": True})])
    r = x1_legacy_path(ctx(events))
    assert r.status is Status.FAIL
    problems = [
        "the experimental-runtime warning was printed without --parallel-jobs",
        "config slots=2 was not rejected at startup with the legacy text",
        "config slots=null was not rejected at startup with the legacy text",
        "registration slots=\"4\": got 200 'accepted'",
        "/v1/models shows slot fields on the legacy runtime",
    ]
    assert r.reason == "; ".join(problems)
    assert r.evidence["violation"] == problems


def test_x1_pending_names_each_untried_startup_form_in_order() -> None:
    r = x1_legacy_path(ctx(x1([config(2), config(True)])))
    assert r.status is Status.PENDING
    assert r.reason == (
        'startup not tried with slots forms 1, null, false, "4" (all of 1, 2, null, false, "4" are required)'
    )


def test_x1_pending_names_each_untried_registration_form() -> None:
    r = x1_legacy_path(ctx(x1(regs=[registration(1), registration(None)])))
    assert r.status is Status.PENDING
    assert r.reason == 'registration not tried with slots forms 2, false, "4"'


def test_x1_without_registration_probes_is_pending_unless_the_legacy_start_was_cut_short() -> None:
    r = x1_legacy_path(ctx(x1(regs=[])))
    assert r.status is Status.PENDING
    assert r.reason == "startup rejection verified; registration probes need server.ui_management"
    crash = {"kind": "server_crash", "run": LEGACY, "attempt": 1, "where": "registration", "exit_code": 139}
    r = x1_legacy_path(ctx(x1(regs=[], tail=[crash, end(LEGACY)])))
    assert r.status is Status.BLOCKED
    assert r.reason == (
        "registration probes not collected: ref-candidate-legacy server crashed during registration (exit status 139)"
    )
    stop = {"kind": "wave_timeout", "run": LEGACY, "attempt": 1, "phase": "x1", "wave": 0, "reason": "no reply in 60 s"}
    r = x1_legacy_path(ctx(x1(regs=[], tail=[stop, end(LEGACY)])))
    assert r.status is Status.BLOCKED
    assert r.reason == "registration probes not collected: ref-candidate-legacy stopped: no reply in 60 s"


CRASH: Event = {"kind": "server_crash", "run": LEGACY, "attempt": 1, "where": "status", "exit_code": 139}


@pytest.mark.parametrize("tail", [[CRASH], [end(LEGACY)], [end(LEGACY, {"first_slots": None})]])
def test_x1_without_the_legacy_starts_slot_fields_is_pending(tail: list[Event]) -> None:
    """Crashed before its end, or ended without recording whether /v1/models showed slot fields."""
    r = x1_legacy_path(ctx(x1(tail=tail)))
    assert r.status is Status.PENDING
    assert r.reason == "ref-candidate-legacy did not complete: /v1/models slot fields not recorded"


# -- X2 --------------------------------------------------------------------------------------
def count_start(run: str, n: int, warning: bool = True) -> list[Event]:
    return [start(run, "count", n), ready(run, warning), end(run)]


def x2(*counts: int, fields: Any = None, warning: bool = True, per_count: int = 3) -> list[Event]:
    """The flagged capacity-one start, then `per_count` flagged starts at each of `counts`."""
    events = [start(CAP1), ready(CAP1, warning), end(CAP1, {"first_slots": 1} if fields is None else fields)]
    for n in counts:
        for i in range(per_count):
            events += count_start(f"count{n}-s{i + 1}", n)
    return events


def test_x2_passes_with_capacity_one_shown_and_every_planned_flagged_start() -> None:
    r = x2_flagged_capacity_one(ctx(x2(1, 2)))
    assert r.status is Status.PASS
    assert r.reason == "flagged runs print the warning; omitted slots = capacity one on the parallel runtime"
    assert r.evidence["rests_on"] == {"capacity-one start": 1, "capacity one shown": 1, "flagged starts": 6}
    assert r.evidence["cap1_status_fields"] == {"first_slots": 1}


def test_x2_without_the_capacity_one_start_is_pending() -> None:
    r = x2_flagged_capacity_one(ctx(x2(1, 2)[3:]))
    assert r.status is Status.PENDING and r.reason == "flagged capacity-one run missing"


def test_x2_fails_a_missing_warning_and_a_wrong_capacity() -> None:
    events = x2(1, 2, fields={"first_slots": 2}, warning=False)
    events += count_start("count2-s4", 2, warning=False)
    r = x2_flagged_capacity_one(ctx(events))
    assert r.status is Status.FAIL
    assert r.evidence["violation"] == [
        "flagged capacity-one start printed no experimental-runtime warning",
        "omitted slots should mean capacity one; /v1/models slots 2",
        "count2-s4: flagged start printed no warning",
    ]
    assert r.reason == "; ".join(r.evidence["violation"])
    assert r.evidence["cap1_status_fields"] == {"first_slots": 2}


@pytest.mark.parametrize(
    ("events", "reason"),
    [
        (
            [*x2(1, 2)[:2], {**CRASH, "run": CAP1}, *x2(1, 2)[3:]],
            "ref-candidate-cap1 did not complete: its /v1/models fields were not recorded",
        ),
        (
            x2(1, 2, fields={"first_slots": None}),
            "ref-candidate-cap1: /v1/models showed no `slots`: capacity one not shown",
        ),
        (
            x2(1, 2, per_count=2),
            "flagged starts with a readiness record per count {1: 2, 2: 2}, 3 needed: the warning not shown",
        ),
    ],
)
def test_x2_pending_names_what_is_missing(events: list[Event], reason: str) -> None:
    r = x2_flagged_capacity_one(ctx(events))
    assert r.status is Status.PENDING and r.reason == reason


def test_a_sharded_campaign_needs_flagged_starts_only_at_its_own_counts() -> None:
    shard: Event = {"kind": "campaign_start", "counts": [2]}
    assert campaign_counts(ctx([shard])) == [2]
    assert x2_flagged_capacity_one(ctx([shard, *x2(2)])).status is Status.PASS
    # the counts as the campaign recorded them, in count order
    r = x2_flagged_capacity_one(ctx([{"kind": "campaign_start", "counts": [3, 1]}, *x2(per_count=0)]))
    assert r.reason == "flagged starts with a readiness record per count {1: 0, 3: 0}, 3 needed: the warning not shown"


@pytest.mark.parametrize(
    "events",
    [
        [],
        [{"kind": "campaign_start"}],  # a campaign that recorded no counts
        [{"kind": "campaign_start", "counts": []}],
        [{"kind": "campaign_start", "counts": 2}],
        [{"kind": "count_not_run", "count": 2, "reason": "r", "counts": [2]}],  # not the campaign's start
    ],
)
def test_without_the_campaigns_counts_the_plans_are_covered(events: list[Event]) -> None:
    assert campaign_counts(ctx(events)) == [1, 2]
    r = x2_flagged_capacity_one(ctx([*events, *x2(2)]))
    assert r.status is Status.PENDING
    assert r.reason == "flagged starts with a readiness record per count {1: 0}, 3 needed: the warning not shown"


# -- X3 --------------------------------------------------------------------------------------
def step(slots: int, status: int | None = 200, fields: bool = True) -> Event:
    reply = {} if status is None else {"status": status}
    return {"slots": slots, "reply": reply, "status_fields": fields}


def x3(steps: list[Event], **probe: Any) -> list[Event]:
    e = {"kind": "x3_resize_probe", "run": CAP1, "attempt": 1, "steps": steps, "ok": True, **probe}
    return [start(CAP1), e, end(CAP1)]


def test_x3_fails_each_step_that_lost_its_reply_or_status_fields() -> None:
    steps = [step(2), step(1, status=500), step(2, fields=False), step(1, status=None)]
    r = x3_resize_across_one(ctx(x3(steps)))
    assert r.status is Status.FAIL
    assert r.reason == (
        "resizing across one failed or lost the parallel lifecycle: slots=1: status 500, status fields kept; "
        "slots=2: status 200, status fields missing; slots=1: status None, status fields kept"
    )
    assert r.evidence["violation"] == steps[1:] and r.evidence["steps"] == steps


def test_x3_whose_probe_stopped_short_is_pending() -> None:
    r = x3_resize_across_one(ctx(x3([step(2), step(1)], ok=False)))
    assert r.status is Status.PENDING
    assert r.reason == "the resize probe did not complete its steps ([2, 1])"
    assert r.evidence == {"steps": [step(2), step(1)]}


def test_x3_pending_without_a_probe_or_with_too_few_outputs() -> None:
    r = x3_resize_across_one(ctx([start(CAP1), end(CAP1)]))
    assert r.status is Status.PENDING
    assert r.reason == "resize-across-one probe needs server.ui_management (registration)"
    r = x3_resize_across_one(ctx(x3([step(2), step(1)])))
    assert r.reason == "resized across one, but 0 of 2 outputs after a resize were recorded"


def test_each_execution_path_result_is_reproducible_from_the_start_it_judged() -> None:
    events = [*x1(), start(CAP1), ready(CAP1, True, ["llama-server", "--parallel-jobs"]), end(CAP1)]
    results = judge_execution_path(ctx(events))
    assert [r.id for r in results] == ["X1", "X2", "X3"]
    assert [r.reproduction for r in results] == [
        "parval run plan.yaml   # server: llama-server -m m.gguf",
        "parval run plan.yaml   # server: llama-server --parallel-jobs",
        "parval run plan.yaml   # server: llama-server --parallel-jobs",
    ]


def test_x1_and_x2_keep_their_probes_in_every_verdict() -> None:
    """What a verdict other than PASS read stays in its evidence: X1 its probes, X2 the
    capacity-one start's /v1/models fields."""
    crash = {"kind": "server_crash", "run": LEGACY, "attempt": 1, "where": "registration", "exit_code": 139}
    for events in (
        x1(warning=True),  # FAIL
        x1([config(2)]),  # startup forms untried
        x1(regs=[registration(1)]),  # registration forms untried
        x1(regs=[]),  # no registration probes
        x1(regs=[], tail=[crash, end(LEGACY)]),  # BLOCKED
        x1(tail=[end(LEGACY)]),  # no slot fields recorded
    ):
        r = x1_legacy_path(ctx(events))
        assert r.status is not Status.PASS
        probes = [e for e in events if e["kind"] == "x1_config_probe"]
        tried = [e for e in events if e["kind"] == "x1_registration_probe"]
        assert r.evidence["config_probes"] == probes and r.evidence["registration_probes"] == tried, r.reason
    for events, fields in (
        (x2(1, 2, fields={"first_slots": 2}), {"first_slots": 2}),  # FAIL
        (x2(1, 2, fields={"first_slots": None}), {"first_slots": None}),  # no slots shown
        (x2(1, 2, per_count=2), {"first_slots": 1}),  # too few flagged starts
    ):
        r = x2_flagged_capacity_one(ctx(events))
        assert r.status is not Status.PASS
        assert r.evidence["cap1_status_fields"] == fields


def test_x2_whose_capacity_one_start_recorded_no_fields_is_pending() -> None:
    events = [start(CAP1), ready(CAP1, True), end(CAP1)]
    r = x2_flagged_capacity_one(ctx(events))
    assert (r.status, r.reason) == (
        Status.PENDING,
        "ref-candidate-cap1 did not complete: its /v1/models fields were not recorded",
    )
    assert r.evidence == {"cap1_status_fields": None}
