// Opens any trace strata understands, detected by content, not by name.
#pragma once

#include <string>

#include "base/status.h"
#include "importers/strata_trace.h"
#include "model/trace.h"

namespace strata::importers {

enum class TraceFormat { kUnknown, kStrata };

TraceFormat DetectFormat(const std::string& path);
StatusOr<model::Trace> LoadTrace(const std::string& path, const LoadOptions& opt = {});

}  // namespace strata::importers
