"""The run directory: event log and typed event kinds, the index they make (event_index.py:
by start and attempt), the evidence record's types, artifacts, manifest, integrity, resume, atomic files.

May import: plan and the foundation."""
