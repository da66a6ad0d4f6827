"""The run plan: loading and validating it, its JSON Schemas, the schedule it implies, the
starter plan of `parval init`."""
