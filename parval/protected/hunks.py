"""Bounded unified diffs of changed protected files: evidence for a reviewer, not a patch."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from pathlib import Path

from parval.protected.git import git_output

# Files beyond MAX_HUNK_FILES are still named, only without a hunk.
MAX_HUNK_FILES = 200
# Untracked files larger than this are summarised instead of diffed.
_MAX_UNTRACKED_READ = 1 << 20


def tracked_hunk(root: Path, sha: str, path: str, limit: int) -> str:
    """git's diff of a tracked file against the commit, at most `limit` characters."""
    out = git_output(
        root,
        "diff",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        "--ignore-submodules=none",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        sha,
        "--",
        path,
    )
    return bound(out.decode("utf-8", "replace"), limit)


def worktree_hunk(root: Path, path: str, old: bytes | None, limit: int) -> str:
    """Diff a file git does not track against `old` (None: the file is new)."""
    full = root / path
    if full.is_symlink():
        return f"symlink b/{path} -> {os.readlink(full)}"
    try:
        size = full.stat().st_size
        with full.open("rb") as fh:
            data = fh.read(_MAX_UNTRACKED_READ)
    except OSError as exc:
        return f"(unreadable: {exc})"
    if b"\0" in data or (old is not None and b"\0" in old):
        return f"Binary file b/{path} differs ({size} bytes)"
    if size > _MAX_UNTRACKED_READ:
        return f"(b/{path}: {size} bytes; too large to diff)"
    old_lines = old.decode("utf-8", "replace").splitlines(keepends=True) if old is not None else []
    new_lines = data.decode("utf-8", "replace").splitlines(keepends=True)
    from_name = f"a/{path}" if old is not None else "/dev/null"
    diff = difflib.unified_diff(old_lines, new_lines, from_name, f"b/{path}")
    return bound(join_diff(diff), limit)


def join_diff(lines: Iterable[str]) -> str:
    """difflib omits the newline after a last line without one; keep every line separate."""
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def bound(text: str, limit: int) -> str:
    """Cut at the last line break within `limit`, saying how much was left out."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    cut = cut + 1 if cut > 0 else limit
    rest = text[cut:].count("\n")
    return text[:cut] + f"... (truncated: {rest} more line(s), {len(text) - cut} more chars)\n"
