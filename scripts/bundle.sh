#!/usr/bin/env bash
# Makes a relocatable copy of a build for a machine that lacks the libraries it
# was built with (a GPU machine with another distribution, no package registry):
#
#   scripts/bundle.sh [BUILD_DIR] [OUT_DIR]      (defaults: build, build-bundle)
#
# OUT_DIR mirrors the build tree's layout for what `strata record/report` and
# scripts/gpu-check use (bin/strata, lib/, python/, the static libraries the
# PyTorch observer links, tests/programs/), stripped of debug info. The shared
# libraries `strata` needs beyond glibc and libstdc++ are copied to lib/deps and
# found through the binary's RUNPATH ($ORIGIN/../lib/deps), so nothing leaks
# into the traced program's environment. Needs patchelf.
#   scripts/gpu-check OUT_DIR   then runs on that machine from a copy of the repo.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
OUT="${2:-build-bundle}"
command -v patchelf >/dev/null || { echo "bundle: patchelf is needed (apt-get install patchelf)" >&2; exit 2; }
[ -x "$BUILD/bin/strata" ] || { echo "bundle: $BUILD/bin/strata not found (build first)" >&2; exit 2; }
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib/deps" "$OUT/src" "$OUT/tests/programs"
strip -o "$OUT/bin/strata" "$BUILD/bin/strata"
for f in "$BUILD"/lib/*; do
  case "$f" in
    *.so|*.so.*) [ -L "$f" ] && cp -P "$f" "$OUT/lib/" || strip --strip-debug -o "$OUT/lib/$(basename "$f")" "$f" ;;
    *) [ -f "$f" ] && cp "$f" "$OUT/lib/" ;;
  esac
done
cp -r "$BUILD/python" "$OUT/python"
find "$BUILD/src" -name 'libstrata_*.a' | while read -r a; do
  d="$OUT/src/$(dirname "${a#"$BUILD"/src/}")"; mkdir -p "$d"; strip --strip-debug -o "$d/$(basename "$a")" "$a"
done
for p in "$BUILD"/tests/programs/*; do [ -x "$p" ] && cp "$p" "$OUT/tests/programs/"; done
# The libraries strata itself links beyond the C/C++ runtime.
ldd "$BUILD/bin/strata" | awk '/=> \// {print $3}' |
  grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$OUT/lib/deps/"; done
# babeltrace2's plugins for LTTng import (source.ctf.fs, filter.utils.muxer): the
# importer looks for them there when the machine has none of its own.
for p in ctf utils; do
  f=$(ls /usr/lib/*/babeltrace2/plugins/babeltrace-plugin-$p.so 2>/dev/null | head -1)
  if [ -n "$f" ]; then mkdir -p "$OUT/lib/deps/babeltrace2/plugins"; cp -L "$f" "$OUT/lib/deps/babeltrace2/plugins/"; fi
done
patchelf --set-rpath '$ORIGIN/../lib/deps' "$OUT/bin/strata"
echo "bundle: $OUT ($(du -sh "$OUT" | cut -f1)); run scripts/gpu-check $OUT on the GPU machine"
