"""F3 where it is observable over HTTP: a weight-load failure releases its lease and a
retry works (a config model and a registration with a missing checkpoint), and an invalid
request alongside healthy work releases ownership. Primary/null-primary/partial-clone
injection and resource lifetime come from the CTest results (`attach_ctest`). The probes
record; parval.framework.judges_f3 judges."""

from __future__ import annotations

from parval.framework.ctest import CTestRun
from parval.framework.judges_f3 import CTEST_EVIDENCE, CTestEvidence
from parval.framework.observed import Obs
from parval.framework.preconditions import MANAGEMENT
from parval.framework.probe_context import FrameworkContext
from parval.framework.probes_f1 import tested_counts
from parval.framework.rig import Rig, open_rig
from parval.framework.scenarios import references, timing
from parval.jsonread import get, iterate
from parval.status import Status

__all__ = ["CTEST_EVIDENCE", "CTestEvidence", "attach_ctest", "failures_probe"]


async def failures_probe(ctx: FrameworkContext) -> None:
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
    """Judged by judges_f3.config_load_failure, for both F3 assertions."""
    t = timing(rig)
    obs = Obs(model=model)
    first = await rig.run("load-fails", model)
    obs["drained_first"] = await rig.drained([model], t.slack_s)
    snap = rig.poller.latest
    obs["loaded_after"] = None if snap is None else snap.loaded(model)
    again = await rig.run("load-fails-again", model)
    obs["drained_again"] = await rig.drained([model], t.slack_s)
    facts = rig.observed(obs, [first, again])
    for aid in ("F3.load_failures", "F3.ownership"):
        rig.ctx.findings.observe(
            aid,
            "config_weight_load_failure",
            "f3.config_load_failure",
            facts,
            messages=[first.message()[:200], again.message()[:200]],
        )


async def registration_retry(rig: Rig, missing: str) -> None:
    """Judged by judges_f3.registration_retry."""
    ctx = rig.ctx
    t = timing(rig)
    rid = ctx.derived_id("retry")
    rig.watch(rid)
    obs = Obs(model=rid)
    if ctx.unmet("F3.load_failures", "registration_failure_retry", MANAGEMENT):
        return
    fail = await rig.call("register-missing", "POST", "/v1/models/load", ctx.registration(ctx.entry(rid, path=missing)))
    if fail.status == 403:
        ctx.findings.add(
            "F3.load_failures",
            "registration_failure_retry",
            Status.PENDING,
            "needs server.ui_management (403 dynamic model management is disabled)",
        )
        return
    listing = (await rig.call("models", "GET", "/v1/models")).json()
    obs["entry"] = (
        next((e for e in iterate(listing.get("data", [])) if get(e, "id") == rid), None)
        if isinstance(listing, dict)
        else None
    )
    good = await rig.call(
        "register-good", "POST", "/v1/models/load", ctx.registration(ctx.entry(rid)), timeout_s=t.slack_s + 30
    )
    out = await rig.run("after-retry", rid)
    await references(rig, rid, "base")  # its own registration: outputs may depend on the id
    ctx.findings.observe(
        "F3.load_failures", "registration_failure_retry", "f3.registration_retry", rig.observed(obs, [fail, good, out])
    )


async def invalid_alongside(rig: Rig, model: str, n: int) -> None:
    """Judged by judges_f3.invalid_alongside."""
    ctx = rig.ctx
    t = timing(rig)
    invalid = ctx.plan.invalid_request()
    if invalid is None:
        ctx.findings.add(
            "F3.ownership",
            "invalid_alongside",
            Status.PENDING,
            "the plan names no requests.invalid to send alongside healthy work",
        )
        return
    obs = Obs(count=n)
    await rig.run("warm", model)
    healthy = [await rig.start_run(f"healthy{i}", model) for i in range(max(1, n - 1))]
    k = len(healthy)
    obs.wait(
        f"{k} healthy request(s) running when the invalid one is sent",
        await rig.wait(lambda s: s.active(model) >= k, t.slack_s) is not None,
    )
    bad = await rig.start_run("invalid", model, request=invalid)
    obs["settled"] = await rig.settle([*healthy, bad], t.slack_s)
    obs["drained"] = await rig.drained([model], t.slack_s)
    after = [await rig.start_run(f"after{i}", model) for i in range(n)]
    obs["after_settled"] = await rig.settle(after, t.slack_s)
    facts = rig.observed(
        obs, [*healthy, bad, *after], healthy=[f.label for f in healthy], after=[f.label for f in after]
    )
    ctx.findings.observe(
        "F3.ownership",
        "invalid_alongside",
        "f3.invalid_alongside",
        facts,
        timeline=rig.timeline([*healthy, bad, *after]),
    )


def attach_ctest(ctx: FrameworkContext, runs: list[CTestRun], selected: set[str] | None = None) -> None:
    """The half of F2/F3/F5 only the server's CTests can show, from the default CTest run
    (judged by judges_f3.ctest_evidence against the tests ctest_coverage.json names, or the
    probes file's `ctest_coverage`): PENDING naming the tests when there is none, so HTTP
    evidence alone never passes it."""
    default = [r for r in runs if r.label == "default"]
    run = default[-1] if default else None
    for aid, need in CTEST_EVIDENCE.items():
        if selected is not None and aid not in selected:
            continue
        tests = list(ctx.options.ctest_coverage.get(aid, need.tests))
        observed = [c.name for c in ctx.findings.of(aid)]
        base = {"needs": need.what, "tests": tests, "observed_over_http": observed}
        facts = {
            **base,
            "assertion": aid,
            "run": None
            if run is None
            else {"label": run.label, "status": run.status, "reason": run.reason, "error_kind": run.error_kind},
            "cases": [] if run is None else [{"name": c.name, "status": c.status} for c in run.tests],
        }
        if aid in ctx.options.ctest_coverage:
            base["tests_from"] = "probes file ctest_coverage"
        if run is None or run.status == "not_run":
            ctx.findings.observe(aid, need.name, "f3.ctest_evidence", facts, **base)
            continue
        found = {c.name: c.status for c in run.tests if c.name in tests}
        ctx.findings.observe(
            aid, need.name, "f3.ctest_evidence", facts, reproduction=run.reproduction, found=found, **base
        )
