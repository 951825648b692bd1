#include "server/live.h"

#include <time.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/api.h"

namespace strata::server {
namespace {

using nlohmann::json;

ApiResponse Answer(int status, const json& j) {
  return {status, j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"};
}
ApiResponse Fail(int status, const std::string& message) { return Answer(status, json{{"error", message}}); }

uint64_t MonotonicNs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(t.tv_nsec);
}

json TierList(uint32_t tiers) {
  json out = json::array();
  std::string names = format::TierNames(tiers);
  if (names == "none") return out;
  size_t i = 0;
  while (i <= names.size()) {
    size_t j = names.find(',', i);
    if (j == std::string::npos) j = names.size();
    out.push_back(names.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

// The detail a window may turn on (the expensive tiers).
// (Hardware metrics are not among them yet: their window is set at the start,
// --gpu-metrics steps=A-B, since the range profiler is configured once.)
constexpr uint32_t kWindowTiers = format::kTierOps | format::kTierShapes | format::kTierCuda;

}  // namespace

StatusOr<std::unique_ptr<LiveRun>> LiveRun::Open(const std::string& dir, std::string command) {
  STRATA_ASSIGN_OR_RETURN(format::ControlFile cf, format::ControlFile::Open(dir));
  std::unique_ptr<LiveRun> r(new LiveRun());
  r->control_ = cf;
  r->dir_ = dir;
  r->command_ = std::move(command);
  r->started_ns_ = MonotonicNs();
  r->poller_ = std::thread([p = r.get()] {
    while (!p->stop_.load(std::memory_order_relaxed)) {
      p->Poll();
      timespec ts{0, 100'000'000};
      nanosleep(&ts, nullptr);
    }
  });
  return r;
}

LiveRun::~LiveRun() {
  stop_.store(true);
  if (poller_.joinable()) poller_.join();
}

void LiveRun::Poll() {
  std::vector<format::LiveStepRecord> fresh;
  std::lock_guard lock(mu_);
  format::ReadLiveSteps(control_.block(), next_, &fresh, &next_, &missed_);
  for (const format::LiveStepRecord& r : fresh) {
    uint64_t& last = last_end_[r.pid];
    steps_.push_back({r, last && r.end_ns > last ? r.end_ns - last : 0});
    last = r.end_ns;
  }
  if (steps_.size() > kMaxLiveSteps) {
    size_t drop = steps_.size() - kMaxLiveSteps / 2;
    steps_.erase(steps_.begin(), steps_.begin() + static_cast<std::ptrdiff_t>(drop));
    dropped_front_ += drop;
  }
}

void LiveRun::Finished(int exit_code, size_t trace_id) {
  Poll();
  exit_code_.store(exit_code);
  trace_id_.store(static_cast<int64_t>(trace_id));
  finished_.store(true);
}

ApiResponse LiveRun::State(uint64_t since) {
  Poll();
  const format::ControlBlock& cb = control_.block();
  json steps = json::array();
  json state;
  {
    std::lock_guard lock(mu_);
    uint64_t total = dropped_front_ + steps_.size();
    uint64_t from = std::max(since, dropped_front_);
    uint64_t to = std::min<uint64_t>(total, from + kLiveStepsPerAnswer);
    for (uint64_t i = from; i < to; ++i) {
      const format::LiveStepRecord& s = steps_[i - dropped_front_].r;
      steps.push_back({{"step", s.step},
                       {"begin_ns", s.begin_ns},
                       {"dur_ns", s.end_ns > s.begin_ns ? s.end_ns - s.begin_ns : 0},
                       {"period_ns", steps_[i - dropped_front_].period_ns},
                       {"pid", s.pid},
                       {"detail", TierList(s.tiers & kWindowTiers)}});
    }
    state["next"] = to;
    state["steps_finished"] = total;
    state["steps_missed"] = missed_;
    json asked = json::array();
    for (const Window& w : requests_) asked.push_back({{"first", w.first}, {"last", w.last}, {"detail", TierList(w.tiers)}});
    state["requests"] = std::move(asked);
  }
  int64_t first = cb.detail_first_step.load(std::memory_order_relaxed);
  bool finished = finished_.load();
  state["state"] = finished ? "finished" : "running";
  state["command"] = command_;
  state["trace_dir"] = dir_;
  state["elapsed_s"] = static_cast<double>(MonotonicNs() - started_ns_) / 1e9;
  state["current_step"] = cb.current_step.load(std::memory_order_relaxed);
  state["tiers"] = TierList(format::GetTiers(cb));
  state["cuda_activity"] =
      format::CudaActivityName(static_cast<format::CudaActivity>(cb.cuda_activity.load(std::memory_order_relaxed)));
  state["window"] = first < 0 ? json(nullptr)
                              : json{{"first", first},
                                     {"last", cb.detail_last_step.load(std::memory_order_relaxed)},
                                     {"detail", TierList(format::WindowTiers(cb))}};
  if (finished) {
    state["exit_code"] = exit_code_.load();
    state["trace"] = trace_id_.load();
  }
  state["steps"] = std::move(steps);
  return Answer(200, state);
}

ApiResponse LiveRun::Request(std::string_view body) {
  if (finished_.load()) return Fail(409, "the program has ended: nothing more can be recorded");
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Fail(400, "the body must be a JSON object, e.g. {\"steps\": 20, \"detail\": [\"ops\"]}");
  for (const auto& [key, value] : j.items())
    if (key != "steps" && key != "detail") return Fail(400, "unknown field '" + key + "' (steps, detail)");
  const json* steps = j.contains("steps") ? &j["steps"] : nullptr;
  if (!steps || !steps->is_number_integer() || steps->get<int64_t>() < 1 || steps->get<int64_t>() > kMaxWindowSteps)
    return Fail(400, "steps must be a whole number from 1 to " + std::to_string(kMaxWindowSteps));
  const json* detail = j.contains("detail") ? &j["detail"] : nullptr;
  if (!detail || !detail->is_array() || detail->empty())
    return Fail(400, "detail must be a list of tiers: ops, shapes, cuda");
  std::string list;
  for (const json& d : *detail) {
    if (!d.is_string()) return Fail(400, "detail must be a list of strings");
    list += (list.empty() ? "" : ",") + d.get<std::string>();
  }
  auto tiers = format::ParseTiers(list);
  if (!tiers.ok()) return Fail(400, tiers.status().message());
  if (*tiers & ~kWindowTiers)
    return Fail(400, "a window turns on ops, shapes or cuda (hardware metrics: --gpu-metrics steps=A-B at the start)");
  int64_t first = 0, last = 0;
  control_.RequestNextSteps(steps->get<int64_t>(), *tiers, &first, &last);
  json window = {{"first", first}, {"last", last}, {"detail", TierList(*tiers)}};
  {
    std::lock_guard lock(mu_);
    requests_.push_back({first, last, *tiers});
  }
  return Answer(200, {{"window", window}, {"generation", control_.generation()}});
}

}  // namespace strata::server
