// The strata trace schema: stream classes, their packet contexts and event classes.
//
// This table is the single source of truth for the on-disk format. The recorder
// encodes payloads in this layout, the TSDL `metadata` file is generated from it
// (format/tsdl.h), and the reader parses that metadata back and binds decoders
// by event and field *name*, so a trace written by a newer strata with extra
// event classes stays readable (unknown events are skipped, counted).
//
// Encoding rules (kept deliberately simple so that writer and reader are fast):
//  - every payload field is byte-aligned little-endian: u8/u16/u32/u64/i64/f64,
//    or a NUL-terminated UTF-8 string;
//  - the event header is LTTng's "compact" header: 5-bit id + 27-bit timestamp
//    (4 bytes), or id 31 followed by a 32-bit id and a full 64-bit timestamp
//    (13 bytes) when the id is > 30 or the time since the stream's previous
//    event does not fit in 27 bits (134 ms);
//  - the clock is CLOCK_MONOTONIC in ns; the clock's offset maps it to wall time.
//
// Event classes are declared by level, each in its own file (schema_core.cc,
// and one per collector), and gathered here. Ids within a stream class are
// allocated in ranges so that levels never collide:
//   thread stream   0..15  core (spans, steps, counters, flows)   compact header
//                   16..30 framework ops (PyTorch, ...)          compact header
//                   32..63 accelerator runtime API (CUDA, OpenCL, HSA)
//                   64..95 framework detail (shapes, memory, graph)
//   device stream   0..63  accelerator activity (kernels, copies, ...)
//   cpu stream      0..63  OS events (sched, syscalls, samples)
//   process stream  0..15  core; 16..63 collectors' process-level facts
// Adding an event class: add it to its level's table (never renumber), bump
// kSchemaMinor. Changing a field's meaning: bump kSchemaMajor.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace strata::format {

inline constexpr int kSchemaMajor = 1;
inline constexpr int kSchemaMinor = 2;
inline constexpr uint32_t kCtfMagic = 0xC1FC1FC1u;
inline constexpr uint32_t kCompactMaxId = 30;
inline constexpr uint32_t kExtendedId = 31;
inline constexpr uint64_t kCompactTsBits = 27;

enum class FieldType : uint8_t { kU8, kU16, kU32, kU64, kI16, kI32, kI64, kF64, kString };

// Byte size of a fixed-size field type (0 for strings).
constexpr uint32_t FieldSize(FieldType t) {
  switch (t) {
    case FieldType::kU8: return 1;
    case FieldType::kU16:
    case FieldType::kI16: return 2;
    case FieldType::kU32:
    case FieldType::kI32: return 4;
    case FieldType::kU64:
    case FieldType::kI64:
    case FieldType::kF64: return 8;
    case FieldType::kString: return 0;
  }
  return 0;
}

struct FieldSpec {
  std::string_view name;
  FieldType type;
};

struct EventSpec {
  uint32_t id;
  std::string_view name;
  std::span<const FieldSpec> fields;
};

struct StreamSpec {
  uint32_t id;
  std::string_view name;
  // Fields after the common packet-context prefix (timestamp_begin, timestamp_end,
  // content_size, packet_size, packet_seq_num, events_discarded).
  std::span<const FieldSpec> context;
  std::span<const EventSpec> events;  // sorted by id
};

// Stream class ids.
enum StreamClass : uint32_t {
  kThreadStream = 0,   // one per traced thread: spans, instants, counters, steps, flows
  kProcessStream = 1,  // one per process instance: interned names, thread names, process info
  kDeviceStream = 2,   // one per device queue (CUDA stream, OpenCL queue, HSA queue)
  kCpuStream = 3,      // one per CPU: OS events from perf_event (sched, syscalls, samples)
};

// Event class ids of the thread stream. Ids 0..30 get the 4-byte compact header,
// so the hottest events come first.
enum ThreadEvent : uint32_t {
  kSpanBegin = 0,    // {u32 name}
  kSpanEnd = 1,      // {}
  kInstant = 2,      // {u32 name}
  kCounter = 3,      // {u32 name, f64 value}
  kFlowOut = 4,      // {u64 flow}: a flow leaves the enclosing span
  kFlowIn = 5,       // {u64 flow}: a flow arrives in the enclosing span
  kStepBegin = 6,    // {u64 step}
  kStepEnd = 7,      // {u64 step}
  kSpanBeginArg = 8, // {u32 name, u64 arg}: a span with one numeric argument
  // Narrow forms the flusher substitutes when the values fit, so the commonest
  // events take 6-10 bytes on disk. Readers treat them as their wide forms.
  kStepBegin32 = 9,   // {u32 step}
  kStepEnd32 = 10,    // {u32 step}
  kCounter8 = 11,     // {u16 name, i16 value}: a small integral counter value
  kSpanBegin16 = 12,  // {u16 name}
  kFlowOut32 = 13,    // {u32 flow}
  kFlowIn32 = 14,     // {u32 flow}
  kCounter16 = 15,    // {u16 name, i32 value}: an integral counter value
};

// Framework level (schema_torch.cc): hot events 16..30, detail 64..95.
enum FrameworkEvent : uint32_t {
  kOpBegin = 16,
  kOpBeginSeq = 17,
  kOpEnd = 18,
  kBwdBegin = 19,
  kScopeBegin = 20,
  kScopeEnd = 21,
  kScriptBegin = 22,
  kModuleBegin = 23,
  kModuleEnd = 24,
  kMemAlloc = 25,
  kMemFree = 26,
  kTorchThread = 64,
  kOpDetail = 65,
  kOpOutputs = 66,
  kOpsTier = 67,
  kStepBatch = 68,
  kGraph = 69,
  kMemOom = 70,
  kAutoStepBegin = 71,
  kAutoStepEnd = 72,
  kModuleBatch = 73,
  kOptimizerStep = 74,
  kSiteBegin = 75,  // {u32 site}: a host-reading call from Python begins ("file:line (function)")
  kSiteEnd = 76,    // {}: it returns
  kCommBegin = 77,  // {u32 name, u64 seq, u64 bytes, u32 tensors}: a collective's work begins
  kCommEnd = 78,    // {u32 name, u64 seq}: ...and completes (on the thread that completed it)
  kLoopHead = 79,   // {u32 what}: after an optimizer step or a step function's call, line << 1: its loop takes the next iteration; 1: not yet here (Python)
};

enum ProcessEvent : uint32_t {
  kNameDef = 0,      // {u32 id, string name}: interned string id -> text, per process instance
  kThreadName = 1,   // {u32 tid, string name}
  kProcessInfo = 2,  // {u32 ppid, u64 start_realtime_ns, string exe, string cmdline}
  kCollectorStatus = 3,  // {string collector, string state, string detail}
  // The process's place in a distributed job, from its launcher's environment:
  // {i64 rank, i64 local_rank, i64 world_size, string variable, string job}
  // (-1 where unknown; variable: the one that named the rank, e.g. RANK).
  kProcessRank = 4,
};

std::span<const StreamSpec> Streams();

// The event classes each level contributes (schema_*.cc), by stream class.
struct EventSet {
  uint32_t stream;
  std::span<const EventSpec> events;
};
std::span<const EventSet> CoreEventSets();
std::span<const EventSet> AccelEventSets();  // schema_accel.cc
std::span<const EventSet> OsEventSets();  // schema_os.cc
std::span<const EventSet> TorchEventSets();  // schema_torch.cc
const StreamSpec* FindStream(uint32_t id);
const EventSpec* FindEvent(const StreamSpec& stream, uint32_t id);

// Number of common packet-context fields before the stream-specific ones.
inline constexpr uint32_t kCommonContextFields = 6;
// Packet header: magic u32, uuid u8[16], stream_id u32, stream_instance_id u64.
inline constexpr uint32_t kPacketHeaderSize = 4 + 16 + 4 + 8;
inline constexpr uint32_t kCommonContextSize = kCommonContextFields * 8;

// Byte size of a stream class's packet context (all fields are fixed-size).
uint32_t ContextSize(const StreamSpec& s);

}  // namespace strata::format
