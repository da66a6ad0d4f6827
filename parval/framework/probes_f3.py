"""F3 where it is observable over HTTP: a weight-load failure releases its lease and a
retry works (a config model and a registration with a missing checkpoint), and an invalid
request alongside healthy work releases ownership. Primary/null-primary/partial-clone
injection and resource lifetime come from the CTest results (`attach_ctest`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from parval.framework.checks import Verdict
from parval.framework.context import Context
from parval.framework.preconditions import MANAGEMENT
from parval.framework.probes_f1 import tested_counts
from parval.framework.rig import Rig, open_rig
from parval.framework.scenarios import all_ok, outputs_match, references, timing
from parval.runners.ctest import CTestRun
from parval.status import Status


async def failures_probe(ctx: Context) -> None:
    t = ctx.timing
    assert t is not None
    n = max(tested_counts(ctx))
    model, broken = ctx.model_id, ctx.derived_id("missing")
    missing = str(ctx.run_dir / "missing-model.bin")
    models = [ctx.entry(model, slots=n), ctx.entry(broken, path=missing)]
    async with open_rig(ctx, "f3-failures", ctx.launch_spec(models, flagged=True), [model, broken]) as rig:
        await config_load_failure(rig, broken)
        await registration_retry(rig, missing)
        await invalid_alongside(rig, model, n)


async def config_load_failure(rig: Rig, model: str) -> None:
    t = timing(rig)
    v = Verdict()
    first = await rig.run("load-fails", model)
    v.require(first.status is not None and first.status >= 400,
              f"a request whose first load fails answers an error (got {first.status})")
    v.require(await rig.drained([model], t.slack_s), "the failed load released its lease")
    snap = rig.poller.latest
    v.require(snap is not None and snap.loaded(model) is False, "nothing was published")
    again = await rig.run("load-fails-again", model)
    v.require(again.status is not None and again.status >= 400 and again.status != 503,
              f"a later request retries the load (an error again, not a stuck 503; got {again.status})")
    v.require(await rig.drained([model], t.slack_s), "the retry released its lease too")
    for aid in ("F3.load_failures", "F3.ownership"):
        rig.ctx.findings.judge(aid, "config_weight_load_failure", v,
                               messages=[first.message()[:200], again.message()[:200]])


async def registration_retry(rig: Rig, missing: str) -> None:
    ctx = rig.ctx
    t = timing(rig)
    rid = ctx.derived_id("retry")
    rig.watch(rid)
    v = Verdict()
    if ctx.unmet("F3.load_failures", "registration_failure_retry", MANAGEMENT):
        return
    fail = await rig.call("register-missing", "POST", "/v1/models/load",
                          ctx.registration(ctx.entry(rid, path=missing)))
    if fail.status == 403:
        ctx.findings.add("F3.load_failures", "registration_failure_retry", Status.PENDING,
                         "needs server.ui_management (403 dynamic model management is disabled)")
        return
    v.require(fail.status is not None and fail.status >= 400, f"registration with a missing checkpoint fails (got {fail.status})")
    listing = (await rig.call("models", "GET", "/v1/models")).json()
    entry = next((e for e in listing.get("data", []) if e.get("id") == rid), None) if isinstance(listing, dict) else None
    v.require(entry is not None and entry.get("loaded") is False and not entry.get("active_slots"),
              "the entry stays registered, unloaded, with no lease held")
    good = await rig.call("register-good", "POST", "/v1/models/load",
                          ctx.registration(ctx.entry(rid)), timeout_s=t.slack_s + 30)
    v.require(good.status == 200, f"the retry with the good checkpoint loads (got {good.status})")
    out = await rig.run("after-retry", rid)
    all_ok(v, [out], "a request after the retry")
    await references(rig, rid, "base")  # its own registration: outputs may depend on the id
    outputs_match(rig, v, "base", [out], "after the retry", phase="cold")
    ctx.findings.judge("F3.load_failures", "registration_failure_retry", v)


async def invalid_alongside(rig: Rig, model: str, n: int) -> None:
    ctx = rig.ctx
    t = timing(rig)
    invalid = ctx.plan.invalid_request()
    if invalid is None:
        ctx.findings.add("F3.ownership", "invalid_alongside", Status.PENDING,
                         "the plan names no requests.invalid to send alongside healthy work")
        return
    v = Verdict()
    await rig.run("warm", model)
    healthy = [await rig.start_run(f"healthy{i}", model) for i in range(max(1, n - 1))]
    bad = await rig.start_run("invalid", model, request=invalid)
    v.require(await rig.settle([*healthy, bad], t.slack_s), "everything completed within bound")
    v.require(bad.status is not None and bad.status >= 400, f"the invalid request is rejected (got {bad.status})")
    all_ok(v, healthy, "healthy requests")
    outputs_match(rig, v, "base", healthy, "healthy requests")
    v.require(await rig.drained([model], t.slack_s), "no lease stays held")
    after = [await rig.start_run(f"after{i}", model) for i in range(n)]
    v.require(await rig.settle(after, t.slack_s), "the next requests completed")
    all_ok(v, after, "the next requests")
    outputs_match(rig, v, "base", after, "the next requests")
    ctx.findings.judge("F3.ownership", "invalid_alongside", v, timeline=rig.timeline([*healthy, bad, *after]))


@dataclass(frozen=True)
class CTestEvidence:
    """Evidence a black box cannot give: only the server's own tests (with the
    AUDIOCPP_SLOT_VALIDATION hooks where a state must be blocked) can establish it."""

    name: str
    pattern: re.Pattern[str]
    what: str


CTEST_EVIDENCE: dict[str, CTestEvidence] = {
    "F3.load_failures": CTestEvidence(
        "primary_injection", re.compile(r"session_pool|parallel_lifecycle|model_slots|slot_validation"),
        "primary, null-primary and partial-clone load-failure injection (contract T12/T17)"),
    "F3.ownership": CTestEvidence(
        "resource_lifetime", re.compile(r"ownership|session_pool|parallel_lifecycle"),
        "resource lifetime, cache and RNG privacy of sessions"),
    "F2.callback_lease": CTestEvidence(
        "stream_and_unstarted_callbacks", re.compile(r"slot_validation|live_body|callback|stream"),
        "stream callbacks and abandoned unstarted deferred callbacks (contract T14/T18)"),
    "F5.no_convoy": CTestEvidence(
        "blocked_metadata", re.compile(r"slot_validation"),
        "metadata blocked during bulk/status work (the AUDIOCPP_SLOT_VALIDATION hooks)"),
    "F5.retiring_residency": CTestEvidence(
        "blocked_teardown", re.compile(r"slot_validation"),
        "teardown blocked while a model retires (the AUDIOCPP_SLOT_VALIDATION hooks)"),
}


def attach_ctest(ctx: Context, runs: list[CTestRun], selected: set[str] | None = None) -> None:
    """The half of F2/F3/F5 only the server's CTests can show, from the default CTest run:
    PENDING naming the tests when there is none, so HTTP evidence alone never passes it."""
    default = [r for r in runs if r.label == "default"]
    run = default[-1] if default else None
    for aid, need in CTEST_EVIDENCE.items():
        if selected is not None and aid not in selected:
            continue
        observed = [c.name for c in ctx.findings.of(aid)]
        base = {"needs": need.what, "ctest_pattern": need.pattern.pattern, "observed_over_http": observed}
        if run is None or run.status == "not_run":
            why = run.reason if run is not None else "no CTest run in this record"
            ctx.findings.add(aid, need.name, Status.PENDING,
                             f"needs {need.what}: CTest matching {need.pattern.pattern!r} ({why}); over HTTP "
                             f"only {', '.join(observed) or 'nothing'} was observed", **base)
            continue
        cases = [c for c in run.tests if need.pattern.search(c.name)]
        ran = [c for c in cases if c.status == "passed"]
        failed = [c.name for c in cases if c.status in ("failed", "notrun")]
        if failed:
            status, detail = Status.FAIL, f"failed: {', '.join(failed)}"
        elif not ran:
            status, detail = Status.PENDING, (f"needs {need.what}: no passing CTest matching "
                                              f"{need.pattern.pattern!r} in the run")
        else:
            status, detail = Status.PASS, f"{len(ran)} CTest(s) passed: {', '.join(c.name for c in ran)}"
        ctx.findings.add(aid, need.name, status, detail, reproduction=run.reproduction,
                         tests={c.name: c.status for c in cases}, **base)
