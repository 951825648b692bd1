#!/usr/bin/env bash
# Installs what strata needs to build, test and record, from Debian 12's archive.
# Idempotent: packages already present are skipped by apt.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config git clang libclang-rt-14-dev
  # libraries strata builds against
  libfmt-dev nlohmann-json3-dev libcli11-dev libsimdjson-dev zlib1g-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev babeltrace2 python3 python3-numpy
  liblttng-ust-dev lttng-tools
  # the PyTorch level: libtorch for the observer (libstrata_torch), torch for /usr/bin/python3
  python3-torch libtorch-dev
)
if [ -n "${STRATA_EXTRA_PACKAGES:-}" ]; then
  # shellcheck disable=SC2206
  PACKAGES+=(${STRATA_EXTRA_PACKAGES})
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "strata: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
