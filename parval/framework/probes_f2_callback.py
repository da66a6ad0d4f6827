"""F2.callback_lease on the flagged runtime: a native batch response holds its lease until
the exchange completes or is dropped, and an unload waits for it. The probe records;
parval.framework.judges_f2 judges."""

from __future__ import annotations

import time
from typing import Any

import anyio

from parval.framework.context import Context
from parval.framework.facts import Facts, Obs
from parval.framework.rig import open_rig
from parval.framework.scenarios import attempts
from parval.status import Status


async def callback_probe(ctx: Context) -> None:
    """Native batch responses hold their lease until the exchange completes or is dropped."""
    t = ctx.timing
    assert t is not None
    model = ctx.model_id
    spec = ctx.launch_spec([ctx.entry(model)], flagged=True)
    async with open_rig(ctx, "f2-callback", spec, [model]) as rig:
        body = {"model": model, "requests": [ctx.base_request(), ctx.base_request()]}
        probe_reply, _ = await rig.client.sse("/v1/tasks/batch", body)
        if probe_reply.status != 200:
            ctx.findings.add(
                "F2.callback_lease",
                "native_batch",
                Status.PENDING,
                f"the model serves no native batch ({probe_reply.status}: "
                f"{probe_reply.error_message()[:120]}); deferred stream/batch callbacks need a "
                "streaming or native-batch model, or CTest T14/T18",
            )
            return

        async def attempt(i: int) -> Facts:
            """A batch in flight, then an unload; the exchange's end is awaited (bounded)
            before anything is judged, then a batch dropped after one event."""
            obs = Obs(model=model, attempt=i)
            done: dict[str, Any] = {}
            finished = anyio.Event()

            async def batch() -> None:
                done["t_send"] = time.monotonic()
                try:
                    done["reply"], done["events"] = await rig.client.sse("/v1/tasks/batch", body)
                finally:
                    finished.set()

            rig.tg.start_soon(batch)
            seen = await rig.wait(lambda s: s.active(model) >= 1, t.slack_s)
            obs["held"] = seen is not None
            obs["batch_done_before_unload"] = finished.is_set()
            manager = await rig.bulk("unload", [model])
            with anyio.move_on_after(t.slack_s):
                await finished.wait()
            obs["settled"] = await rig.settle([manager], t.slack_s) and finished.is_set()
            reply = done.get("reply")
            obs["batch_t_send"] = rig.rel(done["t_send"]) if "t_send" in done else None
            obs["batch_t_done"] = rig.rel(reply.t_done) if reply is not None else None
            obs["events"] = [
                {"type": e.get("type")} if isinstance(e, dict) else str(e)[:200] for e in done.get("events", [])
            ]
            dropped, _ = await rig.client.sse("/v1/tasks/batch", body, stop_after_events=1)
            obs["dropped"] = dropped.summary()
            obs["drained"] = await rig.drained([model], t.slack_s)
            after = await rig.run("after", model)
            return rig.observed(obs, [manager, after])

        facts = await attempts("f2.native_batch", attempt)
        ctx.findings.observe("F2.callback_lease", "native_batch", "f2.native_batch", facts)
