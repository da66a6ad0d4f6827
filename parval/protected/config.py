"""What X4 protects: the upstream boundary script's paths and block, or a config's."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

import yaml

from parval.errors import InputFileError, UsageError

DEFAULT_PROTECTED_PATHS: tuple[str, ...] = (
    "app/server/runtime.h",
    "app/server/busy_guard.h",
    "app/server/http.h",
    "app/server/http.cpp",
    "app/server/frontend.h",
    "app/server/frontend.cpp",
    "include/engine/framework/runtime/session.h",
    "app/cli",
    "src/models",
    "include/engine/models",
    "src/community_models",
    "include/engine/community_models",
    "external/ggml",
)
DEFAULT_LEGACY_RUNTIME = "app/server/runtime.cpp"

# The test vector from legacy-rejection-block.txt (reference §9): five lines, four-space base
# indentation, each line ending in a newline.
LEGACY_REJECTION_BLOCK = (
    '    if (body.find("slots") != nullptr) {\n'
    "        return error_response(400,\n"
    '            "slots requires --parallel-jobs at server startup",\n'
    '            "invalid_request_error");\n'
    "    }\n"
)

# Hunks are evidence for a reviewer, not a patch: bound them so one reformatted file cannot
# blow up the JSON.
DEFAULT_MAX_HUNK_CHARS = 16_000


@dataclass(frozen=True)
class ProtectedConfig:
    """What to protect. Defaults follow the upstream boundary script."""

    protected_paths: tuple[str, ...] = DEFAULT_PROTECTED_PATHS
    legacy_runtime: str = DEFAULT_LEGACY_RUNTIME
    allowed_block: str = LEGACY_REJECTION_BLOCK
    max_hunk_chars: int = DEFAULT_MAX_HUNK_CHARS
    source: str = "built-in defaults"

    _KEYS = frozenset({"protected_paths", "legacy_runtime", "allowed_block", "allowed_block_file", "max_hunk_chars"})

    @classmethod
    def from_mapping(cls, data: Mapping[str, object], *, base_dir: Path, source: str = "mapping") -> ProtectedConfig:
        """Build a config from parsed YAML/JSON; `allowed_block_file` is relative to base_dir.

        A `verify_protected:` section is used when present, so a plan file can carry it.
        Unknown keys are refused: a misspelt key would silently weaken the check.
        """
        section = data.get("verify_protected", data)
        if not isinstance(section, Mapping):
            raise UsageError(f"{source}: 'verify_protected' must be a mapping")
        unknown = sorted(set(section) - cls._KEYS)
        if unknown:
            raise UsageError(
                f"{source}: unknown key(s) {', '.join(map(str, unknown))}; allowed: {', '.join(sorted(cls._KEYS))}"
            )
        cfg = cls(source=source)
        if "protected_paths" in section:
            paths = section["protected_paths"]
            if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
                raise UsageError(f"{source}: protected_paths must be a list of strings")
            cfg = replace(cfg, protected_paths=tuple(_normalise_repo_path(p, source) for p in paths))
        if "legacy_runtime" in section:
            legacy = section["legacy_runtime"]
            if not isinstance(legacy, str):
                raise UsageError(f"{source}: legacy_runtime must be a string")
            cfg = replace(cfg, legacy_runtime=_normalise_repo_path(legacy, source))
        if "allowed_block" in section and "allowed_block_file" in section:
            raise UsageError(f"{source}: give allowed_block or allowed_block_file, not both")
        if "allowed_block" in section:
            block = section["allowed_block"]
            if not isinstance(block, str) or not block.strip():
                raise UsageError(f"{source}: allowed_block must be a non-empty string")
            cfg = replace(cfg, allowed_block=block)
        if "allowed_block_file" in section:
            name = section["allowed_block_file"]
            if not isinstance(name, str):
                raise UsageError(f"{source}: allowed_block_file must be a string")
            block_path = base_dir / name
            try:
                # Bytes, not read_text: keep line endings as written (CRLF is folded later).
                block = block_path.read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise InputFileError(f"cannot read allowed_block_file {block_path}: {exc}") from exc
            if not block.strip():
                raise UsageError(f"{source}: allowed_block_file {block_path} is empty")
            cfg = replace(cfg, allowed_block=block)
        if "max_hunk_chars" in section:
            limit = section["max_hunk_chars"]
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 200:
                raise UsageError(f"{source}: max_hunk_chars must be an integer >= 200")
            cfg = replace(cfg, max_hunk_chars=limit)
        return cfg

    @classmethod
    def load(cls, path: Path) -> ProtectedConfig:
        """Read a YAML or JSON config file (InputFileError / UsageError → exit 2)."""
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputFileError(f"cannot read config {path}: {exc}") from exc
        try:
            data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
        except (json.JSONDecodeError, yaml.YAMLError) as exc:
            detail = str(exc).replace("\n", " ")
            raise UsageError(f"config {path} is not valid YAML/JSON: {detail}") from exc
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise UsageError(f"config {path} must contain a mapping at the top level")
        return cls.from_mapping(data, base_dir=path.parent, source=str(path))


def _normalise_repo_path(raw: str, source: str) -> str:
    """Repo-relative POSIX path without './' or a trailing '/'; refuse escapes."""
    text = raw.strip().replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    text = text.rstrip("/")
    pure = PurePosixPath(text)
    if not text or pure.is_absolute() or ".." in pure.parts or text.startswith(":"):
        raise UsageError(f"{source}: {raw!r} is not a path inside the repository")
    return str(pure)
