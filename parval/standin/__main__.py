"""`python -m parval.standin` / `parval-standin`: run the stand-in audiocpp_server."""

from __future__ import annotations

import sys

from .server_main import run


def main() -> None:
    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
