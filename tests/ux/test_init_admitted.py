"""A plan `parval init` writes for a correct server reaches ADMITTED once the user fills in
only what only the user knows: the two executables, the input recordings, the framework
record and verify-protected result, and the builds' identity (source commits, build flags,
quantization). Here the server is the stand-in, from its own config (a VAD model with two
advertised slots), and the framework record the synthetic one the UX campaigns use."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf
import yaml

from tests.records_kit import CANDIDATE_COMMIT, UPSTREAM

from .kit import MODEL_BYTES, STANDIN, parval, write_framework

pytestmark = pytest.mark.slow

# The stand-in's config as a user has it: its management routes on, a VAD model advertising
# two slots, 100 ms per request and 80 ms loads (the campaign tests' stand-in timings); the
# test also runs it at 30 ms per request, as quick as a real VAD model on a CPU.
VAD = {
    "id": "my-vad",
    "family": "silero_vad",
    "task": "vad",
    "path": "weights/model.bin",
    "slots": 2,
    "load_options": {"service_ms": 100, "load_ms": 80},
}
STANDIN_CONFIG = {"backend": "cpu", "threads": 2, "ui_management": True, "models": [VAD]}


def _recording(path: Path, seconds: float, burst_hz: float) -> None:
    """A 16 kHz mono WAV: a tone in bursts (speech and pauses for a VAD) over faint noise."""
    t = np.arange(int(16000 * seconds)) / 16000
    bursts = (np.sin(2 * np.pi * burst_hz * t) > 0).astype(float)
    noise = 0.01 * np.random.default_rng(int(burst_hz * 10)).standard_normal(t.size)
    sf.write(path, 0.5 * bursts * np.sin(2 * np.pi * 220 * t) + noise, 16000, subtype="PCM_16")


def _fill(starter: dict[str, Any], fixtures: dict[str, str]) -> dict[str, Any]:
    """What only the user knows, set in the starter plan; nothing else changes."""
    plan = json.loads(json.dumps(starter))
    for role in ("baseline", "candidate"):
        plan["servers"][role]["executable"] = str(STANDIN)
    plan["requests"]["base"]["audio"] = fixtures["base"]
    for variation in plan["requests"]["variations"]:
        variation["request"]["audio"] = fixtures[variation["name"]]
    plan["framework"] = {"record": "framework", "protected": "x4.json"}
    plan["identity"] = {
        "baseline": {"source_commit": UPSTREAM, "build_flags": "none (Python stand-in)"},
        "candidate": {"source_commit": CANDIDATE_COMMIT, "build_flags": "none (Python stand-in)"},
        "quantization": "none",
    }
    return plan


@pytest.mark.parametrize("service_ms", [100, 30])
def test_a_starter_plan_for_a_correct_server_is_admitted_at_every_advertised_count(
    tmp_path: Path, service_ms: int
) -> None:
    config_dir = tmp_path / "server"
    (config_dir / "weights").mkdir(parents=True)
    (config_dir / "weights" / "model.bin").write_bytes(MODEL_BYTES)
    config = config_dir / "server.json"
    vad = {**VAD, "load_options": {"service_ms": service_ms, "load_ms": 80}}
    config.write_text(json.dumps({**STANDIN_CONFIG, "models": [vad]}))
    plan_path = tmp_path / "plans" / "my-vad.yaml"
    init = parval("init", "--server-config", config, "-o", plan_path)
    assert init.returncode == 0, init.stderr
    starter = yaml.safe_load(plan_path.read_text())
    assert starter["counts"] == [1, 2]  # 1..the advertised slots

    fixtures = plan_path.parent / "fixtures"
    fixtures.mkdir()
    _recording(fixtures / "base.wav", 1.0, 1.0)
    _recording(fixtures / "longer.wav", 2.0, 1.0)  # another length
    _recording(fixtures / "other.wav", 1.0, 1.7)  # as long, other speech and pauses
    write_framework(plan_path.parent)
    filled = _fill(
        starter,
        {"base": "fixtures/base.wav", "other_length": "fixtures/longer.wav", "other_content": "fixtures/other.wav"},
    )
    plan_path.write_text(yaml.safe_dump(filled, sort_keys=False))

    out = tmp_path / "run"
    run = parval("run", plan_path, "--out", out, "--quiet", timeout=600)
    evidence = json.loads((out / "evidence.json").read_text())
    unresolved = {a["id"]: a["reason"] for a in evidence["assertions"] if a["status"] not in ("PASS", "NOT_APPLICABLE")}
    assert run.returncode == 0, (run.stdout, unresolved)
    assert evidence["verdict"]["admitted_counts"] == starter["counts"] and evidence["admission_ready"] is True
    assert "ADMITTED at counts 1, 2" in run.stdout
