"""The F1 judges over synthetic observations: each passes what a correct server shows and
fails exactly the misbehaviour it exists to catch."""

from __future__ import annotations

import copy
from typing import Any

from parval.framework.judges import run_judge
from parval.status import Status

from .factkit import facts, fl, manager, stagger


def queue_facts(done: list[float], *, trace: list[str] | None = None) -> dict[str, Any]:
    """One occupant, then two requests queued behind it (count 1), without an observer trace."""
    return facts(
        [fl("occupant0", 0.0, 0.15), fl("queued0", 0.02, done[0]), fl("queued1", 0.04, done[1])],
        count=1,
        occupants=["occupant0"],
        queued=["queued0", "queued1"],
        marked=trace is not None,
        trace_seeds=trace or [],
        waits=[{"what": "queued1 queued (queued_requests >= 2)", "seen": True}],
    )


def test_request_only_queue_without_a_trace_judges_rounds_not_a_tiny_stagger() -> None:
    """The old judge compared completions within half a 25 ms stagger (about 15 ms): a busy
    machine's jitter failed it. Rounds are a whole request apart."""
    assert run_judge("f1.request_only_queue", queue_facts([0.30, 0.45])).status is Status.PASS
    # 40 ms of jitter between two rounds is no barging.
    jitter = queue_facts([0.34, 0.45])
    jitter["flights"][1]["ms"] = 320.0
    assert run_judge("f1.request_only_queue", jitter).status is Status.PASS
    barged = queue_facts([0.45, 0.30])
    v = run_judge("f1.request_only_queue", barged)
    assert v.status is Status.FAIL and "queued1 finished 150 ms before the earlier-enqueued queued0" in v.detail()


def test_request_only_queue_reads_the_observer_trace_when_there_is_one() -> None:
    assert run_judge("f1.request_only_queue", queue_facts([0.3, 0.45], trace=["7100", "7101"])).status is Status.PASS
    v = run_judge("f1.request_only_queue", queue_facts([0.3, 0.45], trace=["7101", "7100"]))
    assert v.status is Status.FAIL and "enqueue order" in v.detail()
    # At count 2 the two requests of one round are admitted together: either trace order.
    f = queue_facts([0.3, 0.45], trace=["7101", "7100", "7103", "7102"])
    f["count"] = 2
    f["flights"] += [fl("queued2", 0.05, 0.6), fl("queued3", 0.06, 0.61)]
    f["queued"] += ["queued2", "queued3"]
    assert run_judge("f1.request_only_queue", f).status is Status.PASS
    f["trace_seeds"] = ["7100", "7102", "7101", "7103"]
    assert run_judge("f1.request_only_queue", f).status is Status.FAIL


def test_request_only_queue_reads_only_its_own_seeds_from_the_trace() -> None:
    # Trace lines of other traffic (another seed family, a longer seed) are not this
    # queue's: they neither hide its barging nor make the trace unreadable.
    for foreign in ("7200", "71000"):
        v = run_judge("f1.request_only_queue", queue_facts([0.3, 0.45], trace=["7101", foreign, "7100"]))
        assert v.status is Status.FAIL and "observer trace shows admission in enqueue order" in v.detail(), foreign


def test_request_only_queue_with_an_incomplete_trace_judges_the_completions() -> None:
    # The observer missed a line: the trace shows no full order, the completions do.
    assert run_judge("f1.request_only_queue", queue_facts([0.3, 0.45], trace=["7100"])).status is Status.PASS
    v = run_judge("f1.request_only_queue", queue_facts([0.45, 0.30], trace=["7100"]))
    assert v.status is Status.FAIL and "queued1 finished 150 ms before the earlier-enqueued queued0" in v.detail()


def test_request_only_queue_not_seen_formed_is_not_forced_never_an_order_fail() -> None:
    """A queue never seen formed (queued_requests never reached 2) once still judged the
    completion order: queued1 finishing 150 ms ahead FAILed, and over attempts that FAIL
    stood. Requests that never waited were admitted as they arrived: no order to judge."""
    for trace in (None, ["7101", "7100"]):
        f = queue_facts([0.45, 0.30], trace=trace)
        f["waits"][0]["seen"] = False
        v = run_judge("f1.request_only_queue", f)
        assert v.status is Status.BLOCKED and v.retry, v.detail()
        assert "never observed queued1 queued" in v.detail()
    unforced = queue_facts([0.45, 0.30])
    unforced["waits"][0]["seen"] = False
    v = run_judge("f1.request_only_queue", {"attempts": [unforced, queue_facts([0.30, 0.45])]})
    assert v.status is Status.PASS and "attempt 2 of 2" in v.detail(), v.detail()


def forced(
    later_done: tuple[float, float] = (0.75, 0.90), older_done: float = 0.45, unload_done: float = 0.60
) -> dict[str, Any]:
    """One occupant, an older queued request, an unload, two later requests (count 1)."""
    return facts(
        [
            fl("occupant0", 0.0, 0.30),
            fl("older", 0.05, older_done),
            manager("unload", 0.10, unload_done),
            fl("later0", 0.2, later_done[0]),
            fl("later1", 0.25, later_done[1]),
        ],
        count=1,
        occupants=["occupant0"],
        later=["later0", "later1"],
        staggers=[stagger("the unload", "unload", behind=("occupant0", "older"))],
        waits=[{"what": "1 active slot(s) for m", "seen": True}],
    )


def test_forced_order_passes_the_fifo_timeline() -> None:
    v = run_judge("f1.forced_order", forced())
    assert v.status is Status.PASS, v.detail()


def test_forced_order_fails_a_later_request_that_barged_past_the_unload() -> None:
    v = run_judge("f1.forced_order", forced(later_done=(0.40, 0.90)))
    assert v.status is Status.FAIL
    assert "barged: later0" in v.detail()


def test_forced_order_fails_an_unload_that_did_not_wait() -> None:
    f = forced(unload_done=0.12)
    f["staggers"][0]["still_waiting"] = False
    v = run_judge("f1.forced_order", f)
    assert v.status is Status.FAIL and "before the older work it had to wait for finished" in v.detail()


def test_a_manager_finished_after_older_work_that_ended_early_is_not_forced_not_a_fail() -> None:
    """On a slow client the stagger sleep can outlast the older work: the unload then
    rightly finished before the probe looked (the old judge failed it for being done)."""
    f = forced()
    f["staggers"][0]["still_waiting"] = False  # it answered at 0.60, after the older work (0.45)
    v = run_judge("f1.forced_order", f)
    assert v.status is Status.BLOCKED and v.retry and "could be seen waiting" in v.detail()


def test_forced_order_tolerates_a_busy_machine_seeing_replies_late() -> None:
    # The unload's own reply read 70 ms late; the quickest request measured here took 300 ms.
    f = forced(older_done=0.69, unload_done=0.60, later_done=(0.75, 0.90))
    f["flights"][0]["t_done"], f["flights"][0]["ms"] = 0.30, 300.0
    assert run_judge("f1.forced_order", f).status is Status.PASS


def test_forced_order_is_blocked_by_an_unseen_wait_or_a_stalled_registry() -> None:
    f = forced()
    f["waits"].append({"what": "later0 queued (queued_requests >= 2)", "seen": False})
    v = run_judge("f1.forced_order", f)
    assert v.status is Status.BLOCKED and "never observed later0 queued" in v.detail()
    f = forced()
    f["staggers"][0].update(canaries=[{"t_send": 0.3, "t_done": 0.598, "status": 200}], manager_t_done=0.6)
    v = run_judge("f1.forced_order", f)
    assert v.status is Status.BLOCKED and "judged by F5.no_convoy" in v.detail()


def test_a_manager_finished_early_with_a_wait_unseen_is_not_forced_not_a_fail() -> None:
    """With the occupant never seen active, the older work was not shown queued ahead of
    the unload: the unload answering first is no skipped wait (it once FAILed beside the
    BLOCKED of the unseen wait, and FAIL outranked it)."""
    f = forced(unload_done=0.12)
    f["staggers"][0]["still_waiting"] = False
    f["waits"][0]["seen"] = False
    v = run_judge("f1.forced_order", f)
    assert v.status is Status.BLOCKED and v.retry, v.detail()


def test_forced_order_fails_an_output_that_differs_from_its_reference() -> None:
    f = forced()
    f["flights"][3]["output"] = "other"
    v = run_judge("f1.forced_order", f)
    assert v.status is Status.FAIL and "differ: later0" in v.detail()


def first_wave_facts() -> dict[str, Any]:
    return facts(
        [fl("first0", 0.0, 0.4), fl("first1", 0.0, 0.55)],
        count=1,
        traced=False,
        samples=[
            [0.01, 0, 0, False, None, 1],
            [0.05, 1, 1, False, None, 1],
            [0.3, 1, 1, True, 1, 1],
            [0.6, 0, 0, True, 1, 1],
        ],
    )


def test_first_wave_fails_a_second_published_capacity() -> None:
    ok = first_wave_facts()
    assert run_judge("f1.first_wave", ok).status is Status.PASS
    bad = copy.deepcopy(ok)
    bad["samples"].insert(3, [0.35, 1, 0, True, 2, 1])
    v = run_judge("f1.first_wave", bad)
    assert v.status is Status.FAIL and "max_parallel_slots appeared once" in v.detail()


def test_first_wave_without_status_samples_or_with_serial_requests_is_no_pass() -> None:
    """F2.first_publish once passed with no status sample and strictly serial requests,
    and that PASS granted count coverage to model records."""
    empty = first_wave_facts()
    empty["samples"] = []
    assert run_judge("f1.first_wave", empty).status is Status.PENDING
    serial = facts(
        [fl("first0", 0.0, 0.2), fl("first1", 0.2, 0.4), fl("first2", 0.4, 0.6)],
        count=2,
        traced=False,
        samples=[[0.01, 1, 0, True, 2, 2], [0.25, 1, 0, True, 2, 2], [0.7, 0, 0, True, 2, 2]],
    )
    v = run_judge("f1.first_wave", serial)
    assert v.status is Status.BLOCKED and v.retry
    assert "never seen in progress" in v.detail() and "2 slot(s) of the pool active at once (max 1)" in v.detail()
    # Such an observation grants no count to a model record.
    from parval.framework.checks import Check
    from parval.framework.record import covered_counts

    check = Check("F2.first_publish", "first_publish@2", v.status, v.detail())
    order = Check("F1.fifo", "forced_order@2", Status.PASS, "ok")
    assert covered_counts([check, order]) == []


def test_a_first_wave_missing_one_of_its_requests_is_no_pass() -> None:
    f = first_wave_facts()
    f["flights"] = f["flights"][:1]
    v = run_judge("f1.first_wave", f)
    assert v.status is Status.PENDING and "first1" in v.detail()


def test_attempts_a_violation_stands_a_forced_pass_counts_and_otherwise_blocked() -> None:
    unforced = copy.deepcopy(first_wave_facts())
    unforced["samples"] = [[0.5, 1, 0, True, 1, 1]]
    bad = copy.deepcopy(first_wave_facts())
    bad["samples"].insert(3, [0.35, 1, 0, True, 2, 1])
    assert run_judge("f1.first_wave", {"attempts": [unforced, first_wave_facts()]}).status is Status.PASS
    assert run_judge("f1.first_wave", {"attempts": [bad, first_wave_facts()]}).status is Status.FAIL
    v = run_judge("f1.first_wave", {"attempts": [unforced, unforced, unforced]})
    assert v.status is Status.BLOCKED and "after 3 attempt(s)" in v.detail()


def overdue(status: int, message: str, done: float, occupant_done: float = 0.5) -> dict[str, Any]:
    return facts(
        [
            fl("occupant0", 0.0, occupant_done),
            manager("unload0", 0.2, 0.6),
            fl("probe", 0.3, done, status=status, message=message),
        ],
        count=1,
        occupied=1,
        managers=1,
        probe_ms=20,
        occupants=["occupant0"],
        manager_labels=["unload0"],
        waits=[{"what": "1 active slot(s) for m", "seen": True}],
        staggers=[stagger("unload0", "unload0", behind=("occupant0",))],
    )


def test_overdue_case_fails_a_probe_that_waited_instead_of_failing_fast() -> None:
    ok = overdue(503, "all active slots exceeded busy_timeout_ms", 0.302)
    assert run_judge("f1.overdue_case", ok).status is Status.PASS
    late = overdue(503, "timed out waiting for a slot", 0.33)
    v = run_judge("f1.overdue_case", late)
    assert v.status is Status.FAIL and "all active slots exceeded" in v.detail()


def test_overdue_case_judges_the_text_not_how_fast_it_came_on_a_busy_machine() -> None:
    # The fail-fast text, delivered 180 ms after a 20 ms bound: a busy machine, not a wait.
    slow = overdue(503, "all active slots exceeded busy_timeout_ms", 0.48, occupant_done=0.9)
    assert run_judge("f1.overdue_case", slow).status is Status.PASS
    # The occupant finished before the probe's answer: not every slot was overdue throughout.
    freed = overdue(503, "timed out waiting for a slot", 0.55, occupant_done=0.52)
    v = run_judge("f1.overdue_case", freed)
    assert v.status is Status.BLOCKED and v.retry and "not every slot was overdue throughout" in v.detail()


def test_the_load_is_seen_in_progress_only_with_a_request_admitted_before_publication() -> None:
    from parval.framework.facts import Sample
    from parval.framework.judges_f2 import load_seen_in_progress

    def rows(*raw: list[Any]) -> list[Sample]:
        return [Sample(*r) for r in raw]

    assert load_seen_in_progress(rows([0.1, 1, 0, False, None, 1]))
    assert not load_seen_in_progress([])
    assert not load_seen_in_progress(rows([0.1, 0, 1, False, None, 1]))  # queued, none admitted
    assert not load_seen_in_progress(rows([0.1, None, None, False, None, 1]))  # no active counter
    assert not load_seen_in_progress(rows([0.1, 1, 0, None, None, 1]))  # no loaded field
    # Once published, a later sample showing loaded false is another load, not this one.
    assert not load_seen_in_progress(rows([0.1, 1, 0, True, 1, 1], [0.2, 1, 0, False, None, 1]))


def test_first_wave_fails_each_violation_of_one_pool_published_once() -> None:
    ok = first_wave_facts()
    # Several samples before publication are one appearance of the capacity.
    ok["samples"][:0] = [[0.0, 0, 0, False, None, 1], [0.005, 0, 0, False, None, 1]]
    assert run_judge("f1.first_wave", ok).status is Status.PASS

    def fails(f: dict[str, Any], text: str) -> None:
        v = run_judge("f1.first_wave", f)
        assert v.status is Status.FAIL and text in v.detail(), v.detail()

    twice = copy.deepcopy(ok)  # the capacity vanished and came back: published twice
    twice["samples"].insert(-1, [0.4, 1, 0, True, None, 1])
    twice["samples"].insert(-1, [0.45, 1, 0, True, 1, 1])
    fails(twice, "max_parallel_slots appeared once with one value (seen [1], 2 appearance(s))")
    reloaded = copy.deepcopy(ok)  # loaded true -> false -> true within one first wave
    reloaded["samples"].insert(-1, [0.4, 1, 0, False, 1, 1])
    fails(reloaded, "loaded went false -> true once (3 change(s))")
    over = copy.deepcopy(ok)
    over["samples"].insert(-1, [0.4, 2, 0, True, 1, 1])
    fails(over, "never more than 1 active slot(s) (max 2)")
    slots = copy.deepcopy(ok)
    slots["samples"][-1][5] = 2
    fails(slots, "/v1/models reports slots=1 (saw ['1', '2'])")
    one = {**copy.deepcopy(ok), "traced": True, "sessions": ["s0"]}
    assert run_judge("f1.first_wave", one).status is Status.PASS
    fails({**one, "sessions": ["s0", "s1"]}, "2 distinct session(s) served 1 slot(s)")


def test_cap1_pool_needs_a_published_capacity_of_at_least_one() -> None:
    ok = first_wave_facts()
    assert run_judge("f1.cap1_pool", ok).status is Status.PASS
    zero = copy.deepcopy(ok)
    for row in zero["samples"]:
        row[4] = 0 if row[4] is not None else None
    v = run_judge("f1.cap1_pool", zero)
    assert v.status is Status.FAIL and "a capacity was published (max_parallel_slots=0)" in v.detail()


def test_cap1_pool_fails_a_pool_that_never_published_a_capacity() -> None:
    # A first wave seen whole without any max_parallel_slots is the violation, not missing evidence.
    f = first_wave_facts()
    for row in f["samples"]:
        row[4] = None
    v = run_judge("f1.cap1_pool", f)
    assert v.status is Status.FAIL and v.problems == ["a capacity was published (max_parallel_slots=None)"], v.detail()


def plus_overdue(status: int, message: str, done: float, *, healthy_done: float = 0.27, **extra: Any) -> dict[str, Any]:
    """Count 2: one overdue slot (0.0 -> 0.30), one fresh (0.12 -> healthy_done), a 50 ms
    probe sent at 0.15."""
    return facts(
        [
            fl("overdue0", 0.0, 0.30),
            fl("healthy0", 0.12, healthy_done),
            fl("probe", 0.15, done, status=status, message=message, output=None),
        ],
        count=2,
        probe_ms=extra.pop("probe_ms", 50),
        overdue=["overdue0"],
        healthy=["healthy0"],
        waits=[{"what": "the full pool (2 active) while the overdue slot was held", "seen": True}],
        **extra,
    )


WAITED = "model 'm': timed out waiting for a slot"
FAST = "model 'm': all active slots exceeded busy_timeout_ms"


def test_healthy_plus_overdue_passes_a_probe_that_waited_its_bound_or_was_served() -> None:
    v = run_judge("f1.healthy_plus_overdue", plus_overdue(503, WAITED, 0.205))
    assert v.status is Status.PASS and "it waited 55 ms of its 50 ms bound" in v.detail(), v.detail()
    assert run_judge("f1.healthy_plus_overdue", plus_overdue(200, "", 0.28)).status is Status.PASS


def test_healthy_plus_overdue_fails_a_fail_fast_rejection_or_a_waiter_that_gave_up_early() -> None:
    def fails(f: dict[str, Any], text: str) -> None:
        v = run_judge("f1.healthy_plus_overdue", f)
        assert v.status is Status.FAIL and text in v.detail(), v.detail()

    fails(plus_overdue(503, FAST, 0.16), "fail-fast rejection while a fresh slot was younger than its 50 ms bound")
    fails(plus_overdue(503, WAITED, 0.18), "it waited 30 ms of its 50 ms bound")
    fails(
        plus_overdue(500, "boom", 0.205), "probe waited: served or 503 'timed out waiting for a slot' (got 500: boom)"
    )
    fails(plus_overdue(503, WAITED, 0.205, settled=False), "everything completed within bound")
    fails(plus_overdue(503, WAITED, 0.205, drained=False), "counters drained afterwards")


def test_healthy_plus_overdue_is_not_forced_when_the_pool_was_not_full_when_the_probe_came() -> None:
    def blocked(f: dict[str, Any], text: str) -> None:
        v = run_judge("f1.healthy_plus_overdue", f)
        assert v.status is Status.BLOCKED and v.retry and text in v.detail(), v.detail()

    # The fresh slot freed before the probe could meet a full pool: even a wrong reply is no FAIL.
    blocked(plus_overdue(500, "boom", 0.205, healthy_done=0.18), "a slot freed before the probe arrived")
    # A fail-fast rejection once every slot was older than the bound is what the server should do.
    blocked(plus_overdue(503, FAST, 0.205, probe_ms=20), "the fresh slots were older than the probe's bound")
    unseen = plus_overdue(500, "boom", 0.205)
    unseen["waits"] = [{"what": "the full pool", "seen": False}]
    blocked(unseen, "never observed the full pool")


def test_forced_order_fails_an_unload_that_did_not_list_the_model_or_older_work_it_overtook() -> None:
    f = forced()
    f["flights"][2] = manager("unload", 0.10, 0.60, unloaded=["other"])
    v = run_judge("f1.forced_order", f)
    assert v.status is Status.FAIL and v.problems == ["the unload answered 200 listing the model"], v.detail()
    v = run_judge("f1.forced_order", forced(older_done=0.80, later_done=(0.95, 1.0)))
    assert v.status is Status.FAIL
    assert "the work queued before the unload finished before it (after it: older, 200 ms)" in v.detail()


def test_overdue_case_a_probe_served_ahead_of_the_waiting_manager_is_barging_not_an_overdue_fail() -> None:
    v = run_judge("f1.overdue_case", overdue(200, "", 0.35))
    assert v.status is Status.BLOCKED and "FIFO barging; judged by F1.fifo" in v.detail(), v.detail()


def test_first_wave_fails_a_model_unloaded_again_within_its_first_wave() -> None:
    f = first_wave_facts()
    f["samples"][-1][3] = False  # loaded false -> true -> false
    v = run_judge("f1.first_wave", f)
    assert v.status is Status.FAIL and "loaded went false -> true once (2 change(s))" in v.detail()


def test_healthy_plus_overdue_fails_a_503_with_another_text() -> None:
    v = run_judge("f1.healthy_plus_overdue", plus_overdue(503, "server busy", 0.205))
    assert v.status is Status.FAIL and "(got 503: server busy)" in v.detail(), v.detail()
