#!/usr/bin/env bash
# Set up, then run every test: the native GoogleTest suite (built with AddressSanitizer
# and UndefinedBehaviorSanitizer), the JVM harness's JUnit suite, lint and type checks,
# and the Python suite.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --tests

echo "== native tests (GoogleTest, ASan+UBSan)" >&2
cmake -S native -B build/native-tests -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DJITTERLAB_BUILD_TESTS=ON -DJITTERLAB_SANITIZE=ON >/dev/null
cmake --build build/native-tests
ctest --test-dir build/native-tests --output-on-failure --timeout 300

echo "== JVM harness tests (JUnit, Maven)" >&2
mvn -q -B -f jvm/pom.xml test

echo "== ruff and mypy" >&2
.venv/bin/ruff check src tests benchmarks
.venv/bin/ruff format --check src tests benchmarks
.venv/bin/mypy

echo "== python tests" >&2
.venv/bin/pytest -q --durations=20 "$@"
