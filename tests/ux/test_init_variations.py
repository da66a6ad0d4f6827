"""`parval init`'s starter plans propose variations that fit the task (audio-in tasks take
no seed), and keep an absolute model path from the config absolute."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from parval.plan.load import load_plan, variation_kind

from .kit import MODEL_BYTES, STANDIN, parval

WEIGHTS = MODEL_BYTES
TTS = {"id": "my-tts", "family": "standin_tts", "task": "tts", "path": "weights/model.bin", "slots": 3}
VAD = {"id": "my-vad", "family": "silero_vad", "task": "vad", "path": "weights/model.bin", "slots": 2}


def _config(directory: Path, backend: str, models: list[dict[str, Any]]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "weights").mkdir(exist_ok=True)
    (directory / "weights" / "model.bin").write_bytes(WEIGHTS)
    path = directory / f"{backend}.json"
    path.write_text(json.dumps({"backend": backend, "threads": 2, "models": models}))
    return path


def _fill(plan: Path) -> None:
    """What the user decides: the two executables (the stand-in here)."""
    text = plan.read_text()
    for role in ("upstream", "candidate"):
        text = text.replace(f"EDIT-ME/path/to/{role}/audiocpp_server", str(STANDIN))
    plan.write_text(text)


def test_init_proposes_audio_variations_for_a_vad_model(tmp_path: Path) -> None:
    """VAD and ASR take no seed: a seed variation could not change the input."""
    weights = tmp_path / "abs" / "silero_vad"
    weights.mkdir(parents=True)
    (weights / "model.bin").write_bytes(WEIGHTS)
    config = _config(tmp_path / "cfg", "cpu", [{**VAD, "path": str(weights)}])
    plan = tmp_path / "plans" / "vad.yaml"
    p = parval("init", "--server-config", config, "-o", plan)
    assert p.returncode == 0, p.stderr
    raw = yaml.safe_load(plan.read_text())
    assert raw["model"]["variation_kinds"] == ["length", "content"]
    assert raw["model"]["path"] == str(weights)  # absolute in the config: absolute in the plan
    bodies = [raw["requests"]["base"], *(v["request"] for v in raw["requests"]["variations"])]
    assert all("seed" not in b for b in bodies)
    assert {v["changes"] for v in raw["requests"]["variations"]} == {"audio"}
    assert [variation_kind(v) for v in raw["requests"]["variations"]] == ["length", "content"]
    assert len({b["audio"] for b in bodies}) == 3  # three different inputs
    # Filled in with real recordings, the plan validates.
    text = plan.read_text()
    for i in (1, 2, 3):
        wav = tmp_path / "fixtures" / f"input-{i}.wav"
        wav.parent.mkdir(exist_ok=True)
        wav.write_bytes(b"RIFF" + bytes(40 + i))
        text = text.replace(f"EDIT-ME/fixtures/input-{i}.wav", str(wav))
    plan.write_text(text)
    _fill(plan)
    assert load_plan(plan).model_path == weights


def test_init_proposes_text_seed_and_a_reference_choice_for_tts(tmp_path: Path) -> None:
    config = _config(tmp_path / "cfg", "cpu", [TTS])
    p = parval("init", "--server-config", config, "-o", "-")
    assert p.returncode == 0, p.stderr
    raw = yaml.safe_load(p.stdout)
    assert raw["model"]["variation_kinds"] == ["length", "seed"]
    assert [variation_kind(v) for v in raw["requests"]["variations"]] == ["length", "seed"]
    # a reference voice is the user's decision: written out, commented
    assert "#   changes: voice_ref" in p.stdout and "add\n    # `reference` to model.variation_kinds" in p.stdout
    # a relative model path is re-expressed relative to the plan (stdout: the current folder)
    assert not Path(raw["model"]["path"]).is_absolute()
