"""parval: evidence orchestrator for admitting audio.cpp models at N parallel slots."""

__version__ = "0.1.0"
PROCEDURE_VERSION = "2026-10-04"
