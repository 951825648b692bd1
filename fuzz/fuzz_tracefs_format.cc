// Fuzz target: the tracefs `format` file parser (collectors/os/tracefs.h), and
// raw-field reads at whatever offsets it accepts.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "collectors/os/tracefs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::collectors::os;
  auto f = ParseTracepointFormat(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!f.ok()) {
    if (f.status().message().empty()) __builtin_trap();
    return 0;
  }
  uint8_t raw[64] = {};
  int64_t sum = 0;
  for (const auto& field : f->fields) sum += ReadRawField(raw, sizeof raw, field);
  return static_cast<int>(sum & 0);
}
