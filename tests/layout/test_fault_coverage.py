"""Every stand-in fault and the CI test that catches it end to end, kept in one table.

"Caught end to end": the test runs the stand-in with the fault switched on, lets parval
collect and judge, and asserts the status of the fault's own assertion ID. The behaviour
variants of a correct server are "caught" by a test that shows the correct verdict with them
on (no false FAIL). The checks here are static (no campaign runs): each named test exists,
runs in CI (default or `-m slow`, never `extended` or skipped), and its source still names
the fault, the assertion IDs and the statuses, so the table cannot drift from the tests.

The table is also checked in as tests/FAULTS.md; regenerate it with
    python -m tests.layout.test_fault_coverage > tests/FAULTS.md
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from parval.standin.faults import FAULT_DEFAULTS

TESTS = Path(__file__).resolve().parents[1]
DOC = TESTS / "FAULTS.md"
REGENERATE = "python -m tests.layout.test_fault_coverage > tests/FAULTS.md"

# The switches that are behaviours of a correct server, not faults (parval/standin/faults.py).
VARIANTS = ("registration_outputs", "cold_warm_differ", "pcm32_output", "allocator_cache_mib")

# Marks that keep a test out of both CI runs (`not slow and not extended`, then `slow`) or
# skip it on CI machines (no GPU, no real server, no Slurm).
NOT_IN_CI = {"extended", "skip", "xfail", "gpu", "real", "slurm"}
STATUS_WORD = re.compile(r"\b(PASS|FAIL|BLOCKED|PENDING|NOT_APPLICABLE)\b")
PARAM_SET = type(pytest.param(None))


@dataclass(frozen=True)
class Catch:
    """One test that catches a fault: `path::function` or `path::function[param id]`."""

    test: str
    assertions: tuple[str, ...]
    # Statuses the test asserts; the status words in it must appear in the test's source.
    expect: str = "FAIL"
    # A helper in the test's module that asserts the statuses (its source is read too).
    via: str | None = None


@dataclass(frozen=True)
class Gap:
    """A fault no CI test catches end to end: what minimal test would."""

    proposal: str


CAMPAIGN = "tests/campaign/test_faults.py"
VARIANT_CAMPAIGN = "tests/campaign/test_variants.py"
RELIABILITY = "tests/reliability/test_faults.py"
REGRESSION = "tests/framework/test_regressions.py"
CLEAN = "no FAIL or BLOCKED; only F*, X4, Q6 PENDING"


def _regression(fault: str, target: str) -> tuple[Catch, ...]:
    # tests/framework/helpers.py REGRESSIONS parametrizes the test with (fault, target).
    return (Catch(f"{REGRESSION}::test_regression_fails_exactly_its_assertion[{fault}-{target}]", (target,)),)


# fault -> the tests that catch it, with the assertion IDs and statuses each asserts.
CAUGHT_BY: dict[str, tuple[Catch, ...] | Gap] = {
    # behaviour variants: the correct verdict with them on
    "registration_outputs": (
        Catch(
            f"{VARIANT_CAMPAIGN}::test_registration_dependent_outputs_compare_like_with_like",
            ("Q6",),
            CLEAN,
            via="assert_clean",
        ),
        Catch(
            f"{VARIANT_CAMPAIGN}::test_registration_dependent_cache_sensitive_model", ("Q6",), CLEAN, via="assert_clean"
        ),
        Catch(
            "tests/framework/test_registration_outputs.py::test_registration_dependent_outputs_give_no_fail",
            ("F2.same_id",),
            "no FAIL or BLOCKED",
        ),
    ),
    "cold_warm_differ": (
        Catch(
            f"{VARIANT_CAMPAIGN}::test_cold_output_differs_from_warm",
            ("Q6", "M1.cold_warm_refs"),
            CLEAN,
            via="assert_clean",
        ),
        Catch(
            f"{VARIANT_CAMPAIGN}::test_modes_compare_warm_slots_with_warm_references_when_cold_differs[streaming]",
            ("M6.streaming", "Q6"),
            f"PASS; {CLEAN}",
            via="assert_clean",
        ),
        Catch(
            f"{VARIANT_CAMPAIGN}::test_modes_compare_warm_slots_with_warm_references_when_cold_differs[batch]",
            ("M6.batch", "Q6"),
            f"PASS; {CLEAN}",
            via="assert_clean",
        ),
    ),
    "pcm32_output": (
        Catch(
            f"{VARIANT_CAMPAIGN}::test_32_bit_pcm_outputs_are_compared_at_their_own_precision",
            ("Q6",),
            CLEAN,
            via="assert_clean",
        ),
    ),
    "allocator_cache_mib": (
        Catch(
            f"{VARIANT_CAMPAIGN}::test_an_allocator_cache_kept_by_the_first_unload_passes_m5_stable",
            ("M5.stable",),
            "PASS; no FAIL or BLOCKED",
        ),
    ),
    # faults
    "contaminate_3plus": (
        Catch(f"{CAMPAIGN}::test_contamination_at_three_plus_fails_count_four_only", ("M2.exact", "Q5")),
    ),
    "serial_nondeterminism": (
        Catch(
            f"{CAMPAIGN}::test_serial_nondeterminism_is_parity_unverified_never_pass",
            ("M1.serial_repeat", "M2.exact"),
            "PENDING (parity unverified), nothing admitted",
        ),
    ),
    "intermittent_mismatch": (Catch(f"{CAMPAIGN}::test_intermittent_mismatch_stays_failed", ("Q5", "M2.exact")),),
    "rare_contamination": (
        Catch(
            "tests/campaign/test_rare_contamination.py::test_rare_contamination_passes_the_minimum_and_a_soak_catches_it",
            ("M2.exact", "Q5"),
        ),
    ),
    "counters_no_drain": (Catch(f"{CAMPAIGN}::test_counters_that_do_not_drain_fail_m2_drained", ("M2.drained",)),),
    "counter_lag_ms": (
        Catch(
            f"{CAMPAIGN}::test_a_counter_that_lags_the_reply_is_named_and_never_pass_beyond_its_bound",
            ("M2.drained",),
            "PENDING",
        ),
    ),
    "fake_concurrency": (Catch(f"{CAMPAIGN}::test_fake_concurrency_fails_observed_active", ("M2.observed_active",)),),
    "barging": (
        *_regression("barging", "F1.fifo"),
        Catch(f"{CAMPAIGN}::test_barging_past_a_waiting_unload_fails_m4", ("M4.targeted_unload",)),
    ),
    "unload_skips_load": (
        Catch(f"{CAMPAIGN}::test_unload_skipping_first_load_fails_m4", ("M4.unload_during_first_load",)),
    ),
    "memory_growth": (
        Catch(
            f"{CAMPAIGN}::test_memory_that_keeps_growing_under_the_bound_is_never_pass",
            ("M5.stable",),
            "PENDING or FAIL",
        ),
    ),
    "memory_growth_kib": (
        Catch(
            f"{VARIANT_CAMPAIGN}::test_memory_that_keeps_growing_in_any_shape_never_passes_m5_stable[per_request]",
            ("M5.stable",),
            "PENDING or FAIL",
        ),
    ),
    "memory_step_every": (
        Catch(
            f"{VARIANT_CAMPAIGN}::test_memory_that_keeps_growing_in_any_shape_never_passes_m5_stable[in_steps]",
            ("M5.stable",),
            "PENDING or FAIL",
        ),
    ),
    "unload_keeps_mib": (
        Catch(
            f"{VARIANT_CAMPAIGN}::test_memory_that_keeps_growing_in_any_shape_never_passes_m5_stable[per_unload]",
            ("M5.stable",),
            "PENDING or FAIL",
        ),
    ),
    "retain_after_unload": (
        Catch(f"{VARIANT_CAMPAIGN}::test_weights_kept_after_unload_fail_m5_stable_only", ("M5.stable",)),
    ),
    "crash_at_4": (
        Catch(f"{CAMPAIGN}::test_crash_under_load_fails_the_count_with_log_tail", ("M2.starts",)),
        Catch(f"{RELIABILITY}::test_crash_mid_wave_fails_the_count_and_the_campaign_goes_on", ("M2.starts",)),
    ),
    # Only tests/standin/test_lifecycle.py switches it on (the stand-in alone, no judging). A
    # campaign with it (plan_dict counts [1, 2], ten=2, mixed=3; 35 s here) gave M1.legacy_parity,
    # M1.cap1_parity and M2.exact FAIL on "request error(s)", M4.unload_during_first_load FAIL.
    "first_load_fails": (
        Catch(
            f"{CAMPAIGN}::test_a_first_load_that_fails_fails_the_requests_that_needed_it",
            ("M1.cap1_parity", "M2.exact"),
        ),
    ),
    "ignore_seed": (
        Catch(f"{CAMPAIGN}::test_variation_ignored_by_the_candidate_only_fails_too", ("M3.variation", "M2.exact")),
        Catch(
            f"{CAMPAIGN}::test_a_variation_the_model_ignores_is_a_plan_defect",
            ("M3.variation",),
            "PENDING (plan defect, when upstream ignores it too)",
        ),
    ),
    "lease_binding": _regression("lease_binding", "F2.reconfigure_queued"),
    "bulk_waits_unpublished": _regression("bulk_waits_unpublished", "F5.bulk_ready_first"),
    "retiring_resident": _regression("retiring_resident", "F5.retiring_residency"),
    "registry_convoy": _regression("registry_convoy", "F5.no_convoy"),
    "overdue_suppressed": _regression("overdue_suppressed", "F1.overdue"),
    "queued_counter_stuck": (Catch(f"{REGRESSION}::test_queued_counter_stuck_fails_timeouts", ("F1.timeouts",)),),
    "hang_requests": (
        Catch(f"{CAMPAIGN}::test_a_hung_server_ends_as_a_blocked_verdict", ("M2.starts",), "BLOCKED"),
        Catch(
            f"{RELIABILITY}::test_server_that_stops_answering_aborts_the_start_as_indeterminate[hang_requests]",
            ("M2.starts",),
            "BLOCKED",
        ),
    ),
    "drop_connection": (
        Catch(
            f"{RELIABILITY}::test_server_that_stops_answering_aborts_the_start_as_indeterminate[drop_connection]",
            ("M2.starts",),
            "BLOCKED",
        ),
    ),
    "garbage_replies": (
        Catch(
            f"{RELIABILITY}::test_malformed_replies_fail_and_never_pass[garbage_replies-reply is not JSON]",
            ("M2.exact",),
        ),
    ),
    "bad_base64": (
        Catch(f"{RELIABILITY}::test_malformed_replies_fail_and_never_pass[bad_base64-invalid base64]", ("M2.exact",)),
    ),
    "bad_wav": (
        Catch(f"{RELIABILITY}::test_malformed_replies_fail_and_never_pass[bad_wav-not a decodable WAV]", ("M2.exact",)),
    ),
    "never_ready": (Catch(f"{RELIABILITY}::test_never_ready_is_blocked_with_the_log_tail", ("M2.starts",), "BLOCKED"),),
    "startup_crash": (
        Catch(f"{RELIABILITY}::test_startup_crash_is_recorded_with_exit_status_and_log", ("M2.starts",)),
    ),
    "hang_shutdown": (
        Catch(
            f"{RELIABILITY}::test_server_hanging_in_shutdown_is_killed_and_blocks_the_start", ("M2.starts",), "BLOCKED"
        ),
    ),
    "stalled_io_wait": (
        Catch(
            "tests/framework/test_stalled_io.py::test_a_listener_waiting_on_stalled_io_fails_after_longer_graces",
            ("F4.shutdown",),
            "FAIL (its stalled_socket_io check)",
        ),
    ),
    "unload_keeps_loaded": (
        Catch(
            f"{CAMPAIGN}::test_an_unload_that_keeps_the_model_loaded_fails_the_unload_checks",
            ("M2.unload_reload", "M4.targeted_unload", "M4.all_unload"),
        ),
    ),
    "busy_unload_errors": (
        Catch(
            f"{CAMPAIGN}::test_a_bulk_unload_answering_an_error_after_the_work_fails_the_m4_unloads",
            ("M4.targeted_unload", "M4.all_unload", "M4.unload_during_first_load"),
        ),
    ),
    "batch_repeats_first": (
        Catch(f"{CAMPAIGN}::test_a_batch_answering_request_zero_twice_fails_m6_batch", ("M6.batch",)),
    ),
    "sub16_noise": (
        Catch(
            f"{CAMPAIGN}::test_pcm32_outputs_that_differ_below_16_bits_fail_even_with_a_tolerance",
            ("M1.cap1_parity", "M1.legacy_parity", "M2.exact"),
        ),
    ),
    "crash_legacy_after": (
        Catch(
            f"{CAMPAIGN}::test_a_reference_start_that_crashes_mid_collection_fails_its_parity", ("M1.legacy_parity",)
        ),
    ),
    "segv_unload_all_busy": (
        Catch(
            f"{CAMPAIGN}::test_a_recovery_start_that_crashes_fails_its_probe_and_blocks_the_rest", ("M4.all_unload",)
        ),
    ),
    "memory_refused_at": (
        Catch(
            f"{CAMPAIGN}::test_a_load_the_server_refuses_for_memory_is_blocked_never_failed",
            ("M2.exact",),
            "BLOCKED at the refused count, never FAIL",
        ),
    ),
}


# -- resolving a node id ------------------------------------------------------------------


@dataclass(frozen=True)
class Node:
    module: ModuleType
    function: Callable[..., Any]
    marks: tuple[Any, ...]  # module, function and (for a [param id]) parameter set marks
    params: tuple[Any, ...]  # the parameter values the node runs with (all sets if no id)


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _idval(value: Any, argname: str, index: int) -> str:
    # pytest's default ids for the values these tests use (its _idval, without escaping).
    if isinstance(value, str | int | float | bool | complex) or value is None:
        return str(value)
    name = getattr(value, "__name__", None)
    return name if isinstance(name, str) else f"{argname}{index}"


def _param_sets(mark: Any) -> list[tuple[str, tuple[Any, ...], tuple[Any, ...]]]:
    """(id, values, marks) of each parameter set of one parametrize mark."""
    argnames, argvalues = mark.args[0], mark.args[1]
    names = [n.strip() for n in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
    ids = mark.kwargs.get("ids")
    out = []
    for index, raw in enumerate(argvalues):
        if isinstance(raw, PARAM_SET):
            values, marks, given = tuple(raw.values), tuple(raw.marks), raw.id
        else:
            values, marks, given = ((raw,) if len(names) == 1 else tuple(raw)), (), None
        if given is None and isinstance(ids, list | tuple) and ids[index] is not None:
            given = str(ids[index])
        if given is None:
            given = "-".join(_idval(v, n, index) for v, n in zip(values, names, strict=True))
        out.append((given, values, marks))
    return out


def _elsewhere(function: str) -> list[str]:
    """Test modules that define `function` now (a moved test is named in the failure)."""
    pattern = re.compile(rf"^\s*(async\s+)?def {re.escape(function)}\(", re.M)
    return sorted(str(p.relative_to(TESTS.parent)) for p in TESTS.rglob("test_*.py") if pattern.search(p.read_text()))


def resolve(test: str) -> Node:
    path, _, rest = test.partition("::")
    name, _, param_id = rest.partition("[")
    param_id = param_id.removesuffix("]")
    file = TESTS.parent / path
    assert file.name.startswith("test_") and file.suffix == ".py", f"{test}: not a file pytest collects"
    assert file.is_file(), f"{test}: no such file; `def {name}` is now in {_elsewhere(name) or 'no test module'}"
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    function = getattr(module, name, None)
    assert name.startswith("test") and callable(function), (
        f"{test}: no test function {name} in {path}; it is now in {_elsewhere(name) or 'no test module'}"
    )
    marks = [*_as_list(getattr(module, "pytestmark", None)), *getattr(function, "pytestmark", [])]
    sets = [_param_sets(m) for m in marks if m.name == "parametrize"]
    # stacked parametrize marks: pytest joins their ids, the decorator nearest the function first
    combined = [
        ("-".join(c[0] for c in combo), tuple(v for c in combo for v in c[1]), tuple(m for c in combo for m in c[2]))
        for combo in itertools.product(*sets)
    ]
    if not param_id:
        return Node(module, function, tuple(marks), tuple(v for c in combined for v in c[1]) if sets else ())
    chosen = [c for c in combined if c[0] == param_id]
    assert sets, f"{test}: {name} is not parametrized, drop [{param_id}]"
    assert chosen, f"{test}: no parameter set [{param_id}]; its ids are {[c[0] for c in combined]}"
    return Node(module, function, (*marks, *chosen[0][2]), chosen[0][1])


def _skipped(mark: Any) -> bool:
    # skipif with a condition true here skips it on machines like this one; a string
    # condition is evaluated by pytest later and is taken as conditional.
    return mark.name == "skipif" and any(not isinstance(c, str) and bool(c) for c in mark.args)


def ci_problems(node: Node) -> list[str]:
    names = {m.name for m in node.marks}
    out = [f"marked {n}" for n in sorted(names & NOT_IN_CI)]
    out += [f"skipif {m.args} {m.kwargs.get('reason', '')}".strip() for m in node.marks if _skipped(m)]
    return out


def source_text(node: Node, via: str | None) -> str:
    """The function's source, its parameter values, and the helper that asserts for it."""
    parts = [inspect.getsource(node.function), repr(node.params)]
    if via is not None:
        helper = getattr(node.module, via, None)
        assert callable(helper), f"{node.module.__name__} has no helper {via}"
        parts.append(inspect.getsource(helper))
    return "\n".join(parts)


def needles(fault: str, catch: Catch) -> list[str]:
    return [fault, *catch.assertions, *dict.fromkeys(STATUS_WORD.findall(catch.expect))]


def catches() -> Iterator[tuple[str, str, Catch]]:
    """(pytest id, fault, catch) for every test named in the table."""
    for fault, entry in CAUGHT_BY.items():
        if isinstance(entry, tuple):
            yield from ((f"{fault}-{i}", fault, c) for i, c in enumerate(entry))


# -- the generated list -------------------------------------------------------------------


def _ci_run(test: str) -> str:
    try:
        node = resolve(test)
    except (AssertionError, ImportError):
        return "NOT FOUND"  # named by the failing checks above; the list is still written
    return "slow" if "slow" in {m.name for m in node.marks} else "default"


def render() -> str:
    lines = [
        "# Stand-in faults and the CI tests that catch them",
        "",
        "Generated from `CAUGHT_BY` in tests/layout/test_fault_coverage.py, which checks that every fault in",
        "`parval/standin/faults.py` has an entry and that each test exists, runs in CI and names the fault and",
        f"the assertions. Do not edit by hand; regenerate with `{REGENERATE}`.",
        "",
        "A behaviour variant of a correct server is caught by the correct verdict with it on (no false FAIL).",
        "CI runs `python -m pytest` (default) and then `python -m pytest -m slow` (slow).",
        "",
        "| fault | assertion(s) | test |",
        "|---|---|---|",
    ]
    # Listed in the stand-in's order, so a fault added without an entry changes the list too.
    stale = sorted(set(CAUGHT_BY) - set(FAULT_DEFAULTS))
    for fault in [*FAULT_DEFAULTS, *stale]:
        entry = CAUGHT_BY.get(fault)
        label = f"`{fault}` (variant)" if fault in VARIANTS else f"`{fault}`"
        if entry is None:
            lines.append(f"| {label} | **MISSING**: no entry in `CAUGHT_BY` | none |")
            continue
        if fault in stale:
            label += " (no longer a stand-in fault)"
        if isinstance(entry, Gap):
            lines.append(f"| {label} | **GAP**: {entry.proposal} | none |")
            continue
        for c in entry:
            ids = ", ".join(f"`{a}`" for a in c.assertions)
            lines.append(f"| {label} | {ids}: {c.expect} | `{c.test}` ({_ci_run(c.test)}) |")
    return "\n".join(lines) + "\n"


# -- tests ---------------------------------------------------------------------------------


def test_every_fault_has_an_entry() -> None:
    missing = [f for f in FAULT_DEFAULTS if f not in CAUGHT_BY]
    assert not missing, (
        f"stand-in faults with no entry in CAUGHT_BY ({__file__}): {missing}. Add, for each, the test that "
        "runs a campaign or `parval framework` with it switched on and asserts its assertion's status, "
        "e.g. CAUGHT_BY['NAME'] = (Catch('tests/campaign/test_faults.py::test_...', ('M2.exact',)),), "
        f"or Gap('...') if none exists yet; then run `{REGENERATE}`"
    )
    stale = sorted(set(CAUGHT_BY) - set(FAULT_DEFAULTS))
    assert not stale, f"CAUGHT_BY names faults the stand-in no longer has: {stale}"
    assert set(VARIANTS) <= set(FAULT_DEFAULTS), f"variants the stand-in no longer has: {VARIANTS}"


def test_no_fault_is_left_uncaught() -> None:
    gaps = {f: e.proposal for f, e in CAUGHT_BY.items() if isinstance(e, Gap) or not e}
    assert not gaps, f"faults no CI test catches end to end: {gaps}"


@pytest.mark.parametrize(("fault", "catch"), [pytest.param(f, c, id=i) for i, f, c in catches()])
def test_each_named_test_runs_in_ci_and_names_what_it_catches(fault: str, catch: Catch) -> None:
    node = resolve(catch.test)
    assert not ci_problems(node), f"{catch.test} does not run in CI: {ci_problems(node)}"
    text = source_text(node, catch.via)
    absent = [n for n in needles(fault, catch) if n not in text]
    assert not absent, f"{catch.test} (for {fault}) no longer mentions {absent}: update CAUGHT_BY and `{REGENERATE}`"


def test_faults_md_is_generated_from_the_table() -> None:
    assert DOC.is_file() and DOC.read_text() == render(), f"tests/FAULTS.md is out of date; run `{REGENERATE}`"


if __name__ == "__main__":
    sys.stdout.write(render())
