"""Survey preflight: skip a count whose estimated VRAM would not fit before starting it."""

from __future__ import annotations


def preflight_estimate(
    two_slot_mib: float, one_slot_mib: float, slots: int, available_mib: float, margin_mib: float = 1024
) -> tuple[bool, str]:
    """The survey preflight: estimate = two-slot retained + (slots - 2) x (two - one).

    The count is skipped when the estimate exceeds available - margin. A negative 1->2
    increment (measurement noise) is clamped to zero so the estimate never undercuts the
    measured two-slot figure.
    """
    if slots < 1:
        raise ValueError("slots must be at least 1")
    increment = max(0.0, two_slot_mib - one_slot_mib)
    if slots == 1:
        estimate = one_slot_mib
        arithmetic = f"estimate = one-slot {one_slot_mib:.0f} MiB"
    else:
        estimate = two_slot_mib + (slots - 2) * increment
        arithmetic = (
            f"estimate = two-slot {two_slot_mib:.0f} MiB + ({slots} - 2) x increment "
            f"{increment:.0f} MiB (two {two_slot_mib:.0f} - one {one_slot_mib:.0f}"
            f"{', clamped at 0' if two_slot_mib < one_slot_mib else ''}) = {estimate:.0f} MiB"
        )
    budget = available_mib - margin_mib
    fits = estimate <= budget
    verdict = "fits" if fits else "skip (VRAM estimate)"
    return fits, (
        f"{arithmetic}; budget = available {available_mib:.0f} MiB - margin {margin_mib:.0f} MiB "
        f"= {budget:.0f} MiB; {verdict}"
    )
