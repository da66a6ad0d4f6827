"""Shared fixtures: a small, fast plan pointing at the bundled stand-in server.

`make_plan(tmp_path, **overrides)` writes `plan.yaml` (plus a model file) into a directory
and returns its path. Counts [1, 2], three starts per count, ~40 ms service time and few
waves, so a whole campaign takes a few seconds. `overrides` are merged recursively into
the plan mapping (a value of None deletes the key).
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, settings

# Generated tests: a small profile for the default run, a larger one in CI (`CI=true`) or
# when HYPOTHESIS_PROFILE names one. Tests that need their own budget pass
# `@settings(max_examples=...)`, which overrides only that field.
settings.register_profile(
    "default", max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci", max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "default"))

STANDIN = Path(sys.executable).parent / "parval-standin"

# The real audiocpp_server build shipped beside the checkout (legacy runtime, CPU); tests
# marked `real` use it and skip cleanly where it is absent.
REAL_AUDIOCPP = Path(__file__).resolve().parents[2] / "shared" / "real-audiocpp"
PARVAL = Path(sys.executable).parent / "parval"

SMALL_PLAN: dict[str, Any] = {
    "schema_version": 1,
    "name": "small",
    "description": "fast stand-in campaign for tests",
    "servers": {"baseline": {"executable": str(STANDIN)}, "candidate": {"executable": str(STANDIN)}},
    "server": {"backend": "cpu", "threads": 1, "busy_timeout_ms": 30000, "ui_management": True},
    "model": {
        "id": "small-tts",
        "family": "standin_tts",
        "task": "tts",
        "mode": "offline",
        "path": "model.bin",
        "lazy": True,
        "load_options": {"capacity": 2, "service_ms": 40, "load_ms": 20},
        "cache_sensitive": False,
        "admit_modes": ["offline"],
        "variation_kinds": ["seed"],
        "variation_kinds_justification": {
            "length": "the small plan keeps to one seed variation",
            "reference": "the small plan keeps to one seed variation",
        },
    },
    "identity": {
        "baseline": {"source_commit": "0" * 40, "build_flags": "none"},
        "candidate": {"source_commit": "1" * 40, "build_flags": "none"},
        "quantization": "none",
    },
    "counts": [1, 2],
    "starts_per_count": 3,
    "waves": {"warm": 1, "mixed": 2, "mixed_at_largest": 2, "serial_reuse": 1},
    "requests": {
        "base": {"text": "Hello from the reliability tests.", "seed": 7},
        "variations": [
            {
                "name": "other_seed",
                "changes": "seed",
                "request": {"text": "Hello from the reliability tests.", "seed": 8},
            }
        ],
        "invalid": {"text": "rejected", "max_tokens": -1},
    },
    "compare": {
        "volatile_fields": [
            {"path": "timing.wall_ms", "justification": "wall time differs on every run"},
            {"path": "timing.rtf", "justification": "real-time factor (wall time / duration) differs on every run"},
        ]
    },
    "memory": {"gpu_required": False, "host_interval_ms": 20},
    "performance": {"warm_repeats": 1},
    "timeouts": {"ready_s": 20, "request_s": 20, "wave_s": 30, "start_s": 60, "campaign_s": 300, "shutdown_grace_s": 5},
}


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def write_real_plan(tmp: Path, real: Path, name: str, **overrides: Any) -> Path:
    """A plan for the real legacy audiocpp_server in `real` (Silero VAD on its speech fixture,
    counts 1 and 2, no management routes), with `overrides` merged in; return its path."""
    exe = str(real / "bin" / "audiocpp_server")
    doc: dict[str, Any] = {
        "schema_version": 1,
        "name": name,
        "servers": {"baseline": {"executable": exe, "knows_parallel_jobs": False}, "candidate": {"executable": exe}},
        "server": {"backend": "cpu", "threads": 1, "ui_management": False},
        "model": {
            "id": "silero",
            "family": "silero_vad",
            "task": "vad",
            "mode": "offline",
            "path": str(real / "models" / "silero_vad"),
            "lazy": True,
        },
        "counts": [1, 2],
        "requests": {
            "base": {"audio": str(real / "fixtures" / "speech16k.wav")},
            "invalid": {"audio": "/nonexistent/parval-missing-input.wav"},
        },
        "compare": {"volatile_fields": [{"path": "timing", "justification": "wall time"}]},
        "status_poll_ms": 5,
        "timeouts": {"ready_s": 30, "request_s": 30, "start_s": 120, "shutdown_grace_s": 5},
    }
    path = tmp / "plan.yaml"
    path.write_text(yaml.safe_dump(_merge(doc, overrides)))
    return path


def write_plan(directory: Path, **overrides: Any) -> Path:
    """Write the small plan (with `overrides` merged in) and a model file; return the path."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "model.bin").write_bytes(b"parval stand-in model weights\n" * 4)
    plan = _merge(SMALL_PLAN, overrides)
    path = directory / "plan.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return path


@pytest.fixture
def make_plan(tmp_path: Path) -> Callable[..., Path]:
    def make(**overrides: Any) -> Path:
        return write_plan(tmp_path / "plan", **overrides)

    return make


@pytest.fixture
def real_audiocpp() -> Path:
    """The real-audiocpp folder (bin/, models/, fixtures/), or skip when it is absent."""
    exe = REAL_AUDIOCPP / "bin" / "audiocpp_server"
    if not exe.is_file():
        pytest.skip(f"no real audiocpp_server at {exe}")
    return REAL_AUDIOCPP
