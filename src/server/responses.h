// The REST API's answers (server/api.h, server/live.h): a JSON body, with
// names from traced programs (any bytes) replaced where they are not UTF-8;
// an error is {"error": "..."}.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "server/api.h"

namespace strata::server {

inline ApiResponse JsonAnswer(int status, const nlohmann::json& j) {
  return {status, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"};
}
inline ApiResponse Ok(const nlohmann::json& j) { return JsonAnswer(200, j); }
inline ApiResponse Error(int status, const std::string& message) {
  return JsonAnswer(status, nlohmann::json{{"error", message}});
}

}  // namespace strata::server
