"""Reviewed reuse of a framework record made for another candidate build (plan `framework.reuse`).

The procedure: "Reviewed evidence reuse must identify unchanged relevant source/settings and
applicability; changed inference, preparation, ownership or backend paths need new
coverage. For adapter-only changes, rerun the affected model/backend gate ... For framework
changes, rerun F1-F6." parval diffs the record's source commit against the candidate's in
a git checkout of audio.cpp, and reuse fails closed:

* no file changed → the record is reused;
* every changed file lies under a path known to be one model family's adapter
  (ADAPTER_PATHS: the one reviewable list, each with why it touches only that family) →
  the record is reused, and each changed family's model gate must be rerun on the new build;
* anything else changed (server, scheduler, transport, vendored code, tests, build files,
  docs: whatever parval cannot show to be one family's adapter) → reuse refused, naming the
  files (F1-F6 PENDING: rerun them);
* a checkout with uncommitted changes refuses too: the diff between two commits says
  nothing about a binary built from a modified tree.

Reuse ties the record to a binary only through commits, so the plan must name the
candidate's source commit (`identity.candidate.source_commit`, the one the review diffed
to), the record must name its own (`identity.source_commit`, the reviewed record commit),
and `framework.reuse.candidate_sha256` must be the executable under test: the reviewer
states which binary the reviewed commit produced (checked in framework_ref).

Only the shared F1-F6 record is ever reused; model quality evidence never crosses builds.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from parval.errors import ParvalError

# Directories whose <family>/ subdirectories hold one model family's adapter and nothing
# the shared framework runs: (root, why a change under <root>/<family>/ is that family's).
ADAPTER_PATHS: tuple[tuple[str, str], ...] = (
    (
        "src/models",
        "a family's model implementation (session, preparation, inference), compiled into that family's "
        "adapter only; the scheduler, pools and transport live elsewhere",
    ),
    (
        "include/engine/models",
        "the headers of one family's model implementation, included by that family's sources only",
    ),
    ("src/community_models", "a community family's model implementation, built as that family's adapter only"),
    ("include/engine/community_models", "the headers of one community family's model implementation"),
)
ADAPTER_ROOTS: tuple[str, ...] = tuple(root for root, _ in ADAPTER_PATHS)
# Build files are never adapter-only, even inside a family's directory: they can change
# flags, targets or sources of everything else.
BUILD_FILE_NAMES: tuple[str, ...] = ("CMakeLists.txt",)
BUILD_FILE_SUFFIXES: tuple[str, ...] = (".cmake",)

REUSED = "reused"
ADAPTER_ONLY = "reused_adapter_only"
REFUSED = "refused"
UNAVAILABLE = "unavailable"


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def is_build_file(path: str) -> bool:
    name = PurePosixPath(path).name
    return name in BUILD_FILE_NAMES or name.endswith(BUILD_FILE_SUFFIXES)


def adapter_family(path: str) -> str | None:
    """'src/models/whisper/x.cpp' -> 'whisper'; None for anything not known to be one
    family's adapter (outside ADAPTER_PATHS, directly under a root, or a build file)."""
    if is_build_file(path):
        return None
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
    refused_files: list[str] = field(default_factory=list)
    adapter_changes: dict[str, list[str]] = field(default_factory=dict)
    dirty: list[str] = field(default_factory=list)
    candidate_sha256: str | None = None

    @property
    def reused(self) -> bool:
        return self.status in (REUSED, ADAPTER_ONLY)

    @property
    def model_gate_required(self) -> list[str]:
        return sorted(self.adapter_changes)

    def to_json(self) -> dict[str, object]:
        return {
            "status": self.status,
            "reused": self.reused,
            "reason": self.reason,
            "record": self.record,
            "record_commit": self.record_commit,
            "candidate_commit": self.candidate_commit,
            "candidate_sha256": self.candidate_sha256,
            "repo": self.repo,
            "family": self.family,
            "adapter_paths": [{"path": root, "why": why} for root, why in ADAPTER_PATHS],
            "refused_files": self.refused_files,
            "adapter_changes": self.adapter_changes,
            "dirty": self.dirty,
            "model_gate_required": self.model_gate_required,
        }


def changed_files(repo: Path, old: str, new: str) -> tuple[str, str, list[str], list[str]]:
    """(old sha, new sha, every path that differs between the two commits, the checkout's
    uncommitted changes as `git status --porcelain` lines)."""
    from parval.protected.git import git_output, repo_root, resolve_commit

    root = repo_root(repo)
    a, b = resolve_commit(root, old), resolve_commit(root, new)
    out = git_output(
        root, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--ignore-submodules=none", a, b, "--"
    )
    status = git_output(root, "status", "--porcelain", "--untracked-files=normal", "--ignore-submodules=none")
    dirty = [line for line in status.decode("utf-8", "replace").splitlines() if line.strip()]
    return a, b, sorted(os.fsdecode(p) for p in out.split(b"\0") if p), dirty


def _names(files: list[str], limit: int = 10) -> str:
    return ", ".join(sorted(files)[:limit]) + (f" (+{len(files) - limit} more)" if len(files) > limit else "")


def classify(
    files: list[str],
    family: str,
    *,
    record: str,
    record_commit: str,
    candidate_commit: str,
    repo: str,
    dirty: list[str] | None = None,
    candidate_sha256: str | None = None,
) -> ReuseDecision:
    """The decision for the files changed between the record's commit and the candidate's:
    reused only when each lies under a known adapter path (and the checkout is clean)."""
    adapters: dict[str, list[str]] = {}
    refused: list[str] = []
    for f in files:
        fam = adapter_family(f)
        if fam is None:
            refused.append(f)
        else:
            adapters.setdefault(fam, []).append(f)
    where = f"framework record reused from {record} ({record_commit[:12]})"

    def made(status: str, reason: str) -> ReuseDecision:
        return ReuseDecision(
            status,
            record,
            record_commit,
            candidate_commit,
            repo,
            family,
            reason,
            sorted(refused),
            adapters,
            list(dirty or []),
            candidate_sha256,
        )

    refusal = f"framework record reuse from {record} ({record_commit[:12]}) refused"
    if dirty:
        return made(
            REFUSED,
            f"{refusal}: the checkout {repo} has uncommitted changes ({_names(dirty, 5)}), so the "
            "commits do not show what was built; commit or stash them, or rerun F1-F6 on the new build",
        )
    if refused:
        return made(
            REFUSED,
            f"{refusal}: files changed up to candidate {candidate_commit[:12]} that are not known to be one "
            f"model family's adapter: {_names(refused)}; rerun F1-F6 on the new build",
        )
    if adapters:
        gates = ", ".join(sorted(adapters))
        own = f"; this run is the {family} model gate on the new build" if family in adapters else ""
        return made(
            ADAPTER_ONLY,
            f"{where}: only adapter paths changed, in {gates}: the model gate of {gates} must be rerun "
            f"on the new build {candidate_commit[:12]}{own}",
        )
    return made(REUSED, f"{where}: no file changed up to candidate {candidate_commit[:12]}")


def decide(reuse: Mapping[str, object], base_dir: Path, family: str) -> ReuseDecision:
    """Resolve `framework.reuse` (paths relative to the plan's directory) and diff the commits."""
    record = str(reuse.get("record") or "")
    record_commit = str(reuse.get("record_commit") or "")
    candidate_commit = str(reuse.get("candidate_commit") or "")
    repo_raw = str(reuse.get("repo") or "")
    candidate_sha = reuse.get("candidate_sha256")
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
        return ReuseDecision(
            UNAVAILABLE,
            record_path,
            record_commit,
            candidate_commit,
            str(repo),
            family,
            reason,
            candidate_sha256=str(candidate_sha) if candidate_sha else None,
        )

    if missing:
        return unavailable(f"framework.reuse lacks {', '.join(missing)}: the reuse cannot be reviewed")
    try:
        old, new, files, dirty = changed_files(repo, record_commit, candidate_commit)
    except ParvalError as exc:
        return unavailable(f"framework record reuse from {record} cannot be reviewed: {exc.message}")
    return classify(
        files,
        family,
        record=record_path,
        record_commit=old,
        candidate_commit=new,
        repo=str(repo),
        dirty=dirty,
        candidate_sha256=str(candidate_sha) if candidate_sha else None,
    )
