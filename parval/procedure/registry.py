"""The assertion registry: for every ID of the procedure's catalogue, its group and scope,
what the procedure asks, the one function that judges it, the evidence parval records for
it, the stand-in faults that make it fail, and how to reproduce it.

The entries live in entries_model.py (X, M, Q: judged from a model run's events) and
entries_framework.py (F: judged from the framework record's observations and CTest runs);
`Entry`, the scopes and the evidence kinds they share live in entry.py. `parval explain ID`
prints an entry; tests/layout/test_registry.py checks that every catalogue ID has exactly
one entry and that each named judge exists and is the function its gate module's own table
(`JUDGES`) dispatches to, so the registry cannot drift from the code.
"""

from __future__ import annotations

from parval.procedure.entries_framework import FRAMEWORK_ENTRIES
from parval.procedure.entries_model import MODEL_ENTRIES
from parval.procedure.entry import CATALOGUE, SCOPES, Entry

__all__ = ["CATALOGUE", "ENTRIES", "SCOPES", "Entry", "entry"]

ENTRIES: tuple[Entry, ...] = (*MODEL_ENTRIES, *FRAMEWORK_ENTRIES)


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
