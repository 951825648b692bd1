// Fuzz target: the reader of a merged trace's plan (DIR/strata-merge.json,
// written by `strata merge`, read by every command that opens the merged
// trace). Any file must parse to a plan that writes back to text that parses
// to the same plan, or be refused with a one-line reason; never crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "importers/merged/merged.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  auto p = importers::ParseMergePlan(std::string(reinterpret_cast<const char*>(data), size));
  if (!p.ok()) return 0;
  std::string again = importers::MergePlanJson(*p);
  auto q = importers::ParseMergePlan(again);
  if (!q.ok() || importers::MergePlanJson(*q) != again) std::abort();
  for (const auto& m : p->members) (void)importers::MemberPath("/job", m);
  return 0;
}
