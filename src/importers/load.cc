#include "importers/load.h"

#include "base/error.h"
#include "base/files.h"
#include "importers/kineto/byte_source.h"
#include "importers/kineto/kineto.h"

namespace strata::importers {

TraceFormat DetectFormat(const std::string& path) {
  if (IsDirectory(path)) return IsStrataTraceDir(path) ? TraceFormat::kStrata : TraceFormat::kUnknown;
  auto head = kineto::ReadHead(path, 4096);
  if (head.ok() && LooksLikeJsonTrace(*head)) return TraceFormat::kChromeJson;
  return TraceFormat::kUnknown;
}

StatusOr<model::Trace> LoadTrace(const std::string& path, const LoadOptions& opt) {
  if (!PathExists(path)) return Err(StatusCode::kNotFound, "{}: no such file or directory", path);
  switch (DetectFormat(path)) {
    case TraceFormat::kStrata: return LoadStrataTrace(path, opt);
    case TraceFormat::kChromeJson: return LoadKinetoTrace(path, opt);
    case TraceFormat::kUnknown: break;
  }
  if (IsDirectory(path)) return Err(StatusCode::kInvalidArgument, "{}: not a trace directory (no ctf/metadata)", path);
  return Err(StatusCode::kUnsupported,
             "{}: unrecognized trace format (expected a strata trace directory or a PyTorch-profiler JSON trace, "
             ".json or .json.gz)",
             path);
}

}  // namespace strata::importers
