"""NVML access for the memory sampler: the only module that imports pynvml.

pynvml is imported lazily so that machines without an NVIDIA driver (CPU/Vulkan-only
hosts, CI) never load it at import time. Every failure to reach NVML is returned as an
"unavailable: <reason>" string, never as zero readings: a zero would look like evidence.
"""

from __future__ import annotations

from collections.abc import Collection
from types import ModuleType
from typing import Protocol

_MIB = 1024.0 * 1024.0

V2_STRUCT = "nvml v2 memory struct"
V1_STRUCT = "nvml v1 memory struct"


class GpuDevice(Protocol):
    """What the sampler needs from a GPU; tests substitute fakes."""

    @property
    def struct(self) -> str: ...

    def memory_mib(self) -> tuple[float, float]:
        """(device used MiB, device total MiB)."""
        ...

    def process_mib(self, pids: Collection[int]) -> float | None:
        """Sum of GPU memory used by `pids`, or None when NVML cannot tell."""
        ...

    def close(self) -> None: ...


class NvmlDevice:
    """One NVML device handle; NVML stays initialised until close()."""

    def __init__(self, nvml: ModuleType, handle: object, v2: bool) -> None:
        self._nvml = nvml
        self._handle = handle
        self._v2 = v2
        self._closed = False

    @property
    def struct(self) -> str:
        return V2_STRUCT if self._v2 else V1_STRUCT

    def memory_mib(self) -> tuple[float, float]:
        if self._v2:
            # v2 `used` excludes driver-reserved memory; v1 `used` includes it.
            mem = self._nvml.nvmlDeviceGetMemoryInfo(self._handle, version=self._nvml.nvmlMemory_v2)
        else:
            mem = self._nvml.nvmlDeviceGetMemoryInfo(self._handle)
        return float(mem.used) / _MIB, float(mem.total) / _MIB

    def process_mib(self, pids: Collection[int]) -> float | None:
        wanted = set(pids)
        per_pid: dict[int, int] = {}
        known = False
        # CUDA contexts are listed as compute, Vulkan ones may be graphics ("C+G" in both):
        # take the max per pid so a process listed twice is not counted twice.
        for fn in (self._nvml.nvmlDeviceGetComputeRunningProcesses, self._nvml.nvmlDeviceGetGraphicsRunningProcesses):
            try:
                procs = fn(self._handle)
            except self._nvml.NVMLError:
                continue
            known = True
            for p in procs:
                if p.pid in wanted:
                    if p.usedGpuMemory is None:  # WDDM: per-process use not reported
                        return None
                    per_pid[p.pid] = max(per_pid.get(p.pid, 0), int(p.usedGpuMemory))
        if not known:
            return None
        return sum(per_pid.values()) / _MIB

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            try:
                self._nvml.nvmlShutdown()
            except self._nvml.NVMLError:
                pass


def open_device(index: int) -> GpuDevice | str:
    """Open NVML device `index`, or return "unavailable: <reason>"."""
    try:
        import pynvml
    except ImportError as exc:  # nvidia-ml-py is a dependency, but be explicit if absent
        return f"unavailable: pynvml not importable ({exc})"
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return f"unavailable: NVML init failed: {exc}"
    except OSError as exc:
        return f"unavailable: NVML library could not be loaded: {exc}"
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        try:
            pynvml.nvmlDeviceGetMemoryInfo(handle, version=pynvml.nvmlMemory_v2)
            v2 = True
        except pynvml.NVMLError:  # older drivers lack nvmlDeviceGetMemoryInfo_v2
            pynvml.nvmlDeviceGetMemoryInfo(handle)
            v2 = False
    except pynvml.NVMLError as exc:
        pynvml.nvmlShutdown()
        return f"unavailable: NVML device {index}: {exc}"
    return NvmlDevice(pynvml, handle, v2)


def probe(index: int) -> str | None:
    """None when NVML can read device `index` here; else "unavailable: <reason>". Opens and
    closes NVML (a check before a campaign: `parval.server.preflight`)."""
    device = open_device(index)
    if isinstance(device, str):
        return device
    device.close()
    return None


def index_of_uuid(uuid: str) -> int | str:
    """NVML's index of the GPU whose UUID is, or starts with, `uuid` (CUDA_VISIBLE_DEVICES
    may name a GPU by a unique UUID prefix); else "unavailable: <reason>"."""
    try:
        import pynvml
    except ImportError as exc:
        return f"unavailable: pynvml not importable ({exc})"
    try:
        pynvml.nvmlInit()
    except (pynvml.NVMLError, OSError) as exc:
        return f"unavailable: NVML init failed: {exc}"
    try:
        found: list[int] = []
        for index in range(int(pynvml.nvmlDeviceGetCount())):
            name = pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(index))
            if (name.decode() if isinstance(name, bytes) else str(name)).startswith(uuid):
                found.append(index)
    except pynvml.NVMLError as exc:
        return f"unavailable: NVML: {exc}"
    finally:
        pynvml.nvmlShutdown()
    if len(found) != 1:
        return f"unavailable: {len(found)} NVML devices have a UUID starting {uuid}"
    return found[0]
