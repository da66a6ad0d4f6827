"""Synthetic observations for the framework judges: what a probe would have recorded on a
correct server, to be bent into exactly the misbehaviour a judge exists to catch."""

from __future__ import annotations

from typing import Any

OUT = "out-base"  # the one output of the plan's registration, cold or warm
TIMING = {"service_ms": 150.0, "load_ms": 200.0, "teardown_ms": 150.0}


def fl(
    label: str,
    t_send: float,
    t_done: float | None,
    *,
    status: int | None = 200,
    model: str = "m",
    output: str | None = OUT,
    path: str = "/v1/audio/speech",
    json: Any = None,
    message: str = "",
    ms: float | None = None,
) -> dict[str, Any]:
    """One recorded flight (times in seconds from the rig start)."""
    out: dict[str, Any] = {
        "label": label,
        "model": model,
        "method": "POST",
        "path": path,
        "t_send": t_send,
        "t_done": t_done,
        "finished": t_done is not None,
        "status": status,
        "cancelled": False,
    }
    if t_done is not None:
        out["ms"] = round((t_done - t_send) * 1000, 3) if ms is None else ms
    if status == 200 and path == "/v1/audio/speech":
        out["output"] = output
    else:
        out["message"] = message
        out["json"] = json
    return out


def manager(
    label: str, t_send: float, t_done: float | None, *, unloaded: list[str] | None = None, status: int = 200
) -> dict[str, Any]:
    """A bulk unload as recorded."""
    return fl(
        label,
        t_send,
        t_done,
        status=status,
        model="",
        path="/v1/tasks/unload_models",
        json={"unloaded": ["m"] if unloaded is None else unloaded},
        output=None,
    )


def facts(flights: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """An observation with the fields every judge may read (rig, timing, references)."""
    base: dict[str, Any] = {
        "waits": [],
        "rig": "r",
        "flagged": True,
        "model_id": "m",
        "timing": dict(TIMING),
        "refs": {"m|base": {"cold": [OUT], "warm": [OUT]}},
        "flights": flights,
        "settled": True,
        "drained": True,
    }
    base.update(extra)
    return base


def stagger(
    what: str,
    manager_label: str,
    *,
    still_waiting: bool = True,
    canary: tuple[float, float | None] = (0.30, 0.302),
    manager_t_done: float | None = None,
    behind: tuple[str, ...] = (),
) -> dict[str, Any]:
    """A manager staggered behind older work (`behind`: its labels), with one status read
    while it waited."""
    t_send, t_done = canary
    return {
        "what": what,
        "manager": manager_label,
        "behind": list(behind),
        "still_waiting": still_waiting,
        "canaries": [
            {
                "label": "status-canary0",
                "t_send": t_send,
                "t_done": t_done,
                "status": 200 if t_done is not None else None,
            }
        ],
        "manager_t_done": manager_t_done,
    }


# -- F5 (two models "m" and "m-b", told apart by their outputs) --------------------------------

OUT_B = "out-b"  # the one output of the second registration ("m-b", tag "opt2")


def two_model_facts(flights: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """An F5 observation over models "m" (tag base) and "m-b" (tag opt2), with references."""
    base = facts(
        flights,
        models=["m", "m-b"],
        tags={"m": "base", "m-b": "opt2"},
        refs={"m|base": {"cold": [OUT], "warm": [OUT]}, "m-b|opt2": {"cold": [OUT_B], "warm": [OUT_B]}},
    )
    base.update(extra)
    return base


def joint_row(t: float, **models: list[Any] | None) -> list[Any]:
    """One joint status sample (probes_f5.joint_samples): model= [active, queued, loaded];
    use m_b= for "m-b"."""
    return [t, {k.replace("_", "-"): v for k, v in models.items()}]


def load_reply(
    label: str, t_send: float, t_done: float | None, *, status: int | None = 200, json: Any = None, message: str = ""
) -> dict[str, Any]:
    """A /v1/models/load reply (registration, reconfiguration, resize) as recorded."""
    return fl(
        label, t_send, t_done, status=status, model="", path="/v1/models/load", json=json, message=message, output=None
    )


def config_refs(**outputs: str) -> dict[str, dict[str, list[str]]]:
    """References of the plan's model per configuration tag (one output, cold and warm)."""
    return {f"m|{tag}": {"cold": [out], "warm": [out]} for tag, out in outputs.items()}
