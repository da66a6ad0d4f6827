"""The F1.unsupported judges over synthetic observations: each passes what a correct
server shows and fails exactly the misbehaviour it exists to catch."""

from __future__ import annotations

from typing import Any

from parval.framework.judges import run_judge
from parval.status import Status

from .factkit import facts, fl

OVER = "slots=5 exceeds the advertised capacity=4"


def over(*, status: int = 500, message: str = OVER, end: list[Any] | None = None, **extra: Any) -> dict[str, Any]:
    return facts(
        [
            fl("over-capacity0", 0.0, 0.01, status=status, message=message, model="m-over"),
            fl("over-capacity1", 0.02, 0.03, status=500, message=OVER, model="m-over"),
        ],
        capacity=4,
        model="m-over",
        requests=["over-capacity0", "over-capacity1"],
        end=[0.05, 0, 0, False, None, 5] if end is None else end,
        **extra,
    )


def test_count_over_capacity_passes_a_refusal_naming_the_capacity() -> None:
    v = run_judge("unsupported.count_over_capacity", over())
    assert v.status is Status.PASS, v.detail()


def test_count_over_capacity_fails_a_served_request_or_another_text() -> None:
    v = run_judge("unsupported.count_over_capacity", over(status=200))
    assert v.status is Status.FAIL and "over-capacity0: an error naming capacity=4 (got 200" in v.detail()
    v = run_judge("unsupported.count_over_capacity", over(message="load failed"))
    assert v.status is Status.FAIL


def test_count_over_capacity_fails_a_held_lease_or_a_published_pool() -> None:
    v = run_judge("unsupported.count_over_capacity", over(drained=False))
    assert v.status is Status.FAIL and "no lease stays held" in v.detail()
    v = run_judge("unsupported.count_over_capacity", over(end=[0.05, 0, 0, True, 4, 5]))
    assert v.status is Status.FAIL and "unloaded, no capacity published" in v.detail()
    f = over()
    f["end"] = None
    assert run_judge("unsupported.count_over_capacity", f).status is Status.FAIL


def mode(status: int = 400, *, after: bool = True, **extra: Any) -> dict[str, Any]:
    flights = [
        fl(
            "unsupported-mode",
            0.0,
            0.01,
            status=status,
            path="/v1/tasks/stream",
            message="model does not support streaming",
        )
    ]
    if after:
        flights.append(fl("after-refusal", 0.02, 0.17))
    return facts(flights, route="/v1/tasks/stream", mode="offline", model="m", refused_status=status, **extra)


def test_unsupported_mode_passes_a_refusal_that_holds_nothing() -> None:
    v = run_judge("unsupported.unsupported_mode", mode())
    assert v.status is Status.PASS, v.detail()


def test_unsupported_mode_fails_an_accepted_mode_or_a_held_lease() -> None:
    v = run_judge("unsupported.unsupported_mode", mode(200))
    assert v.status is Status.FAIL
    assert "/v1/tasks/stream on a offline model is refused with an error (got 200)" in v.detail()
    v = run_judge("unsupported.unsupported_mode", mode(drained=False))
    assert v.status is Status.FAIL and "the refusal released its lease" in v.detail()
    f = mode()
    f["flights"][1]["output"] = "other"
    v = run_judge("unsupported.unsupported_mode", f)
    assert v.status is Status.FAIL and "differ: after-refusal" in v.detail()


def test_unsupported_mode_is_unsupported_without_the_route() -> None:
    f = mode(404, after=False)
    del f["drained"]
    v = run_judge("unsupported.unsupported_mode", f)
    assert v.status is Status.UNSUPPORTED
    assert v.detail() == (
        "the server has no /v1/tasks/stream route (HTTP 404), so the mode refusal cannot be exercised"
    )
