"""A pure-Python stand-in for audio.cpp's `audiocpp_server`.

It speaks the real server's CLI, config file and HTTP API, schedules requests the way the
parallel runtime's behaviour contract says (or like the legacy busy guard without
`--parallel-jobs`), returns deterministic outputs that depend on the model file, takes real
time and real host memory, and can be switched into named faults (`--fault NAME[=VALUE]`
or `PARVAL_STANDIN_FAULTS`) that reproduce known regressions.

May import: nothing of parval (a server parval is tested against must not share its code).
"""
