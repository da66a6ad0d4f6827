"""What a plan needs from this machine, checked before a campaign starts anything: a plan
that needs GPU memory readings (`memory.gpu_required`, true unless set) cannot get them
where NVML is unavailable; M5 would stay PENDING after the whole campaign."""

from __future__ import annotations

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
    return UsageError(
        f"{plan.path}: memory.gpu_required is true (the default), but GPU memory cannot be read here: {what}; "
        "the memory checks (M5) would stay PENDING after the whole campaign",
        hint=f"run it on a machine with the NVIDIA driver; for a CPU backend set memory.gpu_required: false in the "
        f"plan; or run anyway with {WITHOUT_GPU} (M5 then stays PENDING)",
    )
