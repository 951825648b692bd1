// Fuzz target: the reader of a sweep's summary (DIR/sweep.json, written by
// `strata sweep` and read again by `strata report DIR`), then the text, JSON and
// HTML it is shown as, exactly as report_cmd.cc does. Any file must be shown
// or refused as "not a strata sweep summary", never crash.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "analysis/sweep.h"
#include "report/html_report.h"
#include "report/sweep_report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  analysis::SweepSummary s;
  if (!report::SweepFromJson(j, &s)) return 0;
  (void)report::SweepToText(s);
  (void)report::SweepToJson(s).dump(2);
  nlohmann::json r = {{"trace", {{"path", "fuzz"}, {"source", "sweep"}}}, {"sweep", report::SweepToJson(s)}};
  (void)report::RenderHtml(r, "strata sweep: fuzz");
  return 0;
}
