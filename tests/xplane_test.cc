// The XSpace (.xplane.pb) importer: a hand-built space covering each kind of
// plane, line and event; format detection; malformed input; and the real
// TensorFlow and JAX spaces in shared/data/external, whose counts were taken
// with protobuf's Python reader over the same files (an independent parser).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "importers/load.h"
#include "importers/xplane/xplane.h"
#include "importers/xplane/xplane.pb.h"
#include "importers/xplane/xplane_names.h"
#include "tests/testing.h"

namespace strata {
namespace {

using model::SliceKind;
namespace xs = xspace;

// Builds planes with named stats and events, as the profilers do.
class PlaneBuilder {
 public:
  explicit PlaneBuilder(xs::XPlane* p) : p_(p) {}
  int64_t Stat(const std::string& name) {
    for (auto& [id, md] : p_->stat_metadata())
      if (md.name() == name) return id;
    int64_t id = static_cast<int64_t>(p_->stat_metadata().size()) + 1;
    auto& md = (*p_->mutable_stat_metadata())[id];
    md.set_id(id);
    md.set_name(name);
    return id;
  }
  int64_t Event(const std::string& name, const std::string& display = "") {
    for (auto& [id, md] : p_->event_metadata())
      if (md.name() == name) return id;
    int64_t id = static_cast<int64_t>(p_->event_metadata().size()) + 1;
    auto& md = (*p_->mutable_event_metadata())[id];
    md.set_id(id);
    md.set_name(name);
    md.set_display_name(display);
    return id;
  }
  xs::XLine* Line(int64_t id, const std::string& name, int64_t timestamp_ns) {
    xs::XLine* l = p_->add_lines();
    l->set_id(id);
    l->set_name(name);
    l->set_timestamp_ns(timestamp_ns);
    return l;
  }
  xs::XEvent* Add(xs::XLine* l, const std::string& name, int64_t offset_ps, int64_t duration_ps,
                  const std::string& display = "") {
    xs::XEvent* e = l->add_events();
    e->set_metadata_id(Event(name, display));
    e->set_offset_ps(offset_ps);
    e->set_duration_ps(duration_ps);
    return e;
  }
  void Int(xs::XEvent* e, const std::string& stat, int64_t v) {
    auto* s = e->add_stats();
    s->set_metadata_id(Stat(stat));
    s->set_int64_value(v);
  }
  void Str(xs::XEvent* e, const std::string& stat, const std::string& v) {
    auto* s = e->add_stats();
    s->set_metadata_id(Stat(stat));
    s->set_str_value(v);
  }
  // A string the way TF stores repeated ones: a reference to stat metadata named by it.
  void Ref(xs::XEvent* e, const std::string& stat, const std::string& v) {
    auto* s = e->add_stats();
    s->set_metadata_id(Stat(stat));
    s->set_ref_value(static_cast<uint64_t>(Stat(v)));
  }
  void PlaneStat(const std::string& stat, uint64_t v) {
    auto* s = p_->add_stats();
    s->set_metadata_id(Stat(stat));
    s->set_uint64_value(v);
  }

 private:
  xs::XPlane* p_;
};

// A TF-like space: one host thread running a step of a TF op that launches a
// kernel and a copy on GPU 0, with an allocation and a Python frame.
std::string SmallSpace() {
  xs::XSpace space;
  space.add_hostnames("worker-0");
  {
    xs::XPlane* dev = space.add_planes();
    dev->set_name("/device:GPU:0");
    PlaneBuilder b(dev);
    b.PlaneStat("clock_rate", 1530000);
    b.PlaneStat("core_count", 80);
    b.PlaneStat("memory_size", 16945512448ull);
    b.PlaneStat("memory_bandwidth", 898048000000ull);
    b.PlaneStat("compute_cap_major", 7);
    b.PlaneStat("compute_cap_minor", 0);
    xs::XLine* compute = b.Line(7, "Stream #7(Compute)", 1000);
    xs::XEvent* k = b.Add(compute, "void gemm_kernel<float>(float*)", 3'000'000'000, 2'000'500);
    b.Int(k, "correlation_id", 11);
    b.Ref(k, "kernel_details", "regs:38 shm:512 grid:160,1,1 block:1024,2,1");
    b.Ref(k, "tf_op", "model/dense/MatMul:MatMul");
    xs::XLine* h2d = b.Line(8, "Stream #8(MemcpyH2D)", 1000);
    xs::XEvent* c = b.Add(h2d, "MemcpyH2D", 2'000'000'000, 1'000'000);
    b.Int(c, "correlation_id", 12);
    b.Str(c, "memcpy_details", "size:4096 dest:0 async:1");
    xs::XLine* ops = b.Line(-559038734, "TensorFlow Ops", 1000);
    b.Add(ops, "model/dense/MatMul:MatMul", 3'000'000'000, 2'000'500, "MatMul");
    xs::XLine* steps = b.Line(-559038737, "Steps", 1000);
    xs::XEvent* st = b.Add(steps, "3", 2'000'000'000, 4'000'000'000);
    b.Int(st, "group_id", 0);
    b.Str(st, "step_name", "3");
  }
  {
    xs::XPlane* host = space.add_planes();
    host->set_name("/host:CPU");
    PlaneBuilder b(host);
    xs::XLine* t = b.Line(4242, "python3", 1000);
    xs::XEvent* root = b.Add(t, "FunctionRun", 0, 10'000'000'000);  // 10 ms from 1 us
    b.Int(root, "group_id", 0);
    xs::XEvent* py = b.Add(t, "$train.py:12 train_step", 100'000'000, 9'000'000'000);
    b.Int(py, "group_id", 0);
    xs::XEvent* op = b.Add(t, "model/dense/MatMul:MatMul", 1'000'000'000, 1'500'000'000, "MatMul");
    b.Int(op, "group_id", 0);
    xs::XEvent* launch = b.Add(t, "void gemm_kernel<float>(float*)", 1'100'000'000, 5'000'000);
    b.Int(launch, "correlation_id", 11);
    xs::XEvent* copy = b.Add(t, "MemcpyH2D", 1'200'000'000, 3'000'000);
    b.Int(copy, "correlation_id", 12);
    b.Str(copy, "memcpy_details", "size:4096 dest:0 async:1");
    xs::XEvent* alloc = b.Add(t, "MemoryAllocation", 1'050'000'000, 0);
    b.Str(alloc, "allocator_name", "GPU_0_bfc");
    b.Int(alloc, "allocation_bytes", 4096);
    b.Int(alloc, "bytes_allocated", 8192);
    b.Int(alloc, "bytes_reserved", 0);
    b.Int(alloc, "addr", 0x7000);
    b.Add(t, "Marker", 1'300'000'000, 0);
  }
  return space.SerializeAsString();
}

int32_t Find(const model::Trace& t, const std::string& name, SliceKind kind) {
  model::StringId id = t.strings.Find(name);
  for (size_t i = 0; i < t.slices.size(); ++i)
    if (t.slices.name[i] == id && t.slices.kind[i] == kind) return static_cast<int32_t>(i);
  return -1;
}

std::string ArgStr(const model::Trace& t, int32_t slice, const std::string& key) {
  int32_t a = t.FindArg(static_cast<uint32_t>(slice), t.strings.Find(key));
  return a < 0 ? "<none>" : std::string(t.strings.Get(t.args.str[static_cast<size_t>(a)]));
}

TEST(XPlane, EveryKindOfEventGoesWhereItBelongs) {
  auto r = importers::ParseXPlaneTrace(SmallSpace());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const model::Trace& t = *r;
  EXPECT_EQ(t.source, "xplane");
  EXPECT_EQ(t.hostname, "worker-0");
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].id, 0);
  EXPECT_EQ(t.devices[0].api, "cuda");
  EXPECT_EQ(t.devices[0].compute_units, 80u);
  EXPECT_EQ(t.devices[0].clock_khz, 1530000u);
  EXPECT_EQ(t.devices[0].memory_bytes, 16945512448ull);
  EXPECT_EQ(t.devices[0].compute_major, 7u);

  // Host: the TF op by its type with its node name, the Python frame, the launches by API.
  int32_t op = Find(t, "MatMul", SliceKind::kOp);
  ASSERT_GE(op, 0);
  EXPECT_EQ(t.slices.ts[static_cast<size_t>(op)], 1000 + 1'000'000);
  EXPECT_EQ(t.slices.dur[static_cast<size_t>(op)], 1'500'000);
  EXPECT_EQ(ArgStr(t, op, "tf_op"), "model/dense/MatMul:MatMul");
  EXPECT_GE(Find(t, "train.py:12 train_step", SliceKind::kPython), 0);
  int32_t launch = Find(t, "cudaLaunchKernel", SliceKind::kRuntime);
  int32_t copy_call = Find(t, "cudaMemcpyAsync", SliceKind::kRuntime);
  ASSERT_GE(launch, 0);
  ASSERT_GE(copy_call, 0);
  EXPECT_EQ(ArgStr(t, launch, "name"), "void gemm_kernel<float>(float*)");
  EXPECT_EQ(t.instants.size(), 1u);

  // Device: the kernel's details; picoseconds rounded half up (2,000,500 ps -> 2001 ns).
  int32_t k = Find(t, "void gemm_kernel<float>(float*)", SliceKind::kKernel);
  ASSERT_GE(k, 0);
  EXPECT_EQ(t.slices.ts[static_cast<size_t>(k)], 1000 + 3'000'000);
  EXPECT_EQ(t.slices.dur[static_cast<size_t>(k)], 2001);
  int32_t row = t.device_row_of_slice[static_cast<size_t>(k)];
  ASSERT_GE(row, 0);
  auto r_ = static_cast<size_t>(row);
  EXPECT_EQ(t.device.stream[r_], 7);
  EXPECT_EQ(t.device.correlation[r_], 11u);
  EXPECT_EQ(t.device.launch[r_], launch);
  EXPECT_EQ(t.device.registers[r_], 38u);
  EXPECT_EQ(t.device.shared_mem[r_], 512u);
  EXPECT_EQ(t.device.grid[r_], (std::array<uint32_t, 3>{160, 1, 1}));
  EXPECT_EQ(t.device.block[r_], (std::array<uint32_t, 3>{1024, 2, 1}));
  EXPECT_EQ(ArgStr(t, k, "tf_op"), "model/dense/MatMul:MatMul");
  int32_t c = Find(t, "Memcpy HtoD", SliceKind::kMemcpy);
  ASSERT_GE(c, 0);
  auto cr = static_cast<size_t>(t.device_row_of_slice[static_cast<size_t>(c)]);
  EXPECT_EQ(t.device.bytes[cr], 4096u);
  EXPECT_EQ(t.device.copy_kind[cr], model::CopyKind::kHtoD);
  EXPECT_EQ(t.device.launch[cr], copy_call);
  // The derived "TensorFlow Ops" line is not a second copy of the kernels.
  EXPECT_EQ(t.device.size(), 2u);

  // The step: the device's step 3 over the longest host event of its group.
  int32_t step = Find(t, "step 3", SliceKind::kStep);
  ASSERT_GE(step, 0);
  EXPECT_EQ(t.slices.ts[static_cast<size_t>(step)], 1000);
  EXPECT_EQ(t.slices.dur[static_cast<size_t>(step)], 10'000'000);
  EXPECT_EQ(t.slices.arg[static_cast<size_t>(step)], 3u);
  EXPECT_EQ(t.tracks[t.slices.track[static_cast<size_t>(step)]].tid, 4242);

  // The allocation: device 0's allocator, its totals.
  ASSERT_EQ(t.memory.size(), 1u);
  EXPECT_EQ(t.memory.device[0], 0);
  EXPECT_EQ(t.memory.bytes[0], 4096);
  EXPECT_EQ(t.memory.addr[0], 0x7000u);
  EXPECT_EQ(t.memory.total_allocated[0], 8192);
}

TEST(XPlane, FormatIsDetectedByContent) {
  std::string bytes = SmallSpace();
  EXPECT_TRUE(importers::LooksLikeXSpace(bytes));
  EXPECT_FALSE(importers::LooksLikeXSpace("\n{\"traceEvents\": []}"));
  EXPECT_FALSE(importers::LooksLikeXSpace("[{\"ph\": \"X\"}]"));
  EXPECT_FALSE(importers::LooksLikeXSpace(std::string("\x0a\x05\x12\x03\x01\x02\x03", 7)));  // a name of control bytes
  std::string path = ::testing::TempDir() + "/space.bin";  // no .xplane.pb: content decides
  {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  EXPECT_EQ(importers::DetectFormat(path), importers::TraceFormat::kXSpace);
  auto r = importers::LoadTrace(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->path, path);
  EXPECT_EQ(r->device.size(), 2u);
}

TEST(XPlane, MalformedInputIsAnErrorNotACrash) {
  std::string bytes = SmallSpace();
  // Every prefix: a model or a one-line error.
  for (size_t n = 0; n < bytes.size(); n += 7) {
    auto r = importers::ParseXPlaneTrace(std::string_view(bytes).substr(0, n));
    if (!r.ok()) {
      EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
    }
  }
  auto bad = importers::ParseXPlaneTrace("\x0a\xff\xff\xff\xff\x0f garbage");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not a valid XSpace"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(importers::ParseXPlaneTrace("").ok());
  // Out-of-range times are dropped and counted, not wrapped.
  xs::XSpace space;
  xs::XPlane* host = space.add_planes();
  host->set_name("/host:CPU");
  PlaneBuilder b(host);
  xs::XLine* l = b.Line(1, "t", int64_t{1} << 62);
  b.Add(l, "late", 0, 1000);
  xs::XLine* l2 = b.Line(2, "u", 0);
  b.Add(l2, "fine", 0, 1000);
  b.Add(l2, "negative", 0, -5);
  auto r = importers::ParseXPlaneTrace(space.SerializeAsString());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->slices.size(), 1u);
  ASSERT_FALSE(r->warnings.empty());
  EXPECT_NE(r->warnings.back().find("2 events with a time or duration out of range"), std::string::npos)
      << r->warnings.back();
}

// --- The wire reader: what protobuf's parser accepts, read the same way -------

// Protobuf's wire encoding, to write what its serializer never does.
std::string Varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out += static_cast<char>((v & 0x7f) | 0x80);
  return out + static_cast<char>(v);
}
std::string Bytes(int field, const std::string& b) { return Varint(static_cast<uint64_t>(field) << 3 | 2) + Varint(b.size()) + b; }
// Fields no XSpace message has: a varint, and a group holding a string.
std::string Unknown() {
  return Varint(99 << 3) + Varint(7) + Varint(98 << 3 | 3) + Bytes(1, "skipped") + Varint(98 << 3 | 4);
}

// SmallSpace with every message's fields in another order (protobuf merges a
// message given in parts): a plane's metadata before its lines, a line's own
// fields after its events, an event's stats before its metadata id; unknown
// fields everywhere; a stat metadata entry replaced by a later one of its id.
std::string ReorderedSmallSpace() {
  xs::XSpace space;
  EXPECT_TRUE(space.ParseFromString(SmallSpace()));
  std::string out;
  for (const auto& p : space.planes()) {
    xs::XPlane meta = p;
    meta.clear_lines();
    std::string lines;
    for (const auto& l : p.lines()) {
      xs::XLine head = l;
      head.clear_events();
      std::string events;
      for (const auto& e : l.events()) {
        xs::XEvent stats, rest = e;
        *stats.mutable_stats() = e.stats();
        rest.clear_stats();
        events += Bytes(4, stats.SerializeAsString() + Unknown() + rest.SerializeAsString());
      }
      lines += Bytes(3, events + head.SerializeAsString() + Unknown());
    }
    xs::XStatMetadata bogus;
    bogus.set_name("replaced");
    std::string early;
    for (const auto& [id, md] : p.stat_metadata())
      early += Bytes(5, Varint(8) + Varint(static_cast<uint64_t>(id)) + Bytes(2, bogus.SerializeAsString()));
    out += Bytes(1, early + Unknown() + meta.SerializeAsString() + lines);
  }
  xs::XSpace rest = space;
  rest.clear_planes();
  return rest.SerializeAsString() + Unknown() + out;
}

// Everything a trace holds, by content (string ids may differ).
std::string Summary(const model::Trace& t) {
  std::ostringstream o;
  auto str = [&t](model::StringId id) { return std::string(t.strings.Get(id)); };
  o << t.hostname << "|" << t.devices.size() << "|" << t.events_read << "\n";
  for (size_t i = 0; i < t.slices.size(); ++i)
    o << t.slices.ts[i] << " " << t.slices.dur[i] << " " << static_cast<int>(t.slices.kind[i]) << " "
      << str(t.slices.name[i]) << " " << t.tracks[t.slices.track[i]].tid << " " << t.slices.arg[i] << "\n";
  for (size_t i = 0; i < t.args.size(); ++i)
    o << t.args.slice[i] << " " << str(t.args.key[i]) << "=" << (std::isnan(t.args.num[i]) ? str(t.args.str[i]) : std::to_string(t.args.num[i])) << "\n";
  for (size_t i = 0; i < t.device.size(); ++i)
    o << t.device.slice[i] << " " << t.device.stream[i] << " " << t.device.launch[i] << " " << t.device.bytes[i] << "\n";
  for (size_t i = 0; i < t.memory.size(); ++i) o << t.memory.ts[i] << " " << t.memory.bytes[i] << "\n";
  for (const auto& w : t.warnings) o << w << "\n";
  return o.str();
}

TEST(XPlane, FieldsInAnyOrderAreReadAsProtobufReadsThem) {
  auto canonical = importers::ParseXPlaneTrace(SmallSpace());
  auto reordered = importers::ParseXPlaneTrace(ReorderedSmallSpace());
  ASSERT_TRUE(canonical.ok()) << canonical.status().message();
  ASSERT_TRUE(reordered.ok()) << reordered.status().message();
  EXPECT_EQ(Summary(*reordered), Summary(*canonical));
  EXPECT_GT(canonical->slices.size(), 5u);
}

TEST(XPlane, WhatProtobufRejectsIsAnError) {
  std::string plane = Bytes(2, "/host:CPU");
  auto parse = [](const std::string& b) { return importers::ParseXPlaneTrace(b); };
  ASSERT_TRUE(parse(Bytes(1, plane)).ok());
  // Groups nest up to protobuf's 100 levels (with the space and the plane).
  auto nested = [](int depth) {
    std::string g;
    for (int i = 0; i < depth; ++i) g = Varint(9 << 3 | 3) + g + Varint(9 << 3 | 4);
    return g;
  };
  EXPECT_TRUE(parse(Bytes(1, plane + nested(99))).ok());
  EXPECT_FALSE(parse(Bytes(1, plane + nested(100))).ok());
  EXPECT_FALSE(parse(Bytes(1, plane + Varint(9 << 3 | 3))).ok());             // a group never ended
  EXPECT_FALSE(parse(Bytes(1, plane + Varint(9 << 3 | 4))).ok());             // an end without a start
  EXPECT_FALSE(parse(Bytes(1, plane) + std::string("\x00", 1)).ok());         // field number 0
  EXPECT_FALSE(parse(Bytes(1, plane + Varint(7 << 3 | 6) + "12345678")).ok());  // wire type 6
  EXPECT_FALSE(parse(Bytes(1, Bytes(2, "/host:\xff"))).ok());                  // a string field of invalid UTF-8
  EXPECT_FALSE(parse(Bytes(1, plane + Varint(8) + std::string(10, '\xff') + "\x01")).ok());  // an 11-byte varint
  auto r = parse(Bytes(1, plane + Bytes(3, Bytes(4, Bytes(4, Varint(6 << 3 | 2) + Varint(1) + "\xff")))));
  EXPECT_TRUE(r.ok()) << r.status().message();  // bytes_value holds any bytes
  // An event that ends inside a field (its duration's value missing).
  std::string event = Bytes(4, Varint(8) + Varint(1)) + Varint(3 << 3);
  auto past = parse(Bytes(1, plane + Bytes(3, Bytes(4, event))));
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find("not a valid XSpace"), std::string::npos);
}

TEST(XPlane, AMalformedProfileLeavesTheTraceItMergesIntoUnchanged) {
  // A second host plane whose one event is malformed (a string stat of
  // invalid UTF-8), after planes that are not.
  std::string bad = Bytes(1, Bytes(2, "/host:CPU") + Bytes(3, Bytes(4, Bytes(4, Varint(5 << 3 | 2) + Varint(1) + "\xff"))));
  model::Trace t;
  t.processes.resize(2);
  importers::XSpaceMerge m;
  m.process = 1;
  Status s = importers::MergeXSpace(t, SmallSpace() + bad, m);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "XSpace: not a valid XSpace protobuf (truncated or another format)");
  EXPECT_EQ(t.slices.size(), 0u);
  EXPECT_EQ(t.tracks.size(), 0u);
  EXPECT_TRUE(t.warnings.empty());
  EXPECT_TRUE(importers::MergeXSpace(t, SmallSpace(), m).ok());
  EXPECT_GT(t.slices.size(), 0u);
}

TEST(XPlane, AProfileMergesIntoTheTraceOfItsProcessOnTheTracesClock) {
  // What TF's profiler writes for a traced process: times relative to the
  // session's start, which the Task Environment plane gives in wall-clock ns.
  xs::XSpace space;
  xs::XPlane* env = space.add_planes();
  env->set_name("Task Environment");
  PlaneBuilder e(env);
  e.PlaneStat("profile_start_time", 1'700'000'000'000'000'000ull);
  xs::XPlane* host = space.add_planes();
  host->set_name("/host:CPU");
  PlaneBuilder b(host);
  xs::XLine* l = b.Line(-1157100293626345553, "tf_Compute/-1157100293626345553", 5000);
  b.Add(l, "dense/MatMul:MatMul", 1'000'000, 2'000'000, "MatMul");
  model::Trace t;
  t.processes.push_back({});
  t.processes.push_back({});
  t.processes[1].pid = 4242;
  importers::XSpaceMerge m;
  m.process = 1;
  m.realtime_to_trace_ns = -1'700'000'000'000'000'000 + 9'000'000;  // the trace's clock 9 ms in
  ASSERT_TRUE(importers::MergeXSpace(t, space.SerializeAsString(), m).ok());
  ASSERT_EQ(t.slices.size(), 1u);
  EXPECT_EQ(t.slices.ts[0], 9'000'000 + 5000 + 1000);
  EXPECT_EQ(t.slices.dur[0], 2000);
  EXPECT_EQ(t.slices.kind[0], SliceKind::kOp);
  EXPECT_EQ(t.tracks[t.slices.track[0]].process, 1u);
  EXPECT_EQ(t.processes.size(), 2u);  // no process of its own
  EXPECT_EQ(t.source, "");            // the trace keeps its source
  m.process = 7;
  EXPECT_FALSE(importers::MergeXSpace(t, space.SerializeAsString(), m).ok());
}

TEST(XPlaneNames, DetailStringsAndOpNames) {
  using namespace importers::xplane;
  auto k = ParseKernelDetails("grid:6240,1,1 block:256,1,1 private_mem:0 group_mem:2112 occ_pct:50");
  EXPECT_EQ(k.grid, (std::array<uint32_t, 3>{6240, 1, 1}));
  EXPECT_EQ(k.shared_mem, 2112u);
  EXPECT_FLOAT_EQ(k.occupancy, 0.5f);
  auto n = ParseKernelDetails("regs:32 static_shared:100 dynamic_shared:28 grid:2,3 block:x");
  EXPECT_EQ(n.registers, 32u);
  EXPECT_EQ(n.shared_mem, 128u);
  EXPECT_EQ(n.grid, (std::array<uint32_t, 3>{2, 3, 1}));
  EXPECT_EQ(n.block, (std::array<uint32_t, 3>{0, 0, 0}));
  EXPECT_EQ(MemcpyBytes("kind:Unknown size:77 dest:512 async:1"), 77u);
  EXPECT_EQ(MemcpyBytes("size:-1"), 0u);
  std::string_view type;
  EXPECT_TRUE(TfOpName("replica_4/bert/layer_5/dropout/RandomUniform:RandomUniform", &type));
  EXPECT_EQ(type, "RandomUniform");
  EXPECT_TRUE(TfOpName("n/_3:_HostRecv", &type));
  EXPECT_FALSE(TfOpName("Iterator::Prefetch", &type));
  EXPECT_FALSE(TfOpName("void Eigen::internal::EigenMetaKernel<float>(int)", &type));
  EXPECT_FALSE(TfOpName("ExecutorState::Process", &type));
  EXPECT_FALSE(TfOpName("train.py:12", &type));
  int32_t dev = -1;
  std::string_view dtype;
  EXPECT_EQ(ClassifyPlane("/device:GPU:4", &dev, &dtype), PlaneKind::kDevice);
  EXPECT_EQ(dev, 4);
  EXPECT_EQ(dtype, "GPU");
  EXPECT_EQ(ClassifyPlane("/host:metadata", &dev, &dtype), PlaneKind::kOther);
  EXPECT_EQ(AllocatorDevice("GPU_12_bfc"), 12);
  EXPECT_EQ(AllocatorDevice("gpu_host_bfc"), model::kNone);
}

// Counts below come from protobuf's Python reader over the same files.
std::string External(const std::string& rel) {
  std::string dir = testing::ExternalDataDir();
  return dir.empty() ? "" : dir + "/" + rel;
}

size_t Count(const model::Trace& t, SliceKind k) {
  size_t n = 0;
  for (auto kind : t.slices.kind) n += kind == k;
  return n;
}

TEST(XPlane, TensorFlowMultiWorkerGpuSpace) {
  std::string path =
      External("tensorflow-profiler/demo/plugins/profile/GPU-multi-worker/34.83.195.179_6003.xplane.pb");
  if (path.empty()) GTEST_SKIP() << "shared/data/external is absent";
  auto r = importers::LoadTrace(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const model::Trace& t = *r;
  EXPECT_EQ(t.hostname, "34.83.195.179:6003");
  EXPECT_EQ(t.devices.size(), 8u);  // every GPU plane, busy or not
  for (const auto& d : t.devices) {
    EXPECT_EQ(d.compute_units, 80u);
    EXPECT_EQ(d.compute_major, 7u);
    EXPECT_DOUBLE_EQ(d.memory_bandwidth, 898048000000.0);
  }
  // 1,556 activities on the stream lines of GPUs 1, 4 and 6 (19 + 759 + 778),
  // 226 of them copies of 155,006 bytes, every one linked to its launch.
  ASSERT_EQ(t.device.size(), 1556u);
  size_t copies = 0, linked = 0;
  uint64_t bytes = 0;
  for (size_t i = 0; i < t.device.size(); ++i) {
    if (t.slices.kind[t.device.slice[i]] == SliceKind::kMemcpy) ++copies, bytes += t.device.bytes[i];
    linked += t.device.launch[i] >= 0;
  }
  EXPECT_EQ(copies, 226u);
  EXPECT_EQ(bytes, 155006u);
  EXPECT_EQ(linked, 1556u);
  EXPECT_EQ(Count(t, SliceKind::kRuntime), 1556u);
  EXPECT_EQ(t.memory.size(), 2493u);
  EXPECT_EQ(Count(t, SliceKind::kStep), 1u);
  EXPECT_GT(Count(t, SliceKind::kOp), 5000u);
}

TEST(XPlane, JaxRocmSpace) {
  std::string path = External("tracelens/traces/mi300/jax_conv_minimal_08/tw003.xplane.pb");
  if (path.empty()) GTEST_SKIP() << "shared/data/external is absent";
  auto r = importers::LoadTrace(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const model::Trace& t = *r;
  ASSERT_EQ(t.devices.size(), 8u);
  EXPECT_EQ(t.devices[0].api, "hip");
  EXPECT_EQ(t.devices[0].vendor, "amd");
  EXPECT_EQ(t.devices[0].compute_units, 304u);
  // 235 kernels on 8 GPUs, each with its hip launch (two share correlation id 477: 234 launches).
  ASSERT_EQ(t.device.size(), 235u);
  size_t linked = 0;
  for (size_t i = 0; i < t.device.size(); ++i) linked += t.device.launch[i] >= 0;
  EXPECT_EQ(linked, 235u);
  EXPECT_EQ(Count(t, SliceKind::kRuntime), 234u);
  int32_t k = Find(t, "loop_transpose_fusion.kd", SliceKind::kKernel);
  ASSERT_GE(k, 0);
  EXPECT_EQ(ArgStr(t, k, "hlo_module"), "jit_forward_3d_conv");
  EXPECT_GE(Find(t, "hipModuleLaunchKernel", SliceKind::kRuntime), 0);
}

}  // namespace
}  // namespace strata
