"""Safe by default: loopback binding, no shell, an allow-listed environment, redaction."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from parval.server import process as server_mod
from parval.server.process import ENV_ALLOW, LaunchSpec, server_config, spawn

from .conftest import parval

PLAN_SERVER = {"backend": "cpu", "device": 0, "threads": 1, "busy_timeout_ms": 1, "max_loaded_models": 0}


def test_servers_bind_to_loopback_unless_the_plan_says_otherwise() -> None:
    assert server_config(PLAN_SERVER, {"id": "m"})["host"] == "127.0.0.1"
    assert server_config({**PLAN_SERVER, "host": "0.0.0.0"}, {"id": "m"})["host"] == "0.0.0.0"
    # parval itself still talks to a wildcard-bound server over loopback
    assert server_mod.connect_host("0.0.0.0") == "127.0.0.1"


def test_every_recorded_server_config_bound_to_loopback(complete_run: Path) -> None:
    configs = sorted((complete_run / "servers").rglob("config.json"))
    assert configs
    for cfg in configs:
        assert json.loads(cfg.read_text())["host"] == "127.0.0.1", cfg


def test_env_allow_list_is_documented() -> None:
    doc = server_mod.__doc__ or ""
    for name in ENV_ALLOW:
        assert re.search(rf"\b{name}\b", doc), f"{name} missing from parval.server.process docstring"


def _env_dumper(tmp_path: Path) -> Path:
    script = tmp_path / "dump-env"
    script.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        "open('env.json', 'w').write(json.dumps(dict(os.environ)))\n"
        "open('argv.txt', 'w').write(json.dumps(sys.argv))\n"
    )
    script.chmod(0o755)
    return script


def test_server_gets_plan_env_plus_allow_list_only_and_no_shell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "do-not-leak")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:1")
    monkeypatch.setenv("LANG", "C.UTF-8")
    calls: list[dict[str, Any]] = []
    real_popen = server_mod.subprocess.Popen

    def popen(*args: Any, **kwargs: Any) -> Any:
        calls.append({"args": args, "kwargs": kwargs})
        return real_popen(*args, **kwargs)

    monkeypatch.setattr(server_mod.subprocess, "Popen", popen)
    spec = LaunchSpec(_env_dumper(tmp_path), {"host": "127.0.0.1"}, True, ("--x", "a b; rm -rf /"), {"PLAN_VAR": "1"})
    srv = spawn(spec, tmp_path / "srv", "envtest")
    srv.proc.wait(timeout=10)  # the script dumps its environment and exits
    anyio.run(srv.stop, 5.0)
    server_calls = [c for c in calls if c["args"] and c["args"][0][0] == str(spec.executable)]
    (call,) = server_calls
    assert isinstance(call["args"][0], list) and not call["kwargs"].get("shell")
    assert call["kwargs"]["start_new_session"] is True
    env = json.loads((tmp_path / "srv" / "env.json").read_text())
    assert env.get("PLAN_VAR") == "1" and env.get("LANG") == "C.UTF-8"
    assert "AWS_SECRET_ACCESS_KEY" not in env and "HTTPS_PROXY" not in env
    assert set(env) <= set(ENV_ALLOW) | {"PLAN_VAR"} | {"LC_CTYPE"}  # LC_CTYPE: set by Python itself
    argv = json.loads((tmp_path / "srv" / "argv.txt").read_text())
    assert argv[-2:] == ["--x", "a b; rm -rf /"]  # passed through verbatim, never to a shell


def test_report_redact_paths_hides_absolute_paths(complete_run: Path) -> None:
    plain = parval("report", complete_run, "--format", "json")
    assert str(complete_run.parent) in plain.stdout  # the evidence does name local paths...
    for fmt in ("json", "md"):
        red = parval("report", complete_run, "--redact-paths", "--format", fmt)
        assert red.returncode == plain.returncode, red.stderr
        assert str(complete_run.parent) not in red.stdout, fmt  # ...which redaction hides
        assert "<path:" in red.stdout or fmt == "md"
    from parval.report.redact import redact_paths

    assert redact_paths("/home/me/model.gguf and /home/me/model.gguf") == redact_paths(
        "/home/me/model.gguf"
    ) + " and " + redact_paths("/home/me/model.gguf")
    assert redact_paths("POST http://127.0.0.1:8080/v1/tasks/run") == "POST http://127.0.0.1:8080/v1/tasks/run"
