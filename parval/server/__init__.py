"""Server plumbing: the process, the HTTP client, wave release, the status poller, memory and
NVML sampling, observer traces."""
