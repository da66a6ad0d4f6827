"""The shared framework gate (F1-F6): black-box probes of a candidate audiocpp_server
through its HTTP surface, CTest/sanitizer runs, and the record model evidence references;
beside the record, the checks a model run applies before it trusts one (record_trust.py:
which record, its identity against the candidate's, record_identity.py; a reuse across
builds, reuse.py).

`collect.run_framework` is the library entry point; the `parval framework` CLI command is
parval.commands.framework.

May import: server, procedure, rundir, outputs, plan and the foundation; never the gates or
the runners (its siblings) nor the report that shows its record."""
