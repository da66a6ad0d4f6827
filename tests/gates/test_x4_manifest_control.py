"""X4 is judged from the verify-protected result itself (a wrapper's own status is not
read), M1.manifest treats an empty source commit or build flags as missing, and with a
tolerance in force the negative control shows the tolerance path able to fail too."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from parval.framework.record_trust import x4_result
from parval.gates.masking import negative_control_caught
from parval.outputs.compare import within_tolerance
from parval.outputs.planted import plant_beyond, plant_mismatch
from parval.status import Status
from tests.gates.cmp_events import Events as CmpEvents
from tests.gates.cmp_events import tts_reply
from tests.gates.test_m_manifest import FULL, manifest_result
from tests.records_kit import CANDIDATE_COMMIT, x4_json


def test_an_x4_wrapper_claiming_pass_around_a_failed_result_fails() -> None:
    wrapped = {"id": "X4", "status": "PASS", "reason": "trust me", "evidence": x4_json("FAIL")}
    r = x4_result(wrapped, CANDIDATE_COMMIT)
    assert r.status is Status.FAIL and "changed" in r.reason
    plain = x4_result(x4_json("PASS"), CANDIDATE_COMMIT)
    assert plain.status is Status.PASS
    # A result whose own status says PASS with a changed file is never a PASS.
    forged = {**x4_json("PASS"), "changed": [{"path": "app/server/x.cpp", "kind": "modified", "hunk": ""}]}
    assert x4_result(forged, CANDIDATE_COMMIT).status is not Status.PASS


def test_an_empty_source_commit_or_build_flags_is_not_identified(tmp_path: Path) -> None:
    man = copy.deepcopy(FULL)
    man["identity"]["candidate"]["source_commit"] = ""
    man["identity"]["baseline"]["build_flags"] = "  "
    r = manifest_result(tmp_path, man)
    assert r.status is Status.PENDING
    assert "identity.candidate.source_commit" in r.reason and "identity.baseline.build_flags" in r.reason


@pytest.mark.parametrize("flags", [[], [""], ["  ", ""]])
def test_build_flags_as_a_list_of_nothing_is_not_identified(tmp_path: Path, flags: list[str]) -> None:
    """The schema allows build_flags as a list: an empty list, or one of blanks, declares nothing."""
    man = copy.deepcopy(FULL)
    man["identity"]["candidate"]["build_flags"] = flags
    r = manifest_result(tmp_path, man)
    assert r.status is Status.PENDING and "identity.candidate.build_flags" in r.reason
    man["identity"]["candidate"]["build_flags"] = ["", "-DGGML_CUDA=ON"]
    assert manifest_result(tmp_path, man).status is Status.PASS


def test_with_a_tolerance_the_negative_control_exercises_the_tolerance_path(tmp_path: Path) -> None:
    """The ordinary planted change (one byte) can lie within a tolerance: it would not show
    the tolerance path able to fail. The control also moves a sample beyond the tolerance,
    and is caught only if the tolerance does not cover that."""
    body = json.dumps(tts_reply()).encode()
    assert within_tolerance(plant_mismatch(body), body, [], 2)[0]  # one LSB: within tolerance 2
    beyond = plant_beyond(body, 2)
    assert beyond is not None and not within_tolerance(beyond, body, [], 2)[0]
    ev = CmpEvents(tmp_path)
    a = ev.start("ref-baseline-a", role="reference", count=1, exe_role="baseline")
    src = ev.request("ref-baseline-a", a, "ref_cold", tts_reply())
    ev.end("ref-baseline-a", a)
    ev.events.append({"kind": "negative_control", "caught": True, "source": {"artifact": src["artifact"]}})
    rec = ev.records()
    assert negative_control_caught(rec, tmp_path, 2) is True
    assert negative_control_caught(rec, None, 2) is False  # raw replies unavailable: not shown
    ev.events[-1] = {"kind": "negative_control", "caught": True, "source": {"artifact": "0" * 64}}
    assert negative_control_caught(ev.records(), tmp_path, 2) is False
    assert negative_control_caught(ev.records(), tmp_path, None) is True
