"""Getting started: `parval init`, `parval schema`, shell completion."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import yaml

from parval.plan.schemas import load_schema

from .kit import MODEL_BYTES, STANDIN, Outcome, invoke, parval


def _config(directory: Path, models: list[dict[str, object]], **top: object) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "weights").mkdir(exist_ok=True)
    (directory / "weights" / "model.bin").write_bytes(MODEL_BYTES)
    path = directory / "server.json"
    path.write_text(json.dumps({"backend": "cpu", "threads": 2, **top, "models": models}))
    return path


TTS = {
    "id": "my-tts",
    "family": "standin_tts",
    "task": "tts",
    "path": "weights/model.bin",
    "slots": 3,
    "load_options": {"capacity": 4, "service_ms": 30},
}


def test_init_writes_a_plan_that_validates_once_edited(tmp_path: Path) -> None:
    config = _config(tmp_path / "server", [TTS], ui_management=True)
    plan = tmp_path / "plans" / "my-tts.yaml"
    p = invoke("init", "--server-config", config, "--output", plan)
    assert p.returncode == 0, p.stderr
    assert "parval validate" in p.stderr
    text = plan.read_text()
    raw = yaml.safe_load(text)
    assert raw["counts"] == [1, 2, 3]  # up to the advertised slots
    assert raw["model"]["id"] == "my-tts" and raw["model"]["load_options"] == TTS["load_options"]
    assert raw["server"]["threads"] == 2 and raw["server"]["ui_management"] is True
    assert (plan.parent / raw["model"]["path"]).resolve() == (config.parent / "weights" / "model.bin").resolve()
    assert raw["requests"]["base"]["seed"] and raw["requests"]["variations"]
    # placeholders are named by validate ...
    before = invoke("validate", plan)
    assert before.returncode == 2
    assert "servers.baseline.executable" in before.stderr and "servers.candidate.executable" in before.stderr
    # ... and once they are real, the plan is valid
    plan.write_text(
        text.replace("EDIT-ME/path/to/upstream/audiocpp_server", str(STANDIN)).replace(
            "EDIT-ME/path/to/candidate/audiocpp_server", str(STANDIN)
        )
    )
    after = invoke("validate", plan)
    assert after.returncode == 0, after.stderr
    assert "counts [1, 2, 3]" in after.stdout
    # never overwritten by accident
    again = invoke("init", "--server-config", config, "--output", plan)
    assert again.returncode == 2 and "already exists" in again.stderr


def test_init_audio_task_has_fixture_placeholders(tmp_path: Path) -> None:
    asr = {"id": "my-asr", "family": "standin_asr", "task": "asr", "path": "weights/model.bin", "slots": 2}
    config = _config(tmp_path, [TTS, asr])
    p = invoke("init", "--server-config", config, "--output", "-", "--model", "my-asr")
    assert p.returncode == 0, p.stderr
    raw = yaml.safe_load(p.stdout)
    assert raw["counts"] == [1, 2]
    assert "EDIT-ME" in raw["requests"]["base"]["audio"]
    plan = tmp_path / "asr.yaml"
    plan.write_text(
        p.stdout.replace("EDIT-ME/path/to/upstream/audiocpp_server", str(STANDIN)).replace(
            "EDIT-ME/path/to/candidate/audiocpp_server", str(STANDIN)
        )
    )
    v = invoke("validate", plan)
    assert v.returncode == 2 and "requests.base.audio" in v.stderr


def test_init_usage_errors(tmp_path: Path) -> None:
    config = _config(tmp_path, [TTS, {**TTS, "id": "other"}])
    several = invoke("init", "--server-config", config, "--output", "-")
    assert several.returncode == 2 and "--model" in several.stderr and "my-tts" in several.stderr
    unknown = invoke("init", "--server-config", config, "--model", "nope", "--output", "-")
    assert unknown.returncode == 2
    missing = invoke("init", "--server-config", tmp_path / "none.json")
    assert missing.returncode == 2
    bad = _config(tmp_path / "bad", [{**TTS, "slots": 17}])
    assert invoke("init", "--server-config", bad, "--output", "-").returncode == 2


def test_schema_command(admitted_run: Outcome) -> None:
    plan = invoke("schema", "plan")
    assert plan.returncode == 0 and json.loads(plan.stdout) == load_schema("plan")
    ev = invoke("schema", "evidence")
    assert ev.returncode == 0
    schema = json.loads(ev.stdout)
    assert set(schema["required"]) >= {
        "schema_version",
        "procedure_version",
        "run",
        "identity",
        "verdict",
        "assertions",
        "model_checks",
        "framework_checks",
        "admission_ready",
        "all_plan_rules",
        "performance",
    }
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(admitted_run.evidence, schema)


def test_evidence_of_every_outcome_validates(failed_run: Outcome, shard_runs: tuple[Outcome, Outcome]) -> None:
    schema = load_schema("evidence")
    for run in (failed_run, *shard_runs):
        jsonschema.validate(run.evidence, schema)


def test_demo_plan_evidence_shape_rejects_garbage() -> None:
    schema = load_schema("evidence")
    validator = jsonschema.Draft202012Validator(schema)
    assert list(validator.iter_errors({"schema_version": 1}))


def test_shell_completion() -> None:
    p = parval("--show-completion", "bash")
    assert p.returncode == 0 and "parval" in p.stdout and "complete" in p.stdout
