"""What a loaded machine does to the timing of a correct run, applied to recorded events:
the client sends and reads replies late (a wave's requests may no longer overlap), the
status poller loses or fails polls (and with them the samples that showed N active), a
drain check (after a wave, an unload or a mode's work) gets no answer, admissions are not
seen in order, the client reads an unload's reply before the in-flight replies it came
after, a later request reaches the server before the unload sent ahead of it. None of it is
a violation by the server, so no verdict may turn into FAIL."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

Draw = Callable[..., Any]


def _lost_polls(w: dict[str, Any], keep: float) -> None:
    """The poller kept only a fraction of its samples; those that showed N in flight may
    all be lost (then nothing showed N at all)."""
    status = w.get("status") or {}
    polls = int(status.get("polls") or 0)
    kept = int(polls * keep)
    failed = polls - kept
    status.update(poll_errors=int(status.get("poll_errors") or 0) + failed)
    flight = w.get("all_in_flight")
    if isinstance(flight, dict):
        inside = int(int(flight.get("polls") or 0) * keep)
        flight["polls"] = inside
        if inside == 0:
            flight.update(max_active=None, max_active_loaded=None)
            status.update(max_active_loaded=None)


def perturbed(events: list[dict[str, Any]], draw: Draw) -> list[dict[str, Any]]:
    out = copy.deepcopy(events)
    waves = [e for e in out if e.get("kind") == "wave"]
    for w in draw(st.lists(st.sampled_from(waves), max_size=12, unique_by=id), label="waves"):
        what = draw(st.sampled_from(["late", "lost_polls", "no_drain_answer", "unordered"]), label="what")
        if what == "late":
            # the client's sends spread out and its reads come late: the requests may no
            # longer have been all in flight at once (no window, no samples in it)
            reqs = [
                e
                for e in out
                if e.get("kind") == "request"
                and e.get("run") == w["run"]
                and e.get("phase") == w["phase"]
                and e.get("wave") == w["wave"]
            ]
            for i, r in enumerate(reqs):
                delay = draw(st.floats(0.0, 0.5), label="send delay")
                r["t_send"] = round(r["t_send"] + delay * i, 6)
                r["t_done"] = round(max(r["t_done"], r["t_send"]) + draw(st.floats(0.0, 0.3)), 6)
            if isinstance(w.get("all_in_flight"), dict):
                w["all_in_flight"].update(ms=0.0, polls=0, max_active=None, max_active_loaded=None)
                (w.get("status") or {}).update(max_active_loaded=None)
        elif what == "lost_polls":
            _lost_polls(w, draw(st.floats(0.0, 1.0), label="kept"))
        elif what == "no_drain_answer":
            w["drained"] = {"ok": False, "active": None, "queued": None, "fields_present": True}
        elif isinstance(w.get("admission"), dict):
            w["admission"].update(ordered_ok=False) if draw(st.booleans()) else w["admission"].update(
                finished_early=True
            )
    for e in out:
        if e.get("kind") in ("m4_targeted_unload", "m4_all_unload", "m4_unload_during_first_load"):
            lat = min(e.get("requests_latency") or [0.0])
            # the in-flight replies read up to 40% of a service time after the unload's
            shift = draw(st.floats(0.0, 0.4), label="late replies") * lat
            e["requests_done"] = [round(t + shift, 6) for t in e.get("requests_done") or []]
        if e.get("kind") in ("m4_targeted_unload", "m4_all_unload") and draw(
            st.booleans(), label="unload not yet enqueued"
        ):
            # a busy server took the later request before it had enqueued the unload: the
            # request took the free slot, and few status reads were answered in between
            busy = int(e.get("busy") or 1)
            samples = {**(e.get("later_samples") or {}), "max_active": busy + 1}
            e.update(later_order="admitted_past", later_samples=samples, polls_before_later=draw(st.integers(0, 1)))
        if (
            e.get("kind") != "wave"
            and isinstance(e.get("drained"), dict)
            and draw(st.booleans(), label="drain check unanswered")
        ):
            # the drain check after an unload or a mode's work timed out on a starved poller
            e["drained"] = {"ok": False, "active": None, "queued": None, "fields_present": True}
        if e.get("kind") == "m6_streaming" and draw(st.booleans(), label="streams late"):
            for s in e.get("streams") or []:
                s["t_send"] = round(float(s.get("t_send") or 0) + draw(st.floats(0.0, 0.5)), 6)
            e.update(max_active=None, polls=0)
    return out
