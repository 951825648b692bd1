// TensorFlow step stats (a serialized RunMetadata, as strata._tf writes one per
// Session.run traced with FULL_TRACE) merged into a trace, then the report over
// it: the merge must accept or refuse the bytes, never crash or hang, and what
// it adds (odd times, overlapping nodes, allocation records) must not break an
// analysis.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "importers/strata/step_stats_merge.h"
#include "model/trace.h"
#include "report/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  model::Trace t;
  t.source = "strata";
  model::Process p;
  p.pid = 1;
  t.processes.push_back(p);
  if (!importers::strata_ctf::MergeRunMetadata(t, std::string_view(reinterpret_cast<const char*>(data), size), 0,
                                                1'000'000))
    return 0;
  t.Finalize();
  report::ReportOptions opt;
  report::Report r(t, opt);
  (void)r.Text();
  (void)r.Json();
  return 0;
}
