"""Every framework judge attacked with generated cases (Hypothesis), from what a correct
server shows (a PASS baseline per judge key):

* removing evidence: any non-empty set of the pieces of evidence the judge reads (the
  observation's fields it looks at, the requests it names, a list emptied) never leaves PASS;
* a busy machine: the same server's facts with every duration stretched (the calibration
  stays the idle one), each reply read late and status samples missed never give FAIL
  (BLOCKED, "not forced", is allowed);
* a situation the probe could not force (a bounded wait that never saw its state, a load
  or a window not caught, a manager no longer waiting, a control read not answered), on
  its own or on a busy machine: never FAIL, and never PASS on its own.

F6 (judges_f6.assess_f6, over recorded CTest runs) is attacked the same way: taking away
a run, a test, a sanitizer build's flags or a written reason never leaves the result that
reads it PASS; stretched durations and runs parval stopped at ctest_timeout_s (alone or
rerun) never give FAIL.

The default profile runs a few cases per judge; CI (HYPOTHESIS_PROFILE=ci) runs more.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from parval.framework.ctest import CTestRun
from parval.framework.judges import JUDGES, run_judge
from parval.framework.preconditions import Capabilities
from parval.status import Status

from . import test_judges_f1 as f1
from . import test_judges_f2 as f2
from . import test_judges_f3 as f3
from . import test_judges_f4 as f4
from . import test_judges_f5 as f5
from . import test_judges_legacy as lg
from . import test_judges_timeouts as to
from . import test_judges_unsupported as un
from .factkit import TIMING, facts, fl, load_reply

Facts = dict[str, Any]


# -- a correct server's observation, per judge key ---------------------------------------------


def healthy_plus_overdue() -> Facts:
    """Count 2: one overdue slot (0.0 -> 0.30), one fresh (0.12 -> 0.27), a 50 ms probe sent at
    0.15 that waited out its bound."""
    return facts(
        [
            fl("overdue0", 0.0, 0.30),
            fl("healthy0", 0.12, 0.27),
            fl("probe", 0.15, 0.205, status=503, message="model 'm': timed out waiting for a slot"),
        ],
        count=2,
        probe_ms=50,
        overdue=["overdue0"],
        healthy=["healthy0"],
        waits=[{"what": "the full pool (2 active) while the overdue slot was held", "seen": True}],
    )


def runtime_kept() -> Facts:
    entry = {"slots": 1, "active": 0, "queued": 0, "loaded": True, "max_parallel": 4}
    return facts(
        [
            load_reply("resize-1", 0.0, 0.3, json=f2.RECONFIGURED),
            fl("after-resize-1", 0.3, 0.45),
            load_reply("resize-back-2", 0.5, 0.8, json=f2.RECONFIGURED),
            load_reply("register-omitted", 0.8, 1.1, json={"id": "m-omitted", "loaded": True, "reconfigured": False}),
            fl("after-register-omitted", 1.1, 1.25, model="m-omitted"),
        ],
        count=2,
        entries={"resized": entry, "registered": {**entry, "slots": None}},
    )


def legacy_runtime_kept() -> Facts:
    return facts(
        [
            load_reply("register-omitted", 0.0, 0.3, json={"id": "m-legacy-omitted", "loaded": True}),
            fl("after-register-omitted", 0.3, 0.45, model="m-legacy-omitted"),
            fl("models-after", 0.5, 0.51, path="/v1/models", json={"data": []}),
        ],
        flagged=False,
        entry_keys=["id", "object", "owned_by"],
    )


OWNERSHIP_PASSED = dict.fromkeys(f3.CTEST_EVIDENCE["F3.ownership"].tests, "passed")

CASES: dict[str, Callable[[], Facts]] = {
    "precondition": lambda: {
        "capabilities": Capabilities(True, True, True, 200, True, 400, True).to_json(),
        "needs": ["counters", "loaded", "bulk_unload", "management"],
    },
    "f1.first_wave": f1.first_wave_facts,
    "f1.cap1_pool": f1.first_wave_facts,
    "f1.forced_order": f1.forced,
    "f1.request_only_queue": lambda: f1.queue_facts([0.30, 0.45]),
    "f1.overdue_case": lambda: f1.overdue(503, "all active slots exceeded busy_timeout_ms", 0.302),
    "f1.healthy_plus_overdue": healthy_plus_overdue,
    "f2.unload_during_load": f2.unload_load,
    "f2.queued_before_barrier": f2.barrier,
    "f2.unload_not_undone": f2.not_undone,
    "f2.overlapping_managers": f2.overlapping,
    "f2.unsupported_count": f2.over_capacity,
    "f2.invalid_metadata": f2.metadata,
    "f2.valid_resize": f2.resize,
    "f2.runtime_kept": runtime_kept,
    "f2.concurrent_same_id": f2.same,
    "f2.post_commit_failure": f2.post_commit,
    "f2.native_batch": f2.batch,
    "f3.config_load_failure": f3.load_failure,
    "f3.registration_retry": f3.retry,
    "f3.invalid_alongside": f3.alongside,
    "f3.ctest_evidence": lambda: f3.ctest("F3.ownership", f3.RAN, OWNERSHIP_PASSED, []),
    "f4.running_disconnect": f4.running,
    "f4.queued_disconnect": f4.queued,
    "f4.init_disconnect": f4.init,
    "f4.sigterm_inflight": f4.sigterm,
    "f4.stalled_socket_io": f4.stalled,
    "f5.together": lambda: f5.together(2, both_loaded=True),
    "f5.warm_during_cold": f5.warm_cold,
    "f5.unload_together": f5.unload_both,
    "f5.alternate": f5.alternating,
    "f5.retiring": f5.retiring,
    "f5.ready_first": f5.ready,
    "f5.no_convoy": f5.convoy,
    "f5.selections": f5.selection,
    "legacy.first_session": lg.first,
    "legacy.unpublished_skip": lg.skip,
    "legacy.guard_serializes": lambda: lg.serial([0.15, 0.30, 0.45]),
    "legacy.wedged_text": lambda: lg.wedged(503, "current inference has run 60 ms (> 30 ms); likely wedged", 0.062),
    "legacy.status_fields": lambda: facts([], entries=[["created", "id", "object"], ["id", "object"]]),
    "legacy.registration_forms": lambda: lg.forms(lg.REJECTED),
    "legacy.runtime_kept": legacy_runtime_kept,
    "legacy.config_forms": lambda: {
        "starts": [{"slots": s, "exit_code": 1, "exited": True, "message": True} for s in (1, None)]
    },
    "timeouts.case": to.case,
    "timeouts.manager_timeout": to.mgr,
    "timeouts.bulk_unbounded": lambda: to.bulk(0.31),
    "unsupported.count_over_capacity": un.over,
    "unsupported.unsupported_mode": un.mode,
}
# `given` judges no server behaviour: it passes a probe's own PENDING/BLOCKED through.
NOT_BEHAVIOUR = {"given"}

# Fields an observation carries that are context, not evidence, with why removing them may
# leave a PASS: the rig's name, which runtime the rig ran (a judge reads it to apply the
# flagged runtime's extra rules), the plan model id (the default registration), and
# evidence that exists only on some builds or situations.
CONTEXT = {"rig", "flagged", "model_id", "case", "attempt", "hold"}
OPTIONAL: dict[str, set[str]] = {
    # observer trace and session addresses exist only on validation builds
    "f1.first_wave": {"traced", "sessions"},
    # capacity one judges the pool, not its outputs (those are F2.first_publish's)
    "f1.cap1_pool": {"traced", "sessions", "refs"},
    "f1.request_only_queue": {"trace_seeds", "marked"},
    # a stall record exists only when the manager still waited after its gap
    "f2.unload_during_load": {"stall"},
    # what HTTP showed is named in the PENDING text, not judged
    "f3.ctest_evidence": {"observed_over_http"},
    # a registry record exists only when the bulk still waited
    "f5.ready_first": {"registry"},
    # the keeper exists at limit 2 only
    "f5.retiring": {"keeper"},
    # the request behind the manager exists only with a spare slot
    "timeouts.manager_timeout": {"behind"},
    # the drained wait is only recorded on the flagged runtime
    "timeouts.case": {"drained"},
}


def baseline(key: str) -> Facts:
    return copy.deepcopy(CASES[key]())


class Reading(dict[str, Any]):
    """A facts dict that remembers which top-level fields a judge read."""

    def __init__(self, data: Facts) -> None:
        super().__init__(data)
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)


def read_fields(key: str) -> list[str]:
    f = Reading(baseline(key))
    JUDGES[key](f)
    return sorted(f.read - CONTEXT - OPTIONAL.get(key, set()))


def pieces(key: str) -> list[tuple[str, str]]:
    """The evidence of the baseline: each field the judge reads, each list it reads emptied,
    and each recorded request."""
    base = baseline(key)
    out: list[tuple[str, str]] = []
    for name in read_fields(key):
        out.append(("drop", name))
        if isinstance(base.get(name), list) and base[name]:
            out.append(("empty", name))
    out += [("flight", str(x["label"])) for x in base.get("flights") or []]
    return out


def without(base: Facts, removed: set[tuple[str, str]]) -> Facts:
    f = copy.deepcopy(base)
    for kind, name in removed:
        if kind == "drop":
            f.pop(name, None)
        elif kind == "empty":
            f[name] = []
        else:
            f["flights"] = [x for x in f.get("flights") or [] if x["label"] != name]
    return f


KEYS = sorted(CASES)


def test_every_judge_key_has_a_generated_case() -> None:
    assert set(JUDGES) - NOT_BEHAVIOUR == set(CASES), "a judge without a generated case (add it to CASES)"


def test_given_never_passes() -> None:
    for status in ("PENDING", "BLOCKED", "NOT_APPLICABLE"):
        assert run_judge("given", {"status": status, "detail": "x"}).status is not Status.PASS


@pytest.mark.parametrize("key", KEYS)
def test_the_baseline_is_a_pass(key: str) -> None:
    v = run_judge(key, baseline(key))
    assert v.status is Status.PASS, v.detail()
    assert pieces(key), f"{key}: the judge reads no evidence"


@pytest.mark.parametrize("key", KEYS)
@given(data=st.data())
def test_removing_evidence_never_leaves_a_pass(key: str, data: st.DataObject) -> None:
    options = pieces(key)
    removed = data.draw(st.sets(st.sampled_from(options), min_size=1, max_size=min(3, len(options))))
    v = run_judge(key, without(baseline(key), removed))
    assert v.status is not Status.PASS, (sorted(removed), v.detail())


@pytest.mark.parametrize("key", KEYS)
def test_removing_each_single_piece_of_evidence_never_leaves_a_pass(key: str) -> None:
    """The exhaustive single-piece version of the generated test above."""
    passed = []
    for piece in pieces(key):
        if run_judge(key, without(baseline(key), {piece})).status is Status.PASS:
            passed.append(piece)
    assert not passed, f"{key} still passes without: {passed}"


# -- a busy machine ------------------------------------------------------------------------------

# Row lists whose first column is a rig time (status samples), and scalar rig times.
ROWS = ("samples", "joint", "keeper_samples", "after_giveup", "b_samples")
TIMES = ("freed_at", "published_at", "b_unpublished_at", "batch_t_send", "batch_t_done", "t_term")
DURATIONS = ("closed_at_s", "exited_at_s", "control_stall_s", "stalled_at_term_s")
SERVICE_S = TIMING["service_ms"] / 1000


def busy(base: Facts, stretch: float, late: list[float], drop: list[bool]) -> Facts:
    """The same correct server on a busy machine: every time and duration stretched by
    `stretch` (the recorded calibration stays the idle one), each reply read up to a fifth of
    a stretched request late, some status samples missed."""
    f = copy.deepcopy(base)

    def at(t: Any) -> Any:
        return round(float(t) * stretch, 6) if isinstance(t, int | float) and not isinstance(t, bool) else t

    for i, x in enumerate(f.get("flights") or []):
        x["t_send"] = at(x["t_send"])
        if x.get("t_done") is not None:
            x["t_done"] = round(at(x["t_done"]) + late[i % len(late)] * 0.2 * stretch * SERVICE_S, 6)
            x["ms"] = round((x["t_done"] - x["t_send"]) * 1000, 3)
    for key in ROWS:
        rows = f.get(key)
        if isinstance(rows, list):
            kept = [r for j, r in enumerate(rows) if j in (0, len(rows) - 1) or not drop[j % len(drop)]]
            f[key] = [[at(r[0]), *r[1:]] for r in kept]
    for key in (*TIMES, *DURATIONS):
        if key in f:
            f[key] = at(f[key])
    for s in f.get("staggers") or []:
        s["manager_t_done"] = at(s.get("manager_t_done"))
        for c in s.get("canaries") or []:
            c["t_send"], c["t_done"] = at(c.get("t_send")), at(c.get("t_done"))
    for key in ("registry", "stall"):
        if isinstance(f.get(key), dict):
            f[key]["manager_t_done"] = at(f[key].get("manager_t_done"))
            for c in f[key].get("canaries") or []:
                c["t_send"], c["t_done"] = at(c.get("t_send")), at(c.get("t_done"))
    if isinstance(f.get("behind"), dict):
        f["behind"]["t"] = at(f["behind"].get("t"))
    if isinstance(f.get("stop"), dict):
        for key in ("waited_s", "stop_s"):
            if key in f["stop"]:
                f["stop"][key] = at(f["stop"][key])
    return f


@pytest.mark.parametrize("key", KEYS)
@given(
    stretch=st.floats(min_value=1.0, max_value=3.0),
    late=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=12),
    drop=st.lists(st.booleans(), min_size=1, max_size=12),
    flips=st.lists(st.booleans(), max_size=6),
    mix=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=12),
)
def test_a_busy_machine_never_turns_a_correct_server_into_a_fail(
    key: str, stretch: float, late: list[float], drop: list[bool], flips: list[bool], mix: list[float]
) -> None:
    """The busy machine, with the situations it kept from being forced (`flips`: which of
    the baseline's forcing points are turned unforced, in `forcing_points` order; `mix`:
    the completion order of requests a wait did not force into one)."""
    f = busy(baseline(key), stretch, late, drop)
    points = FORCING_POINTS[key]
    unforce(f, [p for p, flip in zip(points, flips, strict=False) if flip], mix)
    v = run_judge(key, f)
    assert v.status is not Status.FAIL, (stretch, late, drop, flips, mix, v.detail())


# -- a situation not forced ----------------------------------------------------------------------

# Top-level facts that say whether the probe forced its situation, and the value a probe
# records when it did not.
FORCING: dict[str, Any] = {
    "in_progress": False,  # the first load seen in progress
    "held": False,  # the native batch seen holding a slot
    "batch_done_before_unload": True,
    "left_during_load": False,
    "next_full": False,  # the next wave seen holding every slot
    "cold_load_seen": False,
    "first_load_seen": False,
    "teardown_window": False,
    "bulk_waiting": False,  # the bulk unload still waiting when the reads were sent
    "control_answered": False,  # the stalled control connection answered
    "during_loaded": True,  # the legacy load already published when the unload was sent
}


def reads(key: str) -> set[str]:
    """Every top-level field the judge `key` reads of its baseline."""
    f = Reading(baseline(key))
    JUDGES[key](f)
    return f.read


def forcing_points(f: Facts, read: set[str]) -> list[tuple[str, Any]]:
    """Where the observation records that its situation was forced, among the fields `read`
    by its judge: each bounded wait, each manager seen still waiting, each flag of FORCING,
    each registration entry seen, the request behind a manager seen queued."""
    out: list[tuple[str, Any]] = []
    if "waits" in read:
        out += [("wait", i) for i, w in enumerate(f.get("waits") or []) if w.get("seen")]
    if "staggers" in read:
        out += [("stagger", i) for i, s in enumerate(f.get("staggers") or []) if s.get("still_waiting")]
    out += [("flag", k) for k, unforced in FORCING.items() if k in read and k in f and f[k] != unforced]
    entries = f.get("entries")
    if "entries" in read and isinstance(entries, dict):
        out += [("entry", k) for k, e in entries.items() if e is not None]
    behind = f.get("behind")
    if "behind" in read and isinstance(behind, dict) and int(behind.get("queued") or 0) >= 1:
        out.append(("behind", None))
    return out


def unforce(f: Facts, points: list[tuple[str, Any]], mix: list[float] | None = None) -> Facts:
    """`f` with the situation not forced at each of `points` (in place; returned). A bounded
    wait that never saw its state leaves the requests in no forced order: their completion
    times are dealt out again in the order of `mix` (default: reversed)."""
    for kind, at in points:
        if kind == "wait":
            f["waits"][at]["seen"] = False
            reorder(f, mix)
        elif kind == "stagger":
            f["staggers"][at]["still_waiting"] = False
        elif kind == "flag":
            f[at] = FORCING[at]
        elif kind == "entry":
            f["entries"][at] = None
        else:
            f["behind"].update(queued=0, manager_finished=True)
    return f


def reorder(f: Facts, mix: list[float] | None) -> None:
    """Deal the recorded completion times out again among the flights that finished, in the
    order of `mix` (cycled; None: reversed), never before a flight's own send."""
    done = [x for x in f.get("flights") or [] if x.get("t_done") is not None]
    times = sorted(float(x["t_done"]) for x in done)
    if mix:
        ranks = sorted(range(len(done)), key=lambda i: (mix[i % len(mix)], i))
    else:
        ranks = list(reversed(range(len(done))))
    for x, i in zip(done, ranks, strict=True):
        x["t_done"] = round(max(times[i], float(x["t_send"]) + 0.001), 6)
        x["ms"] = round((x["t_done"] - float(x["t_send"])) * 1000, 3)


FORCING_POINTS = {key: forcing_points(baseline(key), reads(key)) for key in KEYS}
FORCED = [(key, point) for key in KEYS for point in FORCING_POINTS[key]]


def test_every_forcing_point_is_generated() -> None:
    """Each kind of forcing point appears in some baseline (else the table above is stale)."""
    kinds = {(kind, at if kind == "flag" else None) for _, (kind, at) in FORCED}
    want = {("wait", None), ("stagger", None), ("entry", None), ("behind", None)}
    want |= {("flag", k) for k in FORCING}
    assert want <= kinds, want - kinds


@pytest.mark.parametrize(("key", "point"), FORCED, ids=[f"{k}-{p[0]}-{p[1]}" for k, p in FORCED])
def test_a_situation_not_forced_is_neither_a_fail_nor_a_pass(key: str, point: tuple[str, Any]) -> None:
    v = run_judge(key, unforce(baseline(key), [point]))
    assert v.status not in (Status.FAIL, Status.PASS), v.detail()


# -- F6: the CTest runs ---------------------------------------------------------------------------

# Which F6 result reads each job's run.
F6_RESULT = {"default": "F6.ctest", "asan": "F6.sanitizers", "tsan": "F6.sanitizers", "stress": "F6.stress"}


def f6_baselines() -> dict[str, tuple[list[CTestRun], dict[str, Any]]]:
    """Recorded runs on which every F6 result passes, each test in them required evidence:
    every job run; or TSan not run with a platform reason and the default transport stated
    unchanged (so only the probes file's own required test is asked for). A stress run's
    seed makes it reproducible, not passing: it is kept out of the evidence taken away
    (a run without one passes with the missing seed listed as a limitation)."""
    from tests.test_ctest import REQ, fake_run, san_run

    return {
        "all run": (
            [
                fake_run("default", dict(REQ)),
                san_run("asan", {"t": "passed"}),
                san_run("tsan", {"t": "passed"}),
                fake_run("stress", {"s": "passed"}, meta={"seed": 7}),
            ],
            {},
        ),
        "reasons given": (
            [
                fake_run("default", {"session_pool_test": "passed"}),
                san_run("asan", {"t": "passed"}),
                fake_run("stress", {"s": "passed"}, meta={"seed": 7}),
            ],
            {
                "required": ["session_pool_test"],
                "sanitizers": ["asan"],
                "sanitizers_unavailable": {"tsan": "no TSan runtime on this platform"},
                "transport_unchanged": "the legacy listener is kept",
            },
        ),
    }


F6_BASELINES = sorted(f6_baselines())


def f6_pieces(runs: list[CTestRun], kw: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(kind, job, detail) for each piece of evidence F6 reads: each run, each of its tests
    (taken away, or skipped), its emptied test list, a sanitizer build's -fsanitize flags
    (dropped or emptied), each platform reason, the unchanged-transport reason."""
    out: list[tuple[str, str, str]] = []
    for run in runs:
        out += [("run", run.label, ""), ("empty", run.label, "")]
        for case in run.tests:
            out += [("case", run.label, case.name), ("skip", run.label, case.name)]
        if "sanitize_flags" in run.meta:
            out += [("flags", run.label, ""), ("noflag", run.label, "")]
    out += [("reason", job, "") for job in kw.get("sanitizers_unavailable") or {}]
    if kw.get("transport_unchanged"):
        out.append(("transport", "default", ""))
    return out


def f6_without(
    runs: list[CTestRun], kw: dict[str, Any], removed: set[tuple[str, str, str]]
) -> tuple[list[CTestRun], dict[str, Any]]:
    runs, kw = copy.deepcopy(runs), copy.deepcopy(kw)
    for kind, job, name in removed:
        mine = [r for r in runs if r.label == job]
        if kind == "run":
            runs = [r for r in runs if r.label != job]
        elif kind == "reason":
            kw["sanitizers_unavailable"].pop(job, None)
        elif kind == "transport":
            kw.pop("transport_unchanged", None)
        for r in mine:
            if kind == "empty":
                r.tests = []
            elif kind == "case":
                r.tests = [c for c in r.tests if c.name != name]
            elif kind == "skip":
                for c in r.tests:
                    if c.name == name:
                        c.status = "skipped"
            elif kind == "flags":
                r.meta.pop("sanitize_flags", None)
            elif kind == "noflag":
                r.meta["sanitize_flags"] = []
    return runs, kw


def f6_statuses(runs: list[CTestRun], kw: dict[str, Any]) -> dict[str, Status]:
    from parval.framework.judges_f6 import assess_f6

    return {r.id: r.status for r in assess_f6(runs, **kw)}


def f6_touched(removed: set[tuple[str, str, str]]) -> set[str]:
    return {"F6.sanitizers" if kind == "reason" else F6_RESULT[job] for kind, job, _ in removed}


@pytest.mark.parametrize("name", F6_BASELINES)
def test_f6_baselines_pass(name: str) -> None:
    runs, kw = f6_baselines()[name]
    assert set(f6_statuses(runs, kw).values()) == {Status.PASS}


@pytest.mark.parametrize("name", F6_BASELINES)
def test_f6_removing_each_single_piece_of_evidence_never_leaves_a_pass(name: str) -> None:
    runs, kw = f6_baselines()[name]
    passed = []
    for piece in f6_pieces(runs, kw):
        got = f6_statuses(*f6_without(runs, kw, {piece}))
        passed += [(piece, rid) for rid in f6_touched({piece}) if got[rid] is Status.PASS]
    assert not passed, f"still PASS without: {passed}"


@pytest.mark.parametrize("name", F6_BASELINES)
@given(data=st.data())
def test_f6_removing_evidence_never_leaves_a_pass(name: str, data: st.DataObject) -> None:
    runs, kw = f6_baselines()[name]
    options = f6_pieces(runs, kw)
    removed = data.draw(st.sets(st.sampled_from(options), min_size=1, max_size=3))
    got = f6_statuses(*f6_without(runs, kw, removed))
    assert all(got[rid] is not Status.PASS for rid in f6_touched(removed)), (sorted(removed), got)


def f6_busy(runs: list[CTestRun], stretch: float, killed: list[bool], keep: int, rerun: bool) -> list[CTestRun]:
    """The same passing runs on a busy machine: every duration stretched; a run `killed`
    by parval at ctest_timeout_s (an error with the tests it finished before, at most
    `keep`), alone or followed by a passing rerun (`rerun`)."""
    out: list[CTestRun] = []
    for i, run in enumerate(copy.deepcopy(runs)):
        run.duration_s = round(max(run.duration_s, 1.0) * stretch, 3)
        for c in run.tests:
            c.time_s = round((c.time_s or 0.1) * stretch, 3)
        if not killed[i % len(killed)]:
            out.append(run)
            continue
        cut = copy.deepcopy(run)
        cut.status, cut.error_kind, cut.exit_code = "error", "parval_timeout", None
        cut.reason = f"stopped by parval after ctest_timeout_s ({cut.duration_s} s)"
        cut.tests = cut.tests[:keep]
        out.append(cut)
        if rerun:
            out.append(run)
    return out


@pytest.mark.parametrize("name", F6_BASELINES)
@given(
    stretch=st.floats(min_value=1.0, max_value=50.0),
    killed=st.lists(st.booleans(), min_size=1, max_size=4),
    keep=st.integers(min_value=0, max_value=2),
    rerun=st.booleans(),
)
def test_f6_a_busy_machine_never_gives_a_fail(
    name: str, stretch: float, killed: list[bool], keep: int, rerun: bool
) -> None:
    runs, kw = f6_baselines()[name]
    got = f6_statuses(f6_busy(runs, stretch, killed, keep, rerun), kw)
    assert Status.FAIL not in got.values(), got


# -- what each judge says, word for word -------------------------------------------------------

SNAPSHOT = Path(__file__).with_name("judge_verdicts.json")


def verdicts() -> dict[str, dict[str, list[str]]]:
    """Status and text of every judge on its baseline and on the baseline without each piece
    of evidence: the words a reviewer reads, kept in judge_verdicts.json (regenerate with
    PARVAL_UPDATE_VERDICTS=1 after a deliberate change, and review the diff)."""
    out: dict[str, dict[str, list[str]]] = {}
    for key in KEYS:
        v = run_judge(key, baseline(key))
        seen = {"baseline": [str(v.status), v.detail()]}
        for kind, name in pieces(key):
            w = run_judge(key, without(baseline(key), {(kind, name)}))
            seen[f"{kind} {name}"] = [str(w.status), w.detail()]
        for stretch, late in ((2.0, [1.0]), (3.0, [0.0, 1.0, 0.5])):
            w = run_judge(key, busy(baseline(key), stretch, late, [True]))
            seen[f"busy x{stretch:g}"] = [str(w.status), w.detail()]
        out[key] = seen
    out["F6"] = f6_verdicts()
    return out


def f6_verdicts() -> dict[str, list[str]]:
    """F6.ctest, F6.sanitizers and F6.stress over recorded runs of every kind."""
    from parval.framework.ctest import CTestRun
    from parval.framework.judges_f6 import assess_f6
    from tests.test_ctest import REQ, fake_run, san_run

    scenarios: dict[str, tuple[list[CTestRun], dict[str, Any]]] = {
        "all pass": (
            [
                fake_run("default", {**REQ, "session_pool_test": "passed"}),
                san_run("asan", {"t": "passed"}),
                san_run("tsan", {"t": "passed"}),
                fake_run("stress", {"s": "passed"}, meta={"seed": 7}),
            ],
            {},
        ),
        "nothing": ([], {}),
        "failures": (
            [
                fake_run("default", {**REQ, "server_config_test": "failed", "audio_resample_test": "failed"}),
                san_run("asan", {"t": "failed"}),
                fake_run("stress", {"s": "failed"}),
            ],
            {},
        ),
        "unrelated only": ([fake_run("default", {**REQ, "audio_resample_test": "failed"})], {}),
        "unrelated declared": (
            [fake_run("default", {**REQ, "audio_resample_test": "failed"})],
            {"unrelated": {"audio_resample_test": "resampler only"}},
        ),
        "unrelated by the old pattern": (
            [fake_run("default", {**REQ, "audio_resample_test": "failed"})],
            {"unrelated": None},
        ),
        "f evidence declared unrelated": (
            [fake_run("default", {**REQ, "shared_weight_cache_test": "failed"})],
            {"unrelated": {"shared_weight_cache_test": "flaky"}},
        ),
        "errors": (
            [
                fake_run("default", REQ, status="error", reason="killed", error_kind="parval_timeout"),
                san_run("asan", {}, status="error", reason="old", error_kind="ctest_too_old"),
                san_run("tsan", {}, status="error", reason="exit 1", error_kind="no_results"),
                fake_run("stress", {}, status="error", reason="killed", error_kind="parval_timeout"),
            ],
            {},
        ),
        "not run": (
            [
                CTestRun.not_run("default", "no build dir"),
                CTestRun.not_run("asan", "no asan dir"),
                CTestRun.not_run("stress", "no stress job"),
            ],
            {},
        ),
        "missing and skipped": (
            [
                fake_run("default", {"parallel_http_live_body_test": "skipped", "x": "passed"}),
                san_run("asan", {"t": "skipped"}),
                san_run("tsan", {"t": "passed"}, flags=["address"]),
                fake_run("stress", {"s": "skipped"}),
            ],
            {"required": ["session_pool_test"]},
        ),
        "reasons given": (
            [fake_run("default", {"x": "passed"}), san_run("asan", {"t": "passed"})],
            {
                "transport_unchanged": "legacy listener kept",
                "sanitizers": ["asan"],
                "sanitizers_unavailable": {"tsan": "no TSan here"},
            },
        ),
        "no sanitizer here": ([], {"sanitizers": [], "sanitizers_unavailable": {"asan": "a", "tsan": "b"}}),
        "reruns": (
            [
                fake_run("default", {**REQ, "flaky_test": "failed"}, started_at="t1"),
                fake_run("default", REQ, started_at="t2"),
                san_run("asan", {"t": "failed"}, started_at="t3"),
                san_run("asan", {"t": "passed"}, started_at="t4"),
                fake_run("stress", {"s": "failed"}, started_at="t5"),
                fake_run("stress", {"s": "passed"}, started_at="t6", meta={"seed": 1}),
            ],
            {},
        ),
    }
    out: dict[str, list[str]] = {}
    for name, (runs, kw) in scenarios.items():
        for r in assess_f6(runs, **kw):
            out[f"{name}: {r.id}"] = [str(r.status), r.reason, *r.limitations, r.reproduction]
    return out


def test_every_verdict_reads_as_reviewed() -> None:
    got = verdicts()
    if os.environ.get("PARVAL_UPDATE_VERDICTS") == "1":
        SNAPSHOT.write_text(json.dumps(got, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    want = json.loads(SNAPSHOT.read_text("utf-8"))
    changed = {k: (want.get(k), got[k]) for k in got if want.get(k) != got[k]}
    assert not changed and set(want) == set(got), f"verdicts differ from {SNAPSHOT.name}: {changed}"
