"""F4: clients that go away (running, queued, waiting for the first load) and SIGTERM with
work in flight or stalled sockets.

A disconnect cannot cancel backend work, so the contract asks for finite drain: counters
return to zero and the next wave gets every slot with exact outputs. Shutdown must drain
finite work and exit 0 by itself; a process that had to be killed never counts as a
graceful drain.
"""

from __future__ import annotations

import time

import anyio

from parval.framework.checks import Verdict
from parval.framework.context import Context
from parval.framework.probes_f1 import tested_counts
from parval.framework.rig import Flight, Rig, open_rig
from parval.framework.scenarios import all_ok, enqueue, occupy, outputs_match, reset, timing
from parval.status import Status


async def disconnect_probe(ctx: Context) -> None:
    t = ctx.timing
    assert t is not None
    if (short := t.too_short(ctx.options.min_service_ms)) is not None:
        ctx.findings.add("F4.disconnect", "disconnect", Status.PENDING, short)
        return
    n = max(tested_counts(ctx))
    model = ctx.model_id
    async with open_rig(ctx, "f4-disconnect", ctx.launch_spec([ctx.entry(slots=n)], flagged=True),
                        [model]) as rig:
        await rig.run("warm", model)
        await running_disconnect(rig, model, n)
        await queued_disconnect(rig, model, n)
        await init_disconnect(rig, model, n)


async def next_wave_exact(rig: Rig, model: str, n: int, v: Verdict) -> None:
    """After disconnects: every slot is usable again and outputs are exact."""
    t = timing(rig)
    t0 = time.monotonic()
    wave = [await rig.start_run(f"next{i}", model) for i in range(n)]
    full = await rig.wait(lambda s: s.active(model) >= n, t.slack_s, after=t0)
    v.require(await rig.settle(wave, t.slack_s), "the next wave completed")
    v.require(full is not None, f"the next wave held all {n} slot(s) at once (no stranded lease)")
    all_ok(v, wave, "the next wave")
    outputs_match(rig, v, "base", wave, "the next wave")


async def running_disconnect(rig: Rig, model: str, n: int) -> None:
    t = timing(rig)
    v = Verdict()
    flights = await occupy(rig, model, n, v)
    dropped = flights[: max(1, n // 2 + n % 2)]
    for f in dropped:
        f.cancel()
    v.require(await rig.settle(flights, t.slack_s), "client tasks ended")
    v.require(await rig.drained([model], t.slack_s), "counters drained after the dropped requests finished")
    all_ok(v, [f for f in flights if f not in dropped], "the requests that stayed")
    await next_wave_exact(rig, model, n, v)
    rig.ctx.findings.judge("F4.disconnect", f"running_disconnect@{n}", v, dropped=len(dropped),
                           timeline=rig.timeline(flights))


async def queued_disconnect(rig: Rig, model: str, n: int) -> None:
    t = timing(rig)
    v = Verdict()
    occupants = await occupy(rig, model, n, v)
    queued: list[Flight] = []
    for i in range(2):
        queued.append(await enqueue(rig, model, f"queued{i}", i + 1, v))
    for f in queued:
        f.cancel()
    v.require(await rig.settle([*occupants, *queued], t.slack_s), "client tasks ended")
    v.require(await rig.drained([model], t.slack_s),
              "queued_requests and active_slots drained (abandoned waiters ran or were removed)")
    all_ok(v, occupants, "occupants")
    await next_wave_exact(rig, model, n, v)
    rig.ctx.findings.judge("F4.disconnect", f"queued_disconnect@{n}", v,
                           timeline=rig.timeline([*occupants, *queued]))


async def init_disconnect(rig: Rig, model: str, n: int) -> None:
    t = timing(rig)
    v = Verdict()
    await reset(rig, [model])
    first = await rig.start_run("cold", model)
    during = await rig.wait(lambda s: s.active(model) >= 1 and s.loaded(model) is False, t.slack_s)
    if during is None or first.finished:
        v.pend("the first load finished before the client could leave during it")
    first.cancel()
    v.require(await rig.settle([first], t.slack_s), "the client task ended")
    v.require(await rig.drained([model], t.slack_s), "the abandoned load finished and released its lease")
    await next_wave_exact(rig, model, n, v)
    rig.ctx.findings.judge("F4.disconnect", "init_disconnect", v)


async def shutdown_probe(ctx: Context) -> None:
    """SIGTERM with n running requests and one queued: finite work drains, exit 0."""
    t = ctx.timing
    assert t is not None
    n = max(tested_counts(ctx))
    model = ctx.model_id
    async with open_rig(ctx, "f4-shutdown", ctx.launch_spec([ctx.entry(slots=n)], flagged=True),
                        [model]) as rig:
        v = Verdict()
        await rig.run("warm", model)
        running = await occupy(rig, model, n, v)
        queued = await enqueue(rig, model, "queued", 1, v)
        t_term = time.monotonic()
        rig.stop_info = await rig.server.stop(ctx.grace_s)
        drain_s = time.monotonic() - t_term
        await rig.settle([*running, queued], 10.0)
        info = rig.stop_info
        v.require(not info.get("killed"), f"the server exited by itself within {ctx.grace_s:g} s "
                  "(a SIGKILL is never a graceful drain)")
        v.require(info.get("exit_code") == 0, f"exit code 0 (got {info.get('exit_code')})")
        policy = shutdown_policy(v, running, queued)
        delivered = [f for f in (*running, queued) if f.status == 200]
        outputs_match(rig, v, "base", delivered, "delivered responses")
        ctx.findings.judge("F4.shutdown", f"sigterm_inflight@{n}", v, drain_s=round(drain_s, 4),
                           stop=info, delivered=len(delivered), in_flight=n + 1, policy=policy,
                           stopped_line="audiocpp_server stopped" in _stdout(rig),
                           timeline=rig.timeline([*running, queued]))


def shutdown_policy(v: Verdict, running: list[Flight], queued: Flight) -> dict[str, list[str]]:
    """The documented drain policy: shutdown waits for finite in-flight work. Every request
    admitted before SIGTERM is answered 200; a queued one is answered or rejected with an
    HTTP error; none may lose its connection without a reply. Returns which was which."""
    policy: dict[str, list[str]] = {"answered": [], "rejected": [], "no_reply": []}
    for f in (*running, queued):
        key = "answered" if f.status == 200 else ("no_reply" if f.status is None else "rejected")
        policy[key].append(f.label)
    v.require(not policy["no_reply"], "every request in flight at SIGTERM got an HTTP reply"
              + (f" (connection dropped without one: {', '.join(policy['no_reply'])})" if policy["no_reply"] else ""))
    lost = [f"{f.label}={f.status}" for f in running if f.status not in (200, None)]
    v.require(not lost, "every running request was drained (answered 200)"
              + (f" (rejected: {', '.join(lost)})" if lost else ""))
    return policy


async def stalled_io_probe(ctx: Context) -> None:
    """SIGTERM with a stalled header and a stalled body connection: the listener must cancel
    socket I/O and exit by itself (no finite work is pending)."""
    model = ctx.model_id
    bound = ctx.options.stalled_io_grace_s
    async with open_rig(ctx, "f4-stalled-io", ctx.launch_spec([ctx.entry()], flagged=True), [model]) as rig:
        v = Verdict()
        host, port = rig.server.host, rig.server.port
        header = await anyio.connect_tcp(host, port)
        await header.send(b"POST /v1/tasks/run HTTP/1.1\r\nHost: parval\r\n")
        body = await anyio.connect_tcp(host, port)
        await body.send(b"POST /v1/tasks/run HTTP/1.1\r\nHost: parval\r\nContent-Type: application/json\r\n"
                        b"Content-Length: 1000\r\n\r\n{\"model\":")
        await anyio.sleep(0.2)
        t_term = time.monotonic()
        rig.stop_info = await rig.server.stop(bound)
        drain_s = time.monotonic() - t_term
        for stream in (header, body):
            await stream.aclose()
        info = rig.stop_info
        v.require(not info.get("killed") and info.get("exit_code") == 0,
                  f"exited 0 by itself within {bound:g} s with stalled header/body sockets "
                  f"(killed={info.get('killed')}, exit={info.get('exit_code')}, {drain_s:.2f} s)")
        ctx.findings.judge("F4.shutdown", "stalled_socket_io", v, drain_s=round(drain_s, 4), stop=info)


def _stdout(rig: Rig) -> str:
    try:
        return rig.server.stdout_path.read_text("utf-8", "replace")
    except OSError:
        return ""
