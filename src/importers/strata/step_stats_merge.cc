#include "importers/strata/step_stats_merge.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "base/files.h"
#include "base/int_math.h"
#include "importers/strata/step_stats.pb.h"
#include "importers/strata/xspace_merge.h"
#include "importers/xplane/xplane_names.h"

namespace strata::importers::strata_ctf {
namespace {

using model::SliceKind;

// "dense/MatMul = MatMul(x, w)" -> "MatMul"; "" when the label has no type.
std::string_view OpType(std::string_view label) {
  size_t eq = label.find(" = ");
  if (eq == std::string_view::npos) return {};
  std::string_view rest = label.substr(eq + 3);
  size_t paren = rest.find('(');
  return paren == std::string_view::npos ? std::string_view() : rest.substr(0, paren);
}

// "/job:localhost/replica:0/task:0/device:CPU:0" -> "CPU:0".
std::string_view ShortDevice(std::string_view device) {
  size_t d = device.rfind("/device:");
  return d == std::string_view::npos ? device : device.substr(d + 8);
}

// Microseconds to nanoseconds, saturating (the file's numbers are whatever it says).
int64_t Micros(int64_t us) {
  int64_t ns;
  if (!__builtin_mul_overflow(us, int64_t{1000}, &ns)) return ns;
  return us > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

int64_t StartNs(const tfstats::NodeExecStats& n) {
  return n.all_start_nanos() != 0 ? n.all_start_nanos() : Micros(n.all_start_micros());
}
int64_t EndRelNs(const tfstats::NodeExecStats& n) {
  return n.all_end_rel_nanos() != 0 ? n.all_end_rel_nanos() : Micros(n.all_end_rel_micros());
}
int64_t ComputeNs(const tfstats::NodeExecStats& n) {
  if (n.op_end_rel_nanos() != 0 || n.op_start_rel_nanos() != 0) return SatSub(n.op_end_rel_nanos(), n.op_start_rel_nanos());
  return Micros(SatSub(n.op_end_rel_micros(), n.op_start_rel_micros()));
}

constexpr size_t kMaxLanes = 256;

// The tracks of one device's lanes in a process, kept across the steps' files.
struct Lanes {
  int64_t device = -1;  // the device's order among those seen
  std::vector<uint32_t> track;
  std::vector<int64_t> free_at;  // end of the lane's last node
};

class Merger {
 public:
  Merger(model::Trace& t, uint32_t process, int64_t offset) : t_(t), process_(process), offset_(offset) {
    tf_op_ = t_.strings.Intern("tf_op");
    compute_ = t_.strings.Intern("compute_ns");
  }

  bool Merge(std::string_view bytes) {
    tfstats::RunMetadata md;
    if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
        !md.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
      return false;
    for (const auto& dev : md.step_stats().dev_stats()) {
      std::vector<const tfstats::NodeExecStats*> nodes;
      nodes.reserve(static_cast<size_t>(dev.node_stats_size()));
      for (const auto& n : dev.node_stats()) nodes.push_back(&n);
      std::stable_sort(nodes.begin(), nodes.end(), [](auto* a, auto* b) { return StartNs(*a) < StartNs(*b); });
      Lanes& lanes = lanes_[dev.device()];
      if (lanes.device < 0) lanes.device = static_cast<int64_t>(lanes_.size()) - 1;
      for (const tfstats::NodeExecStats* n : nodes) Node(dev.device(), lanes, *n);
    }
    return true;
  }

 private:
  void Node(const std::string& device, Lanes& lanes, const tfstats::NodeExecStats& n) {
    int64_t ts = SatAdd(StartNs(n), offset_);
    int64_t dur = std::max<int64_t>(0, EndRelNs(n));
    dur = std::min(dur, SatSub(std::numeric_limits<int64_t>::max(), std::max<int64_t>(ts, 0)));  // (ts + dur fits)
    size_t lane = 0;
    while (lane < lanes.track.size() && lanes.free_at[lane] > ts) ++lane;
    if (lane == lanes.track.size() && lane >= kMaxLanes) {
      // (More nodes at once than any executor runs: a damaged file. They share
      // the lane that frees first rather than growing the search without end.)
      lane = static_cast<size_t>(std::min_element(lanes.free_at.begin(), lanes.free_at.end()) - lanes.free_at.begin());
    } else if (lane == lanes.track.size()) {
      model::Track trk;
      trk.process = process_;
      // (Not an OS thread: ids below any the kernel gives, one per lane.)
      trk.tid = -(1 + lanes.device * 1000 + static_cast<int64_t>(lane));
      trk.name = t_.strings.Intern(fmt::format("TF step stats {} #{}", ShortDevice(device), lane));
      t_.tracks.push_back(trk);
      lanes.track.push_back(static_cast<uint32_t>(t_.tracks.size() - 1));
      lanes.free_at.push_back(INT64_MIN);
    }
    lanes.free_at[lane] = ts + dur;
    uint32_t track = lanes.track[lane];
    std::string_view type = OpType(n.timeline_label());
    if (type.empty()) type = "unknown";
    uint32_t s = t_.slices.Add(ts, dur, track, t_.strings.Intern(type), SliceKind::kOp);
    t_.args.Add(s, tf_op_, t_.strings.Intern(fmt::format("{}:{}", n.node_name(), type)),
                std::numeric_limits<double>::quiet_NaN());
    t_.args.Add(s, compute_, 0, static_cast<double>(ComputeNs(n)));
    ++t_.tracks[track].events;
    ++t_.events_read;
    for (const auto& mem : n.memory()) {
      int32_t dev = xplane::AllocatorDevice(mem.allocator_name());
      for (const auto& rec : mem.allocation_records())
        t_.memory.Add(SatAdd(Micros(rec.alloc_micros()), offset_), track, dev, 0, rec.alloc_bytes(), -1, -1);
    }
  }

  model::Trace& t_;
  uint32_t process_;
  int64_t offset_;
  model::StringId tf_op_ = 0, compute_ = 0;
  std::map<std::string, Lanes> lanes_;
};

}  // namespace

bool MergeRunMetadata(model::Trace& t, std::string_view bytes, uint32_t process, int64_t realtime_to_trace) {
  return Merger(t, process, realtime_to_trace).Merge(bytes);
}

void MergeStepStats(const std::string& trace_dir, model::Trace& t) {
  std::error_code ec;
  std::vector<std::string> dirs;
  for (std::filesystem::directory_iterator it(JoinPath(trace_dir, "stepstats"), ec), end; !ec && it != end;
       it.increment(ec))
    if (it->is_directory(ec)) dirs.push_back(it->path().string());
  std::sort(dirs.begin(), dirs.end());
  for (const std::string& dir : dirs) {
    uint32_t process = 0;
    int64_t offset = 0;
    if (!ReadProfileClock(dir, t, &process, &offset)) continue;
    auto files = ListFiles(dir);
    if (!files.ok()) continue;
    std::vector<std::string> steps;
    for (const std::string& f : *files)
      if (f.ends_with(".pb")) steps.push_back(f);
    // In step order (10.pb before 9.pb sorts wrong as text).
    std::sort(steps.begin(), steps.end(), [](const std::string& a, const std::string& b) {
      return a.size() != b.size() ? a.size() < b.size() : a < b;
    });
    Merger merger(t, process, offset);
    for (const std::string& f : steps) {
      std::string path = JoinPath(dir, f);
      auto bytes = ReadFile(path);
      if (!bytes.ok()) {
        t.warnings.push_back(bytes.status().message());
        continue;
      }
      if (!merger.Merge(*bytes)) t.warnings.push_back(fmt::format("{}: not a TensorFlow RunMetadata (not merged)", path));
    }
  }
}

}  // namespace strata::importers::strata_ctf
