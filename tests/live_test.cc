// The live side of the REST API (server/live.h): `strata record --serve`
// shows steps as they finish and turns a POST /api/v1/record into a step
// window of the recording's control block. First on a control file written
// here (bad requests, the window set from the step the program is in, the
// state once the program ended), then over HTTP (no cross-site POST), then on
// a real PyTorch training loop: detail asked for three steps while it runs,
// recorded in those three steps and no other.
#include <gtest/gtest.h>

#include <httplib.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "base/files.h"
#include "format/control.h"
#include "server/api.h"
#include "server/http_server.h"
#include "server/live.h"
#include "tests/testing.h"
#include "tests/view_testing.h"

namespace strata {
namespace {

using nlohmann::json;
using server::Api;

struct LiveFixture {
  std::string dir;
  format::ControlBlock* cb = nullptr;
  std::unique_ptr<server::LiveRun> live;
  Api api{{}, {}};
  // `before`: what the traced processes wrote before the server started reading.
  explicit LiveFixture(const std::string& name, const std::function<void(format::ControlBlock*)>& before = {})
      : dir(testing::TempDir(name)) {
    EXPECT_TRUE(MakeDirs(dir).ok());
    auto block = std::make_unique<format::ControlBlock>();
    format::InitControlBlock(block.get());
    block->ops_mode.store(static_cast<uint32_t>(format::OpsMode::kOff));
    EXPECT_TRUE(format::WriteControlFile(dir + "/control", *block).ok());
    auto m = format::MapControlFile(dir + "/control");  // the traced process's side
    EXPECT_TRUE(m.ok());
    cb = *m;
    if (before) before(cb);
    auto l = server::LiveRun::Open(dir, "python train.py");
    EXPECT_TRUE(l.ok()) << l.status().message();
    live = std::move(l).value();
    api.SetLive(live.get());
  }
  json Get(const std::string& path, const std::multimap<std::string, std::string>& params = {}, int want = 200) {
    return testing::ApiGet(api, path, params, want);
  }
  server::ApiResponse Post(const std::string& body) { return api.Handle("POST", "/api/v1/record", {}, body); }
};

TEST(LiveApi, StepsAsTheyFinishAndDetailForTheNextSteps) {
  LiveFixture f("live_api");
  // A process steps: 0..4 finished, 5 under way; step 3 was recorded with ops.
  for (int64_t s = 0; s < 5; ++s) {
    format::PublishStepBegin(f.cb, s);
    format::PublishStepEnd(f.cb, s, 1000 + 100 * s, 1050 + 100 * s, 42, s == 3 ? uint32_t{format::kTierOps} : 0u);
  }
  format::PublishStepBegin(f.cb, 5);
  json j = f.Get("/api/v1/live");
  EXPECT_EQ(j["state"], "running");
  EXPECT_EQ(j["current_step"], 5);
  EXPECT_EQ(j["steps_finished"], 5);
  ASSERT_EQ(j["steps"].size(), 5u);
  EXPECT_EQ(j["steps"][3]["detail"], json::array({"ops"}));
  EXPECT_EQ(j["steps"][2]["detail"], json::array());
  EXPECT_EQ(j["steps"][1]["dur_ns"], 50);
  EXPECT_EQ(j["steps"][1]["period_ns"], 100) << "from the previous step's end";
  EXPECT_EQ(j["window"], nullptr);
  // Polling from where the last answer ended gives only what is new.
  EXPECT_EQ(f.Get("/api/v1/live", {{"since", std::to_string(j["next"].get<int>())}})["steps"].size(), 0u);
  EXPECT_EQ(f.Get("/api/v1/live", {{"since", "3"}})["steps"].size(), 2u);
  f.Get("/api/v1/live", {{"since", "-1"}}, 400);

  // Bad requests: a 400 that says why, and nothing changes.
  uint32_t gen = f.cb->generation.load();
  for (const char* bad : {"", "not json", "[]", "{\"steps\": 3}", "{\"detail\": [\"ops\"]}",
                          "{\"steps\": 0, \"detail\": [\"ops\"]}", "{\"steps\": 1e9, \"detail\": [\"ops\"]}",
                          "{\"steps\": 3.5, \"detail\": [\"ops\"]}", "{\"steps\": 3, \"detail\": []}",
                          "{\"steps\": 3, \"detail\": [\"bogus\"]}", "{\"steps\": 3, \"detail\": [\"memory\"]}",
                          "{\"steps\": 3, \"detail\": [\"gpu-metrics\"]}", "{\"steps\": 3, \"detail\": \"ops\"}",
                          "{\"steps\": 3, \"detail\": [\"ops\"], \"extra\": 1}"}) {
    server::ApiResponse r = f.Post(bad);
    EXPECT_EQ(r.status, 400) << bad << ": " << r.body;
    EXPECT_NE(json::parse(r.body)["error"].get<std::string>(), "") << bad;
  }
  EXPECT_EQ(f.cb->generation.load(), gen);
  EXPECT_EQ(f.api.Handle("GET", "/api/v1/record", {}).status, 405);

  // The next 3 steps after the one under way (5): 6..8, with ops and CUDA activity.
  server::ApiResponse ok = f.Post(R"({"steps": 3, "detail": ["ops", "cuda"]})");
  ASSERT_EQ(ok.status, 200) << ok.body;
  json w = json::parse(ok.body)["window"];
  EXPECT_EQ(w["first"], 6);
  EXPECT_EQ(w["last"], 8);
  EXPECT_EQ(f.cb->detail_first_step.load(), 6);
  EXPECT_EQ(f.cb->detail_last_step.load(), 8);
  EXPECT_EQ(f.cb->window_tiers.load(), format::kTierOps | format::kTierCuda);
  EXPECT_GT(f.cb->generation.load(), gen) << "published to the traced processes";
  EXPECT_EQ(f.cb->ops_mode.load(), static_cast<uint32_t>(format::OpsMode::kOff)) << "the baseline stays as it was";
  EXPECT_TRUE(format::CudaActivityWanted(*f.cb, 7));
  j = f.Get("/api/v1/live");
  EXPECT_EQ(j["window"]["first"], 6);
  EXPECT_EQ(j["requests"].size(), 1u);

  // The program ends: its trace is served, and nothing more can be asked.
  f.live->Finished(0, 0);
  j = f.Get("/api/v1/live");
  EXPECT_EQ(j["state"], "finished");
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_EQ(j["trace"], 0);
  EXPECT_EQ(f.Post(R"({"steps": 3, "detail": ["ops"]})").status, 409);

  // `strata view` has no live run.
  Api plain({}, {});
  EXPECT_EQ(plain.Handle("GET", "/api/v1/live", {}).status, 404);
  EXPECT_EQ(plain.Handle("POST", "/api/v1/record", {}, R"({"steps": 3, "detail": ["ops"]})").status, 409);
}

TEST(LiveApi, SeveralOptimizersStepsAreOneIteration) {
  LiveFixture f("live_gan");
  // A GAN: the discriminator's (optimizer 0) then the generator's (1) step, per
  // iteration; the traced process ends a step at each. Steps 0..6 ended, 7 under way.
  for (int64_t s = 0; s < 7; ++s) {
    format::PublishStepBegin(f.cb, s);
    format::PublishStepEnd(f.cb, s, 1000 + 100 * s, 1050 + 100 * s, 42, s == 5 ? format::kTierOps : 0u,
                           static_cast<uint32_t>(s % 2) + 1);
  }
  format::PublishStepBegin(f.cb, 7);
  json j = f.Get("/api/v1/live");
  ASSERT_EQ(j["steps"].size(), 3u) << "iterations {0,1} {2,3} {4,5}; {6,7} under way: " << j.dump();
  EXPECT_EQ(j["steps"][2]["step"], 2);
  EXPECT_EQ(j["steps"][2]["steps"], json::array({4, 5}));
  EXPECT_EQ(j["steps"][2]["detail"], json::array({"ops"})) << "the iteration has what any of its steps had";
  EXPECT_EQ(j["steps"][1]["begin_ns"], 1200);
  EXPECT_EQ(j["steps"][1]["dur_ns"], 1350 - 1200);
  EXPECT_EQ(j["period"], 2);
  EXPECT_EQ(j["current_step"], 3);
  // The next 2 iterations (4 and 5) are the process's steps 8..11.
  server::ApiResponse ok = f.Post(R"({"steps": 2, "detail": ["ops"]})");
  ASSERT_EQ(ok.status, 200) << ok.body;
  json w = json::parse(ok.body)["window"];
  EXPECT_EQ(w["first"], 4);
  EXPECT_EQ(w["last"], 5);
  EXPECT_EQ(w["steps"], json::array({8, 11}));
  EXPECT_EQ(f.cb->detail_first_step.load(), 8);
  EXPECT_EQ(f.cb->detail_last_step.load(), 11);
  EXPECT_EQ(f.Get("/api/v1/live")["window"]["in"], "iterations");
  // The program ends: the iteration under way is listed too.
  format::PublishStepEnd(f.cb, 7, 1700, 1750, 42, 0, 2);
  f.live->Finished(0, 0);
  EXPECT_EQ(f.Get("/api/v1/live")["steps"].size(), 4u);
}

TEST(LiveApi, RingOverrunIsCountedNotMisread) {
  // More steps than the ring holds before anyone reads (written before the
  // server's poller starts): the oldest are missed, and counted.
  const uint64_t n = format::kLiveSteps + 100;
  LiveFixture f("live_ring", [n](format::ControlBlock* cb) {
    for (uint64_t s = 0; s < n; ++s) format::PublishStepEnd(cb, static_cast<int64_t>(s), s * 10, s * 10 + 5, 1, 0);
  });
  json j = f.Get("/api/v1/live");
  EXPECT_EQ(j["steps_missed"].get<uint64_t>() + j["steps_finished"].get<uint64_t>(), n);
  EXPECT_EQ(j["steps_missed"], 100);
  EXPECT_EQ(j["steps"][0]["step"], 100) << "the oldest still in the ring";
}

TEST(LiveHttp, RecordRequestsMustBeJsonFromThisOrigin) {
  LiveFixture f("live_http");
  server::HttpServer http(f.api, server::ServerOptions{});
  auto port = http.Bind();
  ASSERT_TRUE(port.ok());
  std::thread t([&] { http.Run(); });
  httplib::Client c("127.0.0.1", *port);
  const std::string body = R"({"steps": 2, "detail": ["ops"]})";
  // A page elsewhere can send text/plain without asking (no CORS preflight): refused.
  auto plain = c.Post("/api/v1/record", body, "text/plain");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->status, 415);
  httplib::Headers other = {{"Origin", "http://attacker.example"}};
  auto cross = c.Post("/api/v1/record", other, body, "application/json");
  ASSERT_TRUE(cross);
  EXPECT_EQ(cross->status, 403);
  httplib::Headers same = {{"Origin", "http://127.0.0.1:" + std::to_string(*port)}};
  auto ok = c.Post("/api/v1/record", same, body, "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  // POST anywhere else is still refused.
  auto elsewhere = c.Post("/api/v1/traces", body, "application/json");
  ASSERT_TRUE(elsewhere);
  EXPECT_EQ(elsewhere->status, 405);
  auto live = c.Get("/api/v1/live");
  ASSERT_TRUE(live);
  EXPECT_EQ(live->status, 200);
  http.Stop();
  t.join();
}

// A real PyTorch training loop under `strata record --serve --ops off`: steps
// appear while it runs; ops asked for the next 3 steps are recorded in those
// steps only, in the live view and in the trace served after the end.
TEST(LiveRecord, DetailOnDemandForTheNextStepsOfAPyTorchLoop) {
  REQUIRE_TORCH();
  std::string dir = testing::TempDir("live_torch");
  std::string err = dir + ".err";
  const char* script =
      "import time, torch, torch.nn as nn\n"
      "torch.manual_seed(0)\n"
      "model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))\n"
      "opt = torch.optim.SGD(model.parameters(), lr=0.01)\n"
      "x = torch.randn(32, 64); y = torch.randint(0, 10, (32,))\n"
      "for i in range(60):\n"
      "    opt.zero_grad()\n"
      "    nn.functional.cross_entropy(model(x), y).backward()\n"
      "    opt.step()\n"
      "    time.sleep(0.05)\n";
  std::thread rec([&] {
    testing::RunCommand({"sh", "-c",
                         testing::StrataBin() + " record --serve --port 0 --ops off -o " + dir + " -- " +
                             testing::kPython + " -c '" + script + "' 2> " + err},
                        {}, 120);
  });
  // The URL, once serving.
  int port = 0;
  std::regex url("serving the live run at http://127\\.0\\.0\\.1:([0-9]+)/");
  for (int i = 0; i < 300 && !port; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto read = ReadFile(err);
    std::string text = read.ok() ? *read : "";
    std::smatch m;
    if (std::regex_search(text, m, url)) port = std::stoi(m[1]);
  }
  ASSERT_NE(port, 0) << "no URL printed";
  httplib::Client c("127.0.0.1", port);
  auto live = [&] {
    auto r = c.Get("/api/v1/live");
    return r && r->status == 200 ? json::parse(r->body) : json::object();
  };
  json j;
  for (int i = 0; i < 400; ++i) {  // steps appear as they finish
    j = live();
    if (j.value("steps_finished", 0) >= 5) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GE(j.value("steps_finished", 0), 5) << j.dump();
  EXPECT_EQ(j["state"], "running");
  auto asked = c.Post("/api/v1/record", R"({"steps": 3, "detail": ["ops"]})", "application/json");
  ASSERT_TRUE(asked);
  ASSERT_EQ(asked->status, 200) << asked->body;
  int64_t first = json::parse(asked->body)["window"]["first"];
  for (int i = 0; i < 600; ++i) {
    j = live();
    if (j.value("state", "") == "finished") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(j["state"], "finished");
  EXPECT_EQ(j["steps_finished"], 60);
  for (const json& s : j["steps"]) {
    int64_t n = s["step"];
    bool in = n >= first && n < first + 3;
    EXPECT_EQ(s["detail"], in ? json::array({"ops"}) : json::array()) << "step " << n;
  }
  // The trace served after the end: the two Linear layers' matmuls in those 3 steps, no other.
  auto search = c.Get("/api/v1/traces/" + std::to_string(j["trace"].get<int>()) + "/search?q=aten::addmm");
  ASSERT_TRUE(search);
  ASSERT_EQ(search->status, 200) << search->body;
  EXPECT_EQ(json::parse(search->body)["matches"], 3 * 2);
  testing::RunCommand({"pkill", "-INT", "-f", "strata record --serve --port 0 --ops off -o " + dir});
  rec.join();
  model::Trace t = testing::Load(dir);
  EXPECT_EQ(testing::CountSlices(t, "aten::addmm"), 6u);
}

}  // namespace
}  // namespace strata
