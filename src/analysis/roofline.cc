#include "analysis/roofline.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>

#include "analysis/device_peaks.h"
#include "analysis/memo.h"
#include "base/int_math.h"
#include "base/json_get.h"
#include "opcost/cost_model.h"
#include "opcost/profiler_args.h"

namespace strata::analysis {

const char* RooflineLevelName(RooflineLevel l) {
  switch (l) {
    case RooflineLevel::kKernel: return "kernel";
    case RooflineLevel::kOp: return "op";
    case RooflineLevel::kStep: return "step";
  }
  return "?";
}

void ClassifyPoint(RooflinePoint& p, const Roof* roof) {
  p.intensity = p.bytes > 0 ? p.flops / p.bytes : 0;
  p.flops_per_s = p.time_ns > 0 ? p.flops / (static_cast<double>(p.time_ns) * 1e-9) : 0;
  if (!roof || roof->peak_flops <= 0 || roof->bandwidth <= 0 || p.bytes <= 0) {
    p.pct_of_roof = 0;
    p.bound.clear();
    return;
  }
  double attainable = std::min(roof->peak_flops, p.intensity * roof->bandwidth);
  p.pct_of_roof = attainable > 0 ? 100.0 * p.flops_per_s / attainable : 0;
  p.bound = p.intensity >= roof->ridge() ? "compute" : "memory";
}

namespace {

using model::SliceKind;
using opcost::ArgDesc;
using opcost::ArgKind;

enum Precision : int8_t { kUnknown, kF64, kF32, kF16, kI8 };

Precision PrecisionOf(std::string_view p) {
  if (p == "f64") return kF64;
  if (p == "f32") return kF32;
  if (p == "f16") return kF16;
  if (p == "i8") return kI8;
  return kUnknown;
}

struct Estimate {
  double flops = -1, bytes = -1;
  Precision precision = kUnknown;
};

// A profiled op by its name and the string ids of its recorded inputs' dims,
// types and concrete values.
struct CostKey {
  model::StringId name, dims, types, concrete;
  bool operator==(const CostKey&) const = default;
};
struct CostKeyHash {
  size_t operator()(const CostKey& k) const {
    uint64_t h = (static_cast<uint64_t>(k.name) << 32 | k.dims) * 0x9e3779b97f4a7c15ull;
    h ^= (static_cast<uint64_t>(k.types) << 32 | k.concrete) + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
    return static_cast<size_t>(h);
  }
};

// The first tensor dtype in "[float, float, Scalar]" (strata's OpTable dtypes).
Precision PrecisionOfList(std::string_view s) {
  if (!s.empty() && s.front() == '[') s.remove_prefix(1);
  if (!s.empty() && s.back() == ']') s.remove_suffix(1);
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    Precision p = PrecisionOf(opcost::PrecisionOfType(item));
    if (p != kUnknown) return p;
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return kUnknown;
}

bool IsConv(std::string_view base) {
  return base == "conv1d" || base == "conv2d" || base == "conv3d" || base == "convolution" || base == "_convolution";
}

// A torch.profiler trace without "Concrete Inputs" (PyTorch < 2.1) does not say
// a convolution's stride and padding. The output's spatial size does: it is the
// input of the next op on the thread (batch_norm, relu, add...), whose first
// input is [N, out_channels, *out]. Stride and padding follow from
// out = floor((in + 2p - k) / s) + 1 (dilation 1).
void InferConvGeometry(std::vector<ArgDesc>& args, const std::vector<int64_t>& out_dims) {
  if (args.size() < 2 || args[0].kind != ArgKind::kTensor || args[1].kind != ArgKind::kTensor) return;
  const ArgDesc& in = args[0];
  const ArgDesc& w = args[1];
  int spatial = in.ndim - 2;
  if (spatial < 1 || spatial > 3 || w.ndim != in.ndim || out_dims.size() != in.ndim) return;
  if (out_dims[0] != in.dims[0] || out_dims[1] != w.dims[0]) return;
  ArgDesc stride, padding;
  stride.kind = padding.kind = ArgKind::kIntList;
  stride.ndim = padding.ndim = static_cast<uint8_t>(spatial);
  for (int k = 0; k < spatial; ++k) {
    int64_t i = in.dims[2 + k], kk = w.dims[2 + k], o = out_dims[static_cast<size_t>(2 + k)];
    if (o <= 0 || i <= 0 || o > (int64_t{1} << 31) || i > (int64_t{1} << 31) || kk < 0 || kk > (int64_t{1} << 31)) return;
    int64_t s = std::max<int64_t>(1, (i + o - 1) / o);
    int64_t p = std::max<int64_t>(0, ((o - 1) * s + kk - i + 1) / 2);
    stride.dims[k] = s;
    padding.dims[k] = p;
  }
  // conv{1,2,3}d(input, weight, bias, stride, padding, ...); convolution(input, weight, bias, stride, padding, ...).
  if (args.size() < 5) args.resize(5);
  if (args[3].kind == ArgKind::kNone) args[3] = stride;
  if (args[4].kind == ArgKind::kNone) args[4] = padding;
}

class Builder {
 public:
  Builder(const model::Trace& t, const RooflineOptions& opt) : t_(t), opt_(opt) {}

  RooflineResult Run() {
    EstimateOps();
    Outermost();
    Kernels();
    Peaks();
    Points();
    return std::move(r_);
  }

 private:
  std::string_view BaseName(uint32_t s) const {
    std::string_view n = t_.strings.Get(t_.slices.name[s]);
    if (auto p = n.find("::"); p != std::string_view::npos) n = n.substr(p + 2);
    return n;
  }

  void EstimateOps() {
    const auto& sl = t_.slices;
    est_of_.assign(sl.size(), -1);
    for (size_t r = 0; r < t_.ops.size(); ++r) {
      if (t_.ops.flops[r] < 0 || t_.ops.bytes[r] < 0) continue;
      Estimate e;
      e.flops = static_cast<double>(t_.ops.flops[r]);
      e.bytes = static_cast<double>(t_.ops.bytes[r]);
      if (t_.ops.dtypes[r]) e.precision = PrecisionOfList(t_.strings.Get(t_.ops.dtypes[r]));
      Add(t_.ops.slice[r], e);
    }
    // torch.profiler traces: the op's recorded inputs.
    model::StringId k_dims = t_.strings.Find("Input Dims");
    if (!k_dims) return;
    model::StringId k_types = t_.strings.Find("Input type");
    model::StringId k_concrete = t_.strings.Find("Concrete Inputs");
    model::ArgCursor arg(t_.args);
    for (uint32_t s = 0; s < sl.size(); ++s) {
      if (sl.kind[s] != SliceKind::kOp || est_of_[s] >= 0) continue;
      int32_t a = arg.Find(s, k_dims);
      if (a < 0 || !t_.args.str[static_cast<size_t>(a)]) continue;
      int32_t ta = k_types ? arg.Find(s, k_types) : model::kNone;
      if (ta < 0 || !t_.args.str[static_cast<size_t>(ta)]) continue;
      int32_t ca = k_concrete ? arg.Find(s, k_concrete) : model::kNone;
      // An op with the same name and inputs as an earlier one (every step
      // repeats them) costs the same: parsed once. (Not a convolution whose
      // geometry comes from the ops after it.)
      const CostKey key{sl.name[s], t_.args.str[static_cast<size_t>(a)], t_.args.str[static_cast<size_t>(ta)],
                        ca >= 0 ? t_.args.str[static_cast<size_t>(ca)] : 0};
      if (auto known = cost_of_.find(key); known != cost_of_.end()) {
        if (known->second.flops >= 0) Add(s, known->second);
        continue;
      }
      nlohmann::json dims = nlohmann::json::parse(t_.strings.Get(t_.args.str[static_cast<size_t>(a)]), nullptr, false);
      nlohmann::json types = nlohmann::json::parse(t_.strings.Get(t_.args.str[static_cast<size_t>(ta)]), nullptr, false);
      nlohmann::json concrete;
      if (ca >= 0 && t_.args.str[static_cast<size_t>(ca)])
        concrete = nlohmann::json::parse(t_.strings.Get(t_.args.str[static_cast<size_t>(ca)]), nullptr, false);
      if (!dims.is_array() || !types.is_array()) continue;
      std::vector<ArgDesc> args;
      Precision precision = kUnknown;
      bool bad = false;
      for (size_t i = 0; i < dims.size() && i < types.size() && !bad; ++i) {
        std::vector<int64_t> d;
        if (dims[i].is_array()) {
          for (const auto& v : dims[i]) {
            if (!v.is_number_integer()) {
              bad = true;  // nested (a tensor list's shapes): not described
              break;
            }
            d.push_back(v.get<int64_t>());
          }
        }
        std::string type = types[i].is_string() ? types[i].get<std::string>() : std::string();
        std::string conc = concrete.is_array() && i < concrete.size() && concrete[i].is_string() ? concrete[i].get<std::string>()
                                                                                                    : std::string();
        if (bad) break;
        args.push_back(opcost::DescribeProfilerInput({d, type, conc}));
        if (precision == kUnknown) precision = PrecisionOf(opcost::PrecisionOfType(type));
      }
      const Estimate none{-1, -1, kUnknown};
      if (bad) {
        cost_of_.emplace(key, none);
        continue;
      }
      std::string_view base = BaseName(s);
      const bool from_neighbours = IsConv(base) && !concrete.is_array();
      if (from_neighbours) InferConvGeometry(args, ConvOutputDims(s, k_dims, args));
      opcost::OpCost c = opcost::EstimateCost(t_.strings.Get(sl.name[s]), args);
      Estimate e = c.flops < 0 || c.bytes < 0 ? none : Estimate{static_cast<double>(c.flops), static_cast<double>(c.bytes), precision};
      if (!from_neighbours) cost_of_.emplace(key, e);
      if (e.flops >= 0) Add(s, e);
    }
  }

  // The first input of a later op on the same thread (not nested in slice `s`)
  // shaped like a convolution's output: [N, out_channels, *spatial] with `rank`
  // dims. In between may come ops on other tensors (batch_norm's
  // num_batches_tracked += 1), hence a search over the next few ops.
  std::vector<int64_t> ConvOutputDims(uint32_t s, model::StringId k_dims, const std::vector<ArgDesc>& args) const {
    if (args.size() < 2 || args[0].kind != ArgKind::kTensor || args[1].kind != ArgKind::kTensor) return {};
    const auto& sl = t_.slices;
    uint32_t last = t_.track_slices[sl.track[s]].second;
    int ops_seen = 0;
    for (uint32_t i = s + 1; i < last && i < s + 512 && ops_seen < 8; ++i) {
      if (sl.ts[i] < sl.end(s) || sl.kind[i] != SliceKind::kOp) continue;
      int32_t a = t_.FindArg(i, k_dims);
      if (a < 0 || !t_.args.str[static_cast<size_t>(a)]) continue;
      ++ops_seen;
      nlohmann::json d = nlohmann::json::parse(t_.strings.Get(t_.args.str[static_cast<size_t>(a)]), nullptr, false);
      if (!d.is_array() || d.empty() || !d[0].is_array() || d[0].size() != args[0].ndim) continue;
      std::vector<int64_t> out;
      for (const auto& v : d[0])
        if (v.is_number_integer()) out.push_back(v.get<int64_t>());
      if (out.size() == args[0].ndim && out[0] == args[0].dims[0] && out[1] == args[1].dims[0]) return out;
    }
    return {};
  }

  void Add(uint32_t s, const Estimate& e) {
    if (s >= est_of_.size()) return;
    est_of_[s] = static_cast<int32_t>(est_.size());
    est_.push_back(e);
  }

  // An estimated op nested in another estimated op repeats part of it: only the
  // outermost counts. Finalize orders a parent before its children.
  void Outermost() {
    const auto& sl = t_.slices;
    outer_.assign(sl.size(), model::kNone);  // the outermost estimated op containing each slice (itself included)
    for (uint32_t s = 0; s < sl.size(); ++s) {
      int32_t p = sl.parent[s];
      int32_t up = p != model::kNone && static_cast<uint32_t>(p) < s ? outer_[static_cast<size_t>(p)] : model::kNone;
      outer_[s] = up != model::kNone ? up : est_of_[s] >= 0 ? static_cast<int32_t>(s) : model::kNone;
    }
  }

  double NumArg(uint32_t s, model::StringId k) const {
    if (!k || k == model::StringPool::kNotFound) return NAN;  // (a key no arg has: no search per kernel)
    int32_t a = t_.FindArg(s, k);
    return a >= 0 ? t_.args.num[static_cast<size_t>(a)] : NAN;
  }

  void Kernels() {
    const auto& sl = t_.slices;
    const auto& dv = t_.device;
    model::StringId k64 = t_.strings.Find("flops_f64"), k32 = t_.strings.Find("flops_f32"),
                    k16 = t_.strings.Find("flops_f16"), kdram = t_.strings.Find("dram_bytes");
    std::map<int32_t, int64_t> device_time;
    for (uint32_t r = 0; r < dv.size(); ++r) {
      uint32_t s = dv.slice[r];
      if (sl.kind[s] != SliceKind::kKernel) continue;
      Kernel k;
      k.slice = s;
      k.dur = std::max<int64_t>(0, sl.dur[s]);
      device_time[dv.device[r]] = SatAdd(device_time[dv.device[r]], k.dur);
      r_.kernel_time_ns = SatAdd(r_.kernel_time_ns, k.dur);
      double f64 = NumArg(s, k64), f32 = NumArg(s, k32), f16 = NumArg(s, k16), dram = NumArg(s, kdram);
      if (std::isfinite(dram) && dram > 0 && (std::isfinite(f32) || std::isfinite(f16) || std::isfinite(f64))) {
        auto z = [](double v) { return std::isfinite(v) && v > 0 ? v : 0.0; };
        k.measured = true;
        k.flops = z(f64) + z(f32) + z(f16);
        k.bytes = dram;
        k.precision = z(f16) > z(f32) && z(f16) > z(f64) ? kF16 : z(f64) > z(f32) ? kF64 : kF32;
        ++r_.kernels_measured;
      }
      int32_t launch = dv.launch[r];
      if (launch != model::kNone && static_cast<size_t>(launch) < outer_.size()) k.op = outer_[static_cast<size_t>(launch)];
      if (k.op != model::kNone) op_gpu_time_[k.op] = SatAdd(op_gpu_time_[k.op], k.dur);
      kernels_.push_back(k);
    }
    int64_t best = -1;
    for (auto [d, ns] : device_time)
      if (ns > best) best = ns, device_ = d;
  }

  int RoofFor(Precision p, bool on_gpu) const {
    if (!on_gpu) return host_roof_;
    switch (p) {
      case kF64: return fp64_roof_ >= 0 ? fp64_roof_ : fp32_roof_;
      case kF16:
      case kI8: return fp16_roof_ >= 0 ? fp16_roof_ : fp32_roof_;
      default: return fp32_roof_;
    }
  }

  int AddRoof(std::string name, double peak, double bw) {
    if (peak <= 0 || bw <= 0) return -1;
    r_.roofs.push_back({std::move(name), peak, bw});
    return static_cast<int>(r_.roofs.size() - 1);
  }

  void Peaks() {
    if (!kernels_.empty()) {
      const model::Device* dev = nullptr;
      for (const auto& d : t_.devices)
        if (d.id == device_ && (!dev || (dev->peak_flops_f32 <= 0 && d.peak_flops_f32 > 0))) dev = &d;
      if (!dev && !t_.devices.empty()) dev = &t_.devices[0];
      if (!dev) return;
      r_.device = dev->name;
      auto table = LookupDevicePeaks(dev->name, dev->memory_bytes, dev->compute_units);
      if (dev->peak_flops_f32 > 0 && dev->memory_bandwidth > 0) {
        r_.source = "trace (device description)";
        fp32_roof_ = AddRoof("fp32", dev->peak_flops_f32, dev->memory_bandwidth);
        fp16_roof_ = AddRoof("fp16", dev->peak_flops_f16, dev->memory_bandwidth);
        fp64_roof_ = AddRoof("fp64", dev->peak_flops_f64, dev->memory_bandwidth);
        // The device description has no tensor-core rate: take it from the table.
        if (table && table->fp16 > dev->peak_flops_f16)
          fp16_roof_ = AddRoof("fp16/bf16 tensor", table->fp16, dev->memory_bandwidth);
      } else if (table) {
        r_.source = "table: " + table->name + " datasheet";
        fp32_roof_ = AddRoof("fp32", table->fp32, table->bandwidth);
        AddRoof("tf32 tensor", table->tf32, table->bandwidth);
        fp16_roof_ = AddRoof("fp16/bf16 tensor", table->fp16, table->bandwidth);
        fp64_roof_ = AddRoof("fp64", table->fp64, table->bandwidth);
      }
      return;
    }
    // CPU ops: the host peaks `strata record` measured.
    RecordedHost h = RecordedHostPeaks(t_);
    if (!h.present) return;
    r_.device = h.cpu_model.empty() ? "host" : "host: " + h.cpu_model;
    host_roof_ = AddRoof("host fp32", h.peak_flops_f32, h.memory_bandwidth);
    if (host_roof_ >= 0) r_.source = "manifest (host peaks measured by strata record)";
  }

  void Points() {
    const auto& sl = t_.slices;
    bool gpu = !kernels_.empty();
    // Kernels.
    std::map<std::string_view, RooflinePoint> kp;
    int64_t covered = 0;
    for (const Kernel& k : kernels_) {
      double flops = k.flops, bytes = k.bytes;
      Precision prec = k.precision;
      if (!k.measured) {
        if (k.op == model::kNone) continue;
        int64_t op_time = op_gpu_time_[k.op];
        const Estimate& e = est_[static_cast<size_t>(est_of_[static_cast<size_t>(k.op)])];
        if (op_time <= 0 || (e.flops <= 0 && e.bytes <= 0)) continue;
        double share = static_cast<double>(k.dur) / static_cast<double>(op_time);
        flops = e.flops * share;
        bytes = e.bytes * share;
        prec = e.precision;
      }
      covered = SatAdd(covered, k.dur);
      RooflinePoint& p = kp[t_.strings.Get(sl.name[k.slice])];
      p.count++;
      p.flops += flops;
      p.bytes += bytes;
      p.time_ns = SatAdd(p.time_ns, k.dur);
      p.measured = p.measured || k.measured;
      p.roof = RoofFor(prec, true);
    }
    if (r_.kernel_time_ns > 0) r_.kernel_time_covered = static_cast<double>(covered) / static_cast<double>(r_.kernel_time_ns);
    for (auto& [name, p] : kp) {
      p.name = std::string(name);
      p.level = RooflineLevel::kKernel;
      ClassifyPoint(p, r_.RoofOf(p.roof));
      r_.kernels.push_back(std::move(p));
    }
    // Ops (outermost estimated calls).
    std::map<std::string_view, RooflinePoint> op;
    std::map<int, int64_t> roof_time;
    for (uint32_t s = 0; s < sl.size(); ++s) {
      if (outer_[s] != static_cast<int32_t>(s)) continue;
      const Estimate& e = est_[static_cast<size_t>(est_of_[s])];
      if (e.flops <= 0 && e.bytes <= 0) continue;  // views, metadata
      int64_t time = gpu ? (op_gpu_time_.count(static_cast<int32_t>(s)) ? op_gpu_time_[static_cast<int32_t>(s)] : 0) : sl.dur[s];
      if (time <= 0) continue;
      ++r_.ops_estimated;
      RooflineItem it;
      it.slice = static_cast<int32_t>(s);
      it.ts = sl.ts[s];
      it.time_ns = time;
      it.flops = e.flops;
      it.bytes = e.bytes;
      it.on_gpu = gpu;
      it.roof = RoofFor(e.precision, gpu);
      roof_time[it.roof] = SatAdd(roof_time[it.roof], time);
      RooflinePoint& p = op[t_.strings.Get(sl.name[s])];
      p.count++;
      p.flops += e.flops;
      p.bytes += e.bytes;
      p.time_ns = SatAdd(p.time_ns, time);
      p.roof = it.roof;
      r_.items.push_back(it);
    }
    for (auto& [name, p] : op) {
      p.name = std::string(name);
      p.level = RooflineLevel::kOp;
      ClassifyPoint(p, r_.RoofOf(p.roof));
      r_.ops.push_back(std::move(p));
    }
    int64_t best = -1;
    for (auto [roof, ns] : roof_time)
      if (roof >= 0 && ns > best) best = ns, r_.primary = roof;
    if (r_.primary < 0 && !r_.roofs.empty()) r_.primary = gpu ? std::max(fp32_roof_, 0) : 0;
    auto by_time = [](const RooflinePoint& a, const RooflinePoint& b) {
      return a.time_ns != b.time_ns ? a.time_ns > b.time_ns : a.name < b.name;
    };
    std::sort(r_.kernels.begin(), r_.kernels.end(), by_time);
    std::sort(r_.ops.begin(), r_.ops.end(), by_time);
    StepPoint();
  }

  // The mean step: estimated work of the ops inside the measured steps, over
  // the steps' wall time.
  void StepPoint() {
    if (r_.items.empty()) return;
    const auto& sl = t_.slices;
    std::vector<std::pair<int64_t, int64_t>> windows;
    for (uint32_t s = 0; s < sl.size(); ++s) {
      if (sl.kind[s] != SliceKind::kStep || t_.tracks[sl.track[s]].kind != model::TrackKind::kThread) continue;
      bool nested = false;  // a step inside a step (a profiler step around a training step) counts once
      for (int32_t p = sl.parent[s]; p != model::kNone && !nested; p = sl.parent[static_cast<size_t>(p)])
        nested = sl.kind[static_cast<size_t>(p)] == SliceKind::kStep;
      if (!nested) windows.emplace_back(sl.ts[s], sl.end(s));
    }
    std::sort(windows.begin(), windows.end());
    if (windows.size() >= 3) {
      size_t skip = std::min(opt_.skip_steps, windows.size() - 1);
      windows.erase(windows.begin(), windows.begin() + static_cast<ptrdiff_t>(skip));
    }
    RooflinePoint p;
    p.level = RooflineLevel::kStep;
    p.name = windows.empty() ? "whole trace" : "step (mean)";
    if (windows.empty()) windows.push_back(t_.span_ns());
    int64_t wall = 0;
    for (auto [a, b] : windows) wall += b - a;
    double flops = 0, bytes = 0;
    for (const RooflineItem& it : r_.items) {
      auto w = std::upper_bound(windows.begin(), windows.end(), std::make_pair(it.ts, INT64_MAX));
      if (w == windows.begin() || it.ts >= std::prev(w)->second) continue;
      flops += it.flops;
      bytes += it.bytes;
    }
    if (flops <= 0 && bytes <= 0) return;
    double n = static_cast<double>(windows.size());
    p.count = windows.size();
    p.flops = flops / n;
    p.bytes = bytes / n;
    p.time_ns = static_cast<int64_t>(static_cast<double>(wall) / n);
    p.roof = r_.primary;
    ClassifyPoint(p, r_.RoofOf(p.roof));
    r_.steps.push_back(std::move(p));
  }

  struct Kernel {
    uint32_t slice = 0;
    int64_t dur = 0;
    int32_t op = model::kNone;  // the outermost estimated op that launched it
    bool measured = false;
    double flops = 0, bytes = 0;
    Precision precision = kUnknown;
  };

  const model::Trace& t_;
  RooflineOptions opt_;
  RooflineResult r_;
  model::Column<int32_t> est_of_;  // slice -> index into est_, -1 none
  std::unordered_map<CostKey, Estimate, CostKeyHash> cost_of_;  // (flops -1: no estimate)
  std::vector<Estimate> est_;
  model::Column<int32_t> outer_;
  std::vector<Kernel> kernels_;
  std::map<int32_t, int64_t> op_gpu_time_;
  int32_t device_ = 0;
  int fp32_roof_ = -1, fp16_roof_ = -1, fp64_roof_ = -1, host_roof_ = -1;
};

}  // namespace

RooflineResult Roofline(const model::Trace& t, const RooflineOptions& opt) {
  Memo* memo = Memo::Of(t);
  if (memo == nullptr) return Builder(t, opt).Run();
  return memo->Get<RooflineResult>("roofline/" + std::to_string(opt.skip_steps), [&] { return Builder(t, opt).Run(); });
}

RecordedHost RecordedHostPeaks(const model::Trace& t) {
  RecordedHost r;
  if (t.manifest_json.empty()) return r;
  nlohmann::json m = nlohmann::json::parse(t.manifest_json, nullptr, false);
  if (!m.is_object() || !m.contains("host") || !m["host"].is_object()) return r;
  const auto& h = m["host"];
  r.present = true;
  // (json::value() throws on a member of another type: the manifest is a file like any other.)
  r.peak_flops_f32 = json_get::Num(h, "peak_flops_f32");
  r.memory_bandwidth = json_get::Num(h, "memory_bandwidth");
  if (h.contains("cpu_model") && h["cpu_model"].is_string()) r.cpu_model = h["cpu_model"].get<std::string>();
  r.cpu_count = static_cast<int>(std::clamp(json_get::Num(h, "cpu_count"), 0.0, 1e6));
  return r;
}

}  // namespace strata::analysis
