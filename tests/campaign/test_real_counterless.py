"""A campaign against the real legacy audiocpp_server, which publishes no slot counters and
no unload routes: M2's counter and unload checks are UNSUPPORTED (a missing precondition is
never a FAIL), each reason naming what is missing; reversal of admission order cannot be
shown, so M3.reversed is PENDING."""

from __future__ import annotations

from pathlib import Path

import pytest

from parval import api
from parval.plan.load import load_plan
from tests.conftest import write_real_plan

pytestmark = [pytest.mark.real, pytest.mark.slow]


def plan(tmp: Path, real: Path) -> Path:
    return write_real_plan(
        tmp,
        real,
        "real-legacy-counterless",
        starts_per_count=1,
        waves={"warm": 1, "mixed": 2, "mixed_at_largest": 2, "serial_reuse": 1},
        requests={
            "variations": [
                {
                    "name": "other",
                    "changes": "audio",
                    "kind": "length",
                    "request": {"audio": str(real / "fixtures" / "other16k.wav")},
                }
            ]
        },
        timeouts={"campaign_s": 500},
    )


def test_counterless_reasons_on_the_real_legacy_server(tmp_path: Path, real_audiocpp: Path) -> None:
    _, ev = api.run_plan(load_plan(plan(tmp_path, real_audiocpp)), out=tmp_path / "run")
    per = {n: {a["id"]: a for a in ev["model_checks"]["per_count"][str(n)]["assertions"]} for n in (1, 2)}
    for n in (1, 2):
        active, drained, unload = (per[n]["M2.observed_active"], per[n]["M2.drained"], per[n]["M2.unload_reload"])
        assert active["status"] == "UNSUPPORTED" and "publishes no slot counters" in active["reason"], active
        assert drained["status"] == "UNSUPPORTED" and "publishes no slot counters" in drained["reason"], drained
        assert "non-zero" not in drained["reason"]
        assert unload["status"] == "UNSUPPORTED" and "answered 404" in unload["reason"], unload["reason"]
    rev = per[2]["M3.reversed"]
    assert rev["status"] == "PENDING" and "publishes no slot counters" in rev["reason"], rev["reason"]
