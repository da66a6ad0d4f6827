"""JSON as parval reads it back from a record or an event (json.loads): the value types
a judge or a reader narrows with isinstance before use."""

from __future__ import annotations

from typing import TypeAlias

JsonValue: TypeAlias = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]
JsonObject: TypeAlias = dict[str, JsonValue]
