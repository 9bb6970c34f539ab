#!/usr/bin/env bash
# Coverage of core/ by the whole test suite (unit tests, scenario matrix, fuzz corpus replay
# where built), measured with gcov through gcovr.
#
#   scripts/coverage.sh            build build/cov (Coverage type), run the tests, write
#                                  build/cov/coverage/index.html and
#                                  build/cov/coverage/summary.json, print line/branch
#                                  percentages, and fail if either is more than 0.5 point
#                                  below the committed reports/coverage/summary.json
#   scripts/coverage.sh --update   the same, then copy the new summary over the committed one
#
# Environment: VHOSTLAB_BUILD_ROOT (default build), VHOSTLAB_JOBS (default 2).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${VHOSTLAB_BUILD_ROOT:-$ROOT/build}/cov"
JOBS="${VHOSTLAB_JOBS:-2}"
COMMITTED="$ROOT/reports/coverage/summary.json"
TOLERANCE=0.5
update=0

case "${1:-}" in
--update) update=1 ;;
"") ;;
-h | --help)
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
*)
    echo "coverage.sh: unknown argument '$1' (try --help)" >&2
    exit 2
    ;;
esac

cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Coverage -DCMAKE_C_COMPILER=gcc >/dev/null
cmake --build "$BUILD" -j"$JOBS" >/dev/null
# Counters from an earlier run would add up: start from zero.
find "$BUILD" -name '*.gcda' -delete
ctest --test-dir "$BUILD" -j"$JOBS" --output-on-failure --no-tests=error | tail -n 3

mkdir -p "$BUILD/coverage"
# The build directory is the search path: gcovr would otherwise search the whole source
# tree, and a coverage build left inside it (build/cov of an earlier run with another
# VHOSTLAB_BUILD_ROOT) holds .gcda files of older sources that cannot be merged.
# The suite runs the lab build of the core (docs/architecture.md, "The lab seam"); the
# production objects are compiled in the same tree but run by no test here, and the same
# function can sit on other lines there (a header's lab and production variants), which
# gcovr cannot merge: their directories are left out of the search.
gcovr -r "$ROOT" --object-directory "$BUILD" --filter "$ROOT/core/" \
    --exclude-directories '.*/vhostlab_core_obj\.dir.*' \
    --exclude-unreachable-branches \
    --html-details "$BUILD/coverage/index.html" \
    --json-summary-pretty --json-summary "$BUILD/coverage/summary.json" \
    --print-summary "$BUILD" | tee "$BUILD/coverage/summary.txt"

/usr/bin/python3 - "$BUILD/coverage/summary.json" "$COMMITTED" "$TOLERANCE" "$update" <<'PY'
import json, shutil, sys

new_path, committed_path, tol, update = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4] == "1"
new = json.load(open(new_path))
line, branch = new["line_percent"], new["branch_percent"]
print(f"core/ coverage: lines {line:.1f}% ({new['line_covered']}/{new['line_total']}), "
      f"branches {branch:.1f}% ({new['branch_covered']}/{new['branch_total']})")
if update:
    import os
    os.makedirs(os.path.dirname(committed_path), exist_ok=True)
    shutil.copyfile(new_path, committed_path)
    print(f"updated {committed_path}")
    sys.exit(0)
try:
    old = json.load(open(committed_path))
except FileNotFoundError:
    print(f"no committed summary at {committed_path}: run scripts/coverage.sh --update")
    sys.exit(1)
bad = []
for key in ("line_percent", "branch_percent"):
    if new[key] < old[key] - tol:
        bad.append(f"{key.split('_')[0]} coverage {new[key]:.1f}% is more than {tol} point below "
                   f"the committed {old[key]:.1f}%")
for b in bad:
    print("FAIL:", b)
print("coverage gate:", "FAIL" if bad else f"PASS (committed: lines {old['line_percent']:.1f}%, "
      f"branches {old['branch_percent']:.1f}%)")
sys.exit(1 if bad else 0)
PY
