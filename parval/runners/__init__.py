"""The campaign (the recorder): the schedule of fresh starts, their waves and probes,
recorded as events; it never decides pass or fail. What it must judge while it runs
(the count M4 runs at, --fail-fast) is handed in (runners.campaign.MidRunJudging).

May import: signals, server, procedure, rundir, outputs, plan and the foundation; never the
gates or the framework (its siblings)."""
