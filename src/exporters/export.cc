#include "exporters/export.h"

namespace strata::exporters {

bool ParseExportFormat(const std::string& s, ExportFormat* f) {
  if (s == "perfetto") *f = ExportFormat::kPerfetto;
  else if (s == "chrome-json" || s == "json") *f = ExportFormat::kChromeJson;
  else if (s == "sqlite") *f = ExportFormat::kSqlite;
  else return false;
  return true;
}

StatusOr<ExportStats> ExportTrace(const model::Trace& t, ExportFormat f, const std::string& path) {
  switch (f) {
    case ExportFormat::kPerfetto: return ExportPerfetto(t, path);
    case ExportFormat::kChromeJson: return ExportChromeJson(t, path);
    case ExportFormat::kSqlite: return ExportSqlite(t, path);
  }
  return ExportPerfetto(t, path);
}

uint32_t AssignLanes(const model::Trace& t, uint32_t first, uint32_t last, std::vector<uint32_t>& lane) {
  // One stack of open slice ends per lane; a slice goes to the first lane
  // where, once finished slices are popped, it fits inside the open one.
  std::vector<std::vector<int64_t>> stacks(1);
  for (uint32_t i = first; i < last; ++i) {
    int64_t ts = t.slices.ts[i], end = ts + t.slices.dur[i];
    uint32_t k = 0;
    for (;; ++k) {
      if (k == stacks.size()) stacks.emplace_back();
      auto& st = stacks[k];
      while (!st.empty() && st.back() <= ts) st.pop_back();
      if (st.empty() || st.back() >= end) {
        st.push_back(end);
        break;
      }
    }
    lane[i] = k;
  }
  return static_cast<uint32_t>(stacks.size());
}

}  // namespace strata::exporters
