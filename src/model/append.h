// Appending one trace's model to another's: how `strata merge` puts the ranks
// and hosts of a job into one trace.
//
// Every table of `src` is added after `dst`'s rows with its references
// renumbered (strings re-interned, processes, tracks, slices, counter series,
// syscalls, frames and callsites offset) and its timestamps mapped onto
// `dst`'s clock by a linear map (a host's offset and drift against the
// reference host). Call Trace::Finalize on `dst` after the last append.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "model/trace.h"

namespace strata::model {

// local time t -> reference time: offset + t + drift * (t - center), rounded.
// Durations scale by (1 + drift). The identity when offset and drift are 0.
struct ClockMap {
  int64_t offset_ns = 0;
  double drift = 0;  // relative rate error (1e-6: 1 ppm)
  int64_t center_ns = 0;

  int64_t Time(int64_t t) const {
    if (drift == 0) return t + offset_ns;
    return t + offset_ns + static_cast<int64_t>(std::llround(drift * static_cast<double>(t - center_ns)));
  }
  int64_t Duration(int64_t d) const {
    if (drift == 0 || d <= 0) return d;
    return d + static_cast<int64_t>(std::llround(drift * static_cast<double>(d)));
  }
};

// Appends `src` to `dst`. `label` prefixes the warnings src carried. The first
// append into an empty `dst` also takes src's source, path, hostname, manifest
// and clock offset; later ones keep dst's (the reference member's).
void AppendTrace(Trace* dst, const Trace& src, const ClockMap& clock, const std::string& label);

}  // namespace strata::model
