"""The GPU example plan (plans/examples/silero-vad-cuda.yaml): `parval validate` accepts it,
as docs/gpu-box.md runs it from the repository root, once the files it names exist (two CUDA
builds in audio.cpp checkouts beside parval, the model, the inputs of the first real run);
its device numbers agree, and a CUDA_VISIBLE_DEVICES that moves the server to another GPU is
warned about."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import wave
from pathlib import Path

import yaml

from parval.plan.derived_fixtures import derive_fixtures
from parval.plan.load import load_plan

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "plans" / "examples" / "silero-vad-cuda.yaml"
PAGE = ROOT / "docs" / "gpu-box.md"
COMMAND = ".venv/bin/parval validate plans/examples/silero-vad-cuda.yaml"
H100_TOTAL_MIB = 81559  # nvidia-smi --query-gpu=memory.total on an 80 GB H100


def _layout(tmp: Path) -> Path:
    """parval's checkout beside two audio.cpp checkouts, as the example's paths expect."""
    root = tmp / "parval"
    (root / "plans" / "examples").mkdir(parents=True)
    shutil.copy(EXAMPLE, root / "plans" / "examples" / EXAMPLE.name)
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "bin" / "parval").symlink_to(Path(sys.executable).parent / "parval")
    for checkout in ("audio.cpp-upstream", "audio.cpp"):
        exe = tmp / checkout / "build-cuda" / "bin" / "audiocpp_server"
        exe.parent.mkdir(parents=True)
        exe.write_text("#!/bin/sh\nexit 0\n")
        exe.chmod(0o755)
    (tmp / "audio.cpp" / "assets" / "framework" / "models" / "silero_vad").mkdir(parents=True)
    speech = tmp / "speech.wav"
    with wave.open(str(speech), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(bytes(2 * 16000 * 2))
    derive_fixtures(speech, root / "runs" / "first" / "silero-fixtures")
    return root


def _validate(root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_", "NVIDIA_"))}
    return subprocess.run(
        ["bash", "-c", COMMAND], cwd=root, env={**clean, **env}, capture_output=True, text=True, timeout=120
    )


def test_the_page_shows_the_command() -> None:
    assert COMMAND in PAGE.read_text()


def test_validate_accepts_the_gpu_example(tmp_path: Path) -> None:
    root = _layout(tmp_path)
    p = _validate(root)
    assert p.returncode == 0, p.stderr
    assert "is valid" in p.stdout
    # Where NVML cannot be read (no driver), validate says `parval run` would refuse the plan:
    # the example requires its GPU. No other warning.
    warnings = [line for line in p.stderr.splitlines() if line.startswith("warning:")]
    assert all("GPU memory cannot be read here" in w for w in warnings), p.stderr


def test_the_example_s_gpu_fields_agree(tmp_path: Path) -> None:
    plan = load_plan(EXAMPLE, check_files=False)
    raw = yaml.safe_load(EXAMPLE.read_text())
    assert plan.server["backend"] == "cuda"
    # Nothing hidden and PCI bus order on both sides: CUDA's number is NVML's.
    assert raw["memory"]["nvml_device_index"] == raw["server"]["device"]
    for role in ("baseline", "candidate"):
        assert raw["servers"][role]["env"]["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert raw["memory"]["gpu_required"] is True
    assert raw["memory"]["guard_mib"] == math.floor(0.9 * H100_TOTAL_MIB)
    assert str(H100_TOTAL_MIB) in EXAMPLE.read_text()
    assert raw["memory"]["stabilisation"]["metric"] == "gpu_process"
    assert plan.timeouts["start_s"] < 3600


def test_a_hidden_gpu_that_moves_the_server_is_warned_about(tmp_path: Path) -> None:
    """With CUDA_VISIBLE_DEVICES=2,3, device 0 is physical GPU 2: NVML index 0 is the wrong GPU."""
    root = _layout(tmp_path)
    p = _validate(root, CUDA_VISIBLE_DEVICES="2,3")
    assert p.returncode == 0, p.stderr
    assert "is the GPU NVML numbers 2, but memory.nvml_device_index is 0" in p.stderr, p.stderr
