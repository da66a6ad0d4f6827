"""One registry entry (`Entry`), the scopes an assertion is judged in, the evidence kinds
the entries name, and the forms they are declared in: a model judge declares its entry
where it is registered (`Declaration`, given to parval.procedure.judge_shape.judge), a framework
group lists its entries beside its judges (`framework_entry`). parval/registry.py, above
every judge, assembles them; this module imports none of them."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

from parval.procedure.assertion_ids import EXECUTION_PATH, FRAMEWORK_GATE, MODEL_GATE, QUALITY_RULES, group_of

CATALOGUE: dict[str, str] = {**EXECUTION_PATH, **MODEL_GATE, **FRAMEWORK_GATE, **QUALITY_RULES}

# How each assertion is reproduced.
RUN = "parval run PLAN, then parval report RUN --rejudge (judges the recorded events again)"
FRAMEWORK = (
    "parval framework PLAN --only {id}, then parval report FRAMEWORK_RUN --rejudge "
    "(judges the recorded observations again)"
)
X4_CMD = (
    "parval verify-protected --repo CANDIDATE_CHECKOUT --upstream SHA --output x4.json; "
    "name x4.json in the plan's framework.protected, then parval report RUN --rejudge"
)

# What each scope means: where the assertion is judged and how often.
SCOPES = {
    "run": "once per model run, on the run's reference and probe starts (whatever the counts)",
    "model": "once per model / backend / task / mode, on the run's own recovery or modes start",
    "count": "once per advertised count (each count has its own status)",
    "record": "once per candidate build, in the shared framework record",
    "commit": "once per candidate commit (verify-protected result)",
    "rule": "once per model run, as a quality rule of the comparison itself (Q5 also once per count)",
}

# Evidence kinds: events in events.jsonl and files in the run directory.
STARTS = (
    "`run_start` / `run_end` events of every fresh start (role, count, attempt); "
    "`server_crash` (exit status, log tail) and `start_failed` / `start_aborted` / "
    "`start_timeout` / `wave_timeout`"
)
READY = (
    "`server_ready` events (argv, warning_marker) and the `status_fields` of `run_end` "
    "(the slot fields /v1/models showed)"
)
WAVES = "`wave` events of every start (phase, wave, n, mode: concurrent or serial, batch_s)"
WAVE_STATUS = (
    "the status poller's summary in each `wave` event (`status`: max_active_loaded, "
    "max_active, polls, poll_errors, poll_hz, fields_present); the samples behind it "
    "in servers/<run>-<attempt>/status.jsonl"
)
DRAINED = "the drain check in each `wave` event (`drained`: ok, active, queued, fields_present)"
REQUESTS = (
    "`request` events (run, phase, wave, req, ref, t_send / t_done, reply outcome, "
    "output canon) with the raw reply in artifacts/<sha256>.json"
)
REFS = (
    "the reference table: valid `request` events of ref-baseline-a (upstream legacy, "
    "cold / warm / warm2) and of the history-* single-slot replays, with their artifacts"
)
BASELINE_B = "`request` events of ref-baseline-b (the second fresh upstream start)"
NEGATIVE = (
    "`negative_control` event: a planted mismatch the comparator must catch (else no output comparison can PASS: "
    "it is BLOCKED, while a recorded mismatch still FAILs)"
)
SET_ASIDE = (
    "`request` and `server_crash` events of set-aside attempts (abandoned or "
    "superseded): never proof of a PASS, but their failures count"
)
PLAN = "plan.json (the run's plan snapshot)"
MANIFEST = (
    "manifest.json (hashes of checkpoint, auxiliaries, fixtures, executables and plan; "
    "platform; the plan's identity block)"
)
MEMORY = (
    "servers/<run>-<attempt>/memory.jsonl (host RSS/PSS and GPU device/process samples, "
    "each tagged with its phase) and the `memory` block of `run_end` (intervals, GPU "
    "info, guard stop)"
)
OBS = (
    "`observation` events of the framework record (sub-check name, judge key, facts: "
    "timelines, replies, status samples, bounded waits) and the `check` each judge derives"
)
CTEST = (
    "`ctest_run` events of the framework record (label default / asan / tsan / stress, "
    "status, test cases from JUnit or stdout, meta: sanitizer, seed, repeat)"
)
PROTECTED = (
    "the verify-protected JSON the plan's framework.protected names "
    "(schemas/protected.schema.json: status, upstream, candidate_commit, changed, "
    "legacy_runtime), checked against identity.candidate.source_commit"
)


# What the model entries share: the compared count-wave requests and notes.
COMPARED = "compared with the reference table (" + REFS.split(": ", 1)[1] + ")"
MASKED = (
    "an output comparison: without a caught negative control its PASS is BLOCKED (a "
    "recorded mismatch already shows the comparator able to fail: its FAIL stands), and "
    "while M1.serial_repeat is not PASS it is PENDING (parity unverified); lifecycle and "
    "request-error FAILs stand"
)
NO_UI = "PENDING without server.ui_management (registration needs a native-model-manager build)"
COUNT_REQUESTS = (
    "`request` events of the count<N>-s<k> starts (phases cold_wave, warm_wave, "
    "mixed_wave, reload_wave, serial_reuse), " + COMPARED
)


@dataclass(frozen=True)
class Entry:
    id: str
    scope: str
    judge: str  # "module:function" (framework: the sub-check judges are listed in `parts`)
    evidence: tuple[str, ...]
    faults: tuple[str, ...] = ()
    parts: tuple[str, ...] = ()  # framework: the observation judges whose sub-checks it combines
    reproduce: str = RUN
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def group(self) -> str:
        return group_of(self.id)

    @property
    def asks(self) -> str:
        return CATALOGUE[self.id]

    def judge_function(self) -> Callable[..., object]:
        module, _, name = self.judge.partition(":")
        fn: object = getattr(importlib.import_module(module), name)
        if not callable(fn):
            raise TypeError(f"{self.judge} is not callable")
        return fn


@dataclass(frozen=True)
class Declaration:
    """A model entry as its judge declares it: all but the ID and the judge, which the
    judge's registration (`@shape.judge(ID, declaration)`) supplies."""

    scope: str
    evidence: tuple[str, ...]
    faults: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    reproduce: str = RUN

    def entry(self, id_: str, judge: str) -> Entry:
        return Entry(id_, self.scope, judge, self.evidence, self.faults, reproduce=self.reproduce, notes=self.notes)


@dataclass(frozen=True)
class Gate:
    """The declarations of one gate module's judges, judged in one scope."""

    scope: str

    def __call__(
        self, evidence: tuple[str, ...], faults: tuple[str, ...] = (), notes: tuple[str, ...] = ()
    ) -> Declaration:
        return Declaration(self.scope, evidence, faults, notes)

    def noted(self, evidence: tuple[str, ...], *notes: str) -> Declaration:
        """A declaration with notes but no stand-in faults."""
        return self(evidence, notes=notes)


# What the framework entries share: F1-F5 are combined by COMBINE from sub-checks, each one
# a registered observation judge's verdict (`parts`: the judge keys the probes in
# parval/framework/probes_*.py feed into it, and CTEST_PART where the server's own CTests
# must show half of it).
COMBINE = "parval.framework.judges:assertion_result"
CTEST_PART = "f3.ctest_evidence"

SUBCHECKS = (
    "a sub-check is PENDING when its situation could not be set up here (403 without "
    "server.ui_management, a service time too short to force the order) or its evidence is "
    "missing, BLOCKED when another defect got in the way or the situation was not forced "
    "after its attempts; FAIL only for a violation in the observation; no sub-check at all is PENDING"
)
DEFAULT_CTEST = (
    "the `ctest_run` event of the default CTest run (status, and the exact test names "
    "parval/framework/ctest_coverage.json lists for the sub-check)"
)
HALF_CTEST = (
    "its f3.ctest_evidence sub-check stays PENDING, naming the tests, until the "
    "default CTest run shows them: HTTP evidence alone never passes it"
)


def framework_entry(id_: str, *parts: str, faults: tuple[str, ...] = (), notes: tuple[str, ...] = ()) -> Entry:
    """The entry of a framework assertion combined from the sub-checks of `parts`."""
    evidence = (OBS,) + ((DEFAULT_CTEST,) if CTEST_PART in parts else ())
    extra = (HALF_CTEST,) if CTEST_PART in parts else ()
    return Entry(
        id_, "record", COMBINE, evidence, faults, tuple(parts), FRAMEWORK.format(id=id_), (*notes, *extra, SUBCHECKS)
    )
