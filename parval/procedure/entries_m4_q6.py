"""Registry entries of the later model-run assertions: M4 (recovery), M5 (memory), M6
(modes) and the quality rules Q1-Q6, named and described as in entries_model.py (X1-X4,
M1-M3); registry.py assembles them."""

from __future__ import annotations

from parval.procedure.entry import (
    COMPARED,
    COUNT_REQUESTS,
    MASKED,
    MEMORY,
    NEGATIVE,
    NO_UI,
    PLAN,
    REFS,
    SET_ASIDE,
    Entry,
    Gate,
)

M4 = "parval.gates.m4_recovery"
M5 = "parval.gates.m5"
M6 = "parval.gates.m6_modes"
Q = "parval.gates.quality"

RECOVERY = "on the recovery start, at the largest count validated so far"


def _m4(
    id_: str, fn: str, evidence: tuple[str, ...], faults: tuple[str, ...] = (), notes: tuple[str, ...] = ()
) -> Entry:
    return Gate("model", M4)(id_, fn, (*evidence, NEGATIVE), faults, (*notes, RECOVERY, MASKED))


def _unload_event(which: str) -> str:
    return (
        f"`m4_{which}_unload` event (issued_while_active, unload_done, requests_done, "
        "requests_latency, busy, gap_s, unload_pending_at_later_send, later_order, later_samples, "
        "unloaded_seen, unload_check)"
    )


UNLOAD_NOTES = (
    "unloaded means /v1/models showed loaded:false after the in-flight work drained (or on the quiet "
    "second unload), never the reply's `unloaded` list; barging needs the server's order: the later request, "
    "sent a gap derived from the measured service time after the still-pending unload, seen queued behind "
    "it with a slot free (needed for a PASS) or admitted past it; the probe is tried again (3 tries, the gap "
    "growing) until it queues behind, and barging FAILs only when every try saw it (FIFO is enqueue order, "
    "not packet arrival: a busy server may not have enqueued the unload yet); otherwise PENDING, or BLOCKED "
    "once the tries are spent",
    "a recovery start whose server crashed FAILs the probe it was running and leaves the later probes BLOCKED",
)


M4_ENTRIES = (
    _m4(
        "M4.invalid_alongside",
        "m4_invalid_alongside",
        (
            "`m4_invalid_alongside` event (invalid reply, rejected, drained)",
            "`request` events of phase invalid_alongside on the recovery start, " + COMPARED,
        ),
        notes=("PENDING when the plan names no requests.invalid",),
    ),
    _m4(
        "M4.load_failure_retry",
        "m4_load_failure_retry",
        (
            "`m4_load_failure` event (failure, retry, drained, healthy_in_flight)",
            "`request` events of phases load_failure_alongside and load_retry",
        ),
        notes=("PENDING when the plan sets recovery.load_failure: none; " + NO_UI,),
    ),
    _m4(
        "M4.targeted_unload",
        "m4_targeted_unload",
        (_unload_event("targeted"), "`request` events of phases unload_targeted_inflight and unload_targeted_later"),
        ("barging", "unload_keeps_loaded"),
        UNLOAD_NOTES,
    ),
    _m4(
        "M4.all_unload",
        "m4_all_unload",
        (_unload_event("all"), "`request` events of phases unload_all_inflight and unload_all_later"),
        ("unload_keeps_loaded", "segv_unload_all_busy"),
        UNLOAD_NOTES,
    ),
    _m4(
        "M4.unload_during_first_load",
        "m4_unload_during_first_load",
        (
            "`m4_unload_during_first_load` event (issued_during_load, unload_done, requests_done, unload_check)",
            "`request` events of phases unload_during_load_first and unload_during_load_reload",
        ),
        ("unload_skips_load",),
        UNLOAD_NOTES[1:],
    ),
    Entry(
        "M4.adapter_overrides",
        "model",
        f"{M4}:m4_adapter_overrides",
        ("nothing: no plan declares adapter-specific queue/timeout/eviction overrides yet",),
        notes=("always NOT_APPLICABLE; the shared semantics are judged by F1 and F5",),
    ),
)


_m5 = Gate("count")


M5_ENTRIES = (
    _m5(
        "M5.sampled",
        f"{M5}:m5_sampled",
        (MEMORY + ": samples in every phase group (idle, cold, warm, unload, reload)", PLAN + ": memory.gpu_required"),
        notes=(
            "PENDING when a start lacks host samples in a phase group, or GPU samples where the plan requires them",
        ),
    ),
    _m5(
        "M5.peaks",
        f"{M5}:m5_peaks",
        (MEMORY + ": first-request peak (cold_load / cold_wave samples) over the idle baseline",),
    ),
    _m5(
        "M5.stable",
        f"{M5}:m5_stable",
        (
            MEMORY + ": per-wave peaks of the repeated-use waves and the idle level after each unload/reload cycle",
            PLAN + ": memory.stabilisation (last_k_waves, max_growth_mib, metric)",
        ),
        ("retain_after_unload",),
        (
            "PENDING without a stabilisation rule in the plan; FAIL only when growth shows on "
            "every wave of every start beyond the bound, or the residue grows cycle to cycle",
            "BLOCKED when the memory guard (memory.guard_mib) stopped a start (its `memory_guard` event; the "
            "count's M2.starts is BLOCKED too)",
            "the stand-in fault memory_growth leaves it PENDING or FAIL",
        ),
    ),
    _m5(
        "M5.baseline",
        f"{M5}:m5_baseline",
        (
            MEMORY + " of the membase-<N> start (the baseline build, same model settings and waves) at the "
            "same count (medians over starts)",
            PLAN + ": memory.baseline_comparison (reason)",
        ),
        notes=(
            "NOT_APPLICABLE unless the plan declares memory.baseline_comparison (a retention investigation or "
            "memory change): then the campaign runs one baseline-build start per count and M5.baseline compares "
            "them; PENDING when that start is missing",
        ),
    ),
)


def _m6(id_: str, fn: str, evidence: tuple[str, ...], *notes: str) -> Entry:
    return Gate("model", M6).noted(
        id_, fn, evidence, *notes, "NOT_APPLICABLE when the plan's model.admit_modes leaves the mode out"
    )


def _m6_compared(id_: str, fn: str, evidence: tuple[str, ...], *notes: str) -> Entry:
    return _m6(id_, fn, (*evidence, NEGATIVE), *notes, MASKED)


M6_ENTRIES = (
    _m6(
        "M6.offline",
        "m6_offline",
        (PLAN + ": model.admit_modes, model.mode", COUNT_REQUESTS),
        "exactness itself is M2.exact's; PENDING when no count-wave output was compared",
    ),
    _m6_compared(
        "M6.streaming",
        "m6_streaming",
        (
            "`m6_streaming` event on the modes start (streams: ref, pcm_sha256, done, disconnected, "
            "cut, t_send / t_done; max_active, counters_present, drained)",
            REFS + ": the reference each stream names (warm: the modes start warms every slot first)",
        ),
        "PENDING at count 1, without slot counters, or when no stream was cut mid-stream",
        "each stream is compared with the upstream reference of its request and history, never with an "
        "output of the candidate",
    ),
    _m6_compared(
        "M6.batch",
        "m6_batch",
        (
            "`m6_batch` event on the modes start (batches, expected_results, results: batch, index, ref, canon, "
            "artifact, status; drained)",
            REFS + ": the reference each result names, compared without `timing` (null in batch results)",
        ),
        "every request of a batch needs exactly one result, paired by index (batch_repeats_first fails it); "
        "PENDING when the drain cannot be shown (no counters), FAIL when a lease is left held",
    ),
)


_q = Gate("rule", Q)


QUALITY_ENTRIES = (
    _q(
        "Q1",
        "q1_settings",
        (
            "`run_start` events: config.models entry of the plan's model in every start (slots and id aside)",
            PLAN + ": compare.quality_settings",
        ),
        notes=("PENDING when no compared start recorded the model's settings",),
    ),
    _q(
        "Q2",
        "q2_volatile_fields",
        (
            PLAN + ": compare.volatile_fields (path, justification)",
            "raw replies (artifacts/<sha256>.json) of identical serial requests in ref-baseline-a and ref-baseline-b",
        ),
        notes=(
            "FAIL when an excluded path is stable across identical requests or names "
            "meaningful output; PENDING when volatility cannot be measured, including a path no baseline "
            "reply carries (the exclusion would hide that field should only the candidate send it)",
        ),
    ),
    _q(
        "Q3",
        "q3_tolerance",
        (
            PLAN + ": compare.tolerance (max_abs_sample_diff, justification)",
            "manifest.json: plan.sha256 (the plan is hashed before the run)",
        ),
        notes=(
            "PASS whenever the run was judged with its hashed plan: a tolerance can only come from it",
            "says whether the tolerance applied (only where serial repeats of the baseline varied within it; "
            "16-bit LSB measured at each file's own sample format); a PASS within it is never called exact, "
            "and the negative control then also moves a sample beyond it",
        ),
    ),
    _q(
        "Q4",
        "q4_history_refs",
        ("the M3.history verdicts at every count", PLAN + ": model.cache_sensitive", NEGATIVE),
        notes=("NOT_APPLICABLE for a stateless model; otherwise M3.history's combined status", MASKED),
    ),
    _q(
        "Q5",
        "q5_intermittent",
        (
            "the mismatches in the evidence of every output-comparison verdict of the scope "
            "(model level, or one count)",
            SET_ASIDE,
            NEGATIVE,
        ),
        ("contaminate_3plus", "intermittent_mismatch"),
        (
            "judged at model level and again for each count; lifecycle violations seen in set-aside attempts "
            "(counters left non-zero, N never active, an unload that did not wait or did not unload) fail it too",
            MASKED,
        ),
    ),
    Entry(
        "Q6",
        "run",
        "parval.gates.admission:q6",
        (
            "the verdict of every count (its M2, M3, M5 and Q5 results, with the model-level and framework results)",
            PLAN + ": counts",
        ),
        notes=(
            "decided in parval.gates.admission:decide: admission stops at the first count not validated, "
            "tested or not, and ends below a count that would be the largest admitted without its ten mixed "
            "waves; PASS when what is reported is what the rule gives; PENDING when the plan skips a count "
            "(nothing above it can be admitted); with no count admitted, count 1's status",
        ),
    ),
)

LATER_MODEL_ENTRIES: tuple[Entry, ...] = (*M4_ENTRIES, *M5_ENTRIES, *M6_ENTRIES, *QUALITY_ENTRIES)
