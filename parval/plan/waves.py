"""What one advertised-count start runs, as the plan says: shared by the campaign (which
runs it), `parval validate` (which prints it) and the gates (which check that every planned
wave was recorded whole). Takes the plan as its JSON mapping (the run's plan snapshot)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from parval.jsonread import as_int, get, iterate

# One unload/reload cannot tell allocator caching (a residue that may step up once, then
# stays) from weights kept after a logical unload (a residue that grows with every
# reload): M5 compares the idle level after each of these cycles.
UNLOAD_CYCLES = 3

# The procedure's minimum of mixed warm waves per start at the largest admitted count.
TEN_WAVES = 10

# A wave whose N leases were not all seen at once is repeated (every attempt is recorded
# and compared) only when a repeat can change what is seen: on a loaded machine the client
# may fail to overlap short requests, and that must not read as a server that cannot run
# N at once. A server without counters, or one whose counters stayed below N in several
# polls while the client had all N requests in flight, shows the same on every repeat.
WAVE_ATTEMPTS = 3

# Successful status samples taken wholly inside the window in which the client had all N
# requests of a wave in flight (last send to first reply): with fewer, the poller cannot
# show that N leases were never held together (the campaign repeats such a wave).
MIN_POLLS_IN_FLIGHT = 5

# Mixed warm waves per added soak start unless the plan's soak.waves_per_start says
# (parval.runners.soak): a start is what an interrupted soak loses at most.
SOAK_WAVES_PER_START = 40


def mixed_waves(plan: Mapping[str, object], n: int) -> int:
    """Mixed warm waves per start at count n: `waves.mixed_at_largest` at the plan's largest
    count, and at every other count `waves.mixed` (by default the same number, so that any
    count can end up the largest admitted: M3.ten_waves)."""
    w = plan.get("waves") or {}
    at_largest = as_int(get(w, "mixed_at_largest", TEN_WAVES))
    if n == max(as_int(c) for c in iterate(plan["counts"])):
        return at_largest
    mixed = get(w, "mixed")
    return at_largest if mixed is None else as_int(mixed)


def count_waves(plan: Mapping[str, object], n: int) -> dict[str, int]:
    """Phase → how many waves (not counting repeats) one start at count n records."""
    w = plan.get("waves") or {}
    return {
        "cold_wave": 1,
        "warm_wave": as_int(get(w, "warm", 2)),
        "mixed_wave": mixed_waves(plan, n),
        "reload_wave": UNLOAD_CYCLES,
        "serial_reuse": 1,
    }


def serial_requests(plan: Mapping[str, object]) -> int:
    """Requests in a start's serial reuse wave (one after another on one slot)."""
    return as_int(get(plan.get("waves") or {}, "serial_reuse", 2))


@dataclass(frozen=True)
class StartSchedule:
    """What one start at a count records, as the plan says, read from it once."""

    waves: Mapping[str, tuple[int, ...]]  # phase -> its wave numbers (warm waves count from one)
    serial_requests: int  # requests of the serial reuse wave


def start_schedule(plan: Mapping[str, object], n: int) -> StartSchedule:
    numbers = {
        phase: tuple(range(1, k + 1)) if phase == "warm_wave" else tuple(range(k))
        for phase, k in count_waves(plan, n).items()
    }
    return StartSchedule(numbers, serial_requests(plan))


def skipped_counts(counts: list[int]) -> list[int]:
    """The counts below the plan's largest that it does not test: none above them can be
    admitted (admission is consecutive from one)."""
    have = {int(c) for c in counts}
    return [n for n in range(1, max(have) + 1) if n not in have] if have else []


def skipped_counts_warning(counts: list[int]) -> str | None:
    """The warning `parval validate` and `parval init` print for a plan that skips a count."""
    skipped = skipped_counts(counts)
    if not skipped:
        return None
    above = [n for n in counts if n > min(skipped)]
    return (
        f"warning: counts skip {', '.join(map(str, skipped))}: admission is consecutive from one and never "
        f"enables an untested count, so {', '.join(map(str, above))} can never be admitted by this plan "
        f"(add {', '.join(map(str, skipped))} to counts)"
    )
