"""The procedure as data: the assertion IDs (assertion_ids.py), the registry's `Entry` form and scopes,
run names, what the API reference promises about the server, and the rules every reader
applies to evidence (procedure version, sealed rules). The registry that gathers every
judge's entry is parval/registry.py, above the judges.

May import: rundir and the foundation."""
