"""Proposing a catalogue: `parval catalogue init` from server configs and model specs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from .kit import STANDIN, parval

WEIGHTS = b"parval catalogue-init test weights\n" * 16


def _config(directory: Path, backend: str, models: list[dict[str, Any]]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "weights").mkdir(exist_ok=True)
    (directory / "weights" / "model.bin").write_bytes(WEIGHTS)
    path = directory / f"{backend}.json"
    path.write_text(json.dumps({"backend": backend, "threads": 2, "models": models}))
    return path


TTS = {"id": "my-tts", "family": "standin_tts", "task": "tts", "path": "weights/model.bin", "slots": 3}
VAD = {"id": "my-vad", "family": "silero_vad", "task": "vad", "path": "weights/model.bin", "slots": 2}


def _fill(plan: Path) -> None:
    """What the user decides: the two executables (the stand-in here)."""
    text = plan.read_text()
    for role in ("upstream", "candidate"):
        text = text.replace(f"EDIT-ME/path/to/{role}/audiocpp_server", str(STANDIN))
    plan.write_text(text)


def test_catalogue_init_claims_each_models_advertised_counts(tmp_path: Path) -> None:
    cuda = _config(tmp_path / "cfg", "cuda", [TTS, VAD])
    vulkan = _config(tmp_path / "cfg", "vulkan", [TTS, {**VAD, "slots": 4}])
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({**TTS, "id": "spec-tts", "path": str(tmp_path / "cfg" / "weights" / "model.bin")}))
    out = tmp_path / "plans" / "catalogue.yaml"
    p = parval(
        "catalogue", "init", "--server-config", cuda, "--server-config", vulkan, "--model-spec", spec,
        "--backend", "cpu", "-o", out,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "parval catalogue validate" in p.stderr
    doc = yaml.safe_load(out.read_text())
    claims = {c["name"]: c for c in doc["claims"]}
    # one claim across backends where the advertised slots agree, one per backend where not
    assert claims["my-tts"]["backends"] == ["cuda", "vulkan"] and claims["my-tts"]["counts"] == [1, 2, 3]
    assert claims["my-vad-cuda"]["counts"] == [1, 2] and claims["my-vad-cuda"]["backends"] == ["cuda"]
    assert claims["my-vad-vulkan"]["counts"] == [1, 2, 3, 4]
    assert claims["spec-tts"]["backends"] == ["cpu"]
    assert set(doc["builds"]) == {"cuda", "vulkan", "cpu"}
    assert all("EDIT-ME" in b["candidate"]["executable"] for b in doc["builds"].values())  # left to the user
    for c in claims.values():
        assert (out.parent / c["plan"]).is_file() and c["shards"] == 1
    # The user's decisions: the candidate builds and the plans' executables; then it validates.
    text = out.read_text()
    for b in ("cuda", "vulkan", "cpu"):
        text = text.replace(f"EDIT-ME/path/to/{b}/candidate/audiocpp_server", str(STANDIN))
    out.write_text(text)
    for c in claims.values():
        _fill(out.parent / c["plan"])
    v = parval("catalogue", "validate", "--no-files", out)
    assert v.returncode == 0, v.stderr
    assert "my-tts.vulkan.offline: model my-tts" in v.stdout
    # an existing plan is kept, the catalogue never overwritten by accident
    again = parval("catalogue", "init", "--server-config", cuda, "-o", out)
    assert again.returncode == 2 and "already exists" in again.stderr
    kept = parval("catalogue", "init", "--server-config", cuda, "-o", tmp_path / "plans" / "second.yaml")
    assert kept.returncode == 0 and "kept " in kept.stderr
    assert str(STANDIN) in (out.parent / "my-tts.yaml").read_text()


def test_catalogue_init_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    assert parval("catalogue", "init", "-o", tmp_path / "c.yaml").returncode == 2
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    p = parval("catalogue", "init", "--model-spec", bad, "-o", tmp_path / "c.yaml")
    assert p.returncode == 2 and "model spec" in p.stderr
    missing = parval("catalogue", "init", "--server-config", tmp_path / "none.json", "-o", tmp_path / "c.yaml")
    assert missing.returncode == 2 and "not found" in missing.stderr
