"""F4: clients that go away (running, queued, waiting for the first load) and SIGTERM with
work in flight or stalled sockets. The probes record (exit codes, drain times and replies
included); parval.framework.judges_f4 judges.

A disconnect cannot cancel backend work, so the contract asks for finite drain: counters
return to zero and the next wave gets every slot with exact outputs. Shutdown must drain
finite work and exit 0 by itself; a process that had to be killed never counts as a
graceful drain.
"""

from __future__ import annotations

import signal
import time

import anyio
import anyio.abc

from parval.framework.judges_f4 import drain_policy
from parval.framework.observed import Facts, Obs, flight, named
from parval.framework.probe_context import FrameworkContext
from parval.framework.probes_f1 import tested_counts
from parval.framework.rig import Flight, Rig, open_rig
from parval.framework.scenarios import ATTEMPTS, attempts, enqueue, occupy, reset, timing
from parval.jsontypes import JsonObject
from parval.server import reaper
from parval.server.process import ServerProcess


async def disconnect_probe(ctx: FrameworkContext) -> None:
    if ctx.too_short("F4.disconnect", "disconnect"):
        return
    n = max(tested_counts(ctx))
    model = ctx.model_id
    async with open_rig(ctx, "f4-disconnect", ctx.launch_spec([ctx.entry(slots=n)], flagged=True), [model]) as rig:
        await rig.run("warm", model)
        await running_disconnect(rig, model, n)
        await queued_disconnect(rig, model, n)
        await init_disconnect(rig, model, n)


async def next_wave_exact(rig: Rig, model: str, n: int, obs: Obs) -> list[Flight]:
    """After disconnects: a wave of n requests, and whether it held every slot at once
    (judged by judges_f4.next_wave_exact)."""
    t = timing(rig)
    t0 = time.monotonic()
    wave = [await rig.start_run(f"next{i}", model) for i in range(n)]
    full = await rig.wait(lambda s: s.active(model) >= n, t.slack_s, after=t0)
    obs["next_settled"] = await rig.settle(wave, t.slack_s)
    obs["next_full"] = full is not None
    obs["next_wave"] = [f.label for f in wave]
    return wave


async def running_disconnect(rig: Rig, model: str, n: int) -> None:
    """Judged by judges_f4.running_disconnect."""
    t = timing(rig)
    obs = Obs(count=n)
    flights = await occupy(rig, model, n, obs)
    dropped = flights[: max(1, n // 2 + n % 2)]
    for f in dropped:
        f.cancel()
    obs["settled"] = await rig.settle(flights, t.slack_s)
    obs["drained"] = await rig.drained([model], t.slack_s)
    wave = await next_wave_exact(rig, model, n, obs)
    facts = rig.observed(
        obs, [*flights, *wave], occupants=[f.label for f in flights], dropped=[f.label for f in dropped]
    )
    rig.ctx.findings.observe(
        "F4.disconnect",
        f"running_disconnect@{n}",
        "f4.running_disconnect",
        facts,
        dropped=len(dropped),
        timeline=rig.timeline(flights),
    )


async def queued_disconnect(rig: Rig, model: str, n: int) -> None:
    """Judged by judges_f4.queued_disconnect."""
    t = timing(rig)
    obs = Obs(count=n)
    occupants = await occupy(rig, model, n, obs)
    queued: list[Flight] = []
    for i in range(2):
        queued.append(await enqueue(rig, model, f"queued{i}", obs))
    for f in queued:
        f.cancel()
    obs["settled"] = await rig.settle([*occupants, *queued], t.slack_s)
    obs["drained"] = await rig.drained([model], t.slack_s)
    wave = await next_wave_exact(rig, model, n, obs)
    facts = rig.observed(
        obs, [*occupants, *queued, *wave], occupants=[f.label for f in occupants], queued=[f.label for f in queued]
    )
    rig.ctx.findings.observe(
        "F4.disconnect",
        f"queued_disconnect@{n}",
        "f4.queued_disconnect",
        facts,
        timeline=rig.timeline([*occupants, *queued]),
    )


async def init_disconnect(rig: Rig, model: str, n: int) -> None:
    """Judged by judges_f4.init_disconnect."""
    t = timing(rig)
    obs = Obs(count=n)
    await reset(rig, [model])
    first = await rig.start_run("cold", model)
    during = await rig.wait(lambda s: s.active(model) >= 1 and s.loaded(model) is False, t.slack_s)
    # Captured now: whether the client could still leave while the first load ran.
    obs["load_seen"] = during is not None
    obs["first_finished"] = first.finished
    obs["left_during_load"] = during is not None and not first.finished
    first.cancel()
    obs["settled"] = await rig.settle([first], t.slack_s)
    obs["drained"] = await rig.drained([model], t.slack_s)
    wave = await next_wave_exact(rig, model, n, obs)
    rig.ctx.findings.observe(
        "F4.disconnect", "init_disconnect", "f4.init_disconnect", rig.observed(obs, [first, *wave])
    )


async def shutdown_probe(ctx: FrameworkContext) -> None:
    """SIGTERM with n running requests and one queued: finite work drains, exit 0 (judged by
    judges_f4.sigterm_inflight)."""
    t = ctx.timing
    assert t is not None
    n = max(tested_counts(ctx))
    model = ctx.model_id
    async with open_rig(ctx, "f4-shutdown", ctx.launch_spec([ctx.entry(slots=n)], flagged=True), [model]) as rig:
        obs = Obs(count=n, grace_s=ctx.grace_s)
        await rig.run("warm", model)
        running = await occupy(rig, model, n, obs)
        queued = await enqueue(rig, model, "queued", obs)
        t_term = time.monotonic()
        rig.stop_info, unanswered = await stop_after_drain(rig, [*running, queued], ctx.grace_s)
        drain_s = time.monotonic() - t_term
        obs["settled"] = await rig.settle([*running, queued], 10.0)
        obs["unanswered_at_stop"] = unanswered
        info = rig.stop_info
        stopped_line = "audiocpp_server stopped" in _stdout(rig)
        facts = rig.observed(
            obs,
            [*running, queued],
            stop=info,
            drain_s=drain_s,
            t_term=rig.rel(t_term),
            running=[f.label for f in running],
            queued=queued.label,
            stopped_line=stopped_line,
        )
        policy = drain_policy(named(facts, *facts["running"]), flight(facts, queued.label))
        delivered = [f for f in (*running, queued) if f.status == 200]
        ctx.findings.observe(
            "F4.shutdown",
            f"sigterm_inflight@{n}",
            "f4.sigterm_inflight",
            facts,
            drain_s=round(drain_s, 4),
            stop=info,
            delivered=len(delivered),
            in_flight=n + 1,
            policy=policy,
            stopped_line=stopped_line,
            timeline=rig.timeline([*running, queued]),
        )


async def stop_after_drain(rig: Rig, work: list[Flight], grace_s: float) -> tuple[JsonObject, list[str]]:
    """SIGTERM, then wait for the process to exit by itself: up to `grace_s` after SIGTERM
    and, while in-flight work is still being answered, up to `grace_s` after the last reply
    (a busy machine drains slower; the server is not killed for that). Then SIGKILL.
    Returns the stop record and the flights still unanswered when parval stopped waiting."""
    server = rig.server
    t_term = time.monotonic()
    reaper.signal_group(server.pid, signal.SIGTERM)
    cap = t_term + grace_s + 8 * timing(rig).slack_s
    while server.returncode() is None:
        now = time.monotonic()
        if now >= cap:
            break
        busy = any(not f.finished for f in work)
        last = max((f.t_done for f in work if f.reply is not None), default=t_term)
        if not busy and now >= max(t_term, last) + grace_s:
            break
        await anyio.sleep(0.02)
    waited = time.monotonic() - t_term
    unanswered = [f.label for f in work if f.reply is None]
    info = await server.stop(0.5)  # already gone: records the exit; else SIGKILL
    info = {**info, "signal": "SIGTERM", "grace_s": grace_s, "waited_s": round(waited, 4)}
    return info, unanswered


async def stalled_io_probe(ctx: FrameworkContext) -> None:
    """SIGTERM with a stalled header and a stalled body connection and no finite work: the
    listener must cancel socket I/O and exit by itself (judged by judges_f4.stalled_socket_io).

    The stalled sockets are left as long as the grace before SIGTERM, so the server has read
    their bytes (on a busy machine its readers may not have run at once). A control
    connection stalls from a grace before them until SIGTERM, as long as the stalled sockets
    may be held, then finishes its request: its answer shows the server keeps reading a
    connection stalled that long, so an exit with the stalled sockets open was not its read
    timeout ending them. If the process is still running the grace after SIGTERM, whether it still held
    the stalled sockets open is recorded, they are closed, and whether it exits then is
    recorded. An exit that came only after the close may be a slow shutdown on a busy
    machine: the probe tries again on a fresh start with the grace doubled each time, and
    only the last attempt (the longest grace) can show the listener waiting on stalled I/O."""
    bound = ctx.options.stalled_io_grace_s
    facts = await attempts(
        "f4.stalled_socket_io", lambda i: _stalled_io_attempt(ctx, bound * 2**i, final=i == ATTEMPTS - 1)
    )
    stop = (facts.get("attempts") or [facts])[-1].get("stop")
    ctx.findings.observe("F4.shutdown", "stalled_socket_io", "f4.stalled_socket_io", facts, stop=stop)


async def _stalled_io_attempt(ctx: FrameworkContext, bound: float, *, final: bool) -> Facts:
    """One attempt of the stalled-I/O shutdown with `bound` seconds of grace before the
    stalled sockets are closed (and a control connection stalled as long before SIGTERM)."""
    model = ctx.model_id
    async with open_rig(ctx, "f4-stalled-io", ctx.launch_spec([ctx.entry()], flagged=True), [model]) as rig:
        obs = Obs(bound_s=bound)
        host, port = rig.server.host, rig.server.port
        control = await anyio.connect_tcp(host, port)
        await control.send(b"GET /health HTTP/1.1\r\nHost: parval\r\n")
        t_control = time.monotonic()
        await anyio.sleep(bound)
        header = await anyio.connect_tcp(host, port)
        await header.send(b"POST /v1/tasks/run HTTP/1.1\r\nHost: parval\r\n")
        body = await anyio.connect_tcp(host, port)
        await body.send(
            b"POST /v1/tasks/run HTTP/1.1\r\nHost: parval\r\nContent-Type: application/json\r\n"
            b'Content-Length: 1000\r\n\r\n{"model":'
        )
        t_stalled = time.monotonic()
        # Let the server read the stalled bytes before SIGTERM (a busy machine may not have
        # scheduled its readers yet): a connection never read is not stalled mid-request.
        await anyio.sleep(bound)
        obs["settle_s"] = round(bound, 4)
        obs["control_stall_s"] = round(time.monotonic() - t_control, 4)
        obs["control_answered"] = await _finish(control, timing(rig).slack_s)
        server = rig.server
        t_term = time.monotonic()
        obs["stalled_at_term_s"] = round(t_term - t_stalled, 4)
        reaper.signal_group(server.pid, signal.SIGTERM)
        exited = await _exit_within(server, bound)
        closed_at = None
        held = None
        if not exited:
            # Still running: did it still hold the stalled connections open (no reply, no close)?
            held = server.returncode() is None and await _held(header) and await _held(body)
        for stream in (header, body):
            await stream.aclose()
        if not exited:
            closed_at = time.monotonic() - t_term
            exited = await _exit_within(server, bound)
        exited_at = time.monotonic() - t_term if exited else None
        rig.stop_info = {**(await server.stop(0.5)), "signal": "SIGTERM", "grace_s": bound}
        return rig.observed(
            obs,
            [],
            stop=rig.stop_info,
            t_term=rig.rel(t_term),
            closed_at_s=None if closed_at is None else round(closed_at, 4),
            exited_at_s=None if exited_at is None else round(exited_at, 4),
            held_at_close=held,
            sockets=["stalled header", "stalled body"],
            final_attempt=final,
        )


async def _held(stream: anyio.abc.SocketStream) -> bool:
    """Whether the server still holds a stalled connection open: nothing (no reply, no
    close) arrives on it within a moment."""
    with anyio.move_on_after(0.05):
        try:
            await stream.receive(1)
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            pass
        return False
    return True


async def _finish(stream: anyio.abc.SocketStream, timeout_s: float) -> bool:
    """End a stalled GET's headers and read its status line (True when one came back)."""
    with anyio.move_on_after(timeout_s):
        await stream.send(b"\r\n")
        got = b""
        while b"\r\n" not in got:
            chunk = await stream.receive(4096)
            if not chunk:
                break
            got += chunk
        await stream.aclose()
        return got.startswith(b"HTTP/1.")
    await stream.aclose()
    return False


async def _exit_within(server: ServerProcess, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while server.returncode() is None:
        if time.monotonic() >= deadline:
            return False
        await anyio.sleep(0.02)
    return True


def _stdout(rig: Rig) -> str:
    try:
        return rig.server.stdout_path.read_text("utf-8", "replace")
    except OSError:
        return ""
