"""The registry of every framework judge (importing this module registers them all)."""

from __future__ import annotations

from parval.framework import (  # noqa: F401  (each registers its judges)
    judges_f1,
    judges_f2,
    judges_f3,
    judges_f4,
    judges_f5,
    judges_legacy,
    judges_timeouts,
    judges_unsupported,
)
from parval.framework.observed import JUDGES, run_judge

__all__ = ["JUDGES", "run_judge"]
