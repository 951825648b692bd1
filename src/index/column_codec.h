// How the trace index stores a model column: its raw rows (mapped and read in
// place), or chunks compressed with zstd, optionally after replacing each row
// by its difference from the row before (timestamps, sorted ids and parent
// links become small numbers that compress many times better). Compressed
// columns are decoded once when the index is opened, chunk by chunk on every
// core; the index shrinks to a fraction of the trace it came from (ClickHouse
// and Arrow IPC store columns the same way: a delta codec, then a general
// compressor, per block).
//
// A compressed column, after its row count and encoding word:
//   u64 transform (0 none, 1 delta, 2 byte planes, 3 delta then byte planes),
//   u64 chunks,
//   then per chunk: u64 rows, u64 bytes, the zstd frame (its content size
//   stated, equal to rows x row size).
// Every chunk decodes alone (a delta restarts at 0 in each), so chunks decode
// in parallel into their place in the column.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <vector>

namespace strata::index::codec {

enum class Encoding : uint64_t { kRaw = 0, kZstd = 1 };
// kShuffle: the rows' bytes stored as planes (byte 0 of every row, then byte
// 1, ...); kDeltaShuffle: differences, then planes. Rows of 4 or 8 bytes.
enum class Transform : uint64_t { kNone = 0, kDelta = 1, kShuffle = 2, kDeltaShuffle = 3 };
constexpr bool HasDelta(Transform t) { return t == Transform::kDelta || t == Transform::kDeltaShuffle; }
constexpr bool HasPlanes(Transform t) { return t == Transform::kShuffle || t == Transform::kDeltaShuffle; }

// `rows` rows of `row_bytes` (4 or 8) to byte planes, or back: row r's byte b
// is plane byte b * rows + r. `vector` uses SSE2 where the build has it (the
// columns' way); false, the portable word transposes (tests compare the two).
// False for another row size.
bool BytePlanes(const void* in, void* out, size_t rows, size_t row_bytes, bool back, bool vector = true);

// Rows per chunk are this many bytes' worth (the last chunk has the rest).
inline constexpr size_t kChunkBytes = size_t{1} << 20;
// Columns smaller than this are stored raw: compressing them saves nothing
// worth a decode.
inline constexpr size_t kMinCompressBytes = 4096;
// A column is compressed only when its first chunk shrinks to this fraction.
inline constexpr double kMaxRatio = 0.75;
// No zstd frame expands beyond this many times its size (a run of one byte
// costs about 4 bytes per 128 KiB block): a larger stated size is damage,
// refused before anything is allocated for it.
inline constexpr uint64_t kMaxExpansion = 1 << 16;

// Row transforms of an integer column of T (unsigned arithmetic: any
// difference wraps and comes back exactly).
using DeltaFn = void (*)(const void* in, void* out, size_t rows);
using UndeltaFn = void (*)(void* rows, size_t n);
template <class T>
void DeltaRows(const void* in, void* out, size_t rows) {
  using U = std::make_unsigned_t<T>;
  const U* a = static_cast<const U*>(in);
  U* o = static_cast<U*>(out);
  U prev = 0;
  for (size_t i = 0; i < rows; ++i) {
    U v = a[i];
    o[i] = static_cast<U>(v - prev);
    prev = v;
  }
}
template <class T>
void UndeltaRows(void* rows, size_t n) {
  using U = std::make_unsigned_t<T>;
  U* a = static_cast<U*>(rows);
  U acc = 0;
  for (size_t i = 0; i < n; ++i) a[i] = acc = static_cast<U>(acc + a[i]);
}
// The transforms a column of T may use (none for floats, small ints, arrays).
template <class T>
constexpr DeltaFn DeltaFor() {
  if constexpr (std::is_integral_v<T> && sizeof(T) >= 4) return &DeltaRows<T>;
  return nullptr;
}
template <class T>
constexpr UndeltaFn UndeltaFor() {
  if constexpr (std::is_integral_v<T> && sizeof(T) >= 4) return &UndeltaRows<T>;
  return nullptr;
}

// Encodes the `n` rows of `row_bytes` each at `data` as a compressed column
// (the transform word, the chunk count, the chunks), handing the bytes to
// `emit` in order; compresses chunks on every core. Returns false, having
// emitted nothing, when the column should stay raw (small, or its first chunk
// does not compress to kMaxRatio).
bool EncodeColumn(const void* data, size_t n, size_t row_bytes, DeltaFn delta,
                  const std::function<void(const void*, size_t)>& emit);

// One chunk of a compressed column, as read from an index.
struct ChunkRef {
  const uint8_t* src;  // the zstd frame
  size_t bytes;        // its size
  size_t rows;         // rows it holds
  size_t first_row;    // where they go in the column
};

// Reads a compressed column's transform and chunk table at *p (before `end`),
// checking that its chunks hold exactly `n` rows of `row_bytes` each and fit;
// advances *p past the last chunk. False on any inconsistency.
bool ScanChunks(const uint8_t** p, const uint8_t* end, size_t n, size_t row_bytes, Transform* transform,
                std::vector<ChunkRef>* chunks);

// Decodes one chunk into `column` (the column's first row; the chunk's rows
// go at its first_row), undoing the transform. Thread-safe. False when the
// frame is damaged.
bool DecodeChunk(const ChunkRef& c, size_t row_bytes, void* column, Transform transform, UndeltaFn undelta);

}  // namespace strata::index::codec
