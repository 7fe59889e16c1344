#!/bin/sh
# tests/speedscope/run_import_test.sh — CTest `speedscope_import`: writes the default
# scenario's trace, checks it with check-trace, then loads it with speedscope's own
# importer under node (import_trace.mjs). Exit 77 (CTest: skipped) when node or the npm
# package is absent; .ci/run installs both, so CI runs it.
# Usage: run_import_test.sh LAYOUTSIM SPEEDSCOPE_DIR WORK_DIR
set -u
bin=$1 pkg=$2 work=$3
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: node is not installed (Debian: apt-get install nodejs npm; tools/dev/install-deps.sh does it)"
  exit 77
fi
if [ ! -f "$pkg/package.json" ]; then
  echo "SKIP: speedscope is not installed in $pkg"
  echo "      (npm install --prefix build/speedscope --no-audit --no-fund speedscope@1.25.0; .ci/run does it)"
  exit 77
fi
mkdir -p "$work" || exit 1
"$bin" run --quiet --trace "$work/default.trace.json" || exit 1
"$bin" check-trace "$work/default.trace.json" || exit 1
node "$(dirname "$0")/import_trace.mjs" "$pkg" "$work/default.trace.json"
