"""git plumbing for X4: read-only queries, argument lists only, never a shell.

--literal-pathspecs: protected paths are paths, never globs or pathspec magic.
GIT_OPTIONAL_LOCKS=0: a read-only check must not take index.lock behind a build's back.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from parval.errors import GitError, UsageError

ChangeKind = Literal["modified", "added", "deleted"]

_GIT_TIMEOUT_S = 300.0


def git_proc(root: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run git in `root`; the caller reads the exit status."""
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0")
    cmd = ["git", "--literal-pathspecs", "-C", str(root), *args]
    try:
        return subprocess.run(cmd, input=stdin, capture_output=True, env=env, timeout=_GIT_TIMEOUT_S, check=False)
    except FileNotFoundError as exc:
        raise GitError("git executable not found on PATH") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git {args[0]} timed out after {_GIT_TIMEOUT_S:.0f} s") from exc


def git_output(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    """git's stdout; a non-zero exit is a GitError naming git's first error line."""
    proc = git_proc(root, *args, stdin=stdin)
    if proc.returncode != 0:
        msg = _first_line(proc.stderr) or f"exit status {proc.returncode}"
        raise GitError(f"git {args[0]} failed in {root}: {msg}")
    return proc.stdout


def _first_line(data: bytes) -> str:
    for line in data.decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip()
    return ""


def repo_root(repo: Path) -> Path:
    """The top level of the work tree containing `repo` (GitError if there is none)."""
    if not repo.is_dir():
        raise GitError(f"not a git repository: {repo} (no such directory)")
    try:
        proc = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--show-toplevel"],
            capture_output=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError as exc:
        raise GitError("git executable not found on PATH") from exc
    top = proc.stdout.decode("utf-8", "replace").strip()
    if proc.returncode != 0 or not top:
        detail = _first_line(proc.stderr)
        raise GitError(f"not a git repository: {repo}" + (f" ({detail})" if detail else ""))
    return Path(top)


def resolve_commit(root: Path, ref: str) -> str:
    """The full commit id `ref` names (UsageError/GitError if none)."""
    if not ref or ref.startswith("-"):
        # A leading '-' would be read by git as an option.
        raise UsageError(f"invalid upstream ref {ref!r}")
    proc = git_proc(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    sha = proc.stdout.decode("ascii", "replace").strip() if proc.returncode == 0 else ""
    if not sha:
        raise GitError(f"unknown upstream commit {ref!r} in {root}")
    return sha


def missing_at_upstream(root: Path, sha: str, paths: Sequence[str]) -> list[str]:
    """The paths that do not exist at commit `sha`."""
    if not paths:
        return []
    query = "".join(f"{sha}:{p}\n" for p in paths).encode()
    lines = git_output(root, "cat-file", "--batch-check", stdin=query).decode().splitlines()
    return [p for p, line in zip(paths, lines, strict=False) if line.endswith(" missing")]


def blob(root: Path, sha: str, path: str) -> bytes | None:
    """Raw blob: no textconv or filters, so the comparison sees upstream's stored bytes."""
    proc = git_proc(root, "cat-file", "blob", f"{sha}:{path}")
    return proc.stdout if proc.returncode == 0 else None


def tracked_changes(root: Path, sha: str, paths: Sequence[str]) -> dict[str, ChangeKind]:
    """Working tree (incl. uncommitted edits and staged files) vs the commit.

    --ignore-submodules=none: a candidate's .gitmodules `ignore=` must not hide a changed
    external/ggml submodule.
    """
    out = git_output(
        root,
        "diff",
        "--name-status",
        "-z",
        "--no-renames",
        "--no-ext-diff",
        "--ignore-submodules=none",
        sha,
        "--",
        *paths,
    )
    fields = out.split(b"\0")
    changes: dict[str, ChangeKind] = {}
    i = 0
    while i + 1 < len(fields):
        letter = fields[i].decode("ascii", "replace")[:1]
        name = os.fsdecode(fields[i + 1])
        i += 2
        changes[name] = "added" if letter == "A" else "deleted" if letter == "D" else "modified"
    return changes


def untracked(root: Path, paths: Sequence[str]) -> list[str]:
    """Untracked, not ignored files under `paths`."""
    out = git_output(root, "ls-files", "--others", "--exclude-standard", "-z", "--", *paths)
    return [os.fsdecode(p) for p in out.split(b"\0") if p]


def candidate_head(root: Path) -> tuple[str | None, bool]:
    """(HEAD's commit id or None, whether tracked or untracked files differ from HEAD)."""
    proc = git_proc(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    head = proc.stdout.decode("ascii", "replace").strip() if proc.returncode == 0 else ""
    status = git_output(root, "status", "--porcelain", "--untracked-files=normal", "--ignore-submodules=none")
    return (head or None), bool(status.strip())
