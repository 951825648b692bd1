// Fuzz target: the CTF stream-file reader, over strata's own metadata. The
// metadata takes its uuid from the input's first packet header, so mutations
// reach past the uuid check.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "format/ctf_reader.h"
#include "format/tsdl.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::format;
  TraceIdentity id;
  if (size >= 20) std::memcpy(id.uuid.data(), data + 4, 16);
  static std::string last_text;
  auto md = ParseMetadata(GenerateMetadata(id));
  if (!md.ok()) __builtin_trap();
  StreamFileReader r(*md, data, size, "fuzz");
  Packet pk;
  EventView ev;
  uint64_t sum = 0;
  while (r.NextPacket(&pk)) {
    while (r.NextEvent(&ev)) {
      sum += ev.ts + ev.id;
      for (uint32_t i = 0; i < ev.size; ++i) sum += ev.payload[i];  // payload bounds are real
    }
    if (!r.status().ok()) break;
  }
  if (!r.status().ok() && r.status().message().empty()) __builtin_trap();
  return static_cast<int>(sum & 0);
}
