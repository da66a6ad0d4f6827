"""The rich live display (terminals only; the only module besides cli that imports rich)."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table


class LiveProgress:
    def __init__(self) -> None:
        self.console = Console(stderr=True)
        self.t0 = time.monotonic()
        self.state: dict[str, Any] = {"unit": "-", "phase": "-", "done": 0, "failed": 0,
                                      "active": "-", "units_done": 0, "memory": "-"}
        self.live = Live(self._render(), console=self.console, refresh_per_second=4, transient=False)
        self.live.start()

    def _render(self) -> Table:
        s = self.state
        t = Table.grid(padding=(0, 2))
        elapsed = time.monotonic() - self.t0
        t.add_row("unit", str(s["unit"]), "phase", str(s["phase"]))
        t.add_row("requests", f"{s['done']} done / {s['failed']} failed", "active slots", str(s["active"]))
        t.add_row("units done", str(s["units_done"]), "elapsed", f"{elapsed:.1f}s")
        return t

    def on_event(self, e: dict[str, Any]) -> None:
        k = e["kind"]
        if k == "unit_begin":
            self.state["unit"] = e["unit"]
        elif k == "unit_end":
            self.state["units_done"] += 1
        elif k == "request":
            ok = (e.get("reply") or {}).get("outcome") == "ok" or e.get("expect_error")
            self.state["done" if ok else "failed"] += 1
            self.state["phase"] = f"{e['phase']} {e['wave']}"
        elif k == "wave":
            self.state["active"] = (e.get("status") or {}).get("max_active")
        self.live.update(self._render())

    def finish(self, evidence: dict[str, Any]) -> None:
        self.live.stop()
