// Loads a strata trace directory (ctf/ + strata.json) into the analysis model.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "importers/load_options.h"
#include "model/trace.h"

namespace strata::importers {

bool IsStrataTraceDir(const std::string& path);
StatusOr<model::Trace> LoadStrataTrace(const std::string& dir, const LoadOptions& opt = {});

// Decodes every event of every stream without building the model: the
// reader's raw speed (what `babeltrace2 --output-format=dummy` measures).
struct RawReadStats {
  uint64_t streams = 0, packets = 0, events = 0, discarded = 0, bytes = 0, checksum = 0;
  uint64_t damaged_packets = 0;  // skipped by the reader (format/ctf_reader.h)
};
StatusOr<RawReadStats> ReadStrataTraceRaw(const std::string& dir);

}  // namespace strata::importers
