// Memory transfers and fills on the device: bytes and achieved bandwidth by
// direction, pageable vs pinned host memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/trace.h"

namespace strata::analysis {

struct TransferRow {
  std::string kind;       // "memcpy" or "memset"
  std::string direction;  // HtoD, DtoH, DtoD, HtoH, PtoP, unknown ("" for fills)
  std::string host_memory;  // "pinned", "pageable", "" (unknown or not a host copy)
  uint64_t count = 0;
  uint64_t bytes = 0;
  int64_t busy_ns = 0;     // summed durations
  double gbps = 0;         // bytes / busy_ns: achieved bandwidth while copying (GB/s)
  double max_gbps = 0;     // fastest single transfer
};
struct TransferSummary {
  uint64_t count = 0;
  uint64_t bytes = 0;
  int64_t busy_ns = 0;
  std::vector<TransferRow> rows;  // by bytes, descending
};
TransferSummary Transfers(const model::Trace& t);

}  // namespace strata::analysis
