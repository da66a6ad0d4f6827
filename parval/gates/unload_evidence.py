"""What an unload showed, as the M2 per-start probe and the M4 recovery probes record it:
whether /v1/models then showed the model loaded:false (never the reply's list, which names
every known id), whether it waited for the work in front of it, and where the server put a
request sent while it waited."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from parval.jsonread import as_float, as_int, get, iterate

# Successful status samples after an unload that a "stayed loaded" claim needs.
MIN_POLLS_AFTER_UNLOAD = 5


def unload_check(check: Mapping[str, object], *, loaded_field: bool | None = None) -> str:
    """What a check of /v1/models after an unload showed (as the campaign records it:
    `reply`, `loaded_false`, `polls_after`, `still_loaded`, `loaded_field`): ok (loaded:false
    seen), missing_route (the unload answered 404: this build has no such route, a missing
    precondition), error (the unload did not answer 200), no_loaded (the server publishes
    no `loaded`, which the API promises: nothing can show the unload), stayed (enough
    samples after the 200, all showing the model loaded: an observed violation), unseen
    (too few samples to tell)."""
    status = get(check.get("reply") or {}, "status")
    if status == 404:
        return "missing_route"
    if status != 200:
        return "error"
    if check.get("loaded_false"):
        return "ok"
    published = check.get("loaded_field", loaded_field)
    if published is False:
        return "no_loaded"
    if check.get("still_loaded") and as_int(check.get("polls_after") or 0) >= MIN_POLLS_AFTER_UNLOAD:
        return "stayed"
    return "unseen"


def times(value: object) -> list[float]:
    """A recorded list of times (s), each as recorded: a non-number fails as comparing it would."""
    out: list[float] = []
    for x in iterate(value):
        if not isinstance(x, int | float):
            raise TypeError(f"'<' not supported for a recorded time of type '{type(x).__name__}'")
        out.append(x)
    return out


def returned_early(e: Mapping[str, object]) -> bool:
    """An observed violation: the unload's reply came before every reply of the work in
    front of it, by more than half the shortest request's latency.

    A correct server replies to the unload only after that work, but the client may read
    the replies of several connections in either order, and a busy client late: so only an
    unload that returns well before even the first of the in-flight replies (as one that
    skips the work does: a service time early) is claimed to have skipped it."""
    done = times(e.get("requests_done") or [])
    lat = [as_float(x) for x in iterate(e.get("requests_latency") or [])]
    if not done or not lat:
        return False
    return bool(as_float(e["unload_done"]) < min(done) - 0.5 * min(lat))


def unloaded_state(e: Mapping[str, object]) -> str:
    """Did the model end unloaded, as /v1/models showed it (never the reply's list, which
    names every known id): ok, stayed (observed loaded after the unload), no_loaded,
    unseen, or error (see `unload_check`)."""
    if e.get("unloaded_seen"):
        return "ok"
    check = e.get("unload_check")
    if isinstance(check, dict):
        return unload_check(check)
    return "unseen"


def server_order(e: Mapping[str, object]) -> str:
    """Where the server put the request sent after the waiting unload: queued_behind,
    admitted_past (it took a slot while the unload, sent a measured gap earlier, was still
    pending: barging) or unobserved."""
    order = e.get("later_order")
    return order if order == "queued_behind" or order == "admitted_past" else "unobserved"


def admitted_past(e: Mapping[str, object], which: str) -> str | None:
    """One try's later request admitted past the still-pending unload, in words (None when
    not). Alone this is no violation: the server's FIFO is enqueue order, not packet arrival,
    and a busy server may not have enqueued the unload yet (see `barging_reproduced`)."""
    if not (e.get("issued_while_active") and server_order(e) == "admitted_past"):
        return None
    return (
        f"a request sent {e.get('gap_s')} s after the {which} unload (still pending) was admitted while the "
        f"unload waited (the server showed {get(e.get('later_samples') or {}, 'max_active')} active > "
        f"{e['busy']} in front)"
    )


# Status reads the server answered in full after the unload was sent and before the later
# request was: the server was serving requests that came after the unload before the later
# one was sent, so the unload had reached it (and, on the API's FIFO, its queue) first.
ORDER_SHOWN_POLLS = 2


def order_shown(e: Mapping[str, object]) -> bool:
    """This try shows the unload waiting at the server before the later request arrived: the
    unload was issued while work was active, was still unanswered when the later request was
    sent, and the server answered ORDER_SHOWN_POLLS status reads sent after the unload
    before the later request was sent. Older records (no `polls_before_later`) show nothing."""
    polls = e.get("polls_before_later")
    return bool(
        e.get("issued_while_active")
        and e.get("unload_pending_at_later_send")
        and isinstance(polls, int)
        and not isinstance(polls, bool)
        and polls >= ORDER_SHOWN_POLLS
    )


def barging_shown(tries: Sequence[Mapping[str, object]], which: str) -> str | None:
    """Barging as a violation seen once: the first try that shows the unload waiting at the
    server before the later request arrived (`order_shown`) and saw that request admitted
    past it, in words, whatever the other tries saw. None when no try shows both."""
    for t in tries:
        if order_shown(t) and (seen := admitted_past(t, which)) is not None:
            return (
                f"try {t.get('tries')} of {len(tries)}: {seen}: it barged past the unload waiting at the server "
                f"({t.get('polls_before_later')} status reads sent after the unload were answered before the "
                "later request was sent)"
            )
    return None


def barging_reproduced(tries: Sequence[Mapping[str, object]], which: str) -> str | None:
    """Barging as a violation: every try of the probe (all it was allowed) saw the later
    request admitted past the waiting unload (each such try grows the next try's gap). None
    otherwise."""
    if not tries:
        return None
    allowed = as_int(tries[-1].get("max_tries") or 1)
    seen = [w for t in tries if (w := admitted_past(t, which)) is not None]
    if len(tries) < allowed or len(seen) != len(tries):
        return None
    gaps = ", ".join(f"{t.get('gap_s')}" for t in tries)
    return f"{seen[-1]}: it barged past the waiting manager, on every one of {len(tries)} tries (gaps {gaps} s)"


def missing_route(e: Mapping[str, object]) -> str | None:
    """The unload reply in words when the server answered 404: the API serves the unload
    routes on every build without a gate, so a 404 means this build has no such route, a
    missing precondition (its instant reply says nothing about waiting). None otherwise."""
    reply = e.get("unload") or get(e.get("unload_check") or {}, "reply") or {}
    if not isinstance(reply, Mapping):  # as reply.get would
        raise AttributeError(f"'{type(reply).__name__}' object has no attribute 'get'")
    if reply.get("status") != 404:
        return None
    return _answered(reply)


def _answered(reply: Mapping[str, object]) -> str:
    """A recorded reply in words: its status and the start of its error text."""
    return f"answered {reply.get('status')}: {str(reply.get('error') or '')[:120]}".rstrip(": ")


def unload_reply(e: Mapping[str, object]) -> dict[str, object]:
    """The reply to the probe's unload itself, as recorded ({} when it was not)."""
    reply = e.get("unload")
    return reply if isinstance(reply, dict) else {}


def unload_refused(e: Mapping[str, object], which: str) -> str | None:
    """The probe's unload answered with an error status: a violation, since the bulk unload
    routes wait without a timeout and answer 200 (a 404 is a missing route instead)."""
    reply = unload_reply(e)
    if reply.get("status") in (None, 200, 404):
        return None
    return f"the {which} unload {_answered(reply)}"


def unload_unanswered(e: Mapping[str, object]) -> str | None:
    """Why a PASS cannot rest on the probe's unload: its 200 was not recorded (None when it was)."""
    reply = unload_reply(e)
    if reply.get("status") == 200:
        return None
    return f"the unload's reply was not recorded ({reply.get('outcome') or 'no reply'})"


def unload_violation(e: Mapping[str, object], which: str) -> str | None:
    """The observed violation of one unload probe, in words (None when none; never for a
    route the server lacks, see `missing_route`)."""
    if missing_route(e) is not None:
        return None
    if (refused := unload_refused(e, which)) is not None:
        return refused
    if e.get("issued_while_active") and returned_early(e):
        return (
            f"unload returned at {e['unload_done']}s, well before the in-flight work finished "
            f"(first reply {min(times(e['requests_done']), default=0)}s, "
            f"last {max(times(e['requests_done']), default=0)}s)"
        )
    if unloaded_state(e) == "stayed":
        return (
            f"the {which} unload answered 200 but /v1/models showed the model loaded in all "
            f"{get(e.get('unload_check') or {}, 'polls_after')} status samples after it"
        )
    if unloaded_state(e) == "error":
        return f"the {which} unload answered {get(e.get('unload_check') or {}, 'reply')}"
    return None


def first_load_violation(e: Mapping[str, object]) -> str | None:
    """The observed violation of the unload-during-first-load probe, in words (None when none)."""
    if (refused := unload_refused(e, "first-load")) is not None:
        return refused
    if e.get("issued_during_load") and returned_early(e):
        return (
            f"unload did not wait for the first load (returned at {e['unload_done']}s, request done at "
            f"{max(times(e['requests_done']), default=0)}s)"
        )
    check = e.get("unload_check")
    if isinstance(check, dict) and unload_check(check) == "stayed":
        return f"the model stayed loaded after the unload ({check.get('polls_after')} status samples)"
    return None
