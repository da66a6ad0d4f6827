"""Behaviour-contract cells (parallel_server_behavior_contract.md, version 2026-10-04) and
which of them each F assertion's black-box probes cover.

Every cell keeps the contract's own coverage label (D directly exercised, P partial, U no
behavioural test) and its test links. Each F assertion lists the cells its probes reach,
with parval's own label for that evidence: D when an HTTP probe forces the cell with the
ordering observed, P when it reaches only part of the stated combination, U when parval
cannot reach it over HTTP (CTest only). Any P/U cell, and every area the contract labels
"Partially tested", becomes a limitation: the assertion may pass, its group is never a
blanket pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CONTRACT_VERSION = "2026-10-04"
CONTRACT_DOC = "docs/maintainers/parallel_server_behavior_contract.md"

# "Validation by area and known limits": every area is labelled partially tested.
AREAS: dict[str, str] = {
    "concurrent_inference": "Partially tested",
    "cold_loading": "Partially tested",
    "reconfiguration": "Partially tested",
    "unloading_eviction": "Partially tested",
    "disconnects": "Partially tested",
    "shutdown": "Partially tested",
}


@dataclass(frozen=True)
class Cell:
    id: str
    table: str
    where: str
    label: str  # the contract's D/P/U
    tests: tuple[str, ...]
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "table": self.table, "where": self.where, "label": self.label,
                "tests": list(self.tests), "text": self.text}


def _c(id_: str, table: str, where: str, label: str, tests: str, text: str) -> Cell:
    return Cell(id_, table, where, label, tuple(t for t in tests.split() if t), text)


OPS = "operations x model states"
TWO = "two-model situations"
ORDER = "arrival order and operation interactions"
FAIL = "failure boundaries and recovery"
TDS = "timeout, disconnect and shutdown"
SCOPE = "scope"

CELLS: dict[str, Cell] = {c.id: c for c in (
    _c("scope.legacy_slots", SCOPE, "no flag", "D", "T0",
       "No flag selects ServerState; any explicit slots, including 1/null, is rejected."),
    _c("scope.flag_cap1", SCOPE, "flag", "D", "T0",
       "The flag selects ParallelServerState once at startup, including capacity one."),
    _c("scope.counts", SCOPE, "counts", "D", "T0",
       "Counts are integers 1..16, further limited by the session's advertised capacity."),
    _c("ops.unloaded.inference", OPS, "Unloaded x Inference", "D", "T1",
       "Admit; initialize then execute; 200 result, ready."),
    _c("ops.loading.inference", OPS, "Loading x Inference", "P", "T1",
       "Spare slots admit and wait on initialization; full pool queues; 200 after complete publication."),
    _c("ops.loading.unload", OPS, "Loading x Unload M", "D", "T5",
       "Barrier waits for first load and earlier work; 200 unloaded."),
    _c("ops.loading.bulk", OPS, "Loading x Bulk unload", "D", "T5",
       "Publish barrier even before pool exists; free ready B first, then M; 200 unloaded."),
    _c("ops.loading.status", OPS, "Loading x Status", "P", "T4",
       "200 observation, pool not partially exposed."),
    _c("ops.ready.inference", OPS, "Ready x Inference", "D", "T1",
       "Admit into spare capacity or queue; 200 result; ready."),
    _c("ops.ready.reconfigure", OPS, "Ready x Register/reconfigure", "D", "T2 T9",
       "Earlier work drains, private validation precedes teardown; 200 loaded; ready."),
    _c("ops.ready.unload", OPS, "Ready x Unload M", "D", "T2",
       "Earlier work drains; 200 loaded=false; unloaded."),
    _c("ops.ready.bulk", OPS, "Ready x Bulk unload", "D", "T5",
       "Per-model barriers; ready-idle M freed first; 200 unloaded."),
    _c("ops.ready.eviction", OPS, "Ready x Eviction/idle", "P", "T6",
       "Only idle and queue-free M can retire."),
    _c("ops.reconfiguring.inference", OPS, "Reconfiguring x Inference", "D", "T2",
       "Queue behind manager, bind new config after release; 200 result."),
    _c("ops.reconfiguring.reconfigure", OPS, "Reconfiguring x Register/reconfigure", "D", "T10",
       "Later manager queues; exclusive in scheduler order; 200 final ready config."),
    _c("ops.reconfiguring.status", OPS, "Reconfiguring x Status", "P", "T7",
       "200 old/new complete metadata, never a partial mix."),
    _c("ops.unloading.inference", OPS, "Unloading x Inference", "P", "T6",
       "Queue; after teardown reload and run; 200 result."),
    _c("ops.unloading.eviction", OPS, "Unloading x Eviction/idle", "D", "T6",
       "An already retiring M is not a resident victim; other idle victims considered independently."),
    _c("ops.unloading.status", OPS, "Unloading x Status", "D", "T6",
       "200 logical unloaded/null capacity while physical teardown can continue."),
    _c("ops.shutdown.inference", OPS, "Shutting down x Inference", "P", "T8",
       "Preaccepted/queued work may still run; resources destroyed after drain."),
    _c("ops.shutdown.management", OPS, "Shutting down x management/status", "U", "",
       "Preaccepted managers and status during shutdown: no behavioural test [GAP]."),
    _c("two.a_unloaded_b_ready.req_a", TWO, "A unloaded; B ready / Request to A", "P", "T1",
       "Initialize/run; 200; A ready."),
    _c("two.a_loading_b_ready.req_b", TWO, "A loading; B ready / Request to B", "D", "T13",
       "Warm B bypasses A initialization/load guard; 200."),
    _c("two.a_loading_b_ready.unload_ab", TWO, "A loading; B ready / Unload A and B", "D", "T5",
       "Free idle B before A finishes; 200; both unloaded."),
    _c("two.a_full_b_ready.req_a", TWO, "A full with queued requests / Request to A", "D", "T3",
       "Queue FIFO/timeout 503."),
    _c("two.a_full_b_ready.reconf_a", TWO, "A full with queued requests / Reconfigure A", "D", "T2",
       "Older A queued requests run first; 200; A ready replacement."),
    _c("two.a_full_b_ready.unload_a", TWO, "A full with queued requests / Unload A", "D", "T2",
       "Older A work runs first; 200; A unloaded."),
    _c("two.a_reconfiguring.req_b", TWO, "A reconfiguring; B running / Request to B", "P", "T13",
       "Spare B slot runs/full B queues; 200."),
    _c("two.a_unloading.req_b", TWO, "A unloading slowly; B ready / Request to B", "D", "T6",
       "Warm B runs; no registry wait on A destructor."),
    _c("two.both_running.req", TWO, "A/B both loading or running / Request to A or B", "P", "T11",
       "Per-model init/queue plus possible global cold guard; 200."),
    _c("two.both_running.unload_ab", TWO, "A/B both loading or running / Unload A and B", "D", "T11",
       "Publish both barriers before waiting; 200; both unloaded after earlier work."),
    _c("two.other_bulk.unload_ab", TWO, "Another bulk operation targets A/B / Unload A and B", "D", "T11",
       "Atomic barrier publication orders overlapping selections; deduplicate; no reverse-order cycle."),
    _c("order.request_request", ORDER, "Request then request, same model", "D", "T3 T1",
       "Spare slots admit both; full capacity queues later callers FIFO."),
    _c("order.request_manager", ORDER, "Request then manager, same model", "D", "T2 T14",
       "Manager waits all older admitted and queued requests; later requests cannot use spare slots ahead of it."),
    _c("order.manager_request", ORDER, "Manager then request, same model", "D", "T3 T2",
       "Request queues behind barrier, then binds the resulting configuration (config change P)."),
    _c("order.manager_manager", ORDER, "Manager then manager, same model", "D", "T10",
       "Queue in enqueue order, each exclusive (every operation permutation P)."),
    _c("order.different_models", ORDER, "Requests/managers on different models", "D", "T7 T13",
       "No registry lock across admission/metadata waits, inference or teardown; unrelated warm work progresses."),
    _c("order.bulk_bulk", ORDER, "Bulk then overlapping bulk", "D", "T11 T15",
       "Serialize only barrier publication; shared models observe the first bulk's barriers first."),
    _c("fail.invalid_metadata", FAIL, "Invalid task/preset/spec/schema before live changes", "D", "T9 T0",
       "Reject; working configuration/pool unchanged."),
    _c("fail.unsupported_capacity", FAIL, "Unsupported capacity on existing registration", "D", "T16",
       "HTTP 400; retain old pool, count, metadata and residency; next inference/valid resize works."),
    _c("fail.post_commit", FAIL, "After old teardown/new metadata commit, load failure", "D", "T12",
       "No partial pool; new config registered/unloaded; next request may retry (multi-slot P)."),
    _c("fail.initial_load", FAIL, "Initial load, null primary, partial clone failure", "D", "T12 T17",
       "No published residency; release admission; retry allowed."),
    _c("fail.execution", FAIL, "Preparation/execution failure", "D", "T12",
       "Release lease, preserve ownership order; HTTP error."),
    _c("fail.new_registration", FAIL, "New registration publication", "P", "T4 T12",
       "Validate privately, publish one stable entry; first-load failure leaves it unloaded for retry."),
    _c("fail.residency_refusal", FAIL, "Residency/memory refusal", "D", "T6",
       "HTTP 503; no partial new pool (device OOM P)."),
    _c("fail.slow_teardown", FAIL, "Teardown is slow", "D", "T6",
       "Clear logical loaded/capacity first; allow unrelated warm work."),
    _c("tds.admission_timeout", TDS, "Admission timeout; request or targeted manager", "D", "T3",
       "HTTP 503 server_busy; queued ownership removed; existing work continues."),
    _c("tds.overdue", TDS, "Healthy plus overdue slots, or spare slots behind management", "D", "T3",
       "Healthy blocker permits bounded waiting; all overdue blockers fail fast even with spare capacity/queued managers."),
    _c("tds.timeout_zero", TDS, "Timeout zero / bulk drains", "D", "T3",
       "Zero means unbounded admission wait; bulk uses zero regardless of policy."),
    _c("tds.disconnect_queued", TDS, "Client disconnect while queued or waiting initialization", "D", "T19",
       "No scheduler cancellation; finite work executes, then releases."),
    _c("tds.disconnect_running", TDS, "Client disconnect executing offline request", "D", "T19",
       "Cannot preempt backend; release lease after finite work."),
    _c("tds.disconnect_stream", TDS, "Disconnect active stream / abandon unstarted response", "D", "T14 T18",
       "Write failure unwinds callback; dropping callback releases its lease (real streams P)."),
    _c("tds.shutdown_stalled_io", TDS, "Shutdown stalled header/live body/non-reading response", "D", "T8",
       "Stop accepting; cancel socket I/O, then join."),
    _c("tds.shutdown_finite", TDS, "Shutdown active finite offline handler/deferred callback", "D", "T8",
       "Listener waits until handler/callback returns; runtime outlives joined workers."),
    _c("tds.shutdown_queued", TDS, "Shutdown queued request, cold load, manager or hung GPU", "D", "T19",
       "Finite work must drain (hung GPU U)."),
    _c("tds.custom_listener", TDS, "Custom frontend listener shutdown", "U", "",
       "Must independently drain its workers; default-listener tests do not validate it."),
)}


@dataclass(frozen=True)
class Coverage:
    """What one F assertion's probes reach: (cell id, parval label, note) and areas."""

    cells: tuple[tuple[str, str, str], ...]
    areas: tuple[str, ...]
    outside_http: str = ""  # what only CTest/sanitizers can show for this assertion


def _cov(areas: str, *cells: tuple[str, str, str], outside: str = "") -> Coverage:
    return Coverage(tuple(cells), tuple(areas.split()), outside)


COVERAGE: dict[str, Coverage] = {
    "F1.fifo": _cov(
        "concurrent_inference",
        ("order.request_request", "D", "request-only queue, enqueue observed through queued_requests"),
        ("order.request_manager", "D", "older queued request before a waiting unload"),
        ("order.manager_request", "D", "staggered later requests behind the unload"),
        ("order.manager_manager", "D", "two reconfigurations; the later request binds the last one"),
        ("two.a_full_b_ready.unload_a", "D", "full pool with queued work, then unload"),
        ("two.a_full_b_ready.req_a", "D", "later arrivals queue FIFO"),
    ),
    "F1.overdue": _cov(
        "concurrent_inference",
        ("tds.overdue", "D", "full pool, spare slots and two managers; healthy plus overdue"),
    ),
    "F1.timeouts": _cov(
        "concurrent_inference",
        ("tds.admission_timeout", "D", "request ceiling, request override and targeted manager, both runtimes"),
        ("tds.timeout_zero", "D", "ceiling 0 and bulk unload wait beyond a short ceiling"),
    ),
    "F1.legacy_admission": _cov(
        "concurrent_inference",
        ("scope.legacy_slots", "D", "config and /v1/models/load slots forms rejected"),
        outside="the legacy guard's source identity is X4 (verify-protected)",
    ),
    "F1.cap1_fifo": _cov(
        "concurrent_inference",
        ("scope.flag_cap1", "D", "omitted slots on a flagged server"),
        ("order.request_manager", "D", "forced order at capacity one"),
        ("ops.loading.inference", "P", "concurrent first requests queue on one session"),
    ),
    "F1.unsupported": _cov(
        "concurrent_inference cold_loading",
        ("scope.counts", "D", "count above the advertised capacity on a lazy model"),
        ("fail.new_registration", "P", "unsupported count stays registered/unloaded"),
        outside="no queue capacity exists: overflow is timeout rejection (F1.timeouts)",
    ),
    "F2.first_publish": _cov(
        "cold_loading",
        ("ops.unloaded.inference", "D", "concurrent first requests"),
        ("ops.loading.inference", "P", "admitted requests wait on one initializer"),
        ("ops.loading.status", "P", "max_parallel_slots/loaded never partially exposed"),
    ),
    "F2.unload_vs_load": _cov(
        "cold_loading unloading_eviction",
        ("ops.loading.unload", "D", "targeted unload during the first load"),
        ("ops.loading.bulk", "D", "bulk unload during the first load; legacy skip on the unflagged runtime"),
    ),
    "F2.reconfigure_queued": _cov(
        "reconfiguration",
        ("two.a_full_b_ready.reconf_a", "D", "queued request bound before the barrier uses the old config"),
        ("ops.reconfiguring.inference", "D", "later request binds the new config"),
        ("ops.ready.unload", "D", "unload with a queued older request ends unloaded"),
        ("order.manager_request", "P", "config change observed through distinct outputs"),
    ),
    "F2.callback_lease": _cov(
        "concurrent_inference disconnects",
        ("order.request_manager", "P", "native batch exchange holds its lease until done"),
        ("tds.disconnect_stream", "P", "batch response abandoned after the first event"),
        outside="stream callbacks and unstarted-callback destruction: CTest T14/T18",
    ),
    "F2.invalid_replacement": _cov(
        "reconfiguration",
        ("fail.invalid_metadata", "D", "invalid task and invalid slots forms"),
        ("fail.unsupported_capacity", "D", "count capacity+1 returns 400; old pool/count/outputs kept"),
        ("ops.ready.reconfigure", "D", "a later valid resize works"),
    ),
    "F2.same_id": _cov(
        "reconfiguration cold_loading",
        ("fail.new_registration", "P", "concurrent same-ID registration publishes one entry"),
        ("fail.post_commit", "P", "post-commit load failure leaves the new config unloaded, retry works"),
        ("ops.reconfiguring.status", "P", "status during reconfiguration shows complete metadata"),
    ),
    "F3.load_failures": _cov(
        "cold_loading",
        ("fail.initial_load", "P", "weight-load failure (missing file) and retry over HTTP"),
        ("fail.post_commit", "P", "registration failure then retry with the good path"),
        outside="primary, null-primary and partial-clone injection and destruction order: CTest T12/T17",
    ),
    "F3.ownership": _cov(
        "concurrent_inference",
        ("fail.execution", "P", "invalid request alongside healthy work releases its lease"),
        outside="immutable/mutable resource lifetime and private graphs/caches/RNG: CTest and sanitizers",
    ),
    "F4.disconnect": _cov(
        "disconnects",
        ("tds.disconnect_running", "D", "clients dropped while executing"),
        ("tds.disconnect_queued", "D", "clients dropped while queued and while waiting for the first load"),
    ),
    "F4.shutdown": _cov(
        "shutdown",
        ("tds.shutdown_finite", "D", "SIGTERM with active finite requests"),
        ("tds.shutdown_queued", "P", "SIGTERM with a queued request (hung GPU work untested)"),
        ("tds.shutdown_stalled_io", "P", "stalled header and stalled body connections"),
        ("ops.shutdown.inference", "P", "drain observed from outside"),
        ("ops.shutdown.management", "U", "managers during shutdown not exercised"),
        ("tds.custom_listener", "U", "custom listeners need their own coverage"),
    ),
    "F5.two_models": _cov(
        "unloading_eviction cold_loading",
        ("two.both_running.req", "D", "two models running together under limits 1 and 2"),
        ("two.a_loading_b_ready.req_b", "D", "warm model progresses during a guarded cold load"),
        ("two.both_running.unload_ab", "D", "bulk unload of both while running"),
        ("fail.residency_refusal", "P", "limit-1 contention: 200 or 503 server_busy, never a deadlock"),
        ("ops.ready.eviction", "P", "idle model evicted by the next load (idle_unload_ms untested)"),
    ),
    "F5.bulk_ready_first": _cov(
        "unloading_eviction",
        ("two.a_loading_b_ready.unload_ab", "D", "ready idle model freed before the first load finishes"),
        ("ops.loading.bulk", "D", "reply order ready-idle first"),
    ),
    "F5.retiring_residency": _cov(
        "unloading_eviction",
        ("ops.unloading.eviction", "D", "retiring model is not a resident victim under limits 1 and 2"),
        ("ops.unloading.status", "D", "logical unloaded while teardown continues"),
        ("fail.slow_teardown", "P", "teardown window observed, not blocked (physical memory separate)"),
    ),
    "F5.no_convoy": _cov(
        "unloading_eviction",
        ("order.different_models", "D", "status and a warm model's request during another model's bulk wait"),
        ("two.a_reconfiguring.req_b", "P", "management wait, not blocked metadata"),
        outside="blocking metadata itself needs the controlled CTest (T7/T13)",
    ),
    "F5.bulk_selections": _cov(
        "unloading_eviction",
        ("order.bulk_bulk", "D", "reversed and overlapping selections at once"),
        ("two.other_bulk.unload_ab", "D", "duplicates and unknown ids"),
    ),
    "F6.ctest": _cov("concurrent_inference cold_loading reconfiguration unloading_eviction disconnects shutdown",
                     outside="CTest results, not black-box probes"),
    "F6.sanitizers": _cov("concurrent_inference", outside="sanitizers do not certify GPU kernels/drivers"),
    "F6.stress": _cov("concurrent_inference", outside="CTest stress job"),
}


def coverage_json(assertion_id: str) -> dict[str, Any]:
    cov = COVERAGE.get(assertion_id)
    if cov is None:
        return {"cells": [], "areas": []}
    cells = [{**CELLS[cid].to_json(), "parval_label": label, "probe": note}
             for cid, label, note in cov.cells]
    return {"cells": cells, "areas": {a: AREAS[a] for a in cov.areas},
            "outside_http": cov.outside_http}


def limitations(assertion_id: str) -> list[str]:
    """Why this assertion's pass is never a blanket pass for its group."""
    cov = COVERAGE.get(assertion_id)
    if cov is None:
        return []
    out: list[str] = []
    for cid, label, note in cov.cells:
        cell = CELLS[cid]
        if cell.label != "D" or label != "D":
            tests = " ".join(cell.tests) or "GAP"
            out.append(f"contract cell '{cell.where}' ({cell.table}) is {cell.label} [{tests}] in the "
                       f"contract; parval covers it {label}: {note}")
    if cov.outside_http:
        out.append(f"not observable over HTTP: {cov.outside_http}")
    partial = [a for a in cov.areas if AREAS[a] != "Directly tested"]
    if partial:
        out.append("contract area(s) " + ", ".join(partial) + " labelled 'Partially tested': "
                   "a pass here is not a blanket pass for the group")
    return out
