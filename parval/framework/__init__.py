"""The shared framework gate (F1-F6): black-box probes of a candidate audiocpp_server
through its HTTP surface, CTest/sanitizer runs, and the record model evidence references.

`command.framework_command` is the `parval framework` CLI command; `command.run_framework`
is the library entry point.
"""
