// Fuzz target: the reader of a job member's summary (`strata summarize`'s
// output, which a Dask worker sends to the client of `strata report
// --cluster`). Any text must parse to a summary that writes back to text that
// parses to the same summary, or be refused with a one-line reason; a parsed
// summary must combine with itself (job/combine.h) without a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "job/combine.h"
#include "job/summary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  auto p = job::ParseSummary(std::string(reinterpret_cast<const char*>(data), size));
  if (!p.ok()) return 0;
  std::string again = job::SummaryJson(*p);
  auto q = job::ParseSummary(again);
  if (!q.ok() || job::SummaryJson(*q) != again) std::abort();
  q->clock_key += " (another host)";
  std::vector<job::MemberSummary> members;
  members.push_back(std::move(p).value());
  members.push_back(std::move(q).value());
  (void)job::AnalyzeJob(members);
  return 0;
}
