"""What a plan needs from this machine, checked before a campaign starts anything: a plan
that needs GPU memory readings (`memory.gpu_required`, true unless set) cannot get them
where NVML is unavailable; M5 would stay PENDING after the whole campaign. And what this
machine's environment would change without saying so: variables the servers do not get,
and a CUDA device that is not the GPU NVML reads."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from parval.errors import UsageError
from parval.plan.load import Plan

WITHOUT_GPU = "--without-gpu"


def gpu_refusal(plan: Plan) -> UsageError | None:
    """The refusal `parval run` raises (exit 2) when the plan requires GPU memory and NVML
    cannot read the plan's device here; None when it can, or the plan does not require it."""
    from parval import nvml

    memory = plan.memory
    if not memory.get("gpu_required", True):
        return None
    index = memory.get("nvml_device_index", 0)
    if isinstance(index, int):
        unavailable = nvml.probe(index)
        if unavailable is None:
            return None
        what = f"NVML device {index} {unavailable}"
    else:
        what = "memory.nvml_device_index is null (no NVML device configured)"
    written = plan.written
    default = " (the default)" if written is not None and "gpu_required" not in (written.get("memory") or {}) else ""
    return UsageError(
        f"{plan.path}: memory.gpu_required is true{default}, but GPU memory cannot be read here: {what}; "
        "the memory checks (M5) would stay PENDING after the whole campaign",
        hint=f"run it on a machine with the NVIDIA driver; for a CPU backend set memory.gpu_required: false in the "
        f"plan; or run anyway with {WITHOUT_GPU} (M5 then stays PENDING)",
    )


ROLES = ("baseline", "candidate")


def env_warnings(plan: Plan, environ: Mapping[str, str] | None = None) -> list[str]:
    """One warning per variable set here that changes how a server runs but does not reach
    it (the server environment is an allow-list), with the plan setting that passes it."""
    from parval.server.launch import plan_env
    from parval.server.process import dropped_env

    environ = os.environ if environ is None else environ
    dropped = dropped_env({role: plan_env(plan, role) for role in ROLES}, environ)
    out = []
    for name, roles in dropped.items():
        where = " and ".join(f"servers.{role}.env" for role in roles)
        out.append(
            f"warning: {name} is set here but not passed to the servers (their environment is an allow-list, "
            f"docs/gpu-box.md); to pass it, add {name}: {json.dumps(environ[name])} to {where} in the plan"
        )
    return out


def device_warnings(plan: Plan, environ: Mapping[str, str] | None = None) -> list[str]:
    """A CUDA plan whose memory readings would come from another GPU than the server's:
    `server.device` counts the GPUs CUDA_VISIBLE_DEVICES leaves visible (in CUDA_DEVICE_ORDER),
    while `memory.nvml_device_index` counts every GPU in NVML's (PCI bus) order."""
    from parval.server.launch import plan_env
    from parval.server.process import server_env

    nvml_index = plan.memory.get("nvml_device_index", 0)
    if plan.server["backend"] != "cuda" or not isinstance(nvml_index, int):
        return []
    device = plan.server["device"]
    environ = os.environ if environ is None else environ
    problems = {role: _device_mismatch(device, nvml_index, server_env(plan_env(plan, role), environ)) for role in ROLES}
    if len(set(problems.values())) == 1:  # both servers see the same devices: say it once
        return [f"warning: {p}" for p in set(problems.values()) if p is not None]
    return [f"warning: the {role} server: {p}" for role, p in problems.items() if p is not None]


def _device_mismatch(device: int, nvml_index: int, env: Mapping[str, str]) -> str | None:
    visible = env.get("CUDA_VISIBLE_DEVICES")
    pci = env.get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID"
    order = (
        ""
        if pci
        else " (and set CUDA_DEVICE_ORDER=PCI_BUS_ID: CUDA's default order, fastest first, need not be NVML's)"
    )
    if visible is None:
        if device == nvml_index:
            return None
        return (
            f"server.device {device} is CUDA's GPU {device} (CUDA_VISIBLE_DEVICES is not set), but "
            f"memory.nvml_device_index is {nvml_index}: memory would be read from another GPU; set it to {device}"
            + order
        )
    entries = [e.strip() for e in visible.split(",") if e.strip()]
    if device >= len(entries):
        return (
            f"server.device {device} is not among the {len(entries)} GPU(s) CUDA_VISIBLE_DEVICES={visible!r} "
            "leaves visible (server.device counts the visible GPUs from 0)"
        )
    entry = entries[device]
    if entry.isdigit():
        physical: int | str = int(entry)
    elif entry.startswith("GPU-"):
        from parval import nvml

        physical = nvml.index_of_uuid(entry)
        if isinstance(physical, str):
            return None  # NVML cannot tell here; the run itself records what it read
    else:
        return None  # a MIG instance: NVML's memory readings are the whole GPU's
    if physical == nvml_index:
        return None
    return (
        f"server.device {device} with CUDA_VISIBLE_DEVICES={visible!r} is the GPU NVML numbers {physical}, "
        f"but memory.nvml_device_index is {nvml_index}: memory would be read from another GPU; set it to "
        f"{physical}" + (order if entry.isdigit() else "")
    )


def machine_warnings(plan: Plan) -> list[str]:
    """What `parval validate` and `parval run` say on stderr about running `plan` here."""
    return env_warnings(plan) + device_warnings(plan)
