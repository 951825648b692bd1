// CUDA device activity in windows of steps (collectors/cupti/activity_window.h),
// on CUPTI's real record structs: the window enables every device kind when a
// step wants activity, disables them and flushes when it no longer does;
// records are attributed to the step of their launch, even when they arrive
// after their window closed; drops are counted against the window; and the
// control block (sampled steps, a window asked for while the program runs)
// decides which steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "recorder/runtime.h"
#include "tests/cupti_harness.h"

namespace strata {
namespace {

using namespace cupti_harness;  // NOLINT: the harness is this test's vocabulary

// One launch in `step` (begun if not yet), through the callback API.
void Launch(cupti::Session& s, uint32_t correlation) {
  static cudaLaunchKernel_v7000_params rt{};
  rt.gridDim = {1, 1, 1};
  rt.blockDim = {32, 1, 1};
  Call(s, {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &rt, "_Z1kv", correlation});
}

int Count(const std::vector<CUpti_ActivityKind>& v, CUpti_ActivityKind k) {
  return static_cast<int>(std::count(v.begin(), v.end(), k));
}

void Sampled(format::ControlBlock* cb, uint32_t every) {
  format::InitControlBlock(cb);
  cb->cuda_activity.store(static_cast<uint32_t>(format::CudaActivity::kSampled));
  cb->cuda_sample_every.store(every);
}

// Exit codes of the scenario process say which check failed there.
enum : int { kBadSwitches = 20, kBadAttribution = 21, kBadDrops = 22 };

TEST_F(Cupti, DeviceActivityIsRecordedInWindowsOfSteps) {
  // One step in 4 (steps 2 and 6), and steps 8-9 asked for while it runs.
  format::ControlBlock control;
  Sampled(&control, 4);
  model::Trace t = RunScenario(
      "cupti_window",
      [](cupti::Session& s) {
        auto* cb = const_cast<format::ControlBlock*>(recorder::Control());
        if (!cb || !s.window()) ::_exit(kBadSwitches);
        // Nothing before the first step: the device kinds were tried once, then switched off.
        int enabled0 = Count(Fake::enabled, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        if (enabled0 != 1 || Count(Fake::disabled, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != 1 || s.window()->open())
          ::_exit(kBadSwitches);
        uint64_t t0 = Now();
        std::vector<int> open_in(10), flushes_after(10);
        for (uint32_t step = 0; step < 10; ++step) {
          if (step == 7) {  // what `strata ctl --detail cuda --steps 8-9` writes
            cb->window_tiers.store(format::kTierCuda);
            cb->detail_first_step.store(8);
            cb->detail_last_step.store(9);
            cb->generation.fetch_add(1);
          }
          recorder::MarkStep(step, true);
          Launch(s, 100 + step);
          Launch(s, 200 + step);
          open_in[step] = s.window()->open();
          recorder::MarkStep(step, false);
          Launch(s, 300 + step);  // between steps: belongs to the step just ended
          flushes_after[step] = Fake::flushes;
          // CUPTI delivers what it recorded: only launches made in windows.
          if (step == 2) {
            Fake::dropped_next = 7;  // and it had no room for 7 more
            Buffer(s).Add(Kernel(102, t0 + 1000, 100, 7, "k")).Complete();
          }
          if (step == 3) Buffer(s).Add(Kernel(302, t0 + 3000, 100, 7, "k")).Complete();  // after its window closed
          if (step == 6) Buffer(s).Add(Kernel(106, t0 + 6000, 100, 7, "k")).Add(Kernel(206, t0 + 6200, 100, 7, "k")).Complete();
        }
        Buffer(s)
            .Add(Kernel(108, t0 + 8000, 100, 7, "k"))
            .Add(Kernel(109, t0 + 9000, 100, 7, "k"))
            .Add(Kernel(555, t0 + 9500, 100, 7, "unknown"))  // a launch the window never saw
            .Complete();
        std::vector<int> want_open = {0, 0, 1, 0, 0, 0, 1, 0, 1, 1};
        if (open_in != want_open) ::_exit(kBadSwitches);
        // Enabled at steps 2, 6 and 8; disabled (and flushed) at 3 and 7; 9 stays open.
        if (Count(Fake::enabled, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != enabled0 + 3 ||
            Count(Fake::disabled, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != 1 + 2 ||
            Count(Fake::enabled, CUPTI_ACTIVITY_KIND_MEMCPY) != 1 + 3 || flushes_after[2] != 0 ||
            flushes_after[3] != 1 || flushes_after[6] != 1 || flushes_after[7] != 2 || flushes_after[9] != 2)
          ::_exit(kBadSwitches);
        auto ws = s.window()->windows();
        if (ws.size() != 3 || ws[0].first_step != 2 || ws[0].last_step != 2 || ws[1].first_step != 6 ||
            ws[2].first_step != 8 || ws[2].last_step != 9)
          ::_exit(kBadSwitches);
        using Steps = std::map<int64_t, uint64_t>;
        if (ws[0].records_by_step != Steps{{2, 2}} || ws[1].records_by_step != Steps{{6, 2}} ||
            ws[2].records_by_step != Steps{{8, 1}, {9, 1}} || s.window()->unattributed() != 1)
          ::_exit(kBadAttribution);
        if (ws[0].dropped != 7 || ws[1].dropped != 0) ::_exit(kBadDrops);
      },
      nullptr, &control);
  // Every record CUPTI delivered is in the trace, on its stream.
  EXPECT_EQ(Slices(t, SliceKind::kKernel).size(), 7u);
  // The windows are marked where they opened and closed.
  int on = 0, off = 0;
  for (size_t i = 0; i < t.instants.size(); ++i) {
    on += t.strings.Get(t.instants.name[i]) == "CUDA activity on";
    off += t.strings.Get(t.instants.name[i]) == "CUDA activity off";
  }
  EXPECT_EQ(on, 3);
  EXPECT_EQ(off, 2);
  const auto* st = Collector(t, "cuda");
  ASSERT_NE(st, nullptr);
  EXPECT_NE(st->detail.find("device activity sampled: 3 windows (steps 2, 6, 8-9): 6 device records attributed to "
                            "their steps, 1 not attributed, 7 dropped in windows"),
            std::string::npos)
      << st->detail;
  EXPECT_GE(t.events_lost, 7u) << "the drops are losses of the trace too";
}

TEST_F(Cupti, EveryStepByDefaultAndNoneWhenOff) {
  // --cuda-activity all (the default without a control block, and with one):
  // open from the start, one window, nothing noted per call.
  format::ControlBlock all;
  format::InitControlBlock(&all);
  model::Trace t = RunScenario(
      "cupti_window_all",
      [](cupti::Session& s) {
        if (!s.window() || !s.window()->open()) ::_exit(kBadSwitches);
        for (uint32_t step = 0; step < 5; ++step) {
          recorder::MarkStep(step, true);
          Launch(s, 10 + step);
          recorder::MarkStep(step, false);
        }
        if (Fake::flushes != 0 || s.window()->windows().size() != 1) ::_exit(kBadSwitches);
      },
      nullptr, &all);
  EXPECT_EQ(Collector(t, "cuda")->detail.find("device activity"), std::string::npos) << Collector(t, "cuda")->detail;

  format::ControlBlock off;
  format::InitControlBlock(&off);
  off.cuda_activity.store(static_cast<uint32_t>(format::CudaActivity::kOff));
  t = RunScenario(
      "cupti_window_off",
      [](cupti::Session& s) {
        for (uint32_t step = 0; step < 5; ++step) {
          recorder::MarkStep(step, true);
          Launch(s, 10 + step);
          if (s.window()->open()) ::_exit(kBadSwitches);
          recorder::MarkStep(step, false);
        }
      },
      nullptr, &off);
  EXPECT_NE(Collector(t, "cuda")->detail.find("device activity off: 0 windows"), std::string::npos)
      << Collector(t, "cuda")->detail;
}

}  // namespace
}  // namespace strata
