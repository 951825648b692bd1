#include "server/live.h"

#include <time.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "server/api.h"
#include "server/responses.h"

namespace strata::server {
namespace {

using nlohmann::json;


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
  r->started_ns_ = strata::MonotonicNs();
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

void LiveRun::Close(uint32_t pid, bool predicted) {
  auto it = open_.find(pid);
  if (it == open_.end() || it->second.optimizers.empty()) return;
  Under& o = it->second;
  size_t n = o.optimizers.size();
  if (!predicted) period_ = n == last_group_ ? n : 0;  // learned from two alike in a row
  last_group_ = n;
  format::LiveStepRecord r = o.first;
  // Explicit steps keep the program's own numbers; optimizer steps are counted.
  int64_t& number = iteration_[pid];
  if (o.first.optimizer == 0) number = o.first.step;
  r.step = number++;
  last_closed_[pid] = o.last.step;
  r.end_ns = o.last.end_ns;
  r.tiers = o.tiers;
  uint64_t& last = last_end_[pid];
  steps_.push_back({r, last && r.end_ns > last ? r.end_ns - last : 0, o.first.step, o.last.step});
  last = r.end_ns;
  o = Under();
}

void LiveRun::Add(const format::LiveStepRecord& r) {
  last_pid_ = r.pid;
  Under& o = open_[r.pid];
  if (r.optimizer == 0 || std::find(o.optimizers.begin(), o.optimizers.end(), r.optimizer) != o.optimizers.end())
    Close(r.pid, false);  // (an explicit step is an iteration of its own)
  Under& g = open_[r.pid];
  if (g.optimizers.empty()) g.first = r;
  g.optimizers.push_back(r.optimizer);
  g.last = r;
  g.tiers |= r.tiers;
  if (r.optimizer == 0 || (period_ && g.optimizers.size() == period_)) Close(r.pid, true);
}

void LiveRun::Poll() {
  std::vector<format::LiveStepRecord> fresh;
  std::lock_guard lock(mu_);
  format::ReadLiveSteps(control_.block(), next_, &fresh, &next_, &missed_);
  for (const format::LiveStepRecord& r : fresh) Add(r);
  if (steps_.size() > kMaxLiveSteps) {
    size_t drop = steps_.size() - kMaxLiveSteps / 2;
    steps_.erase(steps_.begin(), steps_.begin() + static_cast<std::ptrdiff_t>(drop));
    dropped_front_ += drop;
  }
}

void LiveRun::Finished(int exit_code, size_t trace_id) {
  Poll();
  {
    std::lock_guard lock(mu_);
    std::vector<uint32_t> pids;
    for (const auto& [pid, o] : open_) pids.push_back(pid);
    for (uint32_t pid : pids) Close(pid, true);
  }
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
                       {"steps", {steps_[i - dropped_front_].first_step, steps_[i - dropped_front_].last_step}},
                       {"detail", TierList(s.tiers & kWindowTiers)}});
    }
    state["next"] = to;
    state["steps_finished"] = total;
    state["steps_missed"] = missed_;
    json asked = json::array();
    for (const Window& w : requests_) asked.push_back({{"first", w.first}, {"last", w.last}, {"detail", TierList(w.tiers)}});
    state["requests"] = std::move(asked);
    state["period"] = period_;
    state["current_step"] = iteration_.count(last_pid_) ? iteration_[last_pid_] : 0;
  }
  int64_t first = cb.detail_first_step.load(std::memory_order_relaxed);
  bool finished = finished_.load();
  state["state"] = finished ? "finished" : "running";
  state["command"] = command_;
  state["trace_dir"] = dir_;
  state["elapsed_s"] = static_cast<double>(strata::MonotonicNs() - started_ns_) / 1e9;
  state["process_step"] = cb.current_step.load(std::memory_order_relaxed);
  state["tiers"] = TierList(format::GetTiers(cb));
  state["cuda_activity"] =
      format::CudaActivityName(static_cast<format::CudaActivity>(cb.cuda_activity.load(std::memory_order_relaxed)));
  // The window in iterations when it is the one asked for here; else (set by
  // `strata ctl`) in the traced processes' steps.
  json window = nullptr;
  if (first >= 0) {
    window = {{"first", first},
              {"last", cb.detail_last_step.load(std::memory_order_relaxed)},
              {"detail", TierList(format::WindowTiers(cb))},
              {"in", "process steps"}};
    std::lock_guard lock(mu_);
    if (!requests_.empty() && requests_.back().step_first == first)
      window = {{"first", requests_.back().first}, {"last", requests_.back().last},
                {"detail", TierList(requests_.back().tiers)}, {"in", "iterations"}};
  }
  state["window"] = std::move(window);
  if (finished) {
    state["exit_code"] = exit_code_.load();
    state["trace"] = trace_id_.load();
  }
  state["steps"] = std::move(steps);
  return Ok(state);
}

ApiResponse LiveRun::Request(std::string_view body) {
  if (finished_.load()) return Error(409, "the program has ended: nothing more can be recorded");
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Error(400, "the body must be a JSON object, e.g. {\"steps\": 20, \"detail\": [\"ops\"]}");
  for (const auto& [key, value] : j.items())
    if (key != "steps" && key != "detail") return Error(400, "unknown field '" + key + "' (steps, detail)");
  const json* steps = j.contains("steps") ? &j["steps"] : nullptr;
  if (!steps || !steps->is_number_integer() || steps->get<int64_t>() < 1 || steps->get<int64_t>() > kMaxWindowSteps)
    return Error(400, "steps must be a whole number from 1 to " + std::to_string(kMaxWindowSteps));
  const json* detail = j.contains("detail") ? &j["detail"] : nullptr;
  if (!detail || !detail->is_array() || detail->empty())
    return Error(400, "detail must be a list of tiers: ops, shapes, cuda");
  std::string list;
  for (const json& d : *detail) {
    if (!d.is_string()) return Error(400, "detail must be a list of strings");
    list += (list.empty() ? "" : ",") + d.get<std::string>();
  }
  auto tiers = format::ParseTiers(list);
  if (!tiers.ok()) return Error(400, tiers.status().message());
  if (*tiers & ~kWindowTiers)
    return Error(400, "a window turns on ops, shapes or cuda (hardware metrics: --gpu-metrics steps=A-B at the start)");
  // From the next iteration on: the process's step now is the k-th of the
  // iteration under way (k optimizer steps of it have ended).
  Poll();
  const int64_t n = steps->get<int64_t>();
  std::lock_guard lock(mu_);
  const int64_t per = static_cast<int64_t>(period_ ? period_ : std::max<size_t>(1, last_group_));
  const auto open = open_.find(last_pid_);
  const int64_t k = open == open_.end() ? 0 : static_cast<int64_t>(open->second.optimizers.size());
  const int64_t now = control_.current_step();
  const int64_t it = iteration_.count(last_pid_) ? iteration_[last_pid_] : 0;
  const int64_t closed = last_closed_.count(last_pid_) ? last_closed_[last_pid_] : -1;
  // A step under way (always, between PyTorch's found steps; not between two
  // explicit ones): the window starts with the iteration after it.
  const bool under_way = now > closed;
  const int64_t step_first = now < 0 ? 0 : under_way ? now - k + per : now + 1;
  const int64_t step_last = step_first + n * per - 1;
  const int64_t first = now < 0 ? 0 : under_way ? it + 1 : it, last = first + n - 1;
  control_.Set(control_.tiers(), step_first, step_last, *tiers, control_.cuda_activity());
  requests_.push_back({first, last, *tiers, step_first, step_last});
  json window = {{"first", first}, {"last", last}, {"detail", TierList(*tiers)},
                 {"steps", {step_first, step_last}}, {"in", "iterations"}};
  return Ok({{"window", window}, {"generation", control_.generation()}});
}

}  // namespace strata::server
