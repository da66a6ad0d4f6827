"""What a starter plan (`parval init`, `parval catalogue init`) and the shipped Silero example
must declare so that a correct server can be admitted: the variation kinds the task
supports, a stabilisation rule declared before the run, volatile exclusions only of timing
fields the task's replies carry; a config without `slots` is said loudly; and two variations
on one input file are refused before anything starts."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from parval.outputs.volatility import content_path
from parval.plan.load import load_plan
from parval.plan.variations import supported_kinds, unjustified_omissions, variation_kind
from parval.plan.waves import mixed_waves
from tests.conftest import write_plan

from .kit import MODEL_BYTES, invoke, parval

REPO = Path(__file__).resolve().parents[2]
SILERO_EXAMPLE = REPO / "plans" / "examples" / "silero-vad.yaml"


def _config(directory: Path, models: list[dict[str, Any]], backend: str = "cpu") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "weights").mkdir(exist_ok=True)
    (directory / "weights" / "model.bin").write_bytes(MODEL_BYTES)
    path = directory / f"{backend}.json"
    path.write_text(json.dumps({"backend": backend, "threads": 2, "models": models}))
    return path


def _entry(task: str, **extra: Any) -> dict[str, Any]:
    return {"id": f"my-{task}", "family": f"standin_{task}", "task": task, "path": "weights/model.bin", **extra}


def _starter(tmp_path: Path, task: str, backend: str = "cpu", **extra: Any) -> tuple[dict[str, Any], str]:
    """The starter plan `parval init` writes for one model: (raw with defaults, text)."""
    config = _config(tmp_path / "cfg", [_entry(task, slots=2, **extra)], backend)
    plan = tmp_path / "plans" / f"{task}.yaml"
    p = invoke("init", "--server-config", config, "-o", plan)
    assert p.returncode == 0, p.stderr
    return load_plan(plan, check_files=False).raw, plan.read_text()


def _repeated_use_waves(raw: dict[str, Any], n: int) -> int:
    """The warm and mixed waves a start at count `n` runs (the waves M5.stable's window reads)."""
    return int(raw["waves"]["warm"]) + mixed_waves(raw, n)


@pytest.mark.parametrize("backend, metric", [("cpu", "host_rss"), ("cuda", "gpu_process")])
def test_the_starter_declares_a_stabilisation_rule_its_waves_can_judge(
    tmp_path: Path, backend: str, metric: str
) -> None:
    """M5.stable is PENDING without a rule: the starter declares one, with its bound stated,
    on the memory its backend uses, over no more waves than every start runs."""
    raw, text = _starter(tmp_path, "vad", backend)
    rule = raw["memory"]["stabilisation"]
    assert rule is not None and rule["metric"] == metric
    assert rule["max_growth_mib"] > 0 and f"{rule['max_growth_mib']} MiB" in text  # the bound is stated
    assert all(2 <= rule["last_k_waves"] <= _repeated_use_waves(raw, n) for n in raw["counts"])


def test_the_starter_excludes_only_timing_fields_the_task_sends(tmp_path: Path) -> None:
    """An exclusion of a field no reply carries leaves Q2 PENDING: a VAD, ASR or other
    segment/text reply's timing has no rtf; an audio output's has one; where the task's
    outputs are not known (several stems), adding it is left to the user."""
    sends = {
        "vad": ["timing.wall_ms"],
        "asr": ["timing.wall_ms"],
        "tts": ["timing.wall_ms", "timing.rtf"],
        "sep": ["timing.wall_ms"],
    }
    for task, excluded in sends.items():
        raw, text = _starter(tmp_path / task, task)
        paths = [v["path"] for v in raw["compare"]["volatile_fields"]]
        assert paths == excluded, task
        assert not [p for p in paths if content_path(p)]  # only timing scalars may be excluded (Q2)
        assert ("EDIT: add timing.rtf" in text) is (task == "sep"), task


def test_the_silero_example_declares_kinds_a_rule_and_only_what_a_vad_sends() -> None:
    """The shipped example was PENDING on M3.variation and M5.stable on any build."""
    raw = load_plan(SILERO_EXAMPLE, check_files=False).raw
    model = raw["model"]
    assert model["task"] == "vad" and model["variation_kinds"] == list(supported_kinds("vad") or ())
    assert not unjustified_omissions(model)
    kinds = [variation_kind(v) for v in raw["requests"]["variations"]]
    assert sorted(kinds) == sorted(model["variation_kinds"])
    files = [raw["requests"]["base"]["audio"], *(v["request"]["audio"] for v in raw["requests"]["variations"])]
    assert len(set(files)) == len(files)
    rule = raw["memory"]["stabilisation"]
    assert rule is not None and rule["metric"] == "host_rss"
    assert all(2 <= rule["last_k_waves"] <= _repeated_use_waves(raw, n) for n in raw["counts"])
    assert [v["path"] for v in raw["compare"]["volatile_fields"]] == ["timing.wall_ms"]
    text = SILERO_EXAMPLE.read_text()
    assert text.count("FILL IN") >= 5  # two executables, three recordings


def test_init_says_loudly_that_a_config_without_slots_gives_count_one_only(tmp_path: Path) -> None:
    config = _config(tmp_path / "cfg", [_entry("vad")])
    plan = tmp_path / "plans" / "vad.yaml"
    p = invoke("init", "--server-config", config, "-o", plan)
    assert p.returncode == 0, p.stderr
    warning = next(line for line in p.stderr.splitlines() if "slots" in line)
    assert warning.startswith("warning:") and str(config) in warning and '"slots": N' in warning
    assert "count 1 only" in warning
    text = plan.read_text()
    assert yaml.safe_load(text)["counts"] == [1]
    assert "# WARNING: the config gives model 'my-vad' no `slots`, so this plan covers count 1 only." in text
    assert f'add "slots": N to its entry in {config}' in text
    # to stdout too, and never for a config that advertises its slots
    assert '"slots": N' in invoke("init", "--server-config", config, "-o", "-").stderr
    advertised = _config(tmp_path / "two", [_entry("vad", slots=2)])
    quiet = invoke("init", "--server-config", advertised, "-o", "-")
    assert quiet.returncode == 0 and "slots" not in quiet.stderr and "WARNING" not in quiet.stdout


def test_catalogue_init_says_it_too(tmp_path: Path) -> None:
    """`catalogue init` writes its starter plans through the same code: the same warning."""
    config = _config(tmp_path / "cfg", [_entry("vad"), _entry("tts", slots=3)])
    out = tmp_path / "plans" / "catalogue.yaml"
    p = invoke("catalogue", "init", "--server-config", config, "-o", out)
    assert p.returncode == 0, p.stderr
    warnings = [line for line in p.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "'my-vad'" in warnings[0] and str(config) in warnings[0]
    assert "count 1 only" in (out.parent / "my-vad.yaml").read_text()
    assert "gives no `slots`: count 1 only" in out.read_text()


def _audio_plan(directory: Path, base: str, *variations: tuple[str, str]) -> Path:
    """The small stand-in plan whose variations each change `voice_ref` to a file."""
    (directory / "voices").mkdir(parents=True, exist_ok=True)
    for name in ("a.wav", "b.wav"):
        (directory / "voices" / name).write_bytes(b"RIFF" + name.encode() * 8)
    return write_plan(
        directory,
        requests={
            "base": {"text": "hello", "seed": 1, "voice_ref": base},
            "variations": [
                {"name": name, "changes": "voice_ref", "request": {"text": "hello", "seed": 1, "voice_ref": ref}}
                for name, ref in variations
            ],
        },
    )


def test_two_variations_on_one_file_are_refused_before_anything_starts(tmp_path: Path) -> None:
    plan = _audio_plan(
        tmp_path / "p", "voices/a.wav", ("first", "voices/b.wav"), ("second", "./voices/../voices/b.wav")
    )
    v = invoke("validate", plan)
    assert v.returncode == 2, v.stdout + v.stderr
    assert "requests.variations[0] (first) and requests.variations[1] (second)" in v.stderr
    assert str((plan.parent / "voices" / "b.wav").resolve()) in v.stderr
    out = tmp_path / "run"
    r = parval("run", plan, "--out", out)
    assert r.returncode == 2 and "(first) and requests.variations[1] (second)" in r.stderr
    assert not out.exists()  # refused before anything started
    # each variation on its own file: loaded
    ok = _audio_plan(tmp_path / "ok", "voices/a.wav", ("first", "voices/b.wav"))
    assert len(load_plan(ok).requests()) == 2


def test_a_variation_on_the_base_files_other_spelling_is_refused(tmp_path: Path) -> None:
    plan = _audio_plan(tmp_path / "p", "voices/a.wav", ("same", str(tmp_path / "p" / "voices" / "a.wav")))
    v = invoke("validate", plan)
    assert v.returncode == 2 and "requests.variations[0] (same)" in v.stderr and "base request's file" in v.stderr


def test_a_link_to_the_same_file_is_the_same_file(tmp_path: Path) -> None:
    directory = tmp_path / "p"
    plan = _audio_plan(directory, "voices/a.wav", ("first", "voices/b.wav"), ("second", "voices/link.wav"))
    os.symlink(directory / "voices" / "b.wav", directory / "voices" / "link.wav")
    assert invoke("validate", plan).returncode == 2
