"""The admitted catalogue: what a change claims (model, backend, mode, slot counts), where
its evidence is collected and how each claim stands.

A catalogue file (`schemas/catalogue.schema.json`) names, per claim, the plan (or a plan
template with overrides), the backends, modes and advertised counts; per backend, the
candidate build. Each claim x backend x mode is one *combination*: one campaign with an
effective plan derived from the claim's plan (`combination.py`). `parval catalogue run`
collects the evidence on this machine (`combination_runs.py`, resumable by `inputs.py`),
`parval catalogue slurm|matrix` writes the job files for many machines (`jobs.py`), and
`parval report --catalogue DIR --claims CAT` discloses every claimed count
(`disclosure.py`). Not to be confused with `parval.procedure.assertion_ids`, the catalogue of
the procedure's assertion IDs.

May import: api (to run a combination's campaign), judge, report and every layer below.
"""
