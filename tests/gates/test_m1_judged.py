"""M1 judged exactly: the manifest's gaps by name, serial repeats as judged, each branch of
legacy and capacity-one parity, and cold/warm references kept apart, with their reasons."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from parval.gates.judge_context import JudgeContext
from parval.gates.m1_baseline import (
    ENTRIES,
    MANIFEST_ITEMS,
    judge_m1,
    m1_cap1_parity,
    m1_cold_warm_refs,
    m1_legacy_parity,
    m1_manifest,
    m1_serial_repeat,
    manifest_gaps,
)
from parval.gates.serial import SerialVerdict
from parval.procedure.names import REFERENCE_RUNS
from parval.rundir.event_index import build_records, derived_ref
from parval.status import Result, Status
from tests.gates.m_events import Events, full_start, plan, tts_body

PHASES = ("ref_cold", "ref_warm", "ref_warm2")
LEGACY_WHAT = "ref-candidate-legacy vs upstream legacy (cold, warm, repeated warm)"
CAP1_WHAT = "ref-candidate-cap1 vs upstream legacy (cold, warm, repeated warm)"
PARITY = [
    (m1_legacy_parity, "M1.legacy_parity", "ref-candidate-legacy"),
    (m1_cap1_parity, "M1.cap1_parity", "ref-candidate-cap1"),
]
STEADY = SerialVerdict(Status.PASS, "3 outputs identical", True, False, False, outputs_compared=3)
ALT = {"name": "alt", "changes": "seed", "kind": "seed", "request": {"text": "hello", "seed": 2}}
ALT2 = {"name": "alt2", "changes": "seed", "kind": "seed", "request": {"text": "hello", "seed": 3}}

FULL: dict[str, Any] = {
    "plan": {"path": "plan.yaml", "sha256": "p" * 64},
    "executables": {"baseline": {"sha256": "b" * 64}, "candidate": {"sha256": "c" * 64}},
    "model": {"task": "tts", "mode": "offline", "sha256": "m" * 64, "auxiliary": {}},
    "fixtures": {"voice.wav": "f" * 64, "text.txt": "e" * 64},
    "requests": {"base": {"text": "hello", "seed": 1}},
    "settings": {"counts": [1, 2]},
    "identity": {
        "baseline": {"source_commit": "612c5e9f", "build_flags": "-DGGML_CUDA=ON"},
        "candidate": {"source_commit": "7a1b2c3d", "build_flags": ["-O2", ""]},
        "quantization": "q8_0",
    },
    "platform": {"os": "Linux", "backend": "cuda", "device": 0, "driver": "550", "threads": 4, "gpu": "H100"},
}


def reference_start(ev: Events, run: str, names: tuple[str, ...] = ("base",), body: Any = None) -> None:
    ev.start(run, role="reference", count=1)
    for name in names:
        for phase in PHASES:
            ev.request(run, phase, 0, name, body if body is not None else tts_body(1))
    ev.end(run)


def references(ev: Events, names: tuple[str, ...] = ("base",), skip: tuple[str, ...] = ()) -> None:
    """Every reference start (the two baselines, legacy and cap1) of `names`, all alike."""
    for run in REFERENCE_RUNS:
        if run not in skip:
            reference_start(ev, run, names)


def set_at(tree: dict[str, Any], path: str, value: object) -> None:
    *parents, leaf = path.split(".")
    for part in parents:
        tree = tree[part]
    tree[leaf] = value


@pytest.fixture(scope="module")
def baseline_a(tmp_path_factory: pytest.TempPathFactory) -> Events:
    """ref-baseline-a recorded whole: the reference table every manifest test shares."""
    ev = Events(tmp_path_factory.mktemp("baseline-a"))
    reference_start(ev, "ref-baseline-a")
    return ev


def manifest_ctx(ev: Events, manifest: dict[str, Any], *, refs: bool = True, **plan_args: Any) -> JudgeContext:
    return JudgeContext(build_records(ev.events if refs else []), plan(**plan_args), manifest, ev.run_dir, "plan.yaml")


# -- M1.manifest -----------------------------------------------------------------------


def test_a_complete_manifest_passes_naming_what_it_rests_on(baseline_a: Events) -> None:
    ctx = manifest_ctx(baseline_a, FULL)
    assert manifest_gaps(ctx) == []
    r = m1_manifest(ctx, STEADY)
    assert r.status is Status.PASS
    assert r.reason == (
        "manifest hashes checkpoint, auxiliaries, fixtures, executables and plan; records quantization, "
        "task/mode/settings, seeds, references, source commits, build flags, OS, device, driver, backend and threads"
    )
    assert r.evidence["missing"] == []
    assert r.evidence["identity"] == FULL["identity"]
    assert r.evidence["fixtures"] == 2
    assert r.evidence["references"] == 2
    # the GPU name is shown elsewhere: the platform evidence is what identifies the run
    assert r.evidence["platform"] == {"os": "Linux", "backend": "cuda", "device": 0, "driver": "550", "threads": 4}
    assert r.evidence["rests_on"] == {"manifest items": 14, "references": 2}


@pytest.mark.parametrize(("path", "what"), MANIFEST_ITEMS)
@pytest.mark.parametrize("blank", [None, "", "   ", ["", " "]])
def test_each_blank_manifest_item_is_named_and_pending(baseline_a: Events, path: str, what: str, blank: object) -> None:
    m = copy.deepcopy(FULL)
    set_at(m, path, blank)
    ctx = manifest_ctx(baseline_a, m)
    assert manifest_gaps(ctx) == [f"{path} ({what})"]
    r = m1_manifest(ctx, STEADY)
    assert r.status is Status.PENDING
    assert r.reason == f"the manifest does not identify: {path} ({what})"
    assert r.evidence["missing"] == [f"{path} ({what})"]


@pytest.mark.parametrize("value", [0, False, "x", ["", "-O2"], {"a": 1}])
def test_a_non_blank_value_declares_an_item(baseline_a: Events, value: object) -> None:
    m = copy.deepcopy(FULL)
    set_at(m, "platform.threads", value)
    set_at(m, "identity.baseline.build_flags", value)
    assert manifest_gaps(manifest_ctx(baseline_a, m)) == []


def test_an_item_under_a_non_object_is_missing(baseline_a: Events) -> None:
    m = copy.deepcopy(FULL)
    m["executables"] = "b" * 64
    del m["plan"]
    assert manifest_gaps(manifest_ctx(baseline_a, m)) == [
        "executables.baseline.sha256 (baseline executable hash)",
        "executables.candidate.sha256 (candidate executable hash)",
        "plan.sha256 (plan hash)",
    ]


def test_an_empty_manifest_names_every_gap_in_order(baseline_a: Events) -> None:
    ctx = manifest_ctx(baseline_a, {}, refs=False, auxiliary_files=["voices/a.wav"])
    gaps = [f"{path} ({what})" for path, what in MANIFEST_ITEMS] + [
        "model.auxiliary (0 of 1 auxiliary files hashed)",
        "identity.quantization (declare it in the plan: identity.quantization)",
        "identity.baseline.source_commit (baseline source commit; declare it in the plan)",
        "identity.baseline.build_flags (baseline build flags; declare it in the plan)",
        "identity.candidate.source_commit (candidate source commit; declare it in the plan)",
        "identity.candidate.build_flags (candidate build flags; declare it in the plan)",
        "references (no baseline reference output recorded)",
    ]
    assert manifest_gaps(ctx) == gaps
    r = m1_manifest(ctx, STEADY)
    assert r.status is Status.PENDING
    assert r.reason == "the manifest does not identify: " + "; ".join(gaps)
    assert r.evidence == {"missing": gaps, "identity": {}, "fixtures": 0, "references": 0, "platform": {}}


@pytest.mark.parametrize(
    ("hashed", "gap"),
    [
        (None, ["model.auxiliary (0 of 2 auxiliary files hashed)"]),
        ({"a.wav": "x"}, ["model.auxiliary (1 of 2 auxiliary files hashed)"]),
        ({"a.wav": "x", "b.wav": "y"}, []),
        ({"a.wav": "x", "b.wav": "y", "c.wav": "z"}, []),
    ],
)
def test_every_declared_auxiliary_file_must_be_hashed(baseline_a: Events, hashed: object, gap: list[str]) -> None:
    m = copy.deepcopy(FULL)
    m["model"]["auxiliary"] = hashed
    assert manifest_gaps(manifest_ctx(baseline_a, m, auxiliary_files=["a.wav", "b.wav"])) == gap


def test_auxiliary_hashes_that_are_not_a_collection_are_an_error(baseline_a: Events) -> None:
    m = copy.deepcopy(FULL)
    m["model"]["auxiliary"] = 7
    with pytest.raises(TypeError, match=r"^object of type 'int' has no len\(\)$"):
        manifest_gaps(manifest_ctx(baseline_a, m))


@pytest.mark.parametrize(
    ("identity_q", "model_q", "gap"), [("q8_0", None, False), (None, "q4_k", False), ("", "", True), (None, None, True)]
)
def test_quantization_comes_from_the_identity_block_or_the_model(
    baseline_a: Events, identity_q: object, model_q: object, gap: bool
) -> None:
    m = copy.deepcopy(FULL)
    m["identity"]["quantization"] = identity_q
    m["model"]["quantization"] = model_q
    expected = ["identity.quantization (declare it in the plan: identity.quantization)"] if gap else []
    assert manifest_gaps(manifest_ctx(baseline_a, m)) == expected


@pytest.mark.parametrize("role", ["baseline", "candidate"])
@pytest.mark.parametrize(("key", "what"), [("source_commit", "source commit"), ("build_flags", "build flags")])
def test_each_identity_item_is_named_by_role(baseline_a: Events, role: str, key: str, what: str) -> None:
    m = copy.deepcopy(FULL)
    m["identity"][role][key] = " "
    assert manifest_gaps(manifest_ctx(baseline_a, m)) == [
        f"identity.{role}.{key} ({role} {what}; declare it in the plan)"
    ]


def test_an_incomplete_reference_start_is_a_manifest_gap(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    reference_start(ev, "ref-baseline-a")
    ctx = ev.context(plan(variations=[ALT]), FULL)
    gap = "the upstream reference start ref-baseline-a recorded no valid alt/ref_cold, alt/ref_warm, alt/ref_warm2"
    assert manifest_gaps(ctx) == [f"references ({gap})"]
    r = m1_manifest(ctx, STEADY)
    assert r.status is Status.PENDING and r.evidence["references"] == 2


# -- M1.serial_repeat -------------------------------------------------------------------


def test_serial_repeat_passes_on_the_outputs_compared(baseline_a: Events) -> None:
    ctx = manifest_ctx(baseline_a, FULL)
    serial = SerialVerdict(
        Status.PASS, "6 outputs identical", True, False, False, outputs_compared=6, facts={"differences": []}
    )
    r = m1_serial_repeat(ctx, serial)
    assert (r.id, r.status, r.reason) == ("M1.serial_repeat", Status.PASS, "6 outputs identical")
    assert r.evidence == {
        "measured": True,
        "varies": False,
        "tolerance_applies": False,
        "outputs_compared": 6,
        "differences": [],
        "rests_on": {"outputs compared": 6},
    }


def test_serial_repeat_on_nothing_compared_is_withheld(baseline_a: Events) -> None:
    r = m1_serial_repeat(manifest_ctx(baseline_a, FULL), SerialVerdict(Status.PASS, "none", True, False, False, 0))
    assert r.status is Status.PENDING and r.reason.startswith("PASS withheld")


@pytest.mark.parametrize("status", [Status.PENDING, Status.BLOCKED])
def test_serial_repeat_other_verdicts_stand_as_given(baseline_a: Events, status: Status) -> None:
    serial = SerialVerdict(status, "parity unverified: serial output varies", True, True, False, 3, {"d": [1]})
    r = m1_serial_repeat(manifest_ctx(baseline_a, FULL), serial)
    assert r == Result("M1.serial_repeat", status, "parity unverified: serial output varies", serial.evidence)


# -- M1.legacy_parity and M1.cap1_parity ------------------------------------------------


@pytest.mark.parametrize(("judge", "id_", "run"), PARITY)
def test_parity_passes_on_every_output_exact(tmp_path: Path, judge: Any, id_: str, run: str) -> None:
    ev = Events(tmp_path)
    references(ev)
    # a request outside the reference phases is not one of the outputs compared
    ev.request(run, "perf_serial", 0, "base", tts_body(9), ref="base|warm")
    ev.append("server_ready", run=run, attempt=0, argv=["./srv", "--slots", "1"], warning_marker=False)
    ctx = ev.context(plan())
    r = judge(ctx, ctx.serial)
    assert (r.id, r.status) == (id_, Status.PASS)
    assert r.reason == f"{run} vs upstream legacy (cold, warm, repeated warm): 3/3 exact"
    assert r.reproduction == "parval run plan.yaml   # server: ./srv --slots 1"
    assert r.evidence["rests_on"] == {"compared outputs": 3}


@pytest.mark.parametrize(("judge", "id_", "run"), PARITY)
def test_parity_of_a_start_not_run_is_pending(tmp_path: Path, judge: Any, id_: str, run: str) -> None:
    ev = Events(tmp_path)
    references(ev, skip=(run,))
    # another start's failure is not this one's
    other = next(r for _, _, r in PARITY if r != run)
    ev.append("start_failed", unit=other + "-x", reason="executable not found")
    ctx = ev.context(plan())
    r = judge(ctx, ctx.serial)
    assert (r.id, r.status, r.reason) == (id_, Status.PENDING, f"{run} not run")


@pytest.mark.parametrize(("judge", "id_", "run"), PARITY)
def test_parity_of_a_start_that_failed_to_start_is_blocked(tmp_path: Path, judge: Any, id_: str, run: str) -> None:
    ev = Events(tmp_path)
    references(ev, skip=(run,))
    ev.append("start_failed", unit=run, reason="executable not found")
    ctx = ev.context(plan())
    r = judge(ctx, ctx.serial)
    assert (r.id, r.status, r.reason) == (id_, Status.BLOCKED, f"{run} did not start: executable not found")
    failure = r.evidence["failure"]
    assert isinstance(failure, dict) and failure["run"] == run and failure["reason"] == "executable not found"


@pytest.mark.parametrize(("judge", "id_", "run"), PARITY)
@pytest.mark.parametrize(("log", "tail"), [({"log_tail": "fatal: abort"}, "fatal: abort"), ({}, "")])
def test_parity_of_a_crashed_start_fails_whatever_it_collected(
    tmp_path: Path, judge: Any, id_: str, run: str, log: dict[str, str], tail: str
) -> None:
    ev = Events(tmp_path)
    references(ev, skip=(run,))
    ev.start(run, role="reference", count=1)
    ev.append("server_ready", run=run, attempt=0, argv=["./server", "--port", 8080], warning_marker=False)
    ev.request(run, "ref_cold", 0, "base", tts_body(1))
    ev.request(run, "ref_warm", 0, "base", tts_body(1))
    ev.append("server_crash", run=run, attempt=0, where="ref_warm2", exit_code=-6, signal="SIGABRT", **log)
    ctx = ev.context(plan())
    r = judge(ctx, ctx.serial)
    assert (r.id, r.status) == (id_, Status.FAIL)
    assert r.reason == (
        f"{run} vs upstream legacy (cold, warm, repeated warm): the candidate server crashed during ref_warm2 "
        "(exit status -6) after 2 output(s)"
    )
    assert r.evidence["violation"] == {
        "run": run,
        "attempt": 0,
        "where": "ref_warm2",
        "exit_code": -6,
        "signal": "SIGABRT",
    }
    assert r.evidence["log_tail"] == tail
    assert r.reproduction == "parval run plan.yaml   # server: ./server --port 8080"


def stopped_start(ev: Events, run: str, body: Any = None) -> None:
    reference_start(ev, run, body=body)
    ev.append("start_aborted", unit=run, reason="server stopped answering")


def test_parity_of_a_start_parval_stopped_is_blocked(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    references(ev, skip=("ref-candidate-legacy",))
    stopped_start(ev, "ref-candidate-legacy")
    ctx = ev.context(plan())
    r = m1_legacy_parity(ctx, ctx.serial)
    assert r.status is Status.BLOCKED
    assert r.reason == f"{LEGACY_WHAT}: the start was stopped (server stopped answering) after 3 output(s)"


def test_a_mismatch_fails_parity_even_in_a_stopped_start(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    references(ev, skip=("ref-candidate-cap1",))
    stopped_start(ev, "ref-candidate-cap1", body=tts_body(2))
    ctx = ev.context(plan())
    r = m1_cap1_parity(ctx, ctx.serial)
    assert r.status is Status.FAIL
    assert r.reason == f"{CAP1_WHAT}: 3 mismatch(es)"
    assert r.evidence["failure_kind"] == "output"


@pytest.mark.parametrize(
    ("recorded", "lacking"),
    [
        (("ref_cold",), "base/ref_warm, base/ref_warm2"),
        (("ref_cold", "ref_warm"), "base/ref_warm2"),
        (("ref_warm", "ref_warm2"), "base/ref_cold"),
    ],
)
def test_parity_needs_every_output(tmp_path: Path, recorded: tuple[str, ...], lacking: str) -> None:
    ev = Events(tmp_path)
    references(ev, skip=("ref-candidate-legacy",))
    ev.start("ref-candidate-legacy", role="reference", count=1)
    for phase in recorded:
        ev.request("ref-candidate-legacy", phase, 0, "base", tts_body(1))
    ev.end("ref-candidate-legacy")
    ctx = ev.context(plan())
    r = m1_legacy_parity(ctx, ctx.serial)
    assert r.status is Status.PENDING
    assert r.reason == f"{LEGACY_WHAT}: no output recorded for {lacking}"


def test_parity_names_the_first_six_outputs_lacking(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    references(ev, ("base", "alt", "alt2"), skip=("ref-candidate-cap1",))
    ev.start("ref-candidate-cap1", role="reference", count=1)
    ev.end("ref-candidate-cap1")
    ctx = ev.context(plan(variations=[ALT, ALT2]))
    r = m1_cap1_parity(ctx, ctx.serial)
    assert r.status is Status.PENDING
    assert r.reason == (
        f"{CAP1_WHAT}: no output recorded for base/ref_cold, base/ref_warm, base/ref_warm2, "
        "alt/ref_cold, alt/ref_warm, alt/ref_warm2"
    )


def test_judge_m1_judges_every_assertion_in_order(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    references(ev)
    ctx = ev.context(plan(), FULL)
    ids = ["M1.manifest", "M1.serial_repeat", "M1.legacy_parity", "M1.cap1_parity", "M1.cold_warm_refs"]
    assert [r.id for r in judge_m1(ctx, ctx.serial)] == ids
    assert [e.id for e in ENTRIES] == ids


# -- M1.cold_warm_refs ------------------------------------------------------------------


def relabel(ev: Events, cache_sensitive: bool) -> None:
    """Every request labelled with the reference its history calls for."""
    for e in ev.events:
        if e["kind"] == "request":
            e["ref"] = derived_ref(e, cache_sensitive)


_WORLDS: dict[tuple[object, ...], tuple[list[dict[str, Any]], dict[str, Any]]] = {}


def refs_world(
    run_dir: Path,
    *,
    names: tuple[str, ...] = ("base",),
    skip: tuple[str, ...] = (),
    starts: int = 3,
    cache_sensitive: bool = False,
) -> tuple[Events, dict[str, Any]]:
    """Every reference start, and `starts` whole count-1 starts of a plan of `names`
    (built once per module: each caller gets its own copy of the events and plan)."""
    key = (run_dir, names, skip, starts, cache_sensitive)
    if key not in _WORLDS:
        ev = Events(run_dir)
        references(ev, names, skip)
        variations = [v for v in (ALT, ALT2) if v["name"] in names]
        p = plan(counts=[1], variations=variations)
        p["model"]["cache_sensitive"] = cache_sensitive
        for i in range(starts):
            full_start(ev, f"count1-s{i + 1}", 1, p)
        if cache_sensitive:
            relabel(ev, True)
        _WORLDS[key] = (ev.events, p)
    events, p = copy.deepcopy(_WORLDS[key])
    ev = Events(run_dir)
    ev.events = events
    return ev, p


@pytest.fixture(scope="module")
def world_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("worlds")


def cold_warm(ev: Events, p: dict[str, Any]) -> Result:
    ctx = ev.context(p)
    return m1_cold_warm_refs(ctx, ctx.serial)


def test_cold_warm_refs_pass_naming_the_references(world_dir: Path) -> None:
    ev, p = refs_world(world_dir)
    r = cold_warm(ev, p)
    assert r.status is Status.PASS
    assert r.reason == (
        "1 cold and 1 warm/history references kept apart; cold outputs are compared with cold references only"
    )
    assert r.evidence["rests_on"] == {"cold references": 1, "warm references": 1}
    assert r.evidence["cold_equals_warm_for"] == ["base"]


def test_cold_equals_warm_lists_only_requests_whose_two_references_agree(tmp_path: Path) -> None:
    ev = Events(tmp_path)
    for run in REFERENCE_RUNS:
        ev.start(run, role="reference", count=1)
        for name, warm in (("base", 1), ("alt2", 2), ("alt", 1)):
            ev.request(run, "ref_cold", 0, name, tts_body(1))
            ev.request(run, "ref_warm", 0, name, tts_body(warm))
            ev.request(run, "ref_warm2", 0, name, tts_body(warm))
        ev.end(run)
    p = plan(counts=[1], variations=[ALT, ALT2])
    for i in range(3):
        full_start(ev, f"count1-s{i + 1}", 1, p)
    r = cold_warm(ev, p)
    assert r.status is Status.PASS, r.reason
    assert r.reason.startswith("3 cold and 3 warm/history references kept apart")
    assert r.evidence["cold_equals_warm_for"] == ["alt", "base"]


def test_cold_warm_refs_of_a_cache_sensitive_model_count_history_references(world_dir: Path) -> None:
    ev, p = refs_world(world_dir, cache_sensitive=True)
    r = cold_warm(ev, p)
    assert r.status is Status.PASS, r.reason
    assert r.reason.startswith("1 cold and 2 warm/history references kept apart")
    assert r.evidence["cold_equals_warm_for"] == []


@pytest.mark.parametrize("phases", [(), ("ref_cold",), ("ref_warm", "ref_warm2")])
def test_cold_and_warm_references_must_both_be_recorded(tmp_path: Path, phases: tuple[str, ...]) -> None:
    ev = Events(tmp_path)
    ev.start("ref-baseline-a", role="reference", count=1)
    for phase in phases:
        ev.request("ref-baseline-a", phase, 0, "base", tts_body(1))
    ev.end("ref-baseline-a")
    r = cold_warm(ev, plan())
    assert (r.status, r.reason) == (Status.PENDING, "cold and warm references were not both recorded")


def test_cold_warm_refs_wait_for_a_whole_reference_table(world_dir: Path) -> None:
    ev, p = refs_world(world_dir)
    p["requests"]["variations"] = [ALT]
    r = cold_warm(ev, p)
    assert r.status is Status.PENDING
    assert r.reason == (
        "references incomplete: the upstream reference start ref-baseline-a recorded no valid "
        "alt/ref_cold, alt/ref_warm, alt/ref_warm2"
    )


@pytest.mark.parametrize("run", REFERENCE_RUNS[1:])
def test_every_reference_start_is_needed_for_its_labels(world_dir: Path, run: str) -> None:
    ev, p = refs_world(world_dir, skip=(run,))
    r = cold_warm(ev, p)
    assert r.status is Status.PENDING
    assert r.reason == f"reference start {run} not recorded: the labels of its outputs were not checked"


def test_a_reference_start_missing_outputs_leaves_labels_unchecked(world_dir: Path) -> None:
    names = ("base", "alt", "alt2")
    ev, p = refs_world(world_dir, names=names, skip=("ref-baseline-b", "ref-candidate-legacy", "ref-candidate-cap1"))
    ev.start("ref-baseline-b", role="reference", count=1)
    ev.end("ref-baseline-b")
    r = cold_warm(ev, p)
    assert r.status is Status.PENDING
    assert r.reason == (
        "reference start ref-baseline-b recorded no base/ref_cold, base/ref_warm, base/ref_warm2, alt/ref_cold, "
        "alt/ref_warm, alt/ref_warm2: the labels of its outputs were not all checked"
    )


def test_a_reference_start_missing_one_phase_leaves_labels_unchecked(world_dir: Path) -> None:
    ev, p = refs_world(world_dir, skip=("ref-candidate-cap1",))
    ev.start("ref-candidate-cap1", role="reference", count=1)
    ev.request("ref-candidate-cap1", "ref_cold", 0, "base", tts_body(1))
    ev.request("ref-candidate-cap1", "ref_warm", 0, "base", tts_body(1))
    ev.end("ref-candidate-cap1")
    r = cold_warm(ev, p)
    assert r.reason == (
        "reference start ref-candidate-cap1 recorded no base/ref_warm2: the labels of its outputs were not all checked"
    )


def test_a_relabelled_output_keeps_cold_and_warm_unshown_apart(world_dir: Path) -> None:
    ev, p = refs_world(world_dir)
    ev.request("ref-candidate-legacy", "ref_warm", 0, "base", tts_body(1), ref="base|cold")
    r = cold_warm(ev, p)
    assert r.status is Status.PENDING
    assert r.reason == (
        "1 recorded output(s) labelled with a reference other than the one their history calls for (first: "
        "ref-candidate-legacy ref_warm base labelled base|cold, ran as base|warm): cold and warm references not "
        "shown kept apart"
    )
    assert r.evidence["relabelled"] == [
        {
            "run": "ref-candidate-legacy",
            "phase": "ref_warm",
            "wave": 0,
            "req": "base",
            "label": "base|cold",
            "ref": "base|warm",
        }
    ]


def test_many_relabelled_outputs_name_three_and_keep_thirty(world_dir: Path) -> None:
    ev, p = refs_world(world_dir)
    for wave in range(31):
        ev.request("ref-candidate-cap1", "ref_warm2", wave + 1, "base", tts_body(1), ref=f"base|w{wave}")
    r = cold_warm(ev, p)
    assert r.status is Status.PENDING
    assert r.reason == (
        "31 recorded output(s) labelled with a reference other than the one their history calls for (first: "
        "ref-candidate-cap1 ref_warm2 base labelled base|w0, ran as base|warm, "
        "ref-candidate-cap1 ref_warm2 base labelled base|w1, ran as base|warm, "
        "ref-candidate-cap1 ref_warm2 base labelled base|w2, ran as base|warm): cold and warm references not "
        "shown kept apart"
    )
    relabelled = r.evidence["relabelled"]
    assert isinstance(relabelled, list) and len(relabelled) == 30


def test_cold_warm_refs_wait_for_every_start_of_each_count(world_dir: Path) -> None:
    ev, p = refs_world(world_dir, starts=2)
    r = cold_warm(ev, p)
    assert (r.status, r.reason, r.count) == (Status.PENDING, "2 complete start(s) at count 1, 3 needed", None)


def test_cold_warm_refs_wait_for_every_wave_of_a_start(world_dir: Path) -> None:
    ev, p = refs_world(world_dir, starts=2)
    full_start(ev, "count1-s3", 1, p)
    ev.events = [e for e in ev.events if not (e.get("run") == "count1-s3" and e.get("phase") == "mixed_wave")]
    r = cold_warm(ev, p)
    assert r.status is Status.PENDING and r.count is None
    assert r.reason == "evidence incomplete at count 1: count1-s3: no mixed_wave 0, 1 recorded"


def test_a_crashed_count_start_hides_no_label(world_dir: Path) -> None:
    """A count whose start crashed is judged by its M2.starts: the labels recorded still pass."""
    ev, p = refs_world(world_dir, starts=2)
    ev.start("count1-s3", count=1)
    ev.request("count1-s3", "cold_wave", 0, "base", tts_body(1), ref="base|cold")
    ev.append("server_crash", run="count1-s3", attempt=0, where="warm_wave", exit_code=-11, signal="SIGSEGV")
    r = cold_warm(ev, p)
    assert r.status is Status.PASS, r.reason


def test_only_the_campaigns_counts_are_checked(world_dir: Path) -> None:
    ev, p = refs_world(world_dir)
    p["counts"] = [1, 2]
    ev.append("campaign_start", plan="p", plan_sha256="x", shard=[1, 2], counts=[1], resumed=False, fail_fast=False)
    assert cold_warm(ev, p).status is Status.PASS
    ev.events[-1]["counts"] = [2]
    r = cold_warm(ev, p)
    assert (r.status, r.reason) == (Status.PENDING, "0 complete start(s) at count 2, 3 needed")
