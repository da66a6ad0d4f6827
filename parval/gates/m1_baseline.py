"""M1, the one-slot baseline: the manifest identifies what was compared, serial repeats of
the baseline agree, the candidate at one slot matches upstream, and cold and warm
references are kept apart. Serial variation also decides how comparisons are masked."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from parval.gates.context import REF_PHASES, Context, SerialVerdict, exact_result
from parval.gates.exactness import tolerance_check
from parval.gates.records import Records
from parval.status import Result, Status, passed, pending


def _outputs(rec: Records, run: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["req"], e["phase"]): e for e in rec.requests(run, REF_PHASES)}


def serial_variation(
    rec: Records, *, run_dir: Path | None = None, tolerance: int | None = None, volatile: list[str] | None = None
) -> SerialVerdict:
    """Do serial repeats of the baseline agree? With a tolerance declared in the plan (the
    procedure's model-specific quality criterion), repeats whose only difference is PCM
    samples within it agree; anything else that differs is serial variation."""
    a, b = _outputs(rec, "ref-baseline-a"), _outputs(rec, "ref-baseline-b")
    if not a or not b:
        return (Status.PENDING, "two fresh baseline starts are needed to measure serial repeat variation", {})
    diffs: list[dict[str, Any]] = []
    tolerated: list[dict[str, Any]] = []

    def differ(x: dict[str, Any], y: dict[str, Any], where: dict[str, Any], labels: tuple[str, str]) -> None:
        cx, cy = (x.get("output") or {}).get("canon"), (y.get("output") or {}).get("canon")
        if cx == cy:
            return
        if tolerance is not None:
            found = tolerance_check(run_dir, x, y, volatile or [], tolerance)
            if found.pop("covered"):
                tolerated.append({**where, **found})
                return
            where = {**where, "tolerance_check": found.get("why", "")}
        diffs.append({**where, labels[0]: cx, labels[1]: cy})

    for (req, phase), e in a.items():
        ca = (e.get("output") or {}).get("canon")
        other = b.get((req, phase))
        cb = (other.get("output") or {}).get("canon") if other else None
        if not ca or not cb or other is None:
            return Status.PENDING, f"{req}/{phase}: no valid output in one of the starts", {}
        differ(e, other, {"req": req, "phase": phase}, ("start_a", "start_b"))
    for run, outs in (("ref-baseline-a", a), ("ref-baseline-b", b)):
        for (req, phase), e in outs.items():
            if phase == "ref_warm2":
                w = outs.get((req, "ref_warm"))
                if w:
                    differ(w, e, {"req": req, "run": run}, ("warm", "warm2"))
    ev: dict[str, Any] = {"outputs_compared": len(a), "differences": diffs}
    if tolerance is not None:
        ev.update(within_declared_tolerance=tolerated, tolerance=tolerance)
    if diffs:
        beyond = f" beyond the declared tolerance {tolerance}" if tolerance is not None else ""
        return (
            Status.PENDING,
            (
                f"parity unverified: serial output varies ({len(diffs)} "
                "difference(s) between repeats on one slot or across two fresh "
                f"starts{beyond})"
            ),
            ev,
        )
    if tolerated:
        return (
            Status.PASS,
            (
                f"{len(a)} outputs agree across two fresh starts and warm repeats "
                f"({len(tolerated)} repeat(s) within the declared tolerance "
                f"{tolerance})"
            ),
            ev,
        )
    return Status.PASS, f"{len(a)} outputs identical across two fresh starts and warm repeats", ev


# What the procedure's manifest must record: (path in the manifest, what it is).
MANIFEST_ITEMS = (
    ("model.sha256", "checkpoint hash"),
    ("model.task", "task"),
    ("model.mode", "mode"),
    ("settings", "settings"),
    ("fixtures", "fixture hashes"),
    ("requests", "request bodies and seeds"),
    ("executables.baseline.sha256", "baseline executable hash"),
    ("executables.candidate.sha256", "candidate executable hash"),
    ("platform.os", "OS"),
    ("platform.device", "device"),
    ("platform.driver", "driver"),
    ("platform.backend", "backend"),
    ("platform.threads", "threads"),
    ("plan.sha256", "plan hash"),
)


def manifest_gaps(ctx: Context) -> list[str]:
    """Each item the procedure's manifest needs (M1.manifest) that this run's manifest lacks.
    What parval cannot discover comes from the plan's `identity` block."""
    man = ctx.manifest

    def at(path: str) -> Any:
        node: Any = man
        for part in path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return node

    gaps = [f"{path} ({what})" for path, what in MANIFEST_ITEMS if at(path) is None or at(path) == ""]
    declared = (ctx.plan.get("model") or {}).get("auxiliary_files") or []
    hashed = at("model.auxiliary") or {}
    if len(hashed) < len(declared):
        gaps.append(f"model.auxiliary ({len(hashed)} of {len(declared)} auxiliary files hashed)")
    if not (at("identity.quantization") or at("model.quantization")):
        gaps.append("identity.quantization (declare it in the plan: identity.quantization)")
    for role in ("baseline", "candidate"):
        for key, what in (("source_commit", "source commit"), ("build_flags", "build flags")):
            if at(f"identity.{role}.{key}") is None:
                gaps.append(f"identity.{role}.{key} ({role} {what}; declare it in the plan)")
    if not ctx.rec.refs:
        gaps.append("references (no baseline reference output recorded)")
    return gaps


def m1_manifest(ctx: Context, serial: SerialVerdict) -> Result:
    """M1.manifest: the run's manifest identifies everything the comparison rests on."""
    man = ctx.manifest
    missing = manifest_gaps(ctx)
    platform = {k: v for k, v in (man.get("platform") or {}).items() if k != "gpu"}
    ev: dict[str, Any] = {
        "missing": missing,
        "identity": man.get("identity") or {},
        "fixtures": len(man.get("fixtures") or {}),
        "references": len(ctx.rec.refs),
        "platform": platform,
    }
    if missing:
        return pending("M1.manifest", f"the manifest does not identify: {'; '.join(missing)}", **ev)
    return passed(
        "M1.manifest",
        "manifest hashes checkpoint, auxiliaries, fixtures, executables "
        "and plan; records quantization, task/mode/settings, seeds, references, source "
        "commits, build flags, OS, device, driver, backend and threads",
        **ev,
    )


def m1_serial_repeat(ctx: Context, serial: SerialVerdict) -> Result:
    """M1.serial_repeat: the verdict of `serial_variation`, judged once per run."""
    return Result("M1.serial_repeat", serial[0], serial[1], serial[2])


def _parity(id_: str, run: str, ctx: Context) -> Result:
    events = ctx.rec.requests(run, REF_PHASES)
    if not events:
        return pending(id_, f"{run} did not complete")
    return exact_result(id_, ctx.judge(events), f"{run} vs upstream legacy (cold, warm, repeated warm)", ctx, run)


def m1_legacy_parity(ctx: Context, serial: SerialVerdict) -> Result:
    """M1.legacy_parity: the unflagged candidate matches upstream legacy."""
    return _parity("M1.legacy_parity", "ref-candidate-legacy", ctx)


def m1_cap1_parity(ctx: Context, serial: SerialVerdict) -> Result:
    """M1.cap1_parity: the flagged candidate at capacity one matches upstream legacy."""
    return _parity("M1.cap1_parity", "ref-candidate-cap1", ctx)


def m1_cold_warm_refs(ctx: Context, serial: SerialVerdict) -> Result:
    """M1.cold_warm_refs: cold and warm/history references recorded and kept apart."""
    refs = ctx.rec.refs
    colds = {k for k in refs if k.endswith("|cold") or (k.startswith("hist:") and ">" not in k)}
    warms = set(refs) - colds
    if not colds or not warms:
        return pending("M1.cold_warm_refs", "cold and warm references were not both recorded")

    def canon(key: str) -> Any:
        return (refs.get(key, {}).get("output") or {}).get("canon")

    same = [k.split("|")[0] for k in colds if k.endswith("|cold") and canon(k) == canon(k.replace("|cold", "|warm"))]
    return passed(
        "M1.cold_warm_refs",
        f"{len(colds)} cold and {len(warms)} warm/history references kept apart; "
        "cold outputs are compared with cold references only",
        cold_equals_warm_for=sorted(same),
    )


JUDGES: dict[str, Callable[[Context, SerialVerdict], Result]] = {
    "M1.manifest": m1_manifest,
    "M1.serial_repeat": m1_serial_repeat,
    "M1.legacy_parity": m1_legacy_parity,
    "M1.cap1_parity": m1_cap1_parity,
    "M1.cold_warm_refs": m1_cold_warm_refs,
}


def judge_m1(ctx: Context, serial: SerialVerdict) -> list[Result]:
    """M1, given the run's serial-variation verdict (see `serial_variation`)."""
    return [judge(ctx, serial) for judge in JUDGES.values()]
