// Tiny LTTng-like CTF traces written from scratch, for the LTTng importer's
// tests and fuzz seeds: the shared LTTng traces have neither system calls
// nor user-space function events, and the test needs known answers.
//
// Each trace is one TSDL metadata file and one stream file per CPU, with the
// packet and event layout LTTng uses (packet context with timestamps, sizes,
// events_discarded and cpu_id; event header id + 64-bit timestamp), all
// byte-aligned little-endian so the writer needs no padding.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace strata::testing::lttng_synth {

inline constexpr int64_t kOriginS = 1700000000;  // the clock's offset_s: times are kOriginS s + value ns

class Bytes {
 public:
  Bytes& U32(uint32_t v) { return Raw(&v, 4); }
  Bytes& I32(int32_t v) { return Raw(&v, 4); }
  Bytes& U64(uint64_t v) { return Raw(&v, 8); }
  Bytes& I64(int64_t v) { return Raw(&v, 8); }
  Bytes& Str(const std::string& s) { return Raw(s.c_str(), s.size() + 1); }
  Bytes& Raw(const void* p, size_t n) {
    const auto* c = static_cast<const char*>(p);
    data.insert(data.end(), c, c + n);
    return *this;
  }
  std::string data;
};

// Metadata for a kernel ("kernel") or user-space ("ust") trace with `events`
// ("event { ... };" blocks). User-space streams carry LTTng's vpid/vtid context.
inline std::string Metadata(bool kernel, const std::string& events) {
  std::string m = "/* CTF 1.8 */\n";
  m += "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n";
  m += "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n";
  m += "typealias integer { size = 32; align = 8; signed = true; } := int32_t;\n";
  m += "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n";
  m += "typealias integer { size = 64; align = 8; signed = true; } := int64_t;\n";
  m += "trace { major = 1; minor = 8; byte_order = le;\n"
       "  packet.header := struct { uint32_t magic; uint32_t stream_id; }; };\n";
  m += std::string("env { hostname = \"synth\"; domain = \"") + (kernel ? "kernel" : "ust") +
       "\"; tracer_name = \"" + (kernel ? "lttng-modules" : "lttng-ust") +
       "\"; tracer_major = 2; tracer_minor = 11; };\n";
  m += "clock { name = \"monotonic\"; freq = 1000000000; offset_s = " + std::to_string(kOriginS) + "; offset = 0; };\n";
  m += "typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := clk64_t;\n";
  m += "stream { id = 0;\n"
       "  packet.context := struct { clk64_t timestamp_begin; clk64_t timestamp_end; uint64_t content_size;\n"
       "    uint64_t packet_size; uint64_t events_discarded; uint32_t cpu_id; };\n"
       "  event.header := struct { uint32_t id; clk64_t timestamp; };\n";
  if (!kernel) m += "  event.context := struct { int32_t _vpid; int32_t _vtid; };\n";
  m += "};\n";
  return m + events;
}

// Packets of one stream file.
class Stream {
 public:
  explicit Stream(uint32_t cpu) : cpu_(cpu) {}
  // Starts a packet; `discarded` is the stream's running count of discarded events.
  void Packet(uint64_t begin, uint64_t end, uint64_t discarded) {
    Close();
    packets_.push_back({begin, end, discarded, {}});
  }
  // An event: header, then (user space) the vpid/vtid context, then `payload`.
  void Event(uint32_t id, uint64_t ts, const Bytes& payload, int32_t vpid = -1, int32_t vtid = -1) {
    Bytes& b = packets_.back().body;
    b.U32(id).U64(ts);
    if (vpid >= 0) b.I32(vpid).I32(vtid);
    b.Raw(payload.data.data(), payload.data.size());
  }
  std::string Bytes_() {
    Close();
    return out_;
  }

 private:
  struct P {
    uint64_t begin, end, discarded;
    Bytes body;
  };
  void Close() {
    for (P& p : packets_) {
      constexpr uint64_t kHeader = 8 + 44;
      uint64_t bits = (kHeader + p.body.data.size()) * 8;
      Bytes h;
      h.U32(0xC1FC1FC1).U32(0).U64(p.begin).U64(p.end).U64(bits).U64(bits).U64(p.discarded).U32(cpu_);
      out_ += h.data + p.body.data;
    }
    packets_.clear();
  }
  uint32_t cpu_;
  std::vector<P> packets_;
  std::string out_;
};

inline void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary) << data;
}

// A kernel trace on two CPUs (times in ns after the origin):
//   CPU 0: app (tid 100) runs 1000-7000, read() 2000-5000 (ret 42), read() from
//          6000 blocks it (S) at 7000; worker (101) runs 7000-10000, an eth0
//          interrupt 8000-8500, wakes app at 9000, is preempted at 10000; app runs
//          10000-12000, its read returns 7 at 11000, it is preempted at 12000.
//   CPU 1: app forks thread 102 (pid 100) at 1500; 102 runs 3000-9500 with
//          close() 4000-4500, sleeps; a second packet says 3 events were
//          discarded; 102 runs 20000-21000.
// Returns the stream files by name ("metadata" included).
inline std::map<std::string, std::string> KernelTrace() {
  std::string ev =
      "event { name = \"sched_switch\"; id = 0; stream_id = 0; fields := struct { string prev_comm; int32_t prev_tid;"
      " int32_t prev_prio; int64_t prev_state; string next_comm; int32_t next_tid; int32_t next_prio; }; };\n"
      "event { name = \"syscall_entry_read\"; id = 1; stream_id = 0; fields := struct { uint32_t fd; uint64_t buf;"
      " uint64_t count; }; };\n"
      "event { name = \"syscall_exit_read\"; id = 2; stream_id = 0; fields := struct { int64_t ret; uint64_t buf; }; };\n"
      "event { name = \"syscall_entry_close\"; id = 3; stream_id = 0; fields := struct { uint32_t fd; }; };\n"
      "event { name = \"syscall_exit_close\"; id = 4; stream_id = 0; fields := struct { int64_t ret; }; };\n"
      "event { name = \"irq_handler_entry\"; id = 5; stream_id = 0; fields := struct { int32_t irq; string name; }; };\n"
      "event { name = \"irq_handler_exit\"; id = 6; stream_id = 0; fields := struct { int32_t irq; int32_t ret; }; };\n"
      "event { name = \"sched_process_fork\"; id = 7; stream_id = 0; fields := struct { string parent_comm;"
      " int32_t parent_tid; int32_t parent_pid; string child_comm; int32_t child_tid; int32_t child_pid; }; };\n"
      "event { name = \"sched_wakeup\"; id = 8; stream_id = 0; fields := struct { string comm; int32_t tid;"
      " int32_t prio; int32_t target_cpu; }; };\n";
  auto sw = [](const char* pc, int32_t pt, int64_t state, const char* nc, int32_t nt) {
    Bytes b;
    b.Str(pc).I32(pt).I32(20).I64(state).Str(nc).I32(nt).I32(20);
    return b;
  };
  Stream c0(0), c1(1);
  c0.Packet(500, 13000, 0);
  c0.Event(0, 1000, sw("swapper/0", 0, 0, "app", 100));
  c0.Event(1, 2000, Bytes().U32(3).U64(0x1000).U64(64));
  c0.Event(2, 5000, Bytes().I64(42).U64(0x1000));
  c0.Event(1, 6000, Bytes().U32(4).U64(0x2000).U64(64));
  c0.Event(0, 7000, sw("app", 100, 1, "worker", 101));
  c0.Event(5, 8000, Bytes().I32(16).Str("eth0"));
  c0.Event(6, 8500, Bytes().I32(16).I32(1));
  c0.Event(8, 9000, Bytes().Str("app").I32(100).I32(20).I32(0));
  c0.Event(0, 10000, sw("worker", 101, 0, "app", 100));
  c0.Event(2, 11000, Bytes().I64(7).U64(0x2000));
  c0.Event(0, 12000, sw("app", 100, 0, "swapper/0", 0));
  c1.Packet(500, 13000, 0);
  c1.Event(7, 1500, Bytes().Str("app").I32(100).I32(100).Str("app").I32(102).I32(100));
  c1.Event(0, 3000, sw("swapper/1", 0, 0, "app", 102));
  c1.Event(3, 4000, Bytes().U32(5));
  c1.Event(4, 4500, Bytes().I64(0));
  c1.Event(0, 9500, sw("app", 102, 1, "swapper/1", 0));
  c1.Packet(19000, 22000, 3);
  c1.Event(0, 20000, sw("swapper/1", 0, 0, "app", 102));
  c1.Event(0, 21000, sw("app", 102, 1, "swapper/1", 0));
  return {{"metadata", Metadata(true, ev)}, {"chan_0", c0.Bytes_()}, {"chan_1", c1.Bytes_()}};
}

// A user-space trace of process 200: threads 200 and 201, one CPU.
//   200: func 0x401000 (myapp+0x1000) 101000-108000 holds myapp:request 102000-106000
//        (id 7, path "/index") which holds func 0x402000 103000-105000, which holds
//        tracef "hello 1" at 104000; myapp:tick (n 3) at 107000.
//   201: func 0x7fff0000 (no module) 103500-104500.
inline std::map<std::string, std::string> UserTrace() {
  std::string ev =
      "event { name = \"lttng_ust_statedump:bin_info\"; id = 0; stream_id = 0; fields := struct { uint64_t baddr;"
      " uint64_t memsz; string path; }; };\n"
      "event { name = \"lttng_ust_cyg_profile_fast:func_entry\"; id = 1; stream_id = 0; fields := struct {"
      " uint64_t addr; }; };\n"
      "event { name = \"lttng_ust_cyg_profile_fast:func_exit\"; id = 2; stream_id = 0; fields := struct {"
      " uint64_t addr; }; };\n"
      "event { name = \"lttng_ust_tracef:event\"; id = 3; stream_id = 0; fields := struct { uint32_t __msg_length;"
      " integer { size = 8; align = 8; signed = false; encoding = UTF8; } _msg[__msg_length]; }; };\n"
      "event { name = \"myapp:request_entry\"; id = 4; stream_id = 0; fields := struct { int64_t id; string path; }; };\n"
      "event { name = \"myapp:request_exit\"; id = 5; stream_id = 0; fields := struct { int64_t status; }; };\n"
      "event { name = \"myapp:tick\"; id = 6; stream_id = 0; fields := struct { int64_t n; }; };\n";
  Stream c0(0);
  c0.Packet(100000, 110000, 0);
  c0.Event(0, 100000, Bytes().U64(0x400000).U64(0x10000).Str("/usr/bin/myapp"), 200, 200);
  c0.Event(1, 101000, Bytes().U64(0x401000), 200, 200);
  c0.Event(4, 102000, Bytes().I64(7).Str("/index"), 200, 200);
  c0.Event(1, 103000, Bytes().U64(0x402000), 200, 200);
  c0.Event(1, 103500, Bytes().U64(0x7fff0000), 200, 201);
  c0.Event(3, 104000, Bytes().U32(7).Raw("hello 1", 7), 200, 200);
  c0.Event(2, 104500, Bytes().U64(0x7fff0000), 200, 201);
  c0.Event(2, 105000, Bytes().U64(0x402000), 200, 200);
  c0.Event(5, 106000, Bytes().I64(200), 200, 200);
  c0.Event(6, 107000, Bytes().I64(3), 200, 200);
  c0.Event(2, 108000, Bytes().U64(0x401000), 200, 200);
  return {{"metadata", Metadata(false, ev)}, {"chan_0", c0.Bytes_()}};
}

inline void WriteTrace(const std::string& dir, const std::map<std::string, std::string>& files) {
  for (const auto& [name, data] : files) WriteFile(dir + "/" + name, data);
}

}  // namespace strata::testing::lttng_synth
