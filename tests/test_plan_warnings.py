"""`parval validate` and `parval init` warn when a plan's counts skip one (nothing above the
gap can ever be admitted), and validate says where fewer than ten mixed waves keep a count
from being the largest admitted."""

from __future__ import annotations

import subprocess
from pathlib import Path

from parval.commands.init import starter_warnings
from parval.plan.load import load_plan
from parval.plan.schedule import plan_warnings
from parval.plan.waves import mixed_waves
from tests.conftest import PARVAL, write_plan


def test_validate_warns_that_a_skipped_count_blocks_everything_above_it(tmp_path: Path) -> None:
    path = write_plan(tmp_path, counts=[1, 2, 4])
    proc = subprocess.run([str(PARVAL), "validate", str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "counts skip 3" in proc.stdout and "4 can never be admitted" in proc.stdout
    assert not [w for w in plan_warnings(load_plan(write_plan(tmp_path / "ok", counts=[1, 2]))) if "skip" in w]


def test_init_warns_on_a_plan_whose_counts_skip_one() -> None:
    assert starter_warnings("counts: [1, 2, 4]\n") == [
        "warning: counts skip 3: admission is consecutive from one and never enables an untested count, "
        "so 4 can never be admitted by this plan (add 3 to counts)"
    ]
    assert starter_warnings("counts: [1, 2, 3]\n") == []


def test_mixed_waves_default_to_ten_at_every_count(tmp_path: Path) -> None:
    """Any count can end up the largest admitted, so by default every count runs the
    largest count's mixed waves; a lower explicit `waves.mixed` is warned about."""
    raw = load_plan(write_plan(tmp_path / "d", waves={"mixed": None, "mixed_at_largest": 10})).raw
    assert [mixed_waves(raw, n) for n in raw["counts"]] == [10, 10]
    low = load_plan(write_plan(tmp_path / "l", waves={"mixed": 4, "mixed_at_largest": 10}))
    assert any("counts 1 run 4 mixed wave(s)" in w for w in plan_warnings(low))
