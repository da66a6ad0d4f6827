"""Plain little-endian PCM WAV files read with the standard library, without libsndfile.

Canonicalising a reply decodes its audio, and opening a file through libsndfile costs far
more than reading one: this reader takes the common case (a RIFF/WAVE file of exactly a
16-byte PCM `fmt ` chunk and a `data` chunk that ends the file, 16- or 32-bit samples) and
returns what `soundfile.read(..., dtype=int16/int32, always_2d=True)` returns for it, sample
for sample. Anything else (other chunks, extensible or float formats, sizes that do not add
up, a big-endian host) is None, and the caller reads it with libsndfile as before.
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

_WAVE_FORMAT_PCM = 1
# bits per sample -> (soundfile subtype, the dtype soundfile reads it as without loss)
_PLAIN_PCM = {16: ("PCM_16", "<i2"), 32: ("PCM_32", "<i4")}
_MAX_CHANNELS = 8
_RATES = range(1000, 384001)
_HEADER = struct.Struct("<4sI4s4sIHHIIHH4sI")  # RIFF, size, WAVE, fmt , 16, fmt fields, data, size


@dataclass(frozen=True)
class PlainPcm:
    samples: npt.NDArray[np.generic]  # frames x channels, writable, native byte order
    rate: int
    subtype: str


def read_plain_pcm(raw: bytes) -> PlainPcm | None:
    """The samples of a plain PCM WAV file, or None where libsndfile must read it."""
    if sys.byteorder != "little" or len(raw) < _HEADER.size:
        return None
    riff, riff_size, wave, fmt_id, fmt_size, tag, channels, rate, byte_rate, block_align, bits, data_id, data_size = (
        _HEADER.unpack_from(raw)
    )
    plain = _PLAIN_PCM.get(bits)
    if (
        plain is None
        or (riff, wave, fmt_id, data_id) != (b"RIFF", b"WAVE", b"fmt ", b"data")
        or riff_size != len(raw) - 8
        or fmt_size != 16
        or tag != _WAVE_FORMAT_PCM
        or not 1 <= channels <= _MAX_CHANNELS
        or rate not in _RATES
        or block_align != channels * bits // 8
        or byte_rate != rate * block_align
        or data_size == 0
        or data_size % block_align
        or _HEADER.size + data_size != len(raw)
    ):
        return None
    subtype, dtype = plain
    # one copy: writable and in native order, as soundfile returns it
    samples = np.frombuffer(raw, dtype=dtype, offset=_HEADER.size).copy().reshape(-1, channels)
    return PlainPcm(samples, rate, subtype)
