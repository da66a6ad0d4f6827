"""The F1 judges over synthetic observations: each passes what a correct server shows and
fails exactly the misbehaviour it exists to catch."""

from __future__ import annotations

import copy
from typing import Any

from parval.framework.judges import run_judge
from parval.status import Status

from .factkit import facts, fl, manager, stagger


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
        staggers=[stagger("the unload", "unload")],
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
    f = forced()
    f["staggers"][0]["still_waiting"] = False
    assert run_judge("f1.forced_order", f).status is Status.FAIL


def test_forced_order_is_blocked_by_an_unseen_wait_or_a_stalled_registry() -> None:
    f = forced()
    f["waits"].append({"what": "later0 queued (queued_requests >= 2)", "seen": False})
    v = run_judge("f1.forced_order", f)
    assert v.status is Status.BLOCKED and "never observed later0 queued" in v.detail()
    f = forced()
    f["staggers"][0].update(canaries=[{"t_send": 0.3, "t_done": 0.598, "status": 200}], manager_t_done=0.6)
    v = run_judge("f1.forced_order", f)
    assert v.status is Status.BLOCKED and "judged by F5.no_convoy" in v.detail()


def test_forced_order_fails_an_output_that_differs_from_its_reference() -> None:
    f = forced()
    f["flights"][3]["output"] = "other"
    v = run_judge("f1.forced_order", f)
    assert v.status is Status.FAIL and "differ: later0" in v.detail()


def test_first_wave_fails_a_second_published_capacity() -> None:
    ok = facts(
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
    assert run_judge("f1.first_wave", ok).status is Status.PASS
    bad = copy.deepcopy(ok)
    bad["samples"].insert(3, [0.35, 1, 0, True, 2, 1])
    v = run_judge("f1.first_wave", bad)
    assert v.status is Status.FAIL and "max_parallel_slots appeared once" in v.detail()


def test_overdue_case_fails_a_probe_that_waited_instead_of_failing_fast() -> None:
    def case(status: int, message: str, done: float) -> dict[str, Any]:
        return facts(
            [
                fl("occupant0", 0.0, 0.5),
                manager("unload0", 0.2, 0.6),
                fl("probe", 0.3, done, status=status, message=message),
            ],
            count=1,
            occupied=1,
            managers=1,
            probe_ms=20,
            occupants=["occupant0"],
            manager_labels=["unload0"],
        )

    ok = case(503, "all active slots exceeded busy_timeout_ms", 0.302)
    assert run_judge("f1.overdue_case", ok).status is Status.PASS
    late = case(503, "timed out waiting for a slot", 0.33)
    v = run_judge("f1.overdue_case", late)
    assert v.status is Status.FAIL and "all active slots exceeded" in v.detail()
