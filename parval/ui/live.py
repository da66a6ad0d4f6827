"""The rich live display for terminals (the only module besides the CLI that imports rich).

Shows the unit, count and start, the wave in flight, requests done/failed out of the
planned total, the active slots the status poller observed in the last wave, the server
tree's current host memory and GPU memory (when a GPU backend is used and NVML answers),
elapsed time and the estimated time left. Refreshed four times a second on stderr."""

from __future__ import annotations

import atexit
import threading
import time
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from parval.jsonread import as_int, get
from parval.plan.load import GPU_BACKENDS
from parval.ui.state import ProgressState, fmt_duration

if TYPE_CHECKING:
    from parval.nvml import GpuDevice

MEMORY_EVERY_S = 1.0


class MemoryProbe:
    """Current memory of the running server: host RSS of its process tree, GPU device use.

    Read at most once a second from the refresh thread; any failure just shows 'n/a'."""

    def __init__(self) -> None:
        self.host = "n/a"
        self.gpu = "n/a"
        self._last = 0.0
        self._device: GpuDevice | str | None = None
        self._device_tried = False

    def refresh(self, state: ProgressState) -> None:
        now = time.monotonic()
        if now - self._last < MEMORY_EVERY_S:
            return
        self._last = now
        self.host = self._host(state.pid)
        self.gpu = self._gpu(state)

    @staticmethod
    def _host(pid: int | None) -> str:
        if pid is None:
            return "n/a (no server running)"
        from parval.server.host_memory import host_tree_memory

        try:
            rss, _pss, pids = host_tree_memory(pid)
        except (ProcessLookupError, OSError):
            return "n/a (server gone)"
        return f"{rss:.0f} MiB RSS ({len(pids)} process{'es' if len(pids) != 1 else ''})"

    def _gpu(self, state: ProgressState) -> str:
        plan = state.plan_raw or {}
        backend = get(plan.get("server") or {}, "backend")
        index = get(plan.get("memory") or {}, "nvml_device_index", 0)
        if backend not in GPU_BACKENDS or index is None:
            return f"n/a (backend {backend or 'unknown'})"
        if not self._device_tried:
            self._device_tried = True
            from parval.nvml import open_device

            self._device = open_device(as_int(index))
        if isinstance(self._device, str) or self._device is None:
            return str(self._device or "n/a")
        try:
            used, total = self._device.memory_mib()
        except Exception as exc:  # NVML errors are not fatal to a progress display
            return f"n/a ({type(exc).__name__})"
        return f"{used:.0f} / {total:.0f} MiB (device {index})"

    def close(self) -> None:
        if self._device is not None and not isinstance(self._device, str):
            self._device.close()


class LiveProgress:
    def __init__(self, state: ProgressState, stream: IO[str]) -> None:
        self.state = state
        self.memory = MemoryProbe()
        self.console = Console(file=stream, stderr=True)
        self._lock = threading.Lock()
        self._stopped = False
        self.live = Live(get_renderable=self._render, console=self.console, refresh_per_second=4, transient=False)
        self.live.start()
        atexit.register(self._stop)

    def _render(self) -> Group:
        s = self.state
        with self._lock:
            self.memory.refresh(s)
        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold")
        t.add_column()
        t.add_column(style="bold")
        t.add_column()
        count = "-" if s.count is None else str(s.count)
        start = "-" if s.start is None else f"{s.start}/{s.starts_per_count or '?'}"
        if s.last_active is not None:
            active = f"{s.last_active[0]} of {s.last_active[1]} (last wave)"
        else:  # '?': the counters did not show it (a server without them, failed polls)
            active = "?" if s.waves_done else "-"
        eta = s.eta()
        t.add_row("unit", s.unit, "count / start", f"{count} / {start}")
        t.add_row("wave", s.phase, "active slots", active)
        planned = f" of {s.planned}" if s.planned else ""
        kept = f" (+{s.units_kept} kept from before the resume)" if s.units_kept else ""
        t.add_row("requests", f"{s.done} done{planned}, {s.failed} failed", "units done", f"{s.units_done}{kept}")
        t.add_row("host memory", self.memory.host, "GPU memory", self.memory.gpu)
        t.add_row(
            "elapsed", fmt_duration(s.elapsed), "remaining", "estimating…" if eta is None else f"~{fmt_duration(eta)}"
        )
        parts: list[RenderableType] = [Text("parval run", style="bold cyan"), t]
        if s.planned:
            parts.append(
                ProgressBar(total=float(s.planned), completed=float(min(s.finished_requests, s.planned)), width=60)
            )
        if s.soak:
            parts.append(Text(s.soak))
        if s.problems:
            parts.append(Text("problems: " + "; ".join(s.problems[-3:]), style="red"))
        return Group(*parts)

    def on_event(self, e: Mapping[str, object]) -> None:
        self.state.update(e)
        if e.get("kind") in ("unit_end", "campaign_end"):
            self.live.refresh()

    def _stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        try:
            self.live.stop()
        finally:
            self.memory.close()

    def finish(self, evidence: Mapping[str, object]) -> None:
        self._stop()
