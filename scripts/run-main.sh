#!/usr/bin/env bash
# The main job: set up, run the default experiment on this machine, print its table
# (laid out like Stauffert et al. 2016, Table 1) and write the HTML report.
# Every technique available here x pairs 1,2 x policies other and rr 90 (the seeds'
# SCHED_RR priority), 200 000 samples per pair, stored in ./jitterlab-results; the report
# goes to ./jitterlab-report.html. Extra arguments go to `jitterlab bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
.venv/bin/jitterlab bench --technique all --pairs 1,2 --policy other,rr --samples 200000 \
  --report jitterlab-report.html "$@"
