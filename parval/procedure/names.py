"""Names of the procedure's runs that gates and the campaign both refer to (one spelling)."""

from __future__ import annotations

# The serial reference runs, each on its own fresh single-slot server (M1).
REF_BASELINE_A = "ref-baseline-a"  # upstream legacy, first start
REF_BASELINE_B = "ref-baseline-b"  # upstream legacy, second start (serial repeat across starts)
REF_LEGACY = "ref-candidate-legacy"  # candidate without --parallel-jobs
REF_CAP1 = "ref-candidate-cap1"  # candidate flagged, capacity one
REFERENCE_RUNS = (REF_BASELINE_A, REF_BASELINE_B, REF_LEGACY, REF_CAP1)
BASELINE_RUNS = (REF_BASELINE_A, REF_BASELINE_B)
HISTORY_PREFIX = "history-"  # single-slot replays of a slot's ordered history (M3.history)
MEMBASE_PREFIX = "membase-"  # the baseline build's memory start at a count (M5.baseline)


def count_start_name(n: int, start: int) -> str:
    """The unit of the start-th fresh server at count n, e.g. count2-s1."""
    return f"count{n}-s{start}"
