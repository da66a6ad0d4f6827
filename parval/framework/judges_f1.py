"""Judges of the F1 observations: the capacity-one pool and forced FIFO order, overlapping
managers and the request-only queue (F1.fifo), overdue fail-fast, the timeout bounds
(F1.timeouts, both runtimes), a count or mode the runtime refuses (F1.unsupported) and the
legacy runtime's admission (F1.legacy_admission). Pure functions of the recorded facts;
`JUDGES` maps the key each observation names to its judge (a key keeps the prefix of the
probe that first recorded it: `f2.overlapping_managers` judges part of F1.fifo). The
capacity-one pool is F2.first_publish's first wave plus a capacity, and overlapping
managers open like F2's queued-work situations: both come from judges_f2.

A timeout duration is judged only against the bound the server was told, and only where the
observation leaves no doubt: a waiter that gave up before its bound, one served after the
slots it waited for stayed busy a margin past its bound, one that timed out although a slot
freed a margin before its bound ran out. A busy machine that delivered a reply late, or
let the occupants finish early, leaves the situation not forced (BLOCKED, tried again).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations

from parval.framework.judges_f2 import SLOT_FIELDS, first_wave
from parval.framework.observed import (
    INF,
    Facts,
    FlightFact,
    Judge,
    Verdict,
    all_ok,
    flight,
    listed,
    margin_s,
    ms,
    no_overtaking,
    outputs_match,
    queued_work_opening,
    samples,
    timing_of,
    unloaded_ids,
    waits,
)
from parval.framework.preconditions import route_absent
from parval.jsonread import json_text
from parval.procedure.entry import Entry, framework_entry

# -- F1.cap1_fifo and F1.fifo: the forced order --------------------------------------------------


def published_capacity(f: Facts) -> int | None:
    caps = sorted({s.capacity for s in samples(f) if s.capacity is not None})
    return caps[0] if caps else None


def cap1_pool(f: Facts) -> Verdict:
    """F1.cap1_fifo: a capacity-one model publishes a capacity; the pool's violations and
    what kept it from being forced count, an uncompared output does not hold it open."""
    wave = first_wave(f)
    v = Verdict()
    cap = published_capacity(f) if f.get("flagged") else None
    v.require(cap is not None and cap >= 1, f"a capacity was published (max_parallel_slots={cap})")
    v.problems.extend(wave.problems)
    v.passed.extend(wave.passed)
    v.blockers.extend(wave.blockers)
    v.unforced.extend(wave.unforced)
    return v


def forced_order(f: Facts) -> Verdict:
    """Older queued work, then an unload, then later requests: everything queued before the
    unload finishes before it, the later ones only after it, none overtakes an earlier one."""
    v = Verdict()
    waits(v, f, managers=("unload",))
    occupants = listed(f, "occupants")
    later = listed(f, "later")
    older = flight(f, "older")
    manager = flight(f, "unload")
    model = str(f["model_id"])
    m = margin_s(f)
    v.require(bool(f["settled"]), "every request and the unload completed within bound (no starvation or deadlock)")
    if not v.blockers:
        requests = [*occupants, older, *later]
        all_ok(v, requests, "requests")
        v.require(manager.status == 200 and model in unloaded_ids(manager), "the unload answered 200 listing the model")
        before = [x.label for x in (*occupants, older) if x.t_done > manager.t_done + m]
        v.require(
            not before,
            "the work queued before the unload finished before it"
            + (f" (after it: {', '.join(before)}, {ms(older.t_done - manager.t_done)} ms)" if before else ""),
        )
        early = [x.label for x in later if x.t_done < manager.t_done - m]
        v.require(
            not early, "later requests ran only after the unload" + (f" (barged: {', '.join(early)})" if early else "")
        )
        no_overtaking(v, requests, m, "requests in enqueue order")
        outputs_match(v, f, "base", requests, "all")
    v.require(bool(f["drained"]), "counters drained afterwards")
    return v


def request_only_queue(f: Facts) -> Verdict:
    """n occupants, then 2n requests queued one by one: admission follows enqueue order,
    from the observer trace when there is one, else from completions (the second n can only
    run a whole request after the first n, so one of them finishing ahead is barging)."""
    v = Verdict()
    waits(v, f)
    queued = listed(f, "queued")
    requests = [*listed(f, "occupants"), *queued]
    v.require(bool(f["settled"]), "the queue drained within bound")
    all_ok(v, requests, "queued requests")
    order = [s for s in f.get("trace_seeds") or [] if s.startswith("71") and len(s) == 4]
    expected = [str(7100 + i) for i in range(len(queued))]
    n = int(f["count"])
    if v.blockers:
        # The queue was not seen formed: requests that never waited were admitted as they
        # arrived, so neither the trace nor the completions show an enqueue order.
        pass
    elif f["marked"] and sorted(order) == sorted(expected):
        # Requests admitted together (one round of n) print their trace lines in either
        # order; a round's lines before the earlier round's is barging.
        rounds = [sorted(order[i : i + n]) for i in range(0, len(order), n)]
        want = [sorted(expected[i : i + n]) for i in range(0, len(expected), n)]
        v.require(rounds == want, f"observer trace shows admission in enqueue order, round by round ({order})")
    else:
        no_overtaking(v, requests, margin_s(f), "queued requests")
    v.require(bool(f["drained"]), "counters drained afterwards")
    return v


def overlapping_managers(f: Facts) -> Verdict:
    """F1.fifo: two reconfigurations queued behind work, then a request, complete in
    enqueue order and the request binds the last manager's configuration."""
    v, occupants, (m1, m2, later) = queued_work_opening(
        f, "reconfigure-opt0", "reconfigure-opt1", "later", managers=("reconfigure-opt0", "reconfigure-opt1")
    )
    if not v.blockers:
        all_ok(v, [*occupants, m1, m2, later], "requests and managers")
        m = margin_s(f)
        for first, then, what in (
            (m1, m2, "the managers completed in enqueue order"),
            (m2, later, "the later request ran after both managers"),
        ):
            if then.t_done < first.t_done - m:
                v.require(
                    False, f"{what} ({then.label} finished {ms(first.t_done - then.t_done)} ms before {first.label})"
                )
            elif then.t_done <= first.t_done:
                v.not_forced(f"{first.label} and {then.label} finished too close together to show their order")
            else:
                v.require(True, what)
        outputs_match(v, f, "base", occupants, "work admitted before the managers")
        outputs_match(v, f, "opt1", [later], "the later request (the last manager's configuration)")
    v.require(bool(f["drained"]), "counters drained afterwards")
    return v


# -- F1.overdue: fail-fast behind an overdue occupant --------------------------------------------


def _occupied_throughout(probe: FlightFact, held: list[FlightFact], m: float) -> bool:
    """Every slot in `held` was still leased when the probe was answered (its client saw its
    own reply at least a margin after the probe's)."""
    return bool(held) and min(x.t_done for x in held) >= probe.t_done + m


def overdue_case(f: Facts) -> Verdict:
    """With every occupied slot overdue, a bounded probe is rejected at once with the
    fail-fast text, whatever managers wait or slots are spare."""
    v = Verdict()
    mgrs = listed(f, "manager_labels")
    waits(v, f, managers=tuple(x.label for x in mgrs))
    probe = flight(f, "probe")
    occupants = listed(f, "occupants")
    v.require(bool(f["settled"]), "everything completed within bound")
    msg = probe.message
    barged = probe.status == 200 and probe.t_done < min(x.t_done for x in mgrs)
    if v.blockers:
        pass
    elif barged:
        v.block(
            "the probe took a spare slot ahead of the waiting manager, so the overdue rule "
            "was never reached (FIFO barging; judged by F1.fifo)"
        )
    elif probe.status == 503 and "all active slots exceeded busy_timeout_ms" in msg:
        # The text is decisive: only the check before enqueueing produces it (a probe that
        # waited out its bound gets 'timed out waiting for a slot'). Its latency is not
        # judged: a busy machine may deliver the rejection late.
        v.require(True, "probe rejected 503 'all active slots exceeded busy_timeout_ms' before enqueueing")
        all_ok(v, occupants, "occupants")
    elif not _occupied_throughout(probe, occupants, timing_of(f).tol_s):
        v.not_forced("an occupant finished before the probe was answered, so not every slot was overdue throughout")
    else:
        v.require(
            False,
            f"probe rejected 503 'all active slots exceeded busy_timeout_ms' while every slot was held "
            f"(got {probe.status}: {msg[:120]})",
        )
    v.require(bool(f["drained"]), "counters drained afterwards")
    return v


def healthy_plus_overdue(f: Facts) -> Verdict:
    """One overdue slot and fresh ones: the bounded probe waits (served after a slot freed,
    or 503 'timed out waiting for a slot' after its bound), never the fail-fast rejection
    while a fresh slot is younger than the bound."""
    v = Verdict()
    waits(v, f)
    probe_ms = int(f["probe_ms"])
    probe = flight(f, "probe")
    held = listed(f, "overdue", "healthy")
    fresh = listed(f, "healthy")
    v.require(bool(f["settled"]), "everything completed within bound")
    msg = probe.message
    lat_ms = (probe.elapsed_s or 0.0) * 1000
    m = margin_s(f)
    if v.blockers:
        pass
    elif min(x.t_done for x in held) < probe.t_send + m:
        v.not_forced("a slot freed before the probe arrived, so it never met a full pool")
    elif probe.status == 503 and "exceeded busy_timeout_ms" in msg:
        youngest = max(x.t_send for x in fresh)
        if (probe.t_done - youngest) * 1000 < probe_ms:
            v.require(
                False, f"fail-fast rejection while a fresh slot was younger than its {probe_ms} ms bound: {msg[:120]}"
            )
        else:
            v.not_forced("the fresh slots were older than the probe's bound by the time it arrived")
    else:
        served = probe.status == 200
        v.require(
            served or (probe.status == 503 and "timed out waiting for a slot" in msg),
            f"probe waited: served or 503 'timed out waiting for a slot' (got {probe.status}: {msg[:120]})",
        )
        # A waiter gives up no earlier than its bound (the server counts from after the send).
        v.require(served or lat_ms >= 0.9 * probe_ms, f"it waited {lat_ms:.0f} ms of its {probe_ms} ms bound")
    v.require(bool(f["drained"]), "counters drained afterwards")
    return v


# -- F1.timeouts ---------------------------------------------------------------------------------


# Texts of a probe that met the fail-fast path instead (its occupant was already older than
# the bound when it arrived): that case is F1.overdue's / the legacy wedged check's.
FAIL_FAST = ("exceeded busy_timeout_ms", "likely wedged")


def bounded(v: Verdict, probe: FlightFact, bound_ms: int, text: str, held: list[FlightFact], m: float) -> bool:
    """A waiter with a bound behind the work `held`: rejected 503 with `text` no earlier than
    its bound; served only if the slot freed before its bound ran out. True when it gave up."""
    bound_s = bound_ms / 1000
    msg = probe.message
    freed = min(x.t_done for x in held)  # when the client saw the first held slot free
    # The client's own latency, else the recorded send and reply times (never 0: a reply
    # without its latency is not one that came at once).
    lat = probe.elapsed_s if probe.elapsed_s is not None else probe.t_done - probe.t_send
    if probe.status == 503 and text in msg:
        v.require(lat >= 0.9 * bound_s, f"gave up after {lat * 1000:.0f} ms, not before its {bound_ms} ms bound")
        v.require(
            freed + m >= probe.t_send + bound_s,
            f"timed out although a slot freed {ms(probe.t_send + bound_s - freed)} ms before its bound ran out"
            if freed + m < probe.t_send + bound_s
            else "no slot freed before its bound ran out",
        )
        return True
    if probe.status == 200:
        if probe.t_done >= freed and freed >= probe.t_send + bound_s + m:
            v.require(
                False,
                f"served {ms(probe.t_done - probe.t_send)} ms after it was sent: it waited "
                f"past its {bound_ms} ms bound while the slot stayed busy",
            )
        else:
            v.not_forced("the held slot freed before the waiter's bound ran out, so it was served")
        return False
    if probe.status == 503 and any(x in msg for x in FAIL_FAST):
        v.not_forced("the occupant had already run past the bound when the waiter arrived (the fail-fast path)")
        return False
    v.require(False, f"503 '{text}' after its bound (got {probe.status}: {msg[:120]})")
    return False


def timeout_case(f: Facts) -> Verdict:
    """A probe behind fresh occupants: with a bound (`expect` text) it gives up after the
    bound; unbounded (`expect` None) it waits and is served once a slot frees. On the
    flagged runtime the queue's counters drain afterwards (a waiter that gave up leaves the
    accounting)."""
    v = Verdict()
    waits(v, f)
    occupants = listed(f, "occupants")
    probe = flight(f, str(f["probe"]))
    expect = f.get("expect")
    m = margin_s(f)
    v.require(bool(f["settled"]), "occupants completed")
    if not v.blockers:
        all_ok(v, occupants, "occupants")
        if expect is None:
            v.require(probe.status == 200, f"unbounded probe completed 200 (got {probe.status}: {probe.message[:120]})")
            freed = min(x.t_done for x in occupants)
            early = probe.t_done < freed - m
            held = any((s := x.latest_run_start) is not None and s < probe.t_done - m for x in occupants)
            if early and not f.get("flagged") and not held:
                # No counters on this path: only an occupant's own run shows it held the slot.
                v.not_forced(
                    "no occupant's own run (timing.wall_ms) is shown to have begun before the probe was served: "
                    "it may not yet have held the slot"
                )
                return v
            v.require(
                not early,
                "it was served only once a held slot freed"
                + (f" (served {ms(freed - probe.t_done)} ms before)" if early else ""),
            )
        else:
            bounded(v, probe, int(f["bound_ms"]), str(expect), occupants, m)
        if f.get("flagged"):
            v.require(
                bool(f.get("drained")), "counters drained afterwards (no timed-out request stays counted as queued)"
            )
    return v


def _behind(v: Verdict, f: Facts) -> None:
    """How the request sent behind the waiting manager (spare slot free) was first seen:
    queued is the forced order; taking the spare slot while the manager still waits is
    barging; first seen only after the manager gave up, whether it queued is unseen."""
    seen = f.get("behind")
    if not seen or int(seen["queued"]) >= 1:
        return
    if not seen["manager_finished"]:
        v.block(
            "the request behind the manager took the spare slot instead of queueing (FIFO barging, judged by F1.fifo)"
        )
    else:
        v.not_forced("the request behind the manager was first seen only after the manager gave up")


def _woke(v: Verdict, f: Facts, manager: FlightFact, n: int, first_done: float, m: float) -> None:
    """After the manager gave up, the request queued behind it takes the spare slot at once:
    a status sample showing it still queued with a slot free is the violation."""
    if manager.t_done + m >= first_done:
        v.not_forced("the occupants finished about when the unload gave up, so waking the request behind it is unseen")
        return
    rows = samples(f, "after_giveup")
    # Stuck needs both counters published: a sample missing one shows nothing about a free slot.
    stuck = [
        s
        for s in rows
        if manager.t_done + m < s.t < first_done - m
        and s.queued is not None
        and s.active is not None
        and s.queued >= 1
        and s.active < n
    ]
    woke = [s for s in rows if s.t < first_done and (s.active or 0) >= n]
    if stuck:
        v.require(
            False,
            f"{ms(stuck[0].t - manager.t_done)} ms after the unload gave up the request behind it still "
            "waited with a slot free",
        )
    elif woke:
        v.require(True, "the manager giving up woke the request queued behind it (it took the spare slot)")
    else:
        v.not_forced("no status sample showed the request behind the unload before the occupants finished")


def manager_timeout(f: Facts) -> Verdict:
    """A targeted unload behind occupants gives up after the ceiling with the timeout text,
    does nothing (the model stays loaded), and its giving up wakes the request queued
    behind it before the occupants finish."""
    v = Verdict()
    waits(v, f)
    _behind(v, f)
    occupants = listed(f, "occupants")
    manager = flight(f, "unload")
    later = flight(f, str(f["later"])) if f["later"] else None
    m = margin_s(f)
    n = int(f["count"])
    v.require(bool(f["settled"]), "everything completed within bound")
    if not v.blockers:
        # A manager waits for every held slot: the last one to free is what it waited for.
        last = max(x.t_done for x in occupants)
        gave_up = bounded(v, manager, int(f["bound_ms"]), str(f["expect"]), [flight_at(last, occupants)], m)
        all_ok(v, [*occupants, *([later] if later else [])], "requests")
        if gave_up:
            v.require(
                bool(f["end_sampled"]) and f["end_loaded"] is not False,
                "the model stayed loaded (the timed-out unload did nothing)",
            )
            if later is not None:
                _woke(v, f, manager, n, min(x.t_done for x in occupants), m)
    return v


def flight_at(t_done: float, items: list[FlightFact]) -> FlightFact:
    return next(x for x in items if x.t_done == t_done)


def bulk_unbounded(f: Facts) -> Verdict:
    """Bulk unload behind occupants waits for them, beyond the model's ceiling, and
    unloads the model (bulk waits are unbounded)."""
    v = Verdict()
    waits(v, f)
    bulk = flight(f, "bulk-unload")
    occupants = listed(f, "occupants")
    model = str(f["model"])
    ceiling_s = int(f["bound_ms"]) / 1000
    m = margin_s(f)
    v.require(bool(f["settled"]), "everything completed within bound")
    if not v.blockers:
        all_ok(v, occupants, "occupants")
        v.require(
            bulk.status == 200 and model in unloaded_ids(bulk),
            f"bulk unload answered 200 listing the model (got {bulk.status}: {bulk.message[:120]})",
        )
        last = max(x.t_done for x in occupants)
        if bulk.t_done < last - m:
            v.require(False, f"it answered {ms(last - bulk.t_done)} ms before the work it had to wait for finished")
        elif last - bulk.t_send > ceiling_s + m:
            v.require(
                True,
                f"it waited {ms(bulk.t_done - bulk.t_send)} ms for the work ahead of it, beyond the "
                f"{ceiling_s * 1000:.0f} ms ceiling (bulk waits are unbounded)",
            )
        else:
            v.not_forced(
                "the work ahead of the bulk unload finished within the ceiling, so waiting beyond it is unseen"
            )
    return v


# -- F1.unsupported ------------------------------------------------------------------------------


def count_over_capacity(f: Facts) -> Verdict:
    """Every request to a registration with slots = capacity + 1 gets an error naming the
    capacity; no lease stays held; the entry stays registered, unloaded, without a
    published capacity."""
    v = Verdict()
    cap = int(f["capacity"])
    for r in listed(f, "requests"):
        v.require(
            r.status is not None and r.status >= 400 and f"capacity={cap}" in r.message,
            f"{r.label}: an error naming capacity={cap} (got {r.status}: {r.message[:120]})",
        )
    v.require(bool(f["drained"]), "no lease stays held")
    end = samples({"samples": [f["end"]]}) if f.get("end") else []
    v.require(
        bool(end) and end[0].loaded is False and end[0].capacity is None and end[0].slots == cap + 1,
        f"the entry stays registered with slots={cap + 1}, unloaded, no capacity published",
    )
    return v


def unsupported_mode(f: Facts) -> Verdict:
    """The other execution mode on this model's route is refused with an error, the refusal
    releases its lease and a request afterwards is served with the reference output. A
    server without that route at all does not support the mode: UNSUPPORTED."""
    v = Verdict()
    route = str(f["route"])
    refused = flight(f, "unsupported-mode")
    if route_absent(refused.status):
        v.unsupported(
            f"the server has no {route} route (HTTP {refused.status}), so the mode refusal cannot be exercised"
        )
        return v
    v.require(
        refused.status is not None and 400 <= refused.status < 600,
        f"{route} on a {f['mode']} model is refused with an error (got {refused.status})",
    )
    v.require(bool(f["drained"]), "the refusal released its lease")
    after = flight(f, "after-refusal")
    all_ok(v, [after], "a request after the refusal")
    outputs_match(v, f, "base", [after], "after the refusal")
    return v


# -- F1.legacy_admission: the runtime started without --parallel-jobs ----------------------------


LEGACY_SLOTS_TEXT = "slots requires --parallel-jobs at server startup"


@dataclass(frozen=True)
class Run:
    """One request's server-side run: `run_s` long (timing.wall_ms, never longer than the
    client waited), somewhere between its send and the client reading its reply."""

    label: str
    sent: float
    read: float
    run_s: float

    @property
    def latest_start(self) -> float:
        return self.read - self.run_s


def forced_overlap(a: Run, b: Run) -> float:
    """How long two runs overlapped however late either reply was read: the least overlap
    over both orders, each run placed as far from the other as its send and reply allow."""
    return max(0.0, min(x.sent + x.run_s - y.latest_start for x, y in ((a, b), (b, a))))


def serial_fits(runs: list[Run], slack: float) -> bool:
    """Whether the runs fit one after another, each between its send and its reply (read up
    to `slack` later than the run may have ended): some order, each run started as early as
    its send and the previous run allow, ends by its reply."""
    for order in permutations(runs):
        end = -INF
        for r in order:
            end = max(end, r.sent) + r.run_s
            if end > r.read + slack:
                break
        else:
            return True
    return False


def guard_serializes(f: Facts) -> Verdict:
    """F1.legacy_admission: concurrent requests to one model run one after another. Each
    request ran for its own server-side time (timing.wall_ms) somewhere between its send and
    its reply. The violation is an overlap no late reply explains: runs that could not have
    taken turns within their own send and reply times (more than the margin). Runs that fit
    one after another only if some reply was read late are not forced; runs that did not
    overlap even as the replies were read pass. Decisive only when the requests run longer
    than the margin (short ones on a busy machine are not forced)."""
    v = Verdict()
    items = listed(f, "labels")
    v.require(bool(f["settled"]), "every request completed")
    all_ok(v, items, "requests")
    walls = [x.wall_s for x in items]
    if any(w is None for w in walls):
        v.pend("the replies report no server-side time (timing.wall_ms), so when each request ran is unknown")
        return v
    m = margin_s(f)
    runs = [
        Run(x.label, x.t_send, x.t_done, min(float(w or 0.0), x.t_done - x.t_send))
        for x, w in zip(items, walls, strict=True)
    ]
    pairs = [(forced_overlap(a, b), a.label, b.label) for i, a in enumerate(runs) for b in runs[i + 1 :]]
    forced = max(pairs, default=(0.0, "", ""))
    read_as_run = sorted((x.t_done - float(w or 0.0), x.t_done, x.label) for x, w in zip(items, walls, strict=True))
    seen = [
        (min(b[1], a[1]) - b[0], a[2], b[2])
        for i, a in enumerate(read_as_run)
        for b in read_as_run[i + 1 :]
        if b[0] < a[1]
    ]
    worst = max(seen, default=(0.0, "", ""))
    if forced[0] > m:
        v.require(
            False, f"{forced[1]} and {forced[2]} ran at the same time for {ms(forced[0])} ms (one guard serializes)"
        )
    elif not serial_fits(runs, m):
        v.require(
            False,
            f"{', '.join(r.label for r in runs)} could not have run one after another within their own send and "
            "reply times (one guard serializes)",
        )
    elif min(float(w or 0.0) for w in walls) <= m:
        v.not_forced(
            f"the requests run {ms(min(float(w or 0.0) for w in walls))} ms, too short against a "
            f"{ms(m)} ms margin to show whether they overlapped"
        )
    elif worst[0] > m:
        v.not_forced(
            f"{worst[1]} and {worst[2]} overlap {ms(worst[0])} ms if each reply was read as its run ended, but "
            "they fit one after another with a reply read late: whether they ran at the same time is unseen"
        )
    elif len(items) < 2 or max(x.t_send for x in items) >= min(x.t_done for x in items):
        # Runs that never overlapped show a guard only if the requests waited on each other.
        v.not_forced("the requests were not all in flight at once (one was sent after another was answered)")
    else:
        v.require(True, f"the requests ran one after another (overlap at most {ms(worst[0])} ms)")
    return v


def wedged_text(f: Facts) -> Verdict:
    """F1.legacy_admission: a holder older than the caller's bound is treated as wedged, the
    caller rejected at once with the wedged text."""
    v = Verdict()
    probe = flight(f, "probe")
    holder = flight(f, "holder")
    v.require(bool(f["settled"]), "the holder completed")
    msg = probe.message
    if probe.status == 503 and "current inference has run" in msg and "likely wedged" in msg:
        # The text is decisive: it is only produced before waiting (its latency is not judged).
        v.require(True, "503 'current inference has run ... likely wedged' before waiting")
    elif probe.status == 503 and "waiting for the inference lock" in msg:
        v.not_forced("the holder was not yet older than the bound when the caller arrived (it waited, then timed out)")
    elif probe.status == 200 and holder.t_done <= probe.t_done + margin_s(f):
        v.not_forced("the holder finished before the caller was answered, so the caller was served")
    elif probe.status == 200 and ((s := holder.latest_run_start) is None or s >= probe.t_done - margin_s(f)):
        # A starved holder may reach the lock after the caller: then the caller was rightly served.
        v.not_forced("the holder's own run is not shown to have begun before the caller was served")
    else:
        v.require(
            False,
            f"503 'current inference has run ... likely wedged' (got {probe.status}: {msg[:120]}"
            + (" while the holder still ran)" if probe.status == 200 else ")"),
        )
    return v


def status_fields(f: Facts) -> Verdict:
    """F1.legacy_admission: the legacy /v1/models lists the models without slot fields."""
    v = Verdict()
    entries = f.get("entries") or []
    present = sorted({k for keys in entries if keys is not None for k in keys if k in SLOT_FIELDS})
    v.require(bool(entries) and not present, f"legacy /v1/models has no slot fields (found {present})")
    return v


def registration_forms(f: Facts) -> Verdict:
    """F1.legacy_admission: every explicit slots form of a registration is rejected 400 with
    the legacy text, and nothing was registered."""
    v = Verdict()
    if not f["results"]:
        raise KeyError("no registration was recorded")
    for r in f["results"]:
        v.require(
            r["status"] == 400 and r["message"] == LEGACY_SLOTS_TEXT,
            f"slots={json_text(r['slots'])} rejected 400 '{LEGACY_SLOTS_TEXT}' (got {r['status']})",
        )
    before, after = f["models_before"], f["models_after"]
    if isinstance(before, int) and isinstance(after, int):
        v.require(before == after, f"registered model count unchanged ({before} -> {after})")
    else:
        v.pend("GET /health publishes no `models` count, so whether anything was registered is not observable")
    return v


def config_forms(f: Facts) -> Verdict:
    """F1.legacy_admission: an unflagged start with a slots field in its config exits 1
    with the rejection text."""
    v = Verdict()
    if not f["starts"]:
        raise KeyError("no unflagged start was recorded")
    for s in f["starts"]:
        v.require(
            bool(s["exited"]) and s["exit_code"] == 1 and bool(s["message"]),
            f"config slots={json_text(s['slots'])}: startup failed with exit 1 and the rejection text",
        )
    return v


JUDGES: dict[str, Judge] = {
    "f1.cap1_pool": cap1_pool,
    "f1.forced_order": forced_order,
    "f1.request_only_queue": request_only_queue,
    "f2.overlapping_managers": overlapping_managers,
    "f1.overdue_case": overdue_case,
    "f1.healthy_plus_overdue": healthy_plus_overdue,
    "timeouts.case": timeout_case,
    "timeouts.manager_timeout": manager_timeout,
    "timeouts.bulk_unbounded": bulk_unbounded,
    "unsupported.count_over_capacity": count_over_capacity,
    "unsupported.unsupported_mode": unsupported_mode,
    "legacy.guard_serializes": guard_serializes,
    "legacy.wedged_text": wedged_text,
    "legacy.status_fields": status_fields,
    "legacy.registration_forms": registration_forms,
    "legacy.config_forms": config_forms,
}

# The registry entries of the F1 assertions, each combined from the sub-checks of the judges it names.
ENTRIES: tuple[Entry, ...] = (
    framework_entry(
        "F1.fifo", "f1.forced_order", "f1.request_only_queue", "f2.overlapping_managers", faults=("barging",)
    ),
    framework_entry("F1.overdue", "f1.overdue_case", "f1.healthy_plus_overdue", faults=("overdue_suppressed",)),
    framework_entry(
        "F1.timeouts",
        "timeouts.case",
        "timeouts.manager_timeout",
        "timeouts.bulk_unbounded",
        faults=("queued_counter_stuck",),
        notes=("judged on the flagged and the legacy runtime alike",),
    ),
    framework_entry(
        "F1.legacy_admission",
        "legacy.guard_serializes",
        "legacy.wedged_text",
        "legacy.status_fields",
        "legacy.registration_forms",
        "legacy.config_forms",
        notes=("judged on unflagged (legacy) starts of the candidate",),
    ),
    framework_entry("F1.cap1_fifo", "f1.cap1_pool", "f1.forced_order"),
    framework_entry(
        "F1.unsupported",
        "unsupported.count_over_capacity",
        "unsupported.unsupported_mode",
        notes=("queue overflow is NOT_APPLICABLE here: its timeout rejection is recorded under F1.timeouts",),
    ),
)
