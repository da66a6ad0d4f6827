"""Host memory of a server's process tree from /proc: RSS and PSS summed over the server
and every descendant (a server may fork helpers whose memory is the server's too)."""

from __future__ import annotations

import os

_KIB_PER_MIB = 1024.0


def _children_via_task_files(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids.extend(int(x) for x in f.read().split())
        except OSError:  # thread or process exited meanwhile
            continue
    return kids


def _ppid_map() -> dict[int, list[int]]:
    """Fallback when the kernel lacks /proc/<pid>/task/<tid>/children."""
    parents: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # comm may contain spaces/parentheses: fields resume after the last ')'
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1:
            parents.setdefault(int(fields[1]), []).append(int(name))
    return parents


_HAS_CHILDREN_FILES = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def _process_tree(pid: int) -> list[int]:
    parents = None if _HAS_CHILDREN_FILES else _ppid_map()
    seen: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.append(p)
        todo.extend(_children_via_task_files(p) if parents is None else parents.get(p, []))
    return seen


def _status_rss_kib(pid: int) -> tuple[float, str]:
    """(VmRSS KiB, state letter); raises OSError when the process is gone."""
    rss = 0.0  # zombies and kernel threads have no VmRSS line
    state = ""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("State:"):
                state = line.split()[1]
            elif line.startswith("VmRSS:"):
                rss = float(line.split()[1])
                break
    return rss, state


def _pss_kib(pid: int) -> float:
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return float(line.split()[1])
    return 0.0  # no address space (zombie): nothing resident


def tree_memory_detail(pid: int) -> tuple[float, float | None, list[int], str | None]:
    """`host_tree_memory` plus why PSS is missing (None when it was read)."""
    try:
        root_rss, state = _status_rss_kib(pid)
    except OSError as exc:
        raise ProcessLookupError(f"process {pid} is gone") from exc
    if state == "Z":
        raise ProcessLookupError(f"process {pid} is a zombie")
    rss = root_rss
    pids = [pid]
    for child in _process_tree(pid)[1:]:
        try:
            rss += _status_rss_kib(child)[0]
        except OSError:  # exited between listing and reading
            continue
        pids.append(child)
    pss = 0.0
    pss_error: str | None = None
    for p in pids:
        try:
            pss += _pss_kib(p)
        except FileNotFoundError as exc:
            if p == pid:  # smaps_rollup absent (kernel < 4.14); a vanished child is skipped
                pss_error = f"smaps_rollup unreadable: {exc}"
                break
        except OSError as exc:  # e.g. PermissionError: a partial sum would mislead
            pss_error = f"smaps_rollup unreadable: {exc}"
            break
    return (rss / _KIB_PER_MIB, None if pss_error else pss / _KIB_PER_MIB, sorted(pids), pss_error)


def host_tree_memory(pid: int) -> tuple[float, float | None, list[int]]:
    """(RSS MiB, PSS MiB or None, pids) summed over `pid` and all its descendants.

    RSS comes from /proc/<pid>/status VmRSS, PSS from /proc/<pid>/smaps_rollup (None when
    any tree member's is unreadable). Raises ProcessLookupError when `pid` itself is gone.
    """
    rss, pss, pids, _ = tree_memory_detail(pid)
    return rss, pss, pids
