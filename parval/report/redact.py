"""--redact-paths: replace absolute paths with a short hash, for publishing a report.

`/home/me/models/x.gguf` becomes `<path:1a2b3c4d5e6f>` (the first 12 hex digits of the
path's sha256: the same path always gives the same token, so a reader can still tell two
files apart). Server routes (`/v1/...`, `/health`), single-component paths such as `/tmp`
and URLs (`http://host:port/v1/...`) are kept; `file://` URLs are redacted too.
"""

from __future__ import annotations

import re

from parval.report.md_base import ABSOLUTE_PATH, PATH_COMPONENT, kept_path, path_token

_FILE_URL = re.compile(rf"file://(/(?:{PATH_COMPONENT}/)*{PATH_COMPONENT})")


def redact_paths(text: str) -> str:
    def sub(m: re.Match[str]) -> str:
        path = m.group(1)
        return path if kept_path(path) else path_token(path)

    text = _FILE_URL.sub(lambda m: "file://" + path_token(m.group(1)), text)
    return ABSOLUTE_PATH.sub(sub, text)
