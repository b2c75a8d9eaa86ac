#!/usr/bin/env bash
# The experiment of seed 000 (Stauffert et al. 2016, §3) on this machine, as one command:
#   {mutex, caf} (native C++) x {java-lock, pekko} (JVM, G1) x {SCHED_OTHER, SCHED_RR 90}
#   x pairs {1, 2, 4, 8, 16}, 100 000 samples per pair,
# then the collector matrix of its Tables 2-3 at 16 pairs (java-lock and pekko under every
# collector the newest JDK here offers). Prints the Table-1 and Tables 2-3 layouts and writes
# seed-000-report.html and seed-000-gc-report.html. Runs go to ./jitterlab-results/seed-000.
# Extra arguments go to both `jitterlab bench` calls (for example --samples 625000 for the
# seeds' 10 million samples at 16 pairs). docs/results/seed-000.md shows one outcome.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
store=jitterlab-results/seed-000
.venv/bin/jitterlab bench --technique mutex,caf,java-lock,pekko --policy other,rr --priority 90 \
  --pairs 1,2,4,8,16 --samples 100000 --store "$store" --report seed-000-report.html "$@"
.venv/bin/jitterlab bench --technique java-lock,pekko --gc serial,parallel,g1,zgc-gen,shenandoah \
  --policy other,rr --priority 90 --pairs 16 --samples 100000 --store "$store/gc" \
  --report seed-000-gc-report.html "$@"
