#!/usr/bin/env bash
# Compiles the PyTorch observer against another PyTorch's headers (syntax and
# types only: nothing is linked), to check that the API guards still hold.
#   scripts/check-torch-api.sh /path/to/site-packages/torch/include
# The headers of any torch wheel will do: unzip torch/include/* from it.
set -euo pipefail
cd "$(dirname "$0")/.."
INC="${1:?usage: $0 TORCH_INCLUDE_DIR}"
FLAGS=(-isystem "$INC/torch/csrc/api/include")
# /usr/include is searched already; naming it again breaks libstdc++'s include_next.
if [ "$(realpath "$INC")" != /usr/include ]; then FLAGS+=(-isystem "$INC"); fi
for f in src/collectors/torch/observer.cc src/collectors/torch/memory.cc src/collectors/torch/detail.cc bench/torch/floor.cc; do
  echo "check-torch-api: $f"
  "${CXX:-g++}" -std=c++20 -fsyntax-only -Wall -Wextra -Wno-unused-parameter -Werror \
    -Isrc -Iinclude "${FLAGS[@]}" "$f"
done
echo "check-torch-api: ok against the headers in $INC"
