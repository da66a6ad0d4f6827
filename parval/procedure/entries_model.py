"""Registry entries of the model-run assertions: the execution path X1-X4, the model gate
M1-M6 and the quality rules Q1-Q6, each judged from a model run's events (see
registry.py; the framework's F entries are in entries_framework.py).

Each model judge is named exactly as its gate module's `JUDGES` table dispatches to it;
the evidence lists the events and files that function reads."""

from __future__ import annotations

from parval.procedure.entry import (
    COMPARED,
    COUNT_REQUESTS,
    DRAINED,
    MANIFEST,
    MASKED,
    MEMORY,
    NEGATIVE,
    NO_UI,
    PLAN,
    PROTECTED,
    READY,
    REFS,
    SET_ASIDE,
    STARTS,
    WAVE_STATUS,
    WAVES,
    X4_CMD,
    Entry,
    Gate,
)

XP = "parval.gates.execution_path"
M1 = "parval.gates.m1_baseline"
M2 = "parval.gates.m2_concurrency"
M3 = "parval.gates.m3_mixed_waves"
M4 = "parval.gates.m4_recovery"
M5 = "parval.gates.m5"
M6 = "parval.gates.m6_modes"
Q = "parval.gates.quality"


_x = Gate("run", XP).noted


EXECUTION_PATH_ENTRIES = (
    _x(
        "X1",
        "x1_legacy_path",
        (
            "`x1_config_probe` events: the unflagged candidate started with each slots form "
            "(value, rejected, exit_code, message_ok: the legacy text on stderr)",
            "`x1_registration_probe` events: registrations with each slots form on "
            "ref-candidate-legacy (reply, message, ok)",
            READY + " of ref-candidate-legacy (no warning marker, no slot fields)",
        ),
        'PENDING until every form 1, 2, null, false, "4" was tried at startup and on registration; ' + NO_UI,
        "BLOCKED when ref-candidate-legacy crashed or was stopped before its registration probes",
    ),
    _x(
        "X2",
        "x2_flagged_capacity_one",
        (
            READY + " of ref-candidate-cap1 (warning marker; first_slots must be 1) and of "
            "every count start (warning marker)",
        ),
        "PENDING when the flagged capacity-one start (ref-candidate-cap1) is missing",
    ),
    _x(
        "X3",
        "x3_resize_across_one",
        (
            "`x3_resize_probe` event on ref-candidate-cap1 (steps: slots, reply, status_fields; ok, capacity_refused)",
            "`request` events of phase x3_after_resize on ref-candidate-cap1, " + COMPARED,
        ),
        NO_UI + "; PENDING too when the model's capacity refuses two slots",
    ),
    Entry(
        "X4",
        "commit",
        "parval.gates.framework_ref:x4_result",
        (PROTECTED,),
        reproduce=X4_CMD,
        notes=(
            "PENDING when no result is attached, it does not match the schema, or it "
            "checked another candidate commit than identity.candidate.source_commit",
            "judged from the verify-protected result itself (changed files, legacy runtime check), never "
            "from the status of a wrapper around it",
        ),
    ),
)


_m1 = Gate("run", M1).noted


M1_ENTRIES = (
    _m1(
        "M1.manifest",
        "m1_manifest",
        (
            MANIFEST,
            PLAN + ": model.auxiliary_files and the identity block (quantization, source commits, build flags)",
            REFS,
        ),
        "PENDING naming each item the manifest lacks (an empty or blank value is lacking); what parval "
        "cannot discover is declared in the plan's identity block",
    ),
    _m1(
        "M1.serial_repeat",
        "m1_serial_repeat",
        (
            "`request` events of ref-baseline-a and ref-baseline-b (ref_cold, ref_warm, ref_warm2: output canon)",
            "raw replies in artifacts/<sha256>.json when the plan declares a tolerance",
        ),
        "decided by parval.gates.serial:serial_variation; PENDING (parity unverified) "
        "when outputs differ across the two fresh starts or warm repeats",
        "a declared compare.tolerance applies only when the repeats varied within it; byte-identical "
        "repeats are deterministic output, and comparisons stay byte-exact",
        "the stand-in fault serial_nondeterminism keeps it PENDING, never PASS",
    ),
    _m1(
        "M1.legacy_parity",
        "m1_legacy_parity",
        (
            "`request` events of ref-candidate-legacy (ref_cold, ref_warm, ref_warm2), " + COMPARED,
            STARTS + " of ref-candidate-legacy",
            NEGATIVE,
            SET_ASIDE,
        ),
        MASKED,
        "FAIL when the start's server crashed (whatever it had collected before); BLOCKED when parval "
        "stopped it; a PASS needs every request cold, warm and repeated warm",
        "the stand-in fault crash_legacy_after makes it FAIL; garbage_replies makes it FAIL or BLOCKED",
    ),
    _m1(
        "M1.cap1_parity",
        "m1_cap1_parity",
        (
            "`request` events of ref-candidate-cap1 (ref_cold, ref_warm, ref_warm2), " + COMPARED,
            STARTS + " of ref-candidate-cap1",
            NEGATIVE,
            SET_ASIDE,
        ),
        MASKED,
        "FAIL when the start's server crashed; BLOCKED when parval stopped it; a PASS needs every output",
    ),
    _m1(
        "M1.cold_warm_refs",
        "m1_cold_warm_refs",
        (REFS + ": cold keys (<req>|cold, hist:<req>) and warm/history keys",),
        "PENDING when cold and warm references were not both recorded",
    ),
)


_m2 = Gate("count", M2)


M2_ENTRIES = (
    _m2(
        "M2.starts",
        "m2_starts",
        (STARTS + " of the count<N>-s<k> starts",),
        ("crash_at_4",),
        (
            "BLOCKED when parval stopped a start (start_failed / start_aborted / start_timeout / wave_timeout /"
            " memory_guard), naming why; the faults hang_requests and drop_connection leave it BLOCKED",
            "every other M2/M3 judge PASSes only on the complete starts (at least three, every one recorded) and "
            "every planned wave recorded whole (its summary and one reply per request); a start parval stopped "
            "never counts as complete",
        ),
    ),
    _m2(
        "M2.cold_wave",
        "m2_cold_wave",
        ("the first `request` event of each complete start (phase cold_wave)", WAVES + ": a cold_wave of N"),
        notes=("PENDING when no start at the count completed",),
    ),
    _m2(
        "M2.warm_waves",
        "m2_warm_waves",
        (
            WAVES + ": warm_wave and mixed_wave",
            PLAN + ": requests.variations (mixed waves required only when variations are declared)",
        ),
    ),
    _m2(
        "M2.observed_active",
        "m2_observed_active",
        (
            "every concurrent wave attempt: " + WAVE_STATUS,
            "`request` events of each wave (t_send / t_done: did the client have them all in flight?)",
        ),
        ("fake_concurrency",),
        (
            "FAIL when a wave attempt had all N requests in flight from the client with at least 5 successful "
            "status samples inside that window (the wave event's all_in_flight), every one below N; the same "
            "in an attempt parval set aside; UNSUPPORTED when the server publishes no slot counters",
            "PENDING when a wave never overlapped even from the client side, when N leases were seen "
            "only while the model was still loading, when fewer than 5 successful samples fell inside the "
            "all-in-flight window (the campaign repeats such a wave first), or when the poller got no "
            "/v1/models answer",
        ),
    ),
    _m2(
        "M2.drained",
        "m2_drained",
        (DRAINED + " after every wave", WAVE_STATUS, SET_ASIDE),
        ("counters_no_drain",),
        (
            "FAIL when counters stay non-zero (also in an attempt parval set aside); UNSUPPORTED when they "
            "are absent or queued_requests is not published; PENDING when the poller got no answer during "
            "the drain check",
        ),
    ),
    _m2(
        "M2.exact",
        "m2_exact",
        (COUNT_REQUESTS, NEGATIVE, SET_ASIDE),
        ("contaminate_3plus", "intermittent_mismatch", "ignore_seed", "sub16_noise"),
        (
            MASKED,
            "ignore_seed fails it when only the candidate ignores the seed; garbage_replies makes it FAIL or BLOCKED",
            "outputs are compared at each file's own sample format (sub16_noise: PCM_32 samples that differ "
            "below 16 bits fail); a reply refused for memory (503 insufficient_memory, the fault "
            "memory_refused_at) is BLOCKED, never FAIL",
        ),
    ),
    _m2(
        "M2.unload_reload",
        "m2_unload_reload",
        (
            "`probe` events named unload of every start (reply, loaded_false, polls_after, still_loaded, "
            "loaded_field, cycle): what /v1/models showed after the unload",
            "`request` events of phase reload_wave, compared with the cold references",
            NEGATIVE,
            SET_ASIDE,
        ),
        ("unload_keeps_loaded",),
        (
            MASKED,
            "unloaded means /v1/models showed loaded:false after the unload, never that the reply's "
            "`unloaded` list names the model (it lists every known id); FAIL when the route errs (other than "
            "a 404) or at least 5 samples after a 200 all showed the model loaded; UNSUPPORTED when the "
            "route answers 404 (this build has none); PENDING with fewer samples or when the server "
            "publishes no `loaded`",
        ),
    ),
    _m2(
        "M2.serial_reuse",
        "m2_serial_reuse",
        ("`request` events of phase serial_reuse of every start at the count, " + COMPARED, NEGATIVE),
        notes=(MASKED,),
    ),
)

MIXED = "`request` events of phase mixed_wave of the count<N>-s<k> starts"
ORDER = "the mixed_wave `wave` events (order, admission: ordered_ok / finished_early, trace_confirmed)"


_m3 = Gate("count", M3)


M3_ENTRIES = (
    Entry(
        "M3.variation",
        "count",
        "parval.gates.m3_mixed_waves:m3_variation",
        (
            PLAN + ": requests.base, requests.variations, model.variation_kinds, model.variation_kinds_justification",
            REFS + ": content digest of each variation's reference vs the base request's",
            MIXED + ", content digests of their raw replies (artifacts/<sha256>.json)",
            NEGATIVE,
        ),
        ("ignore_seed",),
        notes=(
            MASKED,
            "the variation effects are measured once per run by parval.gates.m3_mixed_waves:variation_effects",
            "PENDING when the plan declares no variations or no model.variation_kinds, when it leaves out a "
            "kind its task supports (tts, clon: length, seed, reference; asr, vad, diar, sep, align, spk: length, "
            "content) without a reason, when a length variation does not change the effective length, or when "
            "a variation changes nothing even on the upstream reference (a plan defect; a variation that "
            "changes no input, or whose kind is not a kind of its field, is refused at plan load, exit 2)",
            "FAIL only when the upstream reference's output changes but the candidate's does not",
        ),
    ),
    _m3(
        "M3.reversed",
        "m3_reversed",
        (ORDER, MIXED + " of the waves seen in both orders", NEGATIVE),
        notes=(
            "NOT_APPLICABLE at count 1; PENDING until some request pair is observed admitted in both orders",
            MASKED,
        ),
    ),
    _m3(
        "M3.ten_waves",
        "m3_ten_waves",
        (WAVES + ": mixed_wave, per start",),
        notes=(
            "judged at every count: PASS where each of three starts ran ten mixed waves; NOT_APPLICABLE at a "
            "count below the largest whose waves.mixed is lower (it can be admitted only below a larger "
            "admitted count), and PENDING there once it would be the largest admitted count (admission ends "
            "below it); PENDING at the largest count when the plan runs fewer than ten (never a FAIL: the "
            "shortfall is the plan's)",
        ),
    ),
    _m3(
        "M3.history",
        "m3_history",
        (
            MIXED + ", compared with the history-* same-history single-slot replays",
            ORDER,
            PLAN + ": model.cache_sensitive",
            NEGATIVE,
        ),
        notes=(
            "NOT_APPLICABLE for a stateless model (model.cache_sensitive: false); without "
            "a [SLOT_VALIDATION] observer trace the slot mapping rests on ordered admission",
            MASKED,
        ),
    ),
)


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

MODEL_ENTRIES: tuple[Entry, ...] = (
    *EXECUTION_PATH_ENTRIES,
    *M1_ENTRIES,
    *M2_ENTRIES,
    *M3_ENTRIES,
    *M4_ENTRIES,
    *M5_ENTRIES,
    *M6_ENTRIES,
    *QUALITY_ENTRIES,
)
