"""One start of a plan's server, timed (`parval init --measure`): launch to ready, the first
request (which loads a lazy model), the slowest later request and the stop. The plan's
timeouts are then set from these (parval.plan.starter.measured_timeouts) instead of guessed.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import anyio

from parval.errors import ServerStartError
from parval.plan.load import Plan, model_entry
from parval.plan.starter import StartTimes
from parval.server.client import OK, Client
from parval.server.launch import launch_spec
from parval.server.process import spawn, wait_ready

ROUTE_RUN = "/v1/tasks/run"
REPEATS = 2  # each of the plan's requests after the first, serially


async def _time_start(plan: Plan, role: str, directory: Path) -> StartTimes:
    t = plan.timeouts
    spec = launch_spec(plan, role, [model_entry(plan)], flagged=False)
    server = spawn(spec, directory, f"measure-{role}")
    try:
        ready = await wait_ready(server, t["ready_s"])
        async with Client(
            server.base_url,
            max_connections=1,
            request_timeout_s=t["request_s"],
            max_body_bytes=int(t["max_response_mib"] * 1024 * 1024),
        ) as client:
            times: list[float] = []
            for req in [plan.requests()[0], *plan.requests() * REPEATS]:
                reply = await client.post(ROUTE_RUN, {"model": plan.model_id, "request": req.body})
                if reply.outcome != OK:
                    raise ServerStartError(
                        f"{server.name}: request {req.name!r} failed while measuring: "
                        f"{reply.error or reply.error_message() or reply.outcome} (HTTP {reply.status})",
                        log_tail=server.log_tail(),
                        hint="the plan's base request and variations must succeed on this server",
                    )
                times.append(reply.elapsed_s)
    finally:
        t0 = time.monotonic()
        await server.stop(t["shutdown_grace_s"])
        stopped = time.monotonic() - t0
    return StartTimes(
        executable=str(spec.executable),
        ready_s=ready,
        first_request_s=times[0],
        request_s=max(times[1:]),
        stop_s=stopped,
        requests=len(times),
    )


def time_one_start(plan: Plan, role: str = "candidate") -> StartTimes:
    """Start the plan's `role` server once (legacy runtime, the plan's model), send the base
    request and then every request of the plan twice, one at a time, and stop it. Its config
    and logs live in a temporary folder removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="parval-measure-") as tmp:
        return anyio.run(_time_start, plan, role, Path(tmp))
