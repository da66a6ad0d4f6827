"""Named faults that make the stand-in misbehave like known server regressions.

Faults come from repeatable `--fault NAME[=VALUE]` arguments and from the environment
variable `PARVAL_STANDIN_FAULTS="name1,name2=value"`; both sources are merged.

Four names are behaviour variants a correct server may have, not faults; they are switched
on the same way so a campaign can be run against them:

- `registration_outputs`: outputs depend on the registration (model id and path are mixed
  into the synthesis digest), so only a reference from the same registration matches.
- `cold_warm_differ`: a session's first request after a load (cold) gives a different
  output from its later (warm) requests; warm and repeated warm agree.
- `pcm32_output`: audio outputs are 32-bit PCM WAV files (the 16-bit samples shifted up).
- `allocator_cache_mib`: the first unload leaves N MiB cached (as an allocator keeps freed
  blocks) and every later one leaves the same: a residue that steps up once and stays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .errors import StartupError

FAULTS_ENV = "PARVAL_STANDIN_FAULTS"

# name -> default value (None for faults that take no value)
FAULT_DEFAULTS: dict[str, int | None] = {
    # behaviour variants of a correct server (see the module docstring)
    "registration_outputs": None,
    "cold_warm_differ": None,
    "pcm32_output": None,
    "allocator_cache_mib": 6,
    # faults
    "contaminate_3plus": None,
    "serial_nondeterminism": None,
    "intermittent_mismatch": 5,
    "counters_no_drain": None,
    "fake_concurrency": None,
    "barging": None,
    "unload_skips_load": None,
    "memory_growth": 4,
    "memory_growth_kib": 256,  # N KiB kept with every request: slow growth, about 1 MiB a wave at 4 slots
    "memory_step_every": 8,  # 3 MiB kept with every Nth request: growth in steps
    "unload_keeps_mib": 6,  # N MiB kept with every unload: a residue that grows cycle to cycle
    "retain_after_unload": None,
    "crash_at_4": None,
    "first_load_fails": None,
    "ignore_seed": None,
    "lease_binding": None,
    "bulk_waits_unpublished": None,
    "retiring_resident": None,
    "registry_convoy": None,
    "overdue_suppressed": None,
    "queued_counter_stuck": None,  # a queued request that timed out stays in queued_requests
    "hang_requests": None,
    "drop_connection": None,
    "garbage_replies": None,
    "bad_base64": None,
    "bad_wav": None,
    "never_ready": None,
    "startup_crash": None,
    "hang_shutdown": None,
    "stalled_io_wait": None,  # shutdown waits on clients that stopped sending mid-request
    "unload_keeps_loaded": None,  # unloads answer as usual but leave the model loaded
    "busy_unload_errors": None,  # a bulk unload that waited for work answers 500 (after unloading)
    "batch_repeats_first": None,  # a native batch answers request 0 twice, never request 1
    "sub16_noise": None,  # PCM_32 outputs whose samples differ below 16 bits
    "crash_legacy_after": 4,  # the unflagged (legacy) runtime aborts after N inference requests
    "segv_unload_all_busy": None,  # SIGSEGV on unload_all_models while requests are running
    "memory_refused_at": 4,  # loading a pool of N or more slots is refused: 503 insufficient_memory
    "counter_lag_ms": 400,  # active_slots still counts a finished request for N ms after its reply
    # one output in N produced beside another request differs (which ones follow the start and
    # PARVAL_STANDIN_SEED: parval/standin/execution.py)
    "rare_contamination": 2000,
}


@dataclass(frozen=True)
class Faults:
    """The set of enabled faults with their integer values."""

    values: Mapping[str, int | None] = field(default_factory=dict)

    def on(self, name: str) -> bool:
        if name not in FAULT_DEFAULTS:
            raise KeyError(name)
        return name in self.values

    def value(self, name: str) -> int:
        value = self.values.get(name, FAULT_DEFAULTS[name])
        if value is None:
            raise KeyError(f"fault {name} takes no value")
        return value


def parse_faults(cli_specs: Sequence[str], env_value: str | None) -> Faults:
    """Merge CLI and environment fault specs; a CLI value wins over the environment's."""
    specs = [s.strip() for s in (env_value or "").split(",") if s.strip()]
    specs.extend(cli_specs)
    values: dict[str, int | None] = {}
    for spec in specs:
        name, sep, raw = spec.partition("=")
        name = name.strip()
        if name not in FAULT_DEFAULTS:
            known = ", ".join(sorted(FAULT_DEFAULTS))
            raise StartupError(f"unknown stand-in fault: {name} (known: {known})")
        default = FAULT_DEFAULTS[name]
        if not sep:
            values[name] = default
            continue
        if default is None:
            raise StartupError(f"stand-in fault {name} takes no value")
        try:
            number = int(raw)
        except ValueError:
            raise StartupError(f"stand-in fault {name} needs an integer value, got {raw!r}") from None
        if number < 1:
            raise StartupError(f"stand-in fault {name} needs a positive value, got {number}")
        values[name] = number
    return Faults(values)
