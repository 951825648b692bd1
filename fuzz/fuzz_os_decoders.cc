// Fuzz target: the importer's OS decoders and the OS analyses, on one cpu
// stream file. The input is the stream file of a one-stream trace directory.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>

#include "analysis/os.h"
#include "base/files.h"
#include "format/tsdl.h"
#include "fuzz/trace_records.h"
#include "importers/load.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  static const std::string dir = fuzz::MakeTraceDir("os");
  // The metadata takes its uuid from the input's first packet, as fuzz_ctf_stream does.
  format::TraceIdentity id;
  if (size >= 20) std::memcpy(id.uuid.data(), data + 4, 16);
  if (!WriteFileAtomic(dir + "/ctf/metadata", format::GenerateMetadata(id)).ok()) return 0;
  if (!WriteFileAtomic(dir + "/ctf/cpu-0", std::string_view(reinterpret_cast<const char*>(data), size)).ok()) return 0;
  auto t = importers::LoadTrace(dir);
  if (t.ok()) {
    analysis::OsSummary o = analysis::AnalyzeOs(*t);
    std::string folded = analysis::FoldedStacks(*t, {true, true});
    (void)o;
    (void)folded;
  } else if (t.status().message().empty()) {
    __builtin_trap();
  }
  return 0;
}
