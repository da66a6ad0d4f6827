"""Serial repeat variation of the upstream baseline (M1.serial_repeat), measured before any
comparison: the same requests cold, warm and repeated warm on one slot, in two fresh
starts. It decides how far comparisons can be trusted (masking) and whether a declared
tolerance applies at all: a tolerance is a model-specific criterion only where serial
repeats were measured to vary; byte-identical repeats mean deterministic output, which
must then be byte-identical everywhere."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from parval.gates.exactness import tolerance_check
from parval.rundir.event_index import REF_PHASES, Records
from parval.rundir.event_types import RequestEvent
from parval.status import Status


@dataclass(frozen=True)
class SerialVerdict:
    """What serial repeats of the baseline showed (M1.serial_repeat's verdict)."""

    status: Status
    reason: str
    measured: bool  # were serial repeats measured at all
    varies: bool  # did they differ (beyond or within the declared tolerance)
    tolerance_applies: bool  # they varied, and only within the declared tolerance
    outputs_compared: int | None = None  # None when not measured
    facts: dict[str, object] = field(default_factory=dict)  # how they differed, or why not measured

    @property
    def evidence(self) -> dict[str, object]:
        """M1.serial_repeat's evidence: the findings and the facts they rest on."""
        found: dict[str, object] = {
            "measured": self.measured,
            "varies": self.varies,
            "tolerance_applies": self.tolerance_applies,
        }
        if self.outputs_compared is not None:
            found["outputs_compared"] = self.outputs_compared
        return {**found, **self.facts}


BASELINES = ("ref-baseline-a", "ref-baseline-b")


def _outputs(rec: Records, run: str) -> dict[tuple[str, str], RequestEvent]:
    return {(e["req"], e["phase"]): e for e in rec.requests(run, REF_PHASES)}


def _unmeasured(status: Status, reason: str, **evidence: object) -> SerialVerdict:
    return SerialVerdict(status, reason, measured=False, varies=False, tolerance_applies=False, facts=evidence)


def serial_variation(
    rec: Records,
    *,
    run_dir: Path | None = None,
    tolerance: int | None = None,
    volatile: list[str] | None = None,
    requests: list[str] | None = None,
) -> SerialVerdict:
    """Do serial repeats of the baseline agree? With a tolerance declared in the plan (the
    procedure's model-specific quality criterion), repeats whose only difference is PCM
    samples within it agree, and then (only then) the tolerance applies to comparisons;
    anything else that differs is serial variation. `requests`: the plan's request names,
    each of which both starts must have served cold, warm and repeated warm."""
    for run in BASELINES:
        if run in rec.runs and not rec.complete(run):
            what = rec.outcome(run)
            status = Status.BLOCKED if rec.crash_of(run) or rec.stop_of(run) else Status.PENDING
            return _unmeasured(
                status,
                f"upstream reference start {run} did not complete ({what}): serial repeat variation not measured",
                incomplete={run: what},
            )
    a, b = _outputs(rec, BASELINES[0]), _outputs(rec, BASELINES[1])
    if not a or not b:
        return _unmeasured(Status.PENDING, "two fresh baseline starts are needed to measure serial repeat variation")
    wanted = {(req, phase) for req in requests or sorted({k[0] for k in (*a, *b)}) for phase in REF_PHASES}
    for run, outs in ((BASELINES[0], a), (BASELINES[1], b)):
        lacking = sorted(wanted - set(outs))
        if lacking:
            return _unmeasured(
                Status.PENDING,
                f"{run} recorded no {', '.join(f'{r}/{p}' for r, p in lacking[:6])}: serial repeat variation not "
                "measured for every request",
            )
    diffs: list[dict[str, object]] = []
    tolerated: list[dict[str, object]] = []

    def differ(x: RequestEvent, y: RequestEvent, where: dict[str, object], labels: tuple[str, str]) -> None:
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

    for (req, phase), e in sorted(a.items()):
        ca = (e.get("output") or {}).get("canon")
        other = b.get((req, phase))
        cb = (other.get("output") or {}).get("canon") if other else None
        if not ca or not cb or other is None:
            return _unmeasured(Status.PENDING, f"{req}/{phase}: no valid output in one of the starts")
        differ(e, other, {"req": req, "phase": phase}, ("start_a", "start_b"))
    for run, outs in ((BASELINES[0], a), (BASELINES[1], b)):
        for (req, phase), e in sorted(outs.items()):
            if phase == "ref_warm2":
                w = outs.get((req, "ref_warm"))
                if w:
                    differ(w, e, {"req": req, "run": run}, ("warm", "warm2"))
    facts: dict[str, object] = {"differences": diffs}
    if tolerance is not None:
        facts.update(within_declared_tolerance=tolerated, tolerance=tolerance)

    def measured(status: Status, reason: str) -> SerialVerdict:
        varies, applies = bool(diffs or tolerated), bool(tolerated) and not diffs
        return SerialVerdict(status, reason, True, varies, applies, outputs_compared=len(a), facts=facts)

    if diffs:
        beyond = f" beyond the declared tolerance {tolerance}" if tolerance is not None else ""
        return measured(
            Status.PENDING,
            f"parity unverified: serial output varies ({len(diffs)} "
            "difference(s) between repeats on one slot or across two fresh "
            f"starts{beyond})",
        )
    if tolerated:
        return measured(
            Status.PASS,
            f"{len(a)} outputs agree across two fresh starts and warm repeats within the declared tolerance "
            f"({len(tolerated)} repeat(s) differ by at most {tolerance} LSB, never exact): the tolerance applies",
        )
    note = (
        f"; the declared tolerance ({tolerance}) is not applied: deterministic output must be byte-identical"
        if tolerance is not None
        else ""
    )
    return measured(Status.PASS, f"{len(a)} outputs identical across two fresh starts and warm repeats{note}")
