"""The one plan builder (tests/plankit.py) and the suites' helpers built on it: each suite still
gets the plan it relies on (the values pinned here: who runs how many requests at once, how
long each takes, which counts, how many starts and waves), every plan passes the plan schema,
and overrides merge as the helpers document."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from parval.plan.load import load_plan
from tests import plankit


def _written(path: Path) -> dict[str, Any]:
    """The plan file as written, after it loads as a valid plan (relative paths resolved)."""
    load_plan(path, check_files=False)
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


def _pinned(plan: dict[str, Any]) -> dict[str, Any]:
    """What the suites' tests rely on, pulled out of a plan."""
    options = plan["model"]["load_options"]
    return {
        "capacity": options["capacity"],
        "service_ms": options["service_ms"],
        "load_ms": options["load_ms"],
        "counts": plan["counts"],
        "starts": plan.get("starts_per_count"),
        "waves": plan.get("waves"),
        "candidate_args": plan["servers"]["candidate"].get("args"),
    }


def test_merge_merges_mappings_replaces_the_rest_and_none_deletes() -> None:
    base = {"a": {"b": 1, "c": [1, 2], "d": {"e": 1}}, "f": 1}
    out = plankit.merge(base, {"a": {"c": [3], "d": {"e": None}, "g": 2}, "f": None, "h": {"i": None}})
    assert out == {"a": {"b": 1, "c": [3], "d": {}, "g": 2}, "h": {"i": None}}
    assert base == {"a": {"b": 1, "c": [1, 2], "d": {"e": 1}}, "f": 1}  # a copy: base untouched


def test_the_builder_fills_in_what_its_keywords_name() -> None:
    plan = plankit.stand_in_plan(
        name="n",
        model_id="x",
        capacity=3,
        service_ms=5,
        load_ms=6,
        counts=[2],
        starts=4,
        waves={"warm": 2, "mixed": None, "mixed_at_largest": 10, "serial_reuse": 1},
        text="hi",
        seed=11,
        faults=["a", "b"],
        framework={"record": "r"},
        memory=None,
    )
    assert plan["name"] == "n" and plan["model"]["id"] == "x"
    assert _pinned(plan) == {
        "capacity": 3,
        "service_ms": 5,
        "load_ms": 6,
        "counts": [2],
        "starts": 4,
        "waves": {"warm": 2, "mixed": None, "mixed_at_largest": 10, "serial_reuse": 1},
        "candidate_args": ["--fault", "a", "--fault", "b"],
    }
    assert "args" not in plan["servers"]["baseline"]  # faults: the candidate only
    assert plan["requests"]["base"] == {"text": "hi", "seed": 11}
    assert plan["requests"]["variations"][0]["request"] == {"text": "hi", "seed": 12}
    assert plan["framework"] == {"record": "r"} and "memory" not in plan
    assert "args" not in plankit.stand_in_plan()["servers"]["candidate"]
    assert plankit.stand_in_plan(faults=[])["servers"]["candidate"]["args"] == []
    assert plankit.BASE["name"] == "small" and plankit.BASE["counts"] == [1, 2]  # never changed


def test_the_small_plan_of_tests_conftest(tmp_path: Path) -> None:
    from tests.conftest import SMALL_PLAN, write_plan

    assert SMALL_PLAN == plankit.stand_in_plan() == plankit.BASE
    plan = _written(write_plan(tmp_path / "p"))
    assert plan == SMALL_PLAN and (tmp_path / "p" / "model.bin").is_file()
    assert _pinned(plan) == {
        "capacity": 2,
        "service_ms": 40,
        "load_ms": 20,
        "counts": [1, 2],
        "starts": 3,
        "waves": {"warm": 1, "mixed": 2, "mixed_at_largest": 2, "serial_reuse": 1},
        "candidate_args": None,
    }
    assert plan["server"]["ui_management"] is True and plan["performance"] == {"warm_repeats": 1}
    # overrides merge: a wave number changes, None deletes, a whole list replaces
    changed = _written(write_plan(tmp_path / "q", counts=[1, 2, 4], waves={"mixed": None, "mixed_at_largest": 10}))
    assert changed["counts"] == [1, 2, 4]
    assert changed["waves"] == {"warm": 1, "mixed_at_largest": 10, "serial_reuse": 1}


def test_the_ux_plan(tmp_path: Path) -> None:
    from tests.ux.kit import PLAN, write_plan

    assert PLAN == plankit.ux_plan()
    plan = _written(write_plan(tmp_path / "p"))
    assert plan == PLAN and (tmp_path / "p" / "model.bin").is_file()
    assert _pinned(plan) == {
        "capacity": 4,
        "service_ms": 120,
        "load_ms": 20,
        "counts": [1, 2],
        "starts": 3,
        "waves": {"warm": 1, "mixed": 2, "mixed_at_largest": 10, "serial_reuse": 1},
        "candidate_args": None,
    }
    assert plan["name"] == "ux" and plan["model"]["id"] == "ux-tts"
    assert plan["performance"] == {"warm_repeats": 3}
    assert plan["memory"]["stabilisation"] == {"last_k_waves": 2, "max_growth_mib": 64}
    # this suite's changes replace whole sections
    changed = _written(write_plan(tmp_path / "q", performance={"enabled": False}, counts=[1, 3]))
    assert changed["performance"] == {"enabled": False} and changed["counts"] == [1, 3]


def test_the_campaign_plan(tmp_path: Path) -> None:
    from tests.campaign.helpers import MODEL_BYTES, STANDIN, plan_dict

    plan = plan_dict(tmp_path)
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    assert _written(path) == plan
    assert (tmp_path / "model.bin").read_bytes() == MODEL_BYTES
    assert plan["model"]["path"] == str(tmp_path / "model.bin")
    assert _pinned(plan) == {
        "capacity": 4,
        "service_ms": 100,
        "load_ms": 80,
        "counts": [1, 2, 4],
        "starts": 3,
        "waves": {"warm": 1, "mixed": None, "mixed_at_largest": 10, "serial_reuse": 2},
        "candidate_args": [],
    }
    assert plan["servers"]["baseline"] == {"executable": STANDIN}
    assert plan["framework"] == {"record": "framework", "protected": "x4.json"}
    assert (tmp_path / "framework").is_dir() and (tmp_path / "x4.json").is_file()
    assert [v["name"] for v in plan["requests"]["variations"]] == ["longer", "seed"]
    assert plan["memory"]["stabilisation"] == {"last_k_waves": 3, "max_growth_mib": 6}
    assert plan["model"]["cache_sensitive"] is False and plan["model"]["load_options"]["cache_sensitive"] is False
    for absent in ("description", "busy_timeout_ms", "threads", "mode", "lazy", "admit_modes"):
        assert absent not in plan and absent not in plan["server"] and absent not in plan["model"]

    (tmp_path / "o").mkdir()
    other = plan_dict(
        tmp_path / "o",
        faults=["barging"],
        counts=[1],
        starts=1,
        ten=3,
        mixed=2,
        warm=2,
        cache_sensitive=True,
        framework=False,
        stop_on_crash=True,
    )
    assert _pinned(other) == {
        "capacity": 4,
        "service_ms": 100,
        "load_ms": 80,
        "counts": [1],
        "starts": 1,
        "waves": {"warm": 2, "mixed": 2, "mixed_at_largest": 3, "serial_reuse": 2},
        "candidate_args": ["--fault", "barging"],
    }
    assert other["model"]["cache_sensitive"] is True and other["model"]["load_options"]["cache_sensitive"] is True
    assert "framework" not in other and other["stop_on_crash"] is True


def test_the_reliability_fault_plans(tmp_path: Path) -> None:
    from tests.reliability.conftest import fault_plan
    from tests.reliability.test_faults import CRASH

    plan = _written(fault_plan(tmp_path / "p", "hang_requests", timeouts={"request_s": 0.5}))
    assert (tmp_path / "p" / "model.bin").is_file()
    assert _pinned(plan) == {
        "capacity": 2,
        "service_ms": 40,
        "load_ms": 20,
        "counts": [1],
        "starts": 1,
        "waves": {"warm": 1, "mixed": 1, "mixed_at_largest": 1, "serial_reuse": 1},
        "candidate_args": ["--fault", "hang_requests"],
    }
    assert "args" not in plan["servers"]["baseline"]  # the baseline is sound
    assert plan["requests"]["variations"] == []
    assert plan["performance"] == {"warm_repeats": 1, "enabled": False, "rejection_probe": False}
    assert plan["timeouts"]["request_s"] == 0.5 and plan["timeouts"]["ready_s"] == 20  # merged
    # the crash campaign: four requests at once at count 4, two starts
    crash = _written(fault_plan(tmp_path / "c", "crash_at_4", **CRASH))
    assert _pinned(crash)["counts"] == [1, 4] and _pinned(crash)["starts"] == 2
    assert crash["model"]["load_options"] == {"capacity": 4, "service_ms": 40, "load_ms": 20}
    # the same, spelled as plan sections (tests/reliability/test_start_outcomes.py)
    spelled = fault_plan(
        tmp_path / "s",
        "crash_at_4",
        counts=[1, 4],
        starts_per_count=2,
        model={"load_options": {"capacity": 4, "service_ms": 40, "load_ms": 20}},
    )
    assert _written(spelled) == crash


def test_the_framework_plan(tmp_path: Path) -> None:
    from tests.framework.helpers import MODEL_BYTES, write_plan

    plan = _written(write_plan(tmp_path, faults=["barging"]))
    assert (tmp_path / "model.bin").read_bytes() == MODEL_BYTES
    assert plan["model"]["load_options"] == {
        "capacity": 4,
        "service_ms": 150,
        "load_ms": 200,
        "teardown_ms": 150,
        "native_batch": True,
        "model_mib": 1,
        "session_mib": 1,
    }
    assert plan["counts"] == [1, 2] and plan["servers"]["candidate"]["args"] == ["--fault", "barging"]
    assert plan["server"] == {"backend": "cpu", "ui_management": True} and plan["status_poll_ms"] == 5
    assert plan["requests"] == {
        "base": {"text": "Framework probe.", "seed": 7},
        "invalid": {"text": "x", "max_tokens": -1},
    }
    assert plan["timeouts"] == {"ready_s": 20, "request_s": 30, "start_s": 120, "shutdown_grace_s": 5}
    for absent in ("identity", "starts_per_count", "waves", "compare", "memory", "performance"):
        assert absent not in plan
    no_ui = _written(write_plan(tmp_path / "n", ui=False, name="other", counts=[1]))
    assert no_ui["server"]["ui_management"] is False and no_ui["name"] == "other" and no_ui["counts"] == [1]


def test_the_real_server_plan(tmp_path: Path) -> None:
    from tests.conftest import write_real_plan

    real = tmp_path / "real-audiocpp"
    plan = _written(write_real_plan(tmp_path, real, "r", starts_per_count=1, timeouts={"campaign_s": 500}))
    exe = str(real / "bin" / "audiocpp_server")
    assert plan["servers"] == {
        "baseline": {"executable": exe, "knows_parallel_jobs": False},
        "candidate": {"executable": exe},
    }
    assert plan["model"]["family"] == "silero_vad" and plan["model"]["path"] == str(real / "models" / "silero_vad")
    assert plan["counts"] == [1, 2] and plan["starts_per_count"] == 1 and plan["server"]["ui_management"] is False
    assert plan["timeouts"] == {
        "ready_s": 30,
        "request_s": 30,
        "start_s": 120,
        "shutdown_grace_s": 5,
        "campaign_s": 500,
    }


@pytest.mark.parametrize("sort_keys", [False, True])
def test_write_puts_the_model_beside_the_plan(tmp_path: Path, sort_keys: bool) -> None:
    path = plankit.write(tmp_path / "d", {"b": 1, "a": 2}, model=b"w", sort_keys=sort_keys)
    assert path == tmp_path / "d" / "plan.yaml" and (tmp_path / "d" / "model.bin").read_bytes() == b"w"
    assert path.read_text() == ("a: 2\nb: 1\n" if sort_keys else "b: 1\na: 2\n")
    assert not (plankit.write(tmp_path / "e", {}).parent / "model.bin").exists()
