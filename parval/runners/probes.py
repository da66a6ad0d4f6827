"""Probes beyond the waves: execution-path checks (X1/X3) and the execution modes start
(M6), on fresh servers (model recovery, M4, is in recovery.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from parval.errors import ServerStartError
from parval.procedure.server_facts import LEGACY_SLOTS_TEXT, ROUTE_LOAD, SLOTS_FORMS
from parval.rundir.event_types import ResizeStep, X1ConfigProbeEvent, X1RegistrationProbeEvent, X3ResizeProbeEvent
from parval.runners.start import Start
from parval.server.process import spawn, wait_ready
from parval.server.status_poller import StatusSample

if TYPE_CHECKING:
    from parval.runners.campaign_context import CampaignContext


async def x1_config_rejection(c: CampaignContext) -> None:
    """An unflagged candidate must refuse to start with any explicit slots field."""
    for value in SLOTS_FORMS:
        spec = c.launch("candidate", flagged=False, slots=value)
        directory = c.run_dir / "servers" / f"x1-config-slots-{value}-{c.log._seq}"
        server = spawn(spec, directory, f"x1-config-slots-{value}")
        try:
            await wait_ready(server, min(30.0, c.plan.timeouts["ready_s"]))
            rejected, exit_code = False, None
        except ServerStartError as exc:
            # Only a server that exited by itself rejected the config; one killed at the
            # readiness deadline proves nothing.
            rejected = "before becoming ready" in exc.message
            exit_code = server.exit_code
        stderr = server.stderr_text()
        await server.stop(5.0)
        c.log.write(
            X1ConfigProbeEvent(
                kind="x1_config_probe",
                value=value,
                rejected=rejected,
                exit_code=exit_code,
                message_ok=LEGACY_SLOTS_TEXT in stderr,
                stderr_tail=stderr[-600:],
            )
        )


async def x1_registration_probe(c: CampaignContext, st: Start) -> None:
    """Legacy registration rejects every explicit slots form with the real 400."""
    for i, value in enumerate(SLOTS_FORMS):
        entry = c.model_entry(slots=value, id=f"{c.plan.model_id}-x1-{i}")
        reply = await st.client.post(ROUTE_LOAD, entry)
        c.log.write(
            X1RegistrationProbeEvent(
                kind="x1_registration_probe",
                run=st.name,
                value=value,
                reply=reply.summary(),
                message=reply.error_message(),
                ok=reply.status == 400 and reply.error_message() == LEGACY_SLOTS_TEXT,
            )
        )


CAPACITY_TEXT = "does not support the requested slots"


async def x3_resize_probe(c: CampaignContext, st: Start) -> None:
    """Resizing across one (1→2→1→2→1) keeps the parallel lifecycle: slot fields stay, the
    pool republishes, and the first output after each resize equals the cold reference.

    The plan's counts do not limit this: only the model's capacity does. A server that
    refuses two slots with its capacity message makes the probe inapplicable, not failed."""
    base = c.requests[0]
    steps: list[ResizeStep] = []
    refused: str | None = None
    for i, slots in enumerate((2, 1, 2, 1)):
        st.phases.set(f"x3_resize:{slots}")
        reply = await st.client.post(ROUTE_LOAD, c.model_entry(slots=slots))
        message = reply.error_message() or ""
        if i == 0 and reply.status == 400 and CAPACITY_TEXT in message:
            refused = message
            steps.append({"slots": slots, "reply": reply.summary(), "capacity_refused": True})
            break

        def resized(s: StatusSample, n: int = slots) -> bool:
            return s.slots == n

        sample = await st.wait_status(resized, 2.0, needs=("slots",))
        step: ResizeStep = {
            "slots": slots,
            "reply": reply.summary(),
            "status_fields": bool(sample and sample.active is not None),
            "slots_seen": sample.slots if sample else None,
        }
        if reply.status == 200:
            # The resize rebuilt the pool: the next request is the first after a load.
            out = await st.client.post(c.settings.route, c.body(base))
            st.record("x3_after_resize", i, base.name, out, history=[], slot=0, resized_to=slots)
            step["output_status"] = out.status
        steps.append(step)
        await st.check_alive(f"resize to {slots}")
    st.reset_histories()
    st.phases.set("idle")
    ok = not refused and len(steps) == 4 and all(s["reply"]["status"] == 200 and s["status_fields"] for s in steps)
    c.log.write(X3ResizeProbeEvent(kind="x3_resize_probe", run=st.name, steps=steps, ok=ok, capacity_refused=refused))


async def modes_start(c: CampaignContext, n: int) -> None:
    """M6 streaming and native batch, only for the modes the plan admits."""
    admit = set(c.plan.model["admit_modes"])
    if not admit & {"streaming", "batch"}:
        return
    from parval.runners.modes import batch_checks, streaming_checks

    spec = c.launch("candidate", flagged=True, slots=n)
    async with c.start("modes", "modes", spec, n) as st:
        if "streaming" in admit:
            await streaming_checks(c, st, n)
        if "batch" in admit:
            await batch_checks(c, st, n)
