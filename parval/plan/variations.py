"""Request variations (M3.variation): the kinds a task supports, the kind a changed field
is, and the plan defects that can be known before a run (a variation that changes nothing,
a kind label that does not match the field it changes)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from parval.jsonread import contains, get, iterate

# Request keys that name files on the machine running the server.
PATH_KEYS = ("audio", "voice_ref", "source_audio", "target_voice", "prosody_ref", "style_ref")

VARIATION_KINDS = ("length", "seed", "reference", "preparation", "content")

# The kinds each task supports (what the procedure's "effective length, seed,
# reference/preparation changes where supported" means per task): text-to-audio tasks vary
# length, seed and reference; audio-input tasks vary the input audio's length and content.
# Preparation is model-specific and never required. Tasks not listed declare their own.
TASK_KINDS: dict[str, tuple[str, ...]] = {
    "tts": ("length", "seed", "reference"),
    "clon": ("length", "seed", "reference"),
    "asr": ("length", "content"),
    "vad": ("length", "content"),
    "diar": ("length", "content"),
    "sep": ("length", "content"),
    "align": ("length", "content"),
    "spk": ("length", "content"),
}

# The kinds a request field can be (a variation naming no `kind` takes the first).
FIELD_KINDS: dict[str, tuple[str, ...]] = {
    "text": ("length", "content"),
    "input": ("length", "content"),
    "max_tokens": ("length",),
    "max_steps": ("length",),
    "duration_seconds": ("length",),
    "seed": ("seed",),
    "voice_ref": ("reference",),
    "voice_id": ("reference",),
    "reference_text": ("reference",),
    "prosody_ref": ("reference",),
    "style_ref": ("reference",),
    "target_voice": ("reference",),
    "speaker": ("reference",),
    "audio": ("length", "content"),
    "file": ("length", "content"),
}


def variation_kind(variation: Mapping[str, object]) -> str:
    """A plan variation's kind: its `kind`, else the kind its `changes` field implies."""
    kind = variation.get("kind")
    if isinstance(kind, str) and kind:
        return kind
    return FIELD_KINDS.get(str(variation.get("changes", "")), ("other",))[0]


def supported_kinds(task: str) -> tuple[str, ...] | None:
    """The kinds `task` supports (None: the plan declares its own)."""
    return TASK_KINDS.get(task)


def omitted_kinds(model: Mapping[str, object]) -> list[str]:
    """Kinds the task supports that the plan's `model.variation_kinds` leaves out."""
    declared = model.get("variation_kinds")
    known = supported_kinds(str(model.get("task", "")))
    if declared is None or known is None:
        return []
    return [k for k in known if not contains(declared, k)]


def unjustified_omissions(model: Mapping[str, object]) -> list[str]:
    """Omitted kinds without a reason in `model.variation_kinds_justification`."""
    why = model.get("variation_kinds_justification") or {}
    return [k for k in omitted_kinds(model) if not str(get(why, k) or "").strip()]


def variation_problems(raw: Mapping[str, object]) -> list[str]:
    """Plan defects of the variations that can be known before a run, each naming its place:
    a variation whose changed field equals the base request's (it changes nothing), a
    `kind` that is not a kind of the field it changes (a seed change is not `length`)."""
    reqs = raw.get("requests") or {}
    base = get(reqs, "base") or {}
    out = []
    for i, v in enumerate(iterate(get(reqs, "variations") or [])):
        where = f"requests.variations[{i}] ({get(v, 'name')})"
        field = str(get(v, "changes", ""))
        if get(base, field) == get(get(v, "request") or {}, field):
            out.append(
                f"{where}: changes '{field}', but its {field} equals the base request's: it changes no input "
                "(choose a field the model uses and give it another value)"
            )
        kind = get(v, "kind")
        kinds = FIELD_KINDS.get(field)
        if isinstance(kind, str) and kinds is not None and kind not in kinds:
            out.append(
                f"{where}: kind '{kind}', but it changes '{field}', which is a {' or '.join(kinds)} variation "
                "(label the kind the change really is)"
            )
    return out


def same_file_problems(raw: Mapping[str, object], resolve: Callable[[str], str]) -> list[str]:
    """Variations whose changed file is one another variation or the base request already
    names, once `resolve` (the plan's path resolution) has made their paths comparable:
    `a.wav` and `./x/../a.wav` are one input, so the second variation covers nothing new
    (and a variation on the base request's file changes no input). The same spelling as the
    base request is `variation_problems`' to report."""
    reqs = raw.get("requests") or {}
    base = get(reqs, "base") or {}
    out: list[str] = []
    named: dict[tuple[str, str], list[str]] = {}
    for i, v in enumerate(iterate(get(reqs, "variations") or [])):
        field = str(get(v, "changes", ""))
        value = get(get(v, "request") or {}, field)
        if field not in PATH_KEYS or not isinstance(value, str) or value.startswith("data:"):
            continue
        where = f"requests.variations[{i}] ({get(v, 'name')})"
        try:
            file = resolve(value)
            base_value = get(base, field)
            same_as_base = isinstance(base_value, str) and base_value != value and resolve(base_value) == file
        except (OSError, ValueError, RuntimeError):  # an unusable path: file_problems names it
            continue
        if same_as_base:
            out.append(
                f"{where}: changes '{field}' to '{value}', which is the base request's file '{base_value}' "
                f"({file}): it changes no input (give it another recording)"
            )
        named.setdefault((field, file), []).append(where)
    for (field, file), wheres in named.items():
        if len(wheres) > 1:
            out.append(
                f"{' and '.join(wheres)} change '{field}' to the same file {file}: one input is one "
                "variation (give each variation its own recording)"
            )
    return out
