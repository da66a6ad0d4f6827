"""The F5 judges over synthetic observations: each passes what a correct server shows and
fails exactly the misbehaviour it exists to catch."""

from __future__ import annotations

import copy
from typing import Any

from parval.framework.judges import run_judge
from parval.status import Status

from .factkit import OUT_B, fl, joint_row, manager, two_model_facts

BUSY = "max_loaded_models=1: every loaded model is busy"


def run_b(label: str, t_send: float, t_done: float | None, **kw: Any) -> dict[str, Any]:
    return fl(label, t_send, t_done, model="m-b", output=OUT_B, **kw)


# -- together ---------------------------------------------------------------------------------


def together(limit: int, b_status: int = 200, *, both_active: bool = True, both_loaded: bool = False) -> dict[str, Any]:
    b_kw: dict[str, Any] = {} if b_status == 200 else {"status": b_status, "message": BUSY}
    flights = [fl("m-0", 0.0, 0.45), run_b("m-b-0", 0.0, 0.50, **b_kw)]
    rows = [
        joint_row(0.01, m=[1, 0, False], m_b=[1 if both_active else 0, 0, False]),
        joint_row(0.30, m=[1, 0, True], m_b=[1 if both_active else 0, 0, both_loaded]),
        joint_row(0.60, m=[0, 0, True], m_b=[0, 0, both_loaded]),
    ]
    return two_model_facts(flights, limit=limit, count=1, joint=rows)


def test_together_passes_two_models_served_side_by_side() -> None:
    v = run_judge("f5.together", together(2, both_loaded=True))
    assert v.status is Status.PASS, v.detail()


def test_together_never_seen_side_by_side_is_not_forced_not_a_fail() -> None:
    v = run_judge("f5.together", together(2, both_active=False, both_loaded=True))
    assert v.status is Status.BLOCKED and v.retry and "both models holding slots at once" in v.detail()


def test_together_at_limit_one_without_joint_samples_is_no_pass() -> None:
    """'never two models loaded' once passed with zero joint samples."""
    f = together(1, 503, both_active=False)
    f["joint"] = []
    assert run_judge("f5.together", f).status is Status.PENDING
    f["joint"] = [joint_row(0.01, m=[0, 0, False], m_b=[0, 0, False])]
    v = run_judge("f5.together", f)
    assert v.status is Status.BLOCKED and "residency was not observed" in v.detail()


def test_together_fails_a_model_serving_the_other_models_output() -> None:
    f = together(2)
    f["flights"][1]["output"] = "out-base"  # B answered with A's session
    v = run_judge("f5.together", f)
    assert v.status is Status.FAIL and "differ: m-b-0" in v.detail()


def test_together_under_limit_one_accepts_the_busy_refusal() -> None:
    v = run_judge("f5.together", together(1, 503, both_active=False))
    assert v.status is Status.PASS, v.detail()


def test_together_under_limit_one_fails_two_loaded_models_or_another_error() -> None:
    v = run_judge("f5.together", together(1, both_loaded=True))
    assert v.status is Status.FAIL and "never two models loaded" in v.detail()
    f = together(1, 500, both_active=False)
    f["flights"][1]["message"] = "internal error"
    v = run_judge("f5.together", f)
    assert v.status is Status.FAIL and "m-b-0=500" in v.detail()


# -- warm_during_cold ---------------------------------------------------------------------------


FORCING = {
    "cold": "m",
    "warm": "m-b",
    "request": "base",
    "tag": "opt2",
    "measured_ms": {},
    "evict": None,
    "teardown_ms": None,
    "status_poll_ms": 5.0,
}


def warm_cold(
    warm_done: float = 0.26, *, seen: bool = True, published: float | None = 0.38, attempt: int = 0
) -> dict[str, Any]:
    """A's cold load runs 0.0 -> 0.38 (published), its request ends at 0.40; B's warm
    requests take 150 ms before and after; the probe's warm request is sent at 0.10."""
    flights = [
        fl("cold", 0.0, 0.40),
        run_b("warm", 0.10, warm_done),
        run_b("warm-before", -0.3, -0.15),
        run_b("warm-after", 0.5, 0.65),
    ]
    return two_model_facts(
        flights, cold_load_seen=seen, published_at=published, attempt=attempt, forcing=copy.deepcopy(FORCING)
    )


def warm_cold_ab(warm_done: float = 0.26, *, published: float | None = 0.38) -> dict[str, Any]:
    """The same as recorded before attempts varied their forcing: no `forcing`, A and B in
    the labels."""
    f = warm_cold(warm_done, published=published)
    del f["forcing"], f["attempt"]
    for x in f["flights"]:
        x["label"] = {"cold": "cold-a", "warm": "warm-b"}.get(x["label"], x["label"].replace("warm-", "warm-b-"))
    return f


def test_warm_during_cold_passes_a_warm_model_answering_at_once() -> None:
    v = run_judge("f5.warm_during_cold", warm_cold())
    assert v.status is Status.PASS, v.detail()


def test_warm_during_cold_held_up_or_slow_cannot_be_told_apart_so_it_is_not_forced() -> None:
    """Under a load average of 14 a correct server's warm request once came back 316 ms after
    the other model's publication and FAILed: over HTTP held-up and slow look the same."""
    v = run_judge("f5.warm_during_cold", warm_cold(0.55))
    assert v.status is Status.BLOCKED and v.retry and "HTTP cannot tell apart" in v.detail()


def test_warm_during_cold_has_no_threshold_from_an_idle_calibration() -> None:
    """The old judge required service + load/2 from one idle calibration (150 + 100 ms): on a
    busy machine B's warm request takes longer and failed it. Now B's own warm requests,
    measured around the probe under the same load, set the scale."""
    busy = warm_cold(0.37)  # 270 ms, but before A's publication
    assert run_judge("f5.warm_during_cold", busy).status is Status.PASS
    # A's load ending within one warm request of B's send cannot show waiting either way.
    short = warm_cold(0.30, published=0.20)
    v = run_judge("f5.warm_during_cold", short)
    assert v.status is Status.BLOCKED and v.retry


def test_a_load_shorter_than_a_request_is_decided_from_the_warm_time_measured() -> None:
    """A correct server's record came out BLOCKED in 4 of 5 runs: A's load ended 279 ms after
    B's warm request was sent, within one warm request (302 ms). Waiting for the rest of
    the load would add it to B's own warm time; B answering sooner than that shows it did
    not wait, from what the run measured (the last read still showing A unloaded)."""
    # B sent at 0.10, A still unloaded at a read sent at 0.18, published 0.20; B takes 150 ms
    # around the probe. Waiting would take >= 0.08 + 0.75 * 0.15 = 0.1925 s: it took 0.20.
    slow = warm_cold(0.30, published=0.20) | {"unpublished_until": 0.18}
    assert run_judge("f5.warm_during_cold", slow).status is Status.BLOCKED
    quick = warm_cold(0.27, published=0.20) | {"unpublished_until": 0.18}
    v = run_judge("f5.warm_during_cold", quick)
    assert v.status is Status.PASS and "it did not wait for the load" in v.detail(), v.detail()
    # A server that held B until the publication, then served it: never a PASS.
    held = warm_cold(0.20 + 0.15, published=0.20) | {"unpublished_until": 0.18}
    assert run_judge("f5.warm_during_cold", held).status is Status.BLOCKED
    # A record made before the last unloaded read was kept: judged as before.
    assert run_judge("f5.warm_during_cold", warm_cold(0.27, published=0.20)).status is Status.BLOCKED


def test_warm_during_cold_recorded_before_forcing_varied_is_judged_as_before() -> None:
    assert run_judge("f5.warm_during_cold", warm_cold_ab()).status is Status.PASS
    v = run_judge("f5.warm_during_cold", warm_cold_ab(0.55))
    assert v.status is Status.BLOCKED and "170 ms after the cold load was published" in v.detail(), v.detail()


def forced(i: int, warm_done: float, **forcing: Any) -> dict[str, Any]:
    """Attempt i of warm_during_cold, forced its own way (`forcing` over FORCING)."""
    f = warm_cold(warm_done, attempt=i)
    f["forcing"].update(forcing)
    return f


# A warm request sent 100 ms into a load that ended 100 ms later, within one 150 ms request.
SHORT = {"published": 0.20}
EVICT = {"evict": "m-m", "teardown_ms": 150.0, "status_poll_ms": 2.0}


def tries(*attempts: dict[str, Any]) -> dict[str, Any]:
    return {"attempts": list(attempts)}


def test_warm_during_cold_blocked_names_every_try_and_how_each_was_forced() -> None:
    """A quick load came out BLOCKED after three identical tries; the tries now differ, and
    the BLOCKED names each one's forcing and why it did not force the situation."""
    fs = [warm_cold(0.30, attempt=i, **SHORT) for i in range(3)]
    fs[1]["forcing"].update(EVICT, request="short", tag="opt2+short")
    fs[1]["refs"]["m-b|opt2+short"] = {"warm": ["out-b"]}
    fs[2]["forcing"].update(EVICT, cold="m-b", warm="m", request="short", tag="base+short")
    fs[2]["flights"][0]["model"] = "m-b"
    for x in fs[2]["flights"][1:]:
        x["model"], x["output"] = "m", "out-base"
    fs[2]["refs"]["m|base+short"] = {"warm": ["out-base"]}
    v = run_judge("f5.warm_during_cold", tries(*fs))
    assert v.status is Status.BLOCKED and v.retry, v.detail()
    text = v.detail()
    assert "try 1 (m cold, m-b's base request, status read every 5.0 ms)" in text, text
    assert "try 2 (m cold, m-b's short request, the load first evicting m-m, status read every 2.0 ms)" in text
    assert "try 3 (m-b cold, m's short request, the load first evicting m-m" in text
    assert text.count("within one warm request") == 3


def test_warm_during_cold_passes_on_the_try_that_forced_it_naming_the_earlier_ones() -> None:
    second = forced(1, 0.26, **EVICT)
    v = run_judge("f5.warm_during_cold", tries(warm_cold(0.30, **SHORT), second))
    assert v.status is Status.PASS, v.detail()
    assert "attempt 2 of 2: the warm model answered in 160 ms during the cold load" in v.detail()
    assert "earlier attempt(s) not forced: try 1 (m cold, m-b's base request" in v.detail()


def test_warm_during_cold_a_violation_in_any_try_stands() -> None:
    bad = forced(1, 0.26, **EVICT)
    bad["flights"][1]["output"] = "out-base"  # the warm model answered with the cold one's session
    v = run_judge("f5.warm_during_cold", tries(warm_cold(0.30, **SHORT), bad))
    assert v.status is Status.FAIL and "attempt 2 of 2" in v.detail() and "differ: warm" in v.detail()


def test_warm_during_cold_an_attempt_stripped_of_its_evidence_never_leaves_a_pass() -> None:
    """An attempt taken out, its forcing or its requests removed, or its forcing naming
    other models than its requests went to: never a PASS (it could hide a violation)."""
    first, second = warm_cold(0.30, **SHORT), forced(1, 0.26, **EVICT)
    assert run_judge("f5.warm_during_cold", tries(first, second)).status is Status.PASS
    # the attempt that was not forced taken out: the numbering shows the gap
    assert run_judge("f5.warm_during_cold", tries(second, second)).status is Status.PENDING
    v = run_judge("f5.warm_during_cold", tries(second))  # the second try kept alone
    assert v.status is Status.PENDING and "numbered [1]" in v.detail(), v.detail()
    for strip in ("forcing", "flights", "cold_load_seen", "published_at"):
        for which in (0, 1):
            pair = [copy.deepcopy(first), copy.deepcopy(second)]
            del pair[which][strip]
            v = run_judge("f5.warm_during_cold", tries(*pair))
            assert v.status is not Status.PASS, (strip, which, v.detail())
    lying = copy.deepcopy(second)
    lying["forcing"]["warm"] = "m-m"
    assert run_judge("f5.warm_during_cold", tries(first, lying)).status is Status.PENDING
    # a first try that passed yet was followed by another: not what the probe does
    v = run_judge("f5.warm_during_cold", tries(warm_cold(attempt=0), second))
    assert v.status is Status.PENDING and "yet the probe tried again" in v.detail(), v.detail()


def test_warm_during_cold_is_not_forced_when_the_cold_load_was_not_seen() -> None:
    v = run_judge("f5.warm_during_cold", warm_cold(seen=False))
    assert v.status is Status.BLOCKED and v.retry and "cold load finished before" in v.detail()
    # Not forced outranks any timing.
    assert run_judge("f5.warm_during_cold", warm_cold(0.55, seen=False)).status is Status.BLOCKED


# -- unload_together ----------------------------------------------------------------------------


def unload_both(bulk_done: float = 0.50, ids: list[str] | None = None) -> dict[str, Any]:
    flights = [
        fl("m-run0", 0.0, 0.30),
        run_b("m-b-run0", 0.0, 0.32),
        manager("unload-both", 0.05, bulk_done, unloaded=["m", "m-b"] if ids is None else ids),
    ]
    return two_model_facts(
        flights,
        count=1,
        running=["m-run0", "m-b-run0"],
        ended_unloaded=True,
        waits=[{"what": "both models' requests admitted", "seen": True}],
    )


def test_unload_together_passes_an_unload_behind_both_models_work() -> None:
    v = run_judge("f5.unload_together", unload_both())
    assert v.status is Status.PASS, v.detail()


def test_unload_together_fails_an_unload_that_did_not_wait_or_lists_twice() -> None:
    v = run_judge("f5.unload_together", unload_both(bulk_done=0.10))
    assert v.status is Status.FAIL and "waited for both models' work" in v.detail()
    v = run_judge("f5.unload_together", unload_both(ids=["m", "m-b", "m"]))
    assert v.status is Status.FAIL and "both listed once" in v.detail()


def test_unload_together_is_blocked_when_the_admission_was_not_seen() -> None:
    f = unload_both()
    f["waits"][0]["seen"] = False
    v = run_judge("f5.unload_together", f)
    assert v.status is Status.BLOCKED and "never observed both models' requests admitted" in v.detail()
    # The unload's timing is not judged then: an early answer is not a FAIL.
    f = unload_both(bulk_done=0.10)
    f["waits"][0]["seen"] = False
    assert run_judge("f5.unload_together", f).status is Status.BLOCKED


# -- alternate ------------------------------------------------------------------------------------


def alternating(*, evicted: bool = True, both_loaded: bool = False) -> dict[str, Any]:
    flights = [fl("alt0-m", 0.0, 0.4), run_b("alt1-m-b", 0.4, 0.9), fl("alt2-m", 0.9, 1.4)]
    rows = [
        joint_row(0.2, m=[1, 0, True], m_b=[0, 0, False]),
        joint_row(0.6, m=[0, 0, both_loaded], m_b=[1, 0, True]),
        joint_row(1.2, m=[1, 0, True], m_b=[0, 0, False]),
    ]
    return two_model_facts(flights, sequence=["alt0-m", "alt1-m-b", "alt2-m"], joint=rows, evicted=evicted)


def test_alternate_passes_each_load_evicting_the_idle_other_model() -> None:
    v = run_judge("f5.alternate", alternating())
    assert v.status is Status.PASS, v.detail()


def test_alternate_fails_two_loaded_models_or_no_eviction() -> None:
    v = run_judge("f5.alternate", alternating(both_loaded=True))
    assert v.status is Status.FAIL and "never two models loaded" in v.detail()
    v = run_judge("f5.alternate", alternating(evicted=False))
    assert v.status is Status.FAIL and "evicted the idle other model" in v.detail()


def test_alternate_without_a_sample_showing_either_model_loaded_is_not_forced() -> None:
    """Rows whose `loaded` values are all unknown once passed "never two models loaded"
    (nothing seen is nothing violated); residency seen nowhere is not observed, and an
    eviction it cannot show is no FAIL either."""
    f = alternating()
    f["joint"] = [joint_row(t, m=[1, 0, None], m_b=[0, 0, None]) for t in (0.2, 0.6, 1.2)]
    v = run_judge("f5.alternate", f)
    assert v.status is Status.BLOCKED and v.retry and "either model loaded" in v.detail(), v.detail()
    f["evicted"] = False
    assert run_judge("f5.alternate", f).status is Status.BLOCKED


# -- retiring -------------------------------------------------------------------------------------


def retiring(
    incoming_status: int = 200, *, keeper_lost: bool = False, window: bool = True, keeper: str | None = "m"
) -> dict[str, Any]:
    kw: dict[str, Any] = (
        {} if incoming_status == 200 else {"status": incoming_status, "message": "max_loaded_models reached"}
    )
    flights = [
        manager("unload-retiring", 0.0, 0.20, unloaded=["m-b"]),
        fl("incoming", 0.05, 0.45, model="m-m", output="out-m", **kw),
    ]
    f = two_model_facts(flights, limit=2 if keeper else 1, teardown_window=window, keeper=keeper, incoming_tag="opt1")
    f["refs"]["m-m|opt1"] = {"cold": ["out-m"], "warm": ["out-m"]}
    if keeper:
        f["keeper_samples"] = [[0.06, 0, 0, True, 1, 1], *([[0.3, 0, 0, False, 1, 1]] if keeper_lost else [])]
        f["keeper_end_loaded"] = not keeper_lost
    return f


def test_retiring_passes_a_load_served_during_teardown_with_the_keeper_kept() -> None:
    assert run_judge("f5.retiring", retiring()).status is Status.PASS
    assert run_judge("f5.retiring", retiring(keeper=None)).status is Status.PASS


def test_retiring_fails_a_refused_load_or_an_evicted_keeper() -> None:
    v = run_judge("f5.retiring", retiring(503))
    assert v.status is Status.FAIL and "incoming load was served during the teardown (got 503" in v.detail()
    v = run_judge("f5.retiring", retiring(keeper_lost=True))
    assert v.status is Status.FAIL and "the keeper stayed loaded" in v.detail()


def test_retiring_is_not_forced_without_a_teardown_window() -> None:
    v = run_judge("f5.retiring", retiring(window=False))
    assert v.status is Status.BLOCKED and v.retry and "before another load could be sent" in v.detail()
    # A refused load outside the teardown window is no violation of this rule.
    assert run_judge("f5.retiring", retiring(503, window=False)).status is Status.BLOCKED


# -- ready_first -------------------------------------------------------------------------------


FREED_FIRST = [joint_row(0.14, m=[0, 0, False], m_b=[1, 0, False]), joint_row(0.30, m=[0, 0, False], m_b=[1, 0, True])]
PUBLISHED_FIRST = [
    joint_row(0.14, m=[0, 0, True], m_b=[1, 0, True]),
    joint_row(0.30, m=[0, 0, False], m_b=[1, 0, True]),
]
TOO_LATE = [joint_row(0.30, m=[0, 0, False], m_b=[1, 0, True])]


def ready(
    rows: list[list[Any]] | None = None, ids: list[str] | None = None, registry: dict[str, Any] | None = None
) -> dict[str, Any]:
    """B's first load (0.0 -> 0.40, published at 0.25), the bulk [B, A] sent at 0.05."""
    flights = [
        run_b("first-b", 0.0, 0.40),
        manager("unload-b-a", 0.05, 0.45, unloaded=["m", "m-b"] if ids is None else ids),
    ]
    return two_model_facts(
        flights,
        first_load_seen=True,
        b_unpublished_at=0.14,
        joint=FREED_FIRST if rows is None else rows,
        ended_unloaded=True,
        registry=registry
        or {
            "what": "the bulk unload",
            "manager": "unload-b-a",
            "still_waiting": True,
            "canaries": [{"t_send": 0.09, "t_done": 0.092, "status": 200}],
            "manager_t_done": None,
        },
    )


def test_ready_first_passes_the_ready_model_freed_first() -> None:
    v = run_judge("f5.ready_first", ready())
    assert v.status is Status.PASS, v.detail()


def test_ready_first_fails_a_bulk_that_waited_for_the_unpublished_load() -> None:
    v = run_judge("f5.ready_first", ready(PUBLISHED_FIRST))  # B published while A was still loaded
    assert v.status is Status.FAIL and "B was published first" in v.detail()
    v = run_judge("f5.ready_first", ready(ids=["m-b", "m"]))
    assert v.status is Status.FAIL and "lists the ready model first" in v.detail()


def test_ready_first_a_poll_too_late_to_show_the_order_is_not_a_fail() -> None:
    """On a loaded machine the first sample after the bulk may show A freed and B published
    at once: the order is unseen (it once FAILed for the sample times alone)."""
    v = run_judge("f5.ready_first", ready(TOO_LATE))
    assert v.status is Status.BLOCKED and v.retry and "order is unseen" in v.detail()


def test_ready_first_is_blocked_by_a_stalled_registry() -> None:
    stalled = {
        "what": "the bulk unload",
        "manager": "unload-b-a",
        "still_waiting": True,
        "canaries": [{"t_send": 0.09, "t_done": 0.449, "status": 200}],
        "manager_t_done": 0.45,
    }
    v = run_judge("f5.ready_first", ready(TOO_LATE, registry=stalled))
    assert v.status is Status.BLOCKED and "judged by F5.no_convoy" in v.detail()
    assert "status reads stalled while the bulk unload waited" in v.detail(), v.detail()  # names the unload


def test_ready_first_with_a_stalled_registry_judges_no_order_from_its_samples() -> None:
    """Status samples read through a stalled registry once still judged the freeing order:
    a sample showing both loaded FAILed beside the BLOCKED of the stall."""
    stalled = {
        "what": "the bulk unload",
        "manager": "unload-b-a",
        "still_waiting": True,
        "canaries": [{"t_send": 0.09, "t_done": 0.449, "status": 200}],
        "manager_t_done": 0.45,
    }
    v = run_judge("f5.ready_first", ready(PUBLISHED_FIRST, registry=stalled))
    assert v.status is Status.BLOCKED and "judged by F5.no_convoy" in v.detail(), v.detail()


def test_ready_first_not_caught_during_the_first_load_is_not_forced() -> None:
    """A first load not caught in progress (or already published when the bulk arrived)
    once still judged the freeing order, and a FAIL outranked the missing precondition."""
    f = ready(PUBLISHED_FIRST)
    f["first_load_seen"] = False
    v = run_judge("f5.ready_first", f)
    assert v.status is Status.BLOCKED and v.retry and "before the bulk unload could be sent" in v.detail()
    f = ready(PUBLISHED_FIRST)
    f["b_unpublished_at"] = 0.06  # B's last unpublished sample came right after the bulk was sent
    v = run_judge("f5.ready_first", f)
    assert v.status is Status.BLOCKED and "a margin after the bulk unload was sent" in v.detail()


# -- no_convoy --------------------------------------------------------------------------------


def convoy(status_done: float = 0.12, *, waiting: bool = True) -> dict[str, Any]:
    flights = [
        fl("a-0", 0.0, 0.3),
        fl("a-1", 0.0, 0.45),
        manager("unload-a", 0.05, 0.5),
        fl("status", 0.1, status_done, path="/v1/models", json={"data": []}),
        fl("health", 0.1, 0.11, path="/health", json={"status": "ok"}),
        run_b("warm-b", 0.1, 0.26),
    ]
    return two_model_facts(
        flights,
        count=1,
        busy=["a-0", "a-1"],
        bulk_waiting=waiting,
        waits=[{"what": "A full with queued work", "seen": True}],
    )


def test_no_convoy_passes_reads_and_a_warm_request_during_the_unload() -> None:
    v = run_judge("f5.no_convoy", convoy())
    assert v.status is Status.PASS, v.detail()


def test_no_convoy_fails_a_status_read_held_until_the_unload_finished() -> None:
    v = run_judge("f5.no_convoy", convoy(0.501))
    assert v.status is Status.FAIL
    assert "GET /v1/models, sent while A's unload waited, was answered only after it finished" in v.detail()


def test_no_convoy_is_blocked_when_the_situation_was_not_forced() -> None:
    """'A full' never seen, or the bulk no longer waiting, once still judged the reads'
    timing, so a FAIL outranked the missing precondition."""
    v = run_judge("f5.no_convoy", convoy(0.501, waiting=False))
    assert v.status is Status.BLOCKED and v.retry and "A's work finished before" in v.detail()
    f = convoy()
    f["waits"][0]["seen"] = False
    v = run_judge("f5.no_convoy", f)
    assert v.status is Status.BLOCKED and "never observed A full with queued work" in v.detail()


# -- selections ---------------------------------------------------------------------------------


def selection(dup_ids: list[str] | None = None, not_found: list[str] | None = None) -> dict[str, Any]:
    dup = manager("bulk-dup", 0.12, 0.55, unloaded=dup_ids or ["m", "m-b"])
    dup["json"]["not_found"] = ["m-unknown"] if not_found is None else not_found
    flights = [
        fl("m-run0", 0.0, 0.4),
        run_b("m-b-run0", 0.0, 0.42),
        manager("bulk-ab", 0.1, 0.5, unloaded=["m", "m-b"]),
        manager("bulk-ba", 0.11, 0.5, unloaded=["m-b", "m"]),
        dup,
        fl("unload-all", 0.13, 0.55, path="/v1/tasks/unload_all_models", json={"unloaded": ["m", "m-b"]}),
        fl("after-m", 0.7, 1.1),
        run_b("after-m-b", 1.1, 1.5),
    ]
    return two_model_facts(
        flights,
        count=1,
        unknown="m-unknown",
        running=["m-run0", "m-b-run0"],
        bulks=["bulk-ab", "bulk-ba", "bulk-dup", "unload-all"],
        after=["after-m", "after-m-b"],
        ended_unloaded=True,
        waits=[{"what": "work running on both models", "seen": True}],
    )


def test_selections_pass_each_model_listed_once() -> None:
    v = run_judge("f5.selections", selection())
    assert v.status is Status.PASS, v.detail()


def test_selections_fail_a_duplicate_listed_twice_or_a_lost_unknown_id() -> None:
    v = run_judge("f5.selections", selection(dup_ids=["m", "m", "m-b"]))
    assert v.status is Status.FAIL and "bulk-dup listed each model once" in v.detail()
    v = run_judge("f5.selections", selection(not_found=[]))
    assert v.status is Status.FAIL and "the unknown id is in not_found" in v.detail()


def test_selections_fail_a_deadlock() -> None:
    f = selection()
    f["settled"] = False
    v = run_judge("f5.selections", f)
    assert v.status is Status.FAIL and "(no deadlock)" in v.detail()


def test_selections_against_idle_models_are_no_pass() -> None:
    """The 'work running' wait was once discarded, so selections against idle models passed."""
    f = selection()
    f["waits"][0]["seen"] = False
    v = run_judge("f5.selections", f)
    assert v.status is Status.BLOCKED and "never observed work running on both models" in v.detail()
    f = selection()
    for x in f["flights"][:2]:
        x["t_done"] = 0.05  # the work ended before the first selection was sent (0.10)
    v = run_judge("f5.selections", f)
    assert v.status is Status.BLOCKED and "met idle models" in v.detail()


def test_selections_without_unload_all_models_are_judged_without_it() -> None:
    """A 404 from unload_all_models once FAILed: the route is not what this sub-check tests."""
    f = selection()
    all_ = next(x for x in f["flights"] if x["label"] == "unload-all")
    all_.update(status=404, json={"error": {"message": "not found"}})
    v = run_judge("f5.selections", f)
    assert v.status is Status.PASS and "unload_all_models is absent (HTTP 404)" in v.detail()


def test_retiring_names_a_stalled_registry_as_what_kept_the_teardown_unseen() -> None:
    f = retiring(window=False)
    f["registry"] = {"canaries": [{"t_send": 0.02, "t_done": 0.201, "status": 200}], "manager_t_done": 0.20}
    v = run_judge("f5.retiring", f)
    assert v.status is Status.BLOCKED and not v.retry and "judged by F5.no_convoy" in v.detail()
    f["registry"]["canaries"][0]["t_done"] = 0.03  # the status answered at once: just too fast
    v = run_judge("f5.retiring", f)
    assert v.status is Status.BLOCKED and v.retry


def test_together_under_limit_one_compares_the_served_model_and_needs_the_busy_text_with_the_503() -> None:
    # A served with B's output while B was refused every time: A's outputs are still compared.
    f = together(1, 503, both_active=False)
    f["flights"][0]["output"] = OUT_B
    v = run_judge("f5.together", f)
    assert v.status is Status.FAIL and "differ: m-0" in v.detail(), v.detail()
    # A 503 with another text, or the busy text on another status, is not the promised refusal.
    for status, message in ((503, "server overloaded"), (500, BUSY)):
        f = together(1, 503, both_active=False)
        f["flights"][1].update(status=status, message=message)
        v = run_judge("f5.together", f)
        assert v.status is Status.FAIL and f"m-b-0={status}" in v.detail(), (status, v.detail())


def test_together_under_limit_one_may_serve_both_in_turn() -> None:
    v = run_judge("f5.together", together(1, both_active=False))
    assert v.status is Status.PASS, v.detail()


def test_together_residency_is_observed_from_either_model() -> None:
    """Only B was ever seen loaded: residency was still observed (A was refused)."""
    f = together(1, 503, both_active=False)
    f["flights"][0], f["flights"][1] = (fl("m-0", 0.0, 0.05, status=503, message=BUSY), run_b("m-b-0", 0.0, 0.50))
    f["joint"] = [
        joint_row(0.01, m=[0, 0, False], m_b=[1, 0, False]),
        joint_row(0.30, m=[0, 0, False], m_b=[1, 0, True]),
    ]
    v = run_judge("f5.together", f)
    assert v.status is Status.PASS, v.detail()


def test_together_a_sample_without_a_model_counts_it_idle() -> None:
    f = together(2, both_loaded=True)
    f["joint"] = [joint_row(0.30, m=[1, 0, True])]  # m-b absent from the sample
    v = run_judge("f5.together", f)
    assert v.status is Status.BLOCKED and "both models holding slots at once" in v.detail(), v.detail()


def test_retiring_fails_a_keeper_seen_unloaded_even_if_loaded_at_the_end() -> None:
    f = retiring()
    f["keeper_samples"].append([0.3, 0, 0, False, 1, 1])
    v = run_judge("f5.retiring", f)
    assert v.status is Status.FAIL and "the keeper stayed loaded" in v.detail(), v.detail()


def test_ready_first_reads_an_unknown_loaded_state_as_unknown_and_only_samples_after_the_bulk_arrived() -> None:
    """A sample without A's `loaded` does not show A freed; a sample taken before the bulk
    could reach the server is not read for the order."""
    v = run_judge("f5.ready_first", ready([joint_row(0.14, m=[0, 0, None], m_b=[1, 0, False])]))
    assert v.status is Status.BLOCKED and "order is unseen" in v.detail(), v.detail()
    early = [joint_row(0.06, m=[0, 0, True], m_b=[1, 0, True]), *FREED_FIRST]
    v = run_judge("f5.ready_first", ready(early))
    assert v.status is Status.PASS, v.detail()


def test_no_convoy_fails_a_read_or_warm_request_refused_during_the_unload() -> None:
    """An early answer is only a pass when it is a 200: a refusal (a registry lock timing
    out, say) is the convoy's own symptom, reported with its status."""
    for label, what in (("status", "GET /v1/models"), ("health", "GET /health"), ("warm-b", "the warm request to B")):
        f = convoy()
        x = next(x for x in f["flights"] if x["label"] == label)
        x.pop("output", None)
        x.update(status=503, message="registry busy")
        v = run_judge("f5.no_convoy", f)
        assert v.status is Status.FAIL, (label, v.detail())
        assert f"{what} answered 200 (got 503: registry busy)" in v.detail(), (label, v.detail())


def test_no_convoy_a_read_sent_within_a_margin_of_the_unload_answering_is_not_forced() -> None:
    # Sent 20 ms before the unload answered (margin 80 ms): landing after it shows no convoy.
    f = convoy()
    f["flights"][3].update(t_send=0.48, t_done=0.52)
    v = run_judge("f5.no_convoy", f)
    assert v.status is Status.BLOCKED and v.retry, v.detail()
    assert "within a margin of GET /v1/models being sent" in v.detail()


def test_unload_together_an_answer_within_a_margin_of_the_last_work_is_no_violation() -> None:
    """Client-observed completions within a margin (150 ms here) land in either order on a
    correct server: an unload answered just after, or just before, the last work passes."""
    for done in (0.33, 0.25):
        v = run_judge("f5.unload_together", unload_both(bulk_done=done))
        assert v.status is Status.PASS and "before it ended" not in v.detail(), (done, v.detail())


def test_unload_together_says_how_early_the_unload_answered() -> None:
    v = run_judge("f5.unload_together", unload_both(bulk_done=0.10))  # the last work ended at 0.32
    assert v.status is Status.FAIL and "(answered 220 ms before it ended)" in v.detail(), v.detail()


def test_warm_during_cold_without_a_publication_time_uses_the_cold_reply() -> None:
    v = run_judge("f5.warm_during_cold", warm_cold(published=None))  # the cold reply came at 0.40
    assert v.status is Status.PASS, v.detail()
    v = run_judge("f5.warm_during_cold", warm_cold(0.65, published=None))
    assert v.status is Status.BLOCKED and "answered 250 ms after the cold load was published" in v.detail(), v.detail()


def test_warm_during_cold_a_load_ending_within_one_warm_request_is_not_forced_even_if_answered_before() -> None:
    """B answered before the publication, but A's load ended 100 ms after B's send, within
    one warm request (150 ms): B would have answered then even had it waited for the load."""
    v = run_judge("f5.warm_during_cold", warm_cold(0.18, published=0.20))
    assert v.status is Status.BLOCKED and v.retry, v.detail()
    assert "the cold load ended 100 ms after the warm request was sent" in v.detail()


def test_warm_during_cold_names_how_late_the_warm_model_answered() -> None:
    v = run_judge("f5.warm_during_cold", warm_cold(0.55))  # published at 0.38
    assert "the warm model answered 170 ms after the cold load was published" in v.detail(), v.detail()


def test_warm_during_cold_without_the_reference_durations_is_pending_naming_them() -> None:
    f = warm_cold()
    del f["flights"][2]["ms"]
    v = run_judge("f5.warm_during_cold", f)
    assert v.status is Status.PENDING and "no recorded duration" in v.detail(), v.detail()


def test_together_under_limit_one_fails_when_every_request_was_refused() -> None:
    f = together(1, 503, both_active=False)
    f["flights"][0] = fl("m-0", 0.0, 0.05, status=503, message=BUSY)
    v = run_judge("f5.together", f)
    assert v.status is Status.FAIL and "at least one request was served" in v.detail(), v.detail()


def test_together_a_pass_names_no_odd_status() -> None:
    v = run_judge("f5.together", together(1, 503, both_active=False))
    assert v.status is Status.PASS and "(got" not in v.detail(), v.detail()


def _own_tag_for_m(f: dict[str, Any], labels: tuple[str, ...]) -> None:
    """Register "m" under tag opt1 (output out-1) and give its flights that output."""
    f["tags"]["m"] = "opt1"
    f["refs"]["m|opt1"] = {"cold": ["out-1"], "warm": ["out-1"]}
    for x in f["flights"]:
        if x["label"] in labels:
            x["output"] = "out-1"


def test_alternate_and_selections_compare_each_model_with_its_own_tag() -> None:
    """Outputs are judged against the model's own registration (tag opt1 here), not the
    plan's base one: A served out-1, which its opt1 reference expects."""
    f = alternating()
    _own_tag_for_m(f, ("alt0-m", "alt2-m"))
    v = run_judge("f5.alternate", f)
    assert v.status is Status.PASS, v.detail()
    f = selection()
    _own_tag_for_m(f, ("after-m",))
    v = run_judge("f5.selections", f)
    assert v.status is Status.PASS, v.detail()


def test_alternate_residency_is_observed_from_either_model() -> None:
    """A's `loaded` unknown throughout, B seen loaded: residency was observed."""
    f = alternating()
    f["joint"] = [joint_row(t, m=[0, 0, None], m_b=[0, 0, True]) for t in (0.2, 0.6, 1.2)]
    v = run_judge("f5.alternate", f)
    assert v.status is Status.PASS, v.detail()


def test_a_stalled_registry_names_the_unload_of_the_retiring_model() -> None:
    f = retiring(window=False)
    f["registry"] = {"canaries": [{"t_send": 0.02, "t_done": 0.201, "status": 200}], "manager_t_done": 0.20}
    v = run_judge("f5.retiring", f)
    assert "status reads stalled while the unload of the retiring model waited" in v.detail(), v.detail()


def test_unload_together_after_the_work_ended_is_not_forced() -> None:
    # Both models' work ended by 0.32; an unload sent at 0.40 had nothing to wait for.
    f = unload_both()
    f["flights"][2] = manager("unload-both", 0.40, 0.50, unloaded=["m", "m-b"])
    v = run_judge("f5.unload_together", f)
    assert v.status is Status.BLOCKED and "its waiting is unseen" in v.detail(), v.detail()
    f["ended_unloaded"] = False  # a state seen afterwards is still judged
    assert run_judge("f5.unload_together", f).status is Status.FAIL


def test_no_convoy_a_warm_request_that_began_running_during_the_unload_passes() -> None:
    """B's warm request shares the device with A's work and may outlast A's unload: its own
    run (timing.wall_ms) begun while the unload waited shows it was not held behind it."""
    f = convoy()
    f["flights"][5] = {**run_b("warm-b", 0.1, 0.70), "wall_ms": 580.0}  # ran from 0.12, the unload ended at 0.50
    v = run_judge("f5.no_convoy", f)
    assert v.status is Status.PASS and "began running while A's unload waited" in v.detail(), v.detail()
    f["flights"][5] = run_b("warm-b", 0.1, 0.70)  # no server-side time: held up or slower is unseen
    v = run_judge("f5.no_convoy", f)
    assert v.status is Status.BLOCKED and "reports no server-side time" in v.detail(), v.detail()
    f["flights"][5] = {**run_b("warm-b", 0.1, 0.70), "wall_ms": 100.0}  # ran from 0.60: held until the unload ended
    v = run_judge("f5.no_convoy", f)
    assert v.status is Status.FAIL and "answered only after it finished" in v.detail(), v.detail()
