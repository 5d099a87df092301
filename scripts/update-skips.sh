#!/usr/bin/env bash
# Rewrites tests/conformance/skips/*.txt, the node tests expected to skip in
# each mode scripts/test.sh runs (given there as --expect-skips): through
# the interpreter (its -O3 run uses the same file: passes do not change
# which ops load), and compiled at -O0, -O2 (the default) and -O3, and at
# -O2 without binding shape-deciding inputs (--no-bind). Run it
# after a change that makes tests stop skipping, then review the diff: a
# line that appears is a test that stopped running.
# Usage: scripts/update-skips.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
RUNNER=$BUILD/tests/icc-conformance
[ -x "$RUNNER" ] || { echo "no $RUNNER: build first" >&2; exit 1; }
NODE_DATA=$(python3 -c "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'backend/test/data/node'))")
OUT=tests/conformance/skips
mkdir -p "$OUT"

# write FILE ARGS...: one run, its skips to FILE; the run's own verdict
# (failures) is printed but does not stop the others.
write() {
  local file=$1; shift
  echo "== $file: icc-conformance $*"
  "$RUNNER" --data "$NODE_DATA" --known tests/conformance/known_failures.txt \
      --write-skips "$OUT/$file" "$@" | tail -1 || echo "   (that run failed: see above)"
  echo "   $(grep -vc '^#' "$OUT/$file") expected skips"
}
write interp.txt
write compiled-O0.txt --compiled -O0
write compiled-O2.txt --compiled
write compiled-O3.txt --compiled -O3
write compiled-nobind.txt --compiled --no-bind
git --no-pager diff --stat -- "$OUT" || true
