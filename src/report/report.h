// `strata report`: runs every section over a trace and renders text or JSON.
// Presentation only: the numbers come from analysis/.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "model/trace.h"
#include "report/section.h"

namespace strata::report {

class Report {
 public:
  // `progress(done, total)` is called after each section is built (long traces take seconds).
  Report(const model::Trace& t, const ReportOptions& opt,
         const std::function<void(size_t done, size_t total)>& progress = {});
  std::string Text() const;
  nlohmann::json Json() const;

 private:
  ReportOptions opt_;
  std::vector<std::unique_ptr<Section>> sections_;
};

}  // namespace strata::report
