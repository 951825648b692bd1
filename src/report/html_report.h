// `strata report --html FILE`: one self-contained HTML file (no network) with
// the report's tables and charts, rendered from the report JSON by an embedded
// script (src/report/html/report.js).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace strata::report {

std::string RenderHtml(const nlohmann::json& report, const std::string& title);

}  // namespace strata::report
