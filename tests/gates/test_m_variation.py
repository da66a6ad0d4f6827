"""M3.variation: each variation kind the plan says the model supports needs a variation
whose output *content* changes; echoed metadata (a reply repeating `seed: 99`) is not a
changed output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parval.gates.m3_mixed_waves import m3_variation, variation_effects
from parval.status import Status
from tests.gates.m_events import Events, full_start, plan, tts_body

LONGER = {"name": "longer", "changes": "text", "request": {"text": "hello there, a longer one", "seed": 1}}
SEED = {"name": "other_seed", "changes": "seed", "request": {"text": "hello", "seed": 99}}
VOICE = {"name": "voice", "changes": "voice_ref", "request": {"text": "hello", "seed": 1, "voice_ref": "v.wav"}}


def judge(
    tmp_path: Path,
    bodies: dict[str, dict[str, Any]],
    variations: list[dict[str, Any]],
    kinds: list[str] | None,
    *,
    candidate: dict[str, dict[str, Any]] | None = None,
    justify: bool = True,
) -> Any:
    """References from the baseline (`bodies`), mixed waves at count 2 from the candidate
    (`candidate`, default the same bodies)."""
    ev = Events(tmp_path)
    ev.start("ref-baseline-a", role="reference")
    for name, body in bodies.items():
        ev.request("ref-baseline-a", "ref_cold", 0, name, body)
        ev.request("ref-baseline-a", "ref_warm", 0, name, body)
    ev.end("ref-baseline-a")
    ev.start("count2-s1", count=2)
    names = list(bodies)
    for w in range(len(names)):
        order = [names[(w + i) % len(names)] for i in range(2)]
        for req in order:
            ev.request("count2-s1", "mixed_wave", w, req, (candidate or bodies)[req], ref=f"{req}|warm")
        ev.wave("count2-s1", "mixed_wave", w, 2, order=order)
    ev.end("count2-s1")
    p = plan(variations=variations, variation_kinds=kinds, justify=justify)
    for run in ("count2-s2", "count2-s3"):  # the other two starts a PASS needs
        full_start(ev, run, 2, p, body=(candidate or bodies)["base"])
    ctx = ev.context(p)
    return m3_variation(ctx, 2, variation_effects(ctx))


def test_echoed_seed_is_not_a_changed_output(tmp_path: Path) -> None:
    # The reply echoes the seed it was given, but the audio is the same: the model ignored
    # it, even on the upstream reference. That is the plan's defect, not the candidate's.
    bodies = {"base": tts_body(1, seed=1), "longer": tts_body(2, 320, seed=1), "other_seed": tts_body(1, seed=99)}
    r = judge(tmp_path, bodies, [LONGER, SEED], ["length", "seed"])
    assert r.status is Status.PENDING and "plan defect" in r.reason and "other_seed (seed)" in r.reason
    assert "longer (" not in r.reason


def test_supported_kind_without_a_variation_is_pending(tmp_path: Path) -> None:
    bodies = {"base": tts_body(1), "longer": tts_body(2, 320), "other_seed": tts_body(3)}
    r = judge(tmp_path, bodies, [LONGER, SEED], ["length", "seed", "reference"])
    assert r.status is Status.PENDING and "reference" in r.reason
    assert "length" not in r.reason.split("kind(s)")[1].split(" in ")[0]


def test_one_variation_is_not_enough_when_more_kinds_are_supported(tmp_path: Path) -> None:
    bodies = {"base": tts_body(1), "longer": tts_body(2, 320)}
    r = judge(tmp_path, bodies, [LONGER], ["length", "seed"])
    assert r.status is Status.PENDING and "seed" in r.reason


def test_undeclared_kinds_are_pending(tmp_path: Path) -> None:
    bodies = {"base": tts_body(1), "longer": tts_body(2, 320)}
    r = judge(tmp_path, bodies, [LONGER], None)
    assert r.status is Status.PENDING and "model.variation_kinds" in r.reason


def test_every_supported_kind_with_changed_content_passes(tmp_path: Path) -> None:
    bodies = {"base": tts_body(1), "longer": tts_body(2, 320), "other_seed": tts_body(3), "voice": tts_body(4)}
    r = judge(tmp_path, bodies, [LONGER, SEED, VOICE], ["length", "seed", "reference"])
    assert r.status is Status.PASS, r.reason
    kinds = {e["variation"]: e["kind"] for e in r.evidence["effects"]}
    assert kinds == {"longer": "length", "other_seed": "seed", "voice": "reference"}


def test_text_content_counts_as_output(tmp_path: Path) -> None:
    # A reply with no audio: the transcript is the content; the echoed language is not.
    asr = [{"name": "other_seed", "changes": "seed", "request": {"text": "hello", "seed": 2}}]
    same = {
        "base": {"text": "a b c", "language": "en", "seed": 1, "timing": {}},
        "other_seed": {"text": "a b c", "language": "en", "seed": 2, "timing": {}},
    }
    r = judge(tmp_path / "a", same, asr, ["seed"])
    assert r.status is Status.PENDING and "plan defect" in r.reason
    changed = {**same, "other_seed": {"text": "a b d", "language": "en", "seed": 2, "timing": {}}}
    assert judge(tmp_path / "b", changed, asr, ["seed"]).status is Status.PASS


def test_variation_ignored_by_the_candidate_only_fails(tmp_path: Path) -> None:
    bodies = {"base": tts_body(1), "other_seed": tts_body(3)}
    # The candidate answers the seed variation with the base audio (and echoes the seed).
    candidate = {"base": tts_body(1), "other_seed": tts_body(1, seed=99)}
    r = judge(tmp_path, bodies, [SEED], ["seed"], candidate=candidate)
    assert r.status is Status.FAIL and "other_seed" in r.reason


def test_an_empty_kind_list_is_never_a_pass(tmp_path: Path) -> None:
    """`variation_kinds: []` without a reason for each kind the task supports is PENDING;
    with every reason given it is NOT_APPLICABLE, and the reasons are shown."""
    bodies = {"base": tts_body(1), "other_seed": tts_body(3)}
    r = judge(tmp_path / "a", bodies, [SEED], [], justify=False)
    assert r.status is Status.PENDING and "empty" in r.reason
    r = judge(tmp_path / "b", bodies, [SEED], [])
    assert r.status is Status.NOT_APPLICABLE and "supports no variation kind" in r.reason


def test_fewer_kinds_than_the_task_supports_need_a_reason_shown_in_the_result(tmp_path: Path) -> None:
    bodies = {"base": tts_body(1), "longer": tts_body(2, 320), "other_seed": tts_body(3)}
    r = judge(tmp_path / "a", bodies, [LONGER, SEED], ["length", "seed"], justify=False)
    assert r.status is Status.PENDING and "reference" in r.reason and "variation_kinds_justification" in r.reason
    r = judge(tmp_path / "b", bodies, [LONGER, SEED], ["length", "seed"])
    assert r.status is Status.PASS, r.reason
    assert any("reference: not varied by this synthetic plan" in x for x in r.limitations)


def test_a_length_variation_must_change_the_effective_length(tmp_path: Path) -> None:
    """A text change labelled length whose output has the same number of frames is not a
    length variation (a relabelled seed or content change does not satisfy "length")."""
    same_length = {"base": tts_body(1), "longer": tts_body(2), "other_seed": tts_body(3)}
    r = judge(tmp_path, same_length, [LONGER, SEED], ["length", "seed"])
    assert r.status is Status.PENDING and "effective length did not change" in r.reason


def test_a_kind_label_that_does_not_match_the_changed_field_is_a_plan_error(tmp_path: Path) -> None:
    import pytest

    from parval.errors import PlanError
    from parval.plan.load import load_plan
    from tests.conftest import write_plan

    bad = {"name": "relabelled", "changes": "seed", "kind": "length", "request": {"text": "x", "seed": 9}}
    same = {"name": "nothing", "changes": "seed", "request": {"text": "Hello from the reliability tests.", "seed": 7}}
    with pytest.raises(PlanError, match="kind 'length', but it changes 'seed'"):
        load_plan(write_plan(tmp_path / "a", requests={"variations": [bad]}), check_files=False)
    with pytest.raises(PlanError, match="equals the base request's"):
        load_plan(write_plan(tmp_path / "b", requests={"variations": [same]}), check_files=False)
