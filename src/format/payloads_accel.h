// The device stream's payloads, each declared once (as Tracy's TracyQueue.hpp
// declares its queue items): one list of (type, name) per event gives the
// byte-packed struct the collectors fill, the CTF field table the schema and
// the metadata are made from (schema_accel.cc), and the struct the importer
// reads back (importers/strata/accel_events.cc). A field added, removed,
// retyped or moved changes all three, so the encoder, the schema and the
// decoder cannot disagree; a static_assert checks each struct is exactly its
// fields' bytes, in the order of the table.
//
// Field meanings: format/schema_accel.h, by event id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#include "format/schema.h"

namespace strata::format {

// (type, name) lists, in wire order. Enumerations are stored as u8
// (format::CopyKind, MemoryKind, SyncType, MemoryOp).
#define STRATA_PAYLOAD_KERNEL(F)                                                                              \
  F(uint64_t, end) F(uint64_t, correlation) F(uint32_t, name) F(uint32_t, grid_x) F(uint32_t, grid_y)          \
  F(uint32_t, grid_z) F(uint32_t, block_x) F(uint32_t, block_y) F(uint32_t, block_z) F(uint32_t, shared_static) \
  F(uint32_t, shared_dynamic) F(uint32_t, registers) F(uint64_t, queued) F(uint64_t, submitted)
#define STRATA_PAYLOAD_KERNEL32(F)                                                                        \
  F(uint32_t, duration) F(uint32_t, correlation) F(uint32_t, name) F(uint32_t, grid_x) F(uint32_t, grid_y) \
  F(uint32_t, grid_z) F(uint16_t, block_x) F(uint16_t, block_y) F(uint16_t, block_z) F(uint16_t, registers) \
  F(uint32_t, shared_static) F(uint32_t, shared_dynamic)
#define STRATA_PAYLOAD_MEMCPY(F)                                                                       \
  F(uint64_t, end) F(uint64_t, correlation) F(uint64_t, bytes) F(uint8_t, copy_kind) F(uint8_t, src_kind) \
  F(uint8_t, dst_kind) F(uint32_t, src_device) F(uint32_t, dst_device) F(uint8_t, flags)
#define STRATA_PAYLOAD_MEMCPY32(F)                                                                         \
  F(uint32_t, duration) F(uint32_t, correlation) F(uint64_t, bytes) F(uint8_t, copy_kind) F(uint8_t, src_kind) \
  F(uint8_t, dst_kind) F(uint8_t, flags) F(uint8_t, src_device) F(uint8_t, dst_device)
#define STRATA_PAYLOAD_MEMSET(F) \
  F(uint64_t, end) F(uint64_t, correlation) F(uint64_t, bytes) F(uint32_t, value) F(uint8_t, memory_kind)
#define STRATA_PAYLOAD_SYNC(F) F(uint64_t, end) F(uint64_t, correlation) F(uint8_t, type)
#define STRATA_PAYLOAD_MEMORY(F) \
  F(uint64_t, correlation) F(uint64_t, address) F(uint64_t, bytes) F(uint8_t, operation) F(uint8_t, memory_kind)
#define STRATA_PAYLOAD_COMMAND(F) F(uint64_t, end) F(uint64_t, correlation) F(uint32_t, name) F(uint64_t, bytes)

// The CTF type of a C++ field type.
template <class T>
constexpr FieldType FieldTypeOf() {
  if constexpr (std::is_same_v<T, uint8_t>) return FieldType::kU8;
  else if constexpr (std::is_same_v<T, uint16_t>) return FieldType::kU16;
  else if constexpr (std::is_same_v<T, uint32_t>) return FieldType::kU32;
  else if constexpr (std::is_same_v<T, uint64_t>) return FieldType::kU64;
  else if constexpr (std::is_same_v<T, int16_t>) return FieldType::kI16;
  else if constexpr (std::is_same_v<T, int32_t>) return FieldType::kI32;
  else if constexpr (std::is_same_v<T, int64_t>) return FieldType::kI64;
  else if constexpr (std::is_same_v<T, double>) return FieldType::kF64;
  else static_assert(sizeof(T) == 0, "no CTF field type for this C++ type");
}

#define STRATA_PAYLOAD_MEMBER(type, name) type name;
#define STRATA_PAYLOAD_FIELD(type, name) FieldSpec{#name, FieldTypeOf<type>()},
#define STRATA_PAYLOAD_SIZE(type, name) +sizeof(type)

// struct NAME (packed) and its field table NAME::kFields.
#define STRATA_DECLARE_PAYLOAD(NAME, LIST)                                                      \
  struct __attribute__((packed)) NAME {                                                        \
    LIST(STRATA_PAYLOAD_MEMBER)                                                                \
    static constexpr FieldSpec kFields[] = {LIST(STRATA_PAYLOAD_FIELD)};                      \
  };                                                                                           \
  static_assert(sizeof(NAME) == 0 LIST(STRATA_PAYLOAD_SIZE), #NAME " is not exactly its fields"); \
  static_assert(std::is_trivially_copyable_v<NAME>);

STRATA_DECLARE_PAYLOAD(KernelPayload, STRATA_PAYLOAD_KERNEL)
STRATA_DECLARE_PAYLOAD(Kernel32Payload, STRATA_PAYLOAD_KERNEL32)
STRATA_DECLARE_PAYLOAD(MemcpyPayload, STRATA_PAYLOAD_MEMCPY)
STRATA_DECLARE_PAYLOAD(Memcpy32Payload, STRATA_PAYLOAD_MEMCPY32)
STRATA_DECLARE_PAYLOAD(MemsetPayload, STRATA_PAYLOAD_MEMSET)
STRATA_DECLARE_PAYLOAD(SyncPayload, STRATA_PAYLOAD_SYNC)
STRATA_DECLARE_PAYLOAD(MemoryPayload, STRATA_PAYLOAD_MEMORY)
STRATA_DECLARE_PAYLOAD(CommandPayload, STRATA_PAYLOAD_COMMAND)

#undef STRATA_DECLARE_PAYLOAD

// A payload read from an event's bytes: fields past a short event's end are 0
// (as the importer's PayloadReader reads them).
template <class P>
P ReadPayload(const uint8_t* bytes, size_t size) {
  P p;
  std::memset(static_cast<void*>(&p), 0, sizeof p);
  std::memcpy(static_cast<void*>(&p), bytes, size < sizeof p ? size : sizeof p);
  return p;
}

}  // namespace strata::format
