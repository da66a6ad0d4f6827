"""F2 registrations on the flagged runtime: invalid replacements keep a working
registration, runtime selection cannot change through registration or reconfiguration, and
same-ID publication with pre- and post-commit failure. The probes record;
parval.framework.judges_f2 judges. `Reconf` builds the registration bodies the F2 probes send."""

from __future__ import annotations

from parval.framework.facts import Obs
from parval.framework.poller import Snapshot
from parval.framework.preconditions import COUNTERS
from parval.framework.rig import Flight, Rig
from parval.framework.scenarios import model_count, references, timing
from parval.jsontypes import JsonValue
from parval.status import Status

INVALID_SLOTS: list[JsonValue] = [0, 17, 1.5, "2", None, True]


class Reconf:
    """Registration bodies for the rig's model at one count, per configuration."""

    def __init__(self, rig: Rig, model: str, n: int) -> None:
        self.rig = rig
        self.model = model
        self.n = n

    def body(self, distinct: int | None, **over: object) -> dict[str, object]:
        ctx = self.rig.ctx
        fields: dict[str, object] = {"slots": self.n, **over}
        return ctx.registration(ctx.entry(self.model, distinct=distinct, **fields))

    async def to(self, label: str, distinct: int | None, **over: object) -> Flight:
        return await self.rig.call(
            label, "POST", "/v1/models/load", self.body(distinct, **over), timeout_s=timing(self.rig).slack_s + 30
        )

    async def start(self, label: str, distinct: int | None) -> Flight:
        return await self.rig.start(label, "POST", "/v1/models/load", self.body(distinct))


async def invalid_replacement(rig: Rig, rc: Reconf) -> None:
    """Invalid replacements keep the working registration; a later valid resize works
    (judged by judges_f2.unsupported_count, invalid_metadata and valid_resize)."""
    ctx = rig.ctx
    cap = ctx.capacity or 1

    def record(name: str, obs: Obs, flights: list[Flight], **evidence: object) -> None:
        """One sub-check of F2.invalid_replacement, judged by judges_f2.<name>."""
        ctx.findings.observe("F2.invalid_replacement", name, f"f2.{name}", rig.observed(obs, flights), **evidence)

    async def kept(obs: Obs, flights: list[Flight], what: str) -> None:
        """The registration as /v1/models shows it right after `what`, and a request."""
        snap = await rig.wait(lambda s: s.get(rc.model) is not None, 5.0)
        sample = snap.get(rc.model) if snap else None
        after = await rig.run(f"after-{what}", rc.model)
        flights.append(after)
        obs.facts.setdefault("kept", []).append(
            {
                "what": what,
                "after": after.label,
                "sample": None
                if sample is None
                else {"slots": sample.slots, "loaded": sample.loaded, "max_parallel": sample.max_parallel},
            }
        )

    await rc.to("config-base", None)
    await rig.run("warm", rc.model)
    if cap + 1 <= 16:
        obs = Obs(count=rc.n, capacity=cap)
        reply = await rig.call("resize-over-capacity", "POST", "/v1/models/load", rc.body(None, slots=cap + 1))
        flights = [reply]
        await kept(obs, flights, f"slots={cap + 1}")
        record("unsupported_count", obs, flights)
    else:
        ctx.findings.add(
            "F2.invalid_replacement",
            "unsupported_count",
            Status.NOT_APPLICABLE,
            "capacity 16 is the hard cap: no valid count exceeds it",
        )
    obs = Obs(count=rc.n, capacity=cap)
    bad = await rig.call("bad-task", "POST", "/v1/models/load", rc.body(None, task="not-a-task"))
    flights = [bad]
    await kept(obs, flights, "an invalid task")
    forms = []
    for value in INVALID_SLOTS:
        reply = await rig.call(f"slots-{value!r}", "POST", "/v1/models/load", rc.body(None, slots=value))
        flights.append(reply)
        forms.append({"slots": value, "status": reply.status, "message": reply.message()[:120]})
    obs["forms"] = [{"slots": value, "label": f"slots-{value!r}"} for value in INVALID_SLOTS]
    await kept(obs, flights, "invalid slots values")
    record("invalid_metadata", obs, flights, slot_forms=forms)
    other = 1 if rc.n > 1 else (2 if cap >= 2 else None)
    if other is None:
        ctx.findings.add(
            "F2.invalid_replacement",
            "valid_resize",
            Status.NOT_APPLICABLE,
            "capacity 1: there is no other valid count to resize to",
        )
        return
    obs = Obs(count=rc.n, other=other)
    resize = await rig.call(f"resize-{other}", "POST", "/v1/models/load", rc.body(None, slots=other))
    snap = await rig.wait(lambda s: s.slots(rc.model) == other and s.loaded(rc.model) is True, 5.0)
    obs["resize_shown"] = snap is not None
    after = await rig.run("after-resize", rc.model)
    back = await rig.call(f"resize-{rc.n}", "POST", "/v1/models/load", rc.body(None))
    record("valid_resize", obs, [resize, after, back])


def entry_json(rig: Rig, model: str, snap: Snapshot | None) -> dict[str, object] | None:
    """One model's status fields as a sample showed them (None: never seen)."""
    x = snap.get(model) if snap is not None else None
    if x is None:
        return None
    return {
        "slots": x.slots,
        "active": x.active,
        "queued": x.queued,
        "loaded": x.loaded,
        "max_parallel": x.max_parallel,
    }


async def runtime_immutable(rig: Rig, rc: Reconf) -> None:
    """Runtime selection is fixed for the process: a resize across one and a registration
    without slots keep the parallel runtime (its slot counters and published capacity;
    judged by judges_f2.runtime_kept)."""
    ctx = rig.ctx
    # Counters that vanish after a resize show a changed runtime only where they were there before.
    if ctx.unmet("F2.invalid_replacement", "runtime_immutable@flagged", COUNTERS):
        return
    t = timing(rig)
    obs = Obs(count=rc.n)
    one = await rc.to("resize-1", None, slots=1)
    after_one = await rig.run("after-resize-1", rc.model)
    resized = await rig.wait(lambda s: s.slots(rc.model) == 1 and s.loaded(rc.model) is True, t.slack_s)
    back = await rc.to(f"resize-back-{rc.n}", None)
    omitted = ctx.derived_id("omitted")
    rig.watch(omitted)
    reg = await rig.call(
        "register-omitted", "POST", "/v1/models/load", ctx.registration(ctx.entry(omitted)), timeout_s=t.slack_s + 30
    )
    ran = await rig.run("after-register-omitted", omitted)
    registered = await rig.wait(lambda s: s.loaded(omitted) is True, t.slack_s)
    obs["entries"] = {"resized": entry_json(rig, rc.model, resized), "registered": entry_json(rig, omitted, registered)}
    ctx.findings.observe(
        "F2.invalid_replacement",
        "runtime_immutable@flagged",
        "f2.runtime_kept",
        rig.observed(obs, [one, after_one, back, reg, ran]),
    )


async def same_id(rig: Rig) -> None:
    """Concurrent same-ID registration publishes one entry; post-commit failure leaves the
    new configuration unloaded and a retry recovers it (judged by judges_f2.concurrent_same_id
    and post_commit_failure)."""
    ctx = rig.ctx
    t = timing(rig)
    sid = ctx.derived_id("same")
    rig.watch(sid)
    body = ctx.registration(ctx.entry(sid))
    obs = Obs(sid=sid)
    before = (await rig.call("health-before", "GET", "/health")).json()
    regs = [await rig.start(f"register{i}", "POST", "/v1/models/load", body) for i in range(2)]
    obs["settled"] = await rig.settle(regs, t.slack_s)
    after = (await rig.call("health-after", "GET", "/health")).json()
    obs["models_before"] = model_count(before)
    obs["models_after"] = model_count(after)
    listing = (await rig.call("models", "GET", "/v1/models")).json()
    obs["listed_ids"] = [e.get("id") for e in listing.get("data", [])] if isinstance(listing, dict) else []
    ctx.findings.observe(
        "F2.same_id",
        "concurrent_same_id",
        "f2.concurrent_same_id",
        rig.observed(obs, regs),
        timeline=rig.timeline(regs),
    )

    obs = Obs(sid=sid)
    missing = str(ctx.run_dir / "missing-model.bin")
    broken = await rig.call(
        "reconfigure-missing", "POST", "/v1/models/load", ctx.registration(ctx.entry(sid, path=missing))
    )
    listing = (await rig.call("models", "GET", "/v1/models")).json()
    entry: dict[str, object] = {}
    if isinstance(listing, dict):
        entry = next((e for e in listing.get("data", []) if e.get("id") == sid), {})
    obs["entry_loaded"] = entry.get("loaded")
    failing = await rig.run("request-while-broken", sid)
    obs["drained"] = await rig.drained([sid], t.slack_s)
    fixed = await rig.call("reconfigure-good", "POST", "/v1/models/load", body)
    ok = await rig.run("request-after-retry", sid)
    await references(rig, sid, "base")  # its own registration: outputs may depend on the id
    ctx.findings.observe(
        "F2.same_id",
        "post_commit_failure",
        "f2.post_commit_failure",
        rig.observed(obs, [broken, failing, fixed, ok]),
        registered_path=entry.get("path"),
    )
