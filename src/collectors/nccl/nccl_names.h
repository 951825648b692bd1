// What a NCCL profiler event becomes in strata (collectors/nccl): its row's
// name, its bytes and its sequence number. Pure functions, tested directly
// (tests/nccl_plugin_test.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace strata::collectors::nccl {

// NCCL's func name ("AllReduce", "ReduceScatter", "AlltoAll", "Send") as a
// row name: "nccl:" and the words in lower case joined by '_' ("nccl:all_reduce",
// "nccl:all_to_all", "nccl:send"), the names torch.distributed's NCCL works
// carry. Writes at most `cap` bytes with the NUL; "nccl:unknown" for no name.
inline void RowName(const char* func, char* out, size_t cap) {
  if (cap == 0) return;
  constexpr std::string_view kPrefix = "nccl:";
  size_t n = 0;
  auto put = [&](char c) {
    if (n + 1 < cap) out[n++] = c;
  };
  for (char c : kPrefix) put(c);
  std::string_view f = func && *func ? std::string_view(func) : std::string_view("unknown");
  if (f == "AlltoAll") f = "AllToAll";  // NCCL's spelling; torch's is all_to_all
  for (size_t i = 0; i < f.size(); ++i) {
    char c = f[i];
    bool upper = c >= 'A' && c <= 'Z';
    if (upper && i > 0 && !(f[i - 1] >= 'A' && f[i - 1] <= 'Z') && f[i - 1] != '_') put('_');
    put(upper ? static_cast<char>(c - 'A' + 'a') : c);
  }
  out[n] = '\0';
}

// Bytes of one element of NCCL's datatype, by the name the descriptor carries
// ("ncclFloat32", "ncclBfloat16", ...); 0 when unknown (NCCL 2.28 names
// ncclUint8 "Unknown").
inline uint32_t DatatypeSize(const char* datatype) {
  if (!datatype) return 0;
  std::string_view t(datatype);
  if (t.substr(0, 4) == "nccl") t.remove_prefix(4);
  struct Size {
    std::string_view name;
    uint32_t bytes;
  };
  static constexpr Size kSizes[] = {
      {"Int8", 1},    {"Char", 1},    {"Uint8", 1},   {"Float8e4m3", 1}, {"Float8e5m2", 1}, {"Float16", 2},
      {"Half", 2},    {"Bfloat16", 2}, {"Int32", 4},  {"Int", 4},        {"Uint32", 4},     {"Float32", 4},
      {"Float", 4},   {"Int64", 8},   {"Uint64", 8},  {"Float64", 8},    {"Double", 8},
  };
  for (const Size& s : kSizes)
    if (t == s.name) return s.bytes;
  return 0;
}

// count x the datatype's size (saturating; 0 when the type is unknown).
inline uint64_t Bytes(size_t count, const char* datatype) {
  uint64_t size = DatatypeSize(datatype);
  if (size == 0 || count == 0) return 0;
  if (count > UINT64_MAX / size) return UINT64_MAX;
  return static_cast<uint64_t>(count) * size;
}

// A row's sequence number, unique in the process and equal on every rank of a
// communicator (Trace::collectives pairs an end with its begin by process and
// number, and matches ranks by name and order of number):
//
//   63        40 39      32 31                    0
//   +----------+----------+-----------------------+
//   | comm tag |   kind   |  n (NCCL's seqNumber) |
//   +----------+----------+-----------------------+
//
// NCCL's seqNumber counts a communicator's collectives of one func (all-reduce
// #0 and all-gather #0 share 0), so the func (`kind`, from SeqKind) and the
// communicator (24 bits of its hash, the same on all its ranks, never 0 so
// that no number collides with the small ones other collectors count from 0)
// make it unique. For sends and receives, n is the plugin's own count per
// communicator and direction.
inline uint32_t CommTag(uint64_t comm_hash) {
  uint64_t h = comm_hash ^ (comm_hash >> 24) ^ (comm_hash >> 48);
  uint32_t tag = static_cast<uint32_t>(h & 0xffffff);
  return tag ? tag : 1;
}

// 1 + the index of the row name's func in a fixed list (0: another name).
inline uint32_t SeqKind(std::string_view row_name) {
  constexpr std::string_view kKinds[] = {"nccl:all_reduce", "nccl:all_gather", "nccl:reduce_scatter",
                                         "nccl:broadcast",  "nccl:reduce",     "nccl:all_to_all",
                                         "nccl:gather",     "nccl:scatter",    "nccl:send",
                                         "nccl:recv",       "nccl:send_recv"};
  for (uint32_t i = 0; i < sizeof kKinds / sizeof kKinds[0]; ++i)
    if (row_name == kKinds[i]) return i + 1;
  return 0;
}

inline uint64_t RowSeq(uint32_t comm_tag, uint32_t kind, uint64_t n) {
  return (static_cast<uint64_t>(comm_tag & 0xffffff) << 40) | (static_cast<uint64_t>(kind & 0xff) << 32) |
         (n & 0xffffffffu);
}

}  // namespace strata::collectors::nccl
