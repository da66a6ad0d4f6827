"""Source-boundary check (assertion X4): `parval verify-protected`.

Reproduces `tests/server/check_parallel_boundaries.py` from audio.cpp (reference §9) with
machine-readable output and distinct exit codes:

* every protected path (file or whole directory) must be identical to the upstream commit in
  the working tree, including uncommitted edits and untracked-but-not-ignored files;
* the legacy runtime may differ from upstream only by one registration-rejection block: the
  candidate contains it exactly once and removing that occurrence gives the upstream file
  (CRLF read as LF on both sides).

git always runs through argument lists, never through a shell.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

import typer
import yaml

from parval import __version__
from parval.errors import (
    EXIT_ADMITTED,
    EXIT_FAILED,
    GitError,
    InputFileError,
    ParvalError,
    UsageError,
)
from parval.status import Result, Status

ASSERTION_ID = "X4"
TOOL_NAME = "parval verify-protected"

DEFAULT_PROTECTED_PATHS: tuple[str, ...] = (
    "app/server/runtime.h",
    "app/server/busy_guard.h",
    "app/server/http.h",
    "app/server/http.cpp",
    "app/server/frontend.h",
    "app/server/frontend.cpp",
    "include/engine/framework/runtime/session.h",
    "app/cli",
    "src/models",
    "include/engine/models",
    "src/community_models",
    "include/engine/community_models",
    "external/ggml",
)
DEFAULT_LEGACY_RUNTIME = "app/server/runtime.cpp"

# The test vector from legacy-rejection-block.txt (reference §9): five lines, four-space base
# indentation, each line ending in a newline.
LEGACY_REJECTION_BLOCK = (
    '    if (body.find("slots") != nullptr) {\n'
    "        return error_response(400,\n"
    '            "slots requires --parallel-jobs at server startup",\n'
    '            "invalid_request_error");\n'
    "    }\n"
)

# Hunks are evidence for a reviewer, not a patch: bound them so one reformatted file cannot
# blow up the JSON. Files beyond MAX_HUNK_FILES are still named, only without a hunk.
DEFAULT_MAX_HUNK_CHARS = 16_000
MAX_HUNK_FILES = 200
# Untracked files larger than this are summarised instead of diffed.
_MAX_UNTRACKED_READ = 1 << 20
_GIT_TIMEOUT_S = 300.0

ChangeKind = Literal["modified", "added", "deleted"]


# --------------------------------------------------------------------------------------
# configuration


@dataclass(frozen=True)
class ProtectedConfig:
    """What to protect. Defaults follow the upstream boundary script."""

    protected_paths: tuple[str, ...] = DEFAULT_PROTECTED_PATHS
    legacy_runtime: str = DEFAULT_LEGACY_RUNTIME
    allowed_block: str = LEGACY_REJECTION_BLOCK
    max_hunk_chars: int = DEFAULT_MAX_HUNK_CHARS
    source: str = "built-in defaults"

    _KEYS = frozenset(
        {
            "protected_paths",
            "legacy_runtime",
            "allowed_block",
            "allowed_block_file",
            "max_hunk_chars",
        }
    )

    @classmethod
    def from_mapping(
        cls, data: Mapping[str, Any], *, base_dir: Path, source: str = "mapping"
    ) -> ProtectedConfig:
        """Build a config from parsed YAML/JSON; `allowed_block_file` is relative to base_dir.

        A `verify_protected:` section is used when present, so a plan file can carry it.
        Unknown keys are refused: a misspelt key would silently weaken the check.
        """
        section = data.get("verify_protected", data)
        if not isinstance(section, Mapping):
            raise UsageError(f"{source}: 'verify_protected' must be a mapping")
        unknown = sorted(set(section) - cls._KEYS)
        if unknown:
            raise UsageError(
                f"{source}: unknown key(s) {', '.join(map(str, unknown))}; "
                f"allowed: {', '.join(sorted(cls._KEYS))}"
            )
        cfg = cls(source=source)
        if "protected_paths" in section:
            paths = section["protected_paths"]
            if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
                raise UsageError(f"{source}: protected_paths must be a list of strings")
            cfg = replace(
                cfg, protected_paths=tuple(_normalise_repo_path(p, source) for p in paths)
            )
        if "legacy_runtime" in section:
            legacy = section["legacy_runtime"]
            if not isinstance(legacy, str):
                raise UsageError(f"{source}: legacy_runtime must be a string")
            cfg = replace(cfg, legacy_runtime=_normalise_repo_path(legacy, source))
        if "allowed_block" in section and "allowed_block_file" in section:
            raise UsageError(f"{source}: give allowed_block or allowed_block_file, not both")
        if "allowed_block" in section:
            block = section["allowed_block"]
            if not isinstance(block, str) or not block.strip():
                raise UsageError(f"{source}: allowed_block must be a non-empty string")
            cfg = replace(cfg, allowed_block=block)
        if "allowed_block_file" in section:
            name = section["allowed_block_file"]
            if not isinstance(name, str):
                raise UsageError(f"{source}: allowed_block_file must be a string")
            block_path = base_dir / name
            try:
                # Bytes, not read_text: keep line endings as written (CRLF is folded later).
                block = block_path.read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise InputFileError(f"cannot read allowed_block_file {block_path}: {exc}") from exc
            if not block.strip():
                raise UsageError(f"{source}: allowed_block_file {block_path} is empty")
            cfg = replace(cfg, allowed_block=block)
        if "max_hunk_chars" in section:
            limit = section["max_hunk_chars"]
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 200:
                raise UsageError(f"{source}: max_hunk_chars must be an integer >= 200")
            cfg = replace(cfg, max_hunk_chars=limit)
        return cfg

    @classmethod
    def load(cls, path: Path) -> ProtectedConfig:
        """Read a YAML or JSON config file (InputFileError / UsageError → exit 2)."""
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputFileError(f"cannot read config {path}: {exc}") from exc
        try:
            data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
        except (json.JSONDecodeError, yaml.YAMLError) as exc:
            detail = str(exc).replace("\n", " ")
            raise UsageError(f"config {path} is not valid YAML/JSON: {detail}") from exc
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise UsageError(f"config {path} must contain a mapping at the top level")
        return cls.from_mapping(data, base_dir=path.parent, source=str(path))


def _normalise_repo_path(raw: str, source: str) -> str:
    """Repo-relative POSIX path without './' or a trailing '/'; refuse escapes."""
    text = raw.strip().replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    text = text.rstrip("/")
    pure = PurePosixPath(text)
    if not text or pure.is_absolute() or ".." in pure.parts or text.startswith(":"):
        raise UsageError(f"{source}: {raw!r} is not a path inside the repository")
    return str(pure)


# --------------------------------------------------------------------------------------
# result


@dataclass
class ChangedFile:
    path: str
    kind: ChangeKind
    hunk: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "hunk": self.hunk}


@dataclass
class LegacyRuntimeCheck:
    path: str
    status: Status
    reason: str
    hunk: str = ""
    block_occurrences: int = 0
    block_sha256: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "status": str(self.status),
            "reason": self.reason,
            "hunk": self.hunk,
            "block_occurrences": self.block_occurrences,
            "block_sha256": self.block_sha256,
        }


@dataclass
class ProtectedResult:
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

    def to_json(self) -> dict[str, Any]:
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
            f"{ASSERTION_ID} {self.status}: protected sources vs upstream {self.upstream}"
            f" ({self.upstream_ref})",
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

    def to_result(self) -> Result:
        """The X4 verdict for `parval run`, with this check's JSON as evidence."""
        return Result(
            id=ASSERTION_ID,
            status=self.status,
            reason=self.reason,
            evidence=self.to_json(),
            reproduction=f"parval verify-protected --repo {self.repo} --upstream {self.upstream}",
            limitations=[
                "protected files are compared as git sees them (after clean filters such as "
                "core.autocrlf); files ignored by .gitignore are not checked",
            ],
        )


def _indent(text: str, prefix: str) -> list[str]:
    return [prefix + line for line in text.splitlines()] if text else []


# --------------------------------------------------------------------------------------
# git


def _git_proc(
    root: Path, *args: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    # --literal-pathspecs: protected paths are paths, never globs or pathspec magic.
    # GIT_OPTIONAL_LOCKS=0: a read-only check must not take index.lock behind a build's back.
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0")
    cmd = ["git", "--literal-pathspecs", "-C", str(root), *args]
    try:
        return subprocess.run(
            cmd, input=stdin, capture_output=True, env=env, timeout=_GIT_TIMEOUT_S, check=False
        )
    except FileNotFoundError as exc:
        raise GitError("git executable not found on PATH") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git {args[0]} timed out after {_GIT_TIMEOUT_S:.0f} s") from exc


def _git(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    proc = _git_proc(root, *args, stdin=stdin)
    if proc.returncode != 0:
        msg = _first_line(proc.stderr) or f"exit status {proc.returncode}"
        raise GitError(f"git {args[0]} failed in {root}: {msg}")
    return proc.stdout


def _first_line(data: bytes) -> str:
    for line in data.decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip()
    return ""


def _repo_root(repo: Path) -> Path:
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


def _resolve_commit(root: Path, ref: str) -> str:
    if not ref or ref.startswith("-"):
        # A leading '-' would be read by git as an option.
        raise UsageError(f"invalid upstream ref {ref!r}")
    proc = _git_proc(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    sha = proc.stdout.decode("ascii", "replace").strip() if proc.returncode == 0 else ""
    if not sha:
        raise GitError(f"unknown upstream commit {ref!r} in {root}")
    return sha


def _missing_at_upstream(root: Path, sha: str, paths: Sequence[str]) -> list[str]:
    if not paths:
        return []
    query = "".join(f"{sha}:{p}\n" for p in paths).encode()
    lines = _git(root, "cat-file", "--batch-check", stdin=query).decode().splitlines()
    return [p for p, line in zip(paths, lines, strict=False) if line.endswith(" missing")]


def _blob(root: Path, sha: str, path: str) -> bytes | None:
    # Raw blob: no textconv or filters, so the comparison sees upstream's stored bytes.
    proc = _git_proc(root, "cat-file", "blob", f"{sha}:{path}")
    return proc.stdout if proc.returncode == 0 else None


def _tracked_changes(root: Path, sha: str, paths: Sequence[str]) -> dict[str, ChangeKind]:
    """Working tree (incl. uncommitted edits and staged files) vs the commit.

    --ignore-submodules=none: a candidate's .gitmodules `ignore=` must not hide a changed
    external/ggml submodule.
    """
    out = _git(
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


def _untracked(root: Path, paths: Sequence[str]) -> list[str]:
    out = _git(root, "ls-files", "--others", "--exclude-standard", "-z", "--", *paths)
    return [os.fsdecode(p) for p in out.split(b"\0") if p]


def _tracked_hunk(root: Path, sha: str, path: str, limit: int) -> str:
    out = _git(
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
    return _bound(out.decode("utf-8", "replace"), limit)


def _worktree_hunk(root: Path, path: str, old: bytes | None, limit: int) -> str:
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
    return _bound(_join_diff(diff), limit)


def _join_diff(lines: Iterable[str]) -> str:
    # difflib omits the newline after a last line without one; keep every line separate.
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def _bound(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    cut = cut + 1 if cut > 0 else limit
    rest = text[cut:].count("\n")
    return text[:cut] + f"... (truncated: {rest} more line(s), {len(text) - cut} more chars)\n"


# --------------------------------------------------------------------------------------
# legacy runtime


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n")


def check_legacy_runtime(
    candidate: str | None, upstream: str | None, block: str, *, path: str, limit: int
) -> LegacyRuntimeCheck:
    """Candidate must be upstream plus exactly one occurrence of `block` (CRLF read as LF).

    Pure function so the rule can be tested without git. `None` means the file is absent.
    """
    block_lf = _lf(block)
    digest = hashlib.sha256(block_lf.encode("utf-8", "surrogateescape")).hexdigest()

    def fail(reason: str, hunk: str = "", count: int = 0) -> LegacyRuntimeCheck:
        return LegacyRuntimeCheck(path, Status.FAIL, reason, _bound(hunk, limit), count, digest)

    if upstream is None:
        return fail(f"{path} does not exist at the upstream commit")
    if candidate is None:
        return fail(f"{path} is missing from the working tree")
    cand, up = _lf(candidate), _lf(upstream)
    count = cand.count(block_lf)
    if count != 1:
        # Show what remains unexplained after removing one block (or nothing, if absent).
        stripped = cand.replace(block_lf, "", 1)
        what = "not found" if count == 0 else f"found {count} times"
        return fail(
            f"registration-rejection block {what}; it must appear exactly once",
            _unified(up, stripped, path),
            count,
        )
    stripped = cand.replace(block_lf, "", 1)
    if stripped != up:
        return fail(
            "differs from upstream beyond the registration-rejection block",
            _unified(up, stripped, path),
            count,
        )
    return LegacyRuntimeCheck(
        path, Status.PASS, "only the registration-rejection block differs", "", count, digest
    )


def _unified(upstream: str, candidate_minus_block: str, path: str) -> str:
    diff = difflib.unified_diff(
        upstream.splitlines(keepends=True),
        candidate_minus_block.splitlines(keepends=True),
        f"a/{path} (upstream)",
        f"b/{path} (candidate minus block)",
    )
    return _join_diff(diff)


def _read_worktree_text(root: Path, path: str) -> str | None:
    try:
        return (root / path).read_bytes().decode("utf-8", "surrogateescape")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputFileError(f"cannot read {root / path}: {exc}") from exc


# --------------------------------------------------------------------------------------
# the check


def verify_protected(
    repo: Path, upstream: str, config: ProtectedConfig | None = None
) -> ProtectedResult:
    """Run the X4 source-boundary check. Raises GitError/UsageError (exit 2) on bad input."""
    cfg = config or ProtectedConfig()
    root = _repo_root(repo)
    sha = _resolve_commit(root, upstream)
    paths = list(dict.fromkeys(cfg.protected_paths))
    legacy = cfg.legacy_runtime

    changes: dict[str, ChangeKind] = {}
    if paths:
        changes = _tracked_changes(root, sha, paths)
        untracked = _untracked(root, paths)
    else:
        untracked = []
    # The legacy runtime has its own rule even if a protected directory contains it.
    changes.pop(legacy, None)

    changed: list[ChangedFile] = []
    for name in sorted(changes):
        kind = changes[name]
        hunk = (
            _tracked_hunk(root, sha, name, cfg.max_hunk_chars)
            if len(changed) < MAX_HUNK_FILES
            else "(hunk omitted: too many changed files)"
        )
        changed.append(ChangedFile(name, kind, hunk))
    for name in sorted(set(untracked) - {legacy}):
        if changes.get(name) == "deleted":
            # Removed from the index but still on disk: compare the bytes directly.
            old = _blob(root, sha, name)
            current = (root / name).read_bytes() if (root / name).is_file() else None
            changed = [c for c in changed if c.path != name]
            if old is not None and current == old:
                continue
            changed.append(
                ChangedFile(name, "modified", _worktree_hunk(root, name, old, cfg.max_hunk_chars))
            )
        else:
            changed.append(
                ChangedFile(name, "added", _worktree_hunk(root, name, None, cfg.max_hunk_chars))
            )
    changed.sort(key=lambda c: c.path)

    up_blob = _blob(root, sha, legacy)
    up_text = up_blob.decode("utf-8", "surrogateescape") if up_blob is not None else None
    legacy_check = check_legacy_runtime(
        _read_worktree_text(root, legacy),
        up_text,
        cfg.allowed_block,
        path=legacy,
        limit=cfg.max_hunk_chars,
    )

    warnings = [
        f"protected path {p} does not exist at upstream {sha[:12]}"
        for p in _missing_at_upstream(root, sha, paths)
    ]
    status = Status.PASS if not changed and legacy_check.status is Status.PASS else Status.FAIL
    head, dirty = _candidate_head(root)
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


def _candidate_head(root: Path) -> tuple[str | None, bool]:
    """(HEAD's commit id or None, whether tracked or untracked files differ from HEAD)."""
    proc = _git_proc(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    head = proc.stdout.decode("ascii", "replace").strip() if proc.returncode == 0 else ""
    status = _git(root, "status", "--porcelain", "--untracked-files=normal", "--ignore-submodules=none")
    return (head or None), bool(status.strip())


def write_json_atomic(path: Path, data: Mapping[str, Any]) -> None:
    """Write JSON via a temp file in the same directory and rename, so readers never see half."""
    text = json.dumps(data, indent=2, sort_keys=False) + "\n"
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise InputFileError(f"cannot write {path}: {exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputFileError(f"cannot write {path}: {exc}") from exc


# --------------------------------------------------------------------------------------
# CLI


def verify_protected_command(
    upstream: Annotated[
        str,
        typer.Option("--upstream", help="Upstream commit (sha, tag or branch) to compare with."),
    ],
    repo: Annotated[Path, typer.Option("--repo", help="Candidate checkout.")] = Path("."),
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="YAML/JSON overriding protected_paths, legacy_runtime, allowed_block(_file).",
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    output: Annotated[
        Path | None, typer.Option("--output", help="Also write the JSON result to this file.")
    ] = None,
) -> None:
    """Check protected sources against upstream (assertion X4).

    Protected files and directories must equal the upstream commit in the
    working tree (uncommitted and untracked files included).
    The legacy runtime may differ only by one registration-rejection block.
    Exit 0 pass, 1 fail, 2 usage or git error.

    Example:
      parval verify-protected --repo ../audio.cpp --upstream 612c5e9f --json
    """
    try:
        cfg = ProtectedConfig.load(config) if config is not None else None
        result = verify_protected(repo, upstream, cfg)
        if output is not None:
            write_json_atomic(output, result.to_json())
    except ParvalError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        raise typer.Exit(exc.exit_code) from None
    if json_out:
        typer.echo(json.dumps(result.to_json(), indent=2))
    else:
        typer.echo(result.to_text())
    raise typer.Exit(EXIT_ADMITTED if result.status is Status.PASS else EXIT_FAILED)
