// The trace format: TSDL generation and parsing, CTF packet writing and reading,
// and clear errors on corrupted or truncated input.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "base/files.h"
#include "format/ctf_reader.h"
#include "format/ctf_writer.h"
#include "format/schema.h"
#include "format/tsdl.h"
#include "tests/testing.h"

namespace strata::format {
namespace {

TraceIdentity TestIdentity() {
  TraceIdentity id;
  id.uuid = NewRandomUuid();
  id.clock_offset_ns = 1700000000123456789;
  id.hostname = "test\"host";
  return id;
}

TEST(Tsdl, RoundTripsTheSchema) {
  TraceIdentity id = TestIdentity();
  std::string text = GenerateMetadata(id);
  auto md = ParseMetadata(text);
  ASSERT_TRUE(md.ok()) << md.status().message();
  EXPECT_EQ(md->uuid, id.uuid);
  EXPECT_EQ(md->major, kSchemaMajor);
  EXPECT_EQ(md->clock_offset_ns, id.clock_offset_ns);
  EXPECT_EQ(md->hostname, "testhost");
  for (const StreamSpec& s : Streams()) {
    ASSERT_LT(s.id, md->streams.size());
    const ParsedStream& ps = md->streams[s.id];
    EXPECT_TRUE(ps.declared);
    ASSERT_EQ(ps.context.size(), s.context.size()) << s.name;
    for (size_t i = 0; i < s.context.size(); ++i) EXPECT_EQ(ps.context[i].name, s.context[i].name);
    for (const EventSpec& e : s.events) {
      ASSERT_LT(e.id, ps.events.size());
      const ParsedEvent& pe = ps.events[e.id];
      EXPECT_EQ(pe.name, e.name);
      ASSERT_EQ(pe.fields.size(), e.fields.size()) << e.name;
      int32_t size = 0;
      for (size_t i = 0; i < e.fields.size(); ++i) {
        EXPECT_EQ(pe.fields[i].name, e.fields[i].name);
        EXPECT_EQ(pe.fields[i].type, e.fields[i].type);
        size = (size < 0 || e.fields[i].type == FieldType::kString) ? -1 : size + static_cast<int32_t>(FieldSize(e.fields[i].type));
      }
      EXPECT_EQ(pe.fixed_size, size) << e.name;
    }
  }
}

TEST(Tsdl, NegativeClockOffset) {
  TraceIdentity id = TestIdentity();
  id.clock_offset_ns = -1500000001;
  auto md = ParseMetadata(GenerateMetadata(id));
  ASSERT_TRUE(md.ok()) << md.status().message();
  EXPECT_EQ(md->clock_offset_ns, -1500000001);
}

// The clock block's offset_s * 1e9 + offset overflowed int64 (undefined
// behaviour, found by libFuzzer): a sum outside int64 is now an error.
TEST(Tsdl, ClockOffsetOutsideInt64IsAnError) {
  TraceIdentity id = TestIdentity();
  id.clock_offset_ns = 0;
  std::string text = GenerateMetadata(id);
  size_t at = text.find("\toffset_s = 0;\n\toffset = 0;");
  ASSERT_NE(at, std::string::npos);
  auto with = [&](const std::string& s, const std::string& ns) {
    std::string m = text;
    m.replace(at, std::strlen("\toffset_s = 0;\n\toffset = 0;"), "\toffset_s = " + s + ";\n\toffset = " + ns + ";");
    return ParseMetadata(m);
  };
  auto max = with("9223372036", "854775807");
  ASSERT_TRUE(max.ok()) << max.status().message();
  EXPECT_EQ(max->clock_offset_ns, INT64_MAX);
  auto min = with("-9223372036", "-854775808");
  ASSERT_TRUE(min.ok()) << min.status().message();
  EXPECT_EQ(min->clock_offset_ns, INT64_MIN);
  for (auto [s, ns] : {std::pair<const char*, const char*>{"9223372036", "854775808"}, {"9223372037", "0"},
                       {"-9223372037", "0"}, {"9223372036854775807", "0"}, {"-9223372036854775808", "-1"},
                       {"-9223372036", "-854775809"}}) {
    auto md = with(s, ns);
    ASSERT_FALSE(md.ok()) << s << " " << ns;
    EXPECT_NE(md.status().message().find("clock offset out of range"), std::string::npos) << md.status().message();
  }
}

TEST(Tsdl, CorruptedMetadataNamesTheByteOffset) {
  std::string text = GenerateMetadata(TestIdentity());
  // Every truncation point either parses to an error naming an offset or, when
  // cut between complete blocks, at worst loses whole event classes.
  for (size_t cut : {size_t{0}, size_t{5}, size_t{100}, text.size() / 3, text.size() / 2, text.size() - 3}) {
    auto md = ParseMetadata(text.substr(0, cut));
    if (md.ok()) {
      continue;
    }
    EXPECT_NE(md.status().message().find("metadata"), std::string::npos) << md.status().message();
  }
  std::string bad = text;
  size_t pos = bad.find("stream_id = 0;");
  ASSERT_NE(pos, std::string::npos);
  bad[pos + 10] = '@';
  auto md = ParseMetadata(bad);
  ASSERT_FALSE(md.ok());
  EXPECT_NE(md.status().message().find("byte " + std::to_string(pos + 10)), std::string::npos) << md.status().message();
  auto empty = ParseMetadata("");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("CTF 1.8"), std::string::npos);
}

TEST(Tsdl, RandomByteFlipsNeverCrash) {
  std::string text = GenerateMetadata(TestIdentity());
  std::mt19937 rng(42);
  for (int i = 0; i < 2000; ++i) {
    std::string m = text;
    for (int k = 0; k < 3; ++k) m[rng() % m.size()] = static_cast<char>(rng());
    auto md = ParseMetadata(m);
    if (!md.ok()) {
      EXPECT_FALSE(md.status().message().empty());
    }
  }
}

class CtfFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    id_ = TestIdentity();
    auto md = ParseMetadata(GenerateMetadata(id_));
    ASSERT_TRUE(md.ok());
    md_ = std::move(md).value();
    path_ = dir_ + "/stream";
  }

  struct Ev {
    uint32_t id;
    uint64_t ts;
    std::vector<uint8_t> payload;
  };

  std::vector<Ev> ReadAll(Status* st, size_t* trailing = nullptr) {
    auto map = MappedFile::Open(path_);
    EXPECT_TRUE(map.ok());
    StreamFileReader r(md_, map->data(), map->size(), path_);
    std::vector<Ev> out;
    Packet pk;
    EventView ev;
    while (r.NextPacket(&pk)) {
      while (r.NextEvent(&ev)) out.push_back({ev.id, ev.ts, std::vector<uint8_t>(ev.payload, ev.payload + ev.size)});
      if (!r.status().ok()) break;
    }
    *st = r.status();
    if (trailing) *trailing = r.trailing_bytes();
    return out;
  }

  // A stream file's packets as the reader sees them.
  struct Scan {
    std::vector<uint64_t> seqs, discarded;
    int events = 0;
    uint64_t damaged_packets = 0, trailing_bytes = 0;
  };
  Scan ScanPackets() { return ScanPackets(path_); }
  Scan ScanPackets(const std::string& path) {
    Scan out;
    auto map = MappedFile::Open(path);
    EXPECT_TRUE(map.ok());
    if (!map.ok()) return out;
    StreamFileReader r(md_, map->data(), map->size(), path);
    Packet pk;
    EventView ev;
    while (r.NextPacket(&pk)) {
      out.seqs.push_back(pk.seq);
      out.discarded.push_back(pk.discarded);
      while (r.NextEvent(&ev)) ++out.events;
    }
    out.damaged_packets = r.damaged_packets();
    out.trailing_bytes = r.trailing_bytes();
    return out;
  }

  std::string dir_, path_;
  TraceIdentity id_;
  ParsedMetadata md_;
};

TEST_F(CtfFile, WriterReaderRoundTripWithCompactAndExtendedHeaders) {
  const StreamSpec& spec = *FindStream(kThreadStream);
  StreamWriter w(id_.uuid, spec, 77, {1234, 5678, 99});
  ASSERT_TRUE(w.Open(path_).ok());
  std::vector<Ev> expect;
  uint64_t ts = 1000;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 50000; ++i) {
    // Mostly small gaps (compact header), some > 2^27 ns (extended), some equal.
    uint64_t gap = (i % 997 == 0) ? (uint64_t{1} << 28) + rng() % 1000 : rng() % 5000;
    ts += gap;
    uint32_t id;
    std::vector<uint8_t> p;
    switch (i % 4) {
      case 0: {
        id = kSpanBegin;
        uint32_t name = static_cast<uint32_t>(i);
        p.resize(4);
        std::memcpy(p.data(), &name, 4);
        break;
      }
      case 1: id = kSpanEnd; break;
      case 2: {
        id = kCounter;
        uint32_t name = 3;
        double v = i * 0.5;
        p.resize(12);
        std::memcpy(p.data(), &name, 4);
        std::memcpy(p.data() + 4, &v, 8);
        break;
      }
      default: {
        id = kFlowOut;
        uint64_t f = rng();
        p.resize(8);
        std::memcpy(p.data(), &f, 8);
      }
    }
    w.Append(id, ts, p.data(), p.size());
    expect.push_back({id, ts, p});
    if (i % 10000 == 9999) {
      ASSERT_TRUE(w.Flush(ts).ok());
    }
  }
  ASSERT_TRUE(w.Close(ts).ok());
  Status st;
  std::vector<Ev> got = ReadAll(&st);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(got.size(), expect.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].id, expect[i].id) << i;
    ASSERT_EQ(got[i].ts, expect[i].ts) << i;
    ASSERT_EQ(got[i].payload, expect[i].payload) << i;
  }
  // 4-byte headers dominate: the file is far below 13 bytes of header per event.
  auto size = std::filesystem::file_size(path_);
  EXPECT_LT(size, expect.size() * 11);
}

TEST_F(CtfFile, StringPayloadsAndDiscardedCounts) {
  const StreamSpec& spec = *FindStream(kProcessStream);
  StreamWriter w(id_.uuid, spec, 5, {42, 7});
  ASSERT_TRUE(w.Open(path_).ok());
  std::string p;
  uint32_t id = 9;
  p.append(reinterpret_cast<const char*>(&id), 4);
  p += "aten::conv2d";
  p.push_back('\0');
  w.Append(kNameDef, 100, p.data(), p.size());
  w.set_discarded(3);
  ASSERT_TRUE(w.Flush(200).ok());
  w.set_discarded(10);
  ASSERT_TRUE(w.Flush(300).ok());  // an empty packet carrying the new count
  ASSERT_TRUE(w.Close(400).ok());

  auto map = MappedFile::Open(path_);
  ASSERT_TRUE(map.ok());
  StreamFileReader r(md_, map->data(), map->size(), path_);
  Packet pk;
  std::vector<uint64_t> discarded;
  EventView ev;
  int events = 0;
  while (r.NextPacket(&pk)) {
    EXPECT_EQ(pk.context[0], 42u);
    EXPECT_EQ(pk.context[1], 7u);
    discarded.push_back(pk.discarded);
    while (r.NextEvent(&ev)) {
      ++events;
      ASSERT_EQ(ev.size, p.size());
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(ev.payload) + 4), "aten::conv2d");
    }
  }
  ASSERT_TRUE(r.status().ok()) << r.status().message();
  EXPECT_EQ(events, 1);
  // A leading empty packet with a count of 0: losses before the first packet
  // become a difference between packets, which babeltrace2 counts (it takes a
  // stream's first value as the counter's baseline).
  EXPECT_EQ(discarded, (std::vector<uint64_t>{0, 3, 10}));
  EXPECT_EQ(w.packets(), 3u);
}

TEST_F(CtfFile, TruncatedFileKeepsCompletePackets) {
  const StreamSpec& spec = *FindStream(kThreadStream);
  StreamWriter w(id_.uuid, spec, 1, {1, 1, 1});
  ASSERT_TRUE(w.Open(path_).ok());
  uint32_t name = 1;
  for (int pkt = 0; pkt < 3; ++pkt) {
    for (int i = 0; i < 100; ++i) w.Append(kSpanBegin, 1000 + pkt * 1000 + i, &name, 4);
    ASSERT_TRUE(w.Flush(5000 + pkt * 1000).ok());
  }
  ASSERT_TRUE(w.Close(9000).ok());
  auto full = std::filesystem::file_size(path_);
  // Cut in the middle of the last packet: the first two stay readable.
  ASSERT_EQ(::truncate(path_.c_str(), static_cast<off_t>(full - 50)), 0);
  Status st;
  size_t trailing = 0;
  auto got = ReadAll(&st, &trailing);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(got.size(), 200u);
  EXPECT_GT(trailing, 0u);
}

// Writes `packets` packets of 100 span_begin events each (ts 1000*(k+1) + i).
void WriteSpans(StreamWriter& w, int packets, int first_packet = 0) {
  uint32_t name = 1;
  for (int k = first_packet; k < first_packet + packets; ++k) {
    for (int i = 0; i < 100; ++i) w.Append(kSpanBegin, 1000 * static_cast<uint64_t>(k + 1) + i, &name, 4);
    ASSERT_TRUE(w.Flush(0).ok());
  }
}

// Offsets of every packet in a file written by StreamWriter (packets are not padded).
std::vector<size_t> PacketOffsets(const std::string& bytes) {
  std::vector<size_t> out;
  for (size_t off = 0; off + kPacketHeaderSize + 32 <= bytes.size();) {
    out.push_back(off);
    uint64_t bits;
    std::memcpy(&bits, bytes.data() + off + kPacketHeaderSize + 24, 8);
    off += bits / 8;
  }
  return out;
}

// A damaged packet costs that packet: the reader skips it to the next valid
// packet header, counts it and says where and why; the other packets' events
// all come through.
TEST_F(CtfFile, ADamagedPacketCostsThatPacketOnly) {
  const StreamSpec& spec = *FindStream(kThreadStream);
  {
    StreamWriter w(id_.uuid, spec, 1, {1, 1, 1});
    ASSERT_TRUE(w.Open(path_).ok());
    WriteSpans(w, 3);
    ASSERT_TRUE(w.Close(0).ok());
  }
  auto original = ReadFile(path_);
  ASSERT_TRUE(original.ok());
  std::vector<size_t> at = PacketOffsets(*original);
  ASSERT_EQ(at.size(), 3u);
  struct Case {
    size_t offset;
    std::string expect;
    uint8_t flip = 0x5a;
  } cases[] = {
      {at[0], "bad packet magic"},
      {at[1], "bad packet magic"},
      {at[2], "bad packet magic"},
      {at[0] + 5, "uuid"},
      {at[1] + 20, "unknown stream class"},
      {at[0] + 24, "instance"},                     // stream_instance_id: not this stream's
      {at[1] + kPacketHeaderSize + 16, "packet"},   // content_size
      {at[0] + kPacketHeaderSize + 24, "packet"},   // the first packet's packet_size
      {at[0] + kPacketHeaderSize + 31, "packet"},   // its top byte: runs past the end of the file
      {at[1] + kPacketHeaderSize + 7, "timestamp"},  // timestamp_begin's top byte: after timestamp_end
      {at[2] + kPacketHeaderSize + 9, "timestamp", 0x08},  // timestamp_end below the events
  };
  for (const Case& c : cases) {
    std::string bad = *original;
    bad[c.offset] = static_cast<char>(bad[c.offset] ^ c.flip);
    ASSERT_TRUE(WriteFileAtomic(path_, bad).ok());
    auto map = MappedFile::Open(path_);
    ASSERT_TRUE(map.ok());
    StreamFileReader r(md_, map->data(), map->size(), path_);
    Packet pk;
    EventView ev;
    int events = 0;
    while (r.NextPacket(&pk))
      while (r.NextEvent(&ev)) ++events;
    EXPECT_TRUE(r.status().ok()) << r.status().message();
    EXPECT_EQ(events, 200) << "byte " << c.offset;
    EXPECT_EQ(r.damaged_packets(), 1u) << "byte " << c.offset;
    ASSERT_FALSE(r.damage().empty());
    EXPECT_NE(r.damage()[0].what.find(c.expect), std::string::npos) << "byte " << c.offset << ": " << r.damage()[0].what;
    EXPECT_NE(r.damage()[0].what.find("byte "), std::string::npos) << r.damage()[0].what;
    uint32_t sid = 99;
    uint64_t inst = 0;
    ASSERT_TRUE(r.Identify(&sid, &inst));
    EXPECT_EQ(sid, kThreadStream);
    EXPECT_EQ(inst, 1u);
  }
  // A flipped byte in an event is found when the events no longer decode
  // within the packet's content, or go back in time or past its end: then the
  // rest of that packet is lost, and nothing else. A flip the structure cannot
  // reveal (a payload byte; an id turned into another event whose size happens
  // to realign) keeps the packet, one event misread at most.
  size_t header = kPacketHeaderSize + kCommonContextSize;
  for (const ParsedField& f : md_.streams[kThreadStream].context) header += FieldSize(f.type);
  std::mt19937 rng(3);
  for (int i = 0; i < 300; ++i) {
    std::string bad = *original;
    size_t off = at[1] + header + rng() % (at[2] - at[1] - header);
    bad[off] = static_cast<char>(bad[off] ^ (1 << (rng() % 8)));
    ASSERT_TRUE(WriteFileAtomic(path_, bad).ok());
    auto map = MappedFile::Open(path_);
    StreamFileReader r(md_, map->data(), map->size(), path_);
    Packet pk;
    EventView ev;
    int events = 0;
    while (r.NextPacket(&pk))
      while (r.NextEvent(&ev)) ++events;
    EXPECT_LE(r.damaged_packets(), 1u);
    if (r.damaged_packets()) {
      EXPECT_GE(events, 200) << "byte " << off;
      EXPECT_LT(events, 300) << "byte " << off;
      // What was skipped runs from the damaged event to the end of the packet.
      EXPECT_EQ(r.damage()[0].offset + r.damage()[0].bytes, at[2]) << "byte " << off;
      EXPECT_LE(r.damage()[0].offset, off + 13) << "byte " << off;
    } else {
      EXPECT_NEAR(events, 300, 1) << "byte " << off;
    }
  }
  // Random corruption anywhere never crashes the reader.
  for (int i = 0; i < 3000; ++i) {
    std::string bad = *original;
    for (int k = 0; k < 4; ++k) bad[rng() % bad.size()] = static_cast<char>(rng());
    ASSERT_TRUE(WriteFileAtomic(path_, bad).ok());
    Status st;
    ReadAll(&st);
  }
}

// Runs `fn` with writes beyond `limit` bytes of a file failing (EFBIG), as on a
// full disk: the process's file size limit, with SIGXFSZ ignored.
template <typename Fn>
void WithFileSizeLimit(rlim_t limit, Fn&& fn) {
  struct rlimit old;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = limit;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &lim), 0);
  fn();
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old), 0);
  ::signal(SIGXFSZ, old_handler);
}

// A packet that cannot be written (the disk is full) is cut off again: the
// file ends on its last complete packet, the lost events are counted, and the
// next packet written carries them in events_discarded, with no gap in the
// packet numbers.
TEST_F(CtfFile, AFailedWriteLeavesWholePacketsAndCountsItsEvents) {
  const StreamSpec& spec = *FindStream(kThreadStream);
  StreamWriter w(id_.uuid, spec, 1, {1, 1, 1});
  ASSERT_TRUE(w.Open(path_).ok());
  WriteSpans(w, 2);
  uint64_t two = std::filesystem::file_size(path_);
  uint32_t name = 1;
  WithFileSizeLimit(two + 100, [&] {
    for (int i = 0; i < 100; ++i) w.Append(kSpanBegin, 3000 + i, &name, 4);
    Status st = w.Flush(0);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find(path_), std::string::npos) << st.message();
  });
  EXPECT_EQ(std::filesystem::file_size(path_), two) << "the partial packet must be cut off";
  EXPECT_EQ(w.write_failed_events(), 100u);
  EXPECT_GT(w.write_failed_bytes(), 400u);
  EXPECT_EQ(w.last_error(), EFBIG);
  EXPECT_EQ(w.events_written(), 200u);
  WriteSpans(w, 1, 3);
  ASSERT_TRUE(w.Close(0).ok());

  Scan sc = ScanPackets();
  EXPECT_EQ(sc.events, 300);
  EXPECT_EQ(sc.damaged_packets, 0u);
  EXPECT_EQ(sc.trailing_bytes, 0u);
  EXPECT_EQ(sc.seqs, (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(sc.discarded, (std::vector<uint64_t>{0, 0, 100}));
  // The disk was full before the first packet: a leading empty packet makes
  // the loss a difference between packets, as for drops.
  std::string second = dir_ + "/second";
  StreamWriter w2(id_.uuid, spec, 2, {1, 2, 1});
  ASSERT_TRUE(w2.Open(second).ok());
  WithFileSizeLimit(10, [&] {
    for (int i = 0; i < 50; ++i) w2.Append(kSpanBegin, 1000 + i, &name, 4);
    EXPECT_FALSE(w2.Flush(0).ok());
  });
  EXPECT_EQ(std::filesystem::file_size(second), 0u);
  ASSERT_TRUE(w2.Close(0).ok());  // nothing new, but the count changed: an empty packet carries it
  EXPECT_EQ(ScanPackets(second).discarded, (std::vector<uint64_t>{0, 50}));
}

// The supervisor continues a dead process's stream file: after its last
// complete packet (a partial one is cut off), with the next packet number and
// a loss count that goes on from the last one written.
TEST_F(CtfFile, ResumeContinuesAStreamAfterItsLastCompletePacket) {
  const StreamSpec& spec = *FindStream(kThreadStream);
  StreamWriter::ResumePoint at;
  {
    StreamWriter w(id_.uuid, spec, 7, {1, 1, 1});
    ASSERT_TRUE(w.Open(path_).ok());
    w.set_discarded(5);
    WriteSpans(w, 2);
    at = w.Current();
    uint32_t name = 1;
    for (int i = 0; i < 100; ++i) w.Append(kSpanBegin, 3000 + i, &name, 4);
    ASSERT_TRUE(w.Flush(0).ok());
  }
  // The third packet was being written when the process died: half of it is there.
  uint64_t full = std::filesystem::file_size(path_);
  ASSERT_EQ(::truncate(path_.c_str(), static_cast<off_t>(at.file_bytes + (full - at.file_bytes) / 2)), 0);
  EXPECT_EQ(at.next_seq, 3u);  // the leading empty packet, then two
  StreamWriter w(id_.uuid, spec, 7, {1, 1, 1});
  ASSERT_TRUE(w.Resume(path_, at).ok());
  w.set_discarded(9);
  WriteSpans(w, 1, 2);
  ASSERT_TRUE(w.Close(0).ok());
  Scan sc = ScanPackets();
  EXPECT_EQ(sc.events, 300);
  EXPECT_EQ(sc.damaged_packets, 0u);
  EXPECT_EQ(sc.seqs, (std::vector<uint64_t>{0, 1, 2, 3}));
  EXPECT_EQ(sc.discarded, (std::vector<uint64_t>{0, 5, 5, 9}));
}

}  // namespace
}  // namespace strata::format
