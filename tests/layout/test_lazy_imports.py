"""A command loads only the subsystems it uses: `parval --help` (the CLI with every command
registered) loads no judge, campaign, server, report, framework, claims, bench or
source-boundary module, and a model run (`parval run`'s own imports) loads nothing of the
framework record's probes, the claims, the bench or the source boundary."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = (
    "parval.gates",
    "parval.runners",
    "parval.server",
    "parval.report",
    "parval.framework",
    "parval.claims",
    "parval.bench",
    "parval.protected",
    "parval.judge",
    "parval.standin",
)
NOT_IN_A_MODEL_RUN = ("parval.framework.probes", "parval.framework.collect", "parval.claims", "parval.bench")
NOT_IN_A_MODEL_RUN += ("parval.protected.check", "parval.standin")


def _loaded(code: str) -> list[str]:
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('parval'))))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    loaded: list[str] = json.loads(out.stdout.splitlines()[-1])
    return loaded


def test_the_cli_loads_no_subsystem_until_a_command_needs_it() -> None:
    loaded = _loaded("from parval.cli import app")
    assert "parval.commands.run" in loaded  # every command is registered
    heavy = [m for m in loaded if m.startswith(HEAVY)]
    assert not heavy, f"`parval --help` loads {heavy}: import them inside the command that uses them"


def test_a_model_run_loads_nothing_of_the_framework_probes() -> None:
    loaded = _loaded(
        "import parval.commands.run, parval.api, parval.judge, parval.runners.campaign, parval.report.write"
    )
    assert "parval.runners.campaign" in loaded and "parval.judge" in loaded
    extra = [m for m in loaded if m.startswith(NOT_IN_A_MODEL_RUN)]
    assert not extra, f"a model run loads {extra}"
