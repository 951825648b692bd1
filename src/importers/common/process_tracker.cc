#include "importers/common/process_tracker.h"

#include <string>

#include <fmt/format.h>

namespace strata::importers {

uint32_t ProcessTracker::Process(int64_t key, uint64_t instance, bool* fresh) {
  auto [it, inserted] = processes_.try_emplace({key, instance}, 0);
  if (inserted) {
    it->second = static_cast<uint32_t>(t_.processes.size());
    model::Process p;
    p.pid = key;
    p.instance = instance;
    t_.processes.push_back(p);
  }
  if (fresh) *fresh = inserted;
  return it->second;
}

uint32_t ProcessTracker::DeviceProcess(int64_t device) {
  auto [it, inserted] = devices_.try_emplace(device, 0);
  if (inserted) {
    it->second = static_cast<uint32_t>(t_.processes.size());
    model::Process p;
    p.pid = device;
    p.is_device = true;
    p.device = static_cast<int32_t>(device);
    p.name = t_.strings.Intern(fmt::format("GPU {}", device));
    t_.processes.push_back(p);
  }
  return it->second;
}

uint32_t ProcessTracker::Track(uint32_t process, model::TrackKind kind, int64_t id, int32_t device, bool* fresh) {
  TrackKey key{process, device, id, kind};
  if (key == last_) {
    if (fresh) *fresh = false;
    return last_track_;
  }
  auto [it, inserted] = tracks_.try_emplace(key, 0);
  if (inserted) {
    it->second = static_cast<uint32_t>(t_.tracks.size());
    model::Track trk;
    trk.kind = kind;
    trk.process = process;
    trk.tid = id;
    trk.device = device;
    t_.tracks.push_back(trk);
  }
  if (fresh) *fresh = inserted;
  last_ = key;
  last_track_ = it->second;
  return it->second;
}

uint32_t ProcessTracker::CpuTrack(int16_t cpu) {
  bool fresh = false;
  uint32_t track = Track(model::kNoProcess, model::TrackKind::kCpu, cpu, model::kNone, &fresh);
  if (fresh) t_.tracks[track].name = t_.strings.Intern(cpu >= 0 ? fmt::format("CPU {}", cpu) : std::string("CPU ?"));
  return track;
}

uint32_t ProcessTracker::FindProcess(int64_t key, uint64_t instance) const {
  auto it = processes_.find({key, instance});
  return it == processes_.end() ? kNotFound : it->second;
}

uint32_t ProcessTracker::FindDeviceProcess(int64_t device) const {
  auto it = devices_.find(device);
  return it == devices_.end() ? kNotFound : it->second;
}

uint32_t ProcessTracker::FindTrack(uint32_t process, model::TrackKind kind, int64_t id, int32_t device) const {
  auto it = tracks_.find(TrackKey{process, device, id, kind});
  return it == tracks_.end() ? kNotFound : it->second;
}

}  // namespace strata::importers
