#include "report/report.h"

#include <fmt/format.h>

#include <cmath>

namespace strata::report {

std::vector<std::unique_ptr<Section>> MakeSections() {
  std::vector<std::unique_ptr<Section>> s;
  s.push_back(MakeOverviewSection());
  s.push_back(MakeFindingsSection());
  s.push_back(MakeStepsSection());
  s.push_back(MakeTrainingSection());
  s.push_back(MakeFrameworkOpsSection());
  s.push_back(MakeFrameworkMemorySection());
  s.push_back(MakeMemorySection());
  s.push_back(MakeDataflowSection());
  s.push_back(MakeGpuSection());
  s.push_back(MakeLaunchesSection());
  s.push_back(MakeTransfersSection());
  s.push_back(MakeOpsSection());
  s.push_back(MakeSpansSection());
  s.push_back(MakeAcceleratorSection());
  s.push_back(MakeCriticalPathSection());
  s.push_back(MakeRooflineSection());
  s.push_back(MakeOsSection());
  s.push_back(MakeCountersSection());
  s.push_back(MakeCollectorsSection());
  s.push_back(MakeWarningsSection());
  s.push_back(MakeCountsSection());
  return s;
}

Report::Report(const model::Trace& t, const ReportOptions& opt, const std::function<void(size_t, size_t)>& progress)
    : opt_(opt), sections_(MakeSections()) {
  for (size_t i = 0; i < sections_.size(); ++i) {
    sections_[i]->Build(t, opt_);
    if (progress) progress(i + 1, sections_.size());
  }
}

std::string Report::Text() const {
  std::string out;
  for (const auto& s : sections_) {
    std::string part;
    s->RenderText(part, opt_);
    if (part.empty()) continue;
    if (!out.empty()) out += "\n";
    out += part;
  }
  return out;
}

nlohmann::json Report::Json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& s : sections_) s->RenderJson(j, opt_);
  return j;
}

std::string FormatDuration(int64_t ns) {
  double v = static_cast<double>(ns);
  double a = std::fabs(v);
  if (a < 1e3) return fmt::format("{} ns", ns);
  if (a < 1e6) return fmt::format("{:.2f} us", v / 1e3);
  if (a < 1e9) return fmt::format("{:.2f} ms", v / 1e6);
  return fmt::format("{:.3f} s", v / 1e9);
}

std::string FormatBytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(b) >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.2f} {}", b, units[u]);
}

std::string Truncate(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  return s.substr(0, n - 3) + "...";
}

}  // namespace strata::report
