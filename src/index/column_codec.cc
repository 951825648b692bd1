#include "index/column_codec.h"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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
// Starts at row `from` (rows before it are done by the caller). Plane b
// starts at byte b * stride.
template <size_t R, bool kBack>
void PlaneRowsSwar(const uint8_t* in, uint8_t* out, size_t rows, size_t stride, size_t from) {
  using W = std::conditional_t<R == 8, uint64_t, uint32_t>;
  // Where byte b of row r lies, as planes and as rows.
  auto plane = [stride](size_t b, size_t r) { return b * stride + r; };
  auto row = [](size_t b, size_t r) { return r * R + b; };
  size_t i = from;
  for (; i + R <= rows; i += R) {
    W a[R];
    for (size_t b = 0; b < R; ++b) std::memcpy(&a[b], in + (kBack ? plane(b, i) : row(0, i + b)), R);
    Transpose(a);
    for (size_t b = 0; b < R; ++b) std::memcpy(out + (kBack ? row(0, i + b) : plane(b, i)), &a[b], R);
  }
  for (; i < rows; ++i)
    for (size_t b = 0; b < R; ++b) out[kBack ? row(b, i) : plane(b, i)] = in[kBack ? plane(b, i) : row(b, i)];
}

#if defined(__SSE2__)
// 16 rows at a time in SSE2 registers (every x86-64 has them): rounds of
// unpacks interleave bytes, words and double words until each register holds
// one plane's 16 bytes (or, back, two rows). The rounds and the order of the
// results were found by simulating the unpacks on labelled bytes; the test
// checks them against PlaneRowsSwar. About 0.3 instructions per byte where
// the word transposes take 2.
using V = __m128i;
template <int kWidth, int n>
[[gnu::always_inline]] inline void Round(V* x) {  // x[j], x[j + n/2] = unpack lo, hi of x[2j], x[2j+1]
  V y[n];
#pragma GCC unroll 8
  for (int j = 0; j < n / 2; ++j) {
    V a = x[2 * j], b = x[2 * j + 1];
    if constexpr (kWidth == 8) y[j] = _mm_unpacklo_epi8(a, b), y[n / 2 + j] = _mm_unpackhi_epi8(a, b);
    if constexpr (kWidth == 16) y[j] = _mm_unpacklo_epi16(a, b), y[n / 2 + j] = _mm_unpackhi_epi16(a, b);
    if constexpr (kWidth == 32) y[j] = _mm_unpacklo_epi32(a, b), y[n / 2 + j] = _mm_unpackhi_epi32(a, b);
  }
#pragma GCC unroll 8
  for (int j = 0; j < n; ++j) x[j] = y[j];
}
template <size_t R, bool kBack>
size_t PlaneRowsSse2(const uint8_t* in, uint8_t* out, size_t rows, size_t stride) {
  constexpr int n = static_cast<int>(R);  // registers per block of 16 rows
  size_t i = 0;
  for (; i + 16 <= rows; i += 16) {
    V x[n];
    if constexpr (!kBack) {
#pragma GCC unroll 8
      for (int j = 0; j < n; ++j) x[j] = _mm_loadu_si128(reinterpret_cast<const V*>(in + i * R + 16 * j));
      if constexpr (R == 8) {
        Round<8, n>(x), Round<16, n>(x), Round<32, n>(x), Round<8, n>(x);
        constexpr int plane_of[8] = {0, 4, 2, 6, 1, 5, 3, 7};  // x[k] holds plane plane_of[k]
#pragma GCC unroll 8
        for (int k = 0; k < n; ++k) _mm_storeu_si128(reinterpret_cast<V*>(out + plane_of[k] * stride + i), x[k]);
      } else {
        Round<8, n>(x), Round<16, n>(x), Round<8, n>(x), Round<8, n>(x);
        constexpr int plane_of[4] = {0, 2, 1, 3};
#pragma GCC unroll 8
        for (int k = 0; k < n; ++k) _mm_storeu_si128(reinterpret_cast<V*>(out + plane_of[k] * stride + i), x[k]);
      }
    } else {
#pragma GCC unroll 8
      for (int b = 0; b < n; ++b) x[b] = _mm_loadu_si128(reinterpret_cast<const V*>(in + b * stride + i));
      if constexpr (R == 8) {
        Round<8, n>(x), Round<16, n>(x), Round<32, n>(x);
        constexpr int first_row[8] = {0, 8, 4, 12, 2, 10, 6, 14};  // x[k] holds rows first_row[k] and the next
#pragma GCC unroll 8
        for (int k = 0; k < n; ++k) _mm_storeu_si128(reinterpret_cast<V*>(out + (i + first_row[k]) * R), x[k]);
      } else {
        Round<8, n>(x), Round<16, n>(x);
        constexpr int first_row[4] = {0, 8, 4, 12};  // x[k] holds 4 rows from first_row[k]
#pragma GCC unroll 8
        for (int k = 0; k < n; ++k) _mm_storeu_si128(reinterpret_cast<V*>(out + (i + first_row[k]) * R), x[k]);
      }
    }
  }
  return i;
}
#endif

template <size_t R, bool kBack>
void PlaneRows(const uint8_t* in, uint8_t* out, size_t rows, size_t stride, bool vector) {
  size_t done = 0;
#if defined(__SSE2__)
  if (vector) done = PlaneRowsSse2<R, kBack>(in, out, rows, stride);
#else
  (void)vector;
#endif
  PlaneRowsSwar<R, kBack>(in, out, rows, stride, done);
}
bool Planes(const void* in, void* out, size_t rows, size_t row_bytes, size_t stride, bool back, bool vector) {
  auto* i = static_cast<const uint8_t*>(in);
  auto* o = static_cast<uint8_t*>(out);
  if (row_bytes == 8) {
    back ? PlaneRows<8, true>(i, o, rows, stride, vector) : PlaneRows<8, false>(i, o, rows, stride, vector);
  } else if (row_bytes == 4) {
    back ? PlaneRows<4, true>(i, o, rows, stride, vector) : PlaneRows<4, false>(i, o, rows, stride, vector);
  } else {
    return false;
  }
  return true;
}

// Rows taken to differences and planes this many at a time, through a
// buffer that stays in the first-level cache: a whole chunk's differences
// written and read back again missed the second level at every row.
constexpr size_t kStageRows = 2048;

// One chunk compressed: `out` receives the frame (empty on failure).
// A thread's grow-only scratch buffer, never cleared: a vector's resize
// value-initializes every byte it adds, and the trials of a column's first
// chunk shrink and regrow the same buffers (4-7% of building an index went
// to clearing them).
class Scratch {
 public:
  char* data() { return p_.get(); }
  char* Get(size_t bytes) {
    if (bytes > n_) {
      p_.reset(new char[bytes]);  // (default-initialized)
      n_ = bytes;
    }
    return p_.get();
  }

 private:
  std::unique_ptr<char[]> p_;
  size_t n_ = 0;
};

void Compress(const void* rows, size_t bytes, size_t row_bytes, DeltaFn delta, bool shuffle, std::vector<char>* out) {
  thread_local Scratch tmp, planes, frame;
  const void* src = rows;
  const size_t n = bytes / row_bytes;
  if (shuffle) {
    if (row_bytes != 4 && row_bytes != 8) return out->clear();
    planes.Get(bytes);
    if (delta) tmp.Get((kStageRows + 1) * row_bytes);
    const char* in = static_cast<const char*>(rows);
    for (size_t r = 0; r < n; r += kStageRows) {
      size_t m = std::min(kStageRows, n - r);
      const char* stage = in + r * row_bytes;
      if (delta && r == 0) {
        delta(stage, tmp.data(), m);
        stage = tmp.data();
      } else if (delta) {  // from the row before, whose difference is dropped
        delta(stage - row_bytes, tmp.data(), m + 1);
        stage = tmp.data() + row_bytes;
      }
      Planes(stage, planes.data() + r, m, row_bytes, n, false, true);
    }
    src = planes.data();
  } else if (delta) {
    delta(rows, tmp.Get(bytes), n);
    src = tmp.data();
  }
  // Into a scratch frame of the worst case's size, then only the frame's
  // bytes into `out` (sizing `out` to the bound cleared it all every chunk).
  const size_t bound = ZSTD_compressBound(bytes);
  char* f = frame.Get(bound);
  ZSTD_CCtx* c = ThreadCCtx();
  size_t z = c ? ZSTD_compressCCtx(c, f, bound, src, bytes, kLevel) : 0;
  if (c == nullptr || ZSTD_isError(z)) z = 0;
  out->assign(f, f + z);
}

void PutU64(const std::function<void(const void*, size_t)>& emit, uint64_t v) { emit(&v, sizeof v); }

bool GetU64(const uint8_t** p, const uint8_t* end, uint64_t* v) {
  if (static_cast<size_t>(end - *p) < sizeof *v) return false;
  std::memcpy(v, *p, sizeof *v);
  *p += sizeof *v;
  return true;
}

}  // namespace

bool BytePlanes(const void* in, void* out, size_t rows, size_t row_bytes, bool back, bool vector) {
  return Planes(in, out, rows, row_bytes, rows, back, vector);
}

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
  if (shuffled && !Planes(planes.data(), dst, c.rows, row_bytes, c.rows, true, true)) return false;
  if (undelta) undelta(dst, c.rows);
  return true;
}

}  // namespace strata::index::codec
