"""Judging recorded outputs against references: exact match, mismatches with both hashes,
errors and indeterminate outcomes (which never count towards a PASS)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parval.gates.compare import max_abs_sample_diff
from parval.gates.records import Records


@dataclass
class Tally:
    compared: int = 0
    exact: int = 0
    tolerated: int = 0
    mismatches: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    indeterminate: list[dict[str, Any]] = field(default_factory=list)
    malformed: list[dict[str, Any]] = field(default_factory=list)
    no_reference: list[dict[str, Any]] = field(default_factory=list)

    def merge(self, other: Tally) -> None:
        self.compared += other.compared
        self.exact += other.exact
        self.tolerated += other.tolerated
        for name in ("mismatches", "errors", "indeterminate", "malformed", "no_reference"):
            getattr(self, name).extend(getattr(other, name))

    @property
    def clean(self) -> bool:
        return self.compared > 0 and not (self.mismatches or self.errors or self.indeterminate
                                          or self.malformed or self.no_reference)

    def summary(self) -> dict[str, Any]:
        return {
            "compared": self.compared, "exact": self.exact, "within_declared_tolerance": self.tolerated,
            "mismatches": self.mismatches[:50], "mismatch_count": len(self.mismatches),
            "errors": self.errors[:20], "error_count": len(self.errors),
            "indeterminate": self.indeterminate[:20], "indeterminate_count": len(self.indeterminate),
            "malformed": self.malformed[:20], "malformed_count": len(self.malformed),
            "no_reference": self.no_reference[:20], "no_reference_count": len(self.no_reference),
        }

    def problem(self) -> str:
        parts = []
        if self.mismatches:
            parts.append(f"{len(self.mismatches)} mismatch(es)")
        if self.errors:
            parts.append(f"{len(self.errors)} request error(s)")
        if self.malformed:
            parts.append(f"{len(self.malformed)} malformed repl(ies)")
        if self.indeterminate:
            parts.append(f"{len(self.indeterminate)} indeterminate outcome(s)")
        if self.no_reference:
            parts.append(f"{len(self.no_reference)} output(s) without a same-history reference")
        if self.compared == 0:
            parts.append("nothing compared")
        return ", ".join(parts)


def _where(e: dict[str, Any]) -> dict[str, Any]:
    return {"run": e["run"], "phase": e["phase"], "wave": e["wave"], "req": e["req"],
            "slot": e.get("slot"), "history": e.get("history"), "artifact": e.get("artifact")}


def judge_requests(rec: Records, events: list[dict[str, Any]], *, run_dir: Path | None = None,
                   tolerance: int | None = None) -> Tally:
    t = Tally()
    for e in events:
        reply = e.get("reply") or {}
        outcome = reply.get("outcome")
        if outcome in ("indeterminate", "connect_error", "oversize"):
            t.indeterminate.append({**_where(e), "outcome": outcome, "error": reply.get("error")})
            continue
        if outcome != "ok":
            t.errors.append({**_where(e), "status": reply.get("status"), "error": reply.get("error")})
            continue
        out = e.get("output") or {}
        if not out.get("valid"):
            t.malformed.append({**_where(e), "problem": out.get("problem", "no output recorded")})
            continue
        key = e.get("ref")
        ref = rec.refs.get(key) if key else None
        if ref is None:
            t.no_reference.append({**_where(e), "ref": key})
            continue
        t.compared += 1
        ref_canon = (ref.get("output") or {}).get("canon")
        if out["canon"] == ref_canon:
            t.exact += 1
            continue
        diff = None
        if tolerance is not None and run_dir is not None and e.get("artifact") and ref.get("artifact"):
            a = (run_dir / "artifacts" / f"{e['artifact']}.json").read_bytes()
            b = (run_dir / "artifacts" / f"{ref['artifact']}.json").read_bytes()
            diff = max_abs_sample_diff(a, b)
            if diff is not None and diff <= tolerance:
                t.tolerated += 1
                continue
        t.mismatches.append({**_where(e), "ref": key, "got_canon": out["canon"],
                             "ref_canon": ref_canon, "ref_artifact": ref.get("artifact"),
                             "got_audio": out.get("audio"), "ref_audio": (ref.get("output") or {}).get("audio"),
                             "max_abs_sample_diff": diff})
    return t
