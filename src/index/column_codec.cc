#include "index/column_codec.h"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

#include "base/parallel.h"

namespace strata::index::codec {
namespace {

// Level 1: the index is written once per trace on the import's critical path;
// higher levels gain a few percent on these columns at several times the cost.
constexpr int kLevel = 1;

struct CCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct DCtxFree {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};
ZSTD_CCtx* ThreadCCtx() {
  thread_local std::unique_ptr<ZSTD_CCtx, CCtxFree> c(ZSTD_createCCtx());
  return c.get();
}
ZSTD_DCtx* ThreadDCtx() {
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxFree> c(ZSTD_createDCtx());
  return c.get();
}

// Byte planes: row i's byte b goes to b * rows + i. Differences of sorted
// timestamps and ids are small numbers whose high bytes are zeros; as planes
// they are long runs that zstd compresses several times faster (and smaller)
// than interleaved with the low bytes (Blosc's shuffle filter).
// Blocks of 8 (4) rows are transposed as 8x8 (4x4) byte matrices in 64-bit
// (32-bit) words, swapping ever smaller sub-blocks in registers: about one
// operation per byte, where a byte at a time costs a load and a store each.
template <class W>
[[gnu::always_inline]] inline void Swap(W& a, W& b, int shift, W mask) {
  W t = static_cast<W>(((a >> shift) ^ b) & mask);
  a ^= static_cast<W>(t << shift);
  b ^= t;
}
[[gnu::always_inline]] inline void Transpose(uint64_t* a) {
  uint64_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], a4 = a[4], a5 = a[5], a6 = a[6], a7 = a[7];
  constexpr uint64_t m32 = 0x00000000ffffffffULL, m16 = 0x0000ffff0000ffffULL, m8 = 0x00ff00ff00ff00ffULL;
  Swap(a0, a4, 32, m32), Swap(a1, a5, 32, m32), Swap(a2, a6, 32, m32), Swap(a3, a7, 32, m32);
  Swap(a0, a2, 16, m16), Swap(a1, a3, 16, m16), Swap(a4, a6, 16, m16), Swap(a5, a7, 16, m16);
  Swap(a0, a1, 8, m8), Swap(a2, a3, 8, m8), Swap(a4, a5, 8, m8), Swap(a6, a7, 8, m8);
  a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3, a[4] = a4, a[5] = a5, a[6] = a6, a[7] = a7;
}
[[gnu::always_inline]] inline void Transpose(uint32_t* a) {
  uint32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
  Swap(a0, a2, 16, uint32_t{0x0000ffff}), Swap(a1, a3, 16, uint32_t{0x0000ffff});
  Swap(a0, a1, 8, uint32_t{0x00ff00ff}), Swap(a2, a3, 8, uint32_t{0x00ff00ff});
  a[0] = a0, a[1] = a1, a[2] = a2, a[3] = a3;
}

// Rows of R bytes (R = 4 or 8) to planes (kBack: planes to rows), R rows at
// a time: a block is R words of rows one way, R words of planes the other.
template <size_t R, bool kBack>
void PlaneRows(const uint8_t* in, uint8_t* out, size_t rows) {
  using W = std::conditional_t<R == 8, uint64_t, uint32_t>;
  // Where byte b of row r lies, as planes and as rows.
  auto plane = [rows](size_t b, size_t r) { return b * rows + r; };
  auto row = [](size_t b, size_t r) { return r * R + b; };
  size_t i = 0;
  for (; i + R <= rows; i += R) {
    W a[R];
    for (size_t b = 0; b < R; ++b) std::memcpy(&a[b], in + (kBack ? plane(b, i) : row(0, i + b)), R);
    Transpose(a);
    for (size_t b = 0; b < R; ++b) std::memcpy(out + (kBack ? row(0, i + b) : plane(b, i)), &a[b], R);
  }
  for (; i < rows; ++i)
    for (size_t b = 0; b < R; ++b) out[kBack ? row(b, i) : plane(b, i)] = in[kBack ? plane(b, i) : row(b, i)];
}
bool Shuffle(const void* in, void* out, size_t rows, size_t row_bytes, bool back) {
  auto* i = static_cast<const uint8_t*>(in);
  auto* o = static_cast<uint8_t*>(out);
  if (row_bytes == 8) back ? PlaneRows<8, true>(i, o, rows) : PlaneRows<8, false>(i, o, rows);
  else if (row_bytes == 4) back ? PlaneRows<4, true>(i, o, rows) : PlaneRows<4, false>(i, o, rows);
  else return false;
  return true;
}

// One chunk compressed: `out` receives the frame (empty on failure).
void Compress(const void* rows, size_t bytes, size_t row_bytes, DeltaFn delta, bool shuffle, std::vector<char>* out) {
  thread_local std::vector<char> tmp, planes;
  const void* src = rows;
  if (delta) {
    tmp.resize(bytes);
    delta(rows, tmp.data(), bytes / row_bytes);
    src = tmp.data();
  }
  if (shuffle) {
    planes.resize(bytes);
    if (!Shuffle(src, planes.data(), bytes / row_bytes, row_bytes, false)) return out->clear();
    src = planes.data();
  }
  out->resize(ZSTD_compressBound(bytes));
  ZSTD_CCtx* c = ThreadCCtx();
  size_t z = c ? ZSTD_compressCCtx(c, out->data(), out->size(), src, bytes, kLevel) : 0;
  if (c == nullptr || ZSTD_isError(z)) z = 0;
  out->resize(z);
}

void PutU64(const std::function<void(const void*, size_t)>& emit, uint64_t v) { emit(&v, sizeof v); }

bool GetU64(const uint8_t** p, const uint8_t* end, uint64_t* v) {
  if (static_cast<size_t>(end - *p) < sizeof *v) return false;
  std::memcpy(v, *p, sizeof *v);
  *p += sizeof *v;
  return true;
}

}  // namespace

bool EncodeColumn(const void* data, size_t n, size_t row_bytes, DeltaFn delta,
                  const std::function<void(const void*, size_t)>& emit) {
  size_t total = n * row_bytes;
  if (row_bytes == 0 || total < kMinCompressBytes) return false;
  size_t chunk_rows = std::max<size_t>(1, kChunkBytes / row_bytes);
  size_t chunks = (n + chunk_rows - 1) / chunk_rows;
  const char* base = static_cast<const char*>(data);
  auto chunk_bytes = [&](size_t k) { return (std::min(n, (k + 1) * chunk_rows) - k * chunk_rows) * row_bytes; };

  // The first chunk decides: plain, or differences, each as rows or as byte
  // planes, whichever compresses smallest.
  std::vector<char> first, alt;
  Transform transform = Transform::kNone;
  Compress(base, chunk_bytes(0), row_bytes, nullptr, false, &first);
  auto consider = [&](Transform t) {
    if (HasDelta(t) && !delta) return;
    Compress(base, chunk_bytes(0), row_bytes, HasDelta(t) ? delta : nullptr, HasPlanes(t), &alt);
    if (!alt.empty() && (first.empty() || alt.size() < first.size())) {
      first.swap(alt);
      transform = t;
    }
  };
  for (Transform t : {Transform::kDelta, Transform::kShuffle, Transform::kDeltaShuffle}) consider(t);
  if (first.empty() || static_cast<double>(first.size()) > kMaxRatio * static_cast<double>(chunk_bytes(0))) return false;
  if (!HasDelta(transform)) delta = nullptr;
  const bool shuffle = HasPlanes(transform);

  PutU64(emit, static_cast<uint64_t>(transform));
  PutU64(emit, chunks);
  auto put_chunk = [&](size_t k, const std::vector<char>& z) {
    PutU64(emit, chunk_bytes(k) / row_bytes);
    PutU64(emit, z.size());
    emit(z.data(), z.size());
  };
  put_chunk(0, first);
  // The rest in batches across the cores, written in order.
  size_t batch = std::max<size_t>(2, 2 * base::WorkerThreads());
  std::vector<std::vector<char>> out(std::min(batch, chunks));
  for (size_t k0 = 1; k0 < chunks; k0 += batch) {
    size_t m = std::min(batch, chunks - k0);
    base::ParallelFor(m, [&](size_t i) {
      size_t k = k0 + i;
      Compress(base + k * chunk_rows * row_bytes, chunk_bytes(k), row_bytes, delta, shuffle, &out[i]);
    });
    for (size_t i = 0; i < m; ++i) {
      if (out[i].empty()) throw std::bad_alloc();  // zstd's context or buffers could not be had
      put_chunk(k0 + i, out[i]);
    }
  }
  return true;
}

bool ScanChunks(const uint8_t** p, const uint8_t* end, size_t n, size_t row_bytes, Transform* transform,
                std::vector<ChunkRef>* chunks) {
  uint64_t t = 0, count = 0;
  if (!GetU64(p, end, &t) || !GetU64(p, end, &count)) return false;
  if (t > static_cast<uint64_t>(Transform::kDeltaShuffle)) return false;
  if (HasPlanes(static_cast<Transform>(t)) && row_bytes != 4 && row_bytes != 8) return false;
  *transform = static_cast<Transform>(t);
  if (count > static_cast<size_t>(end - *p) / 16) return false;  // each chunk has two words at least
  chunks->clear();
  chunks->reserve(count);
  size_t rows_seen = 0;
  for (uint64_t k = 0; k < count; ++k) {
    uint64_t rows = 0, bytes = 0;
    if (!GetU64(p, end, &rows) || !GetU64(p, end, &bytes)) return false;
    if (rows == 0 || rows > n - rows_seen || bytes > static_cast<size_t>(end - *p)) return false;
    if (rows > (bytes * kMaxExpansion) / row_bytes) return false;
    unsigned long long content = ZSTD_getFrameContentSize(*p, bytes);
    if (content == ZSTD_CONTENTSIZE_UNKNOWN || content == ZSTD_CONTENTSIZE_ERROR || content != rows * row_bytes)
      return false;
    chunks->push_back({*p, static_cast<size_t>(bytes), static_cast<size_t>(rows), rows_seen});
    rows_seen += rows;
    *p += bytes;
  }
  return rows_seen == n;
}

bool DecodeChunk(const ChunkRef& c, size_t row_bytes, void* column, Transform transform, UndeltaFn undelta) {
  ZSTD_DCtx* d = ThreadDCtx();
  if (d == nullptr) return false;
  char* dst = static_cast<char*>(column) + c.first_row * row_bytes;
  size_t want = c.rows * row_bytes;
  bool shuffled = HasPlanes(transform);
  thread_local std::vector<char> planes;
  if (shuffled) planes.resize(want);
  char* to = shuffled ? planes.data() : dst;
  size_t got = ZSTD_decompressDCtx(d, to, want, c.src, c.bytes);
  if (ZSTD_isError(got) || got != want) return false;
  if (shuffled && !Shuffle(planes.data(), dst, c.rows, row_bytes, true)) return false;
  if (undelta) undelta(dst, c.rows);
  return true;
}

}  // namespace strata::index::codec
