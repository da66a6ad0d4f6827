"""Registry entries of the framework assertions F1-F6 (see registry.py; the model's are
declared at their judges).

F1-F5 are combined by parval.framework.judges:assertion_result from sub-checks, each one
a registered observation judge's verdict (`parts`: the judge keys the probes in
parval/framework/probes_*.py feed into it, and "f3.ctest_evidence" where the server's own
CTests must show half of it). F6 is judged from the CTest runs by assess_f6."""

from __future__ import annotations

from parval.procedure.entry import CTEST, FRAMEWORK, OBS, Entry

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


def _f(id_: str, *parts: str, faults: tuple[str, ...] = (), notes: tuple[str, ...] = ()) -> Entry:
    evidence = (OBS,) + ((DEFAULT_CTEST,) if CTEST_PART in parts else ())
    extra = (HALF_CTEST,) if CTEST_PART in parts else ()
    return Entry(
        id_, "record", COMBINE, evidence, faults, tuple(parts), FRAMEWORK.format(id=id_), (*notes, *extra, SUBCHECKS)
    )


F1_ENTRIES = (
    _f("F1.fifo", "f1.forced_order", "f1.request_only_queue", "f2.overlapping_managers", faults=("barging",)),
    _f("F1.overdue", "f1.overdue_case", "f1.healthy_plus_overdue", faults=("overdue_suppressed",)),
    _f(
        "F1.timeouts",
        "timeouts.case",
        "timeouts.manager_timeout",
        "timeouts.bulk_unbounded",
        faults=("queued_counter_stuck",),
        notes=("judged on the flagged and the legacy runtime alike",),
    ),
    _f(
        "F1.legacy_admission",
        "legacy.guard_serializes",
        "legacy.wedged_text",
        "legacy.status_fields",
        "legacy.registration_forms",
        "legacy.config_forms",
        notes=("judged on unflagged (legacy) starts of the candidate",),
    ),
    _f("F1.cap1_fifo", "f1.cap1_pool", "f1.forced_order"),
    _f(
        "F1.unsupported",
        "unsupported.count_over_capacity",
        "unsupported.unsupported_mode",
        notes=("queue overflow is NOT_APPLICABLE here: its timeout rejection is recorded under F1.timeouts",),
    ),
)

F2_ENTRIES = (
    _f("F2.first_publish", "f1.first_wave", "legacy.first_session"),
    _f("F2.unload_vs_load", "f2.unload_during_load", "legacy.unpublished_skip", faults=("unload_skips_load",)),
    _f(
        "F2.reconfigure_queued",
        "f2.queued_before_barrier",
        "f2.unload_not_undone",
        faults=("lease_binding",),
        notes=(
            "PENDING when the plan's distinct session_options do not change the output "
            "(the configuration a request used cannot be told)",
        ),
    ),
    _f("F2.callback_lease", "f2.native_batch", CTEST_PART),
    _f(
        "F2.invalid_replacement",
        "f2.unsupported_count",
        "f2.invalid_metadata",
        "f2.valid_resize",
        "f2.runtime_kept",
        "legacy.runtime_kept",
    ),
    _f("F2.same_id", "f2.concurrent_same_id", "f2.post_commit_failure"),
)

F3_F4_ENTRIES = (
    _f("F3.load_failures", "f3.config_load_failure", "f3.registration_retry", CTEST_PART),
    _f(
        "F3.ownership",
        "f3.config_load_failure",
        "f3.invalid_alongside",
        CTEST_PART,
        notes=("PENDING for invalid_alongside when the plan names no requests.invalid",),
    ),
    _f("F4.disconnect", "f4.running_disconnect", "f4.queued_disconnect", "f4.init_disconnect"),
    _f("F4.shutdown", "f4.sigterm_inflight", "f4.stalled_socket_io"),
)

F5_ENTRIES = (
    _f("F5.two_models", "f5.together", "f5.unload_together", "f5.alternate", "f5.warm_during_cold"),
    _f("F5.bulk_ready_first", "f5.ready_first", faults=("bulk_waits_unpublished",)),
    _f("F5.retiring_residency", "f5.retiring", CTEST_PART, faults=("retiring_resident",)),
    _f("F5.no_convoy", "f5.no_convoy", CTEST_PART, faults=("registry_convoy",)),
    _f("F5.bulk_selections", "f5.selections"),
)

F6_JUDGE = "parval.framework.judges_f6:assess_f6"
F6_PLAN = "the framework plan: framework.ctest_build_dir, framework.ctest_regex, framework.sanitizer_build_dirs"


def _f6(id_: str, evidence: tuple[str, ...], *notes: str) -> Entry:
    return Entry(
        id_,
        "record",
        F6_JUDGE,
        (CTEST, *evidence),
        reproduce=FRAMEWORK.format(id=id_),
        notes=(*notes, "a rerun with the same label supersedes the earlier run (named as a limitation)"),
    )


F6_ENTRIES = (
    _f6(
        "F6.ctest",
        (
            F6_PLAN,
            "parallel_http_live_body_test and parallel_http_ownership_test, plus the probes file's required_tests "
            "(default_transport_unchanged: the reason they are not required)",
        ),
        "judged on the default-labelled run; FAIL only on a relevant failing test; BLOCKED when parval "
        "stopped CTest (ctest_timeout_s); PENDING when it was not run, CTest is older than 3.21, no test "
        "passed, or a required test did not run",
    ),
    _f6(
        "F6.sanitizers",
        (F6_PLAN, "the probes file's sanitizers / sanitizers_unavailable", "-fsanitize= in the build directory"),
        "ASan and TSan both required, one job each; a job counts only from a build directory built with its "
        "-fsanitize flag; PENDING for a job not run without a platform reason (sanitizers_unavailable), "
        "which is listed as a limitation",
    ),
    _f6(
        "F6.stress",
        (F6_PLAN, "the probes file's stress job (regex, seed, repeat)"),
        "the stress-labelled run (ctest --repeat until-fail with AUDIOCPP_STRESS_SEED); "
        "PENDING when not run; a missing seed is a limitation",
    ),
)

FRAMEWORK_ENTRIES: tuple[Entry, ...] = (*F1_ENTRIES, *F2_ENTRIES, *F3_F4_ENTRIES, *F5_ENTRIES, *F6_ENTRIES)
