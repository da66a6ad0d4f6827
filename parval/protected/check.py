"""The X4 check itself: protected paths and the legacy runtime against one upstream commit."""

from __future__ import annotations

from pathlib import Path

from parval.protected import git
from parval.protected.config import ProtectedConfig
from parval.protected.git import ChangeKind
from parval.protected.hunks import MAX_HUNK_FILES, tracked_hunk, worktree_hunk
from parval.protected.legacy import check_legacy_runtime, read_worktree_text
from parval.protected.result import ChangedFile, ProtectedResult
from parval.status import Status


def _changed_files(root: Path, sha: str, paths: list[str], cfg: ProtectedConfig) -> list[ChangedFile]:
    """Protected files differing from the commit: tracked changes, then untracked files."""
    legacy = cfg.legacy_runtime
    changes: dict[str, ChangeKind] = {}
    if paths:
        changes = git.tracked_changes(root, sha, paths)
        untracked = git.untracked(root, paths)
    else:
        untracked = []
    # The legacy runtime has its own rule even if a protected directory contains it.
    changes.pop(legacy, None)

    changed: list[ChangedFile] = []
    for name in sorted(changes):
        kind = changes[name]
        hunk = (
            tracked_hunk(root, sha, name, cfg.max_hunk_chars)
            if len(changed) < MAX_HUNK_FILES
            else "(hunk omitted: too many changed files)"
        )
        changed.append(ChangedFile(name, kind, hunk))
    for name in sorted(set(untracked) - {legacy}):
        if changes.get(name) == "deleted":
            # Removed from the index but still on disk: compare the bytes directly.
            old = git.blob(root, sha, name)
            current = (root / name).read_bytes() if (root / name).is_file() else None
            changed = [c for c in changed if c.path != name]
            if old is not None and current == old:
                continue
            changed.append(ChangedFile(name, "modified", worktree_hunk(root, name, old, cfg.max_hunk_chars)))
        else:
            changed.append(ChangedFile(name, "added", worktree_hunk(root, name, None, cfg.max_hunk_chars)))
    changed.sort(key=lambda c: c.path)
    return changed


def verify_protected(repo: Path, upstream: str, config: ProtectedConfig | None = None) -> ProtectedResult:
    """Run the X4 source-boundary check. Raises GitError/UsageError (exit 2) on bad input."""
    cfg = config or ProtectedConfig()
    root = git.repo_root(repo)
    sha = git.resolve_commit(root, upstream)
    paths = list(dict.fromkeys(cfg.protected_paths))
    legacy = cfg.legacy_runtime
    changed = _changed_files(root, sha, paths, cfg)

    up_blob = git.blob(root, sha, legacy)
    up_text = up_blob.decode("utf-8", "surrogateescape") if up_blob is not None else None
    legacy_check = check_legacy_runtime(
        read_worktree_text(root, legacy), up_text, cfg.allowed_block, path=legacy, limit=cfg.max_hunk_chars
    )

    warnings = [
        f"protected path {p} does not exist at upstream {sha[:12]}" for p in git.missing_at_upstream(root, sha, paths)
    ]
    status = Status.PASS if not changed and legacy_check.status is Status.PASS else Status.FAIL
    head, dirty = git.candidate_head(root)
    return ProtectedResult(
        status=status,
        upstream=sha,
        upstream_ref=upstream,
        repo=str(root),
        checked_paths=paths,
        changed=changed,
        legacy_runtime=legacy_check,
        warnings=warnings,
        config_source=cfg.source,
        candidate_commit=head,
        candidate_dirty=dirty,
    )
