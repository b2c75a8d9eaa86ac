#!/usr/bin/env bash
# The main job: set up, run the default experiment on this machine, print its table
# (laid out like Stauffert et al. 2016, Table 1) and write the HTML report.
# Every technique available here x pairs 1,2 x policies other and rr 90 (the seeds'
# SCHED_RR priority), 200 000 samples per pair, stored in ./jitterlab-results; the report
# goes to ./jitterlab-report.html, the paper's tables, figures, methods and checklist of the
# same runs to ./jitterlab-paper/. Extra arguments go to `jitterlab bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
since=$(date -u +%Y%m%d-%H%M%S)  # run ids start with their UTC time: this job's runs are those from now on
.venv/bin/jitterlab bench --technique all --pairs 1,2 --policy other,rr --samples 200000 \
  --report jitterlab-report.html "$@"
# the paper of the same runs: tables (LaTeX, Markdown, CSV), PDF/SVG figures, methods, checklist
mapfile -t made < <(.venv/bin/jitterlab runs --json | .venv/bin/python -c \
  'import json, sys; print(*(r["id"] for r in json.load(sys.stdin) if r.get("status") != "damaged" and r["id"] >= sys.argv[1]), sep="\n")' "$since")
.venv/bin/jitterlab paper "${made[@]}" -o jitterlab-paper
