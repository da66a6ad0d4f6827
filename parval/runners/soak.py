"""The soak (plan section `soak`, `parval run --soak 60m`): more mixed warm waves at the
largest count after every required start, to buy a tighter bound on the mismatch rate.

It runs in added fresh starts (role "soak", named soak{N}-s{k}) of `waves_per_start` waves
each, never in the required starts, because:

* the required starts keep exactly the schedule the procedure's minimums are judged on,
  however long the soak runs and however it ends;
* a start is the unit parval redoes whole: an interrupted soak loses at most the waves of
  the start it was in (set aside, its failures still count), keeps every complete soak
  start, and `--resume` continues with the next one;
* every soak start is a fresh process with its own cold load and memory samples, so the
  soak covers more starts as well as more waves.

A stateless model's soak waves are released together, all N at once, as a warm wave is:
the admission order M3 needed is shown by the required starts, and a wave released together
keeps every slot busy beside the others (the most overlapped outputs per minute, and no
wait for each admission to be seen). A cache-sensitive model's are admitted in order, so
that each output's slot history, and so its reference, is known.

Each soak start runs what a required start runs (cold and warm waves, its mixed warm waves,
ordered and reversed as M3's, three unload/reload cycles, serial reuse), with the same
recording, drain checks and memory sampling: M2.exact, M2.observed_active, M2.drained,
M2.unload_reload, Q5 and M5 judge it with the count's own starts. How much soak is done
is read back from the events, so a resumed run continues the soak it had, not a new one."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Protocol

from parval.jsontypes import JsonObject
from parval.plan.waves import SOAK_WAVES_PER_START
from parval.rundir.event_types import SoakEndEvent, SoakProgressEvent
from parval.rundir.events import read_events
from parval.runners.phases import count_waves

if TYPE_CHECKING:
    from pathlib import Path

    from parval.plan.load import Plan
    from parval.rundir.mismatch_bound import MismatchBound
    from parval.runners.campaign_context import CampaignContext


class SoakJudging(Protocol):
    """The gates' M2.exact bound so far (parval.runners.campaign.MidRunJudging has it)."""

    def soak_bound(self, events: Path, plan: Plan, run_dir: Path, n: int) -> MismatchBound: ...


SOAK_PREFIX = "soak"
WAVES_PER_START = SOAK_WAVES_PER_START


def soak_start_name(n: int, k: int) -> str:
    return f"{SOAK_PREFIX}{n}-s{k}"


async def soak_start(c: CampaignContext, name: str, n: int, k: int, waves: int, deadline: float | None) -> None:
    """One soak start at count n, with `waves` mixed warm waves: no more are started once
    `deadline` (time.monotonic) has passed (the start then completes as any other)."""
    spec = c.launch("candidate", flagged=True, slots=n)
    async with c.start(name, "soak", spec, n, start_index=k) as st:
        await count_waves(c, st, n, mixed=waves, deadline=deadline, released=not c.plan.cache_sensitive)


@dataclass(frozen=True)
class SoakDone:
    """What the soak has run so far, read from the events (complete soak units only)."""

    units: int  # soak units with a recorded end
    waves: int  # mixed warm waves of their standing attempts
    elapsed_s: float  # summed over every soak unit, the interrupted one's part included


def soak_done(events: list[JsonObject], n: int) -> SoakDone:
    prefix = f"{SOAK_PREFIX}{n}-"
    begun: dict[str, float] = {}
    ended: set[str] = set()
    elapsed = 0.0
    last_t: dict[str, float] = {}
    for e in events:
        unit = e.get("unit")
        t = e.get("t")
        if isinstance(t, int | float):
            for name in begun:
                if name not in ended:
                    last_t[name] = float(t)
        if not isinstance(unit, str) or not unit.startswith(prefix) or not isinstance(t, int | float):
            continue
        if e.get("kind") == "unit_begin":
            begun[unit] = float(t)
            ended.discard(unit)
        elif e.get("kind") == "unit_end":
            ended.add(unit)
            elapsed += float(t) - begun.get(unit, float(t))
    # An interrupted unit's time counts too: the soak was spent on it.
    elapsed += sum(last_t.get(u, b) - b for u, b in begun.items() if u not in ended)
    attempts: dict[str, object] = {}
    for e in events:
        if e.get("kind") == "run_start" and e.get("role") == "soak" and e.get("run") in ended:
            attempts[str(e.get("run"))] = e.get("attempt")
    ends = {(e.get("run"), e.get("attempt")) for e in events if e.get("kind") == "run_end"}
    waves = {
        (e.get("run"), e.get("wave"))
        for e in events
        if e.get("kind") == "wave"
        and e.get("phase") == "mixed_wave"
        and e.get("run") in attempts
        and e.get("attempt") == attempts[str(e.get("run"))]
        and (e.get("run"), e.get("attempt")) in ends
    }
    return SoakDone(len(ended), len(waves), round(elapsed, 3))


def soak_reserve_s(events: list[JsonObject], n: int) -> float | None:
    """How long before timeouts.campaign_s the soak stops starting mixed waves: twice what
    the slowest complete start at count n spent outside its mixed waves (its launch, cold
    and warm waves, reloads, serial reuse and stop: what a soak start still runs once its
    deadline has passed, or runs whole if it begins just before it) plus twice its longest
    mixed wave (one may be in flight at the deadline). None before any start at count n
    has completed with a mixed wave: the caller then uses a fixed estimate."""
    at_n = {str(e.get("run")) for e in events if e.get("kind") == "run_start" and e.get("count") == n}
    begun: dict[str, float] = {}
    mixed: dict[str, list[JsonObject]] = {}
    worst_outside = worst_wave = None
    for e in events:
        kind, t = e.get("kind"), e.get("t")
        if not isinstance(t, int | float):
            continue
        if kind == "unit_begin" and e.get("unit") in at_n:
            begun[str(e["unit"])] = float(t)
            mixed[str(e["unit"])] = []
        elif kind == "wave" and e.get("phase") == "mixed_wave" and str(e.get("run")) in begun:
            mixed[str(e["run"])].append(e)
        elif kind == "unit_end" and e.get("unit") in begun and e.get("ok") is True:
            unit = str(e["unit"])
            waves = mixed.pop(unit)
            start = begun.pop(unit)
            spans = [_span(w) for w in waves]
            if not waves or None in spans:
                continue
            first_begun = float(str(waves[0]["t"])) - (spans[0] or 0.0)
            outside = (first_begun - start) + (float(t) - float(str(waves[-1]["t"])))
            longest = max(s for s in spans if s is not None)
            worst_outside = outside if worst_outside is None else max(worst_outside, outside)
            worst_wave = longest if worst_wave is None else max(worst_wave, longest)
    if worst_outside is None or worst_wave is None:
        return None
    return round(2 * worst_outside + 2 * worst_wave, 3)


def _span(wave: JsonObject) -> float | None:
    t0, t1 = wave.get("t_start"), wave.get("t_end")
    if isinstance(t0, int | float) and isinstance(t1, int | float) and t1 >= t0:
        return float(t1) - float(t0)
    return None


def soak_units(
    c: CampaignContext, judging: SoakJudging, t0: float
) -> Iterator[tuple[str, Callable[[], Awaitable[None]]]]:
    """The soak's starts, one at a time while the soak has more to do; `t0`: when the
    campaign began (time.monotonic), for timeouts.campaign_s. Each is decided from the
    events recorded so far (a resumed run continues the soak it had)."""
    soak = c.plan.soak
    if soak is None:
        return
    n = max(c.plan.counts)
    if n not in c.shard_counts():
        return
    per_start = int(soak.get("waves_per_start") or WAVES_PER_START)
    fixed_reserve = 5 * c.plan.timeouts["wave_s"] + c.plan.timeouts["shutdown_grace_s"]
    while True:
        events = read_events(c.log.path)
        done = soak_done(events, n)
        now = time.monotonic()
        # Leave the campaign time to finish the last soak start cleanly, never to be cut
        # short: as long as this count's starts took besides their mixed waves, measured.
        measured = soak_reserve_s(events, n)
        campaign_end = t0 + c.plan.timeouts["campaign_s"] - (fixed_reserve if measured is None else measured)
        bound = judging.soak_bound(c.log.path, c.plan, c.run_dir, n)
        left_s = None
        stopped = None
        waves = per_start
        deadline: float | None = campaign_end
        if "waves" in soak:
            waves = min(per_start, int(soak["waves"]) - done.waves)
            stopped = "its waves are done" if waves <= 0 else None
        elif "minutes" in soak:
            left_s = float(soak["minutes"]) * 60 - done.elapsed_s
            deadline = min(campaign_end, now + left_s)
            stopped = "its minutes are spent" if left_s <= 0 else None
        else:
            target = float(soak.get("until_rate_below") or 0)
            stopped = f"the bound reached its target (< {target:g})" if bound["rate_upper_95"] < target else None
        if bound["differed"]:
            # decided: one mismatch FAILs M2.exact however long the soak goes on
            stopped = f"{bound['differed']} overlapped output(s) differed from their reference: M2.exact FAILs"
        if stopped is None and now >= campaign_end:
            stopped = "timeouts.campaign_s ran out first"
        if done.units:
            c.log.write(
                SoakProgressEvent(
                    kind="soak_progress",
                    count=n,
                    overlapped=bound["overlapped"],
                    differed=bound["differed"],
                    rate_upper_95=bound["rate_upper_95"],
                    soak_waves=done.waves,
                    elapsed_s=done.elapsed_s,
                    left_s=None if left_s is None else round(max(0.0, left_s), 1),
                )
            )
        if stopped is not None:
            c.log.write(
                SoakEndEvent(
                    kind="soak_end",
                    count=n,
                    stopped=stopped,
                    overlapped=bound["overlapped"],
                    differed=bound["differed"],
                    rate_upper_95=bound["rate_upper_95"],
                    soak_waves=done.waves,
                    elapsed_s=done.elapsed_s,
                )
            )
            return
        k = done.units + 1
        name = soak_start_name(n, k)
        yield name, partial(soak_start, c, name, n, k, waves, deadline)


def soak_length(soak: Mapping[str, object]) -> str:
    """The soak as the plan asks for it, in words."""
    if "waves" in soak:
        return f"{soak['waves']} mixed warm wave(s)"
    if "minutes" in soak:
        return f"{soak['minutes']:g} min"
    return f"until the mismatch rate bound is below {float(str(soak.get('until_rate_below'))):g}"
