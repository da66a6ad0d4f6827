"""Attacks on every model-gate judge, on the evidence of clean stand-in campaigns (checked in:
tests/attack/clean-runs.tar.xz, see clean_runs.py).

(a) Take away evidence: from each assertion that PASSes, remove or empty one piece of the
    evidence its judge reads (an event field, a whole event, the start or end of a start it
    reads, a raw reply or memory file): the verdict must not stay PASS (or the run is
    refused by the record loader).
(b) Shake the timing within what a loaded machine does (late sends and replies, lost or
    failed status polls, a drain check that got no answer, replies read out of order,
    admissions not seen in order): no assertion may become FAIL.

(a) takes a seeded sample of the pieces and Hypothesis picks the perturbations of (b): a few
examples per assertion in the default profile, many more under HYPOTHESIS_PROFILE=ci. The extended suite (`-m extended`)
also takes away every piece, each both ways."""

from __future__ import annotations

import copy
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parval.procedure.assertion_ids import FRAMEWORK_GATE, all_ids
from parval.rundir.event_fields import UPGRADES
from parval.status import Result, Status
from tests.attack import kit
from tests.attack.clean_runs import ARCHIVE, extract
from tests.attack.kit import PER_COUNT, Refused, Run, copy_events, emptied, pieces, verdict
from tests.attack.perturb import perturbed

pytestmark = pytest.mark.skipif(
    not ARCHIVE.exists(), reason="no recorded clean runs: python -m tests.attack.clean_runs"
)

COUNTS = (1, 2)  # the clean runs' counts
# Each assertion gets a share of the profile's examples (default 25 -> 4, ci 100 -> 16).
PER_KEY = max(2, settings().max_examples // 6)
HEALTH = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


def _keys() -> list[str]:
    out = []
    for aid in all_ids():
        if aid in FRAMEWORK_GATE or aid == "X4":
            continue
        out += [f"{aid}@{n}" for n in COUNTS] if aid.startswith(PER_COUNT) else [aid]
        if aid == "Q5":
            out += [f"Q5@{n}" for n in COUNTS]
    return out


# The keys no plan can make PASS, left out of the attacks (they have no PASS to attack),
# each with why. Only a judge that decides without reading the run or its plan belongs
# here: test_a_key_left_out_is_not_applicable_whatever_the_plan shows it. Any other key
# that passes on no clean run fails the attacks until a clean run is recorded for it.
NEVER_PASSES: dict[str, str] = {
    "M3.reversed@1": "one slot admits one request at a time: there is no admission order to reverse",
    "M4.adapter_overrides": "no plan can declare adapter-specific overrides yet; shared semantics are F1/F5",
}
KEYS = [k for k in _keys() if k not in NEVER_PASSES]


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    dirs = extract(tmp_path_factory.mktemp("clean-runs"))
    return {kind: Run.load(d) for kind, d in dirs.items()}


@pytest.fixture(scope="session")
def clean_verdicts(runs: dict[str, Run]) -> dict[tuple[str, str], Result]:
    return {(kind, key): verdict(run, run.events, key) for kind, run in runs.items() for key in KEYS}


def test_every_model_gate_assertion_that_can_pass_passes_on_a_clean_run(
    clean_verdicts: dict[tuple[str, str], Result],
) -> None:
    """The attacks start from PASS: every model-gate assertion they attack passes on a clean run."""
    passed = {key for (_, key), r in clean_verdicts.items() if r.status is Status.PASS}
    missing = sorted(set(KEYS) - passed)
    assert not missing, {
        k: [(kind, str(r.status), r.reason) for (kind, kk), r in clean_verdicts.items() if kk == k] for k in missing
    }


class _Unread:
    """A judge context that fails on any read: a judge that decides without one decides
    the same for every run and every plan."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the judge read {name!r} of the run or its plan")


@pytest.mark.parametrize("key", sorted(NEVER_PASSES))
def test_a_key_left_out_is_not_applicable_whatever_the_plan(
    key: str, runs: dict[str, Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert key in _keys(), f"{key} is no model-gate assertion key: drop it from NEVER_PASSES"
    for kind, run in runs.items():
        assert verdict(run, run.events, key).status is Status.NOT_APPLICABLE, (kind, key)
    # No plan can make it PASS: judged with nothing to read, it still says NOT_APPLICABLE.
    monkeypatch.setattr(kit, "JudgeContext", lambda *args: _Unread())
    assert verdict(Run(Path("unread"), [], {}, {}), [], key).status is Status.NOT_APPLICABLE


def _passing_run(key: str, evidence_read: dict[str, Any]) -> tuple[str, list[tuple[str, Any]]]:
    """The clean run `key` PASSes on and the pieces its judge read there."""
    assert key in evidence_read, (
        f"{key} passes on no clean run: record one it PASSes on (tests/attack/clean_runs.py), "
        "or, if no plan can make it PASS, add it to NEVER_PASSES with why"
    )
    kind, table = evidence_read[key]
    return kind, table


def _attacked(run: Run, key: str, piece: tuple[str, Any], how: str, workdir: Path) -> Result | None:
    """The verdict of `key` after one piece is taken away (None: the run is refused)."""
    what, where = piece
    events = copy_events(run.events)
    target = run
    if what == "manifest":
        manifest = copy.deepcopy(run.manifest)
        manifest[where[0]].pop(where[1], None)
        target = Run(run.dir, run.events, run.plan, manifest)
    elif what == "field":
        i, k = where
        if how == "delete":
            older = UPGRADES.get(str(events[i].get("kind")), {})
            if k in older and older[k] == events[i][k]:
                how = "empty"  # deleting it only makes an older-format event with the same value
            else:
                del events[i][k]
        if how == "empty":
            events[i][k] = emptied(events[i][k])
    elif what == "event":
        del events[where]
    else:
        copied = workdir / "run"
        if copied.exists():
            shutil.rmtree(copied)
        shutil.copytree(run.dir, copied)
        path = copied / Path(where).relative_to(run.dir.resolve())
        if how == "delete":
            path.unlink()
        else:
            path.write_bytes(b"")
        target = Run(copied, run.events, run.plan, run.manifest)
    try:
        return verdict(target, events, key)
    except Refused:
        return None


@pytest.fixture(scope="session")
def evidence_read(runs: dict[str, Run], clean_verdicts: dict[tuple[str, str], Result]) -> dict[str, Any]:
    """Assertion key -> (run kind, the pieces its judge read on the run it PASSes on); a
    judge that reads no event (Q3) rests on the manifest's plan hash."""
    out: dict[str, Any] = {}
    for (kind, key), r in sorted(clean_verdicts.items()):
        if r.status is Status.PASS and key not in out:
            out[key] = (kind, pieces(runs[kind], key) or [("manifest", ("plan", "sha256"))])
    return out


@pytest.mark.parametrize("key", KEYS)
def test_taking_away_evidence_never_leaves_a_pass(
    key: str, runs: dict[str, Run], evidence_read: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A sample of the pieces, drawn with a seed named after the assertion: the same pieces
    on every run (a sample that changed between runs could pass once and fail the next)."""
    kind, table = _passing_run(key, evidence_read)
    choices = [(piece, how) for piece in table for how in ("delete", "empty")]
    for piece, how in random.Random(key).sample(choices, min(PER_KEY, len(choices))):
        r = _attacked(runs[kind], key, piece, how, tmp_path_factory.mktemp("attack"))
        assert r is None or r.status is not Status.PASS, (kind, key, piece, how, r.reason)


@pytest.mark.extended
@pytest.mark.timeout(900)  # Q6 reads the most (about 260 s on 2 busy cores)
@pytest.mark.parametrize("key", KEYS)
def test_taking_away_any_piece_of_evidence_never_leaves_a_pass(
    key: str, runs: dict[str, Run], evidence_read: dict[str, Any], tmp_path: Path
) -> None:
    """The sampled attack above, over every piece the judge reads and both ways of taking
    it away (about 31 000 verdicts over all assertions): every survivor is listed at once."""
    kind, table = _passing_run(key, evidence_read)
    survivors = []
    for piece in table:
        for how in ("delete", "empty"):
            r = _attacked(runs[kind], key, piece, how, tmp_path)
            if r is not None and r.status is Status.PASS:
                survivors.append((kind, piece, how, r.reason))
    assert not survivors, survivors


@settings(max_examples=max(8, settings().max_examples // 2), suppress_health_check=HEALTH)
@given(data=st.data())
def test_a_loaded_machines_timing_never_turns_a_verdict_into_fail(
    data: st.DataObject, runs: dict[str, Run], clean_verdicts: dict[tuple[str, str], Result]
) -> None:
    kind = data.draw(st.sampled_from(sorted(runs)), label="run")
    run = runs[kind]
    events = perturbed(run.events, data.draw)
    for key in KEYS:
        if clean_verdicts[(kind, key)].status is Status.FAIL:
            continue
        r = verdict(run, events, key)
        assert r.status is not Status.FAIL, (kind, key, r.reason)
