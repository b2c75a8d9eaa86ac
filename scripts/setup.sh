#!/usr/bin/env bash
# Sets jitterlab up on a fresh Debian/Ubuntu machine: system packages, a virtual
# environment in .venv, and the package itself (which builds the C++ core with CMake).
set -euo pipefail
cd "$(dirname "$0")/.."

# What each system package is for:
#   cmake ninja-build g++     build the native core
#   libgtest-dev              the native test suite (GoogleTest)
#   libcaf-dev                the CAF actor technique (C++ Actor Framework 0.17)
#   nlohmann-json3-dev        reading latency model files in the native injection engine
#   maven                     building the JVM harness (jvm/) once, on first use
#   chromium chromium-driver  the headless-browser test of the HTML report
#   stress-ng                 load conditions (--load)
#   rt-tests                  oslat and cyclictest, the peers of the OS-noise benchmark
#   linux-perf                scheduler/IRQ tracepoints for spike attribution (--trace)
#   util-linux                setpriv, to test a refused real-time policy as root
#   python3-venv              the virtual environment
#   prometheus pkgconf        a real Prometheus scraping `monitor serve` in the tests; pkg-config for the
#                             SDK example built against the installed package
#   iproute2 iptables libnetfilter-queue-dev sockperf openssh-server netcat-openbsd
#                             `jitterlab net`: namespaces, the NFQUEUE impairment engine, sockperf beside
#                             it in benchmarks/net_floor.py, and an sshd in a namespace for the ssh launcher's test
#   libopenxr-dev libopenxr-loader1 openxr-layer-corevalidation
#                             the OpenXR API layer (docs/xr.md): openxr.h to build it, the Khronos loader and
#                             core validation layer its tests run it through
#   texlive-latex-recommended texlive-latex-extra poppler-utils
#                             only for the tests (run-tests.sh passes --tests): `jitterlab paper`'s LaTeX tables compiled with a real TeX (booktabs,
#                             siunitx), its PDFs rendered (pdftoppm), read (pdftotext) and their fonts checked
#                             (pdffonts); `jitterlab paper` itself never needs them
packages=(cmake ninja-build g++ libgtest-dev libcaf-dev nlohmann-json3-dev maven chromium chromium-driver stress-ng rt-tests linux-perf
          util-linux python3-venv prometheus pkgconf iproute2 iptables libnetfilter-queue-dev sockperf openssh-server
          netcat-openbsd libopenxr-dev libopenxr-loader1 openxr-layer-corevalidation)
if [ "${1:-}" = "--tests" ]; then
  packages+=(texlive-latex-recommended texlive-latex-extra poppler-utils)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing system packages: ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup: missing system packages: ${missing[*]}" >&2
    echo "setup: install them with: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# Non-editable on purpose: the native programs are installed next to the package.
.venv/bin/python -m pip install -q ".[dev,bench,cluster]"
echo "setup: ready ($(.venv/bin/jitterlab --version))" >&2
