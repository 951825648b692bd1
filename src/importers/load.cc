#include "importers/load.h"

#include <sys/stat.h>

#include <cerrno>

#include "base/error.h"
#include "base/files.h"
#include "importers/kineto/byte_source.h"
#include "importers/kineto/kineto.h"
#include "importers/lttng/lttng.h"
#include "importers/merged/merged.h"
#include "importers/xplane/xplane.h"

namespace strata::importers {

TraceFormat DetectFormat(const std::string& path) {
  if (IsDirectory(path)) {
    // strata's traces are CTF too (ctf/metadata, tracer "strata"): they go first.
    if (IsStrataTraceDir(path)) return TraceFormat::kStrata;
    if (IsMergedTraceDir(path)) return TraceFormat::kMerged;
    return IsLttngTraceDir(path) ? TraceFormat::kLttng : TraceFormat::kUnknown;
  }
  auto head = kineto::ReadHead(path, 4096);
  if (head.ok() && LooksLikeJsonTrace(*head)) return TraceFormat::kChromeJson;
  if (head.ok() && LooksLikeXSpace(*head)) return TraceFormat::kXSpace;
  return TraceFormat::kUnknown;
}

StatusOr<model::Trace> LoadTrace(const std::string& path, const LoadOptions& opt) {
  // Only a directory or a regular file can be a trace: a FIFO or a device would
  // block or never end, so they are refused before anything opens them.
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return StatError(errno, path);
  if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
    return Err(StatusCode::kInvalidArgument, "{} is {}, not a trace (a trace directory or a file)", path,
               FileKindName(st.st_mode));
  switch (DetectFormat(path)) {
    case TraceFormat::kStrata: return LoadStrataTrace(path, opt);
    case TraceFormat::kChromeJson: return LoadKinetoTrace(path, opt);
    case TraceFormat::kXSpace: return LoadXPlaneTrace(path, opt);
    case TraceFormat::kLttng: return LoadLttngTrace(path, opt);
    case TraceFormat::kMerged:
      return LoadMergedTrace(path, [&opt](const std::string& member) { return LoadTrace(member, opt); });
    case TraceFormat::kUnknown: break;
  }
  if (IsDirectory(path))
    return Err(StatusCode::kInvalidArgument, "{}: not a trace directory (no ctf/metadata, and no LTTng trace)", path);
  return Err(StatusCode::kUnsupported,
             "{}: unrecognized trace format (expected a strata trace directory, a PyTorch-profiler JSON trace, "
             ".json or .json.gz, or an XSpace, .xplane.pb)",
             path);
}

}  // namespace strata::importers
