// Fuzz target: every level's decoder in the strata importer (process, thread,
// framework, accelerator records of CUPTI, OpenCL and HSA, OS), then the whole
// report over what they built. The input is a list of schema-valid events
// (fuzz/trace_records.h) written with the real StreamWriter into up to 16
// streams of a trace directory: mutations change event values, order and
// interleaving across streams and processes, not the CTF framing (which
// fuzz_ctf_stream covers). A bad trace must load with warnings or fail with a
// message, and any trace that loads must report (text, JSON, HTML) without a
// crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/trace_records.h"
#include "importers/load.h"
#include "report/html_report.h"
#include "report/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  static const std::string dir = fuzz::MakeTraceDir("decoders");
  fuzz::WriteTraceDir(dir, data, size);
  auto t = importers::LoadTrace(dir);
  if (!t.ok()) {
    if (t.status().message().empty()) __builtin_trap();  // every error must say something
    return 0;
  }
  report::ReportOptions opt;
  report::Report r(*t, opt);
  (void)r.Text();
  // As `strata report --json` and `--html` write it.
  nlohmann::json j = r.Json();
  (void)j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  (void)report::RenderHtml(j, "fuzz");
  return 0;
}
