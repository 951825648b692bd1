// The PyTorch-profiler / Chrome trace JSON importer on arbitrary bytes (plain
// or gzip): it must return a model or a Status, never crash, hang or leak.
// A small batch window makes events straddle batches, the path most likely to
// hide an off-by-one.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "importers/kineto/kineto.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  strata::importers::LoadOptions opt;
  (void)strata::importers::ParseKinetoTrace(bytes, opt);
  opt.json_window = 61;
  (void)strata::importers::ParseKinetoTrace(bytes, opt);
  return 0;
}
