// Fuzz target: the strata importer's decoders (every level's, accelerator
// included) on one stream file. The input is written as a stream of a trace
// directory whose metadata takes its uuid from the input's first packet, then
// loaded into the model like any trace: a bad file must give an error or a
// trace with warnings, never a crash.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/files.h"
#include "format/tsdl.h"
#include "fuzz/trace_records.h"
#include "importers/load.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  static const std::string dir = fuzz::MakeTraceDir("import");
  format::TraceIdentity id;
  if (size >= 20) std::memcpy(id.uuid.data(), data + 4, 16);
  if (!WriteFileAtomic(dir + "/ctf/metadata", format::GenerateMetadata(id)).ok()) std::abort();
  if (!WriteFileAtomic(dir + "/ctf/stream", std::string(reinterpret_cast<const char*>(data), size)).ok()) std::abort();
  auto t = importers::LoadTrace(dir);
  if (!t.ok() && t.status().message().empty()) __builtin_trap();
  return 0;
}
