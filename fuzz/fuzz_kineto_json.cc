// The PyTorch-profiler / Chrome trace JSON importer on arbitrary bytes (plain
// or gzip): it must return a model or a Status, never crash, hang or leak.
// A small batch window makes events straddle batches, the path most likely to
// hide an off-by-one. The importer's fast path (plain events read straight
// from the bytes) must agree with simdjson on every input: both fail, or both
// build the same model.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "importers/kineto/kineto.h"

namespace {

bool SameStrings(const strata::model::Trace& a, const strata::model::Trace& b) {
  if (a.strings.size() != b.strings.size()) return false;
  for (size_t i = 0; i < a.strings.size(); ++i) {
    auto id = static_cast<strata::model::StringId>(i);
    if (a.strings.Get(id) != b.strings.Get(id)) return false;
  }
  return true;
}

bool SameModel(const strata::model::Trace& a, const strata::model::Trace& b) {
  const auto &s = a.slices, &t = b.slices;
  if (s.ts != t.ts || s.dur != t.dur || s.track != t.track || s.name != t.name || s.kind != t.kind ||
      s.depth != t.depth || s.parent != t.parent || s.arg != t.arg)
    return false;
  const auto &d = a.device, &e = b.device;
  if (d.slice != e.slice || d.device != e.device || d.stream != e.stream || d.correlation != e.correlation ||
      d.launch != e.launch || d.bytes != e.bytes || d.copy_kind != e.copy_kind || d.pinned != e.pinned ||
      d.grid != e.grid || d.block != e.block || d.shared_mem != e.shared_mem || d.registers != e.registers)
    return false;
  // Occupancy and arg values are compared as bits: NaN marks "no number".
  for (size_t i = 0; i < d.occupancy.size(); ++i)
    if (std::memcmp(&d.occupancy[i], &e.occupancy[i], sizeof(float)) != 0) return false;
  if (a.args.slice != b.args.slice || a.args.key != b.args.key || a.args.str != b.args.str ||
      a.args.num.size() != b.args.num.size())
    return false;
  for (size_t i = 0; i < a.args.num.size(); ++i)
    if (std::memcmp(&a.args.num[i], &b.args.num[i], sizeof(double)) != 0) return false;
  if (a.flows.id != b.flows.id || a.flows.from != b.flows.from || a.flows.to != b.flows.to) return false;
  if (a.instants.ts != b.instants.ts || a.instants.name != b.instants.name) return false;
  if (a.counters.ts != b.counters.ts || a.counters.series != b.counters.series) return false;
  if (a.memory.ts != b.memory.ts || a.memory.bytes != b.memory.bytes) return false;
  if (a.processes.size() != b.processes.size() || a.tracks.size() != b.tracks.size()) return false;
  return a.warnings == b.warnings && a.events_read == b.events_read && SameStrings(a, b);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  strata::importers::LoadOptions opt;
  (void)strata::importers::ParseKinetoTrace(bytes, opt);
  opt.json_window = 61;
  auto fast = strata::importers::ParseKinetoTrace(bytes, opt);
  opt.json_fast_path = false;
  auto slow = strata::importers::ParseKinetoTrace(bytes, opt);
  if (fast.ok() != slow.ok()) std::abort();
  if (fast.ok() && !SameModel(*fast, *slow)) std::abort();
  return 0;
}
