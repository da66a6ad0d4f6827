"""Loading the JSON Schemas shipped inside the package, and JSON-Schema helpers."""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any

import jsonschema


@cache
def load_schema(name: str) -> dict[str, Any]:
    """`name` is 'plan', 'evidence', 'framework', ... (file `<name>.schema.json`)."""
    text = resources.files("parval.schemas").joinpath(f"{name}.schema.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
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
    """Every schema violation as `where: what`, sorted by location."""
    validator = jsonschema.Draft202012Validator(load_schema(schema_name))
    errors = sorted(validator.iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{format_path(e.absolute_path)}: {e.message}" for e in errors]


def fill_defaults(schema: dict[str, Any], instance: Any, root: dict[str, Any] | None = None) -> Any:
    """Return `instance` with every object property's schema default filled in (recursively)."""
    root = root or schema
    if "$ref" in schema:
        ref = schema["$ref"].removeprefix("#/$defs/")
        schema = root["$defs"][ref]
    if isinstance(instance, dict) and "properties" in schema:
        out = dict(instance)
        for key, sub in schema["properties"].items():
            if key not in out and "default" in sub:
                out[key] = json.loads(json.dumps(sub["default"]))
            if key in out:
                out[key] = fill_defaults(sub, out[key], root)
        return out
    if isinstance(instance, list) and isinstance(schema.get("items"), dict):
        return [fill_defaults(schema["items"], item, root) for item in instance]
    return instance
