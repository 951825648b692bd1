#include "analysis/sample_lines.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string_view>

#include "analysis/program_frames.h"
#include "analysis/track_rows.h"

namespace strata::analysis {
namespace {

std::string Label(const model::Trace& t, uint32_t frame) {
  std::string m(t.strings.Get(t.frames.module[frame]));
  size_t slash = m.rfind('/');
  return fmt::format("{}:{} ({})", slash == std::string::npos ? m : m.substr(slash + 1), t.frames.line[frame],
                     t.strings.Get(t.frames.function[frame]));
}

}  // namespace

SampleLines LinesInPart(const FindingsContext& c, StepPart part) {
  const model::Trace& t = c.t;
  const auto& cs = t.cpu_samples;
  SampleLines w;
  if (cs.size() == 0 || !c.replay) return w;
  constexpr model::StringId kNoFunction = model::StringPool::kNotFound;
  std::map<std::pair<int64_t, model::StringId>, double> by;  // ((own frame), innermost library function) -> samples
  std::map<int64_t, std::string> own_label;
  for (const ReplayStep& s : c.replay->steps()) {
    if (s.window >= c.windows.size()) continue;
    uint32_t track = c.windows[s.window].track;
    if (track == UINT32_MAX) continue;
    auto rows = TrackRows(cs, track);
    for (const ReplayPiece& p : s.pieces) {
      if (p.part != part || p.dur <= 0) continue;
      auto [first, last] = RowsAt(cs, rows, p.start, p.start + p.dur);
      for (size_t r = first; r < last; ++r) {
        w.samples += 1;
        model::StringId lib = kNoFunction;
        int64_t own = -1;
        bool innermost = true;
        for (int32_t k = cs.callsite[r]; k >= 0; k = t.callsites.parent[static_cast<size_t>(k)]) {
          uint32_t fr = t.callsites.frame[static_cast<size_t>(k)];
          if (t.frames.kind[fr] != model::FrameKind::kPython) continue;
          std::string_view file = t.strings.Get(t.frames.module[fr]);
          if (innermost && FrameworkFile(file)) {
            // The framework's Python around its ops (backward()'s and the
            // optimizer's wrappers, module call machinery): its overhead, not
            // the program's code.
            w.framework += 1;
            break;
          }
          innermost = false;
          if (LibraryFile(file)) {
            if (lib == kNoFunction) lib = t.frames.function[fr];
            continue;
          }
          own = (static_cast<int64_t>(t.frames.module[fr]) << 32) | t.frames.line[fr];
          if (!own_label.count(own)) own_label[own] = Label(t, fr);
          break;
        }
        if (own >= 0) by[{own, lib}] += 1;
      }
    }
  }
  // Per own line, its samples, and the library function most of them were in.
  std::map<int64_t, std::pair<double, std::pair<double, model::StringId>>> per_line;
  for (const auto& [key, n] : by) {
    auto& [total, top] = per_line[key.first];
    total += n;
    if (n > top.first) top = {n, key.second};
  }
  for (const auto& [line, v] : per_line) {
    std::string label = own_label[line];
    if (v.second.second != kNoFunction && v.second.first * 2 >= v.first)
      label += fmt::format(", in {}", t.strings.Get(v.second.second));
    w.lines.emplace_back(std::move(label), v.first);
  }
  std::stable_sort(w.lines.begin(), w.lines.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return w;
}


std::string LineList(const SampleLines& w, size_t max, std::vector<std::string>* involved) {
  std::string lines;
  size_t named = 0;
  const double own = w.samples - w.framework;
  for (const auto& [label, n] : w.lines) {
    if (named == max || n < 0.05 * own) break;
    lines += fmt::format("{}{} {:.0f}%", named ? "; " : "", label, 100 * n / own);
    if (involved) involved->push_back(label);
    ++named;
  }
  return lines;
}

}  // namespace strata::analysis
