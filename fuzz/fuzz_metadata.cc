// Fuzz target: the TSDL metadata parser.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "format/tsdl.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto md = strata::format::ParseMetadata(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!md.ok() && md.status().message().empty()) __builtin_trap();  // every error must say something
  return 0;
}
