"""`parval init` writes a plan with nothing left to guess: the executables it is given, the
three input recordings of an audio-input model derived from one speech WAV (with how each
was made and its sha256), and timeouts that are either defaults said to be checked or
measured from one start of the candidate. A start that fails leaves the defaults and says so."""

from __future__ import annotations

import hashlib
import json
import wave
from pathlib import Path
from typing import Any

import pytest
import yaml

from parval.plan.derived_fixtures import MANIFEST, derive_fixtures
from parval.plan.load import load_plan
from parval.plan.schedule import schedule_rows
from parval.plan.starter import DEFAULT_TIMEOUTS, PLACEHOLDER, StartTimes, measured_timeouts
from parval.rundir.estimate import bound_line
from tests.conftest import STANDIN

from .kit import MODEL_BYTES, Invoked, invoke

RATE = 16000


def _wav(path: Path, frames: list[int], rate: int = RATE) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"".join(int(v).to_bytes(2, "little", signed=True) for v in frames))
    return path


def _samples(path: Path) -> list[int]:
    with wave.open(str(path), "rb") as w:
        data = w.readframes(w.getnframes())
    return [int.from_bytes(data[i : i + 2], "little", signed=True) for i in range(0, len(data), 2)]


def _config(directory: Path, entry: dict[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "model.bin").write_bytes(MODEL_BYTES)
    path = directory / "server.json"
    path.write_text(json.dumps({"backend": "cpu", "threads": 1, "models": [entry]}))
    return path


VAD = {"id": "vad", "family": "standin_vad", "task": "vad", "path": "model.bin", "slots": 2}
TTS = {
    "id": "tts",
    "family": "standin_tts",
    "task": "tts",
    "path": "model.bin",
    "slots": 2,
    "load_options": {"capacity": 2, "service_ms": 30, "load_ms": 20},
}


def test_the_three_inputs_are_the_base_its_first_half_and_the_base_reversed(tmp_path: Path) -> None:
    frames = [(i * 37) % 2000 - 1000 for i in range(RATE * 2 + 1)]  # 2 s and one frame
    speech = _wav(tmp_path / "speech.wav", frames)
    made = derive_fixtures(speech, tmp_path / "fx")
    by_role = {f.role: f for f in made}
    assert [f.role for f in made] == ["base", "other_length", "other_content"]
    assert _samples(by_role["base"].path) == frames
    assert _samples(by_role["other_length"].path) == frames[: len(frames) // 2]
    assert _samples(by_role["other_content"].path) == frames[::-1]
    manifest = json.loads((tmp_path / "fx" / MANIFEST).read_text())
    assert manifest["source"]["sha256"] == hashlib.sha256(speech.read_bytes()).hexdigest()
    for entry in manifest["fixtures"]:
        path = tmp_path / "fx" / entry["file"]
        assert entry["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest(), entry
        assert entry["made"]


def test_a_stereo_recording_is_reversed_frame_by_frame(tmp_path: Path) -> None:
    """Reversing bytes or samples would swap the channels of a stereo file; frames keep them."""
    speech = tmp_path / "stereo.wav"
    with wave.open(str(speech), "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"".join(i.to_bytes(2, "little") + (1000 + i).to_bytes(2, "little") for i in range(8000)))
    reversed_ = {f.role: f for f in derive_fixtures(speech, tmp_path / "fx")}["other_content"].path
    samples = _samples(reversed_)
    assert samples[:4] == [7999, 8999, 7998, 8998]


@pytest.mark.parametrize("content, expected", [(b"RIFF not a wave", "not a PCM WAV"), (None, "not found")])
def test_an_unreadable_recording_is_refused(tmp_path: Path, content: bytes | None, expected: str) -> None:
    speech = tmp_path / "speech.wav"
    if content is not None:
        speech.write_bytes(content)
    p = invoke("init", "--server-config", _config(tmp_path / "cfg", VAD), "--speech", speech, "-o", tmp_path / "p.yaml")
    assert p.returncode == 2 and expected in p.stderr, p.stderr
    assert not (tmp_path / "p.yaml").exists()


def test_a_recording_too_short_to_halve_is_refused(tmp_path: Path) -> None:
    speech = _wav(tmp_path / "short.wav", [0] * (RATE // 2))
    p = invoke("init", "--server-config", _config(tmp_path / "cfg", VAD), "--speech", speech, "-o", tmp_path / "p.yaml")
    assert p.returncode == 2 and "at least 1 s" in p.stderr, p.stderr


def test_init_with_executables_and_speech_leaves_nothing_to_fill_in(tmp_path: Path) -> None:
    speech = _wav(tmp_path / "rec" / "speech.wav", [(i % 300) - 150 for i in range(RATE * 3)])
    plan_path = tmp_path / "plans" / "vad.yaml"
    p = invoke(
        "init",
        "--server-config",
        _config(tmp_path / "cfg", VAD),
        "--baseline",
        STANDIN,
        "--candidate",
        STANDIN,
        "--speech",
        speech,
        "-o",
        plan_path,
    )
    assert p.returncode == 0, p.stderr
    text = plan_path.read_text()
    assert PLACEHOLDER not in text
    plan = load_plan(plan_path)  # every file it names exists
    bodies = {r.name: r.body["audio"] for r in plan.requests()}
    assert bodies == {
        "base": str(tmp_path / "plans" / "vad-fixtures" / "input.wav"),
        "other_length": str(tmp_path / "plans" / "vad-fixtures" / "input-first-half.wav"),
        "other_content": str(tmp_path / "plans" / "vad-fixtures" / "input-reversed.wav"),
    }
    # How each input was made and its hash are in the plan, as in the manifest beside it.
    manifest = json.loads((tmp_path / "plans" / "vad-fixtures" / MANIFEST).read_text())
    for entry in manifest["fixtures"]:
        assert f"{entry['file']}: {entry['made']}" in text and entry["sha256"] in text
    assert f"next: parval validate {plan_path}" in p.stderr


def test_unmeasured_timeouts_are_defaults_the_plan_says_to_check(tmp_path: Path) -> None:
    """Without --measure the plan still bounds a hung server: each start at timeouts.start_s
    (20 minutes), not the schema's hour, and the plan says the values are to be checked."""
    plan_path = tmp_path / "p.yaml"
    p = invoke("init", "--server-config", _config(tmp_path / "cfg", TTS), "-o", plan_path)
    assert p.returncode == 0, p.stderr
    text = plan_path.read_text()
    assert "# CHECK: defaults, not measured" in text and "parval init\n  # --measure" in text
    plan = load_plan(plan_path, check_files=False)
    assert {k: plan.timeouts[k] for k in DEFAULT_TIMEOUTS} == DEFAULT_TIMEOUTS
    assert plan.timeouts["start_s"] < 3600
    assert "x timeouts.start_s 1200 s" in bound_line(plan), bound_line(plan)


def test_measure_sets_timeouts_from_one_start_of_the_candidate(tmp_path: Path) -> None:
    plan_path = tmp_path / "p.yaml"
    p = invoke(
        "init",
        "--server-config",
        _config(tmp_path / "cfg", TTS),
        "--baseline",
        STANDIN,
        "--candidate",
        STANDIN,
        "--measure",
        "-o",
        plan_path,
    )
    assert p.returncode == 0, p.stderr
    assert "measured: ready in" in p.stderr
    text = plan_path.read_text()
    assert "`parval init --measure`): ready in" in text and "CHECK: defaults" not in text
    plan = load_plan(plan_path)
    # A 30 ms request and a 20 ms load: every limit is at its floor, far below the defaults.
    assert plan.timeouts["request_s"] == 30 and plan.timeouts["start_s"] == 120
    assert plan.timeouts["campaign_s"] == 600
    assert "at most 10.0 min" in bound_line(plan), bound_line(plan)


def _measure_with_candidate(tmp_path: Path, script: str) -> tuple[Invoked, Path]:
    """`init --measure` with the stand-in as baseline and a candidate that runs `script`."""
    candidate = tmp_path / "bin" / "audiocpp_server"
    candidate.parent.mkdir()
    candidate.write_text(f"#!/bin/sh\n{script}\n")
    candidate.chmod(0o755)
    plan_path = tmp_path / "p.yaml"
    config = _config(tmp_path / "cfg", TTS)
    p = invoke(
        "init", "--server-config", config, "--baseline", STANDIN, "--candidate", candidate, "--measure", "-o", plan_path
    )
    return p, plan_path


def test_a_candidate_that_cannot_start_leaves_the_default_timeouts_and_says_so(tmp_path: Path) -> None:
    p, plan_path = _measure_with_candidate(tmp_path, "echo 'cannot load model' >&2\nexit 3")
    assert p.returncode != 0
    assert "exited with status 3" in p.stderr and "written with default timeouts" in p.stderr, p.stderr
    assert "# CHECK: defaults, not measured" in plan_path.read_text()


def test_measure_needs_the_executables_and_the_inputs(tmp_path: Path) -> None:
    config = _config(tmp_path / "cfg", VAD)
    p = invoke("init", "--server-config", config, "--measure", "-o", tmp_path / "a.yaml")
    assert p.returncode == 2 and "give --baseline and --candidate" in p.stderr
    p = invoke(
        "init", "--server-config", config, "--baseline", STANDIN, "--candidate", STANDIN, "--measure",
        "-o", tmp_path / "b.yaml",
    )  # fmt: skip
    assert p.returncode == 2 and "give --speech" in p.stderr
    speech = _wav(tmp_path / "s.wav", [0] * RATE * 2)
    p = invoke("init", "--server-config", config, "--speech", speech, "-o", "-")
    assert p.returncode == 2 and "give --output FILE" in p.stderr
    p = invoke("init", "--server-config", _config(tmp_path / "t", TTS), "--speech", speech, "-o", tmp_path / "c.yaml")
    assert p.returncode == 2 and "takes text, not audio" in p.stderr


@pytest.mark.parametrize("scale", [1.0, 100.0])
def test_measured_timeouts_cover_a_slow_but_healthy_start(tmp_path: Path, scale: float) -> None:
    """The limits grow with what was measured: each covers the measured time with margin
    (a request queued behind the others at the largest count, a start's whole schedule)."""
    plan_path = tmp_path / "p.yaml"
    invoke("init", "--server-config", _config(tmp_path / "cfg", TTS), "-o", plan_path)
    plan = load_plan(plan_path, check_files=False)
    times = StartTimes("exe", 0.3 * scale, 0.2 * scale, 0.05 * scale, 0.1 * scale, 7)
    rows = schedule_rows(plan)
    t = measured_timeouts(times, rows, max(plan.counts))
    assert t["ready_s"] >= 10 * times.ready_s and t["request_s"] >= 10 * 2 * times.request_s
    assert t["wave_s"] >= t["request_s"] and t["start_s"] >= t["ready_s"] + t["wave_s"]
    per_start = max(r[3] / r[1] for r in rows if r[1])
    assert t["start_s"] >= 5 * (times.ready_s + times.first_request_s + per_start * times.request_s)
    assert t["campaign_s"] >= t["start_s"]
    yaml.safe_dump(t)  # plain integers
    assert all(isinstance(v, int) for v in t.values())


def test_a_candidate_that_drops_requests_leaves_the_default_timeouts(tmp_path: Path) -> None:
    """A server that becomes ready but answers no request is not timed as a fast one."""
    p, plan_path = _measure_with_candidate(tmp_path, f'exec "{STANDIN}" --fault drop_connection "$@"')
    assert p.returncode != 0
    assert "request 'base' failed while measuring" in p.stderr, p.stderr
    assert "# CHECK: defaults, not measured" in plan_path.read_text()
