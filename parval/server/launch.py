"""How a plan's server is started: executable, arguments, environment and config file."""

from __future__ import annotations

from collections.abc import Mapping

from parval.errors import ServerStartError
from parval.plan.load import Plan, executable_problem, resolve_executable
from parval.server.process import LaunchSpec, server_config


def plan_env(plan: Plan, role: str) -> dict[str, str]:
    """What parval sets in the `role` server's environment, over the allow-listed part of its
    own: the plan's `servers.<role>.env` and the observer switch."""
    env = dict((plan.baseline if role == "baseline" else plan.candidate).env)
    # Observer traces (validation builds) let the probes see which session served whom.
    env.setdefault("AUDIOCPP_SLOT_VALIDATION_OBSERVER", "1")
    return env


def launch_spec(
    plan: Plan,
    role: str,
    models: list[dict[str, object]],
    *,
    flagged: bool,
    ui_management: bool = False,
    server: Mapping[str, object] | None = None,
    extra_env: dict[str, str] | None = None,
) -> LaunchSpec:
    """The launch of the plan's `role` server ("baseline" or "candidate") serving `models`
    (the first is the main entry), with `--parallel-jobs` when `flagged` and the build knows it."""
    spec = plan.baseline if role == "baseline" else plan.candidate
    exe = resolve_executable(spec.executable, plan.base_dir)
    if exe is None:
        why = executable_problem(spec.executable, plan.base_dir) or f"'{spec.executable}' not found"
        raise ServerStartError(f"servers.{role}.executable: {why}")
    env = plan_env(plan, role)
    env.update(extra_env or {})
    cfg = server_config({**plan.server, **(server or {})}, models[0], models)
    return LaunchSpec(
        exe, cfg, flagged and spec.knows_parallel_jobs, tuple(spec.args), env, ui_management=ui_management, role=role
    )
