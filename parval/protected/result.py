"""What verify-protected found: JSON (schemas/protected.schema.json), text, and the file write.

The X4 verdict on it is built by parval/framework/record_trust.py, from this JSON."""

from __future__ import annotations

from dataclasses import dataclass, field

from parval import __version__
from parval.jsontypes import JsonObject
from parval.protected.git import ChangeKind
from parval.protected.legacy import LegacyRuntimeCheck
from parval.status import Status

ASSERTION_ID = "X4"
TOOL_NAME = "parval verify-protected"


@dataclass
class ChangedFile:
    """One protected file that differs from upstream, with its bounded hunk."""

    path: str
    kind: ChangeKind
    hunk: str

    def to_json(self) -> JsonObject:
        return {"path": self.path, "kind": self.kind, "hunk": self.hunk}


@dataclass
class ProtectedResult:
    """Everything one verify-protected run found, tied to the candidate it checked."""

    status: Status
    upstream: str
    upstream_ref: str
    repo: str
    checked_paths: list[str]
    changed: list[ChangedFile]
    legacy_runtime: LegacyRuntimeCheck
    warnings: list[str] = field(default_factory=list)
    config_source: str = "built-in defaults"
    version: str = __version__
    # The candidate checkout's HEAD (None when it has no commit yet) and whether its working
    # tree differed from HEAD: what ties this X4 result to one candidate build.
    candidate_commit: str | None = None
    candidate_dirty: bool = False

    @property
    def reason(self) -> str:
        parts: list[str] = []
        if self.changed:
            names = ", ".join(c.path for c in self.changed[:10])
            more = f" (+{len(self.changed) - 10} more)" if len(self.changed) > 10 else ""
            parts.append(f"{len(self.changed)} protected file(s) changed: {names}{more}")
        else:
            parts.append(f"{len(self.checked_paths)} protected path(s) identical to upstream")
        parts.append(f"legacy runtime {self.legacy_runtime.path}: {self.legacy_runtime.reason}")
        return "; ".join(parts)

    def to_json(self) -> JsonObject:
        return {
            "assertion": ASSERTION_ID,
            "status": str(self.status),
            "upstream": self.upstream,
            "upstream_ref": self.upstream_ref,
            "candidate_commit": self.candidate_commit,
            "candidate_dirty": self.candidate_dirty,
            "repo": self.repo,
            "checked_paths": list(self.checked_paths),
            "changed": [c.to_json() for c in self.changed],
            "legacy_runtime": self.legacy_runtime.to_json(),
            "warnings": list(self.warnings),
            "config": self.config_source,
            "tool": TOOL_NAME,
            "version": self.version,
        }

    def to_text(self) -> str:
        lines = [
            f"{ASSERTION_ID} {self.status}: protected sources vs upstream {self.upstream} ({self.upstream_ref})",
            f"  repo: {self.repo}",
            f"  candidate commit: {self.candidate_commit or '(none)'}"
            + (" (working tree has uncommitted changes)" if self.candidate_dirty else ""),
            f"  protected paths checked: {len(self.checked_paths)}; changed files: {len(self.changed)}",
        ]
        for c in self.changed:
            lines.append(f"  {c.kind}: {c.path}")
            lines.extend(_indent(c.hunk, "      "))
        lr = self.legacy_runtime
        lines.append(f"  legacy runtime {lr.path}: {lr.status}: {lr.reason}")
        lines.extend(_indent(lr.hunk, "      "))
        for w in self.warnings:
            lines.append(f"  warning: {w}")
        return "\n".join(lines)


def _indent(text: str, prefix: str) -> list[str]:
    return [prefix + line for line in text.splitlines()] if text else []
