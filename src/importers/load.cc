#include "importers/load.h"

#include "base/error.h"
#include "base/files.h"

namespace strata::importers {

TraceFormat DetectFormat(const std::string& path) {
  if (IsDirectory(path) && IsStrataTraceDir(path)) return TraceFormat::kStrata;
  return TraceFormat::kUnknown;
}

StatusOr<model::Trace> LoadTrace(const std::string& path, const LoadOptions& opt) {
  if (!PathExists(path)) return Err(StatusCode::kNotFound, "{}: no such file or directory", path);
  switch (DetectFormat(path)) {
    case TraceFormat::kStrata: return LoadStrataTrace(path, opt);
    case TraceFormat::kUnknown: break;
  }
  if (IsDirectory(path)) return Err(StatusCode::kInvalidArgument, "{}: not a trace directory (no ctf/metadata)", path);
  return Err(StatusCode::kUnsupported, "{}: unrecognized trace format", path);
}

}  // namespace strata::importers
