"""F5 warm_during_cold on the stand-in with a load much shorter than a warm request: the
first attempt (the way the probe always forced it) cannot tell waiting from a slow request,
and the next attempt forces the situation another way instead of repeating it.

The model's base request takes ~2.6 s and its load ~0.55 s: long enough for the probe to
try (two request gaps), too short for the warm request's own time to show it did not wait.
The plan also offers a 2-character request (~0.1 s). Only the warm_during_cold probe runs
(with the calibration it needs), on one limit-2 server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from parval.framework.judges import run_judge
from parval.framework.observed import Timing
from parval.framework.probe_context import FrameworkContext
from parval.framework.probes_f1 import PROVISIONAL, calibrate
from parval.framework.probes_f5 import five_models, warm_during_cold
from parval.framework.rig import open_rig
from parval.framework.scenarios import references
from parval.framework.settings import load_options
from parval.plan.load import load_plan
from parval.rundir.events import EventLog
from parval.rundir.layout import EVENTS
from parval.status import Status
from tests import plankit

from .helpers import MODEL_BYTES

BASE_TEXT = "A base request long enough that its warm service outlasts a load."  # 64 characters


def quick_load_plan(tmp: Path) -> Path:
    plan = plankit.merge(
        plankit.framework_plan(tmp / "model.bin", counts=[1]),
        {
            # 20 ms + 40 ms per character: ~2.6 s for the base request, ~0.1 s for "Hi"
            "model": {"load_options": {"service_ms": 20, "ms_per_char": 40, "load_ms": 550, "teardown_ms": 150}},
            "requests": {
                "base": {"text": BASE_TEXT, "seed": 7},
                "variations": [{"name": "short", "changes": "text", "request": {"text": "Hi", "seed": 7}}],
            },
        },
    )
    return plankit.write(tmp, plan, model=MODEL_BYTES, sort_keys=True)


def run_probe(tmp: Path) -> tuple[Timing, dict[str, Any]]:
    """Calibrate, record B's references, run warm_during_cold; its timing and observation."""
    plan = load_plan(quick_load_plan(tmp))
    run_dir = tmp / "run"
    run_dir.mkdir()
    log = EventLog(run_dir / EVENTS)
    ctx = FrameworkContext(plan, run_dir, log, load_options(None))
    models = five_models(ctx)
    (a, _, _), (b, _, tb) = models[0], models[1]

    async def main() -> None:
        ctx.timing = PROVISIONAL
        entries = [ctx.entry(mid, slots=1, distinct=d) for mid, d, _ in models]
        spec = ctx.launch_spec(entries, flagged=True, max_loaded_models=2)
        async with open_rig(ctx, "f5-limit2", spec, [m for m, _, _ in models]) as rig:
            ctx.timing = await calibrate(rig, a)
            await references(rig, b, tb)
            await warm_during_cold(rig, models)

    try:
        anyio.run(main)
    finally:
        log.close()
    events = [json.loads(line) for line in (run_dir / EVENTS).read_text().splitlines()]
    observed = [e for e in events if e.get("kind") == "observation" and e.get("name") == "warm_during_cold@limit2"]
    assert len(observed) == 1, [e.get("kind") for e in events]
    assert ctx.timing is not None
    return ctx.timing, observed[0]["facts"]


@pytest.mark.slow
def test_a_quick_load_is_forced_another_way_and_passes(tmp_path: Path) -> None:
    timing, facts = run_probe(tmp_path)
    assert timing.load_s < timing.service_s / 4, timing  # the regime where one try cannot decide
    tries = facts.get("attempts")
    assert isinstance(tries, list) and len(tries) >= 2, facts
    first, second = tries[0], tries[1]
    # The first try (the base request, no eviction) is not forced: waiting for the rest of
    # the load and serving cannot be told from serving alone.
    v = run_judge("f5.warm_during_cold", first)
    assert v.status is Status.BLOCKED and v.retry, v.detail()
    # The next try forced it differently, and says how.
    assert first["forcing"]["request"] == "base" and first["forcing"]["evict"] is None
    assert second["forcing"]["request"] == "short" and second["forcing"]["evict"] is not None
    assert second["forcing"]["measured_ms"]["short"] < second["forcing"]["measured_ms"]["base"] / 4
    assert second["evictee_unloaded_at"] is not None, second  # the eviction fell inside the cold request
    v = run_judge("f5.warm_during_cold", facts)
    assert v.status is Status.PASS, v.detail()
    assert "attempt 2 of 2" in v.detail() and "earlier attempt(s) not forced: try 1 (" in v.detail(), v.detail()
    # Attack: the try that was not forced taken out of the record leaves no PASS.
    assert run_judge("f5.warm_during_cold", {"attempts": [second, second]}).status is not Status.PASS
