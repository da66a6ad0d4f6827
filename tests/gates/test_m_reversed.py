"""M3.reversed: a request pair counts as reversed only when one wave was observed admitting
a before b and another b before a (status poller or observer trace), never from the
recorded `reversed` flag."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parval.gates.m3_mixed_waves import m3_reversed, variation_effects
from parval.status import Status
from tests.gates.m_events import Events, counterless_status, counters_status, full_start, plan, tts_body

UNOBSERVED = {"ordered_ok": False, "finished_early": False, "admit_waits_ms": [2000.0, 2000.0]}
BODIES = {"a": tts_body(1), "b": tts_body(2), "c": tts_body(3), "d": tts_body(4)}


def judge(
    tmp_path: Path,
    orders: list[list[str]],
    *,
    status: dict[str, Any] | None = None,
    admission: dict[str, Any] | None = None,
    trace: bool | None = None,
    bad: tuple[int, str] | None = None,
) -> Any:
    ev = Events(tmp_path)
    ev.start("ref-baseline-a", role="reference")
    for name, body in {"base": tts_body(1), **BODIES}.items():
        for phase in ("ref_cold", "ref_warm", "ref_warm2"):
            ev.request("ref-baseline-a", phase, 0, name, body)
    ev.end("ref-baseline-a")
    ev.start("count2-s1", count=2)
    for w, order in enumerate(orders):
        for req in order:
            body = tts_body(99) if bad == (w, req) else BODIES[req]
            # Today's campaign marks odd waves reversed whatever was admitted.
            ev.request("count2-s1", "mixed_wave", w, req, body, ref=f"{req}|warm", reversed=w % 2 == 1)
        ev.wave(
            "count2-s1",
            "mixed_wave",
            w,
            2,
            order=order,
            status=status or counters_status(2),
            admission=admission,
            trace_confirmed=trace,
            mode="reversed" if w % 2 else "ordered",
        )
    ev.end("count2-s1")
    p = plan()
    for run in ("count2-s2", "count2-s3"):  # the other two starts a PASS needs, seen in no order
        full_start(ev, run, 2, p, status=status or counters_status(2))
        for w in ev.events:
            if w.get("kind") == "wave" and w.get("run") == run and w.get("phase") == "mixed_wave":
                w["admission"] = {"ordered_ok": False, "finished_early": False}
    ctx = ev.context(p)
    return m3_reversed(ctx, 2, variation_effects(ctx))


def test_pair_observed_in_both_orders_passes(tmp_path: Path) -> None:
    r = judge(tmp_path, [["a", "b"], ["b", "a"]])
    assert r.status is Status.PASS, r.reason
    assert r.evidence["reversed_pairs"] == [["a", "b"]]


def test_counterless_server_cannot_show_reversal(tmp_path: Path) -> None:
    # The real legacy server: no slot counters, so ordered admission never confirms a slot.
    r = judge(tmp_path, [["a", "b"], ["b", "a"]], status=counterless_status(2), admission=UNOBSERVED)
    assert r.status is Status.PENDING
    assert "publishes no slot counters" in r.reason and "cannot be observed" in r.reason


def test_unobserved_order_with_counters_is_pending(tmp_path: Path) -> None:
    r = judge(tmp_path, [["a", "b"], ["b", "a"]], admission=UNOBSERVED)
    assert r.status is Status.PENDING and "admission order not observed" in r.reason
    early = {"ordered_ok": True, "finished_early": True, "admit_waits_ms": []}
    assert judge(tmp_path, [["a", "b"], ["b", "a"]], admission=early).status is Status.PENDING


def test_observer_trace_confirms_the_order(tmp_path: Path) -> None:
    r = judge(tmp_path, [["a", "b"], ["b", "a"]], status=counterless_status(2), admission=UNOBSERVED, trace=True)
    assert r.status is Status.PASS, r.reason


def test_odd_waves_flagged_reversed_but_no_pair_admitted_both_ways(tmp_path: Path) -> None:
    # The old schedule at count 2 with four requests: [a,b], [d,c], [a,b], [d,c].
    r = judge(tmp_path, [["a", "b"], ["d", "c"], ["a", "b"], ["d", "c"]])
    assert r.status is Status.PENDING and "no request pair was observed admitted in both orders" in r.reason
    assert "a before b" in r.reason


def test_mismatch_in_a_reversed_wave_fails(tmp_path: Path) -> None:
    r = judge(tmp_path, [["a", "b"], ["b", "a"]], bad=(1, "a"))
    assert r.status is Status.FAIL and "1 mismatch" in r.reason
