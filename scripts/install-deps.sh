#!/usr/bin/env bash
# Installs what strata needs to build, test and record, from Debian 12's archive.
# Idempotent: packages already present are skipped by apt.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build ccache pkg-config git clang libclang-rt-14-dev
  # libraries strata builds against
  libfmt-dev nlohmann-json3-dev libcli11-dev libsimdjson-dev zlib1g-dev
  libprotobuf-dev protobuf-compiler libsqlite3-dev libisal-dev libbabeltrace2-dev libxxhash-dev libzstd-dev
  libcpp-httplib-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev babeltrace2 python3 python3-numpy python3-pip sqlite3
  liblttng-ust-dev lttng-tools chromium
  # accelerator collectors: OpenCL layer (built and tested on PoCL's CPU device, CLBlast GEMMs),
  # HSA tools library (built; its tests fake the runtime). The CUDA toolkit is not in Debian:
  # the CUDA collector builds where /usr/local/cuda (STRATA_CUDA_ROOT) has one.
  opencl-headers ocl-icd-opencl-dev pocl-opencl-icd clinfo libclblast-dev libhsa-runtime-dev
  # OS level: DWARF unwinding and ELF symbols; libbpf for the BPF program that reads Python stacks
  # at each sample (compiled by clang, above); CPython 3.11's internal headers, against which
  # tests/python_layout_test checks strata's typed-in interpreter layouts
  libdw-dev libelf-dev python3.11-dev libbpf-dev
  # the Python package (python/): a fresh venv, and setuptools + wheel to build it offline
  # (pip install --no-index --find-links /usr/share/python-wheels ./python)
  python3-venv python3-setuptools-whl python3-wheel-whl
  # OS level: syscall-count reference in tests, peers in bench/os_overhead.sh, setpriv for the unprivileged test
  strace linux-perf util-linux
  # the PyTorch level: libtorch for the observer (libstrata_torch), torch for /usr/bin/python3
  python3-torch libtorch-dev python3-torchvision
  # MPI: Open MPI's mpi.h for the PMPI collector (libstrata_mpi) and mpirun for its test; ip for the
  # two-host test's network namespaces
  libopenmpi-dev openmpi-bin iproute2
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

# Perfetto's trace schema for Python: the export test reads strata's Perfetto
# output with it (and skips, saying so, where it cannot be installed).
if ! python3 -c "from perfetto.protos.perfetto.trace import perfetto_trace_pb2" >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check "protobuf>=6.31" perfetto 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "protobuf>=6.31" perfetto ||
    echo "strata: could not install the perfetto Python package; the Perfetto schema check will be skipped" >&2
fi
