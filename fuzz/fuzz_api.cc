// `strata view`'s REST API (server/api.h) over any request: the input's first
// line is the path, each later line a query parameter "key=value". Served over
// a small model (two threads of nested slices, a device stream with a flow and
// arguments), so that every endpoint's parameter parsing and range handling is
// reached. It must answer (a 2xx or a 4xx with a JSON error), never crash,
// hang or allocate without bound.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/api.h"

namespace {

strata::model::Trace SmallTrace() {
  using namespace strata::model;
  Trace t;
  t.source = "fuzz";
  t.processes.push_back({});
  for (int k = 0; k < 3; ++k) {
    Track trk;
    trk.kind = k == 2 ? TrackKind::kDeviceQueue : TrackKind::kThread;
    trk.tid = k;
    trk.name = t.strings.Intern(k == 2 ? "stream 7" : "thread");
    t.tracks.push_back(trk);
  }
  StringId op = t.strings.Intern("aten::mm"), kernel = t.strings.Intern("gemm"), key = t.strings.Intern("shape");
  for (int i = 0; i < 50; ++i) {
    uint32_t outer = t.slices.Add(1000 + i * 1000, 900, static_cast<uint32_t>(i % 2), op, SliceKind::kOp);
    t.slices.Add(1100 + i * 1000, 300, static_cast<uint32_t>(i % 2), op, SliceKind::kOp);
    uint32_t k = t.slices.Add(1500 + i * 1000, 200, 2, kernel, SliceKind::kKernel);
    t.flows.Add(static_cast<uint64_t>(i), static_cast<int32_t>(outer), static_cast<int32_t>(k));
    t.args.Add(outer, key, t.strings.Intern("[4, 4]"), 0);
  }
  for (int k = 0; k < 2; ++k) {
    CounterSeries c;
    c.name = t.strings.Intern(k ? "memory" : "queue length");
    c.unit = t.strings.Intern(k ? "bytes" : "");
    t.counter_series.push_back(c);
    for (int i = 0; i < 40; ++i) t.counters.Add(static_cast<uint32_t>(k), 1000 + (40 - i) * 1100, i * (k + 1.5));
  }
  t.Finalize();
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static strata::server::Api* api = [] {
    auto* a = new strata::server::Api({}, {});
    a->AddOpened("fuzz", SmallTrace());
    return a;
  }();
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nl = in.find('\n');
  std::string path(in.substr(0, nl));
  std::multimap<std::string, std::string> params;
  while (nl != std::string_view::npos && params.size() < 16) {
    size_t next = in.find('\n', nl + 1);
    std::string_view line = in.substr(nl + 1, next == std::string_view::npos ? std::string_view::npos : next - nl - 1);
    size_t eq = line.find('=');
    params.emplace(std::string(line.substr(0, eq)), eq == std::string_view::npos ? "" : std::string(line.substr(eq + 1)));
    nl = next;
  }
  strata::server::ApiResponse r = api->Handle("GET", path, params);
  // Every answer is JSON, and an error says what it is.
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded() || (r.status >= 400 && !j.contains("error")) || r.status >= 500) __builtin_trap();
  return 0;
}
