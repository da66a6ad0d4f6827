"""Single-slot reference runs (M1): upstream legacy twice (serial repeat across two fresh
starts), unflagged candidate, flagged capacity-one candidate; cold, warm and repeated-warm
for every request; measured serial N-request times for the performance report; history
replays for cache-sensitive models; the comparator's negative control."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from parval.jsontypes import JsonObject, JsonValue
from parval.outputs.compare import canonicalize, same
from parval.outputs.planted import plant_mismatch
from parval.procedure.names import HISTORY_PREFIX, REF_BASELINE_A, REF_CAP1
from parval.rundir.event_types import NegativeControlEvent, PerfEvent, ProbeEvent
from parval.rundir.events import read_events
from parval.runners.start import Start

if TYPE_CHECKING:
    from parval.runners.campaign_context import CampaignContext

PERF_RUNS = {REF_BASELINE_A: "base_one_slot_serial", REF_CAP1: "candidate_one_slot_serial"}


async def reference_run(c: CampaignContext, name: str, role: str, flagged: bool) -> None:
    ui = bool(c.plan.server["ui_management"]) and role == "candidate"
    spec = c.launch(role, flagged=flagged, ui_management=ui)
    async with c.start(name, "reference", spec, 1, exe_role=role) as st:
        for i, req in enumerate(c.requests):
            if i > 0:
                await unload_all(c, st)
            history: list[str] = []
            for phase in ("ref_cold", "ref_warm", "ref_warm2"):
                st.phases.set(f"{phase}:{req.name}")
                reply = await st.client.post(c.settings.route, c.body(req))
                st.record(phase, 0, req.name, reply, history=list(history), slot=0)
                history.append(req.name)
                await st.check_alive(phase)
        st.phases.set("idle")
        if ui and not flagged:
            from parval.runners.probes import x1_registration_probe

            await x1_registration_probe(c, st)
        if ui and flagged:
            from parval.runners.probes import x3_resize_probe

            await x3_resize_probe(c, st)
        if name in PERF_RUNS and c.plan.performance["enabled"]:
            await perf_serial(c, st, PERF_RUNS[name])


async def unload_all(c: CampaignContext, st: Start) -> None:
    st.phases.set("unload")
    reply = await st.client.post("/v1/tasks/unload_all_models", {})
    st.log.write(ProbeEvent(kind="probe", run=st.name, attempt=st.attempt, name="unload_all", reply=reply.summary()))
    st.reset_histories()
    await st.settle("unload")
    await st.check_alive("unload_all")


async def perf_serial(c: CampaignContext, st: Start, series: str) -> None:
    """Measured serial N-request time (never N x one request) for every count."""
    base = c.requests[0]
    for n in c.plan.counts:
        for rep in range(c.plan.performance["warm_repeats"]):
            st.phases.set(f"perf_serial:{n}:{rep}")
            t0 = time.monotonic()
            latencies: list[JsonValue] = []
            failures = 0
            for _ in range(n):
                reply = await st.client.post(c.settings.route, c.body(base))
                latencies.append(round(reply.elapsed_s, 6))
                failures += reply.outcome != "ok"
                st.record("perf_serial", rep, base.name, reply, history=None, slot=0, perf_n=n)
            st.log.write(
                PerfEvent(
                    kind="perf",
                    run=st.name,
                    attempt=st.attempt,
                    series=series,
                    count=n,
                    repeat=rep,
                    batch_s=round(time.monotonic() - t0, 6),
                    latencies_s=latencies,
                    failures=failures,
                )
            )
    st.phases.set("idle")


def _histories_to_replay(c: CampaignContext, n: int) -> list[list[str]]:
    from parval.rundir.event_index import build_records

    rec = build_records(read_events(c.log.path))  # complete attempts only
    keys: set[str] = set()
    for run in rec.count_runs(n):
        for e in rec.requests(run):
            if (ref := e["ref"]) is not None and ref.startswith("hist:"):
                keys.add(ref)
    seqs = sorted((k[5:].split(">") for k in keys), key=len, reverse=True)
    chosen: list[list[str]] = []
    for seq in seqs:
        if not any(other[: len(seq)] == seq for other in chosen):
            chosen.append(seq)
    return chosen


async def history_replays(c: CampaignContext, n: int) -> None:
    """Reproduce every observed slot history on a fresh single-slot baseline process."""
    by_name = {r.name: r for r in c.requests}
    # A history naming a request this plan does not hold cannot be replayed: its outputs
    # keep no reference, and their comparisons stay unresolved rather than the campaign stopping.
    replayable = [seq for seq in _histories_to_replay(c, n) if all(name in by_name for name in seq)]
    for k, seq in enumerate(replayable):
        spec = c.launch("baseline", flagged=False)
        name = f"{HISTORY_PREFIX}{n}-{k}"
        async with c.start(name, "history", spec, 1, exe_role="baseline") as st:
            history: list[str] = []
            for req_name in seq:
                req = by_name[req_name]
                reply = await st.client.post(c.settings.route, c.body(req))
                st.record("history_ref", k, req_name, reply, history=list(history), slot=0)
                history.append(req_name)
            await st.check_alive("history replay")


async def negative_control(c: CampaignContext) -> None:
    """Plant one flipped byte in a real reference and compare it through the same path."""
    body: bytes | None = None
    for e in read_events(c.log.path):
        if (
            e.get("kind") == "request"
            and e.get("phase") == "ref_cold"
            and e.get("artifact")
            and (e.get("output") or {}).get("valid")
        ):
            body = c.store.path(e["artifact"], "json").read_bytes()
            source: JsonObject = {"run": e["run"], "req": e["req"], "artifact": e["artifact"]}
            break
    if body is None:
        c.log.write(
            NegativeControlEvent(kind="negative_control", caught=None, reason="no valid reference output to plant into")
        )
        return
    planted = plant_mismatch(body)
    ref = canonicalize(body, c.settings.volatile)
    got = canonicalize(planted, c.settings.volatile)
    digest = c.store.put(planted, "json")
    c.log.write(
        NegativeControlEvent(
            kind="negative_control",
            caught=not same(got.canon, ref.canon),
            source=source,
            reference_canon=ref.canon,
            planted_canon=got.canon,
            planted_artifact=digest,
        )
    )
