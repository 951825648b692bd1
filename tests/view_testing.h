// What the tests of `strata view`'s REST API share (view_test.cc,
// view_analysis_test.cc, live_test.cc): index options that keep indexes in a
// test directory, and a GET through server::Api that checks the status and
// that the answer is JSON (an error one with an "error").
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "index/open_trace.h"
#include "server/api.h"
#include "testing.h"

namespace strata::testing {

inline index::IndexOptions ViewIndexOptions() {
  index::IndexOptions io;
  io.beside = false;
  io.cache_dir = TempDir("view_cache");
  return io;
}

inline nlohmann::json ApiGet(server::Api& api, const std::string& path,
                             const std::multimap<std::string, std::string>& params = {}, int want = 200) {
  server::ApiResponse r = api.Handle("GET", path, params);
  EXPECT_EQ(r.status, want) << path << ": " << r.body;
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << path << ": not JSON: " << r.body.substr(0, 200);
  if (r.status >= 400) {
    EXPECT_TRUE(j.contains("error")) << r.body;
  }
  return j;
}

}  // namespace strata::testing
