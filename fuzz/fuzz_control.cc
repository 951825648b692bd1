// Fuzz target: the control file of a recording (format/control.h), as traced
// processes and `strata control` map it, and the tier lists `strata control
// --tiers` parses (cli/control_file.cc). The input is written as the control
// file; a file too short, of another magic or version must be refused with a
// message, and any accepted block must read back as tiers and a detail window.
// The bytes are also laid over a valid block (as a running program's fields,
// the live-step ring included, may hold anything), whose steps and CUDA window
// must read without a crash or a hang; then they are parsed as a tier list.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "base/files.h"
#include <cstring>
#include <memory>
#include <vector>

#include "format/control.h"
#include "format/control_file.h"
#include "fuzz/trace_records.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  static const std::string path = fuzz::MakeTraceDir("control") + "/" + format::kControlFileName;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (!WriteFileAtomic(path, bytes).ok()) std::abort();
  auto cb = format::MapControlFile(path);
  if (cb.ok()) {
    format::ControlBlock& c = **cb;
    uint32_t tiers = format::GetTiers(c);
    std::string names = format::TierNames(tiers);
    auto back = format::ParseTiers(names == "none" ? "" : names);
    if (!back.ok() || *back != tiers) __builtin_trap();  // the names round-trip
    for (int64_t step : {INT64_MIN, int64_t{-1}, int64_t{0}, int64_t{7}, INT64_MAX}) (void)format::InDetailWindow(c, step);
    (void)format::OpsModeName(static_cast<format::OpsMode>(c.ops_mode.load()));
    ::munmap(*cb, sizeof(format::ControlBlock));  // MapControlFile keeps its mapping for good
  } else if (cb.status().message().empty()) {
    __builtin_trap();
  }
  {
    auto block = std::make_unique<format::ControlBlock>();
    format::InitControlBlock(block.get());
    std::memcpy(static_cast<void*>(block.get()), data, std::min(size, sizeof(format::ControlBlock)));
    std::vector<format::LiveStepRecord> steps;
    uint64_t next = 0, missed = 0;
    for (uint64_t from : {uint64_t{0}, uint64_t{5}, UINT64_MAX - 3}) {
      steps.clear();
      format::ReadLiveSteps(*block, from, &steps, &next, &missed);
      if (steps.size() > format::kLiveSteps) __builtin_trap();
    }
    for (int64_t step : {INT64_MIN, int64_t{-1}, int64_t{0}, int64_t{25}, INT64_MAX}) {
      (void)format::CudaActivityWanted(*block, step);
      (void)format::InStepWindow(*block, step);
    }
    format::PublishStepBegin(block.get(), 3);
    format::PublishStepEnd(block.get(), 3, 1, 2, 1, format::kTierOps);
  }
  auto t = format::ParseTiers(std::string(bytes));
  if (!t.ok() && t.status().message().empty()) __builtin_trap();
  format::OpsMode m;
  (void)format::ParseOpsMode(bytes, &m);
  return 0;
}
