#!/usr/bin/env bash
# Installs every Debian package that the build, tests and benchmarks need.
# Idempotent: packages already present are skipped, and apt-get update runs once.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  flatbuffers-compiler libflatbuffers-dev
  nlohmann-json3-dev libpcre2-dev libcli11-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-jinja2
  python3-dev python3-pybind11 pybind11-dev python3-numpy python3-venv python3-pip python3-setuptools python3-wheel
  libicu-dev
  # The fuzz targets (scripts/fuzz.sh): clang with its libFuzzer and sanitizer runtimes, and
  # llvm-symbolizer for readable crash reports.
  clang libclang-rt-14-dev llvm-14
  libxxhash-dev time
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
