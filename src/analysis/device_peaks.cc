#include "analysis/device_peaks.h"

#include <cctype>
#include <string>

namespace strata::analysis {
namespace {

constexpr double T = 1e12;  // TFLOP/s
constexpr double G = 1e9;   // GB/s (vendors' GB are 10^9 bytes)

// name, fp64, fp32, tf32 (fp32-input tensor/matrix), fp16/bf16 tensor, int8/fp8 tensor, bandwidth.
// Dense figures; the datasheets' "with sparsity" numbers are twice these.
struct Row {
  const char* name;
  double fp64, fp32, tf32, fp16, int8, bw;
};

// NVIDIA datasheets:
//  V100: "NVIDIA Tesla V100 GPU Accelerator" datasheet (2020): SXM2 7.8/15.7/125 TF, PCIe 7/14/112 TF,
//        900 GB/s; V100S PCIe 8.2/16.4/130 TF, 1134 GB/s. The DGX Station's V100-DGXS is the SXM2 part.
//  T4:   "NVIDIA T4 Tensor Core GPU" datasheet: 8.1 TF fp32, 65 TF mixed fp16/fp32, 130 TOPS int8, 320 GB/s
//        (fp64 runs at 1/32 rate).
//  A100: "NVIDIA A100 Tensor Core GPU" datasheet (2021): 9.7 TF fp64 (vector), 19.5 TF fp32, 156 TF TF32,
//        312 TF bf16/fp16, 624 TOPS int8; 1555 GB/s (40GB), 1935 GB/s (80GB PCIe), 2039 GB/s (80GB SXM).
//  A10:  "NVIDIA A10 Tensor Core GPU" datasheet: 31.2 TF fp32, 62.5 TF TF32, 125 TF bf16/fp16, 250 TOPS int8,
//        600 GB/s. A10G (AWS G5): NVIDIA publishes no datasheet; AWS documents 600 GB/s GDDR6 — the A10's
//        figures are used and are approximate for it.
//  A40:  "NVIDIA A40" datasheet: 37.4 TF fp32, 74.8 TF TF32, 149.7 TF bf16/fp16, 299.3 TOPS int8, 696 GB/s.
//  L4:   "NVIDIA L4 Tensor Core GPU" datasheet: 30.3 TF fp32, 60 TF TF32, 121 TF bf16/fp16, 242.5 TF fp8, 300 GB/s.
//  L40S: "NVIDIA L40S" datasheet: 91.6 TF fp32, 183 TF TF32, 362.05 TF bf16/fp16, 733 TF fp8, 864 GB/s.
//  L40:  "NVIDIA L40" datasheet: 90.5 TF fp32, 90.5 TF TF32, 181 TF bf16/fp16, 362 TF fp8, 864 GB/s.
//  H100: "NVIDIA H100 Tensor Core GPU" datasheet: SXM 34/67 TF fp64/fp32, 494.5 TF TF32, 989.5 TF bf16/fp16,
//        1979 TF fp8, 3.35 TB/s; PCIe 26/51, 378, 756, 1513, 2.0 TB/s; NVL 30/60, 417.5, 835.5, 1670.5, 3.9 TB/s.
//  H200: "NVIDIA H200 Tensor Core GPU" datasheet: SXM as H100 SXM with 4.8 TB/s; NVL as H100 NVL with 4.8 TB/s.
//  RTX 3090: "NVIDIA Ampere GA102 GPU Architecture" whitepaper, Table 9: 35.6 TF fp32, 35.6 TF TF32,
//        71 TF fp16/bf16 tensor with fp32 accumulate (what PyTorch uses), 284 TOPS int8, 936 GB/s.
//  RTX 4090: "NVIDIA Ada GPU Architecture" whitepaper, Table 2: 82.6 TF fp32, 82.6 TF TF32, 165.2 TF fp16
//        tensor with fp32 accumulate, 660.6 TF fp8, 1008 GB/s.
// AMD Instinct datasheets (per OAM module; ROCm shows an MI250/MI250X as two devices, one per GCD, each
// with half the module's peaks and bandwidth). The "tf32" column is AMD's FP32 matrix rate (PyTorch's
// fp32 matmuls use it; MI300X's TF32 mode is opt-in):
//  MI210:  22.6 TF fp64/fp32 vector, 45.3 TF fp32 matrix, 181 TF fp16/bf16, 181 TOPS int8, 1.6 TB/s.
//  MI250:  45.3 TF fp64/fp32 vector, 90.5 TF fp32 matrix, 362.1 TF fp16/bf16, 362.1 TOPS int8, 3.2 TB/s.
//  MI250X: 47.9 TF fp64/fp32 vector, 95.7 TF fp32 matrix, 383 TF fp16/bf16, 383 TOPS int8, 3.2 TB/s.
//  MI300X: 81.7 TF fp64 vector, 163.4 TF fp32 vector and matrix, 1307.4 TF fp16/bf16, 2614.9 TF fp8, 5.3 TB/s.
constexpr Row kV100Sxm2{"V100 SXM2", 7.8 * T, 15.7 * T, 0, 125 * T, 0, 900 * G};
constexpr Row kV100Pcie{"V100 PCIe", 7 * T, 14 * T, 0, 112 * T, 0, 900 * G};
constexpr Row kV100S{"V100S PCIe", 8.2 * T, 16.4 * T, 0, 130 * T, 0, 1134 * G};
constexpr Row kT4{"T4", 0.25 * T, 8.1 * T, 0, 65 * T, 130 * T, 320 * G};
constexpr Row kA100Sxm40{"A100 SXM4 40GB", 9.7 * T, 19.5 * T, 156 * T, 312 * T, 624 * T, 1555 * G};
constexpr Row kA100Sxm80{"A100 SXM4 80GB", 9.7 * T, 19.5 * T, 156 * T, 312 * T, 624 * T, 2039 * G};
constexpr Row kA100Pcie40{"A100 PCIe 40GB", 9.7 * T, 19.5 * T, 156 * T, 312 * T, 624 * T, 1555 * G};
constexpr Row kA100Pcie80{"A100 PCIe 80GB", 9.7 * T, 19.5 * T, 156 * T, 312 * T, 624 * T, 1935 * G};
constexpr Row kA10{"A10", 0.98 * T, 31.2 * T, 62.5 * T, 125 * T, 250 * T, 600 * G};
constexpr Row kA10G{"A10G (A10 figures)", 0.98 * T, 31.2 * T, 62.5 * T, 125 * T, 250 * T, 600 * G};
constexpr Row kA40{"A40", 0.58 * T, 37.4 * T, 74.8 * T, 149.7 * T, 299.3 * T, 696 * G};
constexpr Row kL4{"L4", 0.49 * T, 30.3 * T, 60 * T, 121 * T, 242.5 * T, 300 * G};
constexpr Row kL40S{"L40S", 1.4 * T, 91.6 * T, 183 * T, 362.05 * T, 733 * T, 864 * G};
constexpr Row kL40{"L40", 1.4 * T, 90.5 * T, 90.5 * T, 181 * T, 362 * T, 864 * G};
constexpr Row kH100Sxm{"H100 SXM", 34 * T, 67 * T, 494.5 * T, 989.5 * T, 1979 * T, 3350 * G};
constexpr Row kH100Pcie{"H100 PCIe", 26 * T, 51 * T, 378 * T, 756 * T, 1513 * T, 2000 * G};
constexpr Row kH100Nvl{"H100 NVL", 30 * T, 60 * T, 417.5 * T, 835.5 * T, 1670.5 * T, 3900 * G};
constexpr Row kH200Sxm{"H200 SXM", 34 * T, 67 * T, 494.5 * T, 989.5 * T, 1979 * T, 4800 * G};
constexpr Row kH200Nvl{"H200 NVL", 30 * T, 60 * T, 417.5 * T, 835.5 * T, 1670.5 * T, 4800 * G};
constexpr Row kRtx3090{"GeForce RTX 3090", 0.556 * T, 35.6 * T, 35.6 * T, 71 * T, 284 * T, 936 * G};
constexpr Row kRtx4090{"GeForce RTX 4090", 1.29 * T, 82.6 * T, 82.6 * T, 165.2 * T, 660.6 * T, 1008 * G};
constexpr Row kMi210{"Instinct MI210", 22.6 * T, 22.6 * T, 45.3 * T, 181 * T, 181 * T, 1638.4 * G};
constexpr Row kMi250{"Instinct MI250", 45.3 * T, 45.3 * T, 90.5 * T, 362.1 * T, 362.1 * T, 3276.8 * G};
constexpr Row kMi250Gcd{"Instinct MI250 (one GCD) / MI210", 22.65 * T, 22.65 * T, 45.25 * T, 181.05 * T, 181.05 * T, 1638.4 * G};
constexpr Row kMi250X{"Instinct MI250X", 47.9 * T, 47.9 * T, 95.7 * T, 383 * T, 383 * T, 3276.8 * G};
constexpr Row kMi250XGcd{"Instinct MI250X (one GCD)", 23.95 * T, 23.95 * T, 47.85 * T, 191.5 * T, 191.5 * T, 1638.4 * G};
constexpr Row kMi300X{"Instinct MI300X", 81.7 * T, 163.4 * T, 163.4 * T, 1307.4 * T, 2614.9 * T, 5300 * G};

std::string Upper(std::string_view s) {
  std::string u(s);
  for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u;
}

// `word` occurs in `s` delimited by non-alphanumerics (so "A10" does not match "A100").
bool HasWord(const std::string& s, std::string_view word) {
  for (size_t p = s.find(word); p != std::string::npos; p = s.find(word, p + 1)) {
    bool left = p == 0 || !std::isalnum(static_cast<unsigned char>(s[p - 1]));
    size_t e = p + word.size();
    bool right = e >= s.size() || !std::isalnum(static_cast<unsigned char>(s[e]));
    if (left && right) return true;
  }
  return false;
}

bool Has(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

const Row* Match(const std::string& n, uint64_t memory_bytes, uint32_t cus) {
  constexpr uint64_t k50GB = 50ull << 30;
  if (Has(n, "H200")) return Has(n, "NVL") ? &kH200Nvl : &kH200Sxm;
  if (Has(n, "H100")) return Has(n, "NVL") ? &kH100Nvl : Has(n, "PCIE") ? &kH100Pcie : &kH100Sxm;
  if (Has(n, "A100")) {
    bool big = memory_bytes > k50GB || Has(n, "80GB");
    if (Has(n, "PCIE")) return big ? &kA100Pcie80 : &kA100Pcie40;
    return big ? &kA100Sxm80 : &kA100Sxm40;
  }
  if (Has(n, "V100S")) return &kV100S;
  if (Has(n, "V100")) return Has(n, "PCIE") ? &kV100Pcie : &kV100Sxm2;
  if (HasWord(n, "A10G")) return &kA10G;
  if (HasWord(n, "A10")) return &kA10;
  if (HasWord(n, "A40")) return &kA40;
  if (HasWord(n, "L40S")) return &kL40S;
  if (HasWord(n, "L40")) return &kL40;
  if (HasWord(n, "L4")) return &kL4;
  if (HasWord(n, "T4")) return &kT4;
  if (Has(n, "RTX 4090")) return &kRtx4090;
  if (Has(n, "RTX 3090")) return &kRtx3090;
  if (Has(n, "MI300X")) return &kMi300X;
  if (Has(n, "MI250X")) return cus == 110 ? &kMi250XGcd : &kMi250X;
  if (Has(n, "MI250")) return cus == 104 ? &kMi250Gcd : &kMi250;
  if (Has(n, "MI210")) return &kMi210;
  // ROCm names some Instinct parts only "AMD Radeon Graphics": the CU count tells them apart.
  if (Has(n, "AMD") || Has(n, "RADEON") || Has(n, "INSTINCT")) {
    if (cus == 304) return &kMi300X;
    if (cus == 110) return &kMi250XGcd;
    if (cus == 104) return &kMi250Gcd;  // an MI250 GCD and an MI210 have the same CUs, clocks and HBM
  }
  return nullptr;
}

}  // namespace

std::optional<DevicePeaks> LookupDevicePeaks(std::string_view device_name, uint64_t memory_bytes, uint32_t compute_units) {
  const Row* r = Match(Upper(device_name), memory_bytes, compute_units);
  if (!r) return std::nullopt;
  DevicePeaks p;
  p.name = r->name;
  p.fp64 = r->fp64;
  p.fp32 = r->fp32;
  p.tf32 = r->tf32;
  p.fp16 = r->fp16;
  p.int8 = r->int8;
  p.bandwidth = r->bw;
  return p;
}

}  // namespace strata::analysis
