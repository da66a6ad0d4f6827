"""Many runs, one verdict (`parval report RUN1 RUN2 ...`), and the catalogue of many runs.

How merging works (documented in docs/running.md, "Many runs, one verdict"):

1. Every run must be evidence of the same thing: the manifests must agree on the
   baseline and candidate executables, the model files (checkpoint and auxiliaries), the
   fixtures, the model id and the backend, and the evidence on the procedure version.
   Files are compared by content hash (their absolute paths may differ between boxes).
   Otherwise the merge is refused naming the field (exit 2): new executables or files
   inherit no evidence. The plan snapshots (`plan.json`) must agree on every field in
   PLAN_FIELDS (what changes outputs or how they are judged), and the manifests on
   provenance: local and CI evidence are never merged together.
2. Per-count results are a union by count. A run contributes a count only if it ran it
   (its campaign's counts: the plan's counts, or its `--shard i/n` share of them). A count
   several runs ran combines assertion by assertion, worst wins: a failure in any run fails
   the count (an intermittent failure stays failed, Q5).
3. Model-level assertions (X1-X3, M1, M4, M6, Q1-Q4) and the framework entries (F1-F6,
   X4) combine worst wins across runs, with one exception: what only part of a sharded
   campaign collects (the once-per-model recovery (M4) and modes (M6) starts, which run
   only in the run that holds the plan's largest count, and M6.offline, which rests on the
   lowest count's waves) is taken from the runs that collected it; another shard's "not
   run" entry for it is not evidence and is left out when some run did collect it.
   Model-level Q5 is judged again over the merged scope: a failure any run saw stays
   failed, otherwise the merged comparison verdicts decide.
4. Count verdicts and admitted counts are recomputed with the same functions the judge
   uses (`parval.gates.admission_verdict`) over the union of the plans' counts: only consecutive
   validated counts from one upward are admitted; a count no run covered stays PENDING.
   Q6 is recomputed. A run that was interrupted makes the merged evidence incomplete.
5. A run that FAILed under stricter rules (a bound, tolerance, drain lag: RULES in
   parval.report.rules_loosened) than the newest run, of the same executables, files,
   fixtures and other plan settings, is not merged but counts against it: NOT ADMITTED,
   "rules loosened after a FAIL", naming each loosened field.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from parval import PROCEDURE_VERSION, __version__
from parval.errors import RunDirError, UsageError
from parval.gates import admission_verdict as adm
from parval.gates.masking import COMPARISON_IDS
from parval.gates.quality import comparison_scope
from parval.jsonread import as_int, get
from parval.jsontypes import JsonObject
from parval.plan.load import shard_counts
from parval.plan.schemas import schema_version
from parval.procedure import judge_shape as shape
from parval.procedure.assertion_ids import group_of
from parval.procedure.sealed_rules import rules_changed_evidence
from parval.procedure.version import historical_evidence
from parval.report.rules_loosened import LOOSENED, RULE_SECTIONS, loosened, marked, memory_leaves_known
from parval.rundir.events import read_events
from parval.rundir.evidence_types import Assertion, Evidence, MergedRun, built_record
from parval.rundir.layout import EVENTS, MANIFEST
from parval.status import Result, Status, combine, pending

# Model-level groups produced by once-per-model units: (group prefix, unit name prefix).
ONCE_PER_MODEL = {"M4": "recovery", "M6": "modes"}


class MergeRefused(UsageError):
    """Runs that are not evidence of the same build/model/fixtures cannot be merged."""


class LoadedRun:
    """One run directory: its evidence, manifest and what its campaign covered."""

    def __init__(self, run_dir: Path, evidence: Evidence) -> None:
        self.dir = run_dir
        self.ev = evidence
        manifest_path = run_dir / MANIFEST
        if not manifest_path.exists():
            raise RunDirError(f"{run_dir}: no {MANIFEST}: not a parval run directory")
        self.manifest: JsonObject = json.loads(manifest_path.read_text("utf-8"))
        self.plan = _plan_snapshot(run_dir / "plan.json")
        events = read_events(run_dir / EVENTS) if (run_dir / EVENTS).exists() else []
        self.units = {str(e.get("unit")) for e in events if e.get("kind") in ("unit_begin", "unit_skipped")}
        start = next((e for e in events if e.get("kind") == "campaign_start"), None)
        plan_counts = sorted(int(n) for n in evidence["model_checks"]["per_count"])
        self.plan_counts = plan_counts
        if start is not None and start.get("counts") is not None:
            self.counts = sorted(int(n) for n in start["counts"])
        else:
            shard = evidence["run"].get("shard")
            self.counts = shard_counts(plan_counts, (int(shard[0]), int(shard[1])) if shard else None)
        # Counts a --fail-fast run left out are not run: another run may supply them.
        self.not_run = adm.not_run_counts(events)
        self.counts = [n for n in self.counts if n not in self.not_run]

    def ran_unit(self, prefix: str) -> bool:
        return any(u == prefix or u.startswith(prefix + "-") for u in self.units)


def _plan_snapshot(path: Path) -> JsonObject | None:
    """The run's plan snapshot; None when absent or unreadable (the merge is then refused)."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# -- identity -----------------------------------------------------------------------------
def _by_content(value: object) -> object:
    """A {path: sha256} mapping compared by file name and content, not by absolute path."""
    if isinstance(value, dict):
        return sorted(f"{Path(k).name}:{v}" for k, v in value.items())
    return value


def merge_identity(manifest: JsonObject, evidence: Mapping[str, object]) -> dict[str, object]:
    from parval.rundir.manifest import identity_fields

    fields = {k: _by_content(v) for k, v in identity_fields(manifest).items()}
    fields["procedure_version"] = evidence.get("procedure_version")
    # Local and CI evidence stay apart (E7): a merge never mixes them.
    fields["provenance"] = get(manifest.get("provenance") or {}, "kind")
    return fields


# Plan-snapshot fields that change what the server outputs or how outputs are judged: runs
# that differ in any of them are not evidence of the same thing, whatever their manifests say.
PLAN_FIELDS: tuple[str, ...] = (
    "model.family",
    "model.task",
    "model.mode",
    "model.quantization",
    "model.lazy",
    "model.load_options",
    "model.session_options",
    "model.default_request_options",
    "model.entry_extra",
    "model.cache_sensitive",
    "model.variation_kinds",
    "model.variation_kinds_justification",
    "model.admit_modes",
    "requests",
    "compare.volatile_fields",
    "compare.tolerance",
    "compare.quality_settings",
    "memory",
    "timeouts.drain_lag_ms",
    "server.backend",
    "server.threads",
    "server.extra_config",
    "servers.baseline.args",
    "servers.candidate.args",
    # The servers' environment changes what they do (GGML_* settings, fault switches).
    "servers.baseline.env",
    "servers.candidate.env",
    "identity",
)
_ABSENT = object()


def _dotted(data: object, path: str) -> object:
    for part in path.split("."):
        if not isinstance(data, dict) or part not in data:
            return _ABSENT
        data = data[part]
    return data


def plan_identity(plan: Mapping[str, object] | None) -> dict[str, object]:
    """The output-affecting plan fields of one run (`plan.json`), by dotted name."""
    if plan is None:
        return {}
    return {f: v for f in PLAN_FIELDS if (v := _dotted(plan, f)) is not _ABSENT}


def check_mergeable(runs: list[LoadedRun], *, across_provenance: bool = False) -> None:
    """MergeRefused naming the first field the runs disagree on. `across_provenance`: local
    and CI runs that agree on everything else are the same tested identity (the catalogue
    counts their failures together, though it never merges them)."""
    first = runs[0]
    want = merge_identity(first.manifest, first.ev)
    if across_provenance:
        del want["provenance"]
    hint = (
        "merge only runs of the same executables, model files, fixtures and plan settings; "
        "new executables or files inherit no evidence"
    )
    for other in runs[1:]:
        got = merge_identity(other.manifest, other.ev)
        for key in want:
            if want[key] != got.get(key):
                raise MergeRefused(
                    f"cannot merge {first.dir} and {other.dir}: they disagree on {key} "
                    f"({_short(want[key])} vs {_short(got.get(key))})",
                    hint=hint,
                )
        for run in (first, other):
            if run.plan is None:
                raise MergeRefused(
                    f"cannot merge {run.dir}: it has no readable plan.json, so its plan "
                    "settings cannot be shown to match the other runs'",
                    hint=hint,
                )
        plan_a, plan_b = plan_identity(first.plan), plan_identity(other.plan)
        for key in PLAN_FIELDS:
            a, b = plan_a.get(key, _ABSENT), plan_b.get(key, _ABSENT)
            if a != b:
                raise MergeRefused(
                    f"cannot merge {first.dir} and {other.dir}: their plans disagree on {key} "
                    f"({_short(None if a is _ABSENT else a)} "
                    f"vs {_short(None if b is _ABSENT else b)})",
                    hint=hint,
                )


def _short(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


# -- rules loosened after a FAIL (parval.report.rules_loosened) ---------------------------
def same_but_rules(a: LoadedRun, b: LoadedRun) -> bool:
    """Runs of the same executables, model files, fixtures and plan settings, whatever their
    provenance, that may differ only in rules."""
    ida, idb = merge_identity(a.manifest, a.ev), merge_identity(b.manifest, b.ev)
    ida.pop("provenance", None)
    idb.pop("provenance", None)
    if ida != idb or a.plan is None or b.plan is None:
        return False
    if not (memory_leaves_known(a.plan) and memory_leaves_known(b.plan)):
        return False
    pa, pb = plan_identity(a.plan), plan_identity(b.plan)
    return all(pa.get(f, _ABSENT) == pb.get(f, _ABSENT) for f in PLAN_FIELDS if f not in RULE_SECTIONS)


def failed_counts(run: LoadedRun) -> list[int]:
    """The counts `run` recorded FAILED (every count it ran when it FAILed elsewhere)."""
    verdict = run.ev.get("verdict") or {}
    counts = sorted(int(n) for n, s in (verdict.get("counts") or {}).items() if s == "FAIL")
    if counts or verdict.get("exit_code") != 1:
        return counts
    return list(run.counts or run.plan_counts)


def against(strict: LoadedRun, later: LoadedRun) -> str | None:
    """Why `strict`'s FAIL counts against `later` (None when it does not): the same tested
    identity, `strict` FAILed, and `later` loosened at least one of its rules."""
    if not failed_counts(strict) or not same_but_rules(strict, later):
        return None
    fields = loosened(strict.plan, later.plan)
    if not fields:
        return None
    return f"{LOOSENED}: {strict.dir} FAILED under stricter rules than {later.dir} ({'; '.join(fields)})"


# -- merging ------------------------------------------------------------------------------
def _results(items: Iterable[Assertion], count: int | None = None) -> list[Result]:
    out = []
    for item in items:
        r = Result.from_json(dict(item))  # (it takes a plain dict; reads only)
        out.append(replace(r, count=count) if count is not None and r.count is None else r)
    return out


def _worst(results: list[Result]) -> Result:
    """One result from several runs' results for the same assertion: the worst status wins."""
    if len(results) == 1:
        return results[0]
    st = combine(r.status for r in results)
    worst = next(r for r in results if r.status is st)
    if all(r.status is st for r in results) and st is Status.PASS:
        worst = Result(
            worst.id,
            st,
            "; ".join(dict.fromkeys(r.reason for r in results)),
            worst.evidence,
            worst.reproduction,
            sorted({x for r in results for x in r.limitations}),
            count=worst.count,
        )
    return worst


def _combine_by_id(
    per_run: list[tuple[LoadedRun, list[Result]]], *, once: bool, by_count: bool = False
) -> list[Result]:
    """Worst wins per assertion ID (per ID and count with `by_count`: framework entries
    scoped to one count, such as a count the record does not cover, stay scoped)."""
    order: list[tuple[str, int | None]] = []
    by_id: dict[tuple[str, int | None], list[tuple[LoadedRun, Result]]] = {}
    for run, results in per_run:
        for r in results:
            key = (r.id, r.count if by_count else None)
            if key not in by_id:
                order.append(key)
            by_id.setdefault(key, []).append((run, r))
    lowest = min((n for run, _ in per_run for n in run.plan_counts), default=None)
    out = []
    for key in order:
        id_ = key[0]
        pairs = by_id[key]
        ran = _responsible(id_, lowest) if once else None
        if ran is not None and any(ran(run) for run, _ in pairs):
            pairs = [(run, r) for run, r in pairs if ran(run) or r.status is not Status.PENDING]
        out.append(_worst([r for _, r in pairs]))
    return out


def _responsible(id_: str, lowest: int | None) -> Callable[[LoadedRun], bool] | None:
    """Which runs can collect a model-level assertion that only part of a sharded campaign
    collects: M6.offline rests on the lowest count's waves, the rest of M4 and M6 on the
    once-per-model recovery and modes starts. Another shard's PENDING for it is not evidence."""
    if id_ == "M6.offline" and lowest is not None:
        return lambda run: lowest in run.counts
    unit = ONCE_PER_MODEL.get(group_of(id_))
    if unit is None:
        return None
    return lambda run: run.ran_unit(unit)


def _merged_q5(runs: list[LoadedRun], model_level: list[Result]) -> Result | None:
    """Model-level Q5 over the merged scope (None when no run judged Q5). Each shard judged
    Q5 over its own part of the scope: a failure any of them saw (a mismatch, or a failure
    in an attempt it set aside) stays failed; otherwise the merged comparison verdicts
    decide, as the judge does."""
    shard_q5 = [r for run in runs for r in _results(run.ev["model_checks"]["model_level"]) if r.id == "Q5"]
    if not shard_q5:
        return None
    failures = [r for r in shard_q5 if r.status is Status.FAIL]
    if failures:
        return failures[0]
    scoped = [r for r in model_level if r.count is None and r.id in COMPARISON_IDS]
    mismatches, judged, open_, compared = comparison_scope(scoped)
    if mismatches:
        return shape.failed(
            "Q5",
            f"{len(mismatches)} mismatch(es) recorded; a mismatch stays failed however many repeats pass",
            violation=mismatches[:20],
            failure_kind="output",
            mismatches=mismatches[:50],
        )
    if open_:
        return shape.pending(
            "Q5",
            "no mismatch recorded, but not every comparison of the merged scope was completed: "
            + ", ".join(f"{x.id} {x.status}" for x in open_[:6]),
        )
    return shape.passed(
        "Q5",
        "no intermittent mismatch in any repeat (merged runs)",
        {"comparison verdicts": judged, "compared outputs": compared or len(judged)},
    )


def merge_evidence(runs: list[LoadedRun]) -> Evidence:
    """The merged evidence record (same shape as judge.py's, plus `merged_from`)."""
    from parval.gates.performance import build_performance

    # A FAIL under stricter rules than the newest run's counts against it (rules_loosened):
    # that run is not merged, and the merged verdict is NOT ADMITTED naming the rule.
    newest = max(runs, key=lambda r: str(r.ev.get("generated_at") or ""))
    counted = [(r, why) for r in runs if r is not newest and (why := against(r, newest)) is not None]
    runs = [r for r in runs if all(r is not c for c, _ in counted)]
    check_mergeable(runs)
    counts = sorted({n for r in runs for n in r.plan_counts})
    model_level = _combine_by_id(
        [(r, [x for x in _results(r.ev["model_checks"]["model_level"]) if x.id not in ("Q5", "Q6")]) for r in runs],
        once=True,
    )
    if (q5 := _merged_q5(runs, model_level)) is not None:
        model_level.append(q5)
    fw = _combine_by_id([(r, _results(r.ev["framework_checks"]["results"])) for r in runs], once=False, by_count=True)
    per_count: dict[int, list[Result]] = {}
    sources: dict[int, list[str]] = {}
    for n in counts:
        covering = [r for r in runs if n in r.counts]
        sources[n] = [str(r.dir) for r in covering]
        if not covering:
            why = next((r.not_run[n] for r in runs if n in r.not_run), None)
            per_count[n] = [_count_pending(id_, n, why) for id_ in _per_count_ids(runs)]
            continue
        per_count[n] = _combine_by_id([(r, _results(_count_assertions(r.ev, n), n)) for r in covering], once=False)
    interrupted = any(r.ev["run"].get("interrupted") for r in runs)
    d = adm.decide(
        counts,
        model_level,
        per_count,
        fw,
        interrupted=interrupted,
        missing="not collected by any merged run",
        cannot_start=_cannot_start(runs),
        mode=str(runs[0].ev["identity"].get("mode") or "") or None,
    )
    admission_ready, flat, assertions = d.admission_ready, d.flat, d.assertions
    line = f"{d.line} (merged from {len(runs)} runs)"
    model_status = combine(r.status for r in flat)
    fw_info = {k: v for k, v in runs[0].ev["framework_checks"].items() if k != "results"}
    fw_status = str(combine(r.status for r in fw))
    fw_info["status"] = fw_status
    first = runs[0].ev
    series, rejections = _performance_inputs(runs)
    perf = build_performance(
        series,
        rejections,
        model_label=f"{first['identity']['backend']}/{first['identity']['model']}",
        model_checks=str(model_status),
        framework_checks=fw_status,
        memory_verdict=str(combine(r.status for r in flat if r.id.startswith("M5."))),
        count_verdicts={n: str(v) for n, v in d.verdicts.items()},
        admitted_counts=d.admitted,
    )
    merged_from: list[MergedRun] = [
        {
            "dir": str(r.dir),
            "shard": r.ev["run"].get("shard"),
            "counts": r.counts,
            "plan": r.ev["run"].get("plan"),
            "plan_sha256": r.ev["run"].get("plan_sha256"),
            "events_sha256": r.ev["run"].get("events_sha256"),
            "manifest_sha256": r.ev["run"].get("manifest_sha256"),
            "generated_at": r.ev.get("generated_at"),
            "interrupted": bool(r.ev["run"].get("interrupted")),
            "verdict": r.ev["verdict"]["line"],
            "provenance": r.manifest.get("provenance"),
        }
        for r in runs
    ]
    # The verdict and check blocks come from parval.gates.admission_verdict as plain mappings.
    record = {
        "schema_version": schema_version("evidence"),
        "procedure_version": first.get("procedure_version", PROCEDURE_VERSION),
        "parval_version": __version__,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "run": {
            "dir": None,
            "merged": True,
            "plan": first["run"].get("plan"),
            "plan_sha256": first["run"].get("plan_sha256"),
            "interrupted": interrupted,
            "shard": None,
            "count_sources": {str(n): s for n, s in sources.items()},
            "provenance": runs[0].manifest.get("provenance"),
        },
        "merged_from": merged_from,
        "identity": dict(first["identity"]),
        "verdict": d.verdict_json(line),
        "assertions": [a.to_json() for a in assertions],
        "model_checks": {
            **adm.model_checks_block(flat, model_level, per_count, sources),
            "variation_effects": [x for r in runs for x in _as_list(r.ev["model_checks"].get("variation_effects"))],
            "negative_control": [r.ev["model_checks"].get("negative_control") for r in runs],
        },
        "framework_checks": {**fw_info, "results": adm.as_json(fw)},
        "admission_ready": admission_ready,
        "all_plan_rules": admission_ready,
        "performance": perf,
        "failures": [{**f, "run_dir": str(r.dir)} for r in runs for f in r.ev.get("failures", [])],
    }
    # Admission is recomputed above: runs of another procedure version stay historical, and
    # a merge with a run judged under rules changed after its events never admits.
    changed = [f"{r.dir}: {why}" for r in runs for why in _rules_changed(r.ev)]
    held = [(why, failed_counts(r)) for r, why in counted]
    return marked(rules_changed_evidence(historical_evidence(built_record(record)), changed), held)


def _cannot_start(runs: list[LoadedRun]) -> list[Mapping[str, object]]:
    """Every merged run's executables that could not start, once per executable and cause:
    the merged verdict line leads with them as each run's own does."""
    seen: dict[tuple[str, ...], Mapping[str, object]] = {}
    for r in runs:
        for e in r.ev["verdict"].get("cannot_start") or []:
            key = tuple(str(e.get(k)) for k in ("role", "executable", "exit_code", "cause"))
            seen.setdefault(key, {**e, "run": f"{r.dir}: {e.get('run')}"})
    return list(seen.values())


def _rules_changed(ev: Evidence) -> list[str]:
    marked = ev.get("rules_changed") or {}
    reasons = marked.get("reasons")
    return [str(r) for r in reasons] if isinstance(reasons, list) else []


def _count_assertions(ev: Evidence, n: int) -> list[Assertion]:
    """Count `n`'s entries in one run's evidence (none when it has no such count)."""
    per_count = ev["model_checks"]["per_count"]
    return per_count[str(n)].get("assertions", []) if str(n) in per_count else []


def _as_list(value: object) -> list[object]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _per_count_ids(runs: list[LoadedRun]) -> list[str]:
    ids: list[str] = []
    for r in runs:
        for c in r.ev["model_checks"]["per_count"].values():
            for a in c.get("assertions", []):
                if a["id"] not in ids:
                    ids.append(a["id"])
    return ids


def _count_pending(id_: str, n: int, why: str | None = None) -> Result:
    return replace(
        pending(id_, f"count {n} was not run by any of the merged runs" + (f"; {why}" if why else "")), count=n
    )


def _performance_inputs(runs: list[LoadedRun]) -> tuple[list[JsonObject], list[dict[str, object]]]:
    """Performance series: each (series, count) from a run that ran that count (else the first)."""
    chosen: dict[tuple[str, int], JsonObject] = {}
    for r in runs:
        for s in r.ev.get("performance", {}).get("samples", []):
            key = (str(s.get("series")), as_int(s.get("count") or 0))
            better = key not in chosen or (key[1] in r.counts and not chosen[key]["_covers"])
            if better:
                chosen[key] = {**s, "_covers": key[1] in r.counts}
    series = [{k: v for k, v in s.items() if k not in ("_covers", "sample_count")} for s in chosen.values()]
    rejections: list[dict[str, object]] = []
    seen: set[int] = set()
    for r in runs:
        for p in r.ev.get("performance", {}).get("rejection_latency", []):
            n = int(p.get("count") or 0)
            if n not in seen:
                seen.add(n)
                # the figures as that run judged them (503 replies only where it knew)
                rejections.append({"count": n, "latencies_ms": p.get("latencies_ms", [])})
    return series, rejections
