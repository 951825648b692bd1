#include "importers/kineto/optimizer_steps.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string_view>
#include <vector>

namespace strata::importers::kineto {

size_t AddOptimizerSteps(model::Trace& t) {
  const auto& s = t.slices;
  constexpr std::string_view kPrefix = "Optimizer.step#";
  std::map<uint32_t, std::vector<uint32_t>> marks;  // track -> optimizer-step slices
  std::map<uint32_t, int64_t> first;                // track -> its first event
  for (uint32_t i = 0; i < s.size(); ++i) {
    if (s.kind[i] == model::SliceKind::kStep) return 0;
    auto [it, fresh] = first.try_emplace(s.track[i], s.ts[i]);
    if (!fresh) it->second = std::min(it->second, s.ts[i]);
    if (s.kind[i] == model::SliceKind::kSpan && t.strings.Get(s.name[i]).substr(0, kPrefix.size()) == kPrefix)
      marks[s.track[i]].push_back(i);
  }
  model::StringId step_name = t.strings.Intern("step");
  model::StringId partial = t.strings.Intern("partial_step");
  size_t added = 0;
  for (auto& [track, m] : marks) {
    if (m.size() < 2) continue;
    std::sort(m.begin(), m.end(), [&](uint32_t a, uint32_t b) { return s.ts[a] < s.ts[b]; });
    model::StringId last = s.name[m.back()];  // the iteration's last optimizer
    int64_t begin = first[track];
    uint64_t number = 0;
    for (uint32_t i : m) {
      if (s.name[i] != last) continue;
      int64_t end = s.ts[i] + s.dur[i];
      if (end <= begin) continue;
      uint32_t st = t.slices.Add(begin, end - begin, track, step_name, model::SliceKind::kStep, number);
      if (number == 0) t.args.Add(st, partial, 0, 1);
      ++number;
      ++added;
      begin = end;
    }
  }
  return added;
}

}  // namespace strata::importers::kineto
