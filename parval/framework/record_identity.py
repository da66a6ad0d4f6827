"""Whether a framework record is one this model run may use: sealed and unchanged in its
run directory, made on this device and driver (and saying so), and (under a reviewed reuse) tied to this
binary through its source commits and the reviewed executable hash. Used by
parval.framework.record_trust, which turns a problem into PENDING framework entries.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from parval.errors import RunDirError
from parval.framework.reuse import ReuseDecision
from parval.jsonread import get


def record_file(path: Path) -> Path:
    """`path` itself, or `path/record.json` when given the framework run directory."""
    return path / "record.json" if path.is_dir() else path


def refuse_modified_record(record: str | None, base_dir: Path) -> None:
    """Before a campaign: a referenced framework record whose sealed directory changed is
    refused now (TamperedRunError, exit 2), not discovered after the GPU time is spent. A
    record that is missing or not in a sealed directory is left for the judge (PENDING)."""
    from parval.rundir.integrity import CHAIN, LISTING
    from parval.rundir.verified import verified

    if not record:
        return
    path = record_file(Path(record) if Path(record).is_absolute() else base_dir / record)
    if (path.parent / LISTING).exists() or (path.parent / CHAIN).exists():
        verified(path.parent)


def integrity_problems(path: Path) -> list[str]:
    """A record is used only inside its framework run directory, verified like any evidence
    (parval.rundir.integrity.verified): sealed by `parval framework`, unchanged since."""
    from parval.rundir.integrity import CHAIN, LISTING
    from parval.rundir.verified import verified

    directory = path.parent
    if not (directory / LISTING).exists() and not (directory / CHAIN).exists():
        return [
            f"{path} is not inside a sealed framework run directory (no {LISTING} or {CHAIN} beside it): "
            "a record is used only where `parval framework` wrote and sealed it"
        ]
    try:
        verified(directory)
    except RunDirError as exc:
        return [exc.message]
    listed = {line.partition("  ")[2] for line in (directory / LISTING).read_text("utf-8", "replace").splitlines()}
    if path.name not in listed:
        return [f"{path.name} is not among the files {LISTING} seals"]
    return []


def reuse_problem(reuse: ReuseDecision, recorded: object, commit: str | None, cand: object) -> str | None:
    """Under an accepted reuse the record is for another executable by design; what ties it
    to this binary instead: the record names the reviewed record commit, the plan names the
    candidate commit the review diffed to, and the reviewer stated which executable that
    commit produced (framework.reuse.candidate_sha256)."""
    if not isinstance(recorded, str) or not same_commit(recorded, reuse.record_commit):
        return (
            f"names source commit {recorded}, not the reviewed record commit {reuse.record_commit[:12]} "
            "(framework.reuse.record_commit)"
        )
    if not commit:
        return (
            "reuse needs the plan's identity.candidate.source_commit: without it nothing ties this "
            f"binary to the reviewed commit {reuse.candidate_commit[:12]}"
        )
    if not same_commit(commit, reuse.candidate_commit):
        return (
            f"framework.reuse diffed up to candidate commit {reuse.candidate_commit[:12]}, "
            f"the plan names {commit[:12]} (identity.candidate.source_commit)"
        )
    if not reuse.candidate_sha256:
        return (
            f"framework.reuse names no candidate_sha256: state the executable built from "
            f"{reuse.candidate_commit[:12]} (this run's candidate is {str(cand)})"
        )
    if str(reuse.candidate_sha256).lower() != str(cand).lower():
        return (
            f"framework.reuse.candidate_sha256 {str(reuse.candidate_sha256)[:12]} is not this run's "
            f"candidate executable {str(cand)[:12]}"
        )
    return None


def normal_flags(flags: object) -> list[str] | None:
    """Build flags as compared: a string split as a shell would, a list as given (order
    kept: a later flag can override an earlier one); None when not named."""
    import shlex

    if isinstance(flags, str) and flags.strip():
        try:
            return shlex.split(flags)
        except ValueError:
            return flags.split()
    if isinstance(flags, list) and flags:
        return [str(f).strip() for f in flags if str(f).strip()]
    return None


def flags_problem(recorded: object, declared: object, reused: bool) -> str | None:
    """Build flags are part of a build's identity: a record built with another flag set is
    not of this build. Under a reuse both sides must name them (unchanged settings must be
    shown); otherwise they are compared where both do (the executable hash decides)."""
    mine, theirs = normal_flags(recorded), normal_flags(declared)
    if reused and theirs is None:
        return (
            "reuse needs the plan's identity.candidate.build_flags: without them the candidate build's "
            "settings are not shown to be the record's"
        )
    if reused and mine is None:
        return "names no build flags (identity.build_flags), so its build is not shown to be this one's"
    if mine is not None and theirs is not None and mine != theirs:
        return (
            f"was built with flags {' '.join(mine)!r}, the plan names {' '.join(theirs)!r} "
            "(identity.candidate.build_flags): another flag set is not the same build"
        )
    return None


def machine_of(manifest: Mapping[str, object]) -> object:
    return get(manifest.get("platform", {}), "machine")


def other_machine(ident: Mapping[str, object], manifest: Mapping[str, object]) -> str | None:
    """The record's machine architecture when both sides name one and they differ."""
    platform = ident.get("platform")
    recorded = (platform or {}).get("machine") if isinstance(platform, dict) else None
    here = machine_of(manifest)
    if recorded and here and recorded != here:
        return str(recorded)
    return None


def other_device(ident: Mapping[str, object], manifest: Mapping[str, object]) -> str | None:
    """The record's device index, driver or GPU models when both sides name them and they
    differ (None when they agree or one side cannot tell)."""
    here = manifest.get("platform") or {}
    for key, what in (("device", "device index"), ("driver", "driver")):
        mine, theirs = ident.get(key), get(here, key)
        if mine is not None and theirs is not None and mine != theirs:
            return f"{what} {mine!r} (this run: {theirs!r})"
    names = [gpu_names(ident.get("gpu")), gpu_names(get(here, "gpu"))]
    if names[0] is not None and names[1] is not None and names[0] != names[1]:
        return f"GPU(s) {names[0]} (this run: {names[1]})"
    return None


def unnamed_device(ident: Mapping[str, object], manifest: Mapping[str, object]) -> str | None:
    """What this run names of its device, driver or GPU models that the record does not
    (a record that does not say what it was made on cannot be shown to be for this one)."""
    here = manifest.get("platform") or {}
    for key, what in (("device", "device index"), ("driver", "driver")):
        if ident.get(key) is None and get(here, key) is not None:
            return f"{what} (this run: {get(here, key)!r})"
    theirs = gpu_names(get(here, "gpu"))
    if theirs and not gpu_names(ident.get("gpu")):
        return f"GPU models (this run: {theirs})"
    return None


def gpu_names(gpu: object) -> list[str] | None:
    if not isinstance(gpu, dict) or not gpu.get("available") or not isinstance(gpu.get("devices"), list):
        return None
    return [str(d.get("name")) for d in gpu["devices"] if isinstance(d, dict)]


def provenance_note(ident: Mapping[str, object], manifest: Mapping[str, object]) -> str | None:
    """Local and CI results are distinct: said when the record and this run differ."""
    from parval.rundir.provenance import label

    mine, theirs = ident.get("provenance"), manifest.get("provenance")
    if not isinstance(mine, dict) or not isinstance(theirs, dict) or mine.get("kind") == theirs.get("kind"):
        return None
    return f"the framework record was made {label(mine)}, this run {label(theirs)}: local and CI results are distinct"


def same_commit(a: str, b: str) -> bool:
    """Full or abbreviated (>= 7 hex digits) commit ids naming the same commit."""
    a, b = a.strip().lower(), b.strip().lower()
    return min(len(a), len(b)) >= 7 and (a.startswith(b) or b.startswith(a))
