"""The procedure's assertion IDs (procedure-assertions.md, procedure version 2026-10-04)."""

from __future__ import annotations

EXECUTION_PATH: dict[str, str] = {
    "X1": ("Without --parallel-jobs the original runtime runs; every explicit slots field is rejected there."),
    "X2": (
        "With --parallel-jobs, omitted slots means capacity one and every count uses the new "
        "runtime; the warning marker is printed on flagged runs only."
    ),
    "X3": (
        "Runtime selection cannot change for the life of a process; resizing across one keeps the parallel lifecycle."
    ),
    "X4": (
        "Protected files are byte-identical to upstream; the legacy runtime differs only by the "
        "registration-rejection block."
    ),
}

MODEL_GATE: dict[str, str] = {
    "M1.manifest": ("One manifest identifies checkpoint, fixtures, executables, platform and settings."),
    "M1.serial_repeat": (
        "Serial repeat variation is measured before any comparison (one slot, and across two fresh starts)."
    ),
    "M1.legacy_parity": (
        "Upstream legacy and the unflagged candidate give identical outputs: cold, warm, repeated warm."
    ),
    "M1.cap1_parity": ("The flagged candidate at capacity one gives the same outputs as upstream legacy."),
    "M1.cold_warm_refs": "Cold and warm references are kept distinct.",
    "M2.starts": "At least three fresh server starts at each advertised count that fits.",
    "M2.cold_wave": ("Each start begins with a true concurrent cold wave before any load-producing probe."),
    "M2.warm_waves": "Each start runs mixed warm waves.",
    "M2.observed_active": (
        "During each concurrent wave the status poller observed active_slots == N with the model loaded."
    ),
    "M2.exact": ("Every output equals its reference exactly (volatile fields excluded by name only)."),
    "M2.drained": "After each wave active_slots == 0 and queued_requests == 0.",
    "M2.unload_reload": ("Each start unloads and reloads; outputs after reload equal the cold references."),
    "M2.serial_reuse": (
        "After the concurrent waves, serial requests on the same server still give the reference outputs."
    ),
    "M3.variation": ("Mixed waves vary effective inputs, and each variation is shown to change the effective input."),
    "M3.reversed": "Admission order is also reversed.",
    "M3.ten_waves": ("At the largest count, at least ten mixed warm waves in each of the three starts."),
    "M3.history": ("Cache-sensitive models: each slot's ordered history is reproduced on a single-slot reference run."),
    "M4.invalid_alongside": (
        "An invalid request alongside healthy work errors, healthy outputs stay exact, no lease stays held."
    ),
    "M4.load_failure_retry": (
        "A primary-load failure followed by a retry releases ownership and then serves exact outputs."
    ),
    "M4.targeted_unload": ("A targeted unload waits for earlier work, then the model serves exact outputs again."),
    "M4.all_unload": ("An all-model unload waits for earlier work, then the model serves exact outputs again."),
    "M4.unload_during_first_load": (
        "An unload during the first lazy load waits for it; the model ends unloaded and reloads correctly."
    ),
    "M4.adapter_overrides": ("Adapter-specific queue/timeout/eviction overrides are tested separately."),
    "M5.sampled": ("GPU and host memory are sampled inside the same runs, with the interval reported."),
    "M5.peaks": "First-request peaks are reported per count, with what they include.",
    "M5.stable": ("Repeated use stabilises over the tested history under the rule declared in the plan."),
    "M5.baseline": ("For retention investigations or memory changes, the same count is compared with the baseline."),
    "M6.offline": "Offline evidence admits offline mode only.",
    "M6.streaming": "Streaming needs concurrent streams, disconnect/reset and callback ownership.",
    "M6.batch": "Native batching needs concurrent batches with independent results.",
}

FRAMEWORK_GATE: dict[str, str] = {
    "F1.fifo": "Older queued work drains before a manager and later arrivals; no barging.",
    "F1.overdue": ("Overdue work with a waiting manager and spare slots fails fast (503 server_busy)."),
    "F1.timeouts": "Manager and request timeouts, and timeout zero (= unbounded).",
    "F1.legacy_admission": ("Unflagged legacy admission behaves like the original guard; explicit slots rejected."),
    "F1.cap1_fifo": "Flagged capacity one follows FIFO/pool behaviour.",
    "F1.unsupported": ("Unsupported counts/modes keep their behaviour; timeout rejection documented."),
    "F2.first_publish": "Concurrent first requests publish one complete pool.",
    "F2.unload_vs_load": "A parallel unload cannot skip a load in progress.",
    "F2.reconfigure_queued": ("Requests bound before a management barrier use the previous configuration."),
    "F2.callback_lease": ("Deferred stream/batch callbacks keep their lease until the exchange completes."),
    "F2.invalid_replacement": ("An unsupported valid count returns 400 without changing the old count or pool."),
    "F2.same_id": "Same-ID publication; pre/post-commit failure follow the contract.",
    "F3.load_failures": "Injected load failures roll back and allow retry.",
    "F3.ownership": "Every error releases ownership; mutable state is private.",
    "F4.disconnect": ("Disconnecting running and queued clients keeps ownership and accounting correct."),
    "F4.shutdown": ("Shutdown drains finite work; forced termination does not count as graceful drain."),
    "F5.two_models": "Two models loading/running/unloading together under residency limits.",
    "F5.bulk_ready_first": ("With a first load blocked, bulk unload releases a ready idle model first."),
    "F5.retiring_residency": "A retiring model does not count as resident for limits 1 and 2.",
    "F5.no_convoy": ("Unrelated lookups and requests progress while another model is busy with management."),
    "F5.bulk_selections": ("Reversed, overlapping and duplicate bulk selections complete without deadlock."),
    "F6.ctest": "The relevant common CTests pass.",
    "F6.sanitizers": "CPU tests pass under ASan and TSan separately where supported.",
    "F6.stress": "A reproducible seeded stress run after the controlled scenarios.",
}

QUALITY_RULES: dict[str, str] = {
    "Q1": "Quality settings are identical across every compared run.",
    "Q2": ("All outputs and meaningful metadata are compared; only named volatile fields are excluded."),
    "Q3": ("Byte-identical output; a tolerance is honoured only if declared in the plan before the run."),
    "Q4": "Compare equivalent single-slot histories, not the closest reference.",
    "Q5": "An intermittent mismatch stays FAIL even when later repeats pass.",
    "Q6": "Admit only the consecutive validated counts from one upward.",
}


def group_of(assertion_id: str) -> str:
    """'M2.exact' -> 'M2'; 'F1.fifo' -> 'F1'; 'Q5' -> 'Q5'."""
    return assertion_id.split(".", 1)[0]


def all_ids() -> list[str]:
    return [*EXECUTION_PATH, *MODEL_GATE, *FRAMEWORK_GATE, *QUALITY_RULES]
