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

// One chunk compressed: `out` receives the frame (empty on failure).
void Compress(const void* rows, size_t bytes, size_t row_bytes, DeltaFn delta, std::vector<char>* out) {
  thread_local std::vector<char> tmp;
  const void* src = rows;
  if (delta) {
    tmp.resize(bytes);
    delta(rows, tmp.data(), bytes / row_bytes);
    src = tmp.data();
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

  // The first chunk decides: plain, or differences where they compress better.
  std::vector<char> first, alt;
  Compress(base, chunk_bytes(0), row_bytes, nullptr, &first);
  if (delta) {
    Compress(base, chunk_bytes(0), row_bytes, delta, &alt);
    if (!alt.empty() && (first.empty() || alt.size() < first.size())) first.swap(alt);
    else delta = nullptr;
  }
  if (first.empty() || static_cast<double>(first.size()) > kMaxRatio * static_cast<double>(chunk_bytes(0))) return false;

  PutU64(emit, static_cast<uint64_t>(delta ? Transform::kDelta : Transform::kNone));
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
      Compress(base + k * chunk_rows * row_bytes, chunk_bytes(k), row_bytes, delta, &out[i]);
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
  if (t != static_cast<uint64_t>(Transform::kNone) && t != static_cast<uint64_t>(Transform::kDelta)) return false;
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

bool DecodeChunk(const ChunkRef& c, size_t row_bytes, void* column, UndeltaFn undelta) {
  ZSTD_DCtx* d = ThreadDCtx();
  if (d == nullptr) return false;
  char* dst = static_cast<char*>(column) + c.first_row * row_bytes;
  size_t want = c.rows * row_bytes;
  size_t got = ZSTD_decompressDCtx(d, dst, want, c.src, c.bytes);
  if (ZSTD_isError(got) || got != want) return false;
  if (undelta) undelta(dst, c.rows);
  return true;
}

}  // namespace strata::index::codec
