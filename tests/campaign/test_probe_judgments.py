"""X1, X3 and M4.load_failure_retry judged over synthetic event lists: each misbehaviour the
check exists to catch is reported, and a clean record passes."""

from __future__ import annotations

from typing import Any

from parval.gates.execution_path import x1_legacy_path, x3_resize_across_one
from parval.gates.judge_context import JudgeContext
from parval.gates.m4_recovery import judge_load_failure, judge_m4, lease_problem
from parval.rundir.event_index import build_records
from parval.status import Status

PLAN: dict[str, Any] = {"counts": [1, 2], "model": {"id": "m", "cache_sensitive": False}}


def start(run: str, role: str, count: int | None = 1) -> list[dict[str, Any]]:
    return [{"kind": "run_start", "run": run, "attempt": 1, "role": role, "count": count}]


def end(run: str) -> dict[str, Any]:
    return {"kind": "run_end", "run": run, "attempt": 1}


def request(
    run: str, phase: str, canon: str, ref: str | None = "base|cold", wave: int = 0, status: int = 200
) -> dict[str, Any]:
    ok = status == 200
    return {
        "kind": "request",
        "run": run,
        "attempt": 1,
        "phase": phase,
        "wave": wave,
        "req": "base",
        "ref": ref,
        "history": [],
        "slot": 0,
        "reply": {"outcome": "ok" if ok else "http_error", "status": status},
        "output": {"valid": True, "canon": canon} if ok else None,
        "artifact": None,
        "t_send": 0.0,
        "t_done": 0.1,
    }


def baseline() -> list[dict[str, Any]]:
    return [
        *start("ref-baseline-a", "reference"),
        request("ref-baseline-a", "ref_cold", "COLD"),
        request("ref-baseline-a", "ref_warm", "WARM", ref="base|warm"),
        request("ref-baseline-a", "ref_warm2", "WARM", ref="base|warm"),
        end("ref-baseline-a"),
    ]


def ctx(events: list[dict[str, Any]]) -> JudgeContext:
    return JudgeContext(build_records(events), PLAN, {}, None, "plan.yaml")


def by_id(results: list[Any], id_: str) -> Any:
    return next(r for r in results if r.id == id_)


# -- X1 --------------------------------------------------------------------------------------
def x1_events(config_forms: list[Any], reg_ok: bool = True) -> list[dict[str, Any]]:
    ev = [
        *baseline(),
        *start("ref-candidate-legacy", "reference"),
        {"kind": "server_ready", "run": "ref-candidate-legacy", "attempt": 1, "warning_marker": False, "argv": []},
    ]
    ev += [{"kind": "x1_config_probe", "value": v, "rejected": True, "message_ok": True} for v in config_forms]
    ev += [
        {
            "kind": "x1_registration_probe",
            "run": "ref-candidate-legacy",
            "attempt": 1,
            "value": v,
            "ok": reg_ok,
            "reply": {"status": 400 if reg_ok else 200},
            "message": "",
        }
        for v in (1, 2, None, False, "4")
    ]
    legacy_end = {**end("ref-candidate-legacy"), "status_fields": {"slot_fields": False}}
    return [*ev, legacy_end]


def test_x1_needs_all_five_startup_forms() -> None:
    r = x1_legacy_path(ctx(x1_events([1, None])))
    assert r.status is Status.PENDING
    assert "2" in r.reason and "false" in r.reason and '"4"' in r.reason
    # 1 and true are different forms: True does not stand in for 1
    r = x1_legacy_path(ctx(x1_events([True, 2, None, False, "4"])))
    assert r.status is Status.PENDING and "1" in r.reason
    r = x1_legacy_path(ctx(x1_events([1, 2, None, False, "4"])))
    assert r.status is Status.PASS and "5 config forms" in r.reason


def test_x1_fails_a_form_accepted_at_startup() -> None:
    ev = x1_events([1, 2, None, False, "4"])
    for e in ev:
        if e["kind"] == "x1_config_probe" and e["value"] is False:
            e["rejected"] = False
    r = x1_legacy_path(ctx(ev))
    assert r.status is Status.FAIL and "slots=false" in r.reason


# -- X3 --------------------------------------------------------------------------------------
def x3_events(steps: list[dict[str, Any]], outputs: list[str], **probe: Any) -> list[dict[str, Any]]:
    run = "ref-candidate-cap1"
    ev = [*baseline(), *start(run, "reference")]
    ev += [request(run, "x3_after_resize", canon, wave=i) for i, canon in enumerate(outputs)]
    ev.append(
        {"kind": "x3_resize_probe", "run": run, "attempt": 1, "steps": steps, "ok": probe.pop("ok", True), **probe}
    )
    return [*ev, end(run)]


def step(slots: int, status: int = 200, fields: bool = True) -> dict[str, Any]:
    return {"slots": slots, "reply": {"status": status}, "status_fields": fields}


def test_x3_passes_only_with_exact_outputs_after_each_resize() -> None:
    steps = [step(2), step(1), step(2), step(1)]
    # a cap1 output of another phase is not one after a resize
    ev = x3_events(steps, ["COLD"] * 4)
    ev.insert(-1, request("ref-candidate-cap1", "ref_cold", "COLD"))
    r = x3_resize_across_one(ctx(ev))
    assert r.status is Status.PASS
    assert r.reason == (
        "resized 1→2→1→2→1 on one process, parallel status fields kept; first output after each resize vs the "
        "cold reference: 4/4 exact"
    )
    assert r.evidence["steps"] == steps and r.evidence["rests_on"] == {"compared outputs": 4}
    r = x3_resize_across_one(ctx(x3_events(steps, ["COLD", "COLD", "OTHER", "COLD"])))
    assert r.status is Status.FAIL and "mismatch" in r.reason
    assert r.evidence["mismatches"][0]["wave"] == 2


def test_x3_without_outputs_is_not_a_pass() -> None:
    steps = [step(2), step(1), step(2), step(1)]
    for outputs in ([], ["COLD"] * 3):
        r = x3_resize_across_one(ctx(x3_events(steps, outputs)))
        assert r.status is Status.PENDING
        assert r.reason == f"resized across one, but {len(outputs)} of 4 outputs after a resize were recorded"
        assert r.evidence == {"steps": steps}


def test_x3_that_never_crosses_one_is_pending_not_resized() -> None:
    # Today's probe skipped every step above the largest count: 2→1→2→1 became 1→1.
    for sizes in ([1, 1], [2, 2]):
        steps = [step(n) for n in sizes]
        r = x3_resize_across_one(ctx(x3_events(steps, ["COLD", "COLD"])))
        assert r.status is Status.PENDING
        assert r.reason == f"resize steps {sizes} do not cross one (both 2 and 1 are needed)"
        assert r.evidence == {"steps": steps}


def test_x3_capacity_one_model_is_pending_naming_why() -> None:
    msg = "model 'f' does not support the requested slots for this backend/task/mode (capacity=1)"
    ev = x3_events(
        [{"slots": 2, "reply": {"status": 400}, "capacity_refused": True}], [], ok=False, capacity_refused=msg
    )
    r = x3_resize_across_one(ctx(ev))
    assert r.status is Status.PENDING
    assert r.reason == (
        f"the model's capacity does not allow two slots (server: {msg!r}): resizing across one cannot be exercised "
        "with this model"
    )
    assert r.evidence == {"steps": [{"slots": 2, "reply": {"status": 400}, "capacity_refused": True}]}


def test_x3_lost_status_fields_fail() -> None:
    ev = x3_events([step(2), step(1, fields=False), step(2), step(1)], ["COLD"] * 4, ok=False)
    r = x3_resize_across_one(ctx(ev))
    assert r.status is Status.FAIL and "slots=1" in r.reason


def test_x3_resize_refused_for_memory_is_blocked_not_failed() -> None:
    refused = {"slots": 2, "reply": {"status": 503, "error_type": "insufficient_memory"}, "status_fields": True}
    refused_one = {**refused, "slots": 1}
    steps = [step(2), refused_one, refused, step(1)]
    r = x3_resize_across_one(ctx(x3_events(steps, ["COLD"] * 2, ok=False)))
    assert r.status is Status.BLOCKED
    assert r.reason == (
        "resizing to 1 slots was refused for memory (503 insufficient_memory): resizing across one could not be "
        "exercised"
    )
    assert r.evidence == {"steps": steps}


# -- M4.load_failure_retry ---------------------------------------------------------------------
DRAINED = {"ok": True, "active": 0, "queued": 0, "fields_present": True}


def lf_events(outputs: list[str], retry: str = "COLD", **lf: Any) -> tuple[JudgeContext, dict[str, Any]]:
    run = "recovery"
    ev = [*baseline(), *start(run, "recovery", 2)]
    ev += [request(run, "load_failure_alongside", c) for c in outputs]
    ev.append(request(run, "load_retry", retry))
    e = {
        "kind": "m4_load_failure",
        "run": run,
        "attempt": 1,
        "failure": {"status": 500},
        "failed": True,
        "retry": {"status": 200},
        "retried": True,
        "healthy_in_flight": True,
        "healthy": len(outputs),
        "drained": DRAINED,
        **lf,
    }
    ev += [e, end(run)]
    return ctx(ev), e


def test_load_failure_retry_passes_when_same_registration_outputs_are_exact() -> None:
    c, e = lf_events(["COLD", "COLD"])
    r = judge_load_failure(c, "recovery", e)
    assert r.status is Status.PASS and "3/3" in r.reason


def test_load_failure_retry_fails_a_wrong_healthy_or_retried_output() -> None:
    c, e = lf_events(["COLD", "BAD"])
    assert judge_load_failure(c, "recovery", e).status is Status.FAIL
    c, e = lf_events(["COLD", "COLD"], retry="BAD")
    assert judge_load_failure(c, "recovery", e).status is Status.FAIL


def test_load_failure_that_keeps_a_lease_fails() -> None:
    c, e = lf_events(["COLD", "COLD"], drained={"ok": False, "active": 1, "queued": 0, "fields_present": True})
    r = judge_load_failure(c, "recovery", e)
    assert r.status is Status.FAIL and "lease left held: active_slots 1" in r.reason


def test_no_slot_counters_are_named_as_such() -> None:
    none = {"ok": False, "active": None, "queued": None, "fields_present": False}
    c, e = lf_events(["COLD", "COLD"], drained=none)
    r = judge_load_failure(c, "recovery", e)
    assert r.status is Status.UNSUPPORTED and "publishes no slot counters" in r.reason
    assert "active None" not in r.reason
    assert lease_problem(DRAINED) is None


def test_load_failure_not_failing_or_without_healthy_work() -> None:
    c, e = lf_events(["COLD"], failed=False, failure={"status": 200})
    assert judge_load_failure(c, "recovery", e).status is Status.FAIL
    c, e = lf_events(["COLD", "COLD"], healthy_in_flight=False)
    assert judge_load_failure(c, "recovery", e).status is Status.PENDING
    assert (
        judge_load_failure(c, "recovery", {"skipped": "plan sets recovery.load_failure: none"}).status is Status.PENDING
    )


def test_invalid_alongside_without_counters_names_the_missing_counters() -> None:
    run = "recovery"

    def events(drained: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            *baseline(),
            *start(run, "recovery", 2),
            request(run, "invalid_alongside", "COLD"),
            {
                "kind": "m4_invalid_alongside",
                "run": run,
                "attempt": 1,
                "invalid": {"status": 400},
                "rejected": True,
                "drained": drained,
            },
            end(run),
        ]

    none = {"ok": False, "active": None, "queued": None, "fields_present": False}
    r = by_id(judge_m4(ctx(events(none))), "M4.invalid_alongside")
    assert r.status is Status.UNSUPPORTED and "publishes no slot counters" in r.reason
    assert "active None" not in r.reason
    held = {"ok": False, "active": 1, "queued": 0, "fields_present": True}
    r = by_id(judge_m4(ctx(events(held))), "M4.invalid_alongside")
    assert r.status is Status.FAIL and "lease left held: active_slots 1" in r.reason
    assert by_id(judge_m4(ctx(events(DRAINED))), "M4.invalid_alongside").status is Status.PASS
