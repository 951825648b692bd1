#include "format/schema.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace strata::format {
namespace {

using F = FieldSpec;
using T = FieldType;

constexpr F kThreadContext[] = {{"pid", T::kU32}, {"tid", T::kU32}, {"process_instance", T::kU64}};
constexpr F kProcessContext[] = {{"pid", T::kU32}, {"process_instance", T::kU64}};
constexpr F kDeviceContext[] = {
    {"pid", T::kU32}, {"process_instance", T::kU64}, {"device", T::kU32}, {"queue", T::kU64}};
constexpr F kCpuContext[] = {{"cpu_id", T::kU32}};

struct Registry {
  std::vector<EventSpec> events[4];
  std::vector<StreamSpec> streams;
};

const Registry& GetRegistry() {
  static const Registry* reg = [] {
    auto* r = new Registry();
    // Each level's event classes; one line per level.
    std::vector<std::span<const EventSet>> levels = {CoreEventSets(), AccelEventSets(), OsEventSets(), TorchEventSets()};
    for (auto sets : levels)
      for (const EventSet& set : sets)
        for (const EventSpec& e : set.events) r->events[set.stream].push_back(e);
    for (auto& v : r->events) {
      std::sort(v.begin(), v.end(), [](const EventSpec& a, const EventSpec& b) { return a.id < b.id; });
      for (size_t i = 1; i < v.size(); ++i)
        if (v[i].id == v[i - 1].id) {
          std::fprintf(stderr, "strata: schema: event id %u used by both %.*s and %.*s\n", v[i].id,
                       static_cast<int>(v[i - 1].name.size()), v[i - 1].name.data(), static_cast<int>(v[i].name.size()),
                       v[i].name.data());
          std::abort();
        }
    }
    r->streams = {
        {kThreadStream, "thread", kThreadContext, r->events[kThreadStream]},
        {kProcessStream, "process", kProcessContext, r->events[kProcessStream]},
        {kDeviceStream, "device", kDeviceContext, r->events[kDeviceStream]},
        {kCpuStream, "cpu", kCpuContext, r->events[kCpuStream]},
    };
    return r;
  }();
  return *reg;
}

}  // namespace

std::span<const StreamSpec> Streams() { return GetRegistry().streams; }

const StreamSpec* FindStream(uint32_t id) {
  for (const StreamSpec& s : Streams())
    if (s.id == id) return &s;
  return nullptr;
}

const EventSpec* FindEvent(const StreamSpec& stream, uint32_t id) {
  auto it = std::lower_bound(stream.events.begin(), stream.events.end(), id,
                             [](const EventSpec& e, uint32_t v) { return e.id < v; });
  return it != stream.events.end() && it->id == id ? &*it : nullptr;
}

uint32_t ContextSize(const StreamSpec& s) {
  uint32_t n = kCommonContextSize;
  for (const FieldSpec& f : s.context) n += FieldSize(f.type);
  return n;
}

}  // namespace strata::format
