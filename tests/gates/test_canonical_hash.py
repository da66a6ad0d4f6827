"""`canonical_sha256` is the sha256 of the canonical `json.dumps` of a reply, whatever the
reply holds: long strings that are set aside, long strings that must be escaped, strings
that look like its placeholders."""

from __future__ import annotations

import base64
import hashlib
import json
import random
from typing import Any

import pytest

from parval.outputs import canonical_hash
from parval.outputs.canonical_hash import MIN_SET_ASIDE_CHARS, canonical_sha256


def _reference(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _b64(n: int, seed: int) -> str:
    return base64.b64encode(random.Random(seed).randbytes(n)).decode()


LONG = _b64(3000, 1)
LONG2 = _b64(5000, 2)
CASES: dict[str, Any] = {
    "audio reply": {"audio": LONG, "sample_rate": 24000, "text": "hi", "timing": {"wall_ms": 1.5}},
    "data uri": {"audio": "data:audio/wav;base64," + LONG},
    "named outputs": {
        "named_audio_outputs": [{"id": "b", "audio": LONG2}, {"id": "a", "audio": LONG}, 3, "x"],
        "audio": LONG,  # the same string twice
        "z": [LONG2],  # a long string directly in a list: encoded as before
    },
    "nested dict": {"meta": {"blob": LONG, "n": 1}, "a": None, "b": [True, 1.5]},
    "short strings only": {"audio": "UklGRg==", "k": "v"},
    "exactly the threshold": {"s": "A" * MIN_SET_ASIDE_CHARS, "t": "A" * (MIN_SET_ASIDE_CHARS - 1)},
    "quote inside": {"s": LONG[:2000] + '"' + LONG[2000:]},
    "backslash inside": {"s": LONG[:2000] + "\\" + LONG[2000:]},
    "newline inside": {"s": LONG[:2000] + "\n" + LONG[2000:]},
    "DEL inside": {"s": LONG[:2000] + "\x7f" + LONG[2000:]},
    "non-ASCII inside": {"s": LONG[:2000] + "é€😀" + LONG[2000:]},
    "spaces and slashes": {"s": " /+=~!" * 400},
    "long key": {LONG: 1, "v": LONG2},
    "unsorted keys": {"z": LONG, "a": LONG2, "m": {"y": LONG, "b": 1}},
    "not a dict": [LONG, {"a": LONG}],
    "plain string": LONG,
    "empty": {},
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_digest_as_json_dumps(name: str) -> None:
    assert canonical_sha256(CASES[name]) == _reference(CASES[name])


def test_the_input_is_not_changed() -> None:
    data = {"audio": LONG, "named_audio_outputs": [{"id": "a", "audio": LONG2}]}
    before = json.dumps(data)
    canonical_sha256(data)
    assert json.dumps(data) == before


@pytest.mark.parametrize("where", ["value", "key", "inside a longer value", "nested deeper"])
def test_a_reply_that_holds_a_placeholder_is_hashed_as_it_is(where: str) -> None:
    fake = canonical_hash._placeholder(0)
    data: dict[str, Any] = {"audio": LONG}
    if where == "value":
        data["x"] = fake
    elif where == "key":
        data[fake] = 1
    elif where == "inside a longer value":
        data["x"] = f"a{fake}b"
    else:
        data["x"] = {"y": [fake]}
    assert canonical_sha256(data) == _reference(data)


def test_random_replies() -> None:
    rng = random.Random(7)
    for seed in range(200):
        pieces = [LONG, LONG2, "ab", 'q"q' * 600, "é" * 1500, _b64(rng.randrange(700, 1200), seed)]
        data: dict[str, Any] = {}
        for i in range(rng.randrange(1, 6)):
            key = rng.choice(["audio", "text", "k", f"f{i}", "named_audio_outputs"])
            kind = rng.randrange(4)
            if kind == 0:
                data[key] = rng.choice(pieces)
            elif kind == 1:
                data[key] = [{"id": str(j), "audio": rng.choice(pieces)} for j in range(rng.randrange(3))]
            elif kind == 2:
                data[key] = {"x": rng.choice(pieces), "n": rng.random()}
            else:
                data[key] = rng.randrange(1000)
        assert canonical_sha256(data) == _reference(data), data.keys()
