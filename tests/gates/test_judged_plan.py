"""The plan as the judges read it (parval.plan.judged): a snapshot missing keys, as an older
plan.json may, reads as the defaults the judges have always given them."""

from __future__ import annotations

from pathlib import Path

import pytest

from parval.plan.judged import MIN_STARTS, MemoryRules, judged_plan
from parval.plan.load import load_plan

ROOT = Path(__file__).resolve().parents[2]
BARE = {"counts": [3, 1, 2], "model": {"id": "m"}}


def test_a_bare_snapshot_reads_as_the_judges_defaults() -> None:
    plan = judged_plan(BARE)
    assert plan.counts == (1, 2, 3) and plan.model.id == "m"
    assert plan.model.mode == "offline" and plan.model.admit_modes == ("offline",)
    assert plan.model.cache_sensitive is False and plan.model.variation_kinds is None
    assert plan.required_starts == MIN_STARTS and plan.memory == MemoryRules(gpu_required=True)
    assert plan.tolerance is None and plan.volatile == [] and plan.quality_settings == {}
    assert plan.drain_lag_ms is None and plan.framework_record is None and plan.framework_protected is None
    # no requests declared: none named (serial repeats then compare what the baselines ran)
    assert plan.base_request is None and plan.request_names == ["base"]
    # ten mixed waves at the largest count, the same below it; two warm waves; two serial requests
    assert {n: len(s.waves["mixed_wave"]) for n, s in plan.schedules.items()} == {1: 10, 2: 10, 3: 10}
    assert plan.schedules[1].waves["warm_wave"] == (1, 2) and plan.schedules[1].serial_requests == 2


def test_declared_rules_are_read_as_declared() -> None:
    plan = judged_plan(
        {
            **BARE,
            "starts_per_count": 5,
            "waves": {"mixed": 2, "mixed_at_largest": 12},
            "timeouts": {"drain_lag_ms": 40},
            "compare": {
                "tolerance": {"max_abs_sample_diff": 2, "justification": "dither"},
                "volatile_fields": [{"path": "timing.wall_ms", "justification": "clock"}],
            },
            "memory": {
                "gpu_required": False,
                "baseline_comparison": {"reason": "retention"},
                "stabilisation": {"last_k_waves": 4, "max_growth_mib": 8},
            },
            "requests": {
                "base": {"text": "a"},
                "variations": [{"name": "s", "changes": "seed", "request": {"seed": 2}}],
            },
        }
    )
    assert plan.required_starts == 5 and plan.drain_lag_ms == 40.0
    assert {n: len(s.waves["mixed_wave"]) for n, s in plan.schedules.items()} == {1: 2, 2: 2, 3: 12}
    assert plan.tolerance == {"max_abs_sample_diff": 2, "justification": "dither"} and plan.volatile == [
        "timing.wall_ms"
    ]
    assert plan.memory == MemoryRules(
        False, "retention", {"last_k_waves": 4, "max_growth_mib": 8.0, "metric": "host_rss"}
    )
    assert plan.request_names == ["base", "s"] and plan.variations[0].kind == "seed"
    # fewer starts than the procedure's minimum are never enough
    assert judged_plan({**BARE, "starts_per_count": 1}).required_starts == MIN_STARTS


def test_a_snapshot_without_its_counts_or_model_is_refused() -> None:
    with pytest.raises(KeyError):
        judged_plan({"model": {"id": "m"}})
    with pytest.raises(KeyError):
        judged_plan({"counts": [1]})


def test_a_loaded_plan_reads_the_same_as_its_snapshot() -> None:
    plan = load_plan(ROOT / "plans" / "demo.yaml", check_files=False)
    judged = judged_plan(plan.raw)
    assert list(judged.counts) == plan.counts and judged.volatile == plan.volatile_fields
    assert judged.request_names == [r.name for r in plan.requests()]
    assert judged.model.omitted_kinds == ("reference",) and judged.model.unjustified_omissions == ()
