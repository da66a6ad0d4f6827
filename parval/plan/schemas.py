"""Loading the JSON Schemas shipped inside the package, and JSON-Schema helpers."""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any

import jsonschema

from parval.jsonread import item
from parval.jsontypes import JsonObject


def schema_version(name: str) -> int:
    """The `schema_version` a file of this schema carries: the const in the shipped schema,
    so the number a writer stamps is written in one place."""
    props = load_schema(name)["properties"]
    assert isinstance(props, dict)
    version = props["schema_version"]
    assert isinstance(version, dict) and isinstance(version["const"], int)
    return version["const"]


@cache
def load_schema(name: str) -> JsonObject:
    """`name` is 'plan', 'evidence', 'framework', ... (file `<name>.schema.json`)."""
    text = resources.files("parval.schemas").joinpath(f"{name}.schema.json").read_text("utf-8")
    data: JsonObject = json.loads(text)
    return data


def format_path(path: Iterable[object]) -> str:
    """JSON-Schema error path as `counts[2]` / `model.path`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def schema_errors(instance: object, schema_name: str) -> list[str]:
    """Every schema violation as `where: what`, sorted by location; a key the schema does
    not know gets the known key it is closest to ("did you mean")."""
    validator = jsonschema.Draft202012Validator(load_schema(schema_name))
    errors = sorted(validator.iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{format_path(e.absolute_path)}: {e.message}{_did_you_mean(e)}" for e in errors]


def _did_you_mean(error: jsonschema.ValidationError) -> str:
    """For an unknown key (additionalProperties: false): the known keys closest to it."""
    import difflib

    if error.validator != "additionalProperties" or not isinstance(error.instance, dict):
        return ""
    schema = error.schema if isinstance(error.schema, dict) else {}
    known = [str(k) for k in schema.get("properties") or {}]
    guesses: list[tuple[str, str]] = []
    for key in map(str, error.instance):
        if key not in known and (close := difflib.get_close_matches(key, known, n=1, cutoff=0.6)):
            guesses.append((close[0], key))
    if len(guesses) == 1:
        return f" (did you mean {guesses[0][0]!r}?)"
    return f" (did you mean {', '.join(f'{a!r} for {b!r}' for a, b in guesses)}?)" if guesses else ""


def _subschema(value: object) -> JsonObject:
    """A subschema of one of parval's own schemas (a property's, a `$defs` entry): an object."""
    if not isinstance(value, dict):
        raise TypeError(f"not a JSON Schema object: {value!r}")
    return value


def fill_defaults(schema: JsonObject, instance: Any, root: JsonObject | None = None) -> Any:
    """Return `instance` with every object property's schema default filled in (recursively).
    `schema` is one of parval's own schemas (`load_schema`)."""
    root = root or schema
    ref = schema.get("$ref")
    if isinstance(ref, str):
        schema = _subschema(item(root["$defs"], ref.removeprefix("#/$defs/")))
    properties = schema.get("properties")
    if isinstance(instance, dict) and isinstance(properties, dict):
        out = dict(instance)
        for key, value in properties.items():
            sub = _subschema(value)
            if key not in out and "default" in sub:
                out[key] = json.loads(json.dumps(sub["default"]))
            if key in out:
                out[key] = fill_defaults(sub, out[key], root)
        return out
    items = schema.get("items")
    if isinstance(instance, list) and isinstance(items, dict):
        return [fill_defaults(items, element, root) for element in instance]
    return instance
