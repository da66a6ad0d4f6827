#!/usr/bin/env bash
# Mutation testing of the framework judges: parval/framework/judges_*.py, observed.py and
# checks.py, with mutmut, against the framework judge tests (the pure ones: no server).
#
#   tests/mutation/framework.sh            # needs mutmut: .venv/bin/pip install -e '.[mutation]'
#   MAX_CHILDREN=2 KEEP=1 tests/mutation/framework.sh
#
# It copies the tree (tracked and untracked, not ignored files) to a temporary directory,
# writes its own [tool.mutmut] section into that copy's pyproject.toml (so it conflicts
# with nothing here), runs every mutant and prints the score per module and each
# surviving mutant. The copy is removed at the end unless KEEP=1.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-$root/.venv/bin/python}
children=${MAX_CHILDREN:-2}
if ! "$py" -c 'import mutmut' 2>/dev/null; then
  echo "mutmut is not installed for $py: $py -m pip install -e '$root[mutation]'" >&2
  exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/parval-mutation.XXXXXX")
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
(cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$work")

cat >>"$work/pyproject.toml" <<'TOML'

[tool.mutmut]
source_paths = ["parval/"]
only_mutate = [
  "parval/framework/judges_f1.py", "parval/framework/judges_f2.py", "parval/framework/judges_f3.py",
  "parval/framework/judges_f4.py", "parval/framework/judges_f5.py", "parval/framework/judges_f6.py",
  "parval/framework/judges_legacy.py", "parval/framework/judges_timeouts.py",
  "parval/framework/judges_unsupported.py", "parval/framework/observed.py", "parval/framework/checks.py",
]
pytest_add_cli_args_test_selection = [
  "tests/framework/test_judges_f1.py", "tests/framework/test_judges_f2.py", "tests/framework/test_judges_f3.py",
  "tests/framework/test_judges_f4.py", "tests/framework/test_judges_f5.py", "tests/framework/test_judges_legacy.py",
  "tests/framework/test_judges_timeouts.py", "tests/framework/test_judges_unsupported.py",
  "tests/framework/test_judges_generated.py", "tests/framework/test_evidence_rules.py",
  "tests/framework/test_units.py", "tests/test_ctest.py",
]
pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:randomly"]
also_copy = ["plans/", "schemas/", "README.md", "tests/"]
TOML

cd "$work"
t0=$(date +%s)
"$py" -m mutmut run --max-children "$children" >"$work/mutmut-run.log" 2>&1 || {
  tail -40 "$work/mutmut-run.log" >&2
  exit 1
}
"$py" -m mutmut results --all true >"$work/results.txt" 2>&1
elapsed=$(( $(date +%s) - t0 ))
"$py" - "$work/results.txt" "$elapsed" <<'PY'
import collections, re, sys
rows = collections.defaultdict(collections.Counter)
survivors = []
for line in open(sys.argv[1]):
    m = re.match(r"\s*(parval\.[\w.]+?)\.x(?:ǁ\w+ǁ)?_?(\w+?)__mutmut_(\d+): (.+)", line)
    if not m:
        continue
    module, status = m.group(1), m.group(4).strip()
    rows[module][status] += 1
    if status == "survived":
        survivors.append(line.split(":")[0].strip())
total = collections.Counter()
print(f"{'module':45} {'mutants':>8} {'killed':>7} {'survived':>9} {'no tests':>9} {'other':>6} {'score':>7}")
for module in sorted(rows):
    c = rows[module]
    total.update(c)
    n = sum(c.values())
    other = n - c["killed"] - c["survived"] - c["no tests"]
    print(f"{module:45} {n:8} {c['killed']:7} {c['survived']:9} {c['no tests']:9} {other:6} {100 * c['killed'] / n:6.1f}%")
n = sum(total.values())
other = n - total["killed"] - total["survived"] - total["no tests"]
print(f"{'all':45} {n:8} {total['killed']:7} {total['survived']:9} {total['no tests']:9} {other:6} "
      f"{100 * total['killed'] / max(n, 1):6.1f}%  ({sys.argv[2]} s)")
print("\nsurviving mutants (show one with: mutmut show NAME, in the kept copy):")
for s in survivors:
    print("  " + s)
PY
echo "copy: $work$([ "${KEEP:-0}" = 1 ] || echo ' (removed; KEEP=1 keeps it)')"
