// The trace index (index/): a trace opened through its index gives the same
// model, and so the same report, as one imported directly; an index built from
// other content, damaged or truncated is never trusted but rebuilt; a
// read-only trace is indexed in the cache directory.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>

#include "base/files.h"
#include "importers/load.h"
#include "index/content_key.h"
#include "index/index_file.h"
#include "index/lod.h"
#include "index/open_trace.h"
#include "index/results_file.h"
#include "report/report.h"
#include "testing.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using index::IndexOptions;
using index::IndexUse;
using testing::ExternalDataDir;
using testing::SharedTraces;
using testing::TempDir;

// A new, empty directory (TempDir names one and leaves it to the test to make).
std::string FreshDir(const std::string& name) {
  std::string d = TempDir(name);
  fs::create_directories(d);
  return d;
}

// The bytes of the model's main tables' columns, as they are in memory.
size_t ColumnBytes(const model::Trace& t) {
  size_t n = 0;
  auto add = [&n](const auto& table) {
    table.ForEachColumn([&n](const char*, const auto& c) { n += c.size() * sizeof(c[0]); });
  };
  add(t.slices);
  add(t.device);
  add(t.counters);
  add(t.args);
  add(t.memory);
  add(t.ops);
  add(t.syscalls);
  add(t.thread_states);
  return n;
}

// Every analysis, every row: what `strata report --json --full` prints.
std::string ReportJson(const model::Trace& t) {
  report::ReportOptions opt;
  opt.full = true;
  opt.what_if = true;
  report::Report r(t, opt);
  return r.Json().dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Imports `path` directly, then through an index twice (built, then read), and
// expects the three reports to be equal.
void ExpectSameThroughIndex(const std::string& path, const IndexOptions& io) {
  SCOPED_TRACE(path);
  auto direct = importers::LoadTrace(path);
  ASSERT_TRUE(direct.ok()) << direct.status().message();
  std::string want = ReportJson(*direct);
  IndexUse first, second;
  auto built = index::OpenTrace(path, {}, io, &first);
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_FALSE(first.read);
  EXPECT_TRUE(first.written);
  auto read = index::OpenTrace(path, {}, io, &second);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_TRUE(second.read) << "no index read back from " << first.path;
  EXPECT_EQ(second.path, first.path);
  EXPECT_EQ(read->path, path);
  EXPECT_EQ(ReportJson(*built), want);
  // The bound: the index at most 1.2x its CTF trace (past the fixed
  // cost of a small one's levels of detail and names). Columns that would
  // take more than kRawIndexShareOfTrace of the trace are compressed: the index
  // is a fraction of them (the timestamps alone, as differences, shrink several
  // times); else stored raw and read in place, views of the mapped index. Either
  // way no analysis changes them (and so copies them).
  auto trace_bytes = index::TraceBytes(path);
  ASSERT_TRUE(trace_bytes.ok());
  if (fs::is_directory(path) && *trace_bytes >= (size_t{256} << 10)) {
    EXPECT_LE(static_cast<double>(fs::file_size(first.path)), 1.2 * static_cast<double>(*trace_bytes)) << first.path;
  }
  size_t columns = ColumnBytes(*read);
  if (index::CompressIndexOf(*read, *trace_bytes)) {
    if (columns > (size_t{1} << 20)) {
      size_t strings = 0;
      for (size_t i = 0; i < read->strings.size(); ++i) strings += read->strings.Get(static_cast<model::StringId>(i)).size() + 8;
      EXPECT_LT(fs::file_size(first.path), (columns + strings) * 3 / 4) << first.path;
    }
    if (read->slices.size() * sizeof(int64_t) >= (size_t{64} << 10)) {
      EXPECT_FALSE(read->slices.ts.is_view()) << "slice timestamps were not compressed";
    }
  } else {
    EXPECT_LE(static_cast<double>(columns), index::kRawIndexShareOfTrace * static_cast<double>(*trace_bytes));
    if (read->slices.size() > 0) {
      EXPECT_TRUE(read->slices.ts.is_view()) << "raw columns are read in place";
    }
  }
  uint64_t copied = model::GetColumnStats().copied.load();
  std::string got = ReportJson(*read);
  EXPECT_EQ(model::GetColumnStats().copied.load(), copied) << "the report copied columns of the mapped index";
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want) << "the report of the indexed trace differs";
}

TEST(TraceIndex, SharedTracesGiveTheSameReportsThroughTheIndex) {
  auto traces = SharedTraces();
  if (traces.empty()) GTEST_SKIP() << "no shared external data (../shared/data/external)";
  // The shared data is never written to: its indexes go to a cache.
  IndexOptions io;
  io.beside = false;
  io.cache_dir = FreshDir("index_shared_cache");
  for (const std::string& p : traces) ExpectSameThroughIndex(p, io);
  EXPECT_GE(traces.size(), 15u);
}

TEST(TraceIndex, RecordedTraceIsIndexedInsideItsDirectory) {
  std::string dir = TempDir("index_recorded") + "/trace";
  auto r = testing::Record(dir, {testing::TestProgram("os_workload"), "sleep", "10", "10"}, {"--syscalls", "--sched"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  IndexOptions io;
  io.cache_dir = FreshDir("index_recorded_cache");
  ExpectSameThroughIndex(dir, io);
  EXPECT_TRUE(fs::exists(dir + "/.strata-index"));
  EXPECT_TRUE(fs::is_empty(io.cache_dir));
}

TEST(TraceIndex, TorchTraceGivesTheSameReportThroughTheIndex) {
  std::string why;
  if (!testing::TorchUsable(&why)) GTEST_SKIP() << why;
  std::string dir = TempDir("index_torch") + "/trace";
  auto r = testing::Record(dir, {testing::kPython, testing::SourceDir() + "/tests/programs/torch_train.py"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  IndexOptions io;
  io.cache_dir = FreshDir("index_torch_cache");
  ExpectSameThroughIndex(dir, io);
}

// A small Kineto trace copied into a fresh folder, to be changed by the test.
std::string CopyOfSmallTrace(const std::string& name, const std::string& which) {
  std::string root = ExternalDataDir();
  if (root.empty()) return "";
  std::string src = root + "/" + which;
  if (!fs::exists(src)) return "";
  std::string dst = FreshDir(name) + "/" + fs::path(src).filename().string();
  fs::copy_file(src, dst);
  fs::permissions(dst, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  return dst;
}
const char* kAlexnet = "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz";
const char* kTriton = "hta/triton_example/triton_example.json.gz";

TEST(TraceIndex, ChangedTraceIsIndexedAgain) {
  std::string p = CopyOfSmallTrace("index_changed", kAlexnet);
  if (p.empty()) GTEST_SKIP() << "no shared external data";
  IndexOptions io;
  IndexUse u;
  ASSERT_TRUE(index::OpenTrace(p, {}, io, &u).ok());
  ASSERT_TRUE(u.written);
  EXPECT_EQ(u.path, p + ".strata-index");
  // Another trace in its place: the index of the old content is not used.
  fs::copy_file(ExternalDataDir() + "/" + kTriton, p, fs::copy_options::overwrite_existing);
  fs::permissions(p, fs::perms::owner_write, fs::perm_options::add);
  auto t = index::OpenTrace(p, {}, io, &u);
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(u.read);
  EXPECT_TRUE(u.written);
  EXPECT_TRUE(u.rejected.empty()) << "stale, not damaged: " << u.rejected;
  auto direct = importers::LoadTrace(p);
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(t->slices.size(), direct->slices.size());
  EXPECT_EQ(ReportJson(*t), ReportJson(*direct));
  ASSERT_TRUE(index::OpenTrace(p, {}, io, &u).ok());
  EXPECT_TRUE(u.read);
}

// Builds the index of a copy of a small trace, damages it with `harm`, and
// expects the next open to reject it, import again and replace it.
// Flips the bits of one byte of a file (damage a checksum must catch).
void FlipByte(const std::string& path, std::streamoff at) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(at);
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5a);
  f.seekp(at);
  f.write(&c, 1);
}

void ExpectDamageDetected(const std::string& name, const std::function<void(const std::string&)>& harm,
                          const std::string& reason) {
  std::string p = CopyOfSmallTrace(name, kAlexnet);
  if (p.empty()) GTEST_SKIP() << "no shared external data";
  IndexOptions io;
  IndexUse u;
  std::string first_report;
  {
    auto first = index::OpenTrace(p, {}, io, &u);
    ASSERT_TRUE(first.ok() && u.written);
    first_report = ReportJson(*first);
  }  // (the model maps the index: harmed in place under it, it would fault)
  harm(u.path);
  auto t = index::OpenTrace(p, {}, io, &u);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_FALSE(u.read);
  EXPECT_NE(u.rejected.find(reason), std::string::npos) << u.rejected;
  EXPECT_TRUE(u.written);
  EXPECT_EQ(ReportJson(*t), first_report);
  ASSERT_TRUE(index::OpenTrace(p, {}, io, &u).ok());
  EXPECT_TRUE(u.read) << "the damaged index was not replaced";
}

// Once the trace's files are older than the file system's racy window, the
// index is trusted by their signature (no hashing of the trace); any write to
// the trace changes its change time, and so the signature, even with the same
// size and modification time put back.
TEST(TraceIndex, SettledTraceIsCheckedBySignatureAndAnEditIsNot) {
  std::string p = CopyOfSmallTrace("index_signature", kAlexnet);
  if (p.empty()) GTEST_SKIP() << "no shared external data";
  IndexOptions io;
  IndexUse u;
  ASSERT_TRUE(index::OpenTrace(p, {}, io, &u).ok());
  ASSERT_TRUE(u.written);
  ASSERT_TRUE(index::OpenTrace(p, {}, io, &u).ok());
  EXPECT_TRUE(u.read);
  EXPECT_FALSE(u.by_signature) << "a trace written a moment ago must be checked by content";
  ::sleep(3);
  ASSERT_TRUE(index::OpenTrace(p, {}, io, &u).ok());  // by content; records the settled signature
  EXPECT_TRUE(u.read);
  auto t = index::OpenTrace(p, {}, io, &u);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(u.read && u.by_signature);
  // The signature another strata build recorded (its own key and layout) is
  // not this build's: the index is checked by content again.
  std::string ix = p + ".strata-index";
  auto other = index::StatSignatureOf(p, index::BuildIdentity() ^ 1);
  ASSERT_TRUE(other.ok() && other->settled);
  ASSERT_TRUE(index::UpdateIndexSignature(ix, *other).ok());
  ASSERT_TRUE(index::OpenTrace(p, {}, io, &u).ok());
  EXPECT_TRUE(u.read);
  EXPECT_FALSE(u.by_signature) << "another build's signature was trusted";
  ASSERT_TRUE(index::OpenTrace(p, {}, io, &u).ok());  // this build's signature recorded again
  EXPECT_TRUE(u.read && u.by_signature);
  // One byte changed in place, the modification time put back.
  auto mtime = fs::last_write_time(p);
  {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
  }
  fs::last_write_time(p, mtime);
  auto edited = index::OpenTrace(p, {}, io, &u);  // (may not import: a byte of gzip changed)
  EXPECT_FALSE(u.read) << "an edited trace was served from its old index";
  EXPECT_TRUE(u.rejected.empty()) << u.rejected;
}

TEST(TraceIndex, DamagedIndexIsRebuilt) {
  ExpectDamageDetected("index_damaged", [](const std::string& ix) {
    FlipByte(ix, static_cast<std::streamoff>(fs::file_size(ix)) / 2);
  }, "checksum");
}

TEST(TraceIndex, TruncatedIndexIsRebuilt) {
  ExpectDamageDetected("index_truncated", [](const std::string& ix) {
    fs::resize_file(ix, fs::file_size(ix) / 2);
  }, "truncated");
}

// strata never changes an index in place (it writes a new one and renames
// it), but another program may: an index shortened while a model maps it ends
// the process with a one-line error naming it, not a crash.
TEST(TraceIndexDeathTest, IndexShortenedUnderAReaderIsAnErrorNotACrash) {
  std::string p = CopyOfSmallTrace("index_shortened", kAlexnet);
  if (p.empty()) GTEST_SKIP() << "no shared external data";
  IndexOptions io;
  IndexUse u;
  ASSERT_TRUE(index::OpenTrace(p, {}, io, &u).ok() && u.written);
  auto t = index::OpenTrace(p, {}, io, &u);  // mapped: its strings and raw columns are views
  ASSERT_TRUE(t.ok() && u.read);
  EXPECT_EXIT(
      {
        MappedFile::InstallGuard();
        fs::resize_file(u.path, 64);
        std::string r = ReportJson(*t);
        std::fprintf(stderr, "report of %zu bytes\n", r.size());
        std::exit(0);
      },
      ::testing::ExitedWithCode(1), "was shortened by another program while strata read it");
}

TEST(TraceIndex, NotAnIndexIsRebuilt) {
  ExpectDamageDetected("index_garbage", [](const std::string& ix) {
    std::ofstream out(ix, std::ios::trunc);
    for (int i = 0; i < 10; ++i) out << "this is not an index, whatever its name says\n";
  }, "not a strata index");
}

TEST(TraceIndex, ReadOnlyTraceIsIndexedInTheCache) {
  std::string dir = TempDir("index_readonly") + "/trace";
  auto r = testing::Record(dir, {testing::TestProgram("emitter"), "1", "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(::chmod(dir.c_str(), 0555), 0);
  IndexOptions io;
  io.cache_dir = FreshDir("index_readonly_cache");
  IndexUse u;
  ASSERT_TRUE(index::OpenTrace(dir, {}, io, &u).ok());
  EXPECT_TRUE(u.written);
  EXPECT_FALSE(fs::exists(dir + "/.strata-index"));
  EXPECT_EQ(u.path.rfind(io.cache_dir + "/index/", 0), 0u) << u.path;
  ASSERT_TRUE(index::OpenTrace(dir, {}, io, &u).ok());
  EXPECT_TRUE(u.read);
  ::chmod(dir.c_str(), 0755);
}

TEST(TraceIndex, OffImportsAndWritesNothing) {
  std::string p = CopyOfSmallTrace("index_off", kTriton);
  if (p.empty()) GTEST_SKIP() << "no shared external data";
  IndexOptions io;
  io.mode = IndexOptions::Mode::kOff;
  IndexUse u;
  ASSERT_TRUE(index::OpenTrace(p, {}, io, &u).ok());
  EXPECT_FALSE(u.read || u.written);
  EXPECT_FALSE(fs::exists(p + ".strata-index"));
}

// Levels of detail: every level of a track holds its top-level slices once
// (counts) and the time they cover (busy), in disjoint sorted tiles whose gaps
// grow with the level; a query returns the tiles over its range, about one per
// pixel at most; the index stores what BuildLod builds.
TEST(TraceIndex, LevelsOfDetailSummariseEachTrack) {
  std::string root = ExternalDataDir();
  std::string p = root.empty() ? "" : root + "/hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz";
  if (p.empty() || !fs::exists(p)) GTEST_SKIP() << "no shared external data";
  auto t = importers::LoadTrace(p);
  ASSERT_TRUE(t.ok());
  index::LodTable lod = index::BuildLod(*t);
  ASSERT_EQ(lod.offsets.size(), t->tracks.size() * index::kLodLevels + 1);
  ASSERT_TRUE(lod.Consistent());
  size_t checked = 0;
  for (uint32_t trk = 0; trk < t->tracks.size(); ++trk) {
    uint64_t top = 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    auto [a, b] = t->track_slices[trk];
    for (size_t i = a; i < b; ++i)
      if (t->slices.depth[i] == 0) {
        ++top;
        lo = std::min(lo, t->slices.ts[i]);
        hi = std::max(hi, t->slices.end(i));
      }
    int64_t busy0 = -1;
    for (int l = 0; l < index::kLodLevels; ++l) {
      size_t f = lod.offsets[trk * index::kLodLevels + l], e = lod.offsets[trk * index::kLodLevels + l + 1];
      uint64_t count = 0;
      int64_t busy = 0;
      for (size_t r = f; r < e; ++r) {
        count += lod.count[r];
        busy += lod.busy_ns[r];
        ASSERT_LE(lod.start[r], lod.end[r]);
        ASSERT_LE(lod.busy_ns[r], lod.end[r] - lod.start[r]);
        if (r > f) {
          ASSERT_GE(lod.start[r] - lod.end[r - 1], index::kLodBaseGapNs << (2 * l)) << "level " << l;
        }
      }
      EXPECT_EQ(count, top) << "track " << trk << " level " << l;
      if (busy0 < 0) busy0 = busy;
      EXPECT_EQ(busy, busy0) << "track " << trk << " level " << l;
      if (top > 0 && e > f) {
        EXPECT_EQ(lod.start[f], lo);
        EXPECT_EQ(lod.end[e - 1], hi);
      }
    }
    if (top > 1000) {
      ++checked;
      // The whole track at 1,000 pixels: at most about one tile per pixel.
      int level = -1;
      auto all = index::QueryLod(lod, trk, lo, hi, 1000, &level);
      EXPECT_GT(level, 0);
      EXPECT_LE(all.size(), 1002u);
      uint64_t n = 0;
      for (const auto& x : all) n += x.count;
      EXPECT_EQ(n, top);
      // A narrow range deep inside: only the tiles overlapping it.
      int64_t mid = lo + (hi - lo) / 2;
      auto some = index::QueryLod(lod, trk, mid, mid + 100'000, 1000, &level);
      EXPECT_EQ(level, 0);
      for (const auto& x : some) EXPECT_TRUE(x.end > mid && x.start < mid + 100'000);
    }
  }
  EXPECT_GT(checked, 0u) << "no track with more than 1,000 top-level slices";
  // What the index stores.
  std::string copy = CopyOfSmallTrace("index_lod", "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz");
  IndexUse u;
  ASSERT_TRUE(index::OpenTrace(copy, {}, IndexOptions{}, &u).ok());
  auto h = index::ReadIndexHeader(u.path);
  ASSERT_TRUE(h.ok());
  auto stored = index::ReadIndexLod(u.path, h->key);
  ASSERT_TRUE(stored.ok()) << stored.status().message();
  EXPECT_EQ(stored->start, lod.start);
  EXPECT_EQ(stored->busy_ns, lod.busy_ns);
  EXPECT_EQ(stored->offsets, lod.offsets);
}

// Each section has its own checksum: a byte damaged in the levels of detail
// is refused by a viewer that reads them, while the model (which a report
// reads) is still trusted; a byte damaged in the model is refused by the model's
// reader and not by the viewer's.
TEST(TraceIndex, EachSectionIsCheckedByItsReader) {
  std::string p = CopyOfSmallTrace("index_sections", kAlexnet);
  if (p.empty()) GTEST_SKIP() << "no shared external data";
  IndexUse u;
  ASSERT_TRUE(index::OpenTrace(p, {}, IndexOptions{}, &u).ok());
  auto h = index::ReadIndexHeader(u.path);
  ASSERT_TRUE(h.ok());
  const auto size = static_cast<std::streamoff>(fs::file_size(u.path));
  FlipByte(u.path, size - 9);  // inside the levels of detail (the last section)
  auto lod = index::ReadIndexLod(u.path, h->key);
  ASSERT_FALSE(lod.ok());
  EXPECT_NE(lod.status().message().find("checksum"), std::string::npos) << lod.status().message();
  EXPECT_TRUE(index::ReadIndexFile(u.path, h->key).ok());
  FlipByte(u.path, size - 9);  // undone
  ASSERT_TRUE(index::ReadIndexLod(u.path, h->key).ok());
  FlipByte(u.path, 200);  // inside the model
  auto model = index::ReadIndexFile(u.path, h->key);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("checksum"), std::string::npos) << model.status().message();
  EXPECT_TRUE(index::ReadIndexLod(u.path, h->key).ok());
}

// End to end: `strata report` twice prints the same, the second from the index.
TEST(TraceIndex, ReportCommandReadsTheIndexItBuilt) {
  std::string p = CopyOfSmallTrace("index_cli", kAlexnet);
  if (p.empty()) GTEST_SKIP() << "no shared external data";
  std::map<std::string, std::string> env = {{"STRATA_INDEX", ""}};
  auto a = testing::RunCommand({testing::StrataBin(), "report", "--json", p}, env);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_TRUE(fs::exists(p + ".strata-index"));
  auto stamp = fs::last_write_time(p + ".strata-index");
  auto b = testing::RunCommand({testing::StrataBin(), "report", "--json", p}, env);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(fs::last_write_time(p + ".strata-index"), stamp) << "the index was rebuilt, not read";
  auto off = testing::RunCommand({testing::StrataBin(), "report", "--json", p}, {{"STRATA_INDEX", "off"}});
  EXPECT_EQ(off.out, a.out);
}

// `strata index`: builds the index a later command reads; --check only looks;
// a trace that is not one is exit 3 with one line, and no index is left for it.
TEST(TraceIndex, IndexCommandBuildsChecksAndRefuses) {
  std::string p = CopyOfSmallTrace("index_cmd", kAlexnet);
  if (p.empty()) GTEST_SKIP() << "no shared external data";
  std::map<std::string, std::string> env = {{"STRATA_INDEX", ""}};
  auto check = testing::RunCommand({testing::StrataBin(), "index", "--check", p}, env);
  EXPECT_EQ(check.exit_code, 3) << check.out << check.err;
  EXPECT_NE(check.out.find("not indexed"), std::string::npos) << check.out;
  EXPECT_FALSE(fs::exists(p + ".strata-index")) << "--check built an index";
  auto built = testing::RunCommand({testing::StrataBin(), "index", p}, env);
  ASSERT_EQ(built.exit_code, 0) << built.err;
  EXPECT_NE(built.out.find("indexed in"), std::string::npos) << built.out;
  ASSERT_TRUE(fs::exists(p + ".strata-index"));
  auto stamp = fs::last_write_time(p + ".strata-index");
  check = testing::RunCommand({testing::StrataBin(), "index", "--check", p}, env);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("up to date"), std::string::npos) << check.out;
  auto report = testing::RunCommand({testing::StrataBin(), "report", "--json", p}, env);
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_EQ(fs::last_write_time(p + ".strata-index"), stamp) << "report rebuilt the index `strata index` made";
  auto again = testing::RunCommand({testing::StrataBin(), "index", "--rebuild", p}, env);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("indexed in"), std::string::npos) << again.out;

  std::string bad = FreshDir("index_cmd_bad") + "/notes.json";
  std::ofstream(bad) << "this is not a trace";
  auto refused = testing::RunCommand({testing::StrataBin(), "index", bad}, env);
  EXPECT_EQ(refused.exit_code, 3);
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
  EXPECT_FALSE(fs::exists(bad + ".strata-index"));
}

// The results kept beside an index (index/results_file.h): `strata index`
// stores the default report, `strata report` prints a stored answer without
// the analyses (a planted answer shows it was served), asks again for other
// options, and never trusts a damaged result or one of other content.
size_t CountResults(const std::string& index_path) {
  size_t n = 0;
  const std::string prefix = fs::path(index_path).filename().string() + ".result-";
  for (const auto& e : fs::directory_iterator(fs::path(index_path).parent_path()))
    n += e.path().filename().string().starts_with(prefix);
  return n;
}

// The question a result file answers (its header: 8-byte magic, version,
// reserved, the key's two words, then the question's size; the question
// follows the 56-byte header).
std::string QuestionOf(const std::string& result) {
  std::ifstream f(result, std::ios::binary);
  std::string b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  uint64_t n = 0;
  if (b.size() < 56) return "";
  std::memcpy(&n, b.data() + 32, sizeof n);
  return n <= b.size() - 56 ? b.substr(56, n) : "";
}

TEST(TraceIndex, ReportsAreStoredBesideTheIndexAndServedAgain) {
  std::string p = CopyOfSmallTrace("index_results", kAlexnet);
  if (p.empty()) GTEST_SKIP() << "no shared external data";
  ::sleep(3);  // settled: current by its signature
  const std::string bin = testing::StrataBin(), ix = p + ".strata-index";
  std::map<std::string, std::string> env = {{"STRATA_INDEX", ""}};
  auto direct = testing::RunCommand({bin, "report", p}, {{"STRATA_INDEX", "off"}});
  auto direct_json = testing::RunCommand({bin, "report", "--json", p}, {{"STRATA_INDEX", "off"}});
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  auto built = testing::RunCommand({bin, "index", p}, env);
  ASSERT_EQ(built.exit_code, 0) << built.err;
  EXPECT_NE(built.out.find("default report stored"), std::string::npos) << built.out;
  EXPECT_EQ(CountResults(ix), 2u) << "the text and the JSON";
  auto again = testing::RunCommand({bin, "index", p}, env);
  EXPECT_EQ(again.out.find("default report stored"), std::string::npos) << "stored twice: " << again.out;
  EXPECT_EQ(testing::RunCommand({bin, "report", p}, env).out, direct.out);
  EXPECT_EQ(testing::RunCommand({bin, "report", "--json", p}, env).out, direct_json.out);
  EXPECT_EQ(CountResults(ix), 2u);

  // A planted answer to the text question is what the report prints: served
  // from the store, not computed.
  auto h = index::ReadIndexHeader(ix);
  ASSERT_TRUE(h.ok());
  std::string text_result, question;
  for (const auto& e : fs::directory_iterator(fs::path(ix).parent_path())) {
    std::string q = QuestionOf(e.path().string());
    if (q.find("format=text\n") != std::string::npos) text_result = e.path().string(), question = q;
  }
  ASSERT_FALSE(question.empty());
  EXPECT_EQ(text_result, index::ResultPath(ix, question));
  ASSERT_TRUE(index::WriteResult(ix, h->key, question, "planted\n").ok());
  EXPECT_EQ(testing::RunCommand({bin, "report", p}, env).out, "planted\n");
  // Other options are another question.
  auto top5 = testing::RunCommand({bin, "report", "--top", "5", p}, env);
  EXPECT_NE(top5.out, "planted\n");
  EXPECT_EQ(top5.out, testing::RunCommand({bin, "report", "--top", "5", p}, {{"STRATA_INDEX", "off"}}).out);
  EXPECT_EQ(CountResults(ix), 3u);
  // Damaged: not used, computed again and stored whole.
  FlipByte(text_result, static_cast<std::streamoff>(fs::file_size(text_result) - 3));
  EXPECT_EQ(testing::RunCommand({bin, "report", p}, env).out, direct.out);
  EXPECT_EQ(QuestionOf(text_result), question);
  EXPECT_TRUE(index::ReadResult(ix, h->key, question).ok());
  // Another build's or another content's key: not used.
  EXPECT_FALSE(index::ReadResult(ix, index::ContentKey{h->key.hi ^ 1, h->key.lo}, question).ok());
  // At most kMaxResults kept per index.
  for (int i = 0; i < 20; ++i)
    ASSERT_TRUE(index::WriteResult(ix, h->key, question + std::to_string(i), "x").ok());
  EXPECT_EQ(CountResults(ix), index::kMaxResults);
  // A rebuilt index keeps none of the old results.
  auto rebuilt = testing::RunCommand({bin, "index", "--rebuild", "--no-report", p}, env);
  ASSERT_EQ(rebuilt.exit_code, 0) << rebuilt.err;
  EXPECT_EQ(CountResults(ix), 0u);
  // The trace replaced: an answer planted for the old content is not served.
  ASSERT_TRUE(testing::RunCommand({bin, "report", p}, env).exit_code == 0);
  h = index::ReadIndexHeader(ix);
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(index::WriteResult(ix, h->key, question, "planted\n").ok());
  fs::copy_file(ExternalDataDir() + "/" + kTriton, p, fs::copy_options::overwrite_existing);
  ::sleep(3);
  auto other = testing::RunCommand({bin, "report", p}, env);
  EXPECT_NE(other.out, "planted\n");
  EXPECT_EQ(other.out, testing::RunCommand({bin, "report", p}, {{"STRATA_INDEX", "off"}}).out);
}


// The cache stays within its budget with the reports stored beside its
// indexes counted: the least recently used index goes with its results, a
// result whose index is gone goes too, and the index just used stays.
TEST(TraceIndex, CacheIsPrunedWithItsStoredResults) {
  IndexOptions io;
  io.cache_dir = FreshDir("index_prune_cache");
  io.beside = false;
  std::vector<std::string> traces;
  const std::string base = TempDir("index_prune");
  for (int i = 0; i < 3; ++i) {
    std::string dir = base + "/trace" + std::to_string(i);
    auto r = testing::Record(dir, {testing::TestProgram("emitter"), "1", "1000"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    traces.push_back(dir);
  }
  IndexUse first;
  auto opened = index::OpenTrace(traces[0], {}, io, &first);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  ASSERT_TRUE(first.written && first.in_cache) << first.path;
  const uint64_t index_bytes = fs::file_size(first.path);
  // Room for two indexes, not for two and a large stored report.
  io.cache_budget_bytes = 2 * index_bytes + index_bytes / 2;
  first.cache_budget_bytes = io.cache_budget_bytes;
  ASSERT_TRUE(index::WriteResult(first.path, first.key, "a question", std::string(index_bytes, 'x')).ok());
  index::KeepCacheBounded(first);
  EXPECT_TRUE(fs::exists(first.path)) << "the index just used was pruned";
  const std::string orphan = first.path.substr(0, first.path.size() - std::strlen(index::kIndexSuffix)) +
                             "0" + index::kIndexSuffix + ".result-0000000000000000";
  std::ofstream(orphan) << "left by an index removed by hand";
  ::sleep(1);  // modification times apart
  IndexUse second;
  ASSERT_TRUE(index::OpenTrace(traces[1], {}, io, &second).ok());
  ASSERT_TRUE(second.in_cache);
  EXPECT_FALSE(fs::exists(first.path)) << "the least recently used index and its report outgrew the budget";
  EXPECT_EQ(CountResults(first.path), 0u);
  EXPECT_FALSE(fs::exists(orphan)) << "a result without its index stayed";
  EXPECT_TRUE(fs::exists(second.path));
  ::sleep(1);
  IndexUse third;
  ASSERT_TRUE(index::OpenTrace(traces[2], {}, io, &third).ok());
  EXPECT_TRUE(fs::exists(second.path)) << "two indexes fit";
  EXPECT_TRUE(fs::exists(third.path));
}

}  // namespace
}  // namespace strata
