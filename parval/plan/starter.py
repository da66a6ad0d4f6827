"""A starter plan from an existing audiocpp_server config file.

The plan takes the model entry (id, family, task, mode, path, options), the server-wide
settings (backend, device, threads, timeouts) and the model's advertised `slots` (counts
1..slots) from the config. What only the user knows is left as an `EDIT-ME` placeholder:
the two executables (upstream legacy build and candidate) and fixture files for
audio-input tasks; until they are real, `parval validate` names each one. What the
procedure needs and a default can honestly give is declared: the variation kinds the task
supports, a memory stabilisation rule with its bound (declared before any data is seen),
and the volatile timing fields the task's replies carry. `parval init` and `parval
catalogue init` both write their plans here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from parval.errors import InputFileError, UsageError
from parval.jsonread import as_int, iterate
from parval.jsontypes import JsonObject, JsonValue
from parval.outputs.volatility import VOLATILE_ROOT
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


def _requests(task: str) -> list[str]:
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


def starter_plan(config: JsonObject, entry: JsonObject, config_path: Path, plan_dir: Path) -> str:
    """The plan text (YAML with comments)."""
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
        "# The plan format: `parval schema plan` (README: 'Plan format').",
        f"schema_version: {schema_version('plan')}",
        f"name: {_y(str(entry['id']).replace(':', '-'))}",
        f"description: {_y(description)}",
        "",
        "servers:",
        "  baseline:                 # upstream legacy build (before the --parallel-jobs runtime)",
        f"    executable: {PLACEHOLDER}/path/to/upstream/audiocpp_server",
        "  candidate:                # the build under test",
        f"    executable: {PLACEHOLDER}/path/to/candidate/audiocpp_server",
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
        *_requests(task),
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
        "framework:",
        ("  record: null              # the shared F1-F6 record from `parval framework` (else F1-F6 stay PENDING)"),
        ("  protected: null           # a `parval verify-protected --output x4.json` result (else X4 stays PENDING)"),
        "",
    ]
    return "\n".join(lines) + "\n"
