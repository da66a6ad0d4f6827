"""Reviewed reuse of a framework record made for another candidate build (plan `framework.reuse`).

The procedure: "Reviewed evidence reuse must identify unchanged relevant source/settings and
applicability; changed inference, preparation, ownership or backend paths need new
coverage. For adapter-only changes, rerun the affected model/backend gate ... For framework
changes, rerun F1-F6." parval diffs the record's source commit against the candidate's in
a git checkout of audio.cpp, and reuse fails closed:

* no file changed → the record is reused;
* every changed file lies under a path known to be one model family's adapter
  (ADAPTER_PATHS: the one reviewable list, each with why it touches only that family) →
  the record is reused only for the F entries ADAPTER_ONLY_RULE carries (the rest need
  evidence from the candidate build itself: PENDING naming what to rerun), each changed
  family's model gate must be rerun on the new build, and the reuse must name the CPU
  checkpoint smoke evidence or why the CPU path is unaffected (else nothing is reused);
* anything else changed (server, scheduler, transport, vendored code, tests, build files,
  docs: whatever parval cannot show to be one family's adapter) → reuse refused, naming the
  files (F1-F6 PENDING: rerun them);
* a checkout with uncommitted changes refuses too: the diff between two commits says
  nothing about a binary built from a modified tree.

Reuse ties the record to a binary only through commits, so the plan must name the
candidate's source commit (`identity.candidate.source_commit`, the one the review diffed
to), the record must name its own (`identity.source_commit`, the reviewed record commit),
and `framework.reuse.candidate_sha256` must be the executable under test: the reviewer
states which binary the reviewed commit produced (checked in record_trust).

The build flags are part of what is compared (record_identity.flags_problem): a record
built with another flag set is not of the same build, reused or not.

Only the shared F1-F6 record is ever reused; model quality evidence never crosses builds.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from parval.errors import ParvalError
from parval.procedure.assertion_ids import FRAMEWORK_GATE

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
INCOMPLETE = "incomplete"  # adapter-only, but the reuse names no CPU smoke evidence or reason

# What an adapter-only change leaves standing: the rule below implements these sentences.
ADAPTER_ONLY_PROCEDURE = (
    "For adapter-only changes, rerun the affected model/backend gate and applicable common "
    "regressions; justify reuse of unaffected shared evidence.",
    "Reviewed evidence reuse must identify unchanged relevant source/settings and applicability; "
    "changed inference, preparation, ownership or backend paths need new coverage.",
)
CARRY = "carry"
RERUN = "rerun"
# F entry (or F group) -> whether its evidence carries over an adapter-only change, and why.
# An exact entry id wins over its group. Entries marked RERUN need evidence from the
# candidate build itself: under an adapter-only reuse they are PENDING naming what to rerun.
ADAPTER_ONLY_RULE: dict[str, tuple[str, str]] = {
    "F1": (
        CARRY,
        "scheduling, admission, timeouts and the legacy guard are the server's scheduler, not an adapter "
        "path; the changed family's model gate (M2 waves, M4) runs its adapter through them",
    ),
    "F2": (
        CARRY,
        "publication, unload/reconfiguration barriers and callback leases are the shared registry and pools, "
        "not an adapter path; the changed family's cold/warm publication is its model gate (M2)",
    ),
    "F3.load_failures": (
        CARRY,
        "the injected primary/clone/weight-load failures exercise the pool's rollback order with test "
        "sessions, not an adapter; the changed family's own primary-load failure and retry is its model gate (M4)",
    ),
    "F3.ownership": (
        RERUN,
        "an adapter's sessions own its mutable graphs, caches, RNG and callbacks and share its immutable "
        "weights: a changed adapter is a changed ownership path, which needs new coverage",
    ),
    "F4": (
        CARRY,
        "disconnect accounting and the shutdown drain/reject policy are the server's listener and scheduler, "
        "not an adapter path",
    ),
    "F5": (CARRY, "residency, eviction and registry locking are the shared model manager, not an adapter path"),
    "F6.ctest": (RERUN, "the common CTests are applicable common regressions, built from the changed tree"),
    "F6.sanitizers": (
        RERUN,
        "the CPU tests under ASan/TSan compile the changed adapter: applicable common regressions",
    ),
    "F6.stress": (RERUN, "the seeded stress run is an applicable common regression of the changed build"),
}


def adapter_only_rule(entry: str) -> tuple[str, str]:
    """(CARRY or RERUN, why) for one F entry under an adapter-only change."""
    found = ADAPTER_ONLY_RULE.get(entry) or ADAPTER_ONLY_RULE.get(entry.split(".")[0])
    if found is None:
        raise KeyError(f"ADAPTER_ONLY_RULE has no row for {entry} or its group")
    return found


def rerun_entries(entries: list[str]) -> list[str]:
    """The entries an adapter-only change leaves to be rerun on the candidate build."""
    return [e for e in entries if adapter_only_rule(e)[0] == RERUN]


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
    cpu_smoke: str | None = None
    cpu_unaffected: str | None = None

    @property
    def reused(self) -> bool:
        return self.status in (REUSED, ADAPTER_ONLY)

    def carried(self, entry: str) -> tuple[bool, str]:
        """(whether `entry` carries over this reuse, why not when it does not)."""
        if self.status != ADAPTER_ONLY:
            return self.status == REUSED, self.reason
        what, why = adapter_only_rule(entry)
        if what == CARRY:
            return True, why
        families = ", ".join(f"{fam}: {_names(files, 5)}" for fam, files in sorted(self.adapter_changes.items()))
        return False, (
            f"not carried over from {self.record} ({self.record_commit[:12]}): the adapter-only change "
            f"({families}) needs evidence from the candidate build {self.candidate_commit[:12]} itself ({why}); "
            f"rerun {entry} there (`parval framework` on the candidate build, whose record then replaces the reuse)"
        )

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
            "cpu_smoke": self.cpu_smoke,
            "cpu_unaffected": self.cpu_unaffected,
            "adapter_only_rule": {
                "procedure": list(ADAPTER_ONLY_PROCEDURE),
                "rows": [{"entry": k, "evidence": v[0], "why": v[1]} for k, v in ADAPTER_ONLY_RULE.items()],
            },
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
    cpu_smoke: str | None = None,
    cpu_unaffected: str | None = None,
) -> ReuseDecision:
    """The decision for the files changed between the record's commit and the candidate's:
    reused only when each lies under a known adapter path (and the checkout is clean); an
    adapter-only change also needs the CPU checkpoint smoke evidence or why the CPU path
    is unaffected."""
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
            cpu_smoke,
            cpu_unaffected,
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
    if adapters and not (cpu_smoke or cpu_unaffected):
        return made(
            INCOMPLETE,
            f"framework record reuse from {record} ({record_commit[:12]}) incomplete: adapter paths changed "
            f"in {', '.join(sorted(adapters))}, and the procedure requires CPU checkpoint smoke tests when a "
            "change affects CPU behaviour: name the smoke evidence on the new build (framework.reuse.cpu_smoke) "
            "or record why the CPU path is unaffected, referencing the common default/unsupported-mode "
            "coverage (framework.reuse.cpu_unaffected)",
        )
    if adapters:
        gates = ", ".join(sorted(adapters))
        own = f"; this run is the {family} model gate on the new build" if family in adapters else ""
        cpu = f"CPU checkpoint smoke: {cpu_smoke}" if cpu_smoke else f"CPU path unaffected: {cpu_unaffected}"
        return made(
            ADAPTER_ONLY,
            f"{where}: only adapter paths changed, in {gates}: the model gate of {gates} must be rerun "
            f"on the new build {candidate_commit[:12]}{own}; {', '.join(rerun_entries(list(FRAMEWORK_GATE)))} "
            f"are not carried over (rerun on the new build); {cpu}",
        )
    return made(REUSED, f"{where}: no file changed up to candidate {candidate_commit[:12]}")


def decide(reuse: Mapping[str, object], base_dir: Path, family: str) -> ReuseDecision:
    """Resolve `framework.reuse` (paths relative to the plan's directory) and diff the commits."""
    record = str(reuse.get("record") or "")
    record_commit = str(reuse.get("record_commit") or "")
    candidate_commit = str(reuse.get("candidate_commit") or "")
    repo_raw = str(reuse.get("repo") or "")
    candidate_sha = reuse.get("candidate_sha256")
    cpu_smoke = _text(reuse.get("cpu_smoke"))
    cpu_unaffected = _text(reuse.get("cpu_unaffected"))
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
        cpu_smoke=cpu_smoke,
        cpu_unaffected=cpu_unaffected,
    )


def _text(value: object) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None
