// Rendering of `strata diff` (analysis/diff.h).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "analysis/diff.h"

namespace strata::report {

nlohmann::json DiffToJson(const analysis::TraceDiff& d, size_t max_rows);
std::string DiffToText(const analysis::TraceDiff& d, const std::string& a, const std::string& b, size_t top);

}  // namespace strata::report
