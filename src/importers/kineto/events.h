// One trace event as the Kineto importer reads it (Event, its Args and
// pids/tids), and how the importer classifies its category and its args.
// Classify and RoleOf are in events.cc; the rest runs per event and is
// inline here.
#pragma once

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "model/trace.h"

namespace strata::importers::kineto {

using model::SliceKind;
using model::StringId;

enum class Cat : uint8_t {
  kUnknown,
  kCpuOp,
  kUserAnnotation,
  kPython,
  kRuntime,
  kDriver,
  kKernel,
  kMemcpy,
  kMemset,
  kSync,
  kGpuAnnotation,
  kTrace,
  kFlowLaunch,  // ac2g, legacy "async" launch flows
  kOther,
};

Cat Classify(std::string_view c);

inline bool IsDeviceCat(Cat c) {
  return c == Cat::kKernel || c == Cat::kMemcpy || c == Cat::kMemset || c == Cat::kSync || c == Cat::kGpuAnnotation;
}

inline SliceKind KindOf(Cat c) {
  switch (c) {
    case Cat::kCpuOp: return SliceKind::kOp;
    case Cat::kUserAnnotation: return SliceKind::kSpan;
    case Cat::kPython: return SliceKind::kPython;
    case Cat::kRuntime: return SliceKind::kRuntime;
    case Cat::kDriver: return SliceKind::kDriver;
    case Cat::kKernel: return SliceKind::kKernel;
    case Cat::kMemcpy: return SliceKind::kMemcpy;
    case Cat::kMemset: return SliceKind::kMemset;
    case Cat::kSync: return SliceKind::kDeviceSync;
    case Cat::kGpuAnnotation: return SliceKind::kAnnotation;
    default: return SliceKind::kOther;
  }
}

// "ProfilerStep#12" -> 12
inline bool StepNumber(std::string_view name, uint64_t* n) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.size() <= kPrefix.size() || name.substr(0, kPrefix.size()) != kPrefix) return false;
  auto r = std::from_chars(name.data() + kPrefix.size(), name.data() + name.size(), *n);
  return r.ec == std::errc() && r.ptr == name.data() + name.size();
}

// "Memcpy HtoD (Pageable -> Device)" -> kHtoD, pageable.
inline void CopyKindFromName(std::string_view name, model::CopyKind* kind, int8_t* pinned) {
  using model::CopyKind;
  struct K {
    std::string_view s;
    CopyKind k;
  };
  static constexpr K kKinds[] = {{"HtoD", CopyKind::kHtoD}, {"DtoH", CopyKind::kDtoH}, {"DtoD", CopyKind::kDtoD},
                                 {"HtoH", CopyKind::kHtoH}, {"PtoP", CopyKind::kPtoP}, {"Peer", CopyKind::kPtoP}};
  for (const K& k : kKinds)
    if (name.find(k.s) != std::string_view::npos) {
      *kind = k.k;
      break;
    }
  if (name.find("Pageable") != std::string_view::npos) *pinned = 0;
  else if (name.find("Pinned") != std::string_view::npos) *pinned = 1;
}

struct Id {  // a pid or tid: a number, or a string some traces use
  bool present = false;
  bool is_str = false;
  int64_t num = 0;
  std::string_view str;
};

// Args the importer reads or drops, recognized once per arg.
enum class Role : uint8_t {
  kDevice, kStream, kCorrelation, kBytes, kSharedMem, kRegisters, kOccupancy, kGrid, kBlock, kKind,
  kExternalId, kSequence, kName, kMemBytes, kAddr, kDeviceType, kDeviceId, kTotalAllocated, kTotalReserved,
  kCount,            // (number of roles that are looked up)
  kDrop,             // derived or profiler-internal: not kept
  kLegacyDevice,     // "Device" (2021 schema): the pid again on host events, kept on device ones
  kKeep,             // kept in ArgTable as is
};
inline constexpr size_t kRoles = static_cast<size_t>(Role::kCount);

Role RoleOf(std::string_view k);

struct Arg {
  std::string_view key;
  std::string_view raw;  // scalar token, or the JSON text of an array/object
  bool container = false;
  Role role = Role::kKeep;
  int16_t slot = -1;     // the key's entry in Builder's key cache, -1 none
  bool has_int = false;  // raw is a plain integer (FastInt, not "-0"), already converted:
  int64_t int_value = 0;
  uint32_t gen = 0;      // that entry's generation when the arg was read
};

struct Event {
  char ph = 0;
  std::string_view name, cat, bp, scope, id;
  bool name_escaped = false;
  Id pid, tid;
  int64_t ts = 0, dur = 0;
  bool has_ts = false, has_dur = false, ts_fractional = false;
  bool bad_number = false;
  std::vector<Arg> args;
  std::array<int8_t, kRoles> known;  // index in args of each looked-up role, -1 absent
};

}  // namespace strata::importers::kineto
