// The device-idle fallback finding (analysis/findings.cc: GpuIdle) beside the
// rules whose cause it would repeat, on hand-built traces: idle that followed a
// synchronization the step does not need is host_sync's, whatever the host did
// next, and the fallback names only the idle no rule explains.
#include <gtest/gtest.h>

#include "analysis/findings.h"
#include "model/trace.h"

namespace strata {
namespace {

using model::SliceKind;

constexpr int64_t kUs = 1'000;

const analysis::Finding* Find(const std::vector<analysis::Finding>& fs, const std::string& category) {
  for (const auto& f : fs)
    if (f.category == category) return &f;
  return nullptr;
}

// 20 steps of `stages` stages on an OpenCL-like runtime: the host produces the
// stage's input (its own code, `input_us`), writes it, launches the stage's
// kernel (`kernel_us`) and, where `sync_every_stage`, waits with clFinish;
// the step ends with one blocking wait for its result.
model::Trace Pipeline(int stages, int64_t input_us, int64_t kernel_us, bool sync_every_stage) {
  model::Trace t;
  t.processes.push_back({.pid = 100, .name = t.strings.Intern("pipeline")});
  t.tracks.push_back({model::TrackKind::kThread, 0, 100, t.strings.Intern("main")});
  t.tracks.push_back({model::TrackKind::kDeviceQueue, 0, 7});
  auto add = [&t](int64_t ts, int64_t dur, const char* name, SliceKind k, uint32_t track = 0) {
    return t.slices.Add(ts, dur, track, t.strings.Intern(name), k);
  };
  int64_t now = 0;
  for (int s = 0; s < 20; ++s) {
    int64_t step_start = now, device_free = now;
    for (int k = 0; k < stages; ++k) {
      now += input_us * kUs;  // the host's own code, before the write: the stage's input
      add(now, 10 * kUs, "clEnqueueWriteBuffer", SliceKind::kRuntime);
      now += 10 * kUs;
      uint32_t launch = add(now, 10 * kUs, "clEnqueueNDRangeKernel", SliceKind::kRuntime);
      now += 10 * kUs;
      int64_t begin = std::max(now, device_free);
      uint32_t kernel = add(begin, kernel_us * kUs, "stage", SliceKind::kKernel, 1);
      t.device.Add(kernel, 0, 7, 1);
      t.device.launch.back() = static_cast<int32_t>(launch);
      device_free = begin + kernel_us * kUs;
      if (sync_every_stage || k == stages - 1) {
        add(now, device_free - now, "clFinish", SliceKind::kRuntime);
        now = device_free;
      }
    }
    t.slices.Add(step_start, now - step_start, 0, t.strings.Intern("step"), SliceKind::kStep, static_cast<uint64_t>(s));
  }
  t.Finalize();
  return t;
}

TEST(DeviceIdle, IdleAfterAnUnneededSyncIsTheSyncsNotTheInputs) {
  // The device idles 36% of each step while the host produces the next
  // stage's input, every time after a clFinish drained it: the syncs are the
  // cause (without them the input overlaps with the device's work).
  auto fs = analysis::Diagnose(Pipeline(12, 300, 500, true));
  ASSERT_FALSE(fs.empty());
  EXPECT_EQ(fs[0].category, "host_sync") << fs[0].title << "\n" << fs[0].evidence;
  const analysis::Finding* input = Find(fs, "input_pipeline");
  EXPECT_EQ(input, nullptr) << input->title << "\n" << input->evidence;
  EXPECT_NE(fs[0].evidence.find("followed a synchronization other than the step's last"), std::string::npos)
      << fs[0].evidence;
}

TEST(DeviceIdle, IdleWhileProducingInputWithoutSyncsIsTheInputs) {
  // The same host work with one sync per step (the one it needs): the host
  // produces each stage's input while the device runs the previous stage,
  // and the device still idles while the host produces the first stage's, a
  // long one. That is the input's, and no sync claims it.
  auto fs = analysis::Diagnose(Pipeline(1, 3'000, 2'000, false));
  const analysis::Finding* input = Find(fs, "input_pipeline");
  ASSERT_NE(input, nullptr);
  EXPECT_EQ(fs[0].category, "input_pipeline") << fs[0].title;
  EXPECT_EQ(Find(fs, "host_sync"), nullptr);
}

}  // namespace
}  // namespace strata
