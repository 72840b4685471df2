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
