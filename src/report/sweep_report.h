// Rendering of a parameter sweep (analysis/sweep.h): text table and JSON.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "analysis/sweep.h"

namespace strata::report {

nlohmann::json SweepToJson(const analysis::SweepSummary& s);
// Reads back what SweepToJson wrote (sweep.json); false if it is not a sweep.
bool SweepFromJson(const nlohmann::json& j, analysis::SweepSummary* s);
std::string SweepToText(const analysis::SweepSummary& s);

}  // namespace strata::report
