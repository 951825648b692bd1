// The LTTng importer (importers/lttng/) on arbitrary bytes: the input is a CTF
// trace, its TSDL metadata then a NUL then one stream file's bytes. They are
// written to a fresh directory, and babeltrace2 (which parses both) and the
// importer's mapping must return a model or a Status, never crash or hang.
//
// babeltrace2 itself is not instrumented: coverage guides the fuzzer through
// strata's side (event classes, fields, losses, the replay); the size cap keeps
// one run short, since babeltrace2's metadata parser is much slower per byte
// than strata's.
#include <stdlib.h>  // mkdtemp
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "importers/lttng/lttng.h"

namespace {

constexpr size_t kMaxInput = 64 * 1024;

bool Write(const std::string& path, std::string_view data) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  bool ok = std::fwrite(data.data(), 1, data.size(), f) == data.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxInput) return 0;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nul = in.find('\0');
  std::string_view metadata = in.substr(0, nul);
  std::string_view stream = nul == std::string_view::npos ? std::string_view() : in.substr(nul + 1);
  char tmpl[] = "/tmp/strata-fuzz-lttng-XXXXXX";
  if (!::mkdtemp(tmpl)) return 0;
  std::string dir = tmpl;
  if (Write(dir + "/metadata", metadata) && Write(dir + "/stream_0", stream)) {
    auto t = strata::importers::LoadLttngTrace(dir);
    (void)t;
  }
  ::unlink((dir + "/metadata").c_str());
  ::unlink((dir + "/stream_0").c_str());
  ::rmdir(dir.c_str());
  return 0;
}
