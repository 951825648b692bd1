// What the PyTorch observer records in this process: the switches of `strata
// record` (--ops, --shapes, --ops-steps, --sample-window/--sample-period,
// --batch-size, --no-memory, --no-modules), read from the recording's control
// block, or from the environment where a process is traced without one.
#pragma once

#include <cstdint>

#include "format/control.h"

namespace strata::collectors::torch {

struct Settings {
  format::OpsMode mode = format::OpsMode::kAll;
  bool detail = false;
  int64_t detail_first = -1, detail_last = -1;
  uint32_t window_tiers = format::kTierShapes;  // what the step window turns on
  uint32_t window_ms = 10, period_ms = 200;     // --ops sampled (OpSampler::Configure bounds them)
  int64_t batch_size = 0;
  bool memory = true;
  bool modules = true;
};

// The control block is the source of truth; a process traced without one
// (STRATA_TRACE_DIR set by hand) reads the same switches from the environment.
Settings ReadSettings();

}  // namespace strata::collectors::torch
