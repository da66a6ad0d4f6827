"""Reading JSON-like values of unchecked shape (events, plan snapshots, server configs).

Each reader does what the plain operation does on the expected value and raises the same
exception type on any other value, so callers that catch or report errors behave as
before. (The JSON value types are parval.jsontypes.)"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import SupportsFloat, SupportsIndex, SupportsInt

from parval.jsontypes import JsonObject


def get(value: object, key: str, default: object = None) -> object:
    """`value.get(key, default)` of a mapping."""
    if isinstance(value, Mapping):
        return value.get(key, default)
    raise AttributeError(f"'{type(value).__name__}' object has no attribute 'get'")


def item(value: object, key: int | str) -> object:
    """`value[key]` of a sequence (an int key) or a mapping (a str key)."""
    if isinstance(key, int) and isinstance(value, Sequence):
        return value[key]
    if isinstance(value, Mapping):
        return value[key]
    raise TypeError(f"'{type(value).__name__}' object is not subscriptable")


def as_int(value: object) -> int:
    """`int(value)`."""
    if isinstance(value, (str, bytes, bytearray, SupportsInt, SupportsIndex)):
        return int(value)
    raise TypeError(
        f"int() argument must be a string, a bytes-like object or a real number, not '{type(value).__name__}'"
    )


def opt_int(value: object) -> int | None:
    """An integer or None, as it is (a process id)."""
    if value is None or isinstance(value, int):
        return value
    raise TypeError(f"expected an integer or None, not '{type(value).__name__}'")


def iterate(value: object) -> Iterable[object]:
    """`value` to iterate over."""
    if isinstance(value, Iterable):
        return value
    raise TypeError(f"'{type(value).__name__}' object is not iterable")


def contains(container: object, value: object) -> bool:
    """`value in container`."""
    if isinstance(container, Iterable):
        return value in container
    raise TypeError(f"argument of type '{type(container).__name__}' is not iterable")


def as_float(value: object) -> float:
    """`float(value)`: a number, or a string or bytes as float() reads them."""
    if isinstance(value, (str, bytes, bytearray, SupportsFloat, SupportsIndex)):
        return float(value)
    raise TypeError(f"float() argument must be a string or a real number, not '{type(value).__name__}'")


def as_object(value: object, attribute: str) -> JsonObject:
    """A JSON object (a dict) whose method `attribute` is called next; any other value raises
    the AttributeError that call would."""
    if isinstance(value, dict):
        return value
    raise AttributeError(f"'{type(value).__name__}' object has no attribute '{attribute}'")


def json_text(value: object) -> str:
    """A recorded value as it is written in JSON (`null`, `false`, `"4"`), for reasons people
    read: the value the server was sent, not Python's spelling of it."""
    import json

    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)
