// `strata view`'s REST API (server/api.h) and HTTP server (server/http_server.h):
// every endpoint against the model it serves, bad input of every kind (a 4xx,
// never a crash), the token, the Host check, and path traversal; then the
// binary itself, started as a user would.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "analysis/framework.h"
#include "index/open_trace.h"
#include "report/stored_report.h"
#include "server/api.h"
#include "server/http_server.h"
#include "testing.h"
#include "view_testing.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using server::Api;
using server::ApiResponse;

// One recorded trace for every test: two threads of nested spans.
const std::string& RecordedTrace() {
  static const std::string dir = [] {
    std::string d = testing::TempDir("view_trace") + "/trace";
    auto r = testing::Record(d, {testing::TestProgram("emitter"), "2", "20000", "--spans"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return d;
  }();
  return dir;
}

index::IndexOptions TestIndexOptions() { return testing::ViewIndexOptions(); }
using testing::ApiGet;

TEST(ViewApi, EndpointsAnswerFromTheTraceAndItsIndex) {
  const std::string trace = RecordedTrace();
  index::IndexOptions io = TestIndexOptions();
  Api api({trace}, io);
  json list = ApiGet(api, "/api/v1/traces");
  ASSERT_EQ(list["traces"].size(), 1u);
  EXPECT_EQ(list["traces"][0]["path"], trace);

  model::Trace t = testing::Load(trace);
  json info = ApiGet(api, "/api/v1/traces/0");
  EXPECT_EQ(info["tracks"].size(), t.tracks.size());
  EXPECT_EQ(info["slices"], t.slices.size());
  EXPECT_EQ(info["start_ns"], t.start_ns());
  EXPECT_EQ(info["end_ns"], t.end_ns());
  EXPECT_TRUE(info["indexed"].get<bool>());
  ASSERT_EQ(info["processes"].size(), t.processes.size());
  for (size_t i = 0; i < t.processes.size(); ++i) {
    EXPECT_EQ(info["processes"][i]["pid"], t.processes[i].pid);
    EXPECT_EQ(info["processes"][i]["name"], std::string(t.strings.Get(t.processes[i].name)));
  }

  // The whole trace at 800 pixels: every track's tiles count its top-level
  // slices once, and there are about as many tiles as pixels, not slices.
  json vp = ApiGet(api, "/api/v1/traces/0/viewport", {{"pixels", "800"}});
  ASSERT_EQ(vp["tracks"].size(), t.tracks.size());
  size_t tracks_with_slices = 0;
  for (const json& lane : vp["tracks"]) {
    uint32_t k = lane["track"];
    uint64_t top = 0, counted = 0;
    for (size_t i = t.track_slices[k].first; i < t.track_slices[k].second; ++i) top += t.slices.depth[i] == 0;
    for (const json& tile : lane["tiles"]) counted += tile[2].get<uint64_t>();
    EXPECT_EQ(counted, top) << "track " << k;
    EXPECT_LE(lane["tiles"].size(), 801u);
    tracks_with_slices += top > 0;
  }
  EXPECT_GE(tracks_with_slices, 2u);
  EXPECT_GT(vp["level"].get<int>(), 0);

  // Zoomed in on a busy track: the slices there, the enclosing ones first.
  uint32_t busy = 0;
  for (uint32_t k = 0; k < t.tracks.size(); ++k)
    if (t.track_slices[k].second - t.track_slices[k].first > t.track_slices[busy].second - t.track_slices[busy].first)
      busy = k;
  auto [a, b] = t.track_slices[busy];
  size_t mid = a + (b - a) / 2;
  int64_t start = t.slices.ts[mid] + 1, end = start + 200000;
  json sl = ApiGet(api, "/api/v1/traces/0/slices",
                {{"track", std::to_string(busy)}, {"start", std::to_string(start)}, {"end", std::to_string(end)}});
  std::set<uint64_t> want;
  for (size_t i = a; i < b; ++i)
    if (t.slices.ts[i] < end && t.slices.ts[i] + t.slices.dur[i] > start) want.insert(i);
  std::set<uint64_t> got;
  for (const json& s : sl["slices"]) {
    got.insert(s["id"].get<uint64_t>());
    EXPECT_EQ(s["name"], std::string(t.strings.Get(t.slices.name[s["id"].get<size_t>()])));
  }
  EXPECT_FALSE(sl["truncated"].get<bool>());
  EXPECT_EQ(got, want);
  ASSERT_FALSE(got.empty());
  // The limit truncates, and says so.
  json few = ApiGet(api, "/api/v1/traces/0/slices",
                 {{"track", std::to_string(busy)}, {"start", std::to_string(start)}, {"end", std::to_string(end)},
                  {"limit", "1"}});
  EXPECT_LE(few["slices"].size(), 1u + 16u);  // (the enclosing chain, then one)
  EXPECT_EQ(few["truncated"].get<bool>(), got.size() > few["slices"].size());

  // One slice's details.
  uint64_t id = *got.begin();
  json one = ApiGet(api, "/api/v1/traces/0/slices/" + std::to_string(id));
  EXPECT_EQ(one["ts"], t.slices.ts[id]);
  EXPECT_EQ(one["dur"], t.slices.dur[id]);
  EXPECT_EQ(one["track"], busy);

  // The summary is the report's JSON, byte for byte, and it is kept.
  ApiResponse summary = api.Handle("GET", "/api/v1/traces/0/summary", {});
  ASSERT_EQ(summary.status, 200);
  report::Report r(t, report::DefaultReportOptions());
  EXPECT_EQ(summary.body, report::RenderReport(r, trace, report::ReportFormat::kJson));
  index::IndexUse use;
  ASSERT_TRUE(index::OpenTrace(trace, {}, io, &use).ok());
  EXPECT_TRUE(report::StoredReport(use, trace, report::DefaultReportOptions(), report::ReportFormat::kJson));

  // Search by name: every slice whose name has the text (any case), the
  // earliest first.
  std::string_view some = t.strings.Get(t.slices.name[id]);
  std::string part(some.substr(some.size() / 3, std::max<size_t>(1, some.size() / 3)));
  for (char& c : part) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  json found = ApiGet(api, "/api/v1/traces/0/search", {{"q", part}, {"limit", "5"}});
  uint64_t n = 0;
  std::vector<int64_t> starts;
  for (size_t i = 0; i < t.slices.size(); ++i) {
    std::string name(t.strings.Get(t.slices.name[i]));
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (name.find(part) != std::string::npos) ++n, starts.push_back(t.slices.ts[i]);
  }
  std::sort(starts.begin(), starts.end());
  EXPECT_EQ(found["matches"].get<uint64_t>(), n) << part;
  ASSERT_EQ(found["slices"].size(), std::min<size_t>(5, n));
  for (size_t k = 0; k < found["slices"].size(); ++k) EXPECT_EQ(found["slices"][k]["ts"], starts[k]);
  ApiGet(api, "/api/v1/traces/0/search", {}, 400);
  ApiGet(api, "/api/v1/traces/0/search", {{"q", std::string(1000, 'x')}}, 400);
  EXPECT_EQ(ApiGet(api, "/api/v1/traces/0/search", {{"q", "no such name anywhere"}})["matches"], 0);

  json steps = ApiGet(api, "/api/v1/traces/0/steps");
  EXPECT_EQ(steps["steps"].size(), analysis::Training(t, {}).steps.size());
}

// docs/api/openapi.yaml names every endpoint the API serves, and each path it
// names is served (with its parameters filled in).
TEST(ViewApi, TheOpenApiFileDescribesTheEndpoints) {
  std::ifstream f(testing::SourceDir() + "/docs/api/openapi.yaml");
  ASSERT_TRUE(f) << "docs/api/openapi.yaml";
  std::vector<std::string> paths;
  for (std::string line; std::getline(f, line);)
    if (line.rfind("  /", 0) == 0 && line.back() == ':') paths.push_back(line.substr(2, line.size() - 3));
  EXPECT_EQ(paths, (std::vector<std::string>{"/traces", "/traces/{id}", "/traces/{id}/summary", "/traces/{id}/steps",
                                             "/traces/{id}/viewport", "/traces/{id}/slices",
                                             "/traces/{id}/slices/{slice}", "/traces/{id}/slices/{slice}/path",
                                             "/traces/{id}/search",
                                             "/traces/{id}/counters", "/traces/{id}/counters/{counter}",
                                             "/traces/{id}/threads/{track}/states",
                                             "/traces/{id}/threads/{track}/syscalls", "/diff", "/live", "/record"}));
  Api api({RecordedTrace()}, TestIndexOptions());
  for (std::string p : paths) {
    if (p == "/live" || p == "/record" || p == "/diff") continue;  // live_test, view_analysis_test
    for (auto [from, to] : {std::pair<std::string, std::string>{"{id}", "0"}, {"{slice}", "0"}, {"{counter}", "0"}, {"{track}", "0"}})
      if (size_t at = p.find(from); at != std::string::npos) p.replace(at, from.size(), to);
    ApiResponse r = api.Handle("GET", "/api/v1" + p, {{"track", "0"}, {"q", "a"}});
    EXPECT_EQ(r.status, 200) << p << ": " << r.body;
  }
}

// flows=1: the flows that touch the slices returned (the trace's flows and
// each device activity's launch), every one of them and only those (a
// PyTorch-profiler trace: launches to their kernels).
TEST(ViewApi, SlicesComeWithTheirFlows) {
  std::string root = testing::ExternalDataDir();
  std::string p = root + "/hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz";
  if (root.empty() || !fs::exists(p)) GTEST_SKIP() << "no shared external data";
  model::Trace t = testing::Load(p);
  Api api({p}, TestIndexOptions());
  // The track with the most flow ends.
  std::vector<std::pair<int64_t, int64_t>> all;
  for (size_t f = 0; f < t.flows.size(); ++f)
    if (t.flows.from[f] != model::kNone && t.flows.to[f] != model::kNone) all.push_back({t.flows.from[f], t.flows.to[f]});
  for (size_t d = 0; d < t.device.size(); ++d)
    if (t.device.launch[d] != model::kNone) all.push_back({t.device.launch[d], t.device.slice[d]});
  std::vector<size_t> ends(t.tracks.size(), 0);
  for (auto [a, b] : all) ++ends[t.slices.track[static_cast<size_t>(a)]];
  uint32_t track = static_cast<uint32_t>(std::max_element(ends.begin(), ends.end()) - ends.begin());
  ASSERT_GT(ends[track], 0u);
  json sl = ApiGet(api, "/api/v1/traces/0/slices", {{"track", std::to_string(track)}, {"flows", "1"}, {"limit", "20000"}});
  std::set<int64_t> ids;
  for (const json& x : sl["slices"]) ids.insert(x["id"].get<int64_t>());
  std::multiset<std::pair<int64_t, int64_t>> want, got;
  for (auto [a, b] : all)
    if (ids.count(a) || ids.count(b)) want.insert({a, b});
  for (const json& x : sl["flows"]) {
    int64_t a = x[0], b = x[1];
    got.insert({a, b});
    EXPECT_EQ(x[2], t.slices.track[a]);
    EXPECT_EQ(x[3], t.slices.ts[a]);
    EXPECT_EQ(x[6], t.slices.ts[b]);
    EXPECT_EQ(x[7], t.slices.depth[b]);
  }
  EXPECT_EQ(got, want);
  EXPECT_FALSE(want.empty());
  EXPECT_FALSE(ApiGet(api, "/api/v1/traces/0/slices", {{"track", std::to_string(track)}}).contains("flows"));
}

// Counter lanes: every series with its points, and per pixel the lowest,
// highest and last value (their extremes are the series' own).
TEST(ViewApi, CountersAreSummarisedPerPixel) {
  const std::string trace = RecordedTrace();
  model::Trace t = testing::Load(trace);
  Api api({trace}, TestIndexOptions());
  json list = ApiGet(api, "/api/v1/traces/0/counters");
  std::map<size_t, std::vector<std::pair<int64_t, double>>> want;
  for (size_t i = 0; i < t.counters.size(); ++i) want[t.counters.series[i]].push_back({t.counters.ts[i], t.counters.value[i]});
  ASSERT_EQ(list["counters"].size(), want.size());
  ASSERT_FALSE(want.empty()) << "the emitter records counters";
  for (const json& c : list["counters"]) {
    size_t k = c["id"];
    EXPECT_EQ(c["points"], want[k].size());
    json v = ApiGet(api, "/api/v1/traces/0/counters/" + std::to_string(k), {{"pixels", "100"}});
    EXPECT_LE(v["buckets"].size(), 101u);
    double lo = 1e300, hi = -1e300, blo = 1e300, bhi = -1e300;
    for (auto [ts, x] : want[k]) lo = std::min(lo, x), hi = std::max(hi, x);
    for (const json& b : v["buckets"]) blo = std::min(blo, b[1].get<double>()), bhi = std::max(bhi, b[2].get<double>());
    EXPECT_DOUBLE_EQ(blo, lo) << k;
    EXPECT_DOUBLE_EQ(bhi, hi) << k;
    // From the middle: the value in force there comes first (one of the
    // values at its time, where two threads sampled at one nanosecond).
    std::sort(want[k].begin(), want[k].end());
    const int64_t mid_ts = want[k][want[k].size() / 2].first;
    std::set<double> at_mid;
    for (auto [ts, x] : want[k])
      if (ts == mid_ts) at_mid.insert(x);
    json half = ApiGet(api, "/api/v1/traces/0/counters/" + std::to_string(k), {{"start", std::to_string(mid_ts + 1)}});
    EXPECT_TRUE(at_mid.count(half["before"].get<double>())) << half["before"] << " at " << mid_ts;
  }
  ApiGet(api, "/api/v1/traces/0/counters/99999", {}, 404);
  ApiGet(api, "/api/v1/traces/0/counters/0", {{"pixels", "0"}}, 400);
  ApiGet(api, "/api/v1/traces/0/counters/0", {{"start", "9"}, {"end", "3"}}, 400);
}

// A thread's scheduling states over a range: in time order, disjoint, inside
// the range; zoomed in on one interval, its own state.
// A counter of 300k points asked for at 200 pixels: answered from block
// summaries (server/grouped_rows.h CounterLod), as it would be from every
// point: each pixel's range within its points' (give or take the next
// pixel, where a block that began in this one ends), the extremes kept
// (a single-point spike up and one down), the last value last.
TEST(ViewApi, CountersOfManyPointsAreSummarisedFromBlocks) {
  model::Trace t;
  model::CounterSeries series;
  series.name = t.strings.Intern("queue");
  t.counter_series.push_back(series);
  const int64_t n = 300000, t0 = 1000, step = 10;
  auto value = [](int64_t i) { return static_cast<double>(i % 1000) + (i == 123457 ? 1e6 : 0) - (i == 234567 ? 5e5 : 0); };
  for (int64_t i = 0; i < n; ++i) t.counters.Add(0, t0 + i * step, value(i));
  Api api({}, TestIndexOptions());
  api.AddOpened("synthetic", std::move(t));
  const int pixels = 200;
  const int64_t end = t0 + n * step;
  json v = ApiGet(api, "/api/v1/traces/0/counters/0",
               {{"pixels", std::to_string(pixels)}, {"start", std::to_string(t0)}, {"end", std::to_string(end)}});
  const double per = static_cast<double>(end - t0) / pixels;
  ASSERT_GE(v["buckets"].size(), static_cast<size_t>(pixels) - 1);
  ASSERT_LE(v["buckets"].size(), static_cast<size_t>(pixels) + 1);
  double blo = 1e300, bhi = -1e300;
  for (const json& b : v["buckets"]) {
    int64_t at = b[0];
    int64_t px = static_cast<int64_t>(static_cast<double>(at - t0) / per);
    // The points of this pixel and the next.
    int64_t i0 = std::max<int64_t>(0, static_cast<int64_t>(px * per) / step - 1);
    int64_t i1 = std::min<int64_t>(n, static_cast<int64_t>((px + 2) * per) / step + 1);
    double lo = 1e300, hi = -1e300;
    for (int64_t i = i0; i < i1; ++i) lo = std::min(lo, value(i)), hi = std::max(hi, value(i));
    EXPECT_GE(b[1].get<double>(), lo) << "pixel " << px;
    EXPECT_LE(b[2].get<double>(), hi) << "pixel " << px;
    EXPECT_LE(b[1].get<double>(), b[2].get<double>());
    blo = std::min(blo, b[1].get<double>()), bhi = std::max(bhi, b[2].get<double>());
  }
  EXPECT_DOUBLE_EQ(bhi, value(123457));
  EXPECT_DOUBLE_EQ(blo, value(234567));
  EXPECT_DOUBLE_EQ(v["buckets"].back()[3].get<double>(), value(n - 1));
  // Zoomed in on a few points: the points themselves.
  json few = ApiGet(api, "/api/v1/traces/0/counters/0",
                 {{"pixels", "100"}, {"start", std::to_string(t0 + 5000 * step)}, {"end", std::to_string(t0 + 5050 * step)}});
  ASSERT_EQ(few["buckets"].size(), 50u);
  EXPECT_DOUBLE_EQ(few["buckets"][7][1].get<double>(), value(5007));
}

// A counter whose last point is the trace's last event (a sample taken as the
// recorder stops): in the default range, which is half-open, and asked for
// from just after it, the value in force there with no bucket.
TEST(ViewApi, ACounterPointAtTheTracesEndIsInItsDefaultRange) {
  model::Trace t;
  model::CounterSeries series;
  series.name = t.strings.Intern("memory");
  t.counter_series.push_back(series);
  t.counter_series.push_back(series);
  t.counters.Add(0, 1000, 1.0);
  t.counters.Add(0, 5000, 4.0);
  t.counters.Add(1, 5000, 7.0);  // a series of one point, at the end
  Api api({}, TestIndexOptions());
  api.AddOpened("synthetic", std::move(t));
  json a = ApiGet(api, "/api/v1/traces/0/counters/0", {{"pixels", "10"}});
  ASSERT_EQ(a["buckets"].size(), 2u);
  EXPECT_DOUBLE_EQ(a["buckets"][1][2].get<double>(), 4.0);
  json b = ApiGet(api, "/api/v1/traces/0/counters/1", {{"pixels", "10"}});
  ASSERT_EQ(b["buckets"].size(), 1u);
  EXPECT_DOUBLE_EQ(b["buckets"][0][1].get<double>(), 7.0);
  json after = ApiGet(api, "/api/v1/traces/0/counters/1", {{"start", "5001"}});
  EXPECT_DOUBLE_EQ(after["before"].get<double>(), 7.0);
  EXPECT_TRUE(after["buckets"].empty());
  ApiGet(api, "/api/v1/traces/0/counters/1", {{"start", "5001"}, {"end", "5001"}}, 400);
}

TEST(ViewApi, ThreadStatesPerPixel) {
  const std::string trace = RecordedTrace();
  model::Trace t = testing::Load(trace);
  if (t.thread_states.size() == 0) GTEST_SKIP() << "no scheduling states recorded here";
  Api api({trace}, TestIndexOptions());
  json info = ApiGet(api, "/api/v1/traces/0");
  std::map<uint32_t, size_t> per_track;
  for (size_t i = 0; i < t.thread_states.size(); ++i) ++per_track[t.thread_states.track[i]];
  for (const json& k : info["tracks"]) EXPECT_EQ(k["states"], per_track[k["id"].get<uint32_t>()]) << k.dump();
  uint32_t track = std::max_element(per_track.begin(), per_track.end(), [](auto& a, auto& b) {
                     return a.second < b.second;
                   })->first;
  json all = ApiGet(api, "/api/v1/traces/0/threads/" + std::to_string(track) + "/states", {{"pixels", "300"}});
  int64_t prev = INT64_MIN;
  for (const json& x : all["states"]) {
    EXPECT_GE(x[0].get<int64_t>(), prev);
    EXPECT_GT(x[1].get<int64_t>(), x[0].get<int64_t>());
    EXPECT_GE(x[0].get<int64_t>(), all["start"].get<int64_t>());
    EXPECT_LE(x[1].get<int64_t>(), all["end"].get<int64_t>());
    prev = x[1];
  }
  EXPECT_FALSE(all["states"].empty());
  EXPECT_LE(all["states"].size(), 2 * 300u + 1);
  // The longest interval of that thread, asked for alone.
  size_t best = 0;
  for (size_t i = 0; i < t.thread_states.size(); ++i)
    if (t.thread_states.track[i] == track && t.thread_states.dur[i] > t.thread_states.dur[best]) best = i;
  int64_t a = t.thread_states.ts[best], d = t.thread_states.dur[best];
  ASSERT_GT(d, 4);
  json one = ApiGet(api, "/api/v1/traces/0/threads/" + std::to_string(track) + "/states",
                 {{"start", std::to_string(a + d / 4)}, {"end", std::to_string(a + d / 2)}, {"pixels", "10"}});
  ASSERT_EQ(one["states"].size(), 1u) << one.dump();
  EXPECT_EQ(one["states"][0][2], model::ThreadStateName(t.thread_states.state[best]));
  ApiGet(api, "/api/v1/traces/0/threads/99999/states", {}, 404);
  ApiGet(api, "/api/v1/traces/0/threads/0/states", {{"pixels", "-3"}}, 400);
}

TEST(ViewApi, BadRequestsAreClientErrors) {
  Api api({RecordedTrace(), "/nonexistent/trace"}, TestIndexOptions());
  ApiGet(api, "/api/v1/nothing", {}, 404);
  ApiGet(api, "/api/v2/traces", {}, 404);
  ApiGet(api, "/", {}, 404);
  ApiGet(api, "/api/v1/traces/2", {}, 404);
  ApiGet(api, "/api/v1/traces/-1", {}, 404);
  ApiGet(api, "/api/v1/traces/zero", {}, 404);
  ApiGet(api, "/api/v1/traces/1", {}, 422);  // named, but not a trace
  ApiGet(api, "/api/v1/traces/0/nothing", {}, 404);
  ApiGet(api, "/api/v1/traces/0/viewport", {{"pixels", "abc"}}, 400);
  ApiGet(api, "/api/v1/traces/0/viewport", {{"pixels", "0"}}, 400);
  ApiGet(api, "/api/v1/traces/0/viewport", {{"pixels", "100000000"}}, 400);
  ApiGet(api, "/api/v1/traces/0/viewport", {{"start", "10"}, {"end", "5"}}, 400);
  ApiGet(api, "/api/v1/traces/0/viewport", {{"start", "1e9"}}, 400);
  ApiGet(api, "/api/v1/traces/0/viewport", {{"start", "99999999999999999999999"}}, 400);
  ApiGet(api, "/api/v1/traces/0/viewport", {{"tracks", "0,999999"}}, 400);
  ApiGet(api, "/api/v1/traces/0/viewport", {{"tracks", "0,,1"}}, 400);
  ApiGet(api, "/api/v1/traces/0/slices", {}, 400);
  ApiGet(api, "/api/v1/traces/0/slices", {{"track", "99999"}}, 400);
  ApiGet(api, "/api/v1/traces/0/slices", {{"track", "0"}, {"limit", "0"}}, 400);
  ApiGet(api, "/api/v1/traces/0/slices/abc", {}, 404);
  ApiGet(api, "/api/v1/traces/0/slices/99999999999", {}, 404);
  EXPECT_EQ(api.Handle("POST", "/api/v1/traces", {}).status, 405);
}

// A server on a free loopback port, run on a thread for the test's life.
struct Served {
  Api api;
  server::HttpServer http;
  int port = 0;
  std::thread thread;
  Served(server::ServerOptions o) : api({RecordedTrace()}, TestIndexOptions()), http(api, std::move(o)) {
    auto p = http.Bind();
    EXPECT_TRUE(p.ok()) << p.status().message();
    port = p.ok() ? *p : 0;
    thread = std::thread([this] { http.Run(); });
  }
  ~Served() {
    http.Stop();
    thread.join();
  }
  httplib::Client Client() { return httplib::Client("127.0.0.1", port); }
};

TEST(ViewHttp, ServesThePageAndTheApiOnLoopback) {
  Served s(server::ServerOptions{});
  auto c = s.Client();
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("<canvas id=\"canvas\">"), std::string::npos);
  EXPECT_NE(page->get_header_value("Content-Security-Policy").find("default-src 'self'"), std::string::npos);
  for (const char* f : {"/app.js", "/views.js", "/style.css"}) {
    auto r = c.Get(f);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << f;
    EXPECT_GT(r->body.size(), 100u) << f;
  }
  auto info = c.Get("/api/v1/traces/0");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->status, 200);
  EXPECT_EQ(info->get_header_value("Content-Type"), "application/json");
  auto vp = c.Get("/api/v1/traces/0/viewport?pixels=500&start=abc");
  ASSERT_TRUE(vp);
  EXPECT_EQ(vp->status, 400);
  // Only GET; a large body is refused before it is read whole.
  auto post = c.Post("/api/v1/traces", std::string(200 << 10, 'x'), "application/json");
  ASSERT_TRUE(post);
  EXPECT_GE(post->status, 400);
  EXPECT_LT(post->status, 500);
  // Any other Host than this server's: a page elsewhere reaching it by DNS rebinding.
  httplib::Headers evil = {{"Host", "attacker.example:" + std::to_string(s.port)}};
  auto rebound = c.Get("/api/v1/traces", evil);
  ASSERT_TRUE(rebound);
  EXPECT_EQ(rebound->status, 403);
}

TEST(ViewHttp, NoPathReachesAFile) {
  Served s(server::ServerOptions{});
  for (const char* p : {"/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/api/v1/traces/0/../../../../etc/passwd",
                        "/app.js/../../etc/passwd", "/etc/passwd", "//etc/passwd", "/api/v1/traces/0/slices/..%2f..%2f"}) {
    auto r = s.Client().Get(p);
    ASSERT_TRUE(r) << p;
    EXPECT_GE(r->status, 400) << p;
    EXPECT_EQ(r->body.find("root:"), std::string::npos) << p;
  }
  // Malformed requests on a raw socket: an error or a closed connection, and
  // the server still answers afterwards.
  for (const char* raw : {"GARBAGE\r\n\r\n", "GET\r\n\r\n", "GET / HTTP/9.9\r\nHost: x\r\n\r\n",
                          "GET /api/v1/traces HTTP/1.1\r\nContent-Length: -5\r\n\r\n"}) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(s.port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_GT(::write(fd, raw, strlen(raw)), 0);
    ::shutdown(fd, SHUT_WR);
    char buf[512];
    while (::read(fd, buf, sizeof buf) > 0) {
    }
    ::close(fd);
  }
  auto ok = s.Client().Get("/api/v1/traces");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST(ViewHttp, TokenIsRequiredWhenSet) {
  server::ServerOptions o;
  o.token = server::RandomToken();
  EXPECT_EQ(o.token.size(), 32u);
  EXPECT_NE(o.token, server::RandomToken());
  Served s(o);
  auto c = s.Client();
  auto none = c.Get("/api/v1/traces");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(c.Get("/")->status, 401);
  auto wrong = c.Get("/api/v1/traces", {{"Authorization", "Bearer " + std::string(32, '0')}});
  EXPECT_EQ(wrong->status, 401);
  auto bearer = c.Get("/api/v1/traces", {{"Authorization", "Bearer " + o.token}});
  EXPECT_EQ(bearer->status, 200);
  EXPECT_EQ(c.Get("/api/v1/traces?token=" + o.token)->status, 200);
  EXPECT_EQ(c.Get("/?token=" + o.token)->status, 200);
  EXPECT_FALSE(server::IsLoopback("0.0.0.0"));
  EXPECT_FALSE(server::IsLoopback("192.168.1.4"));
  EXPECT_TRUE(server::IsLoopback("127.0.0.1"));
  EXPECT_TRUE(server::IsLoopback("::1"));
}

TEST(ViewHttp, ConcurrentViewportQueriesAllSucceed) {
  Served s(server::ServerOptions{});
  std::atomic<int> ok{0}, bad{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c)
    clients.emplace_back([&, c] {
      auto cl = s.Client();
      for (int i = 0; i < 40; ++i) {
        auto r = cl.Get("/api/v1/traces/0/viewport?pixels=" + std::to_string(200 + 37 * c + i));
        (r && r->status == 200 ? ok : bad)++;
      }
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), 320);
  EXPECT_EQ(bad.load(), 0);
}

// The binary: `strata view --port 0` prints its URL and serves it; a
// non-loopback bind prints a token; a missing trace is one line and exit 3.
struct Child {
  pid_t pid = -1;
  int out = -1;
};
Child Spawn(const std::vector<std::string>& argv) {
  int p[2];
  if (::pipe(p) != 0) return {};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(p[1], 1);
    ::close(p[0]);
    ::close(p[1]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(p[1]);
  return {pid, p[0]};
}
std::string ReadLine(int fd) {
  std::string line;
  char c;
  while (::read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}
int Stop(pid_t pid) {
  ::kill(pid, SIGTERM);
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

TEST(ViewCommand, ServesUntilStoppedAndRefusesMissingTraces) {
  auto missing = testing::RunCommand({testing::StrataBin(), "view", "/nonexistent/trace"});
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1) << missing.err;
  EXPECT_NE(missing.err.find("no such trace"), std::string::npos) << missing.err;

  Child c = Spawn({testing::StrataBin(), "view", "--port", "0", RecordedTrace()});
  ASSERT_GT(c.pid, 0);
  std::string line = ReadLine(c.out);
  size_t at = line.find("http://127.0.0.1:");
  ASSERT_NE(at, std::string::npos) << line;
  int port = std::atoi(line.c_str() + at + 17);
  ASSERT_GT(port, 0) << line;
  httplib::Client cl("127.0.0.1", port);
  auto r = cl.Get("/api/v1/traces/0");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(Stop(c.pid), 0) << "SIGTERM ends it cleanly";
  ::close(c.out);

  // Any address but loopback: a token, printed in the URL and required.
  Child t = Spawn({testing::StrataBin(), "view", "--port", "0", "--bind", "0.0.0.0", RecordedTrace()});
  line = ReadLine(t.out);
  at = line.find("?token=");
  ASSERT_NE(at, std::string::npos) << line;
  std::string token = line.substr(at + 7);
  port = std::atoi(line.c_str() + line.find("0.0.0.0:") + 8);
  httplib::Client tc("127.0.0.1", port);
  EXPECT_EQ(tc.Get("/api/v1/traces")->status, 401);
  EXPECT_EQ(tc.Get("/api/v1/traces?token=" + token)->status, 200);
  EXPECT_EQ(Stop(t.pid), 0);
  ::close(t.out);
}

// The HTTP transport is a module loaded by the first Bind (libstrata_http.so,
// so that no other command pays for OpenSSL's set-up): without it, `view` says
// so in one line and fails.
TEST(ViewCommand, WithoutTheHttpModuleSaysSoInOneLine) {
  std::string prefix = testing::TempDir("view_no_module");
  std::filesystem::create_directories(prefix + "/bin");
  std::string bin = prefix + "/bin/strata";
  if (::link(testing::StrataBin().c_str(), bin.c_str()) != 0) GTEST_SKIP() << "cannot hard-link the binary here";
  auto r = testing::RunCommand({bin, "view", "--port", "0", RecordedTrace()}, {{"STRATA_LIB_DIR", prefix}});
  ::unlink(bin.c_str());
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("cannot load the HTTP server module"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace strata
