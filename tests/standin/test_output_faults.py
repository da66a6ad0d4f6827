"""Faults that corrupt outputs, leak memory or break the transport."""

from __future__ import annotations

import base64
import binascii
import io
import time
from concurrent.futures import Future
from typing import Any

import httpx
import pytest
import soundfile as sf
from standin_harness import Launch, Standin, Timed, busy, model


def audio_of(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    return str(response.json()["audio"])


def wave(server: Standin, texts: list[str]) -> list[str]:
    """Send the requests together and return their audio in request order."""
    calls: list[Future[Timed]] = [busy(server, "m", t) for t in texts]
    return [audio_of(c.result(10).response) for c in calls]


def references(server: Standin, texts: list[str]) -> list[str]:
    return [audio_of(server.run("m", {"text": t})) for t in texts]


def rss_mib(server: Standin) -> float:
    with open(f"/proc/{server.proc.pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise AssertionError("no VmRSS")


def test_contaminate_3plus_alters_only_waves_of_three(launch: Launch) -> None:
    server = launch([model("m", slots=4, lazy=False, knobs={"service_ms": 150})], faults=["contaminate_3plus"])
    texts = ["alpha", "bravo", "charlie"]
    refs = references(server, texts)
    assert wave(server, texts[:2]) == refs[:2]
    altered = wave(server, texts)
    assert all(a != r for a, r in zip(altered, refs, strict=True))


def test_serial_nondeterminism_perturbs_every_output(launch: Launch) -> None:
    server = launch([model("m", knobs={"service_ms": 10})], faults=["serial_nondeterminism"])
    outputs = references(server, ["same", "same", "same"])
    assert len(set(outputs)) == 3
    first, second = (sf.read(io.BytesIO(base64.b64decode(o)), dtype="int16")[0] for o in outputs[:2])
    assert (first != second).sum() <= 2 and abs(first.astype(int) - second).max() <= 2


def test_intermittent_mismatch_fires_once_and_only_under_overlap(launch: Launch) -> None:
    server = launch(
        [model("m", slots=2, lazy=False, knobs={"service_ms": 120})],
        env={"PARVAL_STANDIN_FAULTS": "intermittent_mismatch=2"},
    )
    texts = ["one", "two"]
    refs = references(server, texts)
    assert references(server, texts * 2) == refs * 2  # serial traffic never triggers it
    assert wave(server, texts) == refs  # 1st overlapping start
    second = wave(server, texts)  # 2nd overlapping start: exactly one output is off
    assert sum(a != r for a, r in zip(second, refs, strict=True)) == 1
    for _ in range(2):
        assert wave(server, texts) == refs


def test_ignore_seed_fault(launch: Launch) -> None:
    server = launch([model("m")], faults=["ignore_seed"])
    assert audio_of(server.run("m", {"text": "x", "seed": 1})) == audio_of(server.run("m", {"text": "x", "seed": 2}))
    assert "[SLOT_VALIDATION]" not in server.stderr()  # no observer without the env switch


def test_model_memory_is_allocated_and_freed(launch: Launch) -> None:
    server = launch([model("m", knobs={"model_mib": 96, "session_mib": 8})])
    before = rss_mib(server)
    assert server.run("m", {"text": "x"}).status_code == 200
    loaded = rss_mib(server)
    assert loaded - before > 90
    server.post("/v1/tasks/unload_all_models")
    assert loaded - rss_mib(server) > 80


def test_memory_growth_fault_leaks_per_request(launch: Launch) -> None:
    server = launch([model("m", knobs={"service_ms": 5})], faults=["memory_growth=32"])
    assert server.run("m", {"text": "warm up"}).status_code == 200
    before = rss_mib(server)
    for _ in range(4):
        assert server.run("m", {"text": "leak"}).status_code == 200
    assert rss_mib(server) - before > 120


def test_hang_requests_fault_never_answers(launch: Launch) -> None:
    server = launch([model("m")], faults=["hang_requests"])
    with pytest.raises(httpx.ReadTimeout):
        server.post("/v1/tasks/run", {"model": "m", "request": {"text": "x"}}, timeout=0.5)
    assert server.get("/health").status_code == 200
    assert server.stop() == 0


def test_drop_connection_fault_closes_without_a_response(launch: Launch) -> None:
    server = launch([model("m")], faults=["drop_connection"])
    with pytest.raises(httpx.RemoteProtocolError):
        server.run("m", {"text": "x"})
    assert server.get("/v1/models").status_code == 200


@pytest.mark.parametrize("fault", ["garbage_replies", "bad_base64", "bad_wav"])
def test_malformed_reply_faults(launch: Launch, fault: str) -> None:
    server = launch([model("m")], faults=[fault])
    response = server.run("m", {"text": "x"})
    assert response.status_code == 200
    if fault == "garbage_replies":
        with pytest.raises(ValueError):
            response.json()
        return
    encoded: Any = response.json()["audio"]
    if fault == "bad_base64":
        with pytest.raises(binascii.Error):
            base64.b64decode(encoded, validate=True)
    else:
        with pytest.raises(sf.LibsndfileError):
            sf.read(io.BytesIO(base64.b64decode(encoded, validate=True)))


def test_faults_merge_from_cli_and_environment(launch: Launch) -> None:
    server = launch(
        [model("m", slots=2, knobs={"service_ms": 100})],
        faults=["fake_concurrency"],
        env={"PARVAL_STANDIN_FAULTS": "ignore_seed, counters_no_drain"},
    )
    assert audio_of(server.run("m", {"text": "x", "seed": 1})) == audio_of(server.run("m", {"text": "x", "seed": 2}))
    started = time.monotonic()
    assert all(a for a in wave(server, ["p", "q"]))
    assert time.monotonic() - started > 0.2  # serialised by fake_concurrency
