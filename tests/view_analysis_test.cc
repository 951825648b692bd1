// The analysis endpoints of `strata view` on recorded programs: a thread's
// system calls per pixel, where a slice sits on its step's critical path, and
// the diff of two served traces (src/server/api.h).
#include <gtest/gtest.h>

#include <algorithm>

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "server/api.h"
#include "testing.h"
#include "view_testing.h"

namespace strata {
namespace {

using nlohmann::json;
using server::Api;

index::IndexOptions TestIndexOptions() { return testing::ViewIndexOptions(); }
using testing::ApiGet;

// `os_workload steps N MS`: N explicit steps, each a busy span "compute" of MS
// then a span "wait" sleeping MS; with every system call recorded.
std::string StepsTrace(const std::string& name, int wait_ms) {
  std::string d = testing::TempDir(name) + "/trace";
  auto r = testing::Record(d, {testing::TestProgram("os_workload"), "steps", "6", std::to_string(wait_ms)},
                           {"--syscalls"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return d;
}

const std::string& FiveMs() {
  static const std::string d = StepsTrace("view_steps5", 5);
  return d;
}

TEST(ViewAnalysis, SyscallsPerPixel) {
  model::Trace t = testing::Load(FiveMs());
  if (t.syscalls.size() == 0) GTEST_SKIP() << "no system calls recorded (needs root or CAP_PERFMON)";
  Api api({FiveMs()}, TestIndexOptions());
  json info = ApiGet(api, "/api/v1/traces/0");
  std::map<uint32_t, size_t> per_track;
  for (size_t i = 0; i < t.syscalls.size(); ++i) ++per_track[t.syscalls.track[i]];
  for (const json& k : info["tracks"]) EXPECT_EQ(k["syscalls"], per_track[k["id"].get<uint32_t>()]) << k.dump();
  uint32_t track = std::max_element(per_track.begin(), per_track.end(), [](auto& a, auto& b) {
                     return a.second < b.second;
                   })->first;
  json all = ApiGet(api, "/api/v1/traces/0/threads/" + std::to_string(track) + "/syscalls", {{"pixels", "400"}});
  int64_t prev = INT64_MIN, calls = 0;
  std::set<std::string> names;
  for (const json& x : all["syscalls"]) {
    EXPECT_GE(x[0].get<int64_t>(), prev);
    EXPECT_GE(x[1].get<int64_t>(), x[0].get<int64_t>());
    EXPECT_GE(x[0].get<int64_t>(), all["start"].get<int64_t>());
    EXPECT_LE(x[1].get<int64_t>(), all["end"].get<int64_t>());
    prev = x[0];
    calls += x[3].get<int64_t>();
    names.insert(x[2].get<std::string>());
  }
  EXPECT_LE(all["syscalls"].size(), 2 * 400u + 1);
  EXPECT_EQ(calls, static_cast<int64_t>(per_track[track])) << "every call counted once, pooled or not";
  // The sleeps of the "wait" spans, each 5 ms: wider than a pixel of the whole trace, so kept as they are.
  bool sleep = false;
  for (const json& x : all["syscalls"])
    sleep = sleep || (x[2].get<std::string>().find("nanosleep") != std::string::npos && x[3] == 1 &&
                      x[1].get<int64_t>() - x[0].get<int64_t>() >= 4'000'000);
  EXPECT_TRUE(sleep) << all.dump().substr(0, 600);
  ApiGet(api, "/api/v1/traces/0/threads/99999/syscalls", {}, 404);
  ApiGet(api, "/api/v1/traces/0/threads/0/syscalls", {{"pixels", "0"}}, 400);
}

TEST(ViewAnalysis, ASliceIsPlacedOnItsStepsCriticalPath) {
  model::Trace t = testing::Load(FiveMs());
  Api api({FiveMs()}, TestIndexOptions());
  // A busy "compute" span in the middle of the run: the step's thread is working, so on the path.
  model::StringId compute = t.strings.Find("compute");
  std::vector<size_t> spans;
  for (size_t i = 0; i < t.slices.size(); ++i)
    if (t.slices.name[i] == compute) spans.push_back(i);
  ASSERT_GE(spans.size(), 6u);
  size_t i = spans[3];
  json p = ApiGet(api, "/api/v1/traces/0/slices/" + std::to_string(i) + "/path");
  ASSERT_FALSE(p["step"].is_null()) << p.dump();
  int64_t ts = t.slices.ts[i];
  EXPECT_LE(p["step"]["ts"].get<int64_t>(), ts);
  EXPECT_GT(p["step"]["end"].get<int64_t>(), ts);
  EXPECT_EQ(t.slices.kind[p["step"]["slice"].get<size_t>()], model::SliceKind::kStep);
  EXPECT_GE(p["on_path_ns"].get<int64_t>(), t.slices.dur[i] * 8 / 10) << p.dump().substr(0, 400);
  EXPECT_LE(p["on_path_ns"].get<int64_t>(), t.slices.dur[i]);
  // The segments cover the step once.
  int64_t covered = 0;
  for (const json& g : p["segments"]) covered += g[1].get<int64_t>() - g[0].get<int64_t>();
  EXPECT_EQ(covered, p["step"]["end"].get<int64_t>() - p["step"]["ts"].get<int64_t>());
  EXPECT_GT(p["share"].get<double>(), 0.2);
  ApiGet(api, "/api/v1/traces/0/slices/999999999/path", {}, 404);
}

TEST(ViewAnalysis, DiffOfTwoServedTraces) {
  const std::string ten = StepsTrace("view_steps10", 10);
  Api api({FiveMs(), ten}, TestIndexOptions());
  json d = ApiGet(api, "/api/v1/diff", {{"before", "0"}, {"after", "1"}});
  EXPECT_EQ(d["before"]["id"], 0);
  EXPECT_EQ(d["after"]["path"], ten);
  // 5 ms busy + 5 ms asleep per step before, 10 + 10 after: about +100% on an
  // idle machine, explained by the two spans that grew. What the steps took
  // here (a test beside on 2 cores stretches the busy spans) is each trace's
  // own: the diff must say the change of their mean steps (the first, a
  // warm-up, left out as the diff leaves it out).
  auto mean_step = [](const std::string& path) {
    model::Trace t = testing::Load(path);
    std::vector<std::pair<int64_t, int64_t>> steps;  // (ts, dur)
    for (size_t i = 0; i < t.slices.size(); ++i)
      if (t.slices.kind[i] == model::SliceKind::kStep) steps.push_back({t.slices.ts[i], t.slices.dur[i]});
    std::sort(steps.begin(), steps.end());
    double sum = 0;
    for (size_t i = 1; i < steps.size(); ++i) sum += static_cast<double>(steps[i].second);
    return steps.size() > 1 ? sum / static_cast<double>(steps.size() - 1) : 0.0;
  };
  const double before = mean_step(FiveMs()), after = mean_step(ten);
  ASSERT_GT(before, 0);
  const double own = 100.0 * (after - before) / before;
  EXPECT_GT(own, 50);  // the steps did grow
  EXPECT_NEAR(d["step_delta_pct"].get<double>(), own, 5) << d.dump().substr(0, 400);
  ASSERT_GE(d["scopes"].size(), 2u);
  std::set<std::string> top = {d["scopes"][0]["name"], d["scopes"][1]["name"]};
  EXPECT_EQ(top, (std::set<std::string>{"compute", "wait"})) << d["scopes"].dump();
  // Asked again: the same answer (kept).
  EXPECT_EQ(ApiGet(api, "/api/v1/diff", {{"before", "0"}, {"after", "1"}}), d);
  ApiGet(api, "/api/v1/diff", {{"before", "0"}}, 400);
  ApiGet(api, "/api/v1/diff", {{"before", "0"}, {"after", "0"}}, 400);
  ApiGet(api, "/api/v1/diff", {{"before", "0"}, {"after", "x"}}, 400);
  ApiGet(api, "/api/v1/diff", {{"before", "0"}, {"after", "7"}}, 404);
}

}  // namespace
}  // namespace strata
