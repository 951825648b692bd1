#include "collectors/cupti/activity_window.h"

#include <algorithm>

#include "collectors/cupti/collector_session.h"
#include "recorder/runtime.h"

namespace strata::cupti {
namespace {

// A named instant on the calling thread: where a window opened or closed.
void Mark(const char* what) {
  uint32_t name = recorder::Intern(what);
  if (name) recorder::EmitThreadEvent(format::kInstant, &name, sizeof name);
}

}  // namespace

ActivityWindow::ActivityWindow(const CuptiApi* api, std::vector<CUpti_ActivityKind> kinds,
                               const format::ControlBlock* control)
    : api_(api), kinds_(std::move(kinds)), control_(control) {}

bool ActivityWindow::Wanted(int64_t step) const {
  return control_ == nullptr || format::CudaActivityWanted(*control_, step);
}

void ActivityWindow::Start() {
  std::lock_guard sw(switch_mu_);
  uint64_t cur = recorder::CurrentStep();
  int64_t step = cur == UINT64_MAX ? -1 : static_cast<int64_t>(cur);
  seen_step_.store(step, std::memory_order_relaxed);
  if (Wanted(step)) Switch(true, step);
}

void ActivityWindow::NoteCall(uint32_t correlation, int64_t step) {
  std::lock_guard lock(mu_);
  if (windows_.empty() || windows_.back().closed) return;
  step_of_[correlation] = step;
  ++windows_.back().api_calls;
}

void ActivityWindow::StepChanged(uint32_t correlation, int64_t step) {
  {
    std::lock_guard sw(switch_mu_);
    if (seen_step_.load(std::memory_order_relaxed) != step) {
      seen_step_.store(step, std::memory_order_relaxed);
      if (step < 0 && last_step_.load(std::memory_order_relaxed) >= 0) {
        // Between two steps (explicit marks leave gaps): the window stays as it is.
        if (attributing_.load(std::memory_order_relaxed))
          NoteCall(correlation, last_step_.load(std::memory_order_relaxed));
        return;
      }
      if (step >= 0) last_step_.store(step, std::memory_order_relaxed);
      bool want = Wanted(step);
      if (want != open_.load(std::memory_order_relaxed)) Switch(want, step);
      if (want) {
        std::lock_guard lock(mu_);
        if (!windows_.empty() && !windows_.back().closed) windows_.back().last_step = step;
      }
    }
  }
  if (attributing_.load(std::memory_order_relaxed)) NoteCall(correlation, step);
}

void ActivityWindow::Switch(bool on, int64_t step) {
  if (on) {
    {
      std::lock_guard lock(mu_);
      // Records of windows before the last one have arrived long since: their
      // launches are let go (the last window's kernels may still be running).
      if (!windows_.empty()) {
        int64_t keep_from = windows_.back().first_step;
        std::erase_if(step_of_, [keep_from](const auto& e) { return e.second < keep_from; });
      }
      Window w;
      w.first_step = w.last_step = step;
      windows_.push_back(w);
    }
    for (size_t i = 0; i < kinds_.size(); ++i) {
      CUptiResult r = api_->enable_kind ? api_->enable_kind(kinds_[i]) : CUPTI_ERROR_NOT_SUPPORTED;
      if (r != CUPTI_SUCCESS && i == 0) {
        std::lock_guard lock(mu_);
        problem_ = CuptiError("cuptiActivityEnable", r) + " at step " + std::to_string(step);
      }
    }
    open_.store(true, std::memory_order_relaxed);
    attributing_.store(control_ && control_->cuda_activity.load(std::memory_order_relaxed) !=
                                       static_cast<uint32_t>(format::CudaActivity::kAll),
                       std::memory_order_relaxed);
    // (Open for the whole run, --cuda-activity all, is not marked.)
    if (attributing_.load(std::memory_order_relaxed)) Mark("CUDA activity on");
    return;
  }
  open_.store(false, std::memory_order_relaxed);
  attributing_.store(false, std::memory_order_relaxed);
  for (CUpti_ActivityKind k : kinds_)
    if (api_->disable_kind) (void)api_->disable_kind(k);
  Mark("CUDA activity off");
  // The window's completed buffers now (decoded on this thread, through
  // OnRecord, which takes mu_ but not switch_mu_); its last kernels may still
  // run, and come with a later buffer.
  if (api_->flush_all) (void)api_->flush_all(0);
  std::lock_guard lock(mu_);
  if (!windows_.empty()) windows_.back().closed = true;
}

void ActivityWindow::OnRecord(uint32_t correlation) {
  std::lock_guard lock(mu_);
  auto it = step_of_.find(correlation);
  if (it == step_of_.end()) {
    ++unattributed_;
    return;
  }
  int64_t step = it->second;
  step_of_.erase(it);
  // The window the step belongs to: the last one that began at or before it.
  for (auto w = windows_.rbegin(); w != windows_.rend(); ++w)
    if (w->first_step <= step) {
      ++w->records;
      ++w->records_by_step[step];
      return;
    }
  ++unattributed_;
}

void ActivityWindow::OnDropped(uint64_t n) {
  if (!n) return;
  std::lock_guard lock(mu_);
  if (windows_.empty()) unattributed_ += n;
  else windows_.back().dropped += n;
}

void ActivityWindow::Finish() {
  std::lock_guard sw(switch_mu_);
  open_.store(false, std::memory_order_relaxed);
  attributing_.store(false, std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  if (!windows_.empty()) windows_.back().closed = true;
}

std::vector<ActivityWindow::Window> ActivityWindow::windows() const {
  std::lock_guard lock(mu_);
  return windows_;
}

uint64_t ActivityWindow::unattributed() const {
  std::lock_guard lock(mu_);
  return unattributed_;
}

std::string ActivityWindow::problem() const {
  std::lock_guard lock(mu_);
  return problem_;
}

std::string ActivityWindow::Describe() const {
  std::lock_guard lock(mu_);
  uint64_t records = 0, dropped = 0;
  std::string spans;
  size_t listed = 0;
  for (const Window& w : windows_) {
    records += w.records;
    dropped += w.dropped;
    if (listed++ == 8) spans += ", ...";
    if (listed > 8) continue;
    std::string span = w.first_step < 0 ? std::string("before the first step")
                       : w.first_step == w.last_step ? std::to_string(w.first_step)
                                                     : std::to_string(w.first_step) + "-" + std::to_string(w.last_step);
    spans += (spans.empty() ? "" : ", ") + span;
  }
  std::string out = std::to_string(windows_.size()) + " window" + (windows_.size() == 1 ? "" : "s") +
                    (spans.empty() ? "" : " (steps " + spans + ")") + ": " + std::to_string(records) +
                    " device records attributed to their steps";
  if (unattributed_) out += ", " + std::to_string(unattributed_) + " not attributed";
  if (dropped) out += ", " + std::to_string(dropped) + " dropped in windows";
  return out;
}

}  // namespace strata::cupti
