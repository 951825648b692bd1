// What XSpace's names and detail strings mean: plane and line names, TF op
// names, the kernel_details and memcpy_details stats. Pure functions over
// text, shared by the importer and its tests.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "model/trace.h"

namespace strata::importers::xplane {

enum class PlaneKind { kHost, kDevice, kOther };

// "/host:CPU" -> kHost; "/device:GPU:4" -> kDevice with *device = 4 and
// *type = "GPU"; anything else (metadata planes, "Task Environment") -> kOther.
PlaneKind ClassifyPlane(std::string_view name, int32_t* device, std::string_view* type);

// "Stream #134(Compute)" -> true, *stream = 134.
bool StreamLine(std::string_view name, int64_t* stream);

// A TensorFlow op's full name, "scope/node:Type" (the TraceMe TF writes for an
// op kernel): *type = "Type". Not a C++ name ("a::b"), a kernel signature or
// free text.
bool TfOpName(std::string_view name, std::string_view* type);

// kernel_details: "regs:38 shm:0 grid:160,1,1 block:1024,1,1" (CUDA),
// "grid:16,1,1 block:512,1,1 private_mem:0 group_mem:2112 occ_pct:0" (ROCm),
// "regs:32 static_shared:0 dynamic_shared:0 grid:... block:... occ_pct:50.0".
struct KernelDetails {
  uint32_t registers = 0;
  uint32_t shared_mem = 0;  // static + dynamic (group memory on AMD)
  std::array<uint32_t, 3> grid{0, 0, 0};
  std::array<uint32_t, 3> block{0, 0, 0};
  float occupancy = -1.0f;  // 0..1, -1 unknown
};
KernelDetails ParseKernelDetails(std::string_view s);

// memcpy_details: "size:6144 dest:4 async:1", "kind:Unknown size:0 dest:512 async:1" -> bytes.
uint64_t MemcpyBytes(std::string_view s);

// A device activity's kind from its event name: "MemcpyH2D" -> kMemcpy with
// *copy = kHtoD, "Memset..." -> kMemset, others kKernel. `has_memcpy_details`
// makes a copy of an event whatever its name.
model::SliceKind DeviceKind(std::string_view name, bool has_memcpy_details, model::CopyKind* copy);

// "GPU_0_bfc" -> 0; "gpu_host_bfc", "cpu", "mklcpu" -> kNone (host memory).
int32_t AllocatorDevice(std::string_view allocator_name);

}  // namespace strata::importers::xplane
