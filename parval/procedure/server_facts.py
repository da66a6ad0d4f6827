"""What the API reference promises about audiocpp_server that parval's probes and gates
check against: routes, the legacy runtime's rejection text, the slots forms it rejects,
the startup warning marker of the parallel runtime."""

from __future__ import annotations

ROUTE_HEALTH = "/health"
ROUTE_MODELS = "/v1/models"
ROUTE_LOAD = "/v1/models/load"
ROUTE_UNLOAD = "/v1/models/unload"
ROUTE_BULK_UNLOAD = "/v1/tasks/unload_models"

# Printed on stderr by a server started with --parallel-jobs (X2), never without it.
WARNING_MARKER = "--parallel-jobs enables EXPERIMENTAL"
# The legacy runtime's answer to any explicit `slots` in a registration (X1, F1.legacy_admission).
LEGACY_SLOTS_TEXT = "slots requires --parallel-jobs at server startup"
# Every explicit slots form the legacy runtime must reject (X1, F1.legacy_admission).
SLOTS_FORMS: tuple[int | bool | str | None, ...] = (1, 2, None, False, "4")
