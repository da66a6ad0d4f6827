"""The judges of a model run: pure functions from recorded events (rundir.event_index) to each
assertion's verdict, one module per group, each judge declared with its registry entry.

May import: procedure, rundir, outputs, plan, protected and the foundation; never the
runners (the recorder, their sibling) nor anything above (judge.py runs them all)."""
