#!/usr/bin/env bash
# make demo: the bundled demo project, end to end, offline.
set -euo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
echo "== implloop plan testdata/demo/plan.md"
"$bin" plan "$root/testdata/demo/plan.md"
