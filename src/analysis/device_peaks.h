// Peak arithmetic throughput and memory bandwidth of known accelerators: the
// roofs of a roofline. Values are the vendors' datasheet figures for dense math
// (no structured-sparsity doubling) at boost clock; a real kernel rarely gets
// above ~80-90% of them, which is why the roofline reports "% of roof".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strata::analysis {

struct DevicePeaks {
  std::string name;          // the table's name of the part ("A100 SXM4 80GB")
  double fp64 = 0;           // FLOP/s, vector (CUDA cores / VALU)
  double fp32 = 0;           // FLOP/s, vector (what fp32 math without tensor cores gets)
  double tf32 = 0;           // FLOP/s, tensor/matrix cores with fp32 inputs (TF32, or FP32 matrix on AMD); 0 none
  double fp16 = 0;           // FLOP/s, tensor/matrix cores with fp16/bf16 inputs, fp32 accumulate; 0 none
  double int8 = 0;           // OP/s, tensor cores int8 (fp8 where the part has it); 0 none
  double bandwidth = 0;      // bytes/s, device memory (HBM/GDDR)
};

// The peaks of the accelerator called `device_name` (as CUDA/HIP/Kineto name
// it: "NVIDIA A100-SXM4-80GB", "Tesla V100-DGXS-32GB", "AMD Instinct MI300X"),
// or nullopt for a part not in the table. `memory_bytes` and `compute_units`
// (0 when unknown) tell variants apart that share a name (A100 40GB/80GB) and
// identify AMD parts that ROCm names only "AMD Radeon Graphics" (an MI250X is
// two devices of 110 CUs each, an MI250 two of 104).
std::optional<DevicePeaks> LookupDevicePeaks(std::string_view device_name, uint64_t memory_bytes = 0,
                                             uint32_t compute_units = 0);

}  // namespace strata::analysis
