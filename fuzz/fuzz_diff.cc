// Fuzz target: `strata diff A B` on two arbitrary traces. The input is A, the
// separator "\n--strata-fuzz-diff--\n", then B; each side is a PyTorch-profiler
// JSON trace when it starts with '{' or '[', else a strata trace in the record
// form of fuzz/trace_records.h. Both are loaded as the CLI loads them, then
// compared and rendered as text and as JSON, exactly as diff_cmd.cc does.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "analysis/diff.h"
#include "fuzz/trace_records.h"
#include "importers/kineto/kineto.h"
#include "importers/load.h"
#include "report/diff_report.h"

namespace {

constexpr std::string_view kSeparator = "\n--strata-fuzz-diff--\n";

strata::StatusOr<strata::model::Trace> LoadSide(const std::string& dir, std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size() && (bytes[i] == ' ' || bytes[i] == '\n' || bytes[i] == '\t' || bytes[i] == '\r')) ++i;
  if (i < bytes.size() && (bytes[i] == '{' || bytes[i] == '['))
    return strata::importers::ParseKinetoTrace(bytes);
  strata::fuzz::WriteTraceDir(dir, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return strata::importers::LoadTrace(dir);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  static const std::string dir_a = fuzz::MakeTraceDir("diff-a"), dir_b = fuzz::MakeTraceDir("diff-b");
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t sep = in.find(kSeparator);
  if (sep == std::string_view::npos) return 0;
  auto a = LoadSide(dir_a, in.substr(0, sep));
  if (!a.ok()) return 0;
  auto b = LoadSide(dir_b, in.substr(sep + kSeparator.size()));
  if (!b.ok()) return 0;
  analysis::TraceDiff d = analysis::Diff(*a, *b, analysis::DiffOptions{});
  (void)report::DiffToText(d, "a", "b", 20);
  (void)report::DiffToJson(d, 1000).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
