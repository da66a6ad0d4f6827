"""Re-export for parval/judge.py while it is being edited; the M5 gate lives in m5*.py."""

from parval.gates.m5 import assess_m5
from parval.gates.m5_rules import StabilisationRule
from parval.gates.m5_samples import StartMemory

__all__ = ["StabilisationRule", "StartMemory", "assess_m5"]
