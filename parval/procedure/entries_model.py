"""Registry entries of the model-run assertions: X1-X4, M1-M6 and Q1-Q6 (see registry.py).

Each model judge is named exactly as its gate module's `JUDGES` table dispatches to it;
the evidence lists the events and files that function reads."""

from __future__ import annotations

from parval.procedure.entry import (
    DRAINED,
    MANIFEST,
    MEMORY,
    NEGATIVE,
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
)

XP = "parval.gates.execution_path"
M1 = "parval.gates.m1_baseline"
M2 = "parval.gates.m2_concurrency"
M3 = "parval.gates.m3_mixed_waves"
M4 = "parval.gates.m4_recovery"
M5 = "parval.gates.m5"
M6 = "parval.gates.m6_modes"
Q = "parval.gates.quality"

COMPARED = "compared with the reference table (" + REFS.split(": ", 1)[1] + ")"
MASKED = ("an output comparison: without a caught negative control its PASS or output-only "
          "FAIL is BLOCKED, and while M1.serial_repeat is not PASS it is PENDING (parity "
          "unverified); lifecycle and request-error FAILs stand")
RECOVERY = "on the recovery start, at the largest count validated so far"
NO_UI = "PENDING without server.ui_management (registration needs a native-model-manager build)"


def _x(id_: str, fn: str, evidence: tuple[str, ...], *notes: str) -> Entry:
    return Entry(id_, "run", f"{XP}:{fn}", evidence, notes=notes)


EXECUTION_PATH_ENTRIES = (
    _x("X1", "x1_legacy_path",
       ("`x1_config_probe` events: the unflagged candidate started with each slots form "
        "(value, rejected, exit_code, message_ok: the legacy text on stderr)",
        "`x1_registration_probe` events: registrations with each slots form on "
        "ref-candidate-legacy (reply, message, ok)",
        READY + " of ref-candidate-legacy (no warning marker, no slot fields)"),
       "PENDING until every form 1, 2, null, false, \"4\" was tried at startup and on "
       "registration; " + NO_UI),
    _x("X2", "x2_flagged_capacity_one",
       (READY + " of ref-candidate-cap1 (warning marker; first_slots must be 1) and of "
        "every count start (warning marker)",),
       "PENDING when the flagged capacity-one start (ref-candidate-cap1) is missing"),
    _x("X3", "x3_resize_across_one",
       ("`x3_resize_probe` event on ref-candidate-cap1 (steps: slots, reply, status_fields; "
        "ok, capacity_refused)",
        "`request` events of phase x3_after_resize on ref-candidate-cap1, " + COMPARED),
       NO_UI + "; PENDING too when the model's capacity refuses two slots"),
    Entry("X4", "commit", "parval.gates.framework_ref:x4_result", (PROTECTED,),
          reproduce=X4_CMD,
          notes=("PENDING when no result is attached, it does not match the schema, or it "
                 "checked another candidate commit than identity.candidate.source_commit",)),
)


def _m1(id_: str, fn: str, evidence: tuple[str, ...], *notes: str) -> Entry:
    return Entry(id_, "run", f"{M1}:{fn}", evidence, notes=notes)


M1_ENTRIES = (
    _m1("M1.manifest", "m1_manifest",
        (MANIFEST, PLAN + ": model.auxiliary_files and the identity block (quantization, "
         "source commits, build flags)", REFS),
        "PENDING naming each item the manifest lacks; what parval cannot discover is "
        "declared in the plan's identity block"),
    _m1("M1.serial_repeat", "m1_serial_repeat",
        ("`request` events of ref-baseline-a and ref-baseline-b (ref_cold, ref_warm, "
         "ref_warm2: output canon)",
         "raw replies in artifacts/<sha256>.json when the plan declares a tolerance"),
        "decided by parval.gates.m1_baseline:serial_variation; PENDING (parity unverified) "
        "when outputs differ across the two fresh starts or warm repeats",
        "the stand-in fault serial_nondeterminism keeps it PENDING, never PASS"),
    _m1("M1.legacy_parity", "m1_legacy_parity",
        ("`request` events of ref-candidate-legacy (ref_cold, ref_warm, ref_warm2), "
         + COMPARED, NEGATIVE, SET_ASIDE),
        MASKED, "the stand-in fault garbage_replies makes it FAIL or BLOCKED"),
    _m1("M1.cap1_parity", "m1_cap1_parity",
        ("`request` events of ref-candidate-cap1 (ref_cold, ref_warm, ref_warm2), " + COMPARED,
         NEGATIVE, SET_ASIDE),
        MASKED),
    _m1("M1.cold_warm_refs", "m1_cold_warm_refs",
        (REFS + ": cold keys (<req>|cold, hist:<req>) and warm/history keys",),
        "PENDING when cold and warm references were not both recorded"),
)


def _m2(id_: str, fn: str, evidence: tuple[str, ...], faults: tuple[str, ...] = (),
        notes: tuple[str, ...] = ()) -> Entry:
    return Entry(id_, "count", f"{M2}:{fn}", evidence, faults, notes=notes)


COUNT_REQUESTS = ("`request` events of the count<N>-s<k> starts (phases cold_wave, warm_wave, "
                  "mixed_wave, reload_wave, serial_reuse), " + COMPARED)

M2_ENTRIES = (
    _m2("M2.starts", "m2_starts", (STARTS + " of the count<N>-s<k> starts",), ("crash_at_4",),
        ("BLOCKED when a start did not complete (start_failed / start_aborted / start_timeout);"
         " the faults hang_requests and drop_connection leave it BLOCKED",)),
    _m2("M2.cold_wave", "m2_cold_wave",
        ("the first `request` event of each complete start (phase cold_wave)",
         WAVES + ": a cold_wave of N"),
        notes=("PENDING when no start at the count completed",)),
    _m2("M2.warm_waves", "m2_warm_waves",
        (WAVES + ": warm_wave and mixed_wave", PLAN + ": requests.variations (mixed waves "
         "required only when variations are declared)")),
    _m2("M2.observed_active", "m2_observed_active",
        ("every concurrent wave attempt: " + WAVE_STATUS,
         "`request` events of each wave (t_send / t_done: did the client have them all in "
         "flight?)"),
        ("fake_concurrency",),
        ("FAIL when the server publishes no slot counters, or when a wave was all in flight "
         "from the client yet active_slots == N (loaded) was never seen",
         "PENDING when a wave never overlapped even from the client side, or the poller got "
         "no /v1/models answer")),
    _m2("M2.drained", "m2_drained", (DRAINED + " after every wave", WAVE_STATUS),
        ("counters_no_drain",),
        ("FAIL when counters stay non-zero, are absent, or queued_requests is not published; "
         "PENDING when the poller got no answer during the drain check",)),
    _m2("M2.exact", "m2_exact", (COUNT_REQUESTS, NEGATIVE, SET_ASIDE),
        ("contaminate_3plus", "intermittent_mismatch", "ignore_seed"),
        (MASKED, "ignore_seed fails it when only the candidate ignores the seed; "
         "garbage_replies makes it FAIL or BLOCKED")),
    _m2("M2.unload_reload", "m2_unload_reload",
        ("`probe` events named unload of every start (reply, listed, loaded_false, cycle)",
         "`request` events of phase reload_wave, compared with the cold references",
         NEGATIVE),
        notes=(MASKED,)),
    _m2("M2.serial_reuse", "m2_serial_reuse",
        ("`request` events of phase serial_reuse of every start at the count, " + COMPARED,
         NEGATIVE),
        notes=(MASKED,)),
)

MIXED = "`request` events of phase mixed_wave of the count<N>-s<k> starts"
ORDER = ("the mixed_wave `wave` events (order, admission: ordered_ok / finished_early, "
         "trace_confirmed)")


def _m3(id_: str, fn: str, evidence: tuple[str, ...], faults: tuple[str, ...] = (),
        notes: tuple[str, ...] = ()) -> Entry:
    return Entry(id_, "count", f"{M3}:{fn}", evidence, faults, notes=notes)


M3_ENTRIES = (
    _m3("M3.variation", "m3_variation",
        (PLAN + ": requests.base, requests.variations, model.variation_kinds",
         REFS + ": content digest of each variation's reference vs the base request's",
         MIXED + ", content digests of their raw replies (artifacts/<sha256>.json)", NEGATIVE),
        ("ignore_seed",),
        (MASKED, "the variation effects are measured once per run by "
         "parval.gates.m3_mixed_waves:variation_effects",
         "PENDING when the plan declares no variations or no model.variation_kinds")),
    _m3("M3.reversed", "m3_reversed", (ORDER, MIXED + " of the waves seen in both orders",
                                       NEGATIVE),
        notes=("NOT_APPLICABLE at count 1; PENDING until some request pair is observed "
               "admitted in both orders", MASKED)),
    _m3("M3.ten_waves", "m3_ten_waves", (WAVES + ": mixed_wave, per start",),
        notes=("judged at the largest advertised count only (NOT_APPLICABLE at the others); "
               "PENDING with fewer than three starts",)),
    _m3("M3.history", "m3_history",
        (MIXED + ", compared with the history-* same-history single-slot replays", ORDER,
         PLAN + ": model.cache_sensitive", NEGATIVE),
        notes=("NOT_APPLICABLE for a stateless model (model.cache_sensitive: false); without "
               "a [SLOT_VALIDATION] observer trace the slot mapping rests on ordered admission",
               MASKED)),
)


def _m4(id_: str, fn: str, evidence: tuple[str, ...], faults: tuple[str, ...] = (),
        notes: tuple[str, ...] = ()) -> Entry:
    return Entry(id_, "model", f"{M4}:{fn}", (*evidence, NEGATIVE), faults,
                 notes=(*notes, RECOVERY, MASKED))


def _unload_event(which: str) -> str:
    return (f"`m4_{which}_unload` event (issued_while_active, unload_done, requests_done, "
            "requests_latency, active_while_unload_waits, busy, ended_unloaded)")


M4_ENTRIES = (
    _m4("M4.invalid_alongside", "m4_invalid_alongside",
        ("`m4_invalid_alongside` event (invalid reply, rejected, drained)",
         "`request` events of phase invalid_alongside on the recovery start, " + COMPARED),
        notes=("PENDING when the plan names no requests.invalid",)),
    _m4("M4.load_failure_retry", "m4_load_failure_retry",
        ("`m4_load_failure` event (failure, retry, drained, healthy_in_flight)",
         "`request` events of phases load_failure_alongside and load_retry"),
        notes=("PENDING when the plan sets recovery.load_failure: none; " + NO_UI,)),
    _m4("M4.targeted_unload", "m4_targeted_unload",
        (_unload_event("targeted"),
         "`request` events of phases unload_targeted_inflight and unload_targeted_later"),
        ("barging",)),
    _m4("M4.all_unload", "m4_all_unload",
        (_unload_event("all"),
         "`request` events of phases unload_all_inflight and unload_all_later")),
    _m4("M4.unload_during_first_load", "m4_unload_during_first_load",
        ("`m4_unload_during_first_load` event (issued_during_load, unload_done, requests_done, "
         "ended_unloaded)",
         "`request` events of phases unload_during_load_first and unload_during_load_reload"),
        ("unload_skips_load",)),
    Entry("M4.adapter_overrides", "model", f"{M4}:m4_adapter_overrides",
          ("nothing: no plan declares adapter-specific queue/timeout/eviction overrides yet",),
          notes=("always NOT_APPLICABLE; the shared semantics are judged by F1 and F5",)),
)


def _m5(id_: str, fn: str, evidence: tuple[str, ...], faults: tuple[str, ...] = (),
        notes: tuple[str, ...] = ()) -> Entry:
    return Entry(id_, "count", fn, evidence, faults, notes=notes)


M5_ENTRIES = (
    _m5("M5.sampled", f"{M5}:m5_sampled",
        (MEMORY + ": samples in every phase group (idle, cold, warm, unload, reload)",
         PLAN + ": memory.gpu_required"),
        notes=("PENDING when a start lacks host samples in a phase group, or GPU samples "
               "where the plan requires them",)),
    _m5("M5.peaks", f"{M5}:m5_peaks",
        (MEMORY + ": first-request peak (cold_load / cold_wave samples) over the idle "
         "baseline",)),
    _m5("M5.stable", "parval.gates.m5_stable:m5_stable",
        (MEMORY + ": per-wave peaks of the repeated-use waves and the idle level after each "
         "unload/reload cycle", PLAN + ": memory.stabilisation (last_k_waves, max_growth_mib, "
         "metric)"),
        ("retain_after_unload",),
        ("PENDING without a stabilisation rule in the plan; FAIL only when growth shows on "
         "every wave of every start beyond the bound, or the residue grows cycle to cycle",
         "the stand-in fault memory_growth leaves it PENDING or FAIL")),
    _m5("M5.baseline", f"{M5}:m5_baseline",
        (MEMORY + " of a declared baseline run at the same count (medians over starts)",),
        notes=("NOT_APPLICABLE unless a retention investigation or memory change declares a "
               "baseline (parval run passes none to parval.gates.m5:assess_m5)",)),
)


def _m6(id_: str, fn: str, evidence: tuple[str, ...], *notes: str) -> Entry:
    return Entry(id_, "model", f"{M6}:{fn}", evidence,
                 notes=(*notes, "NOT_APPLICABLE when the plan's model.admit_modes leaves the "
                        "mode out"))


def _m6_compared(id_: str, fn: str, evidence: tuple[str, ...], *notes: str) -> Entry:
    return _m6(id_, fn, (*evidence, NEGATIVE), *notes, MASKED)


M6_ENTRIES = (
    _m6("M6.offline", "m6_offline",
        (PLAN + ": model.admit_modes, model.mode", COUNT_REQUESTS),
        "exactness itself is M2.exact's; PENDING when no count-wave output was compared"),
    _m6_compared("M6.streaming", "m6_streaming",
        ("`m6_streaming` event on the modes start (streams: pcm_sha256, done, disconnected, "
         "cut, t_send / t_done; reference_pcm_sha256, max_active, counters_present, drained)",),
        "PENDING at count 1, without slot counters, or when no stream was cut mid-stream"),
    _m6_compared("M6.batch", "m6_batch",
        ("`m6_batch` event on the modes start (batches, expected_results, results: index, "
         "status, exact; drained)",)),
)


def _q(id_: str, fn: str, evidence: tuple[str, ...], faults: tuple[str, ...] = (),
       notes: tuple[str, ...] = ()) -> Entry:
    return Entry(id_, "rule", f"{Q}:{fn}", evidence, faults, notes=notes)


QUALITY_ENTRIES = (
    _q("Q1", "q1_settings",
       ("`run_start` events: config.models entry of the plan's model in every start (slots "
        "and id aside)", PLAN + ": compare.quality_settings"),
       notes=("PENDING when no compared start recorded the model's settings",)),
    _q("Q2", "q2_volatile_fields",
       (PLAN + ": compare.volatile_fields (path, justification)",
        "raw replies (artifacts/<sha256>.json) of identical serial requests in ref-baseline-a "
        "and ref-baseline-b"),
       notes=("FAIL when an excluded path is stable across identical requests or names "
              "meaningful output; PENDING when volatility cannot be measured",)),
    _q("Q3", "q3_tolerance",
       (PLAN + ": compare.tolerance (max_abs_sample_diff, justification)",
        "manifest.json: plan.sha256 (the plan is hashed before the run)"),
       notes=("PASS whenever the run was judged with its hashed plan: a tolerance can only "
              "come from it",)),
    _q("Q4", "q4_history_refs",
       ("the M3.history verdicts at every count", PLAN + ": model.cache_sensitive", NEGATIVE),
       notes=("NOT_APPLICABLE for a stateless model; otherwise M3.history's combined status",
              MASKED)),
    _q("Q5", "q5_intermittent",
       ("the mismatches in the evidence of every output-comparison verdict of the scope "
        "(model level, or one count)", SET_ASIDE, NEGATIVE),
       ("contaminate_3plus", "intermittent_mismatch"),
       ("judged at model level and again for each count", MASKED)),
    Entry("Q6", "run", "parval.gates.admission:q6",
          ("the verdict of every count (its M2, M3, M5 and Q5 results, with the model-level "
           "and framework results)", PLAN + ": counts"),
          notes=("decided in parval.gates.admission:decide; always PASS, recording which "
                 "counts are admitted (an untested count in between is a limitation)",)),
)

MODEL_ENTRIES: tuple[Entry, ...] = (
    *EXECUTION_PATH_ENTRIES, *M1_ENTRIES, *M2_ENTRIES, *M3_ENTRIES, *M4_ENTRIES, *M5_ENTRIES,
    *M6_ENTRIES, *QUALITY_ENTRIES,
)
