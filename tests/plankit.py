"""One builder for the plans the test suites write: `stand_in_plan(...)`, the base plan against
the bundled stand-in server, and the named variations each suite runs with.

`stand_in_plan()` with no argument is the small plan of tests/conftest.py (`SMALL_PLAN`):
counts [1, 2], three starts per count, a 40 ms stand-in request and few waves, so a whole
campaign takes a few seconds. The keyword arguments change what the suites vary; `overrides`
are then merged in recursively (`merge`: a value of None deletes the key), so any other field
can still be changed or taken out.

The variations, one per suite (each keeps the plan its suite always had):

- `small_plan(**overrides)`: tests/conftest.py `SMALL_PLAN`, `write_plan`, `make_plan`
- `ux_plan()`: tests/ux/kit.py `PLAN` (a 120 ms request, capacity 4, ten mixed waves at the
  largest count, memory stabilisation, three warm repeats)
- `campaign_plan(...)`: tests/campaign/helpers.py `plan_dict` (counts [1, 2, 4], a model at an
  absolute path, two request variations, the identity a real plan declares)
- `fault_plan(fault, **overrides)`: tests/reliability/conftest.py `fault_plan` (the small plan cut
  to one count, one start, one wave of each kind and no performance series, `fault` switched on
  in the candidate)
- `framework_plan(...)`: tests/framework/helpers.py `write_plan` (what `parval framework` reads:
  no campaign sections, a 150 ms request, 200 ms loads and teardowns)
- `real_plan(real, name, **overrides)`: tests/conftest.py `write_real_plan`, the real legacy
  audiocpp_server (Silero VAD), not the stand-in

`write(directory, plan, ...)` writes a plan (and a model file beside it) the way the suites do.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

STANDIN = Path(sys.executable).parent / "parval-standin"

# The plan's seed variation only: the other kinds a TTS model has are declared as not varied.
_SEED_ONLY = "the small plan keeps to one seed variation"
_WALL_MS = {"path": "timing.wall_ms", "justification": "wall time differs on every run"}
_RTF = {"path": "timing.rtf", "justification": "wall time over audio duration differs on every run"}

# The base plan: the small plan of tests/conftest.py. `stand_in_plan` fills in the fields its
# keyword arguments name (model id, load options, counts, starts, waves, request text and seed).
BASE: dict[str, Any] = {
    "schema_version": 1,
    "name": "small",
    "description": "fast stand-in campaign for tests",
    "servers": {"baseline": {"executable": str(STANDIN)}, "candidate": {"executable": str(STANDIN)}},
    "server": {"backend": "cpu", "threads": 1, "busy_timeout_ms": 30000, "ui_management": True},
    "model": {
        "id": "small-tts",
        "family": "standin_tts",
        "task": "tts",
        "mode": "offline",
        "path": "model.bin",
        "lazy": True,
        "load_options": {"capacity": 2, "service_ms": 40, "load_ms": 20},
        "cache_sensitive": False,
        "admit_modes": ["offline"],
        "variation_kinds": ["seed"],
        "variation_kinds_justification": {"length": _SEED_ONLY, "reference": _SEED_ONLY},
    },
    "identity": {
        "baseline": {"source_commit": "0" * 40, "build_flags": "none"},
        "candidate": {"source_commit": "1" * 40, "build_flags": "none"},
        "quantization": "none",
    },
    "counts": [1, 2],
    "starts_per_count": 3,
    "waves": {"warm": 1, "mixed": 2, "mixed_at_largest": 2, "serial_reuse": 1},
    "requests": {
        "base": {"text": "Hello from the reliability tests.", "seed": 7},
        "variations": [
            {
                "name": "other_seed",
                "changes": "seed",
                "request": {"text": "Hello from the reliability tests.", "seed": 8},
            }
        ],
        "invalid": {"text": "rejected", "max_tokens": -1},
    },
    "compare": {
        "volatile_fields": [
            _WALL_MS,
            {"path": "timing.rtf", "justification": "real-time factor (wall time / duration) differs on every run"},
        ]
    },
    "memory": {"gpu_required": False, "host_interval_ms": 20},
    "performance": {"warm_repeats": 1},
    "timeouts": {"ready_s": 20, "request_s": 20, "wave_s": 30, "start_s": 60, "campaign_s": 300, "shutdown_grace_s": 5},
}


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `over` merged in recursively (a copy): mappings merge key by key, a value of
    None deletes the key, anything else (lists included) replaces the value."""
    out = copy.deepcopy(dict(base))
    for key, value in over.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def stand_in_plan(
    *,
    name: str = "small",
    model_id: str = "small-tts",
    model_path: str | Path = "model.bin",
    capacity: int = 2,
    service_ms: int = 40,
    load_ms: int = 20,
    counts: Sequence[int] = (1, 2),
    starts: int = 3,
    waves: Mapping[str, int | None] | None = None,
    text: str = "Hello from the reliability tests.",
    seed: int = 7,
    faults: Sequence[str] | None = None,
    framework: Mapping[str, Any] | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """The base plan against the stand-in (a new dict), with:

    - `name`, `model_id`, `model_path` (relative to the plan file, or absolute);
    - `capacity`, `service_ms`, `load_ms`: the stand-in's `model.load_options` (how many
      requests it runs at once, how long each takes, how long a load takes);
    - `counts`, `starts` (`starts_per_count`);
    - `waves`: the whole `waves` mapping, replaced, not merged (None keeps the base's: one warm,
      two mixed, two mixed at the largest count, one serial reuse); a `mixed` of None stays in
      the plan (every count then runs `mixed_at_largest` mixed waves);
    - `text`, `seed`: the base request; its one variation (`other_seed`) has `seed + 1`;
    - `faults`: stand-in faults switched on in the candidate only (`--fault F` each, as
      `servers.candidate.args`); None leaves the candidate without `args`, [] gives it `args: []`;
    - `framework`: the plan's `framework` section (None: none);
    - `overrides`: merged in last (`merge`: None deletes a key); a plan key that is also a
      keyword above (`name`, `counts`, `waves`, `framework`) goes by the keyword, so merge
      changes to those into the result instead (`merge(stand_in_plan(), changes)`).
    """
    plan = copy.deepcopy(BASE)
    plan["name"] = name
    model = plan["model"]
    model["id"] = model_id
    model["path"] = str(model_path)
    model["load_options"].update(capacity=capacity, service_ms=service_ms, load_ms=load_ms)
    plan["counts"] = list(counts)
    plan["starts_per_count"] = starts
    if waves is not None:
        plan["waves"] = dict(waves)
    requests = plan["requests"]
    requests["base"] = {"text": text, "seed": seed}
    requests["variations"][0]["request"] = {"text": text, "seed": seed + 1}
    if faults is not None:
        plan["servers"]["candidate"]["args"] = [arg for f in faults for arg in ("--fault", f)]
    if framework is not None:
        plan["framework"] = copy.deepcopy(dict(framework))
    return merge(plan, overrides)


def small_plan(**overrides: Any) -> dict[str, Any]:
    """The small plan (tests/conftest.py `SMALL_PLAN`), with `overrides` merged in."""
    return merge(stand_in_plan(), overrides)


# -- tests/ux ------------------------------------------------------------------------------

_UX_SEED_ONLY = "the UX plan keeps to one seed variation"
UX_CHANGES: dict[str, Any] = {
    "description": "small stand-in campaign for the UX tests",
    "model": {"variation_kinds_justification": {"length": _UX_SEED_ONLY, "reference": _UX_SEED_ONLY}},
    "compare": {"volatile_fields": [_WALL_MS, _RTF]},
    # stabilisation judged on the last two waves, with room for a busy machine's growth
    "memory": {"stabilisation": {"last_k_waves": 2, "max_growth_mib": 64}},
    "performance": {"warm_repeats": 3},
    "timeouts": {"start_s": 120},
}


def ux_plan() -> dict[str, Any]:
    """The UX tests' plan (tests/ux/kit.py `PLAN`): requests of 120 ms four at a time, so that
    progress lines and interrupts have something to show, and ten mixed waves at the largest
    count (M3.ten_waves can pass), three warm repeats for the performance series."""
    return stand_in_plan(
        name="ux",
        model_id="ux-tts",
        capacity=4,
        service_ms=120,
        waves={"warm": 1, "mixed": 2, "mixed_at_largest": 10, "serial_reuse": 1},
        text="Hello from the UX tests.",
        seed=5,
        **UX_CHANGES,
    )


# -- tests/campaign ------------------------------------------------------------------------

# The campaign tests' plan declares what a real plan declares and no more: no description,
# no thread count or busy timeout, no model mode, laziness or admitted modes (their defaults).
_CAMPAIGN_TEXT = "Parval checks every slot."
_STANDIN_BUILD = "none (Python stand-in)"


def campaign_plan(
    model_path: str | Path,
    *,
    faults: Sequence[str] = (),
    counts: Sequence[int] = (1, 2, 4),
    cache_sensitive: bool = False,
    ten: int = 10,
    mixed: int | None = None,
    warm: int = 1,
    starts: int = 3,
    framework: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The gate tests' plan (tests/campaign/helpers.py `plan_dict`): capacity 4, 100 ms requests,
    80 ms loads; `ten` mixed waves at the largest count and `mixed` at the others (None: `ten`
    at every count, so that any count may end up the largest admitted); two serial reuses;
    a text-length and a seed variation; memory stabilisation over the last three waves with
    6 MiB of growth allowed (the memory_growth fault exceeds it)."""
    from tests.records_kit import CANDIDATE_COMMIT, UPSTREAM

    return stand_in_plan(
        name="t",
        model_id="m",
        model_path=model_path,
        capacity=4,
        service_ms=100,
        load_ms=80,
        counts=counts,
        starts=starts,
        waves={"warm": warm, "mixed": mixed, "mixed_at_largest": ten, "serial_reuse": 2},
        text=_CAMPAIGN_TEXT,
        faults=faults,
        framework=framework,
        description=None,
        server={"threads": None, "busy_timeout_ms": None},
        model={
            "mode": None,
            "lazy": None,
            "admit_modes": None,
            "load_options": {"cache_sensitive": cache_sensitive},
            "cache_sensitive": cache_sensitive,
            "variation_kinds": ["length", "seed"],
            "variation_kinds_justification": {
                "length": None,
                "reference": "the stand-in TTS plan keeps to text length and seed",
            },
        },
        # what parval cannot discover (M1.manifest), declared as a real plan would
        identity={
            "baseline": {"source_commit": UPSTREAM, "build_flags": _STANDIN_BUILD},
            "candidate": {"source_commit": CANDIDATE_COMMIT, "build_flags": _STANDIN_BUILD},
        },
        requests={
            "variations": [
                {
                    "name": "longer",
                    "changes": "text",
                    "request": {"text": _CAMPAIGN_TEXT + " And a longer tail.", "seed": 7},
                },
                {"name": "seed", "changes": "seed", "request": {"text": _CAMPAIGN_TEXT, "seed": 8}},
            ],
            "invalid": {"text": "x"},
        },
        # only fields that vary across identical serial requests (Q2)
        compare={"volatile_fields": [_WALL_MS, _RTF]},
        memory={"stabilisation": {"last_k_waves": 3, "max_growth_mib": 6}},
        performance={"warm_repeats": 3},
        timeouts={"wave_s": 40, "start_s": 120, "campaign_s": 600},
    )


# -- tests/reliability ---------------------------------------------------------------------

# A smaller plan still: one count, one start, no performance series. For fault tests.
TINY: dict[str, Any] = {
    "requests": {"variations": []},
    "counts": [1],
    "starts_per_count": 1,
    "waves": {"warm": 1, "mixed": 1, "mixed_at_largest": 1, "serial_reuse": 1},
    "performance": {"enabled": False, "warm_repeats": 1, "rejection_probe": False},
}


def fault_plan(
    fault: str, *, counts: Sequence[int] = (1,), starts: int = 1, capacity: int = 2, **overrides: Any
) -> dict[str, Any]:
    """The small plan cut down by `TINY` (one count, one start, one wave of each kind, no request
    variations, no performance series) with `fault` switched on in the candidate only (the
    baseline is sound); `counts`, `starts` and `capacity` as in `stand_in_plan`; `overrides`
    merged in last."""
    tiny = merge(stand_in_plan(capacity=capacity, faults=[fault]), TINY)
    return merge(tiny, {"counts": list(counts), "starts_per_count": starts, **overrides})


# -- tests/framework -----------------------------------------------------------------------

# What `parval framework` does not read: the campaign's sections and the model's declarations.
WITHOUT_CAMPAIGN: dict[str, Any] = {
    "description": None,
    "identity": None,
    "starts_per_count": None,
    "waves": None,
    "compare": None,
    "memory": None,
    "performance": None,
    "server": {"threads": None, "busy_timeout_ms": None},
    "model": {
        "mode": None,
        "lazy": None,
        "cache_sensitive": None,
        "admit_modes": None,
        "variation_kinds": None,
        "variation_kinds_justification": None,
    },
    "requests": {"variations": None},
    "timeouts": {"wave_s": None, "campaign_s": None},
}


def framework_plan(
    model_path: str | Path,
    *,
    faults: Sequence[str] = (),
    counts: Sequence[int] = (1, 2),
    ui: bool = True,
    name: str = "fw",
) -> dict[str, Any]:
    """The framework tests' plan (tests/framework/helpers.py `write_plan`), sized so that forced
    orders are reliable on two cores: a warm request ~150 ms, a load ~200 ms, a teardown ~150 ms;
    natively batched, 1 MiB per model and session; `ui` turns the management routes on."""
    plan = stand_in_plan(
        name=name,
        model_id="m",
        model_path=model_path,
        capacity=4,
        service_ms=150,
        load_ms=200,
        counts=counts,
        text="Framework probe.",
        faults=faults,
    )
    return merge(
        merge(plan, WITHOUT_CAMPAIGN),
        {
            "server": {"ui_management": ui},
            "model": {"load_options": {"teardown_ms": 150, "native_batch": True, "model_mib": 1, "session_mib": 1}},
            "requests": {"invalid": {"text": "x"}},
            "status_poll_ms": 5,
            "timeouts": {"request_s": 30, "start_s": 120},
        },
    )


# -- the real server -----------------------------------------------------------------------


def real_plan(real: Path, name: str, **overrides: Any) -> dict[str, Any]:
    """A plan for the real legacy audiocpp_server in `real` (the real-audiocpp folder: bin/,
    models/, fixtures/): Silero VAD on its speech fixture, counts 1 and 2, no management routes
    (the baseline does not know --parallel-jobs), with `overrides` merged in."""
    exe = str(real / "bin" / "audiocpp_server")
    doc: dict[str, Any] = {
        "schema_version": 1,
        "name": name,
        "servers": {"baseline": {"executable": exe, "knows_parallel_jobs": False}, "candidate": {"executable": exe}},
        "server": {"backend": "cpu", "threads": 1, "ui_management": False},
        "model": {
            "id": "silero",
            "family": "silero_vad",
            "task": "vad",
            "mode": "offline",
            "path": str(real / "models" / "silero_vad"),
            "lazy": True,
        },
        "counts": [1, 2],
        "requests": {
            "base": {"audio": str(real / "fixtures" / "speech16k.wav")},
            "invalid": {"audio": "/nonexistent/parval-missing-input.wav"},
        },
        "compare": {"volatile_fields": [{"path": "timing", "justification": "wall time"}]},
        "status_poll_ms": 5,
        "timeouts": {"ready_s": 30, "request_s": 30, "start_s": 120, "shutdown_grace_s": 5},
    }
    return merge(doc, overrides)


# -- writing -------------------------------------------------------------------------------


def write(directory: Path, plan: Mapping[str, Any], *, model: bytes | None = None, sort_keys: bool = False) -> Path:
    """Write `plan` to `directory`/plan.yaml (made if missing) and, when `model` is given, those
    bytes to `directory`/model.bin beside it; return the plan's path."""
    directory.mkdir(parents=True, exist_ok=True)
    if model is not None:
        (directory / "model.bin").write_bytes(model)
    path = directory / "plan.yaml"
    path.write_text(yaml.safe_dump(dict(plan), sort_keys=sort_keys))
    return path
