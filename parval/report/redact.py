"""--redact-paths: replace absolute paths with a short hash, for publishing a report.

`/home/me/models/x.gguf` becomes `<path:1a2b3c4d5e6f>` (the first 12 hex digits of the
path's sha256: the same path always gives the same token, so a reader can still tell two
files apart). Server routes (`/v1/...`, `/health`), single-component paths such as `/tmp`
and URLs (`http://host:port/v1/...`) are kept; `file://` URLs are redacted too.
"""

from __future__ import annotations

import hashlib
import re

_COMPONENT = r"[\w.+@%~=-]+"
_PATH = re.compile(rf"(?<![\w.:/])(/(?:{_COMPONENT}/)*{_COMPONENT})")
_FILE_URL = re.compile(rf"file://(/(?:{_COMPONENT}/)*{_COMPONENT})")
_KEEP = ("/v1/", "/health")


def path_token(path: str) -> str:
    return f"<path:{hashlib.sha256(path.encode()).hexdigest()[:12]}>"


def redact_paths(text: str) -> str:
    def sub(m: re.Match[str]) -> str:
        path = m.group(1)
        if path.count("/") < 2 or path.startswith(_KEEP):
            return path
        return path_token(path)

    text = _FILE_URL.sub(lambda m: "file://" + path_token(m.group(1)), text)
    return _PATH.sub(sub, text)
