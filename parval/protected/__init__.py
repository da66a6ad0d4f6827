"""Source-boundary check (assertion X4): `parval verify-protected`.

Reproduces `tests/server/check_parallel_boundaries.py` from audio.cpp (reference §9) with
machine-readable output and distinct exit codes:

* every protected path (file or whole directory) must be identical to the upstream commit in
  the working tree, including uncommitted edits and untracked-but-not-ignored files;
* the legacy runtime may differ from upstream only by one registration-rejection block: the
  candidate contains it exactly once and removing that occurrence gives the upstream file
  (CRLF read as LF on both sides).

git always runs through argument lists, never through a shell.

May import: the foundation only.
"""
