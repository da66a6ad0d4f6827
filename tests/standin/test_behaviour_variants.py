"""Behaviour variants a correct server may have: registration-dependent and cold/warm outputs."""

from __future__ import annotations

from pathlib import Path

import pytest
from standin_harness import Launch, model
from test_output_faults import audio_of

from parval.standin.errors import StartupError
from parval.standin.faults import FAULT_DEFAULTS, parse_faults


def test_variants_parse_like_faults() -> None:
    assert {"registration_outputs", "cold_warm_differ"} <= set(FAULT_DEFAULTS)
    faults = parse_faults(["cold_warm_differ"], "registration_outputs")
    assert faults.on("registration_outputs") and faults.on("cold_warm_differ")
    with pytest.raises(StartupError):
        parse_faults(["registration_outputs=2"], None)


def test_registration_outputs_depend_on_id_and_path(launch: Launch, tmp_path: Path) -> None:
    for folder in ("one", "two"):  # same files (same hash) at two paths
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "w.bin").write_bytes((tmp_path / "model.bin").read_bytes())
    entries = [
        model("a", path="one"),
        model("b", family="a_family", path="one"),
        model("c", family="a_family", path="two"),
    ]
    plain = launch(entries)
    outs = [audio_of(plain.run(m, {"text": "hello"})) for m in ("a", "b", "c")]
    assert len(set(outs)) == 1  # default: identical weights give identical outputs
    varied = launch(entries, faults=["registration_outputs"])
    again = [audio_of(varied.run(m, {"text": "hello"})) for m in ("a", "b", "c")]
    assert len(set(again)) == 3  # the id (a vs b) and the path (b vs c) both change it
    # still deterministic per registration, across a reload and a fresh process
    assert audio_of(varied.run("a", {"text": "hello"})) == again[0]
    assert varied.post("/v1/tasks/unload_all_models", {}).status_code == 200
    assert audio_of(varied.run("a", {"text": "hello"})) == again[0]
    fresh = launch(entries, env={"PARVAL_STANDIN_FAULTS": "registration_outputs"})
    assert audio_of(fresh.run("b", {"text": "hello"})) == again[1]


def test_registration_outputs_follow_a_registered_id(launch: Launch) -> None:
    server = launch([model("a")], faults=["registration_outputs"], ui_management=True)
    ref = audio_of(server.run("a", {"text": "hi"}))
    body = model("a-retry", family="a_family")
    assert server.post("/v1/models/load", body).status_code == 200
    assert audio_of(server.run("a-retry", {"text": "hi"})) != ref


def test_cold_warm_differ_only_on_the_first_request_after_a_load(launch: Launch) -> None:
    server = launch([model("m")], faults=["cold_warm_differ"])
    cold, warm, warm2 = (audio_of(server.run("m", {"text": "same"})) for _ in range(3))
    assert cold != warm and warm == warm2
    # another request on the now warm session is warm too: it matches a warm reference
    other_warm = audio_of(server.run("m", {"text": "other"}))
    assert server.post("/v1/tasks/unload_all_models", {}).status_code == 200
    assert audio_of(server.run("m", {"text": "same"})) == cold  # cold again after reload
    assert audio_of(server.run("m", {"text": "other"})) == other_warm
    plain = launch([model("m")])
    assert audio_of(plain.run("m", {"text": "same"})) == audio_of(plain.run("m", {"text": "same"}))


def test_cold_warm_differ_is_per_session(launch: Launch) -> None:
    server = launch([model("m", slots=2, lazy=False, knobs={"service_ms": 150})], faults=["cold_warm_differ"])
    first = [server.submit(lambda: server.run("m", {"text": "same"})) for _ in range(2)]
    colds = [audio_of(f.result(10).response) for f in first]
    assert colds[0] == colds[1]  # both sessions were cold
    assert audio_of(server.run("m", {"text": "same"})) != colds[0]
