"""The shared framework gate (F1-F6): black-box probes of a candidate audiocpp_server
through its HTTP surface, CTest/sanitizer runs, and the record model evidence references.

`collect.run_framework` is the library entry point; the `parval framework` CLI command is
parval.commands.framework.

May import: server, procedure, rundir, outputs, plan and the foundation; never the gates or
the runners (its siblings) nor the report that shows its record."""
