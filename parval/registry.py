"""The assertion registry: for every ID of the procedure's catalogue, its group and scope,
what the procedure asks, the one function that judges it, the evidence parval records for
it, the stand-in faults that make it fail, and how to reproduce it.

Each entry is declared beside its judge: a model assertion's (X, M, Q: judged from a model
run's events) at its judge in the gate module, `@shape.judge(ID, declaration)`, read back as
the module's `ENTRIES`; a framework group's (F: judged from the framework record's
observations and CTest runs) in the module of that group's judges, beside its `JUDGES`
table. `Entry`, the scopes and the evidence kinds they share live in parval.procedure.entry,
below every judge; this module, above them all, only assembles them. `parval explain ID`
prints an entry; tests/layout/test_registry.py checks that every catalogue ID has exactly
one entry, declared in the module of its judge, and that each named judge exists and is the
function its gate module's own table (`JUDGES`) dispatches to, so the registry cannot drift
from the code.
"""

from __future__ import annotations

from parval.framework import judges_f1, judges_f2, judges_f3, judges_f4, judges_f5, judges_f6, record_trust
from parval.gates import (
    admission_verdict,
    execution_path,
    m1_baseline,
    m2_concurrency,
    m3_mixed_waves,
    m4_recovery,
    m5,
    m6_modes,
    quality,
)
from parval.procedure.entry import CATALOGUE, SCOPES, Entry

__all__ = ["CATALOGUE", "DECLARED_IN", "ENTRIES", "SCOPES", "Entry", "entry"]

# Each module that declares entries, with its entries, in the registry's order (the model
# run's X, M, Q, then the framework's F).
DECLARED_IN: dict[str, tuple[Entry, ...]] = {
    execution_path.__name__: execution_path.ENTRIES,
    record_trust.__name__: record_trust.ENTRIES,
    m1_baseline.__name__: m1_baseline.ENTRIES,
    m2_concurrency.__name__: m2_concurrency.ENTRIES,
    m3_mixed_waves.__name__: m3_mixed_waves.ENTRIES,
    m4_recovery.__name__: m4_recovery.ENTRIES,
    m5.__name__: m5.ENTRIES,
    m6_modes.__name__: m6_modes.ENTRIES,
    quality.__name__: quality.ENTRIES,
    admission_verdict.__name__: admission_verdict.ENTRIES,
    judges_f1.__name__: judges_f1.ENTRIES,
    judges_f2.__name__: judges_f2.ENTRIES,
    judges_f3.__name__: judges_f3.ENTRIES,
    judges_f4.__name__: judges_f4.ENTRIES,
    judges_f5.__name__: judges_f5.ENTRIES,
    judges_f6.__name__: judges_f6.ENTRIES,
}

ENTRIES: tuple[Entry, ...] = tuple(e for entries in DECLARED_IN.values() for e in entries)


def entry(assertion_id: str) -> Entry:
    """The registry entry of one ID (KeyError naming close matches when unknown)."""
    for e in ENTRIES:
        if e.id == assertion_id:
            return e
    for e in ENTRIES:  # a differently cased ID names the same assertion
        if e.id.lower() == assertion_id.strip().lower():
            return e
    prefix = assertion_id.strip().lower().split(".")[0]
    close = [i for i in CATALOGUE if prefix and i.lower().startswith(prefix)]
    raise KeyError(
        f"{assertion_id!r} is not an assertion ID" + (f" (did you mean: {', '.join(close[:8])})" if close else "")
    )
