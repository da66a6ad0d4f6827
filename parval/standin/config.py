"""Server config file and model entries, validated with the real server's messages."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cli import BACKENDS, CliArgs

TASKS = ("vad", "asr", "diar", "sep", "gen", "tts", "clon", "vc", "s2s", "align", "vdes", "spk", "svc")
MODES = ("offline", "streaming")
SLOTS_REQUIRE_FLAG = "slots requires --parallel-jobs at server startup"
SLOTS_RANGE = "model slots must be an integer between 1 and 16"


class ConfigError(ValueError):
    """A config or registration body is invalid; the message is the real server's text."""


class SlotsError(ConfigError):
    """`slots` is invalid (registration maps this to 400, startup to exit 1)."""


@dataclass(frozen=True)
class ModelSpec:
    id: str
    family: str
    path: Path
    task: str = "tts"
    mode: str = "offline"
    lazy: bool = False
    slots: int | None = None
    busy_timeout_ms: int | None = None
    config: str | None = None
    weight: str | None = None
    model_spec_override: str | None = None
    load_options: Mapping[str, str] = field(default_factory=dict)
    session_options: Mapping[str, str] = field(default_factory=dict)
    default_request_options: Mapping[str, str] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return self.slots if self.slots is not None else 1

    def identity(self) -> tuple[object, ...]:
        """What a reconfiguration compares to decide `reconfigured`."""
        return (
            str(self.path),
            self.family,
            self.task,
            self.mode,
            self.slots,
            self.config,
            self.weight,
            tuple(sorted(self.load_options.items())),
            tuple(sorted(self.session_options.items())),
            self.model_spec_override,
        )


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8080
    backend: str = "cuda"
    device: int = 0
    threads: int = 1
    ui: bool = True
    ui_management: bool = False
    lazy_load: bool = False
    busy_timeout_ms: int = 300000
    max_loaded_models: int = 0
    idle_unload_ms: int = 0
    min_free_memory_mb: int = 0
    max_request_body_bytes: int = 2**31
    cors_origins: str = ""
    parallel_jobs: bool = False
    models: list[ModelSpec] = field(default_factory=list)


def option_string(value: Any) -> str:
    """Stringify an option value the way the real server does (cJSON number format)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return json.dumps(value, separators=(",", ":"))


def _options(obj: Mapping[str, Any], key: str) -> dict[str, str]:
    raw = obj.get(key)
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{key} must be a JSON object")
    return {str(k): option_string(v) for k, v in raw.items()}


def _str(obj: Mapping[str, Any], key: str, default: str | None = None) -> str:
    if key not in obj:
        if default is None:
            raise ConfigError(f"missing required json key: {key}")
        return default
    value = obj[key]
    if not isinstance(value, str):
        raise ConfigError(f"json key '{key}' must be a string")
    return value


def _opt_str(obj: Mapping[str, Any], key: str) -> str | None:
    return _str(obj, key) if key in obj and obj[key] is not None else None


def _int(obj: Mapping[str, Any], key: str, default: int) -> int:
    value = obj.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"json key '{key}' must be a number")
    if value != int(value):
        raise ConfigError("json number is not an integer")
    return int(value)


def _bool(obj: Mapping[str, Any], key: str, default: bool) -> bool:
    value = obj.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"json key '{key}' must be a boolean")
    return value


def parse_slots(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SlotsError(SLOTS_RANGE)
    if not math.isfinite(value) or value != int(value) or not 1 <= value <= 16:
        raise SlotsError(SLOTS_RANGE)
    return int(value)


def parse_model(
    obj: Any, base_dir: Path, *, lazy_default: bool, parallel_jobs: bool, registration: bool = False
) -> ModelSpec:
    """One model entry from the config file or a `/v1/models/load` body."""
    if not isinstance(obj, dict):
        raise ConfigError("server model entries must be JSON objects")
    model_id = _str(obj, "id")
    path_text = _str(obj, "path")
    family = _str(obj, "family")
    task = _str(obj, "task", "tts")
    if task not in TASKS:
        raise ConfigError(f"unsupported task: {task}")
    mode = _str(obj, "mode", "offline")
    if mode not in MODES:
        raise ConfigError(f"unsupported run mode: {mode}")
    slots: int | None = None
    if "slots" in obj:
        if not parallel_jobs:
            raise SlotsError(SLOTS_REQUIRE_FLAG)
        slots = parse_slots(obj["slots"])
    busy: int | None = None
    if not registration and "busy_timeout_ms" in obj:
        busy = _int(obj, "busy_timeout_ms", 0)
        if busy < 0:
            raise ConfigError(f"busy_timeout_ms for model {model_id} must be >= 0 (0 disables the guard)")
    path = Path(path_text)
    return ModelSpec(
        id=model_id,
        family=family,
        path=(path if path.is_absolute() else base_dir / path).resolve(),
        task=task,
        mode=mode,
        lazy=lazy_default if registration else _bool(obj, "lazy", lazy_default),
        slots=slots,
        busy_timeout_ms=busy,
        config=_opt_str(obj, "config"),
        weight=_opt_str(obj, "weight"),
        model_spec_override=_opt_str(obj, "model_spec_override"),
        load_options=_options(obj, "load_options"),
        session_options=_options(obj, "session_options"),
        default_request_options={} if registration else _options(obj, "default_request_options"),
    )


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        raise ConfigError(f"failed to open server config: {path}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"failed to parse json at byte {exc.pos}") from None


def load_server_config(args: CliArgs) -> ServerConfig:
    """Read the config file (if any), apply CLI overrides, then validate the merge."""
    raw: dict[str, Any] = {}
    base_dir = Path.cwd()
    if args.config is None:
        if not args.ui:
            raise ConfigError("missing required --config argument (or use --ui for the native WebUI)")
    else:
        config_path = Path(args.config).resolve()
        loaded = _read_json(config_path)
        if not isinstance(loaded, dict):
            raise ConfigError("server config must be a JSON object")
        raw = loaded
        base_dir = config_path.parent
    cfg = ServerConfig(parallel_jobs=args.parallel_jobs)
    cfg.host = _str(raw, "host", cfg.host)
    cfg.port = _int(raw, "port", cfg.port)
    cfg.backend = _str(raw, "backend", cfg.backend)
    cfg.device = _int(raw, "device", cfg.device)
    cfg.threads = _int(raw, "threads", cfg.threads)
    cfg.ui = _bool(raw, "ui", cfg.ui)
    cfg.ui_management = _bool(raw, "ui_management", cfg.ui_management)
    cfg.lazy_load = _bool(raw, "lazy_load", cfg.lazy_load)
    cfg.busy_timeout_ms = _int(raw, "busy_timeout_ms", cfg.busy_timeout_ms)
    cfg.max_loaded_models = _int(raw, "max_loaded_models", cfg.max_loaded_models)
    cfg.idle_unload_ms = _int(raw, "idle_unload_ms", cfg.idle_unload_ms)
    cfg.min_free_memory_mb = _int(raw, "min_free_memory_mb", cfg.min_free_memory_mb)
    cfg.max_request_body_bytes = _int(raw, "max_request_body_bytes", cfg.max_request_body_bytes)
    cfg.cors_origins = _str(raw, "cors_origins", cfg.cors_origins)
    _apply_cli(cfg, args)
    _validate(cfg)
    # without a config file (`--ui` only) the server starts with no models
    models = raw.get("models") if args.config is not None else []
    if not isinstance(models, list):
        raise ConfigError("server config requires a models array")
    if not models and args.config is not None and not cfg.ui_management:
        raise ConfigError("server config requires a models array")
    seen: set[str] = set()
    for entry in models:
        spec = parse_model(entry, base_dir, lazy_default=cfg.lazy_load, parallel_jobs=cfg.parallel_jobs)
        if spec.id in seen:
            raise ConfigError(f"duplicate server model id: {spec.id}")
        seen.add(spec.id)
        cfg.models.append(spec)
    return cfg


def _apply_cli(cfg: ServerConfig, args: CliArgs) -> None:
    for name in (
        "host",
        "port",
        "backend",
        "device",
        "threads",
        "busy_timeout_ms",
        "max_loaded_models",
        "idle_unload_ms",
        "min_free_memory_mb",
        "cors_origins",
    ):
        value = getattr(args, name)
        if value is not None:
            setattr(cfg, name, value)
    if args.ui is not None:
        cfg.ui = args.ui
    cfg.ui_management = cfg.ui_management or args.ui_management


def _validate(cfg: ServerConfig) -> None:
    if cfg.backend == "rocm":
        cfg.backend = "hip"
    if cfg.backend not in BACKENDS:
        raise ConfigError(f"unsupported server backend: {cfg.backend}")
    if not 1 <= cfg.port <= 65535:
        raise ConfigError("server port must be in 1..65535")
    if cfg.threads <= 0:
        raise ConfigError("server threads must be positive")
    if cfg.busy_timeout_ms < 0:
        raise ConfigError("server busy_timeout_ms must be >= 0 (0 disables the guard)")
    if cfg.max_loaded_models < 0:
        raise ConfigError("server max_loaded_models must be >= 0 (0 disables the limit)")
    if cfg.idle_unload_ms < 0:
        raise ConfigError("server idle_unload_ms must be >= 0 (0 disables idle unload)")
    if cfg.min_free_memory_mb < 0:
        raise ConfigError("server min_free_memory_mb must be >= 0 (0 disables the memory guard)")
    if not 0 <= cfg.max_request_body_bytes <= 2**53 - 1:
        raise ConfigError("server max_request_body_bytes must be a non-negative integer")
    if cfg.cors_origins not in ("*", ""):
        raise ConfigError("--cors-origins must be '*' (allow all origins) or '' (disabled)")
