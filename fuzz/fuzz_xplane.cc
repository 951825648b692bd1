// The XSpace (.xplane.pb) importer on arbitrary bytes (an XSpace, or one
// gzip-compressed), then the report over what it built: the importer must
// return a model or a one-line Status, never crash, hang or leak, and what it
// builds (odd stats, times, steps, launch links) must not break an analysis.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "importers/xplane/xplane.h"
#include "report/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  auto t = importers::ParseXPlaneTrace(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!t.ok()) {
    const std::string& m = t.status().message();
    if (m.empty() || m.find('\n') != std::string::npos) __builtin_trap();  // one line that says something
    return 0;
  }
  report::ReportOptions opt;
  report::Report r(*t, opt);
  (void)r.Text();
  nlohmann::json j = r.Json();
  (void)j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
