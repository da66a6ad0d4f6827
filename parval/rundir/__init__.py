"""The run directory: event log and typed event kinds, artifacts, manifest, integrity, resume."""
