"""A starter plan from an existing audiocpp_server config file.

The plan takes the model entry (id, family, task, mode, path, options), the server-wide
settings (backend, device, threads) and the model's advertised `slots` (counts 1..slots)
from the config. The two executables (upstream legacy build and candidate) and, for
audio-input tasks, the three input recordings (derived from one speech WAV:
parval/plan/derived_fixtures.py) are written where they are given and left as `EDIT-ME`
placeholders otherwise; until they are real, `parval validate` names each one. What the
procedure needs and a default can honestly give is declared: the variation kinds the task
supports, a memory stabilisation rule with its bound (declared before any data is seen),
the volatile timing fields the task's replies carry, and timeouts (measured from one start
of the candidate, or defaults the plan says to check). `parval init` and `parval catalogue
init` both write their plans here.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from parval.errors import InputFileError, UsageError
from parval.jsonread import as_int, iterate
from parval.jsontypes import JsonObject, JsonValue
from parval.outputs.volatility import VOLATILE_ROOT
from parval.plan.derived_fixtures import MANIFEST, Fixture
from parval.plan.load import GPU_BACKENDS
from parval.plan.schemas import schema_version
from parval.plan.variations import supported_kinds

PLACEHOLDER = "EDIT-ME"
TEXT_TASKS = {"tts", "gen", "vdes", "clon"}  # text in (with a seed); every other task takes audio in
ENTRY_EXTRA_KEYS = (
    "config",
    "weight",
    "model_spec_override",
    "voice_presets",
    "default_voice_preset",
    "busy_timeout_ms",
    "live_ingest",
)
BACKENDS = {"cpu", "cuda", "hip", "rocm", "vulkan", "metal"}

# What a /v1/tasks/run reply's `timing` carries (API reference 6.1): `wall_ms` always;
# `audio_duration_ms` (deterministic) and `rtf` only when the result has an audio output.
# Excluding a field no reply carries leaves Q2 PENDING, so `rtf` is excluded only for tasks
# known to answer with audio, and left to the user where the output is not known.
AUDIO_OUT_TASKS = frozenset({"tts", "gen", "vdes", "clon", "vc", "s2s", "svc"})
NO_AUDIO_OUT_TASKS = frozenset({"vad", "asr", "diar", "align", "spk"})  # segments, text, turns, words, embeddings

# The starter's memory stabilisation rule (M5.stable): the per-wave peak may grow by less
# than the bound over the last K repeated-use waves of every start. K fits the starter's
# own waves (2 warm + 10 mixed per start) with room to spare.
STABILISATION_K = 5
STABILISATION_MIB = 64


# The starter's timeouts when nothing was measured (`parval init` without --measure): wide
# enough for a large model on a slow machine, short enough that a hung server holds a start
# 20 minutes, not the schema's hour. The plan says to check them.
DEFAULT_TIMEOUTS: dict[str, int] = {
    "ready_s": 300,
    "request_s": 120,
    "wave_s": 300,
    "start_s": 1200,
    "campaign_s": 86400,
    "shutdown_grace_s": 30,
}
# Measured timeouts: each limit is MARGIN times what one start measured (a start's whole
# schedule START_MARGIN times), never below FLOOR.
MARGIN = 10
START_MARGIN = 5
FLOOR: dict[str, int] = {"ready_s": 30, "request_s": 30, "wave_s": 60, "start_s": 120, "campaign_s": 600}


@dataclass(frozen=True)
class StartTimes:
    """What one start of a plan's server measured (`parval init --measure`)."""

    executable: str
    ready_s: float  # launch to a 200 from /health
    first_request_s: float  # the first request, which loads a lazy model
    request_s: float  # the slowest of the later requests, sent one at a time
    stop_s: float  # SIGTERM to exit
    requests: int


def _nice(seconds: float) -> int:
    """Seconds rounded up to two significant digits (37.2 -> 38, 1234 -> 1300)."""
    s = max(1, math.ceil(seconds))
    step = 10 ** max(0, len(str(s)) - 2)
    return int(math.ceil(s / step) * step)


def measured_timeouts(times: StartTimes, rows: Sequence[tuple[str, int, int, int]], largest: int) -> dict[str, int]:
    """The plan's timeouts from one measured start and the plan's schedule (`rows`, as
    `parval validate` prints them; `largest` the largest count): a request may wait behind
    `largest` - 1 others on a server that runs one at a time."""
    per_start = max(requests / starts for _unit, starts, _waves, requests in rows if starts)
    starts = sum(r[1] for r in rows)
    total = sum(r[3] for r in rows)
    fixed = times.ready_s + times.first_request_s + times.stop_s
    out = {
        "ready_s": _nice(max(FLOOR["ready_s"], MARGIN * times.ready_s)),
        "request_s": _nice(max(FLOOR["request_s"], MARGIN * times.first_request_s, MARGIN * largest * times.request_s)),
        "shutdown_grace_s": _nice(max(5, MARGIN * times.stop_s)),
    }
    out["wave_s"] = _nice(max(FLOOR["wave_s"], 2 * out["request_s"]))
    out["start_s"] = _nice(
        max(FLOOR["start_s"], out["ready_s"] + out["wave_s"], START_MARGIN * (fixed + per_start * times.request_s))
    )
    expected = starts * fixed + total * times.request_s
    out["campaign_s"] = _nice(max(FLOOR["campaign_s"], out["start_s"], START_MARGIN * expected))
    return {k: out[k] for k in DEFAULT_TIMEOUTS}


def _timeouts_lines(timeouts: dict[str, int] | None, times: StartTimes | None) -> list[str]:
    if times is None or timeouts is None:
        timeouts = DEFAULT_TIMEOUTS
        head = [
            "timeouts:",
            "  # CHECK: defaults, not measured. A request slower than request_s fails; a start longer",
            "  # than start_s is stopped, so a hung server holds each start at most start_s. Set them",
            "  # from this model's real load and request times before a long run: `parval init",
            "  # --measure` starts the candidate once and writes them (`parval validate` prints the",
            "  # worst case they allow).",
        ]
    else:
        head = [
            "timeouts:",
            f"  # From one start of {times.executable} (`parval init --measure`): ready in",
            f"  # {times.ready_s:.2f} s, first request (loads the model) {times.first_request_s:.3f} s, slowest of "
            f"{times.requests - 1} later",
            f"  # requests {times.request_s:.3f} s, stopped in {times.stop_s:.2f} s. Each limit is about {MARGIN}x "
            f"that (a start {START_MARGIN}x its",
            "  # schedule), so a slow start is not cut and a hung server is stopped soon. Measure again",
            "  # after changing the model, its options or the machine.",
        ]
    return [*head, *(f"  {k}: {timeouts[k]}" for k in DEFAULT_TIMEOUTS)]


def _rel(path: Path, plan_dir: Path) -> str:
    """A path given on the command line as the plan writes it: an absolute one stays
    absolute; a relative one (from the current directory) becomes relative to the plan's
    folder, as the plan's paths are read."""
    if path.is_absolute():
        return str(path)
    try:
        return os.path.relpath(path.absolute(), plan_dir.absolute())
    except ValueError:
        return str(path.absolute())


def _y(value: object) -> str:
    """A YAML flow value (JSON is valid YAML)."""
    return json.dumps(value, ensure_ascii=False)


def read_server_config(path: Path) -> JsonObject:
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise InputFileError(f"{path}: server config not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(f"{path}: cannot read server config: {exc}") from None
    except ValueError as exc:
        raise InputFileError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("models"), list) or not data["models"]:
        raise UsageError(f"{path}: server config requires a non-empty models array")
    return data


def pick_model(config: JsonObject, model_id: str | None, where: Path) -> JsonObject:
    models = [m for m in iterate(config["models"]) if isinstance(m, dict)]
    ids = [str(m.get("id")) for m in models]
    if model_id is None:
        if len(models) != 1:
            raise UsageError(f"{where}: {len(models)} models ({', '.join(ids)}); choose one with --model ID")
        entry = models[0]
    else:
        found = [m for m in models if m.get("id") == model_id]
        if not found:
            raise UsageError(f"{where}: no model {model_id!r}; the config has: {', '.join(ids)}")
        entry = found[0]
    for key in ("id", "family", "path"):
        if not isinstance(entry.get(key), str) or not entry[key]:
            raise UsageError(f"{where}: model entry {entry.get('id')!r} lacks {key!r}")
    return entry


def advertised_counts(entry: JsonObject) -> list[int]:
    """Counts 1..slots; an entry without `slots` advertises one slot (see `missing_slots_warning`)."""
    slots = entry.get("slots", 1)
    if isinstance(slots, bool) or not isinstance(slots, int) or not 1 <= slots <= 16:
        raise UsageError(f"model {entry['id']!r}: slots must be an integer between 1 and 16, got {slots!r}")
    return list(range(1, slots + 1))


def missing_slots_warning(entry: JsonObject, where: Path) -> str | None:
    """What `parval init` and `parval catalogue init` print for a model entry without
    `slots`: its plan covers count 1 only, which is easy to miss."""
    if "slots" in entry:
        return None
    return (
        f"warning: {where}: model {entry['id']!r} has no `slots`, so its plan covers count 1 only; "
        f'to validate more parallel slots, add "slots": N (1-16, what the candidate advertises) to its '
        "entry there and write the plan again"
    )


def volatile_timing_fields(task: str) -> list[str]:
    """The starter's `compare.volatile_fields` (see AUDIO_OUT_TASKS): measured times only."""
    paths = [f"{VOLATILE_ROOT}.wall_ms"]
    if task in AUDIO_OUT_TASKS:
        paths.append(f"{VOLATILE_ROOT}.rtf")
    return paths


def _volatile_lines(task: str) -> list[str]:
    why = {
        f"{VOLATILE_ROOT}.wall_ms": "execution wall time differs on every run",
        f"{VOLATILE_ROOT}.rtf": "real-time factor (wall time / audio duration) differs on every run",
    }
    lines = [
        "compare:",
        "  # Only measured times in the reply's `timing` may be excluded, and only those the replies",
        "  # carry (an excluded field no reply carries leaves Q2 PENDING).",
        "  volatile_fields:",
    ]
    for path in volatile_timing_fields(task):
        lines += [f"    - path: {path}", f"      justification: {why[path]}"]
    if task not in AUDIO_OUT_TASKS | NO_AUDIO_OUT_TASKS:
        lines += [f"    # EDIT: add {VOLATILE_ROOT}.rtf here if this task's replies carry it (an audio output)"]
    return lines


def variation_kinds(task: str) -> list[str]:
    """The variation kinds a task's requests can change (M3.variation): text tasks vary
    length and seed (a reference voice where the model takes one: commented out in the
    plan, the user decides); audio-input tasks (VAD, ASR, ...) take no seed, so the input
    audio's length and content vary."""
    return ["length", "seed"] if task in TEXT_TASKS else ["length", "content"]


def _requests(task: str, fixtures: Sequence[Fixture], plan_dir: Path) -> list[str]:
    if task in TEXT_TASKS:
        base = {"text": "The quick brown fox jumps over the lazy dog.", "seed": 1234}
        long_text = "A longer sentence makes a longer output, so the effective input length really changes here."
        return [
            "requests:",
            f"  base: {_y(base)}",
            "  variations:               # each must change the effective input (M3.variation)",
            "    - name: long_text",
            "      changes: text",
            f"      request: {_y({**base, 'text': long_text})}",
            "    - name: other_seed",
            "      changes: seed",
            f"      request: {_y({**base, 'seed': 99})}",
            "    # When the model takes a reference voice, uncomment this (with a real fixture) and add",
            "    # `reference` to model.variation_kinds:",
            "    # - name: other_voice",
            "    #   changes: voice_ref",
            f"    #   request: {_y({**base, 'voice_ref': f'{PLACEHOLDER}/fixtures/voice-2.wav'})}",
            "  # a request the server must reject alongside healthy work (M4.invalid_alongside);",
            "  # EDIT to a request your model rejects",
            f"  invalid: {_y({'text': '', 'max_tokens': -1})}",
        ]
    # Audio in: no seed (it would change nothing), so the variations change the input audio.
    if fixtures:
        return _derived_requests(fixtures, plan_dir)
    base = {"audio": f"{PLACEHOLDER}/fixtures/input-1.wav"}
    return [
        ("requests:                  # EDIT-ME: point audio at real fixture files (relative to this plan)"),
        f"  base: {_y(base)}",
        "  variations:               # each must change the effective input audio (M3.variation)",
        "    - name: other_length     # a recording of another length",
        "      changes: audio",
        "      kind: length",
        f"      request: {_y({'audio': f'{PLACEHOLDER}/fixtures/input-2.wav'})}",
        "    - name: other_content    # about the same length, other content (other speech, pauses, noise)",
        "      changes: audio",
        "      kind: content",
        f"      request: {_y({'audio': f'{PLACEHOLDER}/fixtures/input-3.wav'})}",
        "  # a request the server must reject alongside healthy work (M4.invalid_alongside)",
        f"  invalid: {_y({'audio': 'data:audio/wav;base64,AAAA'})}",
    ]


def _derived_requests(fixtures: Sequence[Fixture], plan_dir: Path) -> list[str]:
    """The requests over the inputs `parval init --speech` derived (base first), each with
    how it was made and its sha256 (also in the manifest beside them)."""
    by_role = {f.role: f for f in fixtures}
    base = by_role["base"]

    def rel(path: Path) -> str:  # written beside the plan: relative to its folder
        return os.path.relpath(path.absolute(), plan_dir.absolute())

    folder = rel(base.path.parent)
    lines = [
        "# The inputs below were derived by `parval init --speech` (how, and their sha256, also in",
        f"# {folder}/{MANIFEST}):",
    ]
    for f in fixtures:
        lines.append(f"#   {f.path.name}: {f.made}, {f.seconds:.2f} s, sha256 {f.sha256}")
    lines += [
        "requests:",
        f"  base: {_y({'audio': rel(base.path)})}",
        "  variations:               # each must change the effective input audio (M3.variation)",
    ]
    for role, kind in (("other_length", "length"), ("other_content", "content")):
        lines += [
            f"    - name: {role}",
            "      changes: audio",
            f"      kind: {kind}",
            f"      request: {_y({'audio': rel(by_role[role].path)})}",
        ]
    lines += [
        "  # a request the server must reject alongside healthy work (M4.invalid_alongside): an",
        "  # input file that does not exist",
        f"  invalid: {_y({'audio': '/nonexistent/parval-missing-input.wav'})}",
    ]
    return lines


def starter_plan(
    config: JsonObject,
    entry: JsonObject,
    config_path: Path,
    plan_dir: Path,
    *,
    executables: dict[str, Path] | None = None,
    fixtures: Sequence[Fixture] = (),
    timeouts: dict[str, int] | None = None,
    times: StartTimes | None = None,
) -> str:
    """The plan text (YAML with comments). `executables` ("baseline", "candidate") and
    `fixtures` (from derive_fixtures) replace their placeholders; `timeouts` measured from
    `times` replace the defaults."""
    exes = executables or {}

    def exe(role: str) -> str:
        given = exes.get(role)
        if given is None:
            return f"{PLACEHOLDER}/path/to/{'upstream' if role == 'baseline' else 'candidate'}/audiocpp_server"
        return _rel(given, plan_dir) if os.sep in str(given) else str(given)  # a bare name: looked up on PATH

    counts = advertised_counts(entry)
    # A config without `slots` advertises one slot: said where the counts are, not silently.
    counts_lines = (
        [f"counts: {_y(counts)}          # 1 up to the config's advertised slots ({counts[-1]})"]
        if "slots" in entry
        else [
            f"# WARNING: the config gives model {entry['id']!r} no `slots`, so this plan covers count 1 only.",
            f'# To validate more parallel slots, add "slots": N to its entry in {config_path}',
            "# and write the plan again (or list counts 1..N here).",
            f"counts: {_y(counts)}",
        ]
    )
    path = entry["path"]
    if not isinstance(path, str):
        raise TypeError(f"expected str, bytes or os.PathLike object, not {type(path).__name__}")
    model_path = Path(path)
    if model_path.is_absolute():
        rel = path  # an absolute path stays absolute (as the config wrote it)
    else:  # relative to the config file, re-expressed relative to the plan
        try:
            rel = os.path.relpath((config_path.parent / model_path).resolve(), plan_dir.resolve())
        except ValueError:
            rel = str((config_path.parent / model_path).resolve())
    backend = str(config.get("backend", "cuda"))
    if backend not in BACKENDS:
        raise UsageError(f"{config_path}: unsupported backend {backend!r}")
    gpu = backend in GPU_BACKENDS
    task = str(entry.get("task", "tts"))
    model: dict[str, JsonValue] = {
        "id": entry["id"],
        "family": entry["family"],
        "task": task,
        "mode": entry.get("mode", "offline"),
        "path": rel,
        "lazy": True,
    }
    description = f"Parallel-slot admission of {entry['id']} ({entry['family']}, {task}) on {backend}."
    lines = [
        f"# parval starter plan for model {entry['id']!r}, written by `parval init` from",
        f"# {config_path}. Replace every {PLACEHOLDER} placeholder, then check it with:",
        "#   parval validate THIS_FILE",
        "# The plan format: `parval schema plan` (docs/plans.md).",
        f"schema_version: {schema_version('plan')}",
        f"name: {_y(str(entry['id']).replace(':', '-'))}",
        f"description: {_y(description)}",
        "",
        "servers:",
        "  baseline:                 # upstream legacy build (before the --parallel-jobs runtime)",
        f"    executable: {_y(exe('baseline'))}",
        "  candidate:                # the build under test",
        f"    executable: {_y(exe('candidate'))}",
        "",
        "server:",
        f"  backend: {backend}",
        f"  device: {as_int(config.get('device', 0))}",
        f"  threads: {as_int(config.get('threads', 1))}",
        f"  busy_timeout_ms: {as_int(config.get('busy_timeout_ms', 300000))}",
        f"  max_loaded_models: {as_int(config.get('max_loaded_models', 0))}",
        (
            f"  ui_management: {_y(bool(config.get('ui_management', False)))}   "
            "# true needs a native-model-manager build; enables the registration probes"
        ),
        "",
        "model:",
    ]
    for key, value in model.items():
        lines.append(f"  {key}: {_y(value)}")
    for key in ("load_options", "session_options", "default_request_options"):
        if entry.get(key):
            lines.append(f"  {key}: {_y(entry[key])}")
    extra = {k: entry[k] for k in ENTRY_EXTRA_KEYS if k in entry}
    if extra:
        lines.append(f"  entry_extra: {_y(extra)}")
    lines += [
        "  cache_sensitive: false     # true when outputs depend on the slot's request history",
        f"  admit_modes: [{_y(model['mode'])}]",
        (
            f"  variation_kinds: [{', '.join(variation_kinds(task))}]   "
            "# EDIT: the kinds this model supports (length, seed, reference, preparation, content)"
        ),
        *(
            [
                "  # A model that takes no reference voice: say why instead (M3.variation shows it):",
                '  # variation_kinds_justification: {reference: "<why the model takes no reference>"}',
            ]
            if "reference" in (supported_kinds(task) or ())
            else []
        ),
        "",
        "# What parval cannot discover (M1.manifest stays PENDING naming each item left out):",
        "# identity:",
        "#   baseline: {source_commit: <git sha>, build_flags: <cmake flags>}",
        "#   candidate: {source_commit: <git sha>, build_flags: <cmake flags>}",
        "#   quantization: <f16, q8_0, none ...>",
        "",
        *counts_lines,
        "starts_per_count: 3          # the procedure's minimum (M2.starts)",
        "waves: {warm: 2, mixed_at_largest: 10, serial_reuse: 2}   # ten mixed waves at every count",
        "",
        *_requests(task, fixtures, plan_dir),
        "",
        *_volatile_lines(task),
        "",
        "memory:",
        f"  gpu_required: {_y(gpu)}",
        "  # M5.stable's rule, declared before the run (never choose or change the bound after",
        f"  # seeing the data): the per-wave peak may grow by less than {STABILISATION_MIB} MiB over the",
        f"  # last {STABILISATION_K} repeated-use waves of every start. EDIT before the first run if your",
        "  # model needs another bound.",
        (
            f"  stabilisation: {{last_k_waves: {STABILISATION_K}, max_growth_mib: {STABILISATION_MIB}, "
            f"metric: {'gpu_process' if gpu else 'host_rss'}}}"
        ),
        "",
        *_timeouts_lines(timeouts, times),
        "",
        "framework:",
        ("  record: null              # the shared F1-F6 record from `parval framework` (else F1-F6 stay PENDING)"),
        ("  protected: null           # a `parval verify-protected --output x4.json` result (else X4 stays PENDING)"),
        "",
    ]
    if not any(PLACEHOLDER in line for line in lines[2:]):
        lines[1] = f"# {config_path}. Check it with:"
    return "\n".join(lines) + "\n"
