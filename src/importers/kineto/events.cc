// The names of the categories and args the Kineto importer knows, and what
// it does with each (events.h).
#include "importers/kineto/events.h"

namespace strata::importers::kineto {

Cat Classify(std::string_view c) {
  if (c.empty()) return Cat::kUnknown;
  switch (c[0]) {
    case 'c':
      if (c == "cpu_op") return Cat::kCpuOp;
      if (c == "cuda_runtime") return Cat::kRuntime;
      if (c == "cuda_driver") return Cat::kDriver;
      if (c == "cuda_sync") return Cat::kSync;
      break;
    case 'k':
      if (c == "kernel") return Cat::kKernel;
      break;
    case 'g':
      if (c == "gpu_memcpy") return Cat::kMemcpy;
      if (c == "gpu_memset") return Cat::kMemset;
      if (c == "gpu_user_annotation") return Cat::kGpuAnnotation;
      break;
    case 'u':
      if (c == "user_annotation") return Cat::kUserAnnotation;
      break;
    case 'p':
      if (c == "python_function") return Cat::kPython;
      break;
    case 'a':
      if (c == "ac2g" || c == "async") return Cat::kFlowLaunch;
      break;
    case 'm':
      if (c == "mtia_ccp_events") return Cat::kKernel;
      break;
    // The 2021 schema.
    case 'O':
      if (c == "Operator") return Cat::kCpuOp;
      break;
    case 'R':
      if (c == "Runtime") return Cat::kRuntime;
      break;
    case 'K':
      if (c == "Kernel") return Cat::kKernel;
      break;
    case 'M':
      if (c == "Memcpy") return Cat::kMemcpy;
      if (c == "Memset") return Cat::kMemset;
      break;
    case 'T':
      if (c == "Trace") return Cat::kTrace;
      break;
  }
  return Cat::kOther;
}

Role RoleOf(std::string_view k) {
  switch (k.size()) {
    case 4:
      if (k == "grid") return Role::kGrid;
      if (k == "kind") return Role::kKind;
      if (k == "name") return Role::kName;
      if (k == "cbid" || k == "Addr") return k == "Addr" ? Role::kAddr : Role::kDrop;
      break;
    case 5:
      if (k == "bytes") return Role::kBytes;
      if (k == "block") return Role::kBlock;
      if (k == "Bytes") return Role::kMemBytes;
      break;
    case 6:
      if (k == "Device") return Role::kLegacyDevice;
      if (k == "device") return Role::kDevice;
      if (k == "stream") return Role::kStream;
      if (k == "Ev Idx" || k == "queued") return Role::kDrop;
      break;
    case 7:
      if (k == "context") return Role::kDrop;
      break;
    case 9:
      if (k == "Device Id") return Role::kDeviceId;
      if (k == "occupancy") return Role::kDrop;
      break;
    case 10:
      if (k == "Trace name") return Role::kDrop;
      break;
    case 11:
      if (k == "correlation") return Role::kCorrelation;
      if (k == "External id" || k == "external id") return Role::kExternalId;
      if (k == "Device Type") return Role::kDeviceType;
      break;
    case 12:
      if (k == "warps per SM") return Role::kDrop;
      break;
    case 13:
      if (k == "shared memory") return Role::kSharedMem;
      if (k == "blocks per SM") return Role::kDrop;
      break;
    case 14:
      if (k == "Total Reserved") return Role::kTotalReserved;
      break;
    case 15:
      if (k == "Sequence number") return Role::kSequence;
      if (k == "Total Allocated") return Role::kTotalAllocated;
      if (k == "Trace iteration") return Role::kDrop;
      break;
    case 18:
      if (k == "Record function id") return Role::kDrop;
      break;
    case 20:
      if (k == "registers per thread") return Role::kRegisters;
      break;
    case 25:
      if (k == "est. achieved occupancy %") return Role::kOccupancy;
      break;
  }
  return Role::kKeep;
}

}  // namespace strata::importers::kineto
