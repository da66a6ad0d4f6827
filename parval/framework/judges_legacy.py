"""Judges of the legacy observations (parval.framework.probes_legacy): one session from
concurrent first requests, the unpublished-load skip of legacy bulk unload, the original
guard's serialization and wedged fail-fast, no slot fields, every explicit slots form
rejected. Pure functions of the recorded facts."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations

from parval.framework.checks import Verdict
from parval.framework.facts import INF, Facts, flight, listed, named
from parval.framework.observed import all_ok, margin_s, ms, outputs_match, unloaded_ids
from parval.framework.observed import judge as register

LEGACY_SLOTS_TEXT = "slots requires --parallel-jobs at server startup"
SLOT_FIELDS = ("slots", "active_slots", "queued_requests", "max_parallel_slots")


def first_session(f: Facts) -> Verdict:
    """F2.first_publish on the legacy path: concurrent first requests all complete with the
    reference output and the model ends loaded (when `loaded` is published at all)."""
    v = Verdict()
    items = listed(f, "labels")
    v.require(bool(f["settled"]), "every first request completed")
    all_ok(v, items, "concurrent first requests")
    outputs_match(v, f, "base", items, "legacy first-request")
    if f.get("loaded_published"):
        v.require(f.get("end_loaded") is True, "the model ended loaded")
    else:
        v.pend("the server publishes no `loaded` field, so the published session is not observable")
    return v


register("legacy.first_session", first_session)


def unpublished_skip(f: Facts) -> Verdict:
    """F2.unload_vs_load: a bulk unload sent while the first load is in progress answers at
    once without the unpublished model, and the load is still published afterwards."""
    v = Verdict()
    first = flight(f, "first")
    bulk = flight(f, "bulk-unload")
    model = str(f["model"])
    if not f["loaded_published"]:
        v.unsupported("the legacy /v1/models publishes no `loaded` field, so an unpublished load is not observable")
        return v
    during = f["during_loaded"]
    if during is not False:
        v.not_forced(
            "the load was already published when the unload was sent"
            if during
            else "no status sample was taken between the first request and the unload"
        )
        return v
    v.require(bool(f["settled"]), "the first request completed")
    skipped = v.require(
        bulk.status == 200 and model not in unloaded_ids(bulk),
        f"bulk unload answered at once without the unpublished model (unloaded={unloaded_ids(bulk)})",
    )
    # The reply is the evidence: one that skipped the load but was read only as the load
    # finished shows nothing about waiting (a busy machine reads replies late).
    if bulk.t_done < first.t_done - margin_s(f):
        v.require(True, "it did not wait for the load in progress")
    elif skipped:
        v.not_forced(
            f"the bulk unload's reply was read {ms(bulk.t_done - first.t_done)} ms from the first request's, so "
            "whether it answered before the load finished is unseen"
        )
    all_ok(v, [first], "the first request")
    v.require(bool(f.get("ended_loaded")), "the model ended loaded (the skipped load was published)")
    return v


register("legacy.unpublished_skip", unpublished_skip)


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


register("legacy.guard_serializes", guard_serializes)


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


register("legacy.wedged_text", wedged_text)


def status_fields(f: Facts) -> Verdict:
    """F1.legacy_admission: the legacy /v1/models lists the models without slot fields."""
    v = Verdict()
    entries = f.get("entries") or []
    present = sorted({k for keys in entries if keys is not None for k in keys if k in SLOT_FIELDS})
    v.require(bool(entries) and not present, f"legacy /v1/models has no slot fields (found {present})")
    return v


register("legacy.status_fields", status_fields)


def registration_forms(f: Facts) -> Verdict:
    """F1.legacy_admission: every explicit slots form of a registration is rejected 400 with
    the legacy text, and nothing was registered."""
    v = Verdict()
    if not f["results"]:
        raise KeyError("no registration was recorded")
    for r in f["results"]:
        v.require(
            r["status"] == 400 and r["message"] == LEGACY_SLOTS_TEXT,
            f"slots={r['slots']!r} rejected 400 '{LEGACY_SLOTS_TEXT}' (got {r['status']})",
        )
    before, after = f["models_before"], f["models_after"]
    if isinstance(before, int) and isinstance(after, int):
        v.require(before == after, f"registered model count unchanged ({before} -> {after})")
    else:
        v.pend("GET /health publishes no `models` count, so whether anything was registered is not observable")
    return v


register("legacy.registration_forms", registration_forms)


def runtime_kept(f: Facts) -> Verdict:
    """F2 runtime selection on the unflagged runtime: a registration without slots is served
    and listed without slot fields (it did not switch to the parallel runtime)."""
    v = Verdict()
    all_ok(v, named(f, "register-omitted", "after-register-omitted", "models-after"), "the registration and a request")
    keys = f["entry_keys"]
    if keys is None:
        raise KeyError("the registered entry was not listed in /v1/models")
    if "id" not in keys:
        raise KeyError("the listed entry has no id")
    present = sorted(k for k in keys if k in SLOT_FIELDS)
    v.require(not present, f"the new entry has no slot fields (found {present})")
    return v


register("legacy.runtime_kept", runtime_kept)


def config_forms(f: Facts) -> Verdict:
    """F1.legacy_admission: an unflagged start with a slots field in its config exits 1
    with the rejection text."""
    v = Verdict()
    if not f["starts"]:
        raise KeyError("no unflagged start was recorded")
    for s in f["starts"]:
        v.require(
            bool(s["exited"]) and s["exit_code"] == 1 and bool(s["message"]),
            f"config slots={s['slots']!r}: startup failed with exit 1 and the rejection text",
        )
    return v


register("legacy.config_forms", config_forms)
