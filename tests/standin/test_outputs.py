"""Deterministic outputs, inputs that must change them, audio encodings and traces."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import soundfile as sf
from standin_harness import Launch, Standin, model


def without_timing(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body = response.json()
    assert list(body)[-1] == "timing"
    body.pop("timing")
    return dict(body)


def pcm(b64_wav: str) -> tuple[np.ndarray[Any, Any], int]:
    data, rate = sf.read(io.BytesIO(base64.b64decode(b64_wav)), dtype="int16")
    return data, rate


def write_wav(path: Path, seconds: float, freq: float, rate: int = 16000) -> Path:
    t = np.arange(int(seconds * rate)) / rate
    tone = (0.4 * np.sin(2 * np.pi * freq * t) * (np.sin(2 * np.pi * 2 * t) > 0)).astype(np.float32)
    sf.write(path, tone, rate, subtype="PCM_16")
    return path


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("inputs")
    (directory / "model2.bin").write_bytes(b"different weights\n" * 32)
    write_wav(directory / "speech.wav", 1.0, 220.0)
    write_wav(directory / "other.wav", 0.7, 330.0)
    return directory


@pytest.fixture(scope="module")
def server(module_launch: Launch, workdir: Path) -> Standin:
    models = [
        model("tts", slots=2, family="fam", knobs={"service_ms": 20}),
        model("tts2", slots=2, family="fam", path=str(workdir / "model2.bin"), knobs={"service_ms": 20}),
        model("cache", slots=1, knobs={"service_ms": 20, "cache_sensitive": "true"}),
        model("asr", task="asr", knobs={"service_ms": 20}),
        model("vad", task="vad", knobs={"service_ms": 20}),
        model("stream", mode="streaming", knobs={"service_ms": 80}),
        model("asr_stream", task="asr", mode="streaming", knobs={"service_ms": 40}),
        model("batch", knobs={"service_ms": 20, "native_batch": True}),
    ]
    return module_launch(
        models, env={"AUDIOCPP_SLOT_VALIDATION_OBSERVER": "1", "PARVAL_STANDIN_TRACE": str(workdir / "trace.jsonl")}
    )


def test_same_request_gives_identical_bytes(server: Standin) -> None:
    request = {"text": "hello world", "seed": 1234}
    first, second = server.run("tts", request), server.run("tts", request)
    assert without_timing(first) == without_timing(second)
    body = first.json()
    assert list(body) == ["audio", "sample_rate", "channels", "timing"]
    assert list(body["timing"]) == ["wall_ms", "audio_duration_ms", "rtf"]
    assert body["timing"]["wall_ms"] >= 20
    raw = base64.b64decode(body["audio"])
    assert raw[:4] == b"RIFF" and raw[36:40] == b"data"  # 44-byte PCM16 header
    samples, rate = pcm(body["audio"])
    assert (rate, body["sample_rate"], body["channels"], samples.ndim) == (16000, 16000, 1, 1)
    assert body["timing"]["audio_duration_ms"] == pytest.approx(1000 * len(samples) / rate)


def test_every_input_changes_the_output(server: Standin, workdir: Path) -> None:
    base = {"text": "hello world", "seed": 1}
    reference = server.run("tts", base).json()["audio"]
    variants: list[dict[str, Any]] = [
        {"seed": 2},
        {"text": "hello world!"},
        {"max_tokens": 20},
        {"voice_ref": str(workdir / "speech.wav")},
        {"temperature": 0.7},
    ]
    outputs = [server.run("tts", {**base, **v}).json()["audio"] for v in variants]
    assert all(o != reference for o in outputs)
    assert len(set(outputs)) == len(outputs)
    assert server.run("tts", {**base, "seed": "1"}).json()["audio"] == reference
    assert server.run("tts2", base).json()["audio"] != reference  # another model file


def test_audio_grows_with_text_and_max_tokens_caps_it(server: Standin) -> None:
    short, _ = pcm(server.run("tts", {"text": "hi"}).json()["audio"])
    long, _ = pcm(server.run("tts", {"text": "hi " * 20}).json()["audio"])
    capped, _ = pcm(server.run("tts", {"text": "hi " * 20, "max_tokens": 5}).json()["audio"])
    assert len(short) < len(long)
    assert len(capped) == 5 * 16000 // 50


def test_asr_and_vad_outputs_derive_from_the_input_audio(server: Standin, workdir: Path) -> None:
    speech = str(workdir / "speech.wav")
    by_path = server.run("asr", {"audio": speech, "language": "de"})
    encoded = base64.b64encode((workdir / "speech.wav").read_bytes()).decode()
    by_b64 = server.run("asr", {"audio_base64": f"data:audio/wav;base64,{encoded}", "language": "de"})
    assert without_timing(by_path) == without_timing(by_b64)
    assert list(by_path.json()) == ["text", "language", "timing"]
    assert by_path.json()["language"] == "de" and by_path.json()["text"]
    assert list(by_path.json()["timing"]) == ["wall_ms"]
    other = server.run("asr", {"audio": str(workdir / "other.wav"), "language": "de"})
    assert other.json()["text"] != by_path.json()["text"]
    segments = server.run("vad", {"audio": speech}).json()["segments"]
    assert segments and all(list(s) == ["start_sample", "end_sample", "confidence"] for s in segments)
    assert all(0 <= s["start_sample"] < s["end_sample"] <= 16000 for s in segments)


@pytest.mark.parametrize(
    ("request_body", "status", "message"),
    [
        ({"audio": "x.wav", "audio_base64": "AAAA"}, 400, "provide only one of audio or audio_base64"),
        ({"audio_base64": ""}, 400, "audio_base64 must be a non-empty string"),
        ({"audio_base64": "***"}, 400, "audio_base64 must contain a valid Base64-encoded WAV"),
        ({"audio_base64": "data:audio/wav;base64,"}, 400, "audio_base64 contains no audio"),
        (
            {"audio_base64": base64.b64encode(b"RIFF but not really").decode()},
            400,
            "audio_base64 must contain a valid Base64-encoded WAV",
        ),
        ({"audio": "/no/such/input.wav"}, 500, "could not open WAV input: /no/such/input.wav"),
    ],
)
def test_input_audio_errors(server: Standin, request_body: dict[str, Any], status: int, message: str) -> None:
    response = server.run("asr", request_body)
    assert (response.status_code, response.json()["error"]["message"]) == (status, message)


def test_empty_wav_contains_no_audio(server: Standin) -> None:
    buffer = io.BytesIO()
    sf.write(buffer, np.zeros(0, dtype=np.int16), 16000, format="WAV", subtype="PCM_16")
    response = server.run("asr", {"audio_base64": base64.b64encode(buffer.getvalue()).decode()})
    assert response.json()["error"]["message"] == "audio_base64 contains no audio"


def test_cache_sensitive_cold_differs_from_warm_and_unload_restores_cold(server: Standin) -> None:
    request = {"text": "reference voice", "seed": 7}
    cold = without_timing(server.run("cache", request))
    warm = without_timing(server.run("cache", request))
    assert cold != warm
    assert server.run("cache", {"text": "x", "max_tokens": -1}).status_code == 400
    assert without_timing(server.run("cache", request)) == warm  # invalid input left no history
    server.post("/v1/tasks/unload_models", {"model_ids": ["cache"]})
    assert without_timing(server.run("cache", request)) == cold


def _sse_events(text: str) -> list[Any]:
    events = [line[len("data: ") :] for line in text.split("\n\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    return [json.loads(e) for e in events[:-1]]


def test_speech_stream_concatenates_to_the_offline_audio(server: Standin) -> None:
    request = {"text": "streaming words here", "seed": 5}
    offline, _ = pcm(server.run("stream", request).json()["audio"])
    with server.client.stream(
        "POST", "/v1/audio/speech", json={"model": "stream", "input": request["text"], "seed": 5, "stream": True}
    ) as response:
        assert response.headers["content-type"] == "text/event-stream"
        assert response.headers["transfer-encoding"] == "chunked"
        assert response.headers["cache-control"] == "no-cache"
        events = _sse_events(response.read().decode())
    deltas = [e for e in events if e["type"] == "speech.audio.delta"]
    assert len(deltas) > 1 and events[-1]["type"] == "speech.audio.done"
    assert "ttft_ms" in events[-1]["timing"]
    joined = b"".join(base64.b64decode(e["audio"]) for e in deltas)
    assert joined == offline.astype("<i2").tobytes()
    raw = server.post(
        "/v1/audio/speech", {"model": "stream", "input": request["text"], "seed": 5, "stream_format": "audio"}
    )
    assert raw.headers["content-type"] == "application/octet-stream"
    assert raw.content == joined


def test_task_stream_json_and_sse(server: Standin) -> None:
    request = {"text": "stream me", "seed": 3}
    offline = without_timing(server.run("stream", request))
    body = server.post("/v1/tasks/stream", {"model": "stream", "request": request}).json()
    assert body["events"][-1]["is_final"] is True and len(body["events"]) == 8
    assert list(body["result"]["timing"]) == ["ttft_ms"]
    body["result"].pop("timing")
    assert body["result"] == offline
    sse = server.post("/v1/tasks/stream", {"model": "stream", "request": request, "stream_format": "sse"})
    events = _sse_events(sse.text)
    assert [e["type"] for e in events] == ["task.stream.event"] * 8 + ["task.stream.done"]
    refused = server.post("/v1/tasks/stream", {"model": "stream", "request": request, "stream_format": "audio"})
    assert (refused.status_code, refused.json()["error"]["message"]) == (400, "task stream stream_format must be sse")
    offline_model = server.post("/v1/tasks/stream", {"model": "tts", "request": request})
    assert offline_model.json()["error"]["message"] == ("configured model does not provide streaming execution: tts")
    speech = server.post("/v1/audio/speech", {"model": "tts", "input": "x", "stream": True})
    assert (speech.status_code, speech.json()["error"]["message"]) == (
        500,
        "speech streaming requires a model configured with mode=streaming",
    )


def test_speech_route_returns_wav_and_json(server: Standin) -> None:
    offline = server.run("tts", {"text": "speak", "seed": 9}).json()["audio"]
    wav = server.post("/v1/audio/speech", {"model": "tts", "input": "speak", "seed": 9})
    assert wav.headers["content-type"] == "audio/wav"
    assert float(wav.headers["x-audiocpp-wall-ms"]) > 0
    assert wav.headers["x-audiocpp-rtf"].count(".") == 1
    assert wav.content == base64.b64decode(offline)
    as_json = server.post(
        "/v1/audio/speech", {"model": "tts", "input": "speak", "seed": 9, "response_format": "json"}
    ).json()
    assert list(as_json) == ["audio", "format", "timing"] and as_json["audio"] == offline


def test_native_batch_results_match_single_requests(server: Standin) -> None:
    requests = [{"text": "one", "seed": 1}, {"text": "two", "seed": 2}]
    singles = [server.run("batch", r).json()["audio"] for r in requests]
    events = _sse_events(server.post("/v1/tasks/batch", {"model": "batch", "requests": requests}).text)
    results = [e for e in events if e["type"] == "task.batch.result"]
    assert [r["index"] for r in results] == [0, 1]
    assert [r["result"]["audio"] for r in results] == singles
    assert all(r["result"]["timing"] is None for r in results)
    assert events[-1]["type"] == "task.batch.done" and events[-1]["result_count"] == 2
    refused = server.post("/v1/tasks/batch", {"model": "tts", "requests": requests})
    assert (refused.status_code, refused.json()["error"]["message"]) == (
        400,
        "configured model does not provide native offline batching: tts",
    )
    empty = server.post("/v1/tasks/batch", {"model": "batch", "requests": []})
    assert empty.json()["error"]["message"] == ("task batch request requires a non-empty 'requests' array")


def test_observer_and_benchmark_traces(server: Standin, workdir: Path) -> None:
    server.run("asr", {"audio": str(workdir / "speech.wav"), "seed": 1234, "text": "ctx"})
    prefix = "[SLOT_VALIDATION] "
    lines = [json.loads(line[len(prefix) :]) for line in server.stderr().splitlines() if line.startswith(prefix)]
    last = lines[-1]
    assert set(last) == {"model", "slot", "session", "text", "audio_samples", "voice_samples", "seed"}
    assert (last["model"], last["slot"], last["text"], last["audio_samples"], last["seed"]) == (
        "asr",
        0,
        "ctx",
        16000,
        "1234",
    )
    assert last["session"].startswith("0x")
    assert not any(line["model"] == "stream" for line in lines)  # offline path only
    records = [json.loads(line) for line in (workdir / "trace.jsonl").read_text().splitlines()]
    assert all(r["accept_ns"] <= r["start_ns"] <= r["end_ns"] for r in records)
    assert set(records[-1]) == {"route", "model", "accept_ns", "start_ns", "end_ns", "slot", "text"}
    assert records[-1]["route"] == "/v1/tasks/run" and records[-1]["model"] == "asr"


def test_stream_disconnect_releases_the_lease(launch: Launch) -> None:
    server = launch([model("s", mode="streaming", knobs={"service_ms": 1600})])
    with server.client.stream(
        "POST", "/v1/audio/speech", json={"model": "s", "input": "long stream", "stream": True}
    ) as resp:
        next(resp.iter_lines())
        assert server.models()["s"]["active_slots"] == 1  # held while streaming
    server.wait_for(lambda m: m["s"]["active_slots"] == 0, timeout=0.9)


def test_transcription_routes_json_multipart_and_stream(server: Standin, workdir: Path) -> None:
    speech = workdir / "speech.wav"
    plain = server.post("/v1/audio/transcriptions", {"model": "asr", "file": str(speech), "language": "de"}).json()
    assert list(plain) == ["text", "timing"]
    assert plain["timing"]["audio_duration_ms"] == 1000
    by_run = server.run("asr", {"audio": str(speech), "language": "de"}).json()
    assert plain["text"] == by_run["text"]
    details = server.post("/v1/audio/transcriptions/details", {"model": "asr", "audio_path": str(speech)}).json()
    assert list(details) == ["text", "language", "sample_rate", "timing"]
    upload = server.post(
        "/v1/audio/transcriptions",
        files={"file": ("a.wav", speech.read_bytes())},
        data={"model": "asr", "language": "de"},
    )
    assert upload.json()["text"] == plain["text"]
    mp3 = server.post("/v1/audio/transcriptions", files={"file": ("a.mp3", b"ID3")}, data={"model": "asr"})
    assert mp3.status_code == 400 and "only WAV audio uploads" in mp3.json()["error"]["message"]
    streamed = server.post(
        "/v1/audio/transcriptions", {"model": "asr_stream", "stream": True, "file": str(speech), "language": "de"}
    )
    events = _sse_events(streamed.text)
    text = "".join(e["delta"] for e in events if e["type"] == "transcript.text.delta")
    assert events[-1]["type"] == "transcript.text.done" and events[-1]["text"] == text
    refused = server.post("/v1/audio/transcriptions", {"model": "asr", "stream": True, "file": str(speech)})
    assert refused.status_code == 500
    missing = server.post("/v1/audio/transcriptions", {"model": "asr"})
    assert (missing.status_code, missing.json()["error"]["message"]) == (
        500,
        "transcription request requires audio, audio_path, or file path",
    )
