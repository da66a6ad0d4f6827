"""Bad input: malformed plans get a clear message naming the place and exit 2 (never a
traceback); malformed server replies are recorded as such and never count as a PASS."""

from __future__ import annotations

import base64
import io
import json
import os
import socket
import string
import wave
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parval.errors import PlanError
from parval.gates.exactness import judge_requests
from parval.outputs.compare import canonicalize
from parval.plan.load import Plan, load_plan
from parval.rundir.event_index import build_records
from parval.server.client import CONNECT_ERROR, INDETERMINATE, OK, OVERSIZE, Client
from tests.conftest import SMALL_PLAN, write_plan

from .conftest import parval

HYPO = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


# -- plans ---------------------------------------------------------------------------------
def _plan_error(path: Path) -> str:
    with pytest.raises(PlanError) as info:
        load_plan(path)
    return str(info.value)


def test_yaml_syntax_error_names_file_line_and_column(tmp_path: Path) -> None:
    path = write_plan(tmp_path)
    path.write_text(path.read_text().replace("counts:\n- 1\n- 2", "counts: [1, 2"))
    msg = _plan_error(path)
    assert f"{path}:" in msg and "YAML syntax error" in msg
    assert any(ch.isdigit() for ch in msg.split("YAML")[0])


def test_schema_errors_name_the_field(tmp_path: Path) -> None:
    msg = _plan_error(write_plan(tmp_path, counts=[1, 17], timeouts={"request_s": -1}))
    assert "counts[1]: 17 is greater than the maximum of 16" in msg
    assert "timeouts.request_s" in msg


def test_missing_files_and_unusable_executables_are_named(tmp_path: Path) -> None:
    not_exec = tmp_path / "server.sh"
    not_exec.write_text("#!/bin/sh\n")
    not_exec.chmod(0o644)
    path = write_plan(
        tmp_path / "p",
        servers={"baseline": {"executable": str(tmp_path / "nope")}, "candidate": {"executable": str(not_exec)}},
        model={"path": "missing.bin"},
    )
    msg = _plan_error(path)
    assert f"servers.baseline.executable: '{tmp_path / 'nope'}' not found" in msg
    assert f"servers.candidate.executable: '{not_exec}' is not executable" in msg
    # a relative path is shown as written, with the folder it was resolved from
    assert f"model.path: 'missing.bin' (relative to the plan's folder {path.parent}) does not exist" in msg
    msg = _plan_error(write_plan(tmp_path / "d", servers={"candidate": {"executable": str(tmp_path)}}))
    assert f"servers.candidate.executable: '{tmp_path}' is a directory, not an executable file" in msg
    assert "is not executable" not in msg


def test_relative_paths_in_errors_name_the_plan_folder(tmp_path: Path) -> None:
    """Executables, fixtures and auxiliary files written relative to the plan are shown as
    written and with the folder parval resolved them from; a bare name says it was looked up
    on PATH."""
    plan = write_plan(
        tmp_path / "plans",
        servers={"baseline": {"executable": "../build/server"}, "candidate": {"executable": "no-such-server-here"}},
        requests={"base": {"audio": "fixtures/speech.wav"}, "variations": []},
        model={"auxiliary_files": ["vocab/tokens.txt"]},
    )
    msg = _plan_error(plan)
    folder = plan.parent.resolve()
    assert f"servers.baseline.executable: '../build/server' (relative to the plan's folder {folder}) not found" in msg
    assert "servers.candidate.executable: 'no-such-server-here' not found on PATH" in msg
    assert f"write ./no-such-server-here for a file in the plan's folder {folder}" in msg
    assert f"requests.base.audio: 'fixtures/speech.wav' (relative to the plan's folder {folder}) does not exist" in msg
    assert f"model.auxiliary_files[0]: 'vocab/tokens.txt' (relative to the plan's folder {folder})" in msg


def test_a_plan_key_typo_gets_a_did_you_mean(tmp_path: Path) -> None:
    path = write_plan(tmp_path)
    path.write_text(path.read_text().replace("counts:", "cuonts:", 1))
    msg = _plan_error(path)
    assert "'cuonts' was unexpected" in msg and "(did you mean 'counts'?)" in msg
    path.write_text(path.read_text().replace("cuonts:", "counts:").replace("timeouts:", "timeuots:", 1))
    assert "(did you mean 'timeouts'?)" in _plan_error(path)


def test_a_port_already_taken_is_a_plan_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        msg = _plan_error(write_plan(tmp_path, server={"extra_config": {"port": port}}))
    assert f"server.extra_config.port: {port} cannot be bound on 127.0.0.1" in msg


@pytest.mark.parametrize("case", ["syntax", "schema", "missing_exe", "no_plan"])
def test_cli_plan_errors_exit_2_without_traceback(tmp_path: Path, case: str) -> None:
    path = write_plan(tmp_path)
    if case == "syntax":
        path.write_text("name: [unclosed\n")
    elif case == "schema":
        path = write_plan(tmp_path, counts=[0])
    elif case == "missing_exe":
        path = write_plan(tmp_path, servers={"candidate": {"executable": "/nonexistent/audiocpp_server"}})
    else:
        path = tmp_path / "absent.yaml"
    for cmd in ("validate", "run"):
        proc = parval(cmd, path, "--out", tmp_path / "run") if cmd == "run" else parval(cmd, path)
        assert proc.returncode == 2, (cmd, proc.stdout, proc.stderr)
        assert proc.stderr.startswith("parval: error: ") and "Traceback" not in proc.stderr
        assert str(path) in proc.stderr
    assert not (tmp_path / "run" / "events.jsonl").exists()  # nothing was started


JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)
PATHS = [
    ("name",),
    ("counts",),
    ("starts_per_count",),
    ("servers",),
    ("servers", "candidate"),
    ("servers", "candidate", "executable"),
    ("servers", "baseline", "args"),
    ("servers", "candidate", "env"),
    ("model",),
    ("model", "path"),
    ("model", "id"),
    ("model", "auxiliary_files"),
    ("requests",),
    ("requests", "base"),
    ("requests", "variations"),
    ("requests", "base", "voice_ref"),
    ("timeouts",),
    ("timeouts", "request_s"),
    ("waves", "warm"),
    ("memory",),
    ("server", "host"),
    ("server", "extra_config"),
    ("server", "extra_config", "port"),
    ("compare",),
    ("compare", "volatile_fields"),
    ("schema_version",),
    ("framework",),
    ("stop_on_crash",),
]
NASTY = st.sampled_from(
    [
        "",
        "\x00",
        "a\x00b",
        "~nouser/x",
        "/",
        ".",
        "..",
        "x" * 5000,
        "/dev/null",
        "-rf",
        "$(reboot)",
        "C:\\x",
        "\ud7ff",
        "2024-13-45",
        "NaN",
    ]
)


@HYPO
@given(edits=st.lists(st.tuples(st.sampled_from(PATHS), st.one_of(JSONISH, NASTY) | st.just("__delete__")), max_size=4))
def test_generated_plans_load_or_raise_plan_error(tmp_path: Path, edits: list[tuple[tuple[str, ...], Any]]) -> None:
    plan = json.loads(json.dumps(SMALL_PLAN))
    for path, value in edits:
        node: Any = plan
        for key in path[:-1]:
            if not isinstance(node, dict) or not isinstance(node.get(key), dict):
                node = None
                break
            node = node[key]
        if isinstance(node, dict):
            if value == "__delete__":
                node.pop(path[-1], None)
            else:
                node[path[-1]] = value
    target = write_plan(tmp_path)  # writes model.bin; then replace the plan text
    target.write_text(yaml.safe_dump(plan, allow_unicode=True))
    try:
        loaded = load_plan(target)
    except PlanError as exc:
        assert str(exc).strip()
    else:
        assert isinstance(loaded, Plan)


@HYPO
@given(text=st.text(alphabet=st.sampled_from(string.printable + "\x00é{}[]:-&*!|>'\"%@`"), max_size=300))
def test_arbitrary_plan_text_loads_or_raises_plan_error(tmp_path: Path, text: str) -> None:
    target = tmp_path / "plan.yaml"
    target.write_text(text)
    try:
        load_plan(target)
    except PlanError as exc:
        assert str(exc).strip()


@HYPO
@given(data=st.binary(max_size=200))
def test_binary_plan_file_raises_plan_error(tmp_path: Path, data: bytes) -> None:
    # 200 random bytes never spell a whole plan, so every one is refused, naming the file.
    target = tmp_path / "plan.yaml"
    target.write_bytes(data)
    assert str(target) in _plan_error(target)


# -- server replies ------------------------------------------------------------------------
def _wav(frames: int = 32, rate: int = 16000) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(os.urandom(frames * 2))
    return buf.getvalue()


GOOD_AUDIO = base64.b64encode(_wav()).decode()
AUDIO_VALUES = st.one_of(
    st.just(GOOD_AUDIO),
    st.just("data:audio/wav;base64," + GOOD_AUDIO),
    st.text(max_size=40),
    st.binary(max_size=40).map(lambda b: base64.b64encode(b).decode()),
    st.just(base64.b64encode(b"RIFF\x10\x00\x00\x00WAVEfmt ").decode()),
    st.just("!!not base64!!"),
    st.just(GOOD_AUDIO[:-7]),
    JSONISH,
)
REPLIES = st.one_of(
    st.binary(max_size=300),
    JSONISH.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries(
        {"audio": AUDIO_VALUES},
        optional={
            "text": st.text(max_size=10),
            "timing": JSONISH,
            "error": JSONISH,
            "named_audio_outputs": st.lists(
                st.fixed_dictionaries({"id": st.text(max_size=3), "audio": AUDIO_VALUES}), max_size=2
            ),
        },
    ).map(lambda d: json.dumps(d).encode()),
)


@HYPO
@given(body=REPLIES, volatile=st.lists(st.sampled_from(["timing", "text", "audio", "a.b", "x"]), max_size=3))
def test_canonicalize_never_raises_and_accepts_only_well_formed_replies(body: bytes, volatile: list[str]) -> None:
    out = canonicalize(body, volatile)
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        assert not out.valid
        return
    if out.valid:
        assert isinstance(data, dict) and "error" not in data
        for name, info in out.audio.items():
            assert info["frames"] >= 0 and info["sample_rate"] > 0, name
        if "audio" in data:
            assert "audio" in out.audio  # every audio field decoded
    if (
        isinstance(data, dict)
        and "audio" in data
        and data["audio"] not in (GOOD_AUDIO, "data:audio/wav;base64," + GOOD_AUDIO)
    ):
        # anything but a real WAV in the audio field is malformed
        raw = data["audio"]
        if not (isinstance(raw, str) and _decodes(raw)):
            assert not out.valid


def test_a_reply_nested_too_deeply_to_parse_is_malformed_not_a_crash() -> None:
    from parval.runners.start import _canonical

    out = _canonical(b"[" * 100_000 + b"]" * 100_000, [])
    assert not out.valid and out.problem


def _decodes(value: str) -> bool:
    from parval.outputs.compare import decode_wav_b64

    return decode_wav_b64(value)[0] is not None


OUTCOMES = st.sampled_from(["ok", "http_error", "indeterminate", "oversize", "connect_error", None, "weird"])


@HYPO
@given(replies=st.lists(st.tuples(OUTCOMES, REPLIES, st.booleans()), min_size=1, max_size=8))
def test_a_malformed_or_unknown_reply_never_counts_as_exact(replies: list[tuple[Any, bytes, bool]]) -> None:
    """Whatever the replies, judging never raises, and only an ok reply whose output is
    well-formed and equal to its reference can be counted exact."""
    from parval.gates.judge_context import JudgeContext, exact_result
    from parval.runners.start import _canonical

    ref_out = _canonical(json.dumps({"audio": GOOD_AUDIO}).encode(), ["timing"]).to_json()
    events: list[dict[str, Any]] = [
        {"kind": "run_start", "run": "ref-baseline-a", "attempt": 1, "role": "reference", "count": 1},
        {
            "kind": "request",
            "run": "ref-baseline-a",
            "attempt": 1,
            "phase": "ref_cold",
            "wave": 0,
            "req": "base",
            "ref": "base|cold",
            "reply": {"outcome": "ok", "status": 200},
            "output": ref_out,
            "t_send": 0.0,
            "t_done": 0.1,
        },
        {"kind": "run_end", "run": "ref-baseline-a", "attempt": 1},
        {"kind": "run_start", "run": "count1-s1", "attempt": 2, "role": "count", "count": 1},
    ]
    good = 0
    for outcome, body, valid_json in replies:
        out = _canonical(body, ["timing"]).to_json() if outcome == "ok" and valid_json else None
        events.append(
            {
                "kind": "request",
                "run": "count1-s1",
                "attempt": 2,
                "phase": "cold_wave",
                "wave": 0,
                "req": "base",
                "ref": "base|cold",
                "reply": {"outcome": outcome, "status": 200},
                "output": out,
                "t_send": 0.0,
                "t_done": 0.1,
            }
        )
        if outcome == "ok" and out and out["valid"] and out["canon"] == ref_out["canon"]:
            good += 1
    events.append({"kind": "run_end", "run": "count1-s1", "attempt": 2})
    rec = build_records(events)
    tally = judge_requests(rec, rec.requests("count1-s1"))
    assert tally.exact == good
    result = exact_result("M2.exact", tally, "test", JudgeContext(rec, SMALL_PLAN, {}, None, "plan.yaml"))
    if good < len(replies):
        assert str(result.status) != "PASS"


# -- the client against a misbehaving HTTP peer -----------------------------------------------
async def _peer(behaviour: str, port_box: list[int], ready: anyio.Event) -> None:
    async def handle(stream: Any) -> None:
        async with stream:
            try:
                await stream.receive(65536)
                if behaviour == "notjson":
                    body = b"<html>proxy error {not json"
                    await stream.send(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body
                    )
                elif behaviour == "declared_oversize":
                    await stream.send(b"HTTP/1.1 200 OK\r\nContent-Length: 10485760\r\n\r\n" + b"x" * 100)
                    await anyio.sleep(5)
                elif behaviour == "chunked_oversize":
                    await stream.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                    for _ in range(64):
                        await stream.send(b"400\r\n" + b"y" * 1024 + b"\r\n")
                    await anyio.sleep(5)
                elif behaviour == "trickle":
                    await stream.send(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
                    for _ in range(1000):
                        await stream.send(b"z")
                        await anyio.sleep(0.05)
                elif behaviour == "reset":
                    pass  # close without a reply
                elif behaviour == "hang":
                    await anyio.sleep(30)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    async with listener:
        port_box.append(listener.extra(anyio.abc.SocketAttribute.local_port))
        ready.set()
        await listener.serve(handle)


@pytest.mark.parametrize(
    "behaviour, outcome",
    [
        ("notjson", OK),
        ("declared_oversize", OVERSIZE),
        ("chunked_oversize", OVERSIZE),
        ("trickle", INDETERMINATE),
        ("reset", INDETERMINATE),
        ("hang", INDETERMINATE),
        ("refused", CONNECT_ERROR),
    ],
)
def test_client_records_every_misbehaviour_as_data_within_the_deadline(behaviour: str, outcome: str) -> None:
    async def main() -> tuple[Any, float]:
        port: list[int] = []
        ready = anyio.Event()
        async with anyio.create_task_group() as tg:
            if behaviour == "refused":
                with socket.socket() as s:
                    s.bind(("127.0.0.1", 0))
                    port.append(s.getsockname()[1])
            else:
                tg.start_soon(_peer, behaviour, port, ready)
                await ready.wait()
            client = Client(
                f"http://127.0.0.1:{port[0]}", max_connections=4, request_timeout_s=0.6, max_body_bytes=16 * 1024
            )
            t0 = anyio.current_time()
            reply = await client.post("/v1/tasks/run", {"model": "m", "request": {}})
            took = anyio.current_time() - t0
            await client.aclose()
            tg.cancel_scope.cancel()
        return reply, took

    reply, took = anyio.run(main)
    assert reply.outcome == outcome, reply
    assert took < 0.6 + 0.5
    if behaviour == "notjson":
        assert not canonicalize(reply.body, []).valid
    if outcome == OVERSIZE:
        assert "max_response_mib" in reply.error
