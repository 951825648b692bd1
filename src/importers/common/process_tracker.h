// Processes and tracks, interned the same way by every importer (Perfetto's
// importers/common/process_tracker is the model): one model::Process per
// process the source names, one model::Track per (process, kind, id, device),
// made on first use. The importer fills in what its format says about a new
// process or track (`fresh` tells it one was just made); the tracker owns the
// lookup, so no two importers key or number them differently.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "model/trace.h"

namespace strata::importers {

class ProcessTracker {
 public:
  explicit ProcessTracker(model::Trace& t) : t_(t) {}

  // The process the source identifies by (key, instance): a pid, and what
  // tells apart the images of one pid across exec. A new one gets pid = key.
  uint32_t Process(int64_t key, uint64_t instance = 0, bool* fresh = nullptr);
  // The "GPU N" pseudo-process of device N, for sources that show each device
  // as a process of its own (the PyTorch profiler, XSpace device planes).
  // (The key is the source's number; the model's device is its int32 value.)
  uint32_t DeviceProcess(int64_t device);
  // The track of `process` of this kind: `id` is a thread's tid, a device
  // queue's stream, a CPU's number. A new one has no name.
  uint32_t Track(uint32_t process, model::TrackKind kind, int64_t id, int32_t device = model::kNone,
                 bool* fresh = nullptr);
  // CPU `cpu`'s track ("CPU N"; -1: "CPU ?", events whose CPU is unknown),
  // which belongs to no process.
  uint32_t CpuTrack(int16_t cpu);

  // Lookups that make nothing: kNotFound when absent.
  static constexpr uint32_t kNotFound = UINT32_MAX;
  uint32_t FindProcess(int64_t key, uint64_t instance = 0) const;
  uint32_t FindDeviceProcess(int64_t device) const;
  uint32_t FindTrack(uint32_t process, model::TrackKind kind, int64_t id, int32_t device = model::kNone) const;

 private:
  struct TrackKey {
    uint32_t process;
    int32_t device;
    int64_t id;
    model::TrackKind kind;
    bool operator==(const TrackKey&) const = default;
  };
  struct TrackKeyHash {
    size_t operator()(const TrackKey& k) const {
      uint64_t h = (uint64_t{k.process} << 32) ^ static_cast<uint32_t>(k.device) ^ (uint64_t{static_cast<uint8_t>(k.kind)} << 29);
      h ^= static_cast<uint64_t>(k.id) * 0x9e3779b97f4a7c15ull;
      return static_cast<size_t>(h ^ (h >> 31));
    }
  };
  struct ProcessKeyHash {
    size_t operator()(const std::pair<int64_t, uint64_t>& k) const {
      uint64_t h = static_cast<uint64_t>(k.first) * 0x9e3779b97f4a7c15ull ^ k.second;
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };

  model::Trace& t_;
  std::unordered_map<std::pair<int64_t, uint64_t>, uint32_t, ProcessKeyHash> processes_;
  std::unordered_map<int64_t, uint32_t> devices_;
  std::unordered_map<TrackKey, uint32_t, TrackKeyHash> tracks_;
  // Events come in runs on one track: the last lookup is kept.
  TrackKey last_{UINT32_MAX, 0, 0, model::TrackKind::kThread};
  uint32_t last_track_ = 0;
};

}  // namespace strata::importers
