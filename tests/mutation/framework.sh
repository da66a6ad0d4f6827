#!/usr/bin/env bash
# Mutation testing of the framework judges: parval/framework/judges.py (the registry, the
# judges of unforced situations, sub-checks and their combination into F results),
# judges_f1.py ... judges_f6.py and observed.py (the recorded facts, Verdict, the shared
# building blocks),
# with mutmut, against the framework judge tests (the pure ones: no server).
#
#   tests/mutation/framework.sh            # needs mutmut: .venv/bin/pip install -e '.[mutation]'
#   MAX_CHILDREN=2 KEEP=1 tests/mutation/framework.sh
#   MODULES="judges observed judges_f1" tests/mutation/framework.sh   # only these modules
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

all_modules="judges judges_f1 judges_f2 judges_f3 judges_f4 judges_f5 judges_f6 observed"
only_mutate=""
for m in ${MODULES:-$all_modules}; do
  if [ ! -f "$root/parval/framework/$m.py" ]; then
    echo "no module parval/framework/$m.py (MODULES names modules under parval/framework)" >&2
    exit 2
  fi
  only_mutate="$only_mutate\"parval/framework/$m.py\", "
done

cat >>"$work/pyproject.toml" <<TOML

[tool.mutmut]
source_paths = ["parval/"]
only_mutate = [$only_mutate]
pytest_add_cli_args_test_selection = [
  "tests/framework/test_judges_f1.py", "tests/framework/test_judges_f2.py", "tests/framework/test_judges_f3.py",
  "tests/framework/test_judges_f4.py", "tests/framework/test_judges_f5.py", "tests/framework/test_judges_legacy.py",
  "tests/framework/test_judges_timeouts.py", "tests/framework/test_judges_unsupported.py",
  "tests/framework/test_judges_generated.py", "tests/framework/test_evidence_rules.py",
  "tests/framework/test_units.py", "tests/framework/test_observed_core.py", "tests/test_ctest.py",
]
pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:randomly", "-n", "0"]
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
"$py" "$root/tests/mutation/summary.py" "$work/results.txt" "$elapsed" "$work/mutants"
echo "copy: $work$([ "${KEEP:-0}" = 1 ] || echo ' (removed; KEEP=1 keeps it)')"
