"""Reviewed reuse of a framework record made for another candidate build (plan `framework.reuse`).

The procedure: "Reviewed evidence reuse must identify unchanged relevant source/settings and
applicability; changed inference, preparation, ownership or backend paths need new
coverage. For adapter-only changes, rerun the affected model/backend gate ... For framework
changes, rerun F1-F6." So parval diffs the record's source commit against the candidate's in
a git checkout of audio.cpp, over FRAMEWORK_PATHS (the one list; printed in the report):

* no framework path changed → the record is reused;
* only model adapters changed (`src/models/<family>`, `include/engine/models/<family>`) →
  the record is reused, and each changed family's model gate must be rerun on the new build;
* a framework path changed → reuse refused, naming the files (F1-F6 PENDING: rerun them).

Only the shared F1-F6 record is ever reused; model quality evidence never crosses builds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from parval.errors import ParvalError

# What the shared framework evidence depends on: server runtime, scheduler and transport
# (app/server), session/runtime headers and sources, backend code, and the build itself.
FRAMEWORK_PATHS: tuple[str, ...] = (
    "app/server",
    "include/engine/framework",
    "src/framework",
    "include/engine/backends",
    "src/backends",
    "external/ggml",
    "CMakeLists.txt",
    "cmake",
)
# Per-model adapters: a change confined to one family's directories is adapter-only.
ADAPTER_ROOTS: tuple[str, ...] = (
    "src/models",
    "include/engine/models",
    "src/community_models",
    "include/engine/community_models",
)

REUSED = "reused"
ADAPTER_ONLY = "reused_adapter_only"
REFUSED = "refused"
UNAVAILABLE = "unavailable"


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def adapter_family(path: str) -> str | None:
    """'src/models/whisper/x.cpp' -> 'whisper'; None outside a family's adapter directory."""
    for root in ADAPTER_ROOTS:
        if _under(path, root):
            rest = PurePosixPath(path).relative_to(root).parts
            return rest[0] if len(rest) > 1 else None
    return None


@dataclass
class ReuseDecision:
    """What `framework.reuse` came to, for the evidence and the report."""

    status: str
    record: str
    record_commit: str
    candidate_commit: str
    repo: str
    family: str
    reason: str
    changed_framework: list[str] = field(default_factory=list)
    adapter_changes: dict[str, list[str]] = field(default_factory=dict)
    other_changed: list[str] = field(default_factory=list)

    @property
    def reused(self) -> bool:
        return self.status in (REUSED, ADAPTER_ONLY)

    @property
    def model_gate_required(self) -> list[str]:
        return sorted(self.adapter_changes)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reused": self.reused,
            "reason": self.reason,
            "record": self.record,
            "record_commit": self.record_commit,
            "candidate_commit": self.candidate_commit,
            "repo": self.repo,
            "family": self.family,
            "framework_paths": list(FRAMEWORK_PATHS),
            "adapter_roots": list(ADAPTER_ROOTS),
            "changed_framework": self.changed_framework,
            "adapter_changes": self.adapter_changes,
            "other_changed": self.other_changed,
            "model_gate_required": self.model_gate_required,
        }


def changed_files(repo: Path, old: str, new: str) -> tuple[str, str, list[str]]:
    """(old sha, new sha, every path that differs between the two commits)."""
    from parval.protected.git import git_output, repo_root, resolve_commit

    root = repo_root(repo)
    a, b = resolve_commit(root, old), resolve_commit(root, new)
    out = git_output(
        root, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--ignore-submodules=none", a, b, "--"
    )
    return a, b, sorted(os.fsdecode(p) for p in out.split(b"\0") if p)


def classify(
    files: list[str], family: str, *, record: str, record_commit: str, candidate_commit: str, repo: str
) -> ReuseDecision:
    """The decision for the files changed between the record's commit and the candidate's."""
    framework = [f for f in files if any(_under(f, p) for p in FRAMEWORK_PATHS)]
    adapters: dict[str, list[str]] = {}
    other: list[str] = []
    for f in files:
        if f in framework:
            continue
        fam = adapter_family(f)
        if fam is not None:
            adapters.setdefault(fam, []).append(f)
        elif any(_under(f, r) for r in ADAPTER_ROOTS):
            framework.append(f)  # shared model code outside any one family's directory
        else:
            other.append(f)
    where = f"framework record reused from {record} ({record_commit[:12]})"

    def made(status: str, reason: str) -> ReuseDecision:
        return ReuseDecision(
            status, record, record_commit, candidate_commit, repo, family, reason, sorted(framework), adapters, other
        )

    if framework:
        names = ", ".join(sorted(framework)[:10]) + (f" (+{len(framework) - 10} more)" if len(framework) > 10 else "")
        return made(
            REFUSED,
            f"framework record reuse from {record} ({record_commit[:12]}) refused: "
            f"framework paths changed up to candidate {candidate_commit[:12]}: {names}; "
            "rerun F1-F6 on the new build",
        )
    if adapters:
        gates = ", ".join(sorted(adapters))
        own = f"; this run is the {family} model gate on the new build" if family in adapters else ""
        return made(
            ADAPTER_ONLY,
            f"{where}: framework paths unchanged; adapter-only changes in {gates}: "
            f"the model gate of {gates} must be rerun "
            f"on the new build {candidate_commit[:12]}{own}",
        )
    return made(REUSED, f"{where}: framework paths unchanged")


def decide(reuse: dict[str, Any], base_dir: Path, family: str) -> ReuseDecision:
    """Resolve `framework.reuse` (paths relative to the plan's directory) and diff the commits."""
    record = str(reuse.get("record") or "")
    record_commit = str(reuse.get("record_commit") or "")
    candidate_commit = str(reuse.get("candidate_commit") or "")
    repo_raw = str(reuse.get("repo") or "")
    missing = [
        k
        for k, v in (
            ("record", record),
            ("record_commit", record_commit),
            ("candidate_commit", candidate_commit),
            ("repo", repo_raw),
        )
        if not v
    ]
    repo = Path(repo_raw) if Path(repo_raw).is_absolute() else base_dir / repo_raw
    record_path = record if Path(record).is_absolute() else str(base_dir / record)

    def unavailable(reason: str) -> ReuseDecision:
        return ReuseDecision(UNAVAILABLE, record_path, record_commit, candidate_commit, str(repo), family, reason)

    if missing:
        return unavailable(f"framework.reuse lacks {', '.join(missing)}: the reuse cannot be reviewed")
    try:
        old, new, files = changed_files(repo, record_commit, candidate_commit)
    except ParvalError as exc:
        return unavailable(f"framework record reuse from {record} cannot be reviewed: {exc.message}")
    return classify(files, family, record=record_path, record_commit=old, candidate_commit=new, repo=str(repo))
