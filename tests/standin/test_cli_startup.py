"""CLI, config validation, startup order and process exit behaviour."""

from __future__ import annotations

import json
import signal
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from standin_harness import MODEL_BYTES, WARNING_MARKER, Launch, free_port, model, run_cli

FAILED = "audiocpp_server failed: "


def write_config(tmp_path: Path, **top: Any) -> Path:
    (tmp_path / "model.bin").write_bytes(MODEL_BYTES)
    config = {"port": free_port(), "models": [model("m")], **top}
    path = tmp_path / "server.json"
    path.write_text(json.dumps(config))
    return path


def test_help_version_and_list_devices_exit_zero(tmp_path: Path) -> None:
    for flag, expected in (
        ("--help", "--parallel-jobs"),
        ("-h", "--config"),
        ("--version", "audiocpp_server"),
        ("--list-devices", "cpu"),
    ):
        result = run_cli([flag], tmp_path)
        assert result.returncode == 0
        assert expected in result.stdout


def test_missing_config_fails_with_the_real_text(tmp_path: Path) -> None:
    result = run_cli(["--parallel-jobs"], tmp_path)
    assert result.returncode == 1
    assert result.stderr == (FAILED + "missing required --config argument (or use --ui for the native WebUI)\n")


@pytest.mark.parametrize(
    ("top", "flagged", "message"),
    [
        ({"port": 0}, True, "server port must be in 1..65535"),
        ({"threads": 0}, True, "server threads must be positive"),
        ({"busy_timeout_ms": -1}, True, "server busy_timeout_ms must be >= 0 (0 disables the guard)"),
        ({"max_loaded_models": -2}, True, "server max_loaded_models must be >= 0 (0 disables the limit)"),
        ({"models": []}, True, "server config requires a models array"),
        ({"backend": "best"}, True, "unsupported server backend: best"),
        ({"models": [model("m", slots=1)]}, False, "slots requires --parallel-jobs at server startup"),
        ({"models": [model("m", slots=None)]}, False, "slots requires --parallel-jobs at server startup"),
        ({"models": [model("m", slots=17)]}, True, "model slots must be an integer between 1 and 16"),
        ({"models": [model("m", slots="2")]}, True, "model slots must be an integer between 1 and 16"),
        ({"models": [model("m", slots=1.5)]}, True, "model slots must be an integer between 1 and 16"),
        ({"models": [model("m"), model("m")]}, True, "duplicate server model id: m"),
        ({"models": [model("m", task="karaoke")]}, True, "unsupported task: karaoke"),
        ({"models": [model("m", mode="live")]}, True, "unsupported run mode: live"),
        (
            {"models": [model("m", busy_timeout_ms=-5)]},
            True,
            "busy_timeout_ms for model m must be >= 0 (0 disables the guard)",
        ),
        ({"models": [{"family": "f", "path": "model.bin"}]}, True, "missing required json key: id"),
    ],
)
def test_config_errors(tmp_path: Path, top: dict[str, Any], flagged: bool, message: str) -> None:
    config = write_config(tmp_path, **top)
    result = run_cli(["--config", str(config), *(["--parallel-jobs"] if flagged else [])], tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == FAILED + message
    assert "listening" not in result.stdout


def test_invalid_json_and_cli_value_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"models": [}')
    result = run_cli(["--config", str(bad)], tmp_path)
    assert (result.returncode, result.stderr.strip()) == (1, FAILED + "failed to parse json at byte 12")
    config = write_config(tmp_path)
    for args, message in (
        (["--port", "abc"], "stoi"),
        (["--threads", "0"], "--threads must be positive"),
        (["--busy-timeout-ms", "-1"], "--busy-timeout-ms must be >= 0 (0 disables the guard)"),
    ):
        result = run_cli(["--config", str(config), *args], tmp_path)
        assert (result.returncode, result.stderr.strip()) == (1, FAILED + message)


def test_unknown_fault_is_refused(tmp_path: Path) -> None:
    result = run_cli(["--config", str(write_config(tmp_path)), "--fault", "no_such_fault"], tmp_path)
    assert result.returncode == 1
    assert "unknown stand-in fault: no_such_fault" in result.stderr


def test_could_not_bind(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        config = write_config(tmp_path, port=port)
        result = run_cli(["--config", str(config), "--no-ui"], tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip().endswith(FAILED + f"could not bind 127.0.0.1:{port}")


def test_eager_load_failures_stop_startup(tmp_path: Path) -> None:
    missing = write_config(tmp_path, models=[model("m", path="nowhere.bin", lazy=False)])
    result = run_cli(["--config", str(missing), "--parallel-jobs"], tmp_path)
    assert result.returncode == 1
    assert str(tmp_path / "nowhere.bin") in result.stderr.splitlines()[-1]
    too_many = write_config(tmp_path, models=[model("m", slots=5, lazy=False, family="fam")])
    result = run_cli(["--config", str(too_many), "--parallel-jobs"], tmp_path)
    assert result.stderr.splitlines()[-1] == FAILED + (
        "model 'fam' does not support the requested slots for this backend/task/mode (capacity=4)"
    )


def test_warning_block_only_when_flagged(launch: Launch) -> None:
    flagged = launch([model("m")])
    legacy = launch([model("m")], parallel=False)
    lines = flagged.stderr().splitlines()
    start = lines.index(WARNING_MARKER)
    block = lines[start : start + 8]
    assert len(block) == 8 and all(line.startswith("WARNING:") for line in block)
    assert block[-1].endswith("Busy timeout does not cancel backend execution.")
    assert "--parallel-jobs enables EXPERIMENTAL" not in legacy.stderr()
    assert flagged.stdout() == f"audiocpp_server listening on http://127.0.0.1:{flagged.port}\n"


def test_cli_overrides_config_and_eager_models_load_before_listening(launch: Launch) -> None:
    port = free_port()
    server = launch(
        [model("e", lazy=False, knobs={"load_ms": 300}), model("l")],
        args=["--port", str(port), "--backend", "cpu"],
        port=free_port(),
        wait=False,
    )
    server.client.base_url = f"http://127.0.0.1:{port}"  # the CLI port wins over the config's
    server.wait_ready()
    models = server.models()
    assert models["e"]["loaded"] is True and models["e"]["max_parallel_slots"] == 4
    assert models["l"]["loaded"] is False
    assert server.get("/health").json()["backend"] == "cpu"
    assert "audio.cpp is optimized for CUDA. The cpu server backend" in server.stderr()


def test_eager_models_over_the_residency_limit_are_deferred(launch: Launch) -> None:
    server = launch([model("a", lazy=False), model("b", lazy=False)], max_loaded_models=1)
    assert [e["loaded"] for e in server.models().values()] == [True, False]
    assert (
        "model 'b' registered but not loaded (max_loaded_models=1 reached); it loads on first use"
    ) in server.stderr()


def test_sigterm_lets_in_flight_work_finish(launch: Launch) -> None:
    server = launch([model("m", knobs={"service_ms": 400})])
    pending = server.submit(lambda: server.run("m", {"text": "hello"}))
    server.wait_for(lambda m: m["m"]["active_slots"] == 1)
    server.proc.send_signal(signal.SIGTERM)
    assert pending.result(10).response.status_code == 200
    assert server.proc.wait(10) == 0
    assert server.stdout().splitlines()[-1] == "audiocpp_server stopped"


def test_startup_crash_fault(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    result = run_cli(["--config", str(config)], tmp_path, env={"PARVAL_STANDIN_FAULTS": "startup_crash"})
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == FAILED + "injected startup crash"


def test_never_ready_fault_stays_alive_without_a_socket(launch: Launch) -> None:
    server = launch([model("m")], faults=["never_ready"], wait=False)
    time.sleep(0.8)
    assert server.proc.poll() is None
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", server.port)) != 0
    assert server.stop() == 0


def test_hang_shutdown_fault_ignores_sigterm(launch: Launch) -> None:
    server = launch([model("m")], env={"PARVAL_STANDIN_FAULTS": "hang_shutdown"})
    server.proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    assert server.proc.poll() is None
    assert server.get("/health").status_code == 200
    server.proc.kill()
    assert server.proc.wait(5) == -signal.SIGKILL
