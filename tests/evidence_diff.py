"""Compare two evidence records apart from times, paths and ids.

    python -m tests.evidence_diff A.json B.json            # exact, after normalising
    python -m tests.evidence_diff A.json B.json --verdicts # ids, counts, statuses only

Exact mode drops what differs between two judgings of the same run by construction
(`generated_at`, run directory paths); verdict mode compares what two runs of the same plan
must agree on (every assertion's id, count and status, the groups, the admission and the
verdict), leaving out measured numbers and reasons that quote them. Exit 0 when equal, 1 with
the differing paths listed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

VOLATILE_KEYS = {"generated_at", "dir", "path", "plan_path", "run_dir"}


def normalise(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items() if k not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    return value


def verdicts(e: dict[str, Any]) -> dict[str, Any]:
    def table(results: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return sorted((r["id"], r.get("count"), r["status"]) for r in results)

    return {
        "assertions": table(e.get("assertions", [])),
        "admission_ready": e.get("admission_ready"),
        "all_plan_rules": e.get("all_plan_rules"),
        "verdict": {k: e["verdict"].get(k) for k in ("admitted_counts", "exit_code")},
        "model_checks.status": e.get("model_checks", {}).get("status"),
        "framework_checks.status": e.get("framework_checks", {}).get("status"),
    }


def differences(a: Any, b: Any, where: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in sorted(set(a) | set(b), key=str):
            path = f"{where}.{k}" if where else str(k)
            out += [path] if k not in a or k not in b else differences(a[k], b[k], path)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [where or "(root)"]


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 2:
        print(__doc__)
        return 2
    a, b = (json.loads(Path(p).read_text()) for p in args)
    view = verdicts if "--verdicts" in argv else normalise
    diffs = differences(view(a), view(b))
    for d in diffs[:50]:
        print(f"differs: {d}")
    print("identical" if not diffs else f"{len(diffs)} difference(s)")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
