#include "importers/xplane/xplane_names.h"

#include <charconv>

namespace strata::importers::xplane {
namespace {

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsIdent(char c) { return IsUpper(c) || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

template <typename T>
bool Number(std::string_view s, T* v) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// "160,1,1" -> {160, 1, 1}; missing dimensions stay 1 when the first parses.
std::array<uint32_t, 3> Dims(std::string_view s) {
  std::array<uint32_t, 3> d{0, 0, 0};
  for (size_t i = 0; i < 3 && !s.empty(); ++i) {
    size_t comma = s.find(',');
    std::string_view part = s.substr(0, comma);
    if (!Number(part, &d[i])) return {0, 0, 0};
    s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
  }
  if (d[0] != 0) {
    if (d[1] == 0) d[1] = 1;
    if (d[2] == 0) d[2] = 1;
  }
  return d;
}

// Calls f(key, value) for each "key:value" token separated by spaces.
template <typename F>
void ForEachPair(std::string_view s, F&& f) {
  while (!s.empty()) {
    size_t sp = s.find(' ');
    std::string_view tok = s.substr(0, sp);
    s = sp == std::string_view::npos ? std::string_view() : s.substr(sp + 1);
    size_t colon = tok.find(':');
    if (colon == std::string_view::npos) continue;
    f(tok.substr(0, colon), tok.substr(colon + 1));
  }
}

}  // namespace

PlaneKind ClassifyPlane(std::string_view name, int32_t* device, std::string_view* type) {
  if (StartsWith(name, "/host:")) return name == "/host:metadata" ? PlaneKind::kOther : PlaneKind::kHost;
  if (!StartsWith(name, "/device:")) return PlaneKind::kOther;
  std::string_view rest = name.substr(8);  // "GPU:4", "TPU:0", "CUSTOM:1"
  size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) return PlaneKind::kOther;
  int32_t n;
  if (!Number(rest.substr(colon + 1), &n) || n < 0) return PlaneKind::kOther;
  *device = n;
  *type = rest.substr(0, colon);
  return PlaneKind::kDevice;
}

bool StreamLine(std::string_view name, int64_t* stream) {
  if (!StartsWith(name, "Stream #")) return false;
  std::string_view rest = name.substr(8);
  size_t end = 0;
  while (end < rest.size() && rest[end] >= '0' && rest[end] <= '9') ++end;
  return end > 0 && Number(rest.substr(0, end), stream);
}

bool TfOpName(std::string_view name, std::string_view* type) {
  size_t colon = name.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 >= name.size()) return false;
  if (name[colon - 1] == ':') return false;  // "Iterator::Prefetch": a C++ scope
  std::string_view t = name.substr(colon + 1);
  if (!IsUpper(t[0]) && t[0] != '_') return false;
  for (char c : t)
    if (!IsIdent(c)) return false;
  for (char c : name.substr(0, colon))
    if (c == ' ' || c == '(' || c == '<' || c == ':' || c == '#') return false;
  *type = t;
  return true;
}

KernelDetails ParseKernelDetails(std::string_view s) {
  KernelDetails k;
  ForEachPair(s, [&k](std::string_view key, std::string_view v) {
    uint32_t n = 0;
    if (key == "regs" || key == "registers_per_thread") {
      if (Number(v, &n)) k.registers = n;
    } else if (key == "shm" || key == "static_shared" || key == "dynamic_shared" || key == "group_mem") {
      if (Number(v, &n)) k.shared_mem += n;
    } else if (key == "grid") {
      k.grid = Dims(v);
    } else if (key == "block") {
      k.block = Dims(v);
    } else if (key == "occ_pct") {
      double pct;
      if (Number(v, &pct) && pct > 0 && pct <= 100) k.occupancy = static_cast<float>(pct / 100.0);
    }
  });
  return k;
}

uint64_t MemcpyBytes(std::string_view s) {
  uint64_t bytes = 0;
  ForEachPair(s, [&bytes](std::string_view key, std::string_view v) {
    uint64_t n;
    if (key == "size" && Number(v, &n)) bytes = n;
  });
  return bytes;
}

model::SliceKind DeviceKind(std::string_view name, bool has_memcpy_details, model::CopyKind* copy) {
  *copy = model::CopyKind::kUnknown;
  if (StartsWith(name, "Memset")) return model::SliceKind::kMemset;
  if (!StartsWith(name, "Memcpy") && !has_memcpy_details) return model::SliceKind::kKernel;
  std::string_view dir = StartsWith(name, "Memcpy") ? name.substr(6) : std::string_view();
  if (StartsWith(dir, "H2D") || StartsWith(dir, "HtoD")) *copy = model::CopyKind::kHtoD;
  else if (StartsWith(dir, "D2H") || StartsWith(dir, "DtoH")) *copy = model::CopyKind::kDtoH;
  else if (StartsWith(dir, "D2D") || StartsWith(dir, "DtoD")) *copy = model::CopyKind::kDtoD;
  else if (StartsWith(dir, "H2H") || StartsWith(dir, "HtoH")) *copy = model::CopyKind::kHtoH;
  else if (StartsWith(dir, "P2P") || StartsWith(dir, "PtoP")) *copy = model::CopyKind::kPtoP;
  return model::SliceKind::kMemcpy;
}

int32_t AllocatorDevice(std::string_view a) {
  // TF's GPU allocators are "GPU_<n>_bfc" (and "gpu_async_<n>"); host ones
  // "gpu_host_bfc", "cpu", "mklcpu", "cuda_host_bfc".
  std::string_view rest;
  if (StartsWith(a, "GPU_")) rest = a.substr(4);
  else if (StartsWith(a, "gpu_async_")) rest = a.substr(10);
  else return model::kNone;
  size_t end = 0;
  while (end < rest.size() && rest[end] >= '0' && rest[end] <= '9') ++end;
  int32_t n;
  return end > 0 && Number(rest.substr(0, end), &n) ? n : model::kNone;
}

}  // namespace strata::importers::xplane
