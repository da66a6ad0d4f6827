"""What every model-gate judge reads, pinned: the plan's comparison rules as JudgeContext
applies them, the reference table's gaps and relabelled outputs, set-aside attempts in a
comparison's scope, the reproduction line, and each verdict exact_result gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from parval.gates.exactness import Tally
from parval.gates.judge_context import JudgeContext, exact_result, run_judges
from parval.gates.serial import SerialVerdict
from parval.rundir.event_index import build_records
from parval.status import Result, Status
from tests.gates import cmp_events, m_events
from tests.gates.cmp_events import SAMPLES, tts_reply

TOLERANCE = {"max_abs_sample_diff": 2, "justification": "dither"}
ALT = {"name": "alt", "changes": "seed", "kind": "seed", "request": {"text": "hello", "seed": 2}}
ALT2 = {"name": "alt2", "changes": "seed", "kind": "seed", "request": {"text": "hello", "seed": 3}}
PHASES = ("ref_cold", "ref_warm", "ref_warm2")
MEASURED = SerialVerdict(Status.PASS, "identical", True, False, False, 3)
WITHIN = SerialVerdict(Status.PASS, "within", True, True, True, 3)
UNMEASURED = SerialVerdict(Status.PENDING, "not measured", False, False, False)


def context(plan: dict[str, Any], events: list[dict[str, Any]] | None = None) -> JudgeContext:
    return JudgeContext(build_records(events or []), plan, {}, None, "plans/p.yaml")


def baseline_a(ev: m_events.Events, names: tuple[str, ...] = ("base",), run: str = "ref-baseline-a") -> None:
    ev.start(run, role="reference", count=1, exe_role="baseline")
    for name in names:
        for phase in PHASES:
            ev.request(run, phase, 0, name, m_events.tts_body(1))
    ev.end(run)


# -- the plan's rules ---------------------------------------------------------------------


def test_the_context_reads_the_plans_comparison_rules() -> None:
    p = m_events.plan(counts=[2, 1], variations=[ALT])
    p["starts_per_count"] = 5
    p["compare"] = {
        "volatile_fields": [
            {"path": "timing.wall_ms", "justification": "wall time"},
            {"path": "audio", "justification": "wrongly declared"},
            {"path": "text.words", "justification": "wrongly declared"},
        ],
        "tolerance": TOLERANCE,
    }
    p["model"]["cache_sensitive"] = True
    ctx = context(p)
    assert ctx.declared_tolerance == 2
    assert ctx.volatile == ["timing.wall_ms", "audio", "text.words"]
    assert ctx.content_excluded == ["audio", "text.words"]
    assert ctx.required_starts == 5
    assert sorted(ctx.schedules) == [1, 2]
    assert ctx.counts == [1, 2]
    assert ctx.request_names == ["base", "alt"]
    assert ctx.cache_sensitive is True
    assert ctx.plan_path == "plans/p.yaml" and ctx.run_dir is None and ctx.manifest == {}


def test_a_plain_plan_declares_no_tolerance_and_needs_three_starts() -> None:
    ctx = context(m_events.plan())
    assert ctx.declared_tolerance is None and ctx.tolerance is None
    assert ctx.content_excluded == []
    assert ctx.required_starts == 3
    assert ctx.cache_sensitive is False


@pytest.mark.parametrize(
    ("declared", "serial", "applied"),
    [(None, WITHIN, None), (TOLERANCE, WITHIN, 2), (TOLERANCE, MEASURED, None), (TOLERANCE, UNMEASURED, None)],
)
def test_the_declared_tolerance_applies_only_where_serial_repeats_varied_within_it(
    declared: dict[str, Any] | None, serial: SerialVerdict, applied: int | None
) -> None:
    p = m_events.plan()
    if declared:
        p["compare"]["tolerance"] = declared
    ctx = context(p)
    ctx.serial = serial
    assert ctx.tolerance == applied


# -- serial repeats ---------------------------------------------------------------------


def test_serial_repeats_are_measured_on_the_plans_requests(tmp_path: Path) -> None:
    ev = m_events.Events(tmp_path)
    for run in ("ref-baseline-a", "ref-baseline-b"):
        baseline_a(ev, ("other",), run)
    assert ev.context(m_events.plan()).serial.reason == (
        "ref-baseline-a recorded no base/ref_cold, base/ref_warm, base/ref_warm2: serial repeat variation not "
        "measured for every request"
    )
    # a plan that names no requests: each baseline start's own requests are compared
    unnamed = {k: v for k, v in m_events.plan().items() if k != "requests"}
    serial = ev.context(unnamed).serial
    assert (serial.status, serial.reason) == (
        Status.PASS,
        "3 outputs identical across two fresh starts and warm repeats",
    )


def test_serial_repeats_read_the_raw_replies_with_the_declared_rules(tmp_path: Path) -> None:
    """Repeats 1 LSB apart (their timing differs too: volatile) agree within a declared
    tolerance of 2, read from the raw replies: the tolerance then applies."""
    ev = cmp_events.Events(tmp_path)
    ev.baseline({"ref_cold": [tts_reply(), tts_reply(SAMPLES + 1, wall_ms=5.0)]})
    ctx = ev.context(tolerance=TOLERANCE)
    assert ctx.serial.status is Status.PASS and ctx.serial.tolerance_applies
    assert ctx.tolerance == 2
    assert ctx.serial is ctx.serial


# -- the reference table ------------------------------------------------------------------


def test_a_whole_reference_start_leaves_no_gap(tmp_path: Path) -> None:
    ev = m_events.Events(tmp_path)
    baseline_a(ev, ("base", "alt"))
    assert ev.context(m_events.plan(variations=[ALT])).reference_gap is None


def test_no_reference_start_is_a_gap(tmp_path: Path) -> None:
    ev = m_events.Events(tmp_path)
    baseline_a(ev, run="ref-baseline-b")
    gap = ev.context(m_events.plan()).reference_gap
    assert gap == "the upstream reference start ref-baseline-a was not recorded"


@pytest.mark.parametrize(
    ("stop", "outcome"),
    [
        (
            {"kind": "server_crash", "where": "ref_warm", "exit_code": -11, "signal": "SIGSEGV"},
            "server crashed during ref_warm (exit status -11, SIGSEGV)",
        ),
        ({"kind": "start_aborted", "unit": "ref-baseline-a", "reason": "hung"}, "stopped: hung"),
    ],
)
def test_an_incomplete_reference_start_is_a_gap(tmp_path: Path, stop: dict[str, Any], outcome: str) -> None:
    ev = m_events.Events(tmp_path)
    baseline_a(ev)
    end = ev.events.pop()
    ev.append(**{"run": "ref-baseline-a", "attempt": 0, **stop})
    ev.events.append(end)
    gap = ev.context(m_events.plan()).reference_gap
    assert gap == f"the upstream reference start ref-baseline-a did not complete ({outcome})"


def test_a_reference_start_lacking_valid_outputs_names_six(tmp_path: Path) -> None:
    ev = m_events.Events(tmp_path)
    ev.start("ref-baseline-a", role="reference", count=1)
    ev.request("ref-baseline-a", "ref_cold", 0, "alt", m_events.tts_body(1))
    ev.request("ref-baseline-a", "ref_warm", 0, "alt", m_events.tts_body(1))
    ev.request("ref-baseline-a", "ref_warm2", 0, "alt", None)  # no valid output
    ev.end("ref-baseline-a")
    gap = ev.context(m_events.plan(variations=[ALT, ALT2])).reference_gap
    assert gap == (
        "the upstream reference start ref-baseline-a recorded no valid base/ref_cold, base/ref_warm, "
        "base/ref_warm2, alt/ref_warm2, alt2/ref_cold, alt2/ref_warm"
    )


@pytest.mark.parametrize(
    ("cache_sensitive", "labels", "gap"),
    [
        (False, {"ref_warm2": "base|cold"}, "base/ref_warm2 as base|cold, not base|warm"),
        (
            True,
            {"ref_cold": "hist:base", "ref_warm": "hist:base>base", "ref_warm2": "hist:base>base"},
            "base/ref_warm2 as hist:base>base, not hist:base>base>base",
        ),
        (
            False,
            {"ref_cold": "base|warm", "ref_warm": "base|cold", "ref_warm2": "base|cold"},
            "base/ref_cold as base|warm, not base|cold, base/ref_warm as base|cold, not base|warm, "
            "base/ref_warm2 as base|cold, not base|warm",
        ),
    ],
)
def test_a_reference_start_labelling_a_reference_wrongly_is_a_gap(
    tmp_path: Path, cache_sensitive: bool, labels: dict[str, str], gap: str
) -> None:
    ev = m_events.Events(tmp_path)
    ev.start("ref-baseline-a", role="reference", count=1)
    for phase in PHASES:
        ev.request("ref-baseline-a", phase, 0, "base", m_events.tts_body(1), ref=labels.get(phase))
    ev.end("ref-baseline-a")
    p = m_events.plan()
    p["model"]["cache_sensitive"] = cache_sensitive
    assert ev.context(p).reference_gap == f"the upstream reference start ref-baseline-a labels {gap}"


def test_a_reference_gap_names_the_first_four_wrong_labels(tmp_path: Path) -> None:
    ev = m_events.Events(tmp_path)
    ev.start("ref-baseline-a", role="reference", count=1)
    for name in ("base", "alt"):
        for phase in PHASES:
            ev.request("ref-baseline-a", phase, 0, name, m_events.tts_body(1), ref=f"{name}|x")
    ev.end("ref-baseline-a")
    gap = ev.context(m_events.plan(variations=[ALT])).reference_gap
    assert gap == (
        "the upstream reference start ref-baseline-a labels base/ref_cold as base|x, not base|cold, "
        "base/ref_warm as base|x, not base|warm, base/ref_warm2 as base|x, not base|warm, "
        "alt/ref_cold as alt|x, not alt|cold"
    )


def test_relabelled_outputs_are_recorded_with_the_reference_their_history_calls_for(tmp_path: Path) -> None:
    ev = m_events.Events(tmp_path)
    baseline_a(ev)
    ev.start("count2-s1", count=2)
    ev.request("count2-s1", "cold_wave", 0, "base", m_events.tts_body(1), ref="base|cold")
    ev.request("count2-s1", "warm_wave", 3, "base", m_events.tts_body(1), ref="base|cold", history=["base"])
    ev.request("count2-s1", "reload_wave", 1, "base", m_events.tts_body(1), ref="base|warm")
    ev.request("count2-s1", "unload_targeted_later", 0, "base", m_events.tts_body(1), ref="base|warm")
    ev.end("count2-s1")
    # the baseline build's memory start is compared with nothing: its labels decide nothing
    ev.start("membase-2", count=2, exe_role="baseline")
    ev.request("membase-2", "warm_wave", 0, "base", m_events.tts_body(1), ref="base|cold", history=["base"])
    ev.end("membase-2")
    assert ev.context(m_events.plan()).relabelled == [
        {"run": "count2-s1", "phase": "warm_wave", "wave": 3, "req": "base", "label": "base|cold", "ref": "base|warm"},
        {
            "run": "count2-s1",
            "phase": "reload_wave",
            "wave": 1,
            "req": "base",
            "label": "base|warm",
            "ref": "base|cold",
        },
    ]


def test_cache_sensitive_relabelled_outputs_name_the_history_reference(tmp_path: Path) -> None:
    ev = m_events.Events(tmp_path)
    ev.start("count2-s1", count=2)
    ev.request("count2-s1", "warm_wave", 0, "base", m_events.tts_body(1), ref="base|warm", history=["alt"])
    ev.end("count2-s1")
    p = m_events.plan()
    p["model"]["cache_sensitive"] = True
    assert ev.context(p).relabelled == [
        {
            "run": "count2-s1",
            "phase": "warm_wave",
            "wave": 0,
            "req": "base",
            "label": "base|warm",
            "ref": "hist:alt>base",
        }
    ]


# -- judging requests, set-aside attempts ---------------------------------------------------

OTHER = (SAMPLES // 3).astype("int16")


def set_aside_world(tmp_path: Path) -> cmp_events.Events:
    """count2-s1 stands (exact, cold); abandoned attempts of it mismatch in its cold wave,
    its warm wave and its reversed cold wave; an abandoned soak start at count 2 and an
    abandoned reference start of the candidate mismatch too, and the first crashed."""
    ev = cmp_events.Events(tmp_path)
    ev.baseline({"ref_cold": [tts_reply(), tts_reply()]})
    for phase, extra in (("cold_wave", {}), ("warm_wave", {}), ("cold_wave", {"reversed": True})):
        a = ev.start("count2-s1")
        ref = "base|cold" if phase == "cold_wave" else "base|warm"
        ev.request(
            "count2-s1", a, phase, tts_reply(OTHER), ref=ref, history=[] if ref.endswith("cold") else ["base"], **extra
        )
        if phase == "cold_wave" and not extra:
            ev.crash("count2-s1", a)
        ev.abandon("count2-s1", a)
    s = ev.start("soak2-a", role="soak", count=2)
    ev.request("soak2-a", s, "cold_wave", tts_reply(OTHER))
    ev.abandon("soak2-a", s)
    r = ev.start("ref-candidate-legacy", role="reference", count=1)
    ev.request("ref-candidate-legacy", r, "ref_cold", tts_reply(OTHER))
    ev.abandon("ref-candidate-legacy", r)
    b = ev.start("count2-s1")
    ev.request("count2-s1", b, "cold_wave", tts_reply(), reversed=False)  # as if unrecorded
    ev.end("count2-s1", b)
    return ev


def where(ms: object) -> list[tuple[object, ...]]:
    assert isinstance(ms, list)
    return [(m["run"], m["phase"], m["set_aside"]) for m in ms]


def test_a_comparison_counts_the_failures_of_set_aside_attempts_in_its_scope(tmp_path: Path) -> None:
    ctx = set_aside_world(tmp_path).context()
    t = ctx.judge(ctx.rec.requests("count2-s1"))
    assert (t.compared, t.exact) == (1, 1)
    assert where(t.mismatches) == [("count2-s1", "cold_wave", "abandoned")]
    assert "overlapped" not in t.mismatches[0]


def test_a_comparison_with_overlap_counts_set_aside_outputs_in_its_bound(tmp_path: Path) -> None:
    ctx = set_aside_world(tmp_path).context()
    t = ctx.judge(ctx.rec.requests("count2-s1"), overlap=True)
    assert where(t.mismatches) == [("count2-s1", "cold_wave", "abandoned")]
    assert t.mismatches[0]["overlapped"] is False


def test_a_comparison_without_set_aside_attempts_in_scope_stands_alone(tmp_path: Path) -> None:
    ev = cmp_events.Events(tmp_path)
    ev.baseline({"ref_cold": [tts_reply(), tts_reply()]})
    ctx = ev.context()
    t = ctx.judge(ctx.rec.requests("ref-baseline-b"))
    assert (t.compared, t.exact, t.mismatches) == (3, 3, [])


@pytest.mark.parametrize(
    ("count", "mismatches", "crashes", "overlap"),
    [
        (
            2,
            [
                ("count2-s1", "cold_wave"),
                ("count2-s1", "warm_wave"),
                ("count2-s1", "cold_wave"),
                ("soak2-a", "cold_wave"),
            ],
            1,
            True,
        ),
        (None, [("ref-candidate-legacy", "ref_cold")], 0, False),
        (3, [], 0, True),
        (1, [], 0, True),  # a reference start runs at one slot, but is no count's start
    ],
)
def test_the_set_aside_scope_of_a_count(
    tmp_path: Path, count: int | None, mismatches: list[tuple[str, str]], crashes: int, overlap: bool
) -> None:
    ctx = set_aside_world(tmp_path).context()
    t, found = ctx.set_aside_scope(count)
    assert [(m["run"], m["phase"]) for m in t.mismatches] == mismatches
    assert all(m["set_aside"] == "abandoned" for m in t.mismatches)
    assert all(("overlapped" in m) is overlap for m in t.mismatches)
    assert len(found) == crashes
    assert [(c["run"], c["set_aside"]) for c in found] == [("count2-s1", "abandoned")] * crashes
    assert (t.compared, t.exact) == (0, 0)


def test_set_aside_requests_without_a_reference_or_expecting_an_error_are_not_judged(tmp_path: Path) -> None:
    ev = cmp_events.Events(tmp_path)
    ev.baseline({"ref_cold": [tts_reply(), tts_reply()]})
    a = ev.start("count2-s1")
    ev.request("count2-s1", a, "cold_wave", tts_reply(OTHER), ref=None)
    ev.request("count2-s1", a, "cold_wave", None, status=400, expect_error=True)
    ev.request("count2-s1", a, "cold_wave", None, status=500)
    ev.request("count2-s1", a, "cold_wave", tts_reply(OTHER), wave=1)
    ev.abandon("count2-s1", a)
    ctx = ev.context()
    aside = ctx.rec.set_aside_requests()
    t = ctx.judge_set_aside(aside)
    assert [(m["wave"], m["set_aside"]) for m in t.mismatches] == [(1, "abandoned")]
    assert "overlapped" not in t.mismatches[0]  # no bound asked for
    assert t.malformed == []
    assert [(e["status"], e["set_aside"]) for e in t.errors] == [(500, "abandoned")]


def test_requests_are_judged_with_the_plans_tolerance_and_volatile_fields(tmp_path: Path) -> None:
    """Serial repeats 1 LSB apart: a candidate 2 LSB off (timing differing) is within the
    applied tolerance; one 3 LSB off is a mismatch checked against the declared one."""
    ev = cmp_events.Events(tmp_path)
    ev.baseline({"ref_cold": [tts_reply(), tts_reply(SAMPLES + 1)]})
    a = ev.start("count2-s1")
    ev.request("count2-s1", a, "cold_wave", tts_reply(SAMPLES + 2, wall_ms=9.0))
    ev.request("count2-s1", a, "cold_wave", tts_reply(SAMPLES + 3))
    ev.end("count2-s1", a)
    ctx = ev.context(tolerance=TOLERANCE)
    t = ctx.judge(ctx.rec.requests("count2-s1"))
    assert (t.compared, t.exact, t.tolerated) == (2, 0, 1)
    assert [m["max_abs_sample_diff"] for m in t.mismatches] == [3]


def test_a_declared_tolerance_that_does_not_apply_still_measures_a_mismatch(tmp_path: Path) -> None:
    ev = cmp_events.Events(tmp_path)
    ev.baseline({"ref_cold": [tts_reply(), tts_reply()]})
    a = ev.start("count2-s1")
    ev.request("count2-s1", a, "cold_wave", tts_reply(SAMPLES + 1))
    ev.end("count2-s1", a)
    ctx = ev.context(tolerance=TOLERANCE)
    t = ctx.judge(ctx.rec.requests("count2-s1"))
    assert t.tolerated == 0
    assert t.mismatches[0]["max_abs_sample_diff"] == 1 and t.mismatches[0]["within_declared_tolerance"] is True


def test_cache_sensitive_requests_are_compared_with_their_history_reference(tmp_path: Path) -> None:
    ev = cmp_events.Events(tmp_path)
    a = ev.start("ref-baseline-a", role="reference", count=1)
    for phase, ref in (("ref_cold", "hist:base"), ("ref_warm", "hist:base>base"), ("ref_warm2", "hist:base>base>base")):
        ev.request("ref-baseline-a", a, phase, tts_reply(), ref=ref)
    ev.end("ref-baseline-a", a)
    b = ev.start("count2-s1")
    ev.request("count2-s1", b, "warm_wave", tts_reply(), ref="hist:base>base", history=["base"])
    ev.end("count2-s1", b)
    ctx = JudgeContext(
        ev.records(), {**cmp_events.plan(), "model": {"id": "m", "cache_sensitive": True}}, {}, tmp_path, "p"
    )
    t = ctx.judge(ctx.rec.requests("count2-s1"))
    assert (t.compared, t.exact, t.relabelled) == (1, 1, [])


# -- the reproduction line ------------------------------------------------------------------


def test_the_reproduction_names_the_server_command_of_a_start(tmp_path: Path) -> None:
    ev = m_events.Events(tmp_path)
    ev.start("count2-s1", count=2)
    ev.append("server_ready", run="count2-s1", attempt=0, argv=["./srv", "--slots", 2], warning_marker=False)
    ev.append("server_ready", run="count2-s1", attempt=0, argv=["./second"], warning_marker=False)
    ev.end("count2-s1")
    ev.start("count1-s1", count=1)
    ev.end("count1-s1")
    ctx = ev.context(m_events.plan())
    ready = ctx.ready("count2-s1")
    assert ready is not None and ready["argv"] == ["./srv", "--slots", 2]
    assert ctx.ready("count1-s1") is None and ctx.ready("nowhere") is None
    assert ctx.argv("count2-s1") == "./srv --slots 2"
    assert ctx.argv("count1-s1") == ""
    assert ctx.repro() == "parval run plan.yaml"
    assert ctx.repro("count2-s1") == "parval run plan.yaml   # server: ./srv --slots 2"
    assert ctx.repro("count1-s1") == "parval run plan.yaml"
    assert ctx.repro("count2-s1", "then inspect") == "parval run plan.yaml   # server: ./srv --slots 2; then inspect"
    assert ctx.repro(extra="x") == "parval run plan.yaml; x"


def test_run_judges_makes_each_result_reproducible_from_its_start(tmp_path: Path) -> None:
    ev = m_events.Events(tmp_path)
    ev.start("count2-s1", count=2)
    ev.append("server_ready", run="count2-s1", attempt=0, argv=["./srv"], warning_marker=False)
    ev.end("count2-s1")
    ctx = ev.context(m_events.plan())
    judges = {
        "A": lambda c: Result("A", Status.PASS, "a", reproduction="old"),
        "B": lambda c: Result("B", Status.FAIL, "b"),
    }
    out = run_judges(ctx, judges, "count2-s1")
    assert [(r.id, r.reproduction) for r in out] == [
        ("A", "parval run plan.yaml   # server: ./srv"),
        ("B", "parval run plan.yaml   # server: ./srv"),
    ]
    mapped = run_judges(ctx, judges, lambda id_: "count2-s1" if id_ == "B" else "none")
    assert [r.reproduction for r in mapped] == ["parval run plan.yaml", "parval run plan.yaml   # server: ./srv"]


# -- exact_result --------------------------------------------------------------------------


@pytest.fixture
def clean_ctx(tmp_path: Path) -> JudgeContext:
    """A run whose reference table is whole and whose serial repeats were identical."""
    ev = cmp_events.Events(tmp_path)
    ev.baseline({"ref_cold": [tts_reply(), tts_reply()]})
    ev.start("count2-s1")
    ctx = ev.context(tolerance=TOLERANCE)
    ctx.serial = MEASURED
    return ctx


MISMATCH = {"run": "count2-s1", "req": "base", "max_abs_sample_diff": 9}
WITHIN_DECLARED = {"run": "count2-s1", "req": "base", "max_abs_sample_diff": 1, "within_declared_tolerance": True}
ERROR = {"run": "count2-s1", "status": 500}
MALFORMED = {"run": "count2-s1", "problem": "not JSON"}


def verdict(ctx: JudgeContext, tally: Tally, **kw: Any) -> Result:
    r = exact_result("M2.exact", tally, "count 2", ctx, "count2-s1", 2, **kw)
    # whatever the verdict, it names its assertion and carries the comparison's counts
    assert r.id == "M2.exact"
    assert (r.evidence["compared"], r.evidence["exact"]) == (tally.compared, tally.exact)
    return r


@pytest.mark.parametrize(
    ("tally", "reason", "violation"),
    [
        (Tally(compared=1, errors=[ERROR]), "count 2: 1 request error(s)", [ERROR]),
        (Tally(compared=1, malformed=[MALFORMED]), "count 2: 1 malformed repl(ies)", [MALFORMED]),
        (
            Tally(compared=2, errors=[ERROR], malformed=[MALFORMED], mismatches=[MISMATCH]),
            "count 2: 1 mismatch(es), 1 request error(s), 1 malformed repl(ies)",
            [ERROR, MALFORMED],
        ),
    ],
)
def test_request_errors_and_malformed_replies_fail_as_requests(
    clean_ctx: JudgeContext, tally: Tally, reason: str, violation: list[object]
) -> None:
    r = verdict(clean_ctx, tally)
    assert (r.id, r.status, r.reason) == ("M2.exact", Status.FAIL, reason)
    assert r.evidence["violation"] == violation and r.evidence["failure_kind"] == "request"
    assert r.evidence["compared"] == tally.compared
    assert (r.reproduction, r.count) == ("parval run plan.yaml", 2)


def test_a_mismatch_fails_as_output(clean_ctx: JudgeContext) -> None:
    r = verdict(clean_ctx, Tally(compared=2, exact=1, mismatches=[MISMATCH, WITHIN_DECLARED]))
    assert (r.status, r.reason) == (Status.FAIL, "count 2: 2 mismatch(es)")
    assert r.evidence["violation"] == [MISMATCH, WITHIN_DECLARED] and r.evidence["failure_kind"] == "output"


def test_a_mismatch_within_an_unapplied_tolerance_still_fails(clean_ctx: JudgeContext) -> None:
    r = verdict(clean_ctx, Tally(compared=1, mismatches=[WITHIN_DECLARED]))
    assert (r.status, r.reason) == (
        Status.FAIL,
        "count 2: 1 mismatch(es) (within the declared tolerance, which does not apply: serial repeats of the "
        "baseline were byte-identical, and deterministic output must be byte-identical)",
    )
    assert r.evidence["failure_kind"] == "output"


def test_a_mismatch_within_the_tolerance_waits_for_serial_variation(clean_ctx: JudgeContext) -> None:
    clean_ctx.serial = UNMEASURED
    r = verdict(clean_ctx, Tally(compared=3, exact=1, mismatches=[WITHIN_DECLARED, WITHIN_DECLARED]))
    assert (r.status, r.reason) == (
        Status.PENDING,
        "count 2: 2 output(s) differ from their reference within the declared tolerance (2 LSB), which applies "
        "only once serial repeats are measured to vary, and serial variation was not measured",
    )
    assert r.evidence["mismatch_count"] == 2


def test_an_unmeasured_serial_variation_does_not_excuse_a_real_mismatch(clean_ctx: JudgeContext) -> None:
    clean_ctx.serial = UNMEASURED
    r = verdict(clean_ctx, Tally(compared=2, mismatches=[WITHIN_DECLARED, MISMATCH]))
    assert (r.status, r.reason) == (Status.FAIL, "count 2: 2 mismatch(es)")


def test_a_refusal_for_memory_is_blocked(clean_ctx: JudgeContext) -> None:
    refused = {"run": "count2-s1", "status": 503}
    r = verdict(clean_ctx, Tally(compared=1, exact=1, resource=[refused], indeterminate=[{"run": "x"}]))
    assert r.status is Status.BLOCKED
    assert r.reason == (
        "count 2: 1 indeterminate outcome(s), 1 request(s) refused for memory (503 insufficient_memory): a VRAM "
        "failure is blocked evidence, never a reason to lower quality settings"
    )
    assert r.evidence["refused_for_memory"] == [refused]


@pytest.mark.parametrize(
    ("tally", "reason"),
    [
        (Tally(compared=1, exact=1, indeterminate=[{"run": "x"}]), "count 2: 1 indeterminate outcome(s)"),
        (
            Tally(compared=1, exact=1, no_reference=[{"run": "x", "history": ["base"]}]),
            "count 2: 1 output(s) without a same-history reference",
        ),
        (Tally(), "count 2: nothing compared"),
        (
            Tally(compared=1, exact=1, relabelled=[{"run": "r", "phase": "p", "req": "q", "label": "l", "ref": "f"}]),
            "count 2: 1 output(s) whose recorded reference label disagrees with the reference their history calls "
            "for (first: r p q labelled l, ran as f); compared with the derived reference, not shown against the "
            "labelled one",
        ),
    ],
)
def test_what_was_not_compared_leaves_a_comparison_pending(clean_ctx: JudgeContext, tally: Tally, reason: str) -> None:
    r = verdict(clean_ctx, tally)
    assert (r.status, r.reason) == (Status.PENDING, reason)
    assert (r.reproduction, r.count) == ("parval run plan.yaml", 2)


def test_a_plan_excluding_output_content_never_passes(tmp_path: Path) -> None:
    ev = cmp_events.Events(tmp_path)
    ev.baseline({"ref_cold": [tts_reply(), tts_reply()]})
    ctx = JudgeContext(
        ev.records(),
        cmp_events.plan(volatile_fields=[{"path": "audio"}, {"path": "timing.wall_ms"}, {"path": "text.words"}]),
        {},
        tmp_path,
        "plan.yaml",
    )
    r = verdict(ctx, Tally(compared=1, exact=1))
    assert (r.status, r.reason) == (
        Status.PENDING,
        "count 2: parity unverified: the plan declares output content volatile (audio, text.words; see Q2): content "
        "is never "
        "excluded from comparison",
    )


def test_a_comparison_against_an_incomplete_reference_table_is_pending(tmp_path: Path) -> None:
    ev = cmp_events.Events(tmp_path)
    ev.start("ref-baseline-a", role="reference", count=1)
    r = verdict(ev.context(), Tally(compared=1, exact=1))
    assert (r.status, r.reason) == (
        Status.PENDING,
        "count 2: references incomplete: the upstream reference start ref-baseline-a was not recorded",
    )


def test_a_clean_comparison_passes_on_what_it_compared(clean_ctx: JudgeContext) -> None:
    r = verdict(clean_ctx, Tally(compared=4, exact=4))
    assert (r.status, r.reason) == (Status.PASS, "count 2: 4/4 exact")
    assert r.evidence["rests_on"] == {"compared outputs": 4}
    assert "bound" not in r.evidence
    assert (r.reproduction, r.count) == ("parval run plan.yaml", 2)


def test_outputs_within_an_applied_tolerance_pass_saying_so(clean_ctx: JudgeContext) -> None:
    clean_ctx.serial = WITHIN
    r = verdict(clean_ctx, Tally(compared=4, exact=3, tolerated=1))
    assert (r.status, r.reason) == (
        Status.PASS,
        "count 2: 3 of 4 exact, 1 within the declared tolerance (2 LSB; serial repeats varied within it)",
    )
    assert r.evidence["rests_on"] == {"compared outputs": 4}


@pytest.mark.parametrize(
    ("tally", "status", "suffix"),
    [
        (Tally(compared=4, exact=4, overlapped=4), Status.PASS, "; 4 overlapped output(s), 0 differed"),
        (
            Tally(compared=4, exact=3, mismatches=[MISMATCH], overlapped=4, overlapped_differed=1),
            Status.FAIL,
            "; 4 overlapped output(s), 1 differed",
        ),
        (Tally(), Status.PENDING, ""),
    ],
)
def test_a_bounded_verdict_states_its_bound_beside_a_pass_or_fail(
    clean_ctx: JudgeContext, tally: Tally, status: Status, suffix: str
) -> None:
    r = verdict(clean_ctx, tally, bounded=True)
    assert r.status is status
    assert r.evidence["bound"] == tally.bound()
    plain = verdict(clean_ctx, tally).reason
    if suffix:
        assert r.reason.startswith(plain + suffix + ": mismatch rate < ")
    else:
        assert r.reason == plain
    assert (r.reproduction, r.count) == ("parval run plan.yaml", 2)


def test_a_verdict_without_a_start_or_count_reproduces_the_run(clean_ctx: JudgeContext) -> None:
    r = exact_result("M1.legacy_parity", Tally(compared=1, exact=1), "legacy", clean_ctx)
    assert (r.id, r.reproduction, r.count) == ("M1.legacy_parity", "parval run plan.yaml", None)
