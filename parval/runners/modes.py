"""M6 execution modes: concurrent SSE streams (with a client disconnecting mid-stream)
and concurrent native batches, each compared with the offline output of the same request."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from typing import TYPE_CHECKING, TypedDict

import anyio

from parval.rundir.event_types import BatchRecord, M6BatchEvent, M6StreamingEvent, StreamRecord
from parval.runners.start import Start
from parval.server.client import Reply

CUT_ON_PURPOSE = "client disconnected on purpose"  # Client.sse's reason when it stops early

if TYPE_CHECKING:
    from parval.runners.campaign_context import CampaignContext

# One SSE reply: the Reply and its events (parsed JSON, or '[DONE]').
Stream = tuple[Reply, list[object]]


class StreamWindow(TypedDict):
    """What the status polls showed during one streaming wave."""

    t0: float
    max_active: int | None
    counters_present: bool
    polls: int


def _speech_body(c: CampaignContext, request: dict[str, object]) -> dict[str, object]:
    body: dict[str, object] = {
        "model": c.plan.model_id,
        "input": request.get("text", ""),
        "stream": True,
        "stream_format": "sse",
    }
    for key in ("seed", "max_tokens", "temperature", "voice_ref", "reference_text", "language"):
        if key in request:
            body[key] = request[key]
    return body


def _pcm_hash(events: list[object]) -> tuple[str, int, bool]:
    """sha256 of the concatenated raw PCM deltas, byte count, and whether it ended cleanly."""
    h = hashlib.sha256()
    size = 0
    done = False
    for e in events:
        if isinstance(e, dict) and e.get("type") == "speech.audio.delta":
            raw = base64.b64decode(str(e.get("audio", "")))
            h.update(raw)
            size += len(raw)
        if e == "[DONE]":
            done = True
    return h.hexdigest(), size, done


async def warm_every_slot(c: CampaignContext, st: Start, n: int) -> list[str]:
    """One concurrent wave of the base request on every slot, so that each session has
    served once and the mode outputs that follow are warm: compared with the warm upstream
    reference, never with a cold one (or with an output of the candidate itself). The
    wave's outputs are recorded and compared like any other. Returns the slots' history."""
    from parval.server.waves import release_together

    base = c.requests[0]
    st.phases.set("modes_warmup")
    replies = await release_together(st.client, c.settings.route, [c.body(base)] * n)
    for reply in replies:
        st.record("modes_warmup", 0, base.name, reply, history=[])
    for h in st.histories[:n]:
        h.append(base.name)
    await st.check_alive("modes warm-up")
    return [base.name]


async def streaming_checks(c: CampaignContext, st: Start, n: int) -> None:
    base = c.requests[0]
    history = await warm_every_slot(c, st, n)
    body = _speech_body(c, base.body)

    async def streams(stop_first: bool) -> list[Stream]:
        results: dict[int, Stream] = {}  # by slot: every slot filled once the task group ends
        gate = anyio.Event()

        async def one(i: int) -> None:
            await gate.wait()
            stop = 1 if (stop_first and i == 0 and n > 1) else None
            results[i] = await st.client.sse("/v1/audio/speech", body, stop_after_events=stop)

        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(one, i)
            await anyio.sleep(0.01)
            gate.set()
        return [results[i] for i in range(n)]

    st.phases.set("streaming")
    windows: dict[str, StreamWindow] = {}

    async def timed(label: str, stop_first: bool) -> list[Stream]:
        t0 = time.monotonic()
        batch = await streams(stop_first)
        # Only this wave's samples: an earlier wave's leases must not count as overlap here.
        window = st.poller.window(t0, time.monotonic())
        actives = [s.active for s in window if s.ok and s.present and s.active is not None]
        windows[label] = {
            "t0": t0,
            "max_active": max(actives) if actives else None,
            "counters_present": bool(actives),
            "polls": len(actives),
        }
        return batch

    refs = {"concurrent": st.ref_key(base.name, history), "disconnect": st.ref_key(base.name, [*history, base.name])}
    concurrent = await timed("concurrent", False)
    disconnect = await timed("disconnect", True)
    drained = await st.drained(3.0)
    rows: list[StreamRecord] = []
    for label, batch in (("concurrent", concurrent), ("disconnect", disconnect)):
        t0 = windows[label]["t0"]
        for i, (reply, events) in enumerate(batch):
            digest, size, done = _pcm_hash(events)
            meant = label == "disconnect" and i == 0 and n > 1
            rows.append(
                {
                    "wave": label,
                    "index": i,
                    "ref": refs[label],
                    "status": reply.status,
                    "outcome": reply.outcome,
                    "error": reply.error,
                    "pcm_sha256": digest,
                    "bytes": size,
                    "done": done,
                    "events": len(events),
                    "disconnected": meant,
                    # Cut: the client closed the stream before the server ended it.
                    "cut": meant and reply.error == CUT_ON_PURPOSE and not done,
                    "t_send": round(reply.t_send - t0, 6),
                    "t_done": round(reply.t_done - t0, 6),
                }
            )
    event = M6StreamingEvent(
        kind="m6_streaming",
        run=st.name,
        attempt=st.attempt,
        count=n,
        streams=rows,
        max_active=windows["concurrent"]["max_active"],
        max_active_disconnect=windows["disconnect"]["max_active"],
        counters_present=windows["concurrent"]["counters_present"],
        polls=windows["concurrent"]["polls"],
        drained=drained,
    )
    st.log.write(event)
    st.phases.set("idle")


async def batch_checks(c: CampaignContext, st: Start, n: int) -> None:
    from parval.outputs.compare import batch_result_canon

    history = await warm_every_slot(c, st, n)
    payload = {"model": c.plan.model_id, "requests": [r.body for r in c.requests]}
    st.phases.set("batch")
    n_batches = max(2, n)
    batches: dict[int, Stream] = {}  # every batch filled once the task group ends

    async def one(i: int) -> None:
        batches[i] = await st.client.sse("/v1/tasks/batch", payload)

    async with anyio.create_task_group() as tg:
        for i in range(n_batches):
            tg.start_soon(one, i)
    results: list[BatchRecord] = []
    for b in range(n_batches):
        reply, events = batches[b]
        for e in events:
            if isinstance(e, dict) and e.get("type") == "task.batch.result":
                idx = int(e.get("index", -1))
                name = c.requests[idx].name if 0 <= idx < len(c.requests) else "?"
                raw = json.dumps(e.get("result")).encode()
                results.append(
                    {
                        "batch": b,
                        "index": idx,
                        "req": name,
                        # Every session served once before: a warm output (a
                        # cache-sensitive model's batch histories are not known: no ref).
                        "ref": None if st.cache_sensitive else st.ref_key(name, history),
                        "canon": batch_result_canon(e.get("result"), c.settings.volatile),
                        "artifact": st.store.put(raw, "json"),
                    }
                )
        results.append(
            {
                "batch": b,
                "status": reply.status,
                "outcome": reply.outcome,
                "error": reply.error_message() if reply.status and reply.status >= 400 else "",
            }
        )
    drained = await st.drained(3.0)
    st.log.write(
        M6BatchEvent(
            kind="m6_batch",
            run=st.name,
            attempt=st.attempt,
            count=n,
            batches=n_batches,
            expected_results=len(c.requests),
            results=results,
            drained=drained,
        )
    )
    st.phases.set("idle")
