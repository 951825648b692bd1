// The roofline over a PyTorch-profiler trace on arbitrary bytes: the ops'
// "Input Dims" / "Input type" / "Concrete Inputs" arguments (JSON text in the
// model, parsed by the analysis and described by src/opcost) and the device
// description must give figures or nothing, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "analysis/roofline.h"
#include "importers/kineto/kineto.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  strata::importers::LoadOptions opt;
  auto t = strata::importers::ParseKinetoTrace(bytes, opt);
  if (t.ok()) (void)strata::analysis::Roofline(*t);
  return 0;
}
