// The trace index reader (index/index_file.h) over any bytes: the header's
// checks, then the payload's layout with the checksum not verified (random
// bytes would rarely get past it), so the column and field parser itself is
// reached; and the same bytes as a stored result (results_file.h). It must
// accept or refuse, never crash, hang or allocate without bound.
#include <cstddef>
#include <cstdint>

#include "index/index_file.h"
#include "index/results_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto t = strata::index::ParseIndex(data, size, nullptr, /*verify_hash=*/false, "fuzz input");
  if (t.ok()) (void)t->slices.size();
  strata::index::LodTable lod;  // the levels of detail, as a viewer reads them
  if (strata::index::ParseIndex(data, size, nullptr, false, "fuzz input", &lod).ok() && lod.offsets.size() > 1)
    (void)strata::index::QueryLod(lod, 0, INT64_MIN / 2, INT64_MAX / 2, 1000);
  // The same bytes as a stored result (results_file.h), with and without a key.
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (auto r = strata::index::ParseResult(bytes, nullptr, "fuzz input"); r.ok()) (void)r->answer.size();
  strata::index::ContentKey key{1, 2};
  (void)strata::index::ParseResult(bytes, &key, "fuzz input");
  return 0;
}
