"""The run plan: loading and validating it, its JSON Schemas, the schedule it implies (and
its constants: waves, attempts, polls), the starter plan of `parval init`, and the plan as
the judges read it from a run's snapshot (judged.py).

May import: the foundation (errors, JSON readers) and outputs (which reply fields are volatile,
for the starter plan's exclusions)."""
