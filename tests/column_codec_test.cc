// The index's column codec (index/column_codec.h): columns of the shapes the
// model has come back exactly, the encoding chosen is the one that pays, and
// damaged chunk tables or frames are refused.
#include "index/column_codec.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <random>
#include <vector>

namespace strata::index::codec {
namespace {

struct Encoded {
  bool packed = false;
  std::vector<uint8_t> bytes;
};

template <class T>
Encoded Encode(const std::vector<T>& rows) {
  Encoded e;
  e.packed = EncodeColumn(rows.data(), rows.size(), sizeof(T), DeltaFor<T>(), [&](const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    e.bytes.insert(e.bytes.end(), b, b + n);
  });
  return e;
}

// Scans and decodes an encoded column of `n` rows; false if refused.
template <class T>
bool Decode(const std::vector<uint8_t>& bytes, size_t n, std::vector<T>* out, Transform* transform = nullptr,
            size_t* chunk_count = nullptr) {
  const uint8_t* p = bytes.data();
  Transform t{};
  std::vector<ChunkRef> chunks;
  if (!ScanChunks(&p, bytes.data() + bytes.size(), n, sizeof(T), &t, &chunks)) return false;
  if (p != bytes.data() + bytes.size()) return false;
  out->assign(n, T{});
  UndeltaFn undelta = HasDelta(t) ? UndeltaFor<T>() : nullptr;
  for (const ChunkRef& c : chunks)
    if (!DecodeChunk(c, sizeof(T), out->data(), t, undelta)) return false;
  if (transform) *transform = t;
  if (chunk_count) *chunk_count = chunks.size();
  return true;
}

TEST(ColumnCodec, SortedTimestampsAreStoredAsDifferencesInChunks) {
  // 400k sorted timestamps with jitter: 3.2 MB, four chunks.
  std::mt19937_64 rng(7);
  std::vector<int64_t> ts(400000);
  int64_t t = 1'700'000'000'000'000'000;
  for (auto& v : ts) v = t += 1000 + static_cast<int64_t>(rng() % 200);
  Encoded e = Encode(ts);
  ASSERT_TRUE(e.packed);
  // Differences of ~1000 fit in two bytes; as byte planes, six of the eight
  // are zeros and the low two compress too.
  EXPECT_LT(e.bytes.size(), ts.size() * sizeof(int64_t) / 5);
  std::vector<int64_t> back;
  Transform tr{};
  size_t chunks = 0;
  ASSERT_TRUE(Decode(e.bytes, ts.size(), &back, &tr, &chunks));
  EXPECT_EQ(tr, Transform::kDeltaShuffle);
  EXPECT_EQ(chunks, 4u);
  EXPECT_EQ(back, ts);
}

TEST(ColumnCodec, NegativeAndWrappingIntegersComeBackExactly) {
  std::vector<int32_t> parent(5000);
  for (size_t i = 0; i < parent.size(); ++i) parent[i] = i % 7 == 0 ? -1 : static_cast<int32_t>(i - 1);
  std::vector<uint64_t> big(5000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = i % 2 ? UINT64_MAX - i : i;  // differences wrap
  Encoded a = Encode(parent), b = Encode(big);
  ASSERT_TRUE(a.packed);
  std::vector<int32_t> pa;
  ASSERT_TRUE(Decode(a.bytes, parent.size(), &pa));
  EXPECT_EQ(pa, parent);
  if (b.packed) {
    std::vector<uint64_t> pb;
    ASSERT_TRUE(Decode(b.bytes, big.size(), &pb));
    EXPECT_EQ(pb, big);
  }
}

TEST(ColumnCodec, FloatsAndArraysAreCompressedWithoutDifferences) {
  std::vector<double> value(20000);
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<double>(i % 50) * 0.5;
  std::vector<std::array<uint32_t, 3>> grid(3000, {128, 1, 1});
  Encoded v = Encode(value), g = Encode(grid);
  ASSERT_TRUE(v.packed);
  ASSERT_TRUE(g.packed);
  std::vector<double> bv;
  std::vector<std::array<uint32_t, 3>> bg;
  Transform tv{}, tg{};
  ASSERT_TRUE(Decode(v.bytes, value.size(), &bv, &tv));
  ASSERT_TRUE(Decode(g.bytes, grid.size(), &bg, &tg));
  EXPECT_NE(tv, Transform::kDelta);  // no differences of floats (byte planes may pay)
  EXPECT_NE(tv, Transform::kDeltaShuffle);
  EXPECT_EQ(tg, Transform::kNone);  // 12-byte rows: neither
  EXPECT_EQ(bv, value);
  EXPECT_EQ(bg, grid);
}

// Byte planes of 4- and 8-byte rows, whatever the row count (blocks of 8 rows
// transposed at once, the rest one by one), in chunks that do not end on a
// block: every value, negative and wrapping ones too, comes back.
TEST(ColumnCodec, BytePlanesComeBackExactlyForAnyRowCount) {
  std::mt19937_64 rng(11);
  for (size_t n : {1031u, 262147u, 400003u}) {
    std::vector<uint64_t> wide(n);
    std::vector<int32_t> narrow(n);
    uint64_t acc = 0;
    for (size_t i = 0; i < n; ++i) {
      acc += rng() % 300;  // sorted, small differences: delta then planes
      wide[i] = i % 4097 == 0 ? UINT64_MAX - i : acc;
      narrow[i] = static_cast<int32_t>(i / 3) - (i % 11 == 0 ? 70000 : 0);
    }
    Encoded w = Encode(wide), m = Encode(narrow);
    ASSERT_TRUE(w.packed);
    ASSERT_TRUE(m.packed);
    std::vector<uint64_t> bw;
    std::vector<int32_t> bm;
    Transform tw{}, tm{};
    ASSERT_TRUE(Decode(w.bytes, n, &bw, &tw));
    ASSERT_TRUE(Decode(m.bytes, n, &bm, &tm));
    EXPECT_EQ(tw, Transform::kDeltaShuffle) << n;
    EXPECT_EQ(bw, wide) << n;
    EXPECT_EQ(bm, narrow) << n << " transform " << static_cast<int>(tm);
  }
}

// The planes are a format on disk: byte b of row r is at b * rows + r, by the
// vector path and the portable one alike, for row counts around the vector
// block (16 rows) and the word block (8 or 4), and back again.
TEST(ColumnCodec, BytePlanesAreTheDefinitionOnEveryPath) {
  std::mt19937_64 rng(5);
  for (size_t row_bytes : {4u, 8u}) {
    for (size_t rows : {0u, 1u, 3u, 4u, 7u, 8u, 15u, 16u, 17u, 31u, 32u, 33u, 100u, 4099u}) {
      std::vector<uint8_t> in(rows * row_bytes);
      for (auto& b : in) b = static_cast<uint8_t>(rng());
      std::vector<uint8_t> want(in.size());
      for (size_t r = 0; r < rows; ++r)
        for (size_t b = 0; b < row_bytes; ++b) want[b * rows + r] = in[r * row_bytes + b];
      for (bool vector : {true, false}) {
        std::vector<uint8_t> planes(in.size(), 0xee), back(in.size(), 0xee);
        ASSERT_TRUE(strata::index::codec::BytePlanes(in.data(), planes.data(), rows, row_bytes, false, vector));
        EXPECT_EQ(planes, want) << row_bytes << " bytes, " << rows << " rows, vector " << vector;
        ASSERT_TRUE(strata::index::codec::BytePlanes(planes.data(), back.data(), rows, row_bytes, true, vector));
        EXPECT_EQ(back, in) << row_bytes << " bytes, " << rows << " rows, vector " << vector;
      }
    }
  }
  uint8_t x[12] = {};
  EXPECT_FALSE(strata::index::codec::BytePlanes(x, x, 1, 12, false));
}

TEST(ColumnCodec, SmallAndIncompressibleColumnsStayRaw) {
  std::vector<int64_t> small(100, 5);
  EXPECT_FALSE(Encode(small).packed);
  std::mt19937_64 rng(11);
  std::vector<uint64_t> noise(100000);
  for (auto& v : noise) v = rng();
  Encoded e = Encode(noise);
  EXPECT_FALSE(e.packed);
  EXPECT_TRUE(e.bytes.empty());  // nothing emitted: the caller writes the rows raw
}

TEST(ColumnCodec, DamagedTablesAndFramesAreRefused) {
  std::vector<int64_t> ts(3000);
  for (size_t i = 0; i < ts.size(); ++i) ts[i] = static_cast<int64_t>(i) * 1000;
  Encoded e = Encode(ts);
  ASSERT_TRUE(e.packed);
  std::vector<int64_t> out;
  ASSERT_TRUE(Decode(e.bytes, ts.size(), &out));
  EXPECT_FALSE(Decode(e.bytes, ts.size() + 1, &out)) << "chunks holding fewer rows than the column";
  EXPECT_FALSE(Decode(e.bytes, ts.size() - 1, &out)) << "chunks holding more rows than the column";
  std::vector<uint8_t> cut(e.bytes.begin(), e.bytes.end() - 3);
  EXPECT_FALSE(Decode(cut, ts.size(), &out)) << "a truncated frame";
  std::vector<uint8_t> bad_transform = e.bytes;
  bad_transform[0] = 9;
  EXPECT_FALSE(Decode(bad_transform, ts.size(), &out));
  // A chunk whose stated rows the frame does not hold.
  std::vector<uint8_t> rows_lie = e.bytes;
  uint64_t rows = 0;
  std::memcpy(&rows, rows_lie.data() + 16, 8);
  rows += 1;
  std::memcpy(rows_lie.data() + 16, &rows, 8);
  EXPECT_FALSE(Decode(rows_lie, ts.size() + 1, &out));
  // A frame that is no zstd frame (its magic number broken). Damage deeper in
  // a frame may still decode: the index's section checksum catches that.
  std::vector<uint8_t> not_zstd = e.bytes;
  not_zstd[32] ^= 0x5a;  // after the transform, the chunk count, the rows and the size
  EXPECT_FALSE(Decode(not_zstd, ts.size(), &out));
  // A frame that ends early.
  std::vector<uint8_t> short_frame = e.bytes;
  uint64_t bytes = 0;
  std::memcpy(&bytes, short_frame.data() + 24, 8);
  bytes -= 4;
  std::memcpy(short_frame.data() + 24, &bytes, 8);
  short_frame.resize(short_frame.size() - 4);
  EXPECT_FALSE(Decode(short_frame, ts.size(), &out));
}

}  // namespace
}  // namespace strata::index::codec
