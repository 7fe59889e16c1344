#!/usr/bin/env bash
# tools/dev/install-deps.sh — installs layoutsim's build dependencies from Debian 12 packages.
# Idempotent: when every package is already installed it changes nothing and needs no
# network. Runs as root (a fresh Debian container has no sudo) or elevates with sudo.
set -euo pipefail

PACKAGES=(
  cmake ninja-build g++ clang
  libboost-graph-dev libyaml-cpp-dev libeigen3-dev
  doctest-dev libfmt-dev libcli11-dev nlohmann-json3-dev
  libbenchmark-dev zlib1g-dev
  libprotobuf-dev protobuf-compiler
  python3 pybind11-dev python3-dev python3-pytest python3-yaml  # python3-yaml: validation/convert.py and the search_sanity test
  python3-pip python3-setuptools python3-wheel  # the python_wheel test: `pip install ./python` offline
  python3-jsonschema python3-pandas  # the output_schemas test: JSON against docs/schema/, CSV read back by pandas
  chromium fonts-dejavu-core  # the html_browser test: headless Chromium loads the HTML reports (a font for its screenshots)
  libopenmpi-dev openmpi-bin  # optional: `mpirun -np N layoutsim search` (built when CMake finds MPI)
)
# Node.js and npm run the speedscope_import test only. Many machines carry a Node.js
# build that bundles its own npm (NodeSource's `nodejs` package), and Debian's `npm`
# package conflicts with it, so ask apt for them only when there is no npm at all.
if ! command -v npm >/dev/null 2>&1; then
  if command -v node >/dev/null 2>&1; then
    echo "install-deps: node is installed without npm; skipping Node.js (speedscope_import will skip)"
  else
    PACKAGES+=(nodejs npm)
  fi
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "install-deps: run as root (sudo is not installed); missing: ${missing[*]}" >&2
    exit 1
  fi
fi

echo "install-deps: installing ${missing[*]}"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${PACKAGES[@]}"
