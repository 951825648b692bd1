// Fuzz target: the readers of a trace's manifest (strata.json), which `strata
// report` parses as it builds its sections: the overview (command, exit
// status), the collectors that did not record, the framework options
// (--skip-steps, --batch-size) and the host peaks the roofline uses. The input
// is the manifest's text, given to two small traces (one with a GPU, one
// CPU-only with steps and op shapes); the report is rendered as text, JSON and
// HTML, as the CLI writes them. Any manifest must give a report, never a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "importers/kineto/kineto.h"
#include "report/html_report.h"
#include "report/report.h"

namespace {

constexpr std::string_view kGpuTrace = R"({"traceEvents": [
{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 100, "tid": 100, "ts": 1000, "dur": 1000},
{"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 100, "tid": 100, "ts": 1010, "dur": 300, "args": {"External id": 2, "Input Dims": [[8, 16], [32, 16]], "Input type": ["float", "float"]}},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100, "ts": 1030, "dur": 10, "args": {"External id": 2, "correlation": 501}},
{"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, "ts": 1100, "dur": 100, "args": {"External id": 2, "device": 0, "stream": 7, "correlation": 501}},
{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#8", "pid": 100, "tid": 100, "ts": 2000, "dur": 500}],
"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85000000000, "computeMajor": 9, "computeMinor": 0, "numSms": 132}]})";

constexpr std::string_view kCpuTrace = R"({"traceEvents": [
{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 50, "args": {"Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}},
{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 100, "dur": 120},
{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 110, "dur": 60, "args": {"Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}},
{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 220, "dur": 90},
{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 230, "dur": 20, "args": {"Input Dims": [[64], [64]], "Input type": ["float", "float"]}}]})";

strata::model::Trace Load(std::string_view json) {
  auto t = strata::importers::ParseKinetoTrace(json);
  if (!t.ok()) std::abort();
  return std::move(t).value();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  for (std::string_view json : {kGpuTrace, kCpuTrace}) {
    model::Trace t = Load(json);  // (a Trace does not copy; a few microseconds to parse)
    t.source = "strata";
    t.manifest_json.assign(reinterpret_cast<const char*>(data), size);
    report::ReportOptions opt;
    report::Report r(t, opt);
    (void)r.Text();
    nlohmann::json j = r.Json();
    (void)j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    (void)report::RenderHtml(j, "fuzz");
  }
  return 0;
}
