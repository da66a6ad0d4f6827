"""Server plumbing: the process, the HTTP client, wave release, the status poller, memory
sampling, observer traces.

May import: procedure (server facts), rundir (atomic files), plan and the foundation."""
