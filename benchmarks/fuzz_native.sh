#!/usr/bin/env bash
# libFuzzer on the native model reader (native/fuzz/fuzz_model.cpp) with AddressSanitizer and
# UndefinedBehaviorSanitizer. Needs clang (Debian: clang) and nlohmann-json3-dev.
#   benchmarks/fuzz_native.sh [SECONDS]     (default 120)
# Prints libFuzzer's closing statistics; exit 0 means no crash, leak, hang or sanitizer report.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-120}
command -v clang++ >/dev/null || { echo "fuzz_native: needs clang (sudo apt-get install clang)" >&2; exit 2; }
out=build/fuzz
mkdir -p "$out/corpus"
clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Inative/internal -Inative/include native/fuzz/fuzz_model.cpp native/src/injector.cpp native/src/runfile.cpp \
  -o "$out/fuzz_model"
# seed corpus: a parametric model and the test suite's shapes
.venv/bin/jitterlab model make -o "$out/corpus/normal.json" --normal 20ms,2ms --spikes 40ms@0.5 --points 16 2>/dev/null
.venv/bin/jitterlab model make -o "$out/corpus/sine.json" --sine 50ms,20ms,1s --points 8 2>/dev/null
"$out/fuzz_model" "$out/corpus" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$out/" 2>&1 | tail -25
