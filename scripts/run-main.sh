#!/usr/bin/env bash
# The main job: set up, run the default experiment on this machine and print its table.
# Every technique available here x pairs 1,2 x policies other and rr 90, stored in
# ./jitterlab-results. Extra arguments go to `jitterlab bench` (e.g. --samples 1000000).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
.venv/bin/jitterlab bench --technique all --pairs 1,2 --policy other,rr --samples 200000 "$@"
