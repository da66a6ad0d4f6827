"""The standard-library WAV reader behind `decode_pcm` returns exactly what libsndfile
returns (samples, dtype, shape, rate, subtype) for the files it takes, and leaves every
other file to libsndfile (the same result or the same failure as before)."""

from __future__ import annotations

import base64
import io
import struct
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from parval.outputs.compare import _NATIVE, decode_pcm
from parval.outputs.wav import read_plain_pcm


def _wav(subtype: str, channels: int = 1, frames: int = 1600, rate: int = 16000) -> bytes:
    rng = np.random.default_rng(frames * 31 + channels)
    data = rng.uniform(-0.9, 0.9, size=(frames, channels))
    buf = io.BytesIO()
    sf.write(buf, data, rate, format="WAV", subtype=subtype)
    return buf.getvalue()


def _libsndfile(raw: bytes) -> tuple[np.ndarray[Any, Any], int, str] | None:
    """decode_pcm as it was: sf.info, then sf.read at the file's own precision."""
    try:
        info = sf.info(io.BytesIO(raw))
        dtype, _ = _NATIVE.get(info.subtype, ("float64", 32768.0))
        data, rate = sf.read(io.BytesIO(raw), dtype=dtype, always_2d=True)
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError):
        return None
    return data, int(rate), str(info.subtype)


def _same_as_libsndfile(raw: bytes) -> None:
    expected = _libsndfile(raw)
    pcm, problem = decode_pcm(base64.b64encode(raw).decode())
    if expected is None:
        assert pcm is None and problem.startswith("not a decodable WAV")
        return
    assert pcm is not None, problem
    data, rate, subtype = expected
    assert (pcm.rate, pcm.subtype) == (rate, subtype)
    assert pcm.samples.dtype == data.dtype and pcm.samples.shape == data.shape
    assert pcm.samples.flags.c_contiguous and pcm.samples.flags.writeable
    assert pcm.samples.tobytes() == data.tobytes()  # what the canonical hash reads


@pytest.mark.parametrize("subtype", ["PCM_16", "PCM_32"])
@pytest.mark.parametrize("channels", [1, 2, 3])
@pytest.mark.parametrize("frames", [1, 7, 1600])
def test_plain_pcm_is_read_here_and_matches_libsndfile(subtype: str, channels: int, frames: int) -> None:
    raw = _wav(subtype, channels, frames)
    assert read_plain_pcm(raw) is not None
    _same_as_libsndfile(raw)


@pytest.mark.parametrize("subtype", ["PCM_U8", "PCM_24", "FLOAT", "DOUBLE"])
def test_other_formats_go_to_libsndfile(subtype: str) -> None:
    raw = _wav(subtype, 2, 100)
    assert read_plain_pcm(raw) is None
    _same_as_libsndfile(raw)


def _chunks(raw: bytes) -> tuple[bytes, bytes]:
    """(fmt chunk body, data chunk body) of a plain file written by libsndfile."""
    assert raw[36:40] == b"data"
    return raw[20:36], raw[44:]


def _riff(*chunks: tuple[bytes, bytes], riff_size: int | None = None) -> bytes:
    padded = (cid + struct.pack("<I", len(data)) + data + b"\0" * (len(data) % 2) for cid, data in chunks)
    body = b"WAVE" + b"".join(padded)
    return b"RIFF" + struct.pack("<I", len(body) if riff_size is None else riff_size) + body


def _odd_files() -> dict[str, bytes]:
    raw = _wav("PCM_16", 1, 64)
    fmt, data = _chunks(raw)
    stereo_fmt = _chunks(_wav("PCM_16", 2, 64))[0]
    return {
        "extra chunk before data": _riff((b"fmt ", fmt), (b"LIST", b"INFOISFT\x04\0\0\0abc\0"), (b"data", data)),
        "chunk after data": _riff((b"fmt ", fmt), (b"data", data), (b"junk", b"xyzw")),
        "riff size too large": _riff((b"fmt ", fmt), (b"data", data), riff_size=len(raw) + 100),
        "riff size too small": _riff((b"fmt ", fmt), (b"data", data), riff_size=20),
        "data size beyond the file": raw[:40] + struct.pack("<I", len(data) + 64) + data,
        "truncated data": raw[:-3],
        "odd data size": _riff((b"fmt ", fmt), (b"data", data[:-1])),
        "empty data": _riff((b"fmt ", fmt), (b"data", b"")),
        "fmt with cbSize": _riff((b"fmt ", fmt + b"\0\0"), (b"data", data)),
        "block align off": _riff((b"fmt ", fmt[:12] + struct.pack("<H", 4) + fmt[14:]), (b"data", data)),
        "byte rate off": _riff((b"fmt ", fmt[:8] + struct.pack("<I", 1) + fmt[12:]), (b"data", data)),
        "stereo fmt, odd frame": _riff((b"fmt ", stereo_fmt), (b"data", data[:-2])),
        "zero channels": _riff((b"fmt ", fmt[:2] + b"\0\0" + fmt[4:]), (b"data", data)),
        "RIFX": b"RIFX" + raw[4:],
        "not RIFF": b"OggS" + raw[4:],
        "header only": raw[:44],
        "too short": raw[:20],
    }


@pytest.mark.parametrize("name", sorted(_odd_files()))
def test_odd_files_decode_as_libsndfile_decodes_them(name: str) -> None:
    raw = _odd_files()[name]
    assert read_plain_pcm(raw) is None, name
    _same_as_libsndfile(raw)


def test_standin_reply_audio_is_read_here() -> None:
    from parval.standin.result_payload import b64_wav, b64_wav32

    tone = (np.sin(np.arange(4000) / 5) * 12000).astype(np.int16)
    for b64 in (b64_wav(tone, 24000), b64_wav32(tone, 24000)):
        raw = base64.b64decode(b64)
        assert read_plain_pcm(raw) is not None
        _same_as_libsndfile(raw)
