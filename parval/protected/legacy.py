"""The legacy runtime rule: upstream plus exactly one registration-rejection block."""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass
from pathlib import Path

from parval.errors import InputFileError
from parval.jsontypes import JsonObject
from parval.protected.hunks import bound, join_diff
from parval.status import Status


@dataclass
class LegacyRuntimeCheck:
    """The legacy runtime's verdict, with the diff left after removing one block."""

    path: str
    status: Status
    reason: str
    hunk: str = ""
    block_occurrences: int = 0
    block_sha256: str = ""

    def to_json(self) -> JsonObject:
        return {
            "path": self.path,
            "status": str(self.status),
            "reason": self.reason,
            "hunk": self.hunk,
            "block_occurrences": self.block_occurrences,
            "block_sha256": self.block_sha256,
        }


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
        return LegacyRuntimeCheck(path, Status.FAIL, reason, bound(hunk, limit), count, digest)

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
            f"registration-rejection block {what}; it must appear exactly once", _unified(up, stripped, path), count
        )
    stripped = cand.replace(block_lf, "", 1)
    if stripped != up:
        return fail(
            "differs from upstream beyond the registration-rejection block", _unified(up, stripped, path), count
        )
    return LegacyRuntimeCheck(path, Status.PASS, "only the registration-rejection block differs", "", count, digest)


def _unified(upstream: str, candidate_minus_block: str, path: str) -> str:
    diff = difflib.unified_diff(
        upstream.splitlines(keepends=True),
        candidate_minus_block.splitlines(keepends=True),
        f"a/{path} (upstream)",
        f"b/{path} (candidate minus block)",
    )
    return join_diff(diff)


def read_worktree_text(root: Path, path: str) -> str | None:
    """The working-tree file as text (undecodable bytes kept), None when it is absent."""
    try:
        return (root / path).read_bytes().decode("utf-8", "surrogateescape")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputFileError(f"cannot read {root / path}: {exc}") from exc
