"""MemorySampler against real child processes (host memory) and fake/real GPUs."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from parval.nvml import GpuDevice, NvmlDevice, open_device
from parval.server import host_memory
from parval.server.host_memory import host_tree_memory
from parval.server.memory import MemoryConfig, MemorySampler, PhaseTracker

STEP_MIB = 64


def _nvml_works() -> bool:
    dev = open_device(0)
    if isinstance(dev, str):
        return False
    dev.close()
    return True


@contextmanager
def child(code: str) -> Iterator[subprocess.Popen[str]]:
    """A Python child that prints 'ready' once started; killed and reaped on exit."""
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout:
            proc.stdout.close()


STEPPER = f"""
import time
blocks = []
print("ready", flush=True)
for i in range(8):
    time.sleep(0.3)
    blocks.append(b"\\x01" * ({STEP_MIB} << 20))  # filled, so every page is resident
time.sleep(30)
"""


async def sample_for(
    sampler: MemorySampler,
    seconds: float,
    phases: PhaseTracker | None = None,
    script: list[tuple[float, str]] | None = None,
) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(sampler.run)
        t0 = time.monotonic()
        for at, phase in script or []:
            await anyio.sleep(max(0.0, at - (time.monotonic() - t0)))
            assert phases is not None
            phases.set(phase)
        await anyio.sleep(max(0.0, seconds - (time.monotonic() - t0)))
        tg.cancel_scope.cancel()


def test_phase_tracker_records_changes_only() -> None:
    p = PhaseTracker()
    p.set("cold_load")
    p.set("cold_load")
    p.set("warm_wave:1")
    assert p.current == "warm_wave:1"
    tr = p.transitions()
    assert [ph for _, ph in tr] == ["startup", "cold_load", "warm_wave:1"]
    assert [t for t, _ in tr] == sorted(t for t, _ in tr)


@pytest.mark.parametrize("children_files", [True, False], ids=["task-children", "ppid-scan"])
def test_host_tree_memory_includes_descendants(children_files: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host_memory, "_HAS_CHILDREN_FILES", children_files)
    code = f"""
    import subprocess, sys, time
    grand = subprocess.Popen([sys.executable, "-c",
        "import time; b = b'\\\\x01' * ({STEP_MIB} << 20); print('ready', flush=True); \
time.sleep(30)"],
        stdout=subprocess.PIPE, text=True)
    grand.stdout.readline()
    print("ready", flush=True)
    time.sleep(30)
    """
    with child(code) as proc:
        rss, pss, pids = host_tree_memory(proc.pid)
        assert proc.pid in pids and len(pids) == 2
        assert rss > STEP_MIB
        assert pss is not None and 0 < pss <= rss + 1
        own_rss, _, own_pids = host_tree_memory(os.getpid())
        assert proc.pid in own_pids and own_rss > rss


def test_host_tree_memory_vanished_pid() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    with pytest.raises(ProcessLookupError):
        host_tree_memory(proc.pid)


def test_real_process_rss_steps_and_phases() -> None:
    samples: list[dict[str, Any]] = []
    phases = PhaseTracker()
    cfg = MemoryConfig(host_interval_s=0.02, nvml_device_index=None)
    with child(STEPPER) as proc:
        sampler = MemorySampler(proc.pid, cfg, phases, samples.append)
        script = [(0.5, "cold_load"), (1.0, "warm_wave:1")]
        anyio.run(sample_for, sampler, 2.0, phases, script)
    host = [s for s in samples if s["kind"] == "host"]
    assert len(host) >= 40  # 2 s at 20 ms, allowing for a slow CI machine
    assert {"startup", "cold_load", "warm_wave:1"} <= {s["phase"] for s in host}
    assert all(s["pids"] == [proc.pid] for s in host)
    rss = [s["rss_mib"] for s in host]
    assert all(b >= a - 2.0 for a, b in zip(rss, rss[1:], strict=False))  # never shrinks
    # Settled samples (equal to both neighbours) sit on base + j x 64 MiB; samples taken
    # while a block is being filled fall in between and are ignored.
    t0 = host[0]["t"]
    base = statistics.median(s["rss_mib"] for s in host if s["t"] < t0 + 0.2)
    settled = [
        (b - base) / STEP_MIB
        for a, b, c in zip(rss, rss[1:], rss[2:], strict=False)
        if abs(b - a) < 1.0 and abs(c - b) < 1.0
    ]
    assert len(settled) >= 0.25 * len(rss)  # low bar: fills are slow on a loaded machine
    # A fill that stalls on a starved core also looks settled between two levels, so no
    # share of on-level samples is asked for: every level is seen, in the order stepped.
    on_level = [round(x) for x in settled if abs(x - round(x)) * STEP_MIB < 4.0]
    assert on_level == sorted(on_level), settled
    assert {0, 1, 2, 3} <= set(on_level), settled
    assert len(set(range(max(on_level) + 1)) - set(on_level)) <= 1, on_level
    info = sampler.info()
    assert info["host_samples"] == len(host) and info["samples"] == len(samples)
    assert info["gpu"].startswith("unavailable: ")
    assert info["host"] in ("proc rss+pss",) or info["host"].startswith("proc rss (pss")


def test_nvml_absence_reported_not_zeros() -> None:
    if _nvml_works():
        pytest.skip("NVML works here; absence cannot be observed")
    samples: list[dict[str, Any]] = []
    sampler = MemorySampler(os.getpid(), MemoryConfig(), PhaseTracker(), samples.append)
    anyio.run(sample_for, sampler, 0.3)
    assert sampler.info()["gpu"].startswith("unavailable: ")
    assert not [s for s in samples if s["kind"] == "gpu"]
    assert [s for s in samples if s["kind"] == "host"]


def test_vanished_process_does_not_raise() -> None:
    code = 'print("ready", flush=True); import time; time.sleep(0.2)'
    samples: list[dict[str, Any]] = []
    with child(code) as proc:
        sampler = MemorySampler(proc.pid, MemoryConfig(nvml_device_index=None), PhaseTracker(), samples.append)
        anyio.run(sample_for, sampler, 0.6)
    assert "host_ended" in sampler.info()
    assert samples and all(s["kind"] == "host" for s in samples)


class FakeGpu:
    """Device memory rising 100 MiB per reading; optionally slow like a stuck driver call."""

    struct = "nvml v2 memory struct"

    def __init__(self, delay_s: float = 0.0) -> None:
        self.used = 1000.0
        self.delay_s = delay_s
        self.closed = False

    def memory_mib(self) -> tuple[float, float]:
        time.sleep(self.delay_s)
        self.used += 100.0
        return self.used, 24576.0

    def process_mib(self, pids: Collection[int]) -> float | None:
        assert os.getpid() in pids
        return self.used - 300.0

    def close(self) -> None:
        self.closed = True


def test_gpu_samples_and_guard_called_once() -> None:
    gpu = FakeGpu()
    samples: list[dict[str, Any]] = []
    guards: list[dict[str, Any]] = []

    def opener(index: int) -> GpuDevice | str:
        assert index == 3
        return gpu

    cfg = MemoryConfig(gpu_interval_s=0.01, nvml_device_index=3, guard_mib=1500.0)
    sampler = MemorySampler(os.getpid(), cfg, PhaseTracker(), samples.append, guards.append, gpu_opener=opener)
    anyio.run(sample_for, sampler, 0.4)
    gpu_samples = [s for s in samples if s["kind"] == "gpu"]
    assert len(gpu_samples) >= 10
    assert {"t", "phase", "kind", "device_used_mib", "device_total_mib", "process_mib"} == set(gpu_samples[0])
    assert len(guards) == 1
    assert guards[0]["device_used_mib"] >= 1500.0 and guards[0]["guard_mib"] == 1500.0
    info = sampler.info()
    assert info["gpu"] == "nvml v2 memory struct"
    assert info["guard_stop"] == guards[0]
    assert gpu.closed


def test_slow_gpu_never_delays_host_loop() -> None:
    samples: list[dict[str, Any]] = []
    cfg = MemoryConfig(gpu_interval_s=0.01, host_interval_s=0.02, nvml_device_index=0)
    sampler = MemorySampler(
        os.getpid(), cfg, PhaseTracker(), samples.append, gpu_opener=lambda _: FakeGpu(delay_s=0.25)
    )
    anyio.run(sample_for, sampler, 0.8)
    host_t = [s["t"] for s in samples if s["kind"] == "host"]
    assert len(host_t) >= 20
    assert max(b - a for a, b in zip(host_t, host_t[1:], strict=False)) < 0.2
    assert len([s for s in samples if s["kind"] == "gpu"]) <= 4


def test_failing_sink_and_opener_never_raise() -> None:
    def sink(_: dict[str, Any]) -> None:
        raise RuntimeError("disk full")

    def opener(_: int) -> GpuDevice | str:
        raise OSError("driver exploded")

    sampler = MemorySampler(os.getpid(), MemoryConfig(), PhaseTracker(), sink, gpu_opener=opener)
    anyio.run(sample_for, sampler, 0.3)
    info = sampler.info()
    assert info["errors"] >= 1 and "disk full" in info["recent_errors"][0]
    assert info["gpu"] == "unavailable: OSError: driver exploded"


@pytest.mark.gpu
def test_real_nvml_device_memory() -> None:
    if not _nvml_works():
        pytest.skip("NVML cannot initialise (no NVIDIA driver)")
    samples: list[dict[str, Any]] = []
    guards: list[dict[str, Any]] = []
    cfg = MemoryConfig(gpu_interval_s=0.01, guard_mib=0.0)
    sampler = MemorySampler(os.getpid(), cfg, PhaseTracker(), samples.append, guards.append)
    anyio.run(sample_for, sampler, 0.5)
    info = sampler.info()
    assert info["gpu"] in ("nvml v2 memory struct", "nvml v1 memory struct")
    gpu = [s for s in samples if s["kind"] == "gpu"]
    assert len(gpu) >= 10
    assert all(0 < s["device_used_mib"] <= s["device_total_mib"] for s in gpu)
    assert len(guards) == 1


class FakeNvml:
    """Just enough of the pynvml module for NvmlDevice."""

    class NVMLError(Exception):
        pass

    nvmlMemory_v2 = 0x02000028

    def __init__(
        self, compute: list[tuple[int, int | None]] | None, graphics: list[tuple[int, int | None]] | None
    ) -> None:
        self.compute, self.graphics, self.shutdowns = compute, graphics, 0

    def nvmlDeviceGetMemoryInfo(self, handle: object, version: int | None = None) -> Any:
        return SimpleNamespace(used=(2048 if version else 2304) << 20, total=24576 << 20)

    def _procs(self, rows: list[tuple[int, int | None]] | None) -> list[Any]:
        if rows is None:
            raise self.NVMLError("Not Supported")
        return [SimpleNamespace(pid=p, usedGpuMemory=m) for p, m in rows]

    def nvmlDeviceGetComputeRunningProcesses(self, handle: object) -> list[Any]:
        return self._procs(self.compute)

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: object) -> list[Any]:
        return self._procs(self.graphics)

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1


def test_nvml_device_memory_and_process_sum() -> None:
    fake = FakeNvml(compute=[(10, 512 << 20), (11, 256 << 20), (99, 4096 << 20)], graphics=[(10, 512 << 20)])
    v2 = NvmlDevice(fake, handle=None, v2=True)
    assert v2.struct == "nvml v2 memory struct"
    assert v2.memory_mib() == (2048.0, 24576.0)
    assert NvmlDevice(fake, None, v2=False).memory_mib() == (2304.0, 24576.0)
    # pid 10 is listed as compute and graphics (C+G): counted once; pid 99 is not ours
    assert v2.process_mib([10, 11]) == 768.0
    assert v2.process_mib([12]) == 0.0
    v2.close()
    v2.close()
    assert fake.shutdowns == 1


def test_nvml_process_memory_unknown_is_none() -> None:
    wddm = NvmlDevice(FakeNvml(compute=[(10, None)], graphics=[]), None, v2=True)
    assert wddm.process_mib([10]) is None  # per-process use not reported (WDDM)
    neither = NvmlDevice(FakeNvml(compute=None, graphics=None), None, v2=True)
    assert neither.process_mib([10]) is None


def test_open_device_without_pynvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert str(open_device(0)).startswith("unavailable: pynvml not importable")


def test_open_device_without_driver() -> None:
    if _nvml_works():
        pytest.skip("NVML works here")
    result = open_device(0)
    assert isinstance(result, str) and result.startswith("unavailable: NVML init failed")
