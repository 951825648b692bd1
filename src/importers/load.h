// Opens any trace strata understands, detected by content, not by name:
// a strata trace directory, or a PyTorch-profiler / Chrome trace JSON file
// (plain or gzip-compressed), or an XSpace (.xplane.pb) of TensorFlow's, JAX's or
// XLA's profiler, or an LTTng trace directory (CTF, read through libbabeltrace2),
// or a merged trace of many ranks and hosts (importers/merged/merged.h).
#pragma once

#include <string>

#include "base/status.h"
#include "importers/load_options.h"
#include "importers/strata_trace.h"
#include "model/trace.h"

namespace strata::importers {

enum class TraceFormat { kUnknown, kStrata, kChromeJson, kXSpace, kLttng, kMerged };

TraceFormat DetectFormat(const std::string& path);
StatusOr<model::Trace> LoadTrace(const std::string& path, const LoadOptions& opt = {});

}  // namespace strata::importers
