// Kineto / Chrome trace JSON -> model. json_stream.cc finds the events;
// Builder (builder.h) decodes each one and fills the tables.
#include <memory>
#include <string>
#include <string_view>

#include "base/error.h"
#include "base/progress.h"
#include "importers/kineto/builder.h"
#include "importers/kineto/byte_source.h"
#include "importers/kineto/json_stream.h"
#include "importers/kineto/kineto.h"

namespace strata::importers {
namespace kineto {
namespace {

StatusOr<model::Trace> Load(ByteSource& src, const std::string& path, const LoadOptions& opt) {
  model::Trace t;
  t.path = path;
  ProgressBar bar("importing " + path, opt.progress);
  JsonStreamOptions so;
  if (opt.json_window) so.window = opt.json_window;
  if (bar.active()) so.progress = [&bar](uint64_t done, uint64_t total) { bar.Update(done, total); };
  {
    Builder b(t, opt.json_fast_path);
    b.Reserve(src.total());
    Status st = StreamTraceEvents(src, b, so);
    if (!st.ok()) return st.WithContext(path);
    st = b.Finish();
    if (!st.ok()) return st.WithContext(path);
  }
  bar.Finish();
  return t;
}

}  // namespace
}  // namespace kineto

bool LooksLikeJsonTrace(std::string_view head) {
  size_t i = 0;
  if (head.substr(0, 3) == "\xEF\xBB\xBF") i = 3;
  while (i < head.size() && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t')) ++i;
  return i < head.size() && (head[i] == '{' || head[i] == '[');
}

StatusOr<model::Trace> LoadKinetoTrace(const std::string& path, const LoadOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<kineto::ByteSource> src, kineto::OpenByteSource(path));
  return kineto::Load(*src, path, opt);
}

StatusOr<model::Trace> ParseKinetoTrace(std::string_view bytes, const LoadOptions& opt) {
  auto src = kineto::MemoryByteSource(bytes);
  return kineto::Load(*src, "<memory>", opt);
}

}  // namespace strata::importers
